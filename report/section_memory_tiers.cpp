// Section 8.6 of the reproduce report (issue 14): is CXL-attached memory or an NVMe tier a cheaper
// home for document-QA KV than DRAM? Qwen3-235B-A22B on a DGX H100-class node, NarrativeQA-like
// and DocFinQA-like load, 2 TB of DRAM against DRAM capped at 256 GB alone, + CXL, + NVMe: TTFT
// (mean, p50, p99) and throughput with replicate intervals, per-tier hits and bytes, and cost
// per request from the swept $/GB of report/tier_cost. Inputs: sweeps studies/memory-tiers-dram
// and studies/memory-tiers-lower (either may be absent or all-invalid: those rows then say
// "not simulated" with the reason). Output: Markdown.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/output.hpp"
#include "core/stats.hpp"
#include "core/table.hpp"
#include "core/units.hpp"
#include "report/analytic_point.hpp"
#include "report/format.hpp"
#include "report/replicates.hpp"
#include "report/sections.hpp"
#include "report/serving_tables.hpp"
#include "report/tier_cost.hpp"
#include "sweeps/sweep_results.hpp"

namespace kappasim::report {

namespace {

// Installed DRAM per configuration: the DGX H100 ships 2 TB; the capped node has 256 GB. The KV
// pool (serving.tier_capacity) is 3/4 of it (docs/serving-stacks.md host-DRAM default).
double installed_dram(const std::string& memory) { return memory == "dram-2TB" ? 2e12 : 256e9; }

double bytes_cell(const ResultsTable& t, std::size_t r, const std::string& col) {
  const std::string v = t.get(r, col);
  if (v.empty()) return 0;
  try {
    return parse_quantity_as(v, dim::bytes);
  } catch (const std::exception&) {
    return NAN;
  }
}

// The per-level figures of the tier hierarchy (docs/metrics.md "Tier levels"):
// tiers_<level>_hit_chunks, _loaded_bytes, _load_time_share for dram, cxl, nvme, remote. One cell:
// "cxl 120 hits, 45 GB (30% of load time)" per level with figures.
const char* const kLevels[] = {"dram", "cxl", "nvme", "remote"};

std::string level_cell(const ResultsTable& t, const std::vector<std::size_t>& rows,
                       const std::string& level) {
  const std::string p = "tiers_" + level + "_";
  if (t.col(p + "hit_chunks") < 0) return "";
  const double hits = mean_of(t, rows, p + "hit_chunks");
  if (!std::isfinite(hits)) return "";
  std::string c = level + " " + fmt_num(hits) + " hits";
  const double bytes = mean_of(t, rows, p + "loaded_bytes");
  if (std::isfinite(bytes)) c += ", " + fmt_num(bytes / 1e9) + " GB";
  const double share = mean_of(t, rows, p + "load_time_share");
  if (std::isfinite(share)) c += " (" + pct(share) + " of load time)";
  return c;
}

// The prices the device presets carry (presets/host-memory, cxl-expanders, nvme-drives:
// usd_per_byte, each an assumption with its own reasoning), from the 3-tier system variant, as a
// fourth price point beside the swept ones; absent prices read 0 (the row then says so).
TierPrices preset_prices() {
  TierPrices p;
  p.name = "presets";
  const SystemSpec& s = preset_system("dgx-h100-256gb-cxl-nvme");
  p.dram_usd_per_gb = s.host_memory.usd_per_byte.value_or(0) * 1e9;
  p.cxl_usd_per_gb = s.cxl.usd_per_byte.value_or(0) * 1e9;
  p.nvme_usd_per_gb = s.nvme.usd_per_byte.value_or(0) * 1e9;
  return p;
}

std::vector<TierPrices> price_points() {
  std::vector<TierPrices> out = tier_price_sweep();
  try {
    out.push_back(preset_prices());
  } catch (const std::exception&) {
    // A build without the 3-tier system variant: the swept prices alone.
  }
  return out;
}

// $ per 1k requests of a configuration's replicates (each replicate's throughput), as a mean with
// its 95% t interval over the workload seeds (issue 22: intervals on every cost figure).
std::string cost_interval_cell(const ResultsTable& t, const std::vector<std::size_t>& rows,
                               const TierCapacities& c, const TierPrices& p,
                               const CostAssumptions& a) {
  std::vector<double> xs;
  for (std::size_t r : rows) {
    if (!t.ok(r)) continue;
    const double cost = 1000 * cost_per_request_usd(c, p, a, t.num(r, "throughput_rps"));
    if (std::isfinite(cost)) xs.push_back(cost);
  }
  if (xs.empty()) return "—";
  return xs.size() == 1 ? fmt_num(xs[0]) : stats::format_interval(stats::mean_interval(xs));
}

}  // namespace

MemoryTierRow memory_tier_row(const ResultsTable& t, const std::vector<std::size_t>& rows) {
  MemoryTierRow m;
  m.workload = t.get(rows[0], "workload");
  m.memory = t.get(rows[0], "memory");
  m.capacities.dram_bytes = installed_dram(m.memory);
  m.capacities.cxl_bytes = bytes_cell(t, rows[0], "cxl_capacity");
  m.capacities.nvme_bytes = bytes_cell(t, rows[0], "nvme_capacity");
  m.ok = first_ok(t, rows).has_value();
  if (!m.ok) m.error = t.get(rows[0], "error");
  m.throughput_rps = mean_of(t, rows, "throughput_rps");
  return m;
}

ResultsTable combine_tables(const std::vector<const ResultsTable*>& tables) {
  ResultsTable out;
  for (const ResultsTable* t : tables)
    for (const std::string& c : t->columns)
      if (out.col(c) < 0) out.columns.push_back(c);
  for (const ResultsTable* t : tables)
    for (std::size_t r = 0; r < t->rows.size(); ++r) {
      std::vector<std::string> row;
      for (const std::string& c : out.columns) row.push_back(t->get(r, c));
      out.rows.push_back(std::move(row));
    }
  return out;
}

namespace {

// $ per 1k requests at a capacity interval: the mean's cost, then [cost at hi, cost at lo]; the
// upper end is open ("≥ …") where the interval's low end is not above 0.
std::string cost_at_capacity_cell(const TierCapacities& c, const TierPrices& p,
                                  const CostAssumptions& a, double mean, double lo, double hi) {
  const auto k = [&](double rps) { return 1000 * cost_per_request_usd(c, p, a, rps); };
  if (!(mean > 0)) return "—";
  std::string s = fmt_num(k(mean));
  if (std::isfinite(hi) && hi > 0)
    s += lo > 0 ? " [" + fmt_num(k(hi)) + ", " + fmt_num(k(lo)) + "]"
                : " [≥ " + fmt_num(k(hi)) + "]";
  return s;
}

// Each replicate's capacity of a capacity point by its workload seed (files/replicates.csv,
// written by the capacity kind; NaN where the replicate never met the SLO). Empty when the point
// has no such file (a sweep from before it was written).
std::map<std::string, double> replicate_capacities(const std::string& point) {
  std::map<std::string, double> out;
  std::string text;
  if (!read_text_file(point + "/files/replicates.csv", text)) return out;
  const sweep::SweepTable r = sweep::parse_csv(text, point + "/files/replicates.csv");
  int seed = -1, cap = -1;
  for (std::size_t i = 0; i < r.columns.size(); ++i) {
    if (r.columns[i] == "seed") seed = static_cast<int>(i);
    if (r.columns[i] == "capacity_rps") cap = static_cast<int>(i);
  }
  if (seed < 0 || cap < 0) return out;
  for (const auto& row : r.rows) {
    const std::string& v = row.at(static_cast<std::size_t>(cap));
    double x = NAN;
    if (!v.empty()) {
      char* end = nullptr;
      x = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0')
        throw InputError(
            point + "/files/replicates.csv: capacity_rps '" + v +
            "' is not a number (expected req/s, or empty where the SLO was never met)");
    }
    out[row.at(static_cast<std::size_t>(seed))] = x;
  }
  return out;
}

// 8.6 at saturation: capacity at the SLO of each configuration (sweep kind capacity, one row per
// configuration with its t interval over the workload seeds) and the cost per request there.
std::string memory_tiers_at_capacity(const SweepData& cap, const CostAssumptions& a,
                                     const TierPrices& mid, ConclusionLog* log) {
  const ResultsTable& t = cap.table;
  std::ostringstream md;
  const std::string slo = point_config_text(point_dir(cap.dir, t, 0), "capacity.slo_ttft");
  const double q = point_config_number(point_dir(cap.dir, t, 0), "capacity.percentile");
  md << "**At saturation.** At 3 req/s every configuration whose tiers hold the documents keeps "
        "up, so its GPU-hours per request are the same by construction. Compared at capacity "
        "instead (the largest steady-state throughput with TTFT p"
     << fmt_num(100 * (std::isfinite(q) ? q : 0.9)) << " within "
     << (slo.empty() ? std::string("the SLO") : slo)
     << ", bisected over the offered load per workload seed; experiments/studies/"
        "memory-tiers-capacity.yaml), with the cost per request at that throughput, mid prices "
        "(95% t interval over the seeds in brackets; the cost interval is the capacity "
        "interval's ends), on each of the studies' baselines (LMCache 0.3.5's kernel path and "
        "its layer-wise path, the paper's testbed):\n\n";
  struct Cap {
    std::string path;
    MemoryTierRow m;
    double mean = NAN, lo = NAN, hi = NAN;
    bool never = false, lower_bound = false;
    std::map<std::string, double> by_seed;  // each replicate's capacity (NaN: SLO never met)
  };
  std::vector<Cap> caps;
  std::vector<std::vector<std::string>> rows;
  bool clipped = false;  // a t interval's low end below 0, shown as 0
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    Cap c;
    c.path = baseline_path(t, r);
    c.m = memory_tier_row(t, {r});
    if (!c.m.ok) {
      rows.push_back({c.path, c.m.workload, c.m.memory, "not simulated: " + c.m.error});
      continue;
    }
    c.mean = t.num(r, "capacity_rps");
    c.lo = t.num(r, "capacity_rps_lo");
    c.hi = t.num(r, "capacity_rps_hi");
    c.never = !(c.mean > 0) && t.num(r, "replicates_never_met") > 0;
    c.lower_bound = t.num(r, "capacity_lower_bound") == 1;
    c.by_seed = replicate_capacities(point_dir(cap.dir, t, r));
    const double lowest = point_config_number(point_dir(cap.dir, t, r), "capacity.rate_lo");
    // A capacity is not negative; a t interval over three widely spread seeds can reach below 0.
    const bool clip = !c.never && c.lo < 0;
    clipped = clipped || clip;
    const std::string cell =
        c.never ? "< " + fmt_num(lowest) + " (SLO missed at the lowest load probed)"
                : fmt_num(c.mean) + " [" + (clip ? std::string("0†") : fmt_num(c.lo)) + ", " +
                      fmt_num(c.hi) + "]" +
                      (c.lower_bound ? " (a lower bound: some seed met the SLO at the top of "
                                       "the range)"
                                     : "");
    rows.push_back(
        {c.path, c.m.workload, c.m.memory, cell, pct(t.num(r, "at_capacity_tier_hit_rate")),
         c.never ? "> " + fmt_num(1000 * cost_per_request_usd(c.m.capacities, mid, a, lowest))
                 : cost_at_capacity_cell(c.m.capacities, mid, a, c.mean, c.lo, c.hi)});
    caps.push_back(c);
  }
  md << markdown_table({"load path", "workload", "memory", "capacity at the SLO (req/s)",
                        "tier hit rate at capacity", "$ per 1k requests at capacity (mid)"},
                       rows)
     << "\n";
  if (clipped)
    md << "† The 95% t interval's low end falls below 0 (its seeds' capacities spread widely, "
          "n = 3); a capacity cannot, so it is shown as 0, and the cost interval is open above "
          "(\"≥\").\n\n";
  md << "Conclusions at saturation (computed; every configuration runs the same workload seeds, "
        "so a configuration is compared with the 2 TB node seed by seed: a difference is called "
        "only where the paired 95% interval excludes 0, over the seeds where both met the SLO; "
        "where a point lacks its per-seed capacities, only where the two intervals do not "
        "overlap):\n";
  for (const Cap& base : caps) {
    if (base.m.memory != "dram-2TB") continue;
    if (!(base.mean > 0)) {
      md << "- " << base.m.workload << " (" << base.path
         << "): even the 2 TB node misses the SLO at the lowest load probed, so no memory "
            "configuration meets it there.\n";
      continue;
    }
    for (const Cap& c : caps) {
      if (c.path != base.path || c.m.workload != base.m.workload || c.m.memory == "dram-2TB")
        continue;
      std::string line = c.m.workload + ", " + c.m.memory + " (" + c.path + "): capacity ";
      if (c.never) {
        line += "below the lowest load probed (the 2 TB node: " + fmt_num(base.mean) + " req/s)";
      } else {
        std::vector<double> xs, ys;
        for (const auto& [seed, x] : c.by_seed)
          if (const auto it = base.by_seed.find(seed); it != base.by_seed.end())
            xs.push_back(x), ys.push_back(it->second);
        const stats::Interval d = stats::paired_difference(xs, ys);
        std::string verdict;
        bool same = !xs.empty();
        for (std::size_t i = 0; i < xs.size(); ++i)
          same = same &&
                 std::fabs(xs[i] - ys[i]) <= 1e-9 * std::max(std::fabs(xs[i]), std::fabs(ys[i]));
        if (same) {
          verdict = "the same in every seed (to 9 significant digits)";
        } else if (d.n >= 2) {
          const int sign = stats::interval_sign(d);
          const std::string diff = "paired difference in req/s: " + stats::format_interval(d);
          verdict = sign == 0
                        ? "within the seeds' spread (" + diff + ", the 95% interval contains 0)"
                        : std::string(sign < 0 ? "lower" : "higher") + " (" + diff + ")";
        } else {
          const bool apart = c.hi < base.lo || c.lo > base.hi;
          verdict = apart ? std::string(c.mean < base.mean ? "lower" : "higher") +
                                " (the intervals do not overlap)"
                          : std::string("the intervals overlap");
        }
        line += fmt_num(c.mean / base.mean) + "× the 2 TB node's (" + fmt_num(c.mean) + " vs " +
                fmt_num(base.mean) + " req/s, " + verdict + "); cost per request at capacity " +
                fmt_num(cost_per_request_usd(c.m.capacities, mid, a, c.mean) /
                        cost_per_request_usd(base.m.capacities, mid, a, base.mean)) +
                "× the 2 TB node's (mid prices)";
      }
      md << "- " << line << ".\n";
      if (log)
        log->add({"8.6", line + " (TTFT SLO as above)",
                  "each configuration at its own capacity (kind capacity, 3 workload seeds); "
                  "document catalogues that fit 2 TB, not 256 GB",
                  "the tier prices (swept low / mid / high) and the SLO; the CXL and NVMe "
                  "devices' sourced rates",
                  c.path == "kernel" ? "kernel (the layer-wise rows are their own line)"
                                     : "layer-wise (the paper's testbed)"});
    }
  }
  md << "\n";
  return md.str();
}

}  // namespace

std::string section_memory_tiers(const SweepData* dram, const SweepData* lower,
                                 const std::string& lower_missing, const SweepData* capacity,
                                 ConclusionLog* log) {
  std::ostringstream md;
  md << "### 8.6 Memory tiers: 2 TB of DRAM vs 256 GB + CXL or + NVMe\n\n"
     << "Qwen3-235B-A22B (BF16, TP 8, kernel load path, LMCache defaults) on a DGX H100-class node "
     << "serving document QA at 3 req/s with zipf document popularity: NarrativeQA-like (56 "
        "books, ~60k tokens each) and DocFinQA-like (20 SEC filings, ~160k tokens each; "
        "docs/workloads.md). Their KV working sets (~0.96 TB and ~1.05 TB at 385 KB per token "
        "with TP-8 KV-head replication) fit the shipped node's 2 TB of DRAM (KV pool 1.5 TB) but "
        "not a node capped at 256 GB (pool 192 GB): there a miss recomputes the document unless "
        "a lower tier holds it — 8 CXL Type-3 expanders (2 TB) or 2 TB of the NVMe drives, write-"
        "through, promoted into DRAM on a hit (experiments/studies/memory-tiers-*.yaml).\n\n";

  std::vector<const ResultsTable*> parts;
  if (dram) parts.push_back(&dram->table);
  if (lower) parts.push_back(&lower->table);
  const ResultsTable t = combine_tables(parts);
  const auto configs = configurations(t, {"workload", "memory"});
  std::vector<std::string> workloads;
  for (const auto& cr : configs)
    if (std::find(workloads.begin(), workloads.end(), t.get(cr[0], "workload")) == workloads.end())
      workloads.push_back(t.get(cr[0], "workload"));

  const CostAssumptions a = default_cost_assumptions();
  const TierPrices& mid = tier_price_sweep()[1];
  std::vector<std::vector<std::string>> rows;
  std::vector<std::pair<MemoryTierRow, std::vector<std::size_t>>> done;
  for (const std::string& w : workloads)
    for (const auto& cr : configs) {
      if (t.get(cr[0], "workload") != w) continue;
      const MemoryTierRow m = memory_tier_row(t, cr);
      if (!m.ok) {
        rows.push_back({w, m.memory, "not simulated: " + m.error});
        continue;
      }
      std::string tiers;
      for (const char* l : kLevels) {
        const std::string c = level_cell(t, cr, l);
        if (!c.empty()) tiers += (tiers.empty() ? "" : "; ") + c;
      }
      // A configuration with a lower tier whose run reports no figures for that tier ran without
      // it (an engine that reads serving.tiers but does not yet use it): no numbers for it.
      const bool lower_tier = m.capacities.cxl_bytes > 0 || m.capacities.nvme_bytes > 0;
      if (lower_tier && level_cell(t, cr, m.capacities.cxl_bytes > 0 ? "cxl" : "nvme").empty()) {
        rows.push_back({w, m.memory,
                        "not simulated: the run reported no figures for its lower tier "
                        "(tiers_<level>_*): this build's engine does not use serving.tiers"});
        continue;
      }
      done.emplace_back(m, cr);
      if (tiers.empty() && t.col("tier_hit_rate") >= 0)
        tiers = "DRAM hit rate " + pct(mean_of(t, cr, "tier_hit_rate"));
      rows.push_back({w, m.memory, interval_cell(t, cr, "throughput_rps"),
                      interval_cell(t, cr, "ttft_mean_s"), interval_cell(t, cr, "ttft_p50_s"),
                      interval_cell(t, cr, "ttft_p99_s"),
                      fmt_num(mean_of(t, cr, "requests_completed")) + " / " +
                          fmt_num(mean_of(t, cr, "requests_rejected")),
                      fmt_num(mean_of(t, cr, "bytes_loaded_total") / 1e12) + " TB", tiers,
                      cost_interval_cell(t, cr, m.capacities, mid, a)});
    }
  if (!lower && !lower_missing.empty())
    for (const std::string& w : workloads)
      for (const char* m : {"dram-256GB+cxl", "dram-256GB+nvme"})
        rows.push_back({w, m, "not simulated: " + lower_missing});
  // The regime of each sweep, computed from its runs (issue 22).
  if (dram)
    md << regime_paragraph(*dram, configurations(dram->table, {"workload", "memory"}),
                           "the DRAM-only runs");
  if (lower)
    md << regime_paragraph(*lower, configurations(lower->table, {"workload", "memory"}),
                           "the runs with a lower tier");
  md << markdown_table({"workload", "memory", "throughput (req/s)", "TTFT mean (s)", "TTFT p50 (s)",
                        "TTFT p99 (s)", "completed / rejected", "KV loaded",
                        "per-tier hits / bytes", "$ per 1k requests (mid prices)"},
                       rows)
     << "\n"
     << "Rejected requests are prompts whose KV needs more blocks than the GPUs' whole KV pool "
        "(vLLM rejects them; the longest DocFinQA-like filings with Qwen3-235B's BF16 weights on "
        "8× H100); throughput counts completed requests, so a seed with many rejections has a "
        "low throughput and a wide interval. A level's share of load time counts the loads "
        "that read it for their whole span, and one load can read several levels at once (DRAM "
        "and the lower tier side by side), so a row's shares can sum past 100% "
        "(`tiers_<level>_load_time_share`, docs/metrics.md).\n\n";

  // Cost: the assumptions, then every configuration at the three price points.
  md << "Cost per request = (GPU $/s + memory $/s) / throughput, with the GPU side at $"
     << fmt_num(a.gpu_usd_per_hour) << " per H100-hour × " << a.gpus
     << " (an H100 rental index price, taken as the node without its KV tiers) and each tier's "
        "capital (installed GB × $/GB) spread over "
     << fmt_num(a.amortisation_years)
     << " years of round-the-clock use. The $/GB are assumptions swept over a range "
        "(report/tier_cost.cpp names their sources): ";
  const std::vector<TierPrices> prices = price_points();
  for (std::size_t i = 0; i < prices.size(); ++i) {
    const TierPrices& p = prices[i];
    md << (i ? "; " : "") << p.name << " DRAM $" << fmt_num(p.dram_usd_per_gb) << ", CXL $"
       << fmt_num(p.cxl_usd_per_gb) << ", NVMe $" << fmt_num(p.nvme_usd_per_gb);
  }
  md << " per GB";
  if (prices.size() > tier_price_sweep().size())
    md << " (`presets`: the usd_per_byte assumptions of the devices of "
          "presets/systems/dgx-h100-256gb-cxl-nvme.yaml, 2024 prices)";
  md << ". Power, slots and controllers are not priced.\n\n";
  std::vector<std::vector<std::string>> crow;
  for (const auto& [m, cr] : done) {
    std::vector<std::string> r = {m.workload, m.memory,
                                  fmt_num(m.capacities.dram_bytes / 1e9) + " / " +
                                      fmt_num(m.capacities.cxl_bytes / 1e9) + " / " +
                                      fmt_num(m.capacities.nvme_bytes / 1e9)};
    for (const TierPrices& p : prices)
      r.push_back(
          fmt_num(1000 * memory_cost_per_request_usd(m.capacities, p, a, m.throughput_rps)) +
          " / " + fmt_num(1000 * cost_per_request_usd(m.capacities, p, a, m.throughput_rps)));
    crow.push_back(r);
  }
  std::vector<std::string> cost_header = {"workload", "memory", "GB DRAM / CXL / NVMe"};
  for (const TierPrices& p : prices)
    cost_header.push_back("$ per 1k req, " + p.name + " (memory / total)");
  md << markdown_table(cost_header, crow) << "\n";

  // Conclusions, computed: per workload, each capped configuration against the 2 TB node.
  md << "Conclusions (computed; " << kReplicateNote << "):\n";
  bool any = false;
  for (const auto& [base, base_rows] : done) {
    if (base.memory != "dram-2TB") continue;
    for (const auto& [m, cr] : done) {
      if (m.workload != base.workload || m.memory == "dram-2TB") continue;
      md << "- " << m.workload << ", " << m.memory << ": throughput " << fmt_num(m.throughput_rps)
         << " req/s (" << fmt_num(m.throughput_rps / base.throughput_rps)
         << "× the 2 TB node's); TTFT p50 " << interval_cell(t, cr, "ttft_p50_s") << " s against "
         << interval_cell(t, base_rows, "ttft_p50_s") << " s, "
         << versus(t, cr, base_rows, "ttft_p50_s", "the 2 TB node", "s")
         << "; cost per request at the "
         << (prices.size() > 3 ? "low / mid / high / preset" : "low / mid / high") << " prices ";
      for (std::size_t i = 0; i < prices.size(); ++i) {
        const TierPrices& p = prices[i];
        md << (i ? " / " : "")
           << fmt_num(cost_per_request_usd(m.capacities, p, a, m.throughput_rps) /
                      cost_per_request_usd(base.capacities, p, a, base.throughput_rps));
      }
      md << "× the 2 TB node's.\n";
      any = true;
    }
  }
  if (!any) md << "- nothing to compare: the 2 TB node or every capped configuration is missing.\n";
  md << "\nThe two sweeps run on the same three workload seeds (replicate i of every "
        "configuration, seed_per_point false), so the capped configurations are paired with the "
        "2 TB node replicate by replicate. A lower tier pays where it turns the capped node's "
        "misses (a document recomputed at full prefill cost) back into loads.";
  // How much of the cost per request is memory at the dearest price point: computed, not assumed.
  double share = 0;
  for (const auto& [m, cr] : done)
    for (const TierPrices& p : prices) {
      const double c = cost_per_request_usd(m.capacities, p, a, m.throughput_rps);
      if (std::isfinite(c) && c > 0)
        share =
            std::max(share, memory_cost_per_request_usd(m.capacities, p, a, m.throughput_rps) / c);
    }
  if (!done.empty())
    md << " Memory is at most " << pct(share)
       << " of any configuration's cost per request at any price point here, so the cost per "
          "request follows throughput (GPU-hours), not $/GB.";
  md << "\n\n";
  if (capacity) md << memory_tiers_at_capacity(*capacity, a, mid, log);
  return md.str();
}

}  // namespace kappasim::report
