// Section 5b of the reproduce report: which serving stack profile (presets/stacks/) and load
// path reproduces the paper's testbed: κ_crit at T = 128 and 1024, the P_OH grid and the
// 70 RPS runs for each, and conclusions computed against the paper's published observations
// (GPUs at 28% of TDP; transfers up to 99% of latency). Inputs: sweeps stacks-kappa-crit,
// stacks-poh, stacks-70rps. Output: Markdown (tables only).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/table.hpp"
#include "core/units.hpp"
#include "report/analytic_point.hpp"
#include "report/format.hpp"
#include "report/replicates.hpp"
#include "report/sections.hpp"
#include "report/serving_tables.hpp"

namespace kappasim::report {

namespace fs = std::filesystem;

namespace {
std::string stack_label(const ResultsTable& t, std::size_t r) {
  return t.get(r, "stack") + " / " + t.get(r, "load_path");
}
}  // namespace

std::string section_stacks(const SweepData& kappa, const SweepData& poh, const SweepData& runs,
                           ConclusionLog* log) {
  const ResultsTable& k = kappa.table;
  const ResultsTable& p = poh.table;
  const ResultsTable& s = runs.table;
  std::ostringstream md;
  md << "## 5b. Which stack reproduces the paper's testbed\n\n"
     << "The paper ran LMCache 0.3.5 on vLLM 0.10.1 and does not say which load path; the rows "
     << "below run every serving stack profile (docs/serving-stacks.md: per-operation software "
     << "costs placed on the scheduler's path, inside the step, as GPU idle gaps, or overlapped "
     << "with copies) on each load path it supports. `ideal` is the hardware bound. H2D rates: "
     << "bytes per load time, tier software included (`h2d_load_*`), in the κ_crit table; bytes "
     << "per link-busy time, copies only (`h2d_effective_*`), in the serving table; each "
     << "per GPU, per node (all 8 GPUs), and model-level (K · B_kv of the model / load time, "
     << "which counts Qwen3's KV heads replicated at TP 8 once).\n\n";
  // κ_crit: one row per system × model × stack / path, T = 128 and 1024 side by side.
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, double> crit128;   // qwen, paper-testbed: stack/path -> κ_crit at T = 128
  std::map<std::string, double> h2d128;    // the same rows' H2D per GPU per load time
  std::map<std::string, double> gen4_128;  // qwen, paper-testbed-gen4 (PCIe 4): κ_crit at T = 128
  std::set<std::string> seen;
  for (std::size_t r = 0; r < k.rows.size(); ++r) {
    const std::string key = k.get(r, "system") + "|" + k.get(r, "model") + "|" + stack_label(k, r);
    if (!seen.insert(key).second) continue;
    std::vector<std::string> row = {k.get(r, "system"), k.get(r, "model"), stack_label(k, r)};
    std::string peak = "—", rates = "—";
    for (const char* T : {"128", "1024"}) {
      const auto at = k.where({{"system", k.get(r, "system")},
                               {"model", k.get(r, "model")},
                               {"stack", k.get(r, "stack")},
                               {"load_path", k.get(r, "load_path")},
                               {"measure.t", T}});
      if (at.empty() || !k.ok(at[0])) {
        row.push_back("—");
        continue;
      }
      const double c = k.num(at[0], "kappa_crit_simulated");
      row.push_back(kappa_crit_cell(c, k.num(at[0], "link_binds_from_start"),
                                    k.num(at[0], "link_never_binds"), k.num(at[0], "kappa_max")));
      peak = fmt_num(k.num(at[0], "kappa_crit_analytic_peak"));
      if (std::string(T) == "128") {
        rates = gbs(k.num(at[0], "h2d_load_bytes_per_s")) + " / " +
                gbs(k.num(at[0], "h2d_load_node_bytes_per_s")) + " / " +
                gbs(k.num(at[0], "h2d_load_model_bytes_per_s"));
        if (k.get(r, "model") == "qwen3-235b-a22b" && k.get(r, "system") == "paper-testbed") {
          crit128[stack_label(k, r)] = c;
          h2d128[stack_label(k, r)] = k.num(at[0], "h2d_load_bytes_per_s");
        }
        if (k.get(r, "model") == "qwen3-235b-a22b" && k.get(r, "system") == "paper-testbed-gen4")
          gen4_128[stack_label(k, r)] = c;
      }
    }
    row.push_back(peak);
    row.push_back(rates);
    rows.push_back(row);
  }
  md << "### κ_crit of isolated requests (warm tier)\n\n"
     << markdown_table(
            {"system", "model", "stack / load path", "κ_crit T=128", "κ_crit T=1024",
             "analytic (peak)", "H2D GB/s per load time at the T=128 crossing: GPU / node / model"},
            rows)
     << "\n";
  // P_OH grid: one row per stack / path, one column per (K, T).
  std::vector<std::string> cols;
  std::vector<std::vector<std::string>> prow;
  std::map<std::string, std::size_t> row_of;
  for (std::size_t r = 0; r < p.rows.size(); ++r) {
    const std::string col = "K=" + p.get(r, "measure.k") + ", T=" + p.get(r, "measure.t");
    if (std::find(cols.begin(), cols.end(), col) == cols.end()) cols.push_back(col);
  }
  for (std::size_t r = 0; r < p.rows.size(); ++r) {
    const std::string lab = p.get(r, "system") + " · " + stack_label(p, r);
    if (!row_of.count(lab)) {
      row_of[lab] = prow.size();
      prow.push_back(std::vector<std::string>(cols.size() + 1, "—"));
      prow.back()[0] = lab;
    }
    const std::string col = "K=" + p.get(r, "measure.k") + ", T=" + p.get(r, "measure.t");
    const auto c =
        static_cast<std::size_t>(std::find(cols.begin(), cols.end(), col) - cols.begin());
    prow[row_of[lab]][c + 1] = p.ok(r) ? fmt_num(p.num(r, "p_oh")) : "—";
  }
  std::vector<std::string> pheader = {"system · stack / load path"};
  pheader.insert(pheader.end(), cols.begin(), cols.end());
  md << "### P_OH = load / compute time (Qwen3-235B-A22B, TP 8)\n\n"
     << markdown_table(pheader, prow) << "\n";
  // The 70 RPS runs.
  std::vector<std::vector<std::string>> srows;
  struct Pick {
    std::string label;
    double v = NAN;
    std::string regime;  // the row's note: keeps up or overloaded
  };
  Pick most_transfer;
  // The configuration 5b names as the paper's testbed (LMCache 0.3.5 on its layer-wise path,
  // paper-testbed): its GPU power per workload, against the paper's 28% of TDP, and the range
  // over every row; no row is picked for being closest.
  std::map<std::string, double> testbed_power, testbed_load_ttft;
  double power_lo = NAN, power_hi = NAN;
  for (std::size_t r = 0; r < s.rows.size(); ++r) {
    if (!s.ok(r)) {
      srows.push_back({s.get(r, "system"), stack_label(s, r), s.get(r, "workload.type"), "—", "—",
                       "—", "—", "—", "—", "—", "—", s.get(r, "error")});
      continue;
    }
    const double power = s.num(r, "gpu_power_tdp_fraction"),
                 xfer = s.num(r, "transfer_time_fraction");
    const double sw = s.num(r, "stack_scheduler_s") + s.num(r, "stack_step_cpu_s") +
                      s.num(r, "stack_gpu_gap_s") + s.num(r, "stack_cpu_bound_s") +
                      s.num(r, "stack_store_s");
    // The regime of the row (issue 20: offered vs served): the served rate against the offered
    // one, and the rule of the regime statements for "overloaded" (serving_tables).
    const double offered =
        s.has("point") ? point_config_number(point_dir(runs.dir, s, r), "workload.rate") : NAN;
    const double rejected = s.has("requests_rejected") ? s.num(r, "requests_rejected") : 0;
    std::string note = overloaded_count(runs, {{r}}) > 0 ? "overloaded" : "keeps up";
    if (rejected > 0)
      note += "; " + fmt_num(rejected) + " of " +
              fmt_num(rejected + s.num(r, "requests_completed")) + " arrivals rejected";
    srows.push_back({s.get(r, "system"), stack_label(s, r), s.get(r, "workload.type"),
                     fmt_num(s.num(r, "throughput_rps")) + " / " + fmt_num(offered),
                     fmt_num(s.num(r, "ttft_p50_s")), pct(s.num(r, "budget_utilization")),
                     fmt_num(s.num(r, "scheduled_tokens_per_iter")), pct(power), pct(xfer),
                     gbs(s.num(r, "h2d_effective_bytes_per_s")) + " / " +
                         gbs(s.num(r, "h2d_effective_node_bytes_per_s")) + " / " +
                         gbs(s.num(r, "h2d_effective_model_bytes_per_s")),
                     pct(sw / s.num(r, "simulated_time_s")), note});
    if (s.get(r, "system") == "paper-testbed" && s.get(r, "stack") == "lmcache-0.3.5" &&
        s.get(r, "load_path") == "layerwise") {
      testbed_power[s.get(r, "workload.type")] = power;
      testbed_load_ttft[s.get(r, "workload.type")] = s.num(r, "load_ttft_fraction");
    }
    if (std::isfinite(power)) {
      power_lo = std::isfinite(power_lo) ? std::min(power_lo, power) : power;
      power_hi = std::isfinite(power_hi) ? std::max(power_hi, power) : power;
    }
    if (s.get(r, "workload.type") != "narrativeqa") continue;
    const std::string lab = s.get(r, "system") + " · " + stack_label(s, r);
    if (std::isfinite(xfer) && (!std::isfinite(most_transfer.v) || xfer > most_transfer.v))
      most_transfer = {lab, xfer, note};
  }
  md << "### 70 RPS, ShareGPT-like and NarrativeQA-like (Qwen3-235B-A22B, TP 8, warm tier)\n\n"
     << markdown_table({"system", "stack / load path", "workload", "served / offered req/s",
                        "TTFT p50 (s)", "budget used", "scheduled tokens / step", "GPU power / TDP",
                        "transfer share of load+compute",
                        "H2D GB/s while the link is busy: GPU / node / model",
                        "stack software / simulated time", "note"},
                       srows)
     << "\n";
  // Conclusions from the data.
  md << "What the rows say (computed from them):\n\n";
  if (!crit128.empty()) {
    auto lo = crit128.begin(), hi = crit128.begin();
    for (auto it = crit128.begin(); it != crit128.end(); ++it) {
      if (!std::isfinite(it->second)) continue;
      if (!std::isfinite(lo->second) || it->second < lo->second) lo = it;
      if (!std::isfinite(hi->second) || it->second > hi->second) hi = it;
    }
    md << "- κ_crit at T = 128 (Qwen3-235B-A22B, paper-testbed) runs from " << fmt_num(lo->second)
       << " (" << lo->first << ") to " << fmt_num(hi->second) << " (" << hi->first
       << "): the stack and its load path together move where prefill turns link-bound by a "
       << "factor of " << fmt_num(hi->second / lo->second)
       << " (the rows below separate the two: each path with each stack).\n";
    const auto a = crit128.find("lmcache-0.3.5 / layerwise"),
               b = crit128.find("lmcache-0.3.7 / layerwise");
    if (a != crit128.end() && b != crit128.end() && std::isfinite(a->second) &&
        std::isfinite(b->second))
      md << "- LMCache 0.3.5's per-(layer, chunk) WARNING line alone lowers the layer-wise κ_crit "
         << "from " << fmt_num(b->second) << " (0.3.7) to " << fmt_num(a->second) << ".\n";
  }
  if (!testbed_power.empty()) {
    // The GPU's idle draw, the floor of any run's power (the testbed's H100).
    double idle = NAN;
    try {
      const SystemSpec& tb = preset_system("paper-testbed");
      if (tb.gpu.idle_power_w && tb.gpu.tdp_w > 0) idle = *tb.gpu.idle_power_w / tb.gpu.tdp_w;
    } catch (const std::exception&) {
    }
    md << "- The paper saw its GPUs at 28% of TDP serving offloaded requests. The configuration "
       << "that reproduces its testbed (LMCache 0.3.5, layer-wise) runs at";
    bool first = true;
    for (const auto& [w, x] : testbed_power) {
      md << (first ? " " : ", ") << pct(x) << " on " << w;
      first = false;
    }
    if (std::isfinite(idle))
      md << ", against the GPU's idle draw of " << pct(idle)
         << " of TDP (CUDA context held, no kernel: presets/gpus): its GPUs mostly wait on the "
            "stack's software";
    md << "; the rows above range " << pct(power_lo) << "–" << pct(power_hi)
       << ". Conditional on the GPU's idle power (measured 140–145 W) and its energy per FLOP and "
          "per HBM bit (derived, presets/gpus).\n";
  }
  if (!most_transfer.label.empty()) {
    md << "- The paper saw transfers take up to 99% of latency. Here the largest share of load + "
       << "compute time on NarrativeQA is " << pct(most_transfer.v) << " (" << most_transfer.label
       << "; " << most_transfer.regime << "), a different quantity: it leaves out the queue";
    const auto it = testbed_load_ttft.find("narrativeqa");
    if (it != testbed_load_ttft.end() && std::isfinite(it->second))
      md << "; with the queue in, loading is " << pct(it->second)
         << " of TTFT in the testbed configuration (load / TTFT)";
    md << ".\n";
  }
  // Whether the tier held the workload: a working set larger than the tier thrashes (issue 12).
  for (const char* w : {"sharegpt", "narrativeqa"}) {
    const auto at = s.where({{"workload.type", w}});
    if (at.empty() || !s.ok(at[0])) continue;
    const double ws = s.num(at[0], "tier_working_set_bytes"),
                 cap = s.num(at[0], "tier_capacity_bytes");
    if (!std::isfinite(ws) || !std::isfinite(cap)) continue;
    md << "- " << w << ": the run's KV working set is " << fmt_num(ws / 1e12) << " TB against a "
       << fmt_num(cap / 1e12) << " TB tier (" << s.get(at[0], "stack") << " / "
       << s.get(at[0], "load_path") << ": chunk hit rate " << pct(s.num(at[0], "tier_hit_rate"))
       << ")";
    if (ws <= cap)
      md << "; it fits";
    else  // what does not fit is recomputed and stored again; the transfer share says what binds
      md << "; " << pct(cap / ws) << " of it fits, the rest is recomputed and stored again ("
         << "transfers " << pct(s.num(at[0], "transfer_time_fraction")) << " of load + compute)";
    md << ".\n";
  }
  // Issue 22 item 1: the one configuration that stands for the testbed, and how to tell the two
  // LMCache 0.3.5 paths apart on a real server (from the rows above).
  {
    const std::string lw = "lmcache-0.3.5 / layerwise", kn = "lmcache-0.3.5 / kernel";
    const auto a = crit128.find(lw), b = crit128.find(kn);
    const auto ha = h2d128.find(lw), hb = h2d128.find(kn);
    if (a != crit128.end() && b != crit128.end() && ha != h2d128.end() && hb != h2d128.end()) {
      md << "- **The testbed's configuration.** LMCache 0.3.5's layer-wise path (`serving.stack: "
         << "lmcache-0.3.5`, `serving.load_path: layerwise`, opt-in in 0.3.5) is the one found to "
         << "reproduce the paper's testbed figures out of sample (a review against the paper's "
         << "measurements, held out from this project: issue 22); the paper does not say which "
         << "path it ran. On it Qwen3-235B-A22B crosses at κ_crit " << fmt_num(a->second)
         << " (T = 128) with " << gbs(ha->second) << " GB/s per GPU per load time, against "
         << fmt_num(b->second) << " and " << gbs(hb->second)
         << " GB/s on the default kernel path. On a real server the two differ by that per-GPU "
         << "PCIe RX rate during a long retrieve and by 0.3.5's per-(layer, chunk) log line, "
         << "present only on the layer-wise path. The architecture studies of section 8 run "
         << "on both baselines, this one and the kernel path (LMCache's default); 8.8 is "
         << "analytic. The conclusions table says which baseline each row holds on.";
      const auto ga = gen4_128.find(lw), gb = gen4_128.find(kn);
      if (ga != gen4_128.end() && gb != gen4_128.end())
        md << " How much hardware moves each: PCIe 5 → PCIe 4 takes the layer-wise κ_crit from "
           << fmt_num(a->second) << " to " << fmt_num(ga->second) << " and the kernel path's from "
           << fmt_num(b->second) << " to " << fmt_num(gb->second)
           << (std::fabs(ga->second / a->second - 1) < 0.05
                   ? ": on the layer-wise baseline the stack's software, not the link, binds."
                   : ".");
      md << "\n";
      if (log)
        log->add({"5b",
                  "The paper's testbed is LMCache 0.3.5 on its layer-wise path: Qwen3-235B-A22B "
                  "κ_crit " +
                      fmt_num(a->second) + " at T = 128 with " + gbs(ha->second) +
                      " GB/s per GPU (the default kernel path: " + fmt_num(b->second) + ", " +
                      gbs(hb->second) + " GB/s)",
                  "isolated requests at T = 128, TP 8, warm tier; deterministic",
                  "the stack's per-(layer, chunk) Python and 0.3.5's log line, measured costs "
                  "(docs/serving-stacks.md); which path the paper ran is not published; the "
                  "kernel path's figure also on the host DRAM's sourced rate and the PCIe read "
                  "round trip (1 µs, measured on one PCIe 5 host: a longer one lets the read tags "
                  "bind; 8.1's tornado) and the SM read size (64 B; 128 B on the measured host)",
                  "defines the layer-wise baseline; the kernel path is the other"});
    }
  }
  md << "\n";
  return md.str();
}

namespace {

// The serving-level crossing of one load mode's rows (sorted by κ): the first κ at which the link
// is at least as busy as the GPU computes (link_busy_fraction ≥ gpu_utilization), linear in log κ
// between the grid points either side. `below`: it already holds at the smallest κ; NaN: never.
struct ServingCrossing {
  double kappa = NAN;
  bool below = false;
};
ServingCrossing serving_crossing(const std::vector<std::pair<double, double>>& kappa_diff) {
  ServingCrossing c;
  for (std::size_t i = 0; i < kappa_diff.size(); ++i) {
    const auto [k, d] = kappa_diff[i];
    if (d < 0) continue;
    if (i == 0) {
      c.kappa = k;
      c.below = true;
      return c;
    }
    const auto [k0, d0] = kappa_diff[i - 1];
    const double f = -d0 / (d - d0);  // d0 < 0 <= d
    c.kappa = std::exp(std::log(k0) + f * (std::log(k) - std::log(k0)));
    return c;
  }
  return c;
}

}  // namespace

std::string section_stacks_async(const SweepData& crit, const SweepData& serving,
                                 ConclusionLog* log) {
  const ResultsTable& c = crit.table;
  const ResultsTable& s = serving.table;
  if (c.rows.empty() && s.rows.empty()) return "";
  std::ostringstream md;
  md << "### Loads in the step or asynchronous: the TTFT-level κ_crit and the serving-level "
     << "crossing (vllm-native-0.12 / block_dma)\n\n"
     << "vLLM's native connector loads asynchronously (`load: async`): a request waits outside "
     << "the steps until its copies are done, and the steps of the other requests go on; with "
     << "`load: in_step` the step that first schedules a request waits for its load "
     << "(docs/serving-stacks.md). The same stack is run both ways. **TTFT-level κ_crit**: "
     << "isolated requests, warm tier, every cached token loaded, where load time equals compute "
     << "time (`measure kappa-crit`, sweep stacks-async-kappa-crit). **Serving-level crossing**: "
     << "a saturated engine (sweep stacks-async-serving: every request one fixed-length document "
     << "K plus a 128-token question, offered far above what is served) over κ = K / T; the κ at "
     << "which the link is busy at least as long as the GPU computes (link busy ≥ GPU "
     << "compute-busy, both shares of the simulated time), linear in log κ between grid points. "
     << "Past it, in-step steps spend longer waiting for loads than computing; asynchronous "
     << "steps wait for requests whose loads the saturated link has not finished.\n\n";
  // The TTFT-level κ_crit per load mode.
  std::map<std::string, double> ttft_crit;
  std::string t_text = "—";
  for (std::size_t r = 0; r < c.rows.size(); ++r)
    if (c.ok(r)) {
      ttft_crit[c.get(r, "load")] = c.num(r, "kappa_crit_simulated");
      t_text = c.get(r, "t");
    }
  // The serving rows per load mode, by κ (the run's median K/T).
  std::map<std::string, std::vector<std::size_t>> by_load;
  for (std::size_t r = 0; r < s.rows.size(); ++r)
    if (s.ok(r)) by_load[s.get(r, "load")].push_back(r);
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, ServingCrossing> cross;
  std::map<std::string, std::map<double, double>> served;  // load -> κ -> req/s
  for (const char* mode : {"in_step", "async"}) {
    const std::string load = mode;
    std::vector<std::size_t>& rs = by_load[load];
    if (rs.empty()) continue;
    std::sort(rs.begin(), rs.end(), [&](std::size_t a, std::size_t b) {
      return s.num(a, "kappa_ratio_p50") < s.num(b, "kappa_ratio_p50");
    });
    std::vector<std::pair<double, double>> diff;
    constexpr double kSaturated = 0.95;  // link busy share from which the link is saturated
    for (std::size_t r : rs) {
      const double kappa = s.num(r, "kappa_ratio_p50"), gpu = s.num(r, "gpu_utilization"),
                   link = s.num(r, "link_busy_fraction"), K = s.num(r, "K");
      diff.emplace_back(kappa, link - gpu);
      served[load][kappa] = s.num(r, "throughput_rps");
      const double loaded = s.num(r, "cached_tokens_total") / (s.num(r, "requests_completed") * K);
      rows.push_back({load, fmt_num(kappa), s.get(r, "K"),
                      s.get(r, "rate") + " / " + fmt_num(s.num(r, "throughput_rps")),
                      fmt_num(s.num(r, "ttft_p50_s")), pct(gpu), pct(link),
                      fmt_num(s.num(r, "scheduled_tokens_per_iter")),
                      // A saturated link binds whatever the GPU's busy share: past it the
                      // asynchronous steps stay busy with few tokens each (tokens / step).
                      link >= kSaturated ? "link (saturated)"
                      : link >= gpu      ? "link"
                                         : "compute",
                      pct(loaded) + " / " + fmt_num(s.num(r, "recomputed_tokens_total"))});
    }
    cross[load] = serving_crossing(diff);
  }
  auto crossing_text = [&](const std::string& load) {
    const auto it = cross.find(load);
    if (it == cross.end()) return std::string("—");
    const ServingCrossing& x = it->second;
    if (!std::isfinite(x.kappa)) {
      const auto& m = served[load];
      return "> " + (m.empty() ? std::string("—") : fmt_num(m.rbegin()->first)) +
             " (the GPU stays busier than the link on the whole grid)";
    }
    return (x.below ? "≤ " : "") + fmt_num(x.kappa);
  };
  std::vector<std::vector<std::string>> summary;
  for (const char* load : {"in_step", "async"}) {
    const auto tc = ttft_crit.find(load);
    const auto& m = served[load];
    summary.push_back(
        {load, tc == ttft_crit.end() ? "—" : fmt_num(tc->second), crossing_text(load),
         m.empty() ? "—" : fmt_num(m.begin()->second) + " at κ " + fmt_num(m.begin()->first)});
  }
  md << markdown_table(
            {"load", "TTFT-level κ_crit (isolated, T = " + t_text + ", warm tier, all loaded)",
             "serving-level crossing κ (saturated; link busy = GPU compute-busy)",
             "served req/s at the smallest κ"},
            summary)
     << "\n"
     << markdown_table(
            {"load", "κ (median K/T)", "K", "offered / served req/s", "TTFT p50 (s)",
             "GPU compute-busy", "link busy", "tokens / step",
             "bound (busier; the link once ≥ 95% busy)", "prefix loaded / tokens recomputed"},
            rows)
     << "\n";
  // What the rows say.
  const auto a = cross.find("in_step"), b = cross.find("async");
  const auto ca = ttft_crit.find("in_step"), cb = ttft_crit.find("async");
  if (a != cross.end() && b != cross.end() && ca != ttft_crit.end() && cb != ttft_crit.end() &&
      std::isfinite(a->second.kappa) && std::isfinite(b->second.kappa)) {
    md << "What the rows say (computed from them):\n\n"
       << "- An isolated request crosses at the same κ_crit either way (" << fmt_num(ca->second)
       << " in the step, " << fmt_num(cb->second)
       << " asynchronous): it loads, then computes, alone.\n"
       << "- Served, the crossing is far lower: κ " << crossing_text("in_step")
       << " with in-step loads and " << crossing_text("async") << " asynchronous, "
       << fmt_num(ca->second / a->second.kappa) << "× and " << fmt_num(cb->second / b->second.kappa)
       << "× below the TTFT-level κ_crit. A saturated step shares its compute among the requests "
       << "in it (tokens / step above against T = " << t_text
       << " alone), so a request's share of the compute is smaller than an isolated request's "
       << "while its load is not.\n";
    // Served throughput, async over in_step, on the κ both ran.
    double lo = NAN, hi = NAN;
    for (const auto& [kappa, x] : served["async"]) {
      const auto it = served["in_step"].find(kappa);
      if (it == served["in_step"].end() || !(it->second > 0)) continue;
      const double q = x / it->second;
      lo = std::isfinite(lo) ? std::min(lo, q) : q;
      hi = std::isfinite(hi) ? std::max(hi, q) : q;
    }
    md << "- Loading asynchronously moves the serving-level crossing from κ "
       << crossing_text("in_step") << " to " << crossing_text("async") << " ("
       << fmt_num(b->second.kappa / a->second.kappa) << "×)";
    if (std::isfinite(lo))
      md << " and serves " << fmt_num(lo) << "–" << fmt_num(hi)
         << "× the in-step throughput across the grid";
    md << ": the GPU keeps computing other requests while loads run, until the link saturates. "
       << "Conditional on the native stack's assumed per-request CPU cost (0.1 ms, "
       << "presets/stacks/vllm-native-0.12.yaml) and vLLM's assumed per-step scheduler cost "
       << "(`serving.step_overhead`), and on the 4096-token step budget.\n";
    if (log)
      log->add({"5b",
                "vllm-native-0.12's asynchronous loads move the serving-level crossing from κ " +
                    crossing_text("in_step") + " (in the step) to " + crossing_text("async") +
                    "; the TTFT-level κ_crit is " + fmt_num(cb->second) + " either way",
                "Qwen3-235B-A22B, TP 8, paper-testbed, T = " + t_text +
                    "; saturated engine (offered above served), every prefix loaded from a warm "
                    "DRAM tier, nothing recomputed; deterministic",
                "the native stack's per-request CPU (0.1 ms) and the per-step scheduler cost, "
                "both assumptions; the 4096-token budget",
                "vLLM native connector only (LMCache loads in the step)"});
  }
  md << "\n";
  return md.str();
}

}  // namespace kappasim::report
