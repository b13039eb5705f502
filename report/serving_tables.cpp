// The serving tables shared by sections 5, 6 and 7 of `kappasim reproduce` (report/sections.hpp):
// one row per run point with its throughput, TTFT, utilisation, power and H2D rates, the TTFT
// CDFs read from each point's requests.csv, and one sentence per point on what binds it.
#include "report/serving_tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "core/config.hpp"
#include "core/table.hpp"
#include "core/units.hpp"
#include "report/format.hpp"
#include "report/replicates.hpp"
#include "sweeps/sweep_spec.hpp"

namespace kappasim::report {

namespace fs = std::filesystem;

std::string ttft_cdf(const std::string& point_dir) {
  std::ifstream in(fs::path(point_dir) / "files" / "requests.csv");
  if (!in) return "";
  std::string line;
  std::getline(in, line);
  std::vector<std::string> cols;
  {
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) cols.push_back(c);
  }
  const auto idx = std::find(cols.begin(), cols.end(), "ttft_s") - cols.begin();
  std::vector<double> v;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string c;
    for (std::ptrdiff_t i = 0; std::getline(ss, c, ','); ++i)
      if (i == idx) v.push_back(std::strtod(c.c_str(), nullptr));
  }
  std::sort(v.begin(), v.end());
  std::string csv = "ttft_s,cdf\n";
  const std::size_t step = std::max<std::size_t>(1, v.size() / 400);
  for (std::size_t i = 0; i < v.size(); i += step)
    csv += format_number(v[i]) + "," +
           format_number(static_cast<double>(i + 1) / static_cast<double>(v.size())) + "\n";
  if (!v.empty()) csv += format_number(v.back()) + ",1\n";
  return csv;
}

// The folder of row r's point (the merged table holds every point of the sweep, in order).
std::string point_dir(const std::string& sweep_dir, const ResultsTable& t, std::size_t r) {
  const auto index = static_cast<std::size_t>(std::stoull(t.get(r, "point")));
  return (fs::path(sweep_dir) / "points" / sweep::point_name(index, t.rows.size())).string();
}

// A value of the point's own config (points/pNNNNNN/point.yaml), e.g. "workload.rate".
std::string point_config_text(const std::string& dir, const std::string& dotted) {
  const fs::path f = fs::path(dir) / "point.yaml";
  if (!fs::exists(f)) return "";
  const ConfigNode root = load_yaml_file(f.string());
  const ConfigNode* n = &root;
  std::stringstream ss(dotted);
  std::string part;
  while (n && std::getline(ss, part, '.')) n = n->is_map() ? n->find(part) : nullptr;
  return n && n->is_scalar() ? n->scalar : "";
}

double point_config_number(const std::string& dir, const std::string& dotted) {
  const std::string v = point_config_text(dir, dotted);
  if (v.empty()) return NAN;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  return end && *end == '\0' ? x : NAN;
}

namespace {
// The one rule for "overloaded" (load_verdicts and the regime statements): a run serves under
// 90% of the rate it admits. Rejected prompts (larger than the whole KV pool) are offered but
// never served, so the rate a node can be held to is the offered rate's admitted share; that
// share is stated beside the verdict wherever it is below 1.
double admitted_share(double completed, double rejected) {
  return completed + rejected > 0 ? completed / (completed + rejected) : 1;
}
// The one rule (docs/report.md): a run is overloaded when it serves under a share of the rate it
// admits. Measured over the whole run (its drain included) or on first tokens and decode
// completions (a decode's own spread widens the completions' span), the share is 90%; measured
// on prefill completions over the run's middle 80% (no drain, no decode), where a run that keeps
// up comes within ~2% (the TTFTs' spread at the 10th and 90th percentiles over the span), 95%:
// below it the queue grows by over 5% of the arrival rate for the whole run.
constexpr double kServedShare = 0.9, kMidServedShare = 0.95;
bool is_overloaded(double served, double arrived, double admitted, double share = kServedShare) {
  return std::isfinite(arrived) && served < share * arrived * admitted;
}
}  // namespace

// One sentence per row: does the node keep up with the offered load, and what binds it.
std::string load_verdicts(const SweepData& d, const std::string& axis) {
  const ResultsTable& t = d.table;
  std::string out;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (!t.ok(r)) continue;
    // Closed loop (workload.concurrency): the offered load is the clients, not a rate.
    const double clients = point_config_number(point_dir(d.dir, t, r), "workload.concurrency");
    const double offered =
        clients > 0 ? NAN : point_config_number(point_dir(d.dir, t, r), "workload.rate");
    const double thr = t.num(r, "throughput_rps"), budget = t.num(r, "budget_utilization"),
                 vram = t.num(r, "vram_utilization"), share = t.num(r, "transfer_time_fraction"),
                 ttft_share = t.num(r, "load_ttft_fraction");
    const double done = t.num(r, "requests_completed"),
                 rejected = t.has("requests_rejected") ? t.num(r, "requests_rejected") : 0;
    const double admitted = admitted_share(done, rejected);
    // "(242 of 3000 arrivals rejected: prompts larger than the KV pool)" where any were.
    const std::string rejects =
        rejected > 0 ? " (" + fmt_num(rejected) + " of " + fmt_num(done + rejected) +
                           " arrivals rejected: prompts larger than the whole KV pool)"
                     : "";
    out += "- **" + t.get(r, axis) + "**: ";
    // The rule (docs/report.md): over the run's middle 80%, completions against the admitted
    // requests' arrivals, where the run has them; else the whole run's against the offered rate.
    const double mid_done = t.num(r, "mid_completion_rps"), mid_in = t.num(r, "mid_arrival_rps");
    const bool mid = std::isfinite(mid_done) && std::isfinite(mid_in) && !t.has("first_token_rps");
    if (clients > 0)
      out += "closed loop, concurrency " + fmt_num(clients) + ": serves " + fmt_num(thr) +
             " requests/s" + rejects + "; ";
    else if (mid && is_overloaded(mid_done, mid_in, 1.0, kMidServedShare))
      out += "overloaded: over the run's middle 80% it completes " + fmt_num(mid_done) +
             " requests/s of the " + fmt_num(mid_in) + " arriving" +
             (rejected > 0 ? " that it admits" + rejects : std::string()) +
             ", so its queue grows (" + fmt_num(thr) + " requests/s over the whole run, of " +
             fmt_num(offered) + " offered); ";
    else if (!mid && is_overloaded(thr, offered, admitted))
      out += "overloaded: serves " + fmt_num(thr) + " of " +
             (rejected > 0 ? "the " + fmt_num(offered * admitted) + " requests/s it admits of " +
                                 fmt_num(offered) + " offered" + rejects
                           : fmt_num(offered) + " requests/s offered") +
             "; ";
    else if (std::isfinite(offered))
      out +=
          (rejected > 0 ? "keeps up with the " + fmt_num(offered * admitted) +
                              " requests/s it admits of " + fmt_num(offered) + " offered" + rejects
                        : "keeps up with the " + fmt_num(offered) + " requests/s offered") +
          "; ";
    // What the GPUs' time goes to (time_fraction_*, summing to 1) names what bounds the run,
    // before what limits admission: a saturated link, the stack's CPU software, or steps waiting
    // for their in-step loads; only then the token budget or VRAM (which say how many requests a
    // step admits, not what the node spends its time on).
    const double link_busy = t.num(r, "link_busy_fraction"),
                 sw = t.num(r, "time_fraction_load_software") +
                      t.num(r, "time_fraction_sched_software"),
                 wait = t.num(r, "time_fraction_load_wait") + t.num(r, "time_fraction_load_link");
    const std::string admits =
        budget >= 0.9 ? "the token budget limits what a step admits"
        : vram >= 0.75
            ? "VRAM (" + pct(vram) + " in use), not the token budget, limits what a step admits"
            : "";
    std::string bound;
    if (std::isfinite(link_busy) && link_busy >= 0.9)
      bound = "the host link is saturated (busy " + pct(link_busy) + " of the time)";
    else if (std::isfinite(sw) && sw >= 0.5)
      bound = "the GPUs wait on the stack's CPU software " + pct(sw) + " of their time";
    else if (std::isfinite(wait) && wait >= 0.5)
      bound = "the GPUs wait for in-step KV loads " + pct(wait) + " of their time";
    out += "steps use " + pct(budget) + " of the token budget with " + pct(vram) +
           " of the VRAM KV pool in use, and KV loading is " + pct(share) +
           " of load + compute time (" + pct(ttft_share) + " of TTFT, queue included) — " +
           (!bound.empty()  ? bound + (admits.empty() ? std::string() : "; " + admits)
            : budget >= 0.9 ? "the token budget is the binding limit"
            : vram >= 0.75  ? "VRAM, not the token budget, limits admission"
            : share >= 0.5  ? "the KV transfers, not the token budget or VRAM, bound each step"
                            : "the load is too light to fill the budget");
    // Issue 22: the regime a study of the link needs stated: how much of the prompts came from
    // the tier, and whether the tier holds the working set (else prefixes are recomputed).
    const double cached = t.num(r, "cached_tokens_total"),
                 computed = t.num(r, "computed_tokens_total"),
                 fits = t.num(r, "tier_working_set_fits");
    if (std::isfinite(cached) && std::isfinite(computed) && cached + computed > 0) {
      out += "; " + pct(cached / (cached + computed)) + " of prompt tokens loaded from the tier";
      if (const double hit = t.num(r, "tier_hit_rate"); std::isfinite(hit))
        out += " (tier hit rate " + fmt_num(hit) + ")";
    }
    if (std::isfinite(fits))
      out += fits == 1
                 ? ", the tier holds the working set"
                 : ", the working set does not fit the tier (prefixes evicted and recomputed)";
    out += "; GPU power " + pct(t.num(r, "gpu_power_tdp_fraction")) + " of TDP.\n";
  }
  return out + "\n";
}

namespace {
// "a" when both ends read the same, else "a–b".
std::string span(double lo, double hi, const std::function<std::string(double)>& f) {
  const std::string a = f(lo), b = f(hi);
  return a == b ? a : a + "–" + b;
}
}  // namespace

namespace {
struct Range {
  double lo = INFINITY, hi = -INFINITY;
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  bool any() const { return lo <= hi; }
};
// What regime_paragraph and regime_brief state, computed once from the rows.
struct RegimeFacts {
  Range offered, served, loaded, hit, transfer;
  Range clients;   // closed-loop configurations (workload.concurrency): their clients
  Range rejected;  // the share of arrivals rejected (prompts larger than the whole KV pool), over
                   // the configurations that reject any
  std::size_t n = 0, overloaded = 0, fits = 0, fits_known = 0, rejecting = 0;
  // With decode: the configurations measured over the run's middle 80% (mid_completion_rps), and
  // those whose completions fell under 90% of their arrivals there (the decode fell behind).
  std::size_t decode_measured = 0, decode_behind = 0;
  std::size_t overloaded_in_a_seed = 0;  // keeps up on the means, not in every replicate
  bool mid_rule = false;                 // judged on completions over the run's middle 80%
  bool hierarchy = false;  // tiers below DRAM: tier_working_set_fits is the DRAM tier's alone
  double worst_queue = 0, worst_queue_ttft = 0;
};
RegimeFacts regime_facts(const SweepData& d, const std::vector<std::vector<std::size_t>>& configs) {
  const ResultsTable& t = d.table;
  RegimeFacts f;
  for (const char* level : {"cxl", "nvme", "remote"})
    if (t.has(std::string("tiers_") + level + "_hit_chunks")) f.hierarchy = true;
  for (const auto& cr : configs) {
    const auto r0 = first_ok(t, cr);
    if (!r0) continue;
    ++f.n;
    // The offered rate from the point's config (a table without point folders has none).
    // Closed loop (workload.concurrency): no offered rate; the clients wait for the server, so
    // it is never "overloaded" against them.
    const double clients =
        t.has("point") ? point_config_number(point_dir(d.dir, t, *r0), "workload.concurrency")
                       : NAN;
    const double rate = clients > 0 ? NAN
                        : t.has("point")
                            ? point_config_number(point_dir(d.dir, t, *r0), "workload.rate")
                            : NAN;
    if (clients > 0) f.clients.add(clients);
    // With decode, the rate prefills were served at (throughput_rps counts the decode drain),
    // against the rate the requests really arrived at (not the configured one, a Poisson draw).
    // Without, completions against arrivals over the run's middle 80% (the admitted requests'
    // own: rejected ones neither arrive nor complete there), free of the run's start and drain;
    // a table without them falls back to the whole run's throughput against the offered rate.
    const bool decode = t.has("first_token_rps") && t.has("arrival_rps");
    const bool mid = !decode && t.has("mid_completion_rps") && t.has("mid_arrival_rps") &&
                     std::isfinite(mean_of(t, cr, "mid_completion_rps")) &&
                     std::isfinite(mean_of(t, cr, "mid_arrival_rps"));
    const double thr = mean_of(t, cr, decode ? "first_token_rps" : "throughput_rps");
    const double arrived = clients > 0 ? NAN : decode ? mean_of(t, cr, "arrival_rps") : rate;
    const double done = mean_of(t, cr, "requests_completed"),
                 rejected = t.has("requests_rejected") ? mean_of(t, cr, "requests_rejected") : 0;
    // Rejected prompts (larger than the whole KV pool) are offered but never served: the load
    // the node could serve is the offered rate's admitted share.
    const double admitted = admitted_share(done, rejected);
    f.offered.add(rate);
    f.served.add(thr);
    if (rejected > 0) {  // the range is over the configurations that reject
      f.rejected.add(1 - admitted);
      ++f.rejecting;
    }
    // The decode side, over the run's middle 80% (without the drain after the last arrival,
    // which throughput_rps counts): completions against arrivals there.
    if (decode && t.has("mid_completion_rps") && t.has("mid_arrival_rps")) {
      const double done_rate = mean_of(t, cr, "mid_completion_rps"),
                   arrive_rate = mean_of(t, cr, "mid_arrival_rps");
      if (std::isfinite(done_rate) && std::isfinite(arrive_rate)) {
        ++f.decode_measured;
        if (is_overloaded(done_rate, arrive_rate, 1.0)) ++f.decode_behind;
      }
    }
    f.mid_rule = f.mid_rule || mid;
    const bool overloaded =
        clients > 0 ? false
        : mid       ? is_overloaded(mean_of(t, cr, "mid_completion_rps"),
                                    mean_of(t, cr, "mid_arrival_rps"), 1.0, kMidServedShare)
                    : is_overloaded(thr, arrived, decode ? 1.0 : admitted);
    // A configuration that keeps up on its replicates' means may still fall behind in a seed
    // (a heavier draw of prompts): counted apart.
    if (!overloaded && mid)
      for (std::size_t row : cr)
        if (t.ok(row) && is_overloaded(t.num(row, "mid_completion_rps"),
                                       t.num(row, "mid_arrival_rps"), 1.0, kMidServedShare)) {
          ++f.overloaded_in_a_seed;
          break;
        }
    if (overloaded) {
      ++f.overloaded;
      if (t.has("queue_p50_s")) {
        const double q = mean_of(t, cr, "queue_p50_s");
        if (q > f.worst_queue) f.worst_queue = q, f.worst_queue_ttft = mean_of(t, cr, "ttft_p50_s");
      }
    }
    if (t.has("cached_tokens_total") && t.has("computed_tokens_total")) {
      const double c = mean_of(t, cr, "cached_tokens_total"),
                   p = mean_of(t, cr, "computed_tokens_total");
      if (c + p > 0) f.loaded.add(c / (c + p));
    }
    if (t.has("tier_hit_rate")) f.hit.add(mean_of(t, cr, "tier_hit_rate"));
    if (t.has("tier_working_set_fits")) {
      ++f.fits_known;
      if (mean_of(t, cr, "tier_working_set_fits") == 1) ++f.fits;
    }
    if (t.has("transfer_time_fraction")) f.transfer.add(mean_of(t, cr, "transfer_time_fraction"));
  }
  return f;
}
std::string num(double v) { return fmt_num(v); }
}  // namespace

std::string regime_paragraph(const SweepData& d,
                             const std::vector<std::vector<std::size_t>>& configs,
                             const std::string& label) {
  const RegimeFacts f = regime_facts(d, configs);
  if (f.n == 0) return "";
  std::string out = "Regime" + (label.empty() ? std::string() : " of " + label) +
                    " (computed from this study's runs: replicate means per configuration, ranges "
                    "over " +
                    std::to_string(f.n) + " configurations): ";
  if (f.clients.any())
    out += "closed loop at concurrency " + span(f.clients.lo, f.clients.hi, num) + ", served " +
           span(f.served.lo, f.served.hi, num) + " req/s; ";
  if (f.offered.any())
    out += "offered " + span(f.offered.lo, f.offered.hi, num) + " req/s, served " +
           span(f.served.lo, f.served.hi, num) + "; ";
  // With decode, the rule is read on first tokens (the prefill side); the decode side follows.
  if (f.decode_measured > 0) out += "first tokens: ";
  const std::string rule =
      f.mid_rule ? "completing under 95% of the requests admitted over the run's middle 80%: "
                   "the queue grows"
                 : "serving under 90% of what is admitted";
  out += f.overloaded == 0 && f.overloaded_in_a_seed > 0
             ? "every configuration keeps up with its offered load on its replicates' means, "
               "but " +
                   std::to_string(f.overloaded_in_a_seed) + " of " + std::to_string(f.n) +
                   " fall behind in some seed (their queues grow there)"
         : f.overloaded == 0   ? "every configuration keeps up with its offered load"
         : f.overloaded == f.n ? "every configuration is overloaded (" + rule + ")"
                               : std::to_string(f.overloaded) + " of " + std::to_string(f.n) +
                                     " configurations are overloaded (" + rule + ")";
  if (f.overloaded > 0 && f.worst_queue > 0)
    out += std::string(f.worst_queue >= 0.5 * f.worst_queue_ttft
                           ? ", and their TTFT is mostly queueing"
                           : ", though queueing is the smaller part of their TTFT") +
           " (queue p50 up to " + fmt_num(f.worst_queue) + " s, against a TTFT p50 of " +
           fmt_num(f.worst_queue_ttft) + " s there)";
  if (f.overloaded > 0 && f.overloaded_in_a_seed > 0)
    out += "; " + std::to_string(f.overloaded_in_a_seed) +
           (f.overloaded_in_a_seed == 1
                ? " more keeps up on its replicates' means but falls behind in some seed"
                : " more keep up on their replicates' means but fall behind in some seed");
  if (f.decode_measured > 0)
    out += f.decode_behind == 0
               ? std::string(
                     "; decode keeps up in every configuration (completions at least 90% "
                     "of arrivals over the run's middle 80%, mid_completion_rps)")
               : "; decode falls behind in " + std::to_string(f.decode_behind) + " of " +
                     std::to_string(f.decode_measured) +
                     " configurations (completions under 90% of arrivals over the run's middle "
                     "80%, mid_completion_rps)";
  if (f.rejecting > 0)
    out += "; " + span(f.rejected.lo, f.rejected.hi, pct) + " of arrivals rejected " +
           (f.rejecting == f.n ? std::string("in every configuration")
                               : "in " + std::to_string(f.rejecting) + " of " +
                                     std::to_string(f.n) + " configurations") +
           " (prompts larger than the whole KV pool): the served figures are over the rest, and "
           "configurations that reject different shares serve different request sets";
  if (f.loaded.any())
    out += "; " + span(f.loaded.lo, f.loaded.hi, pct) +
           " of prompt tokens loaded from the tier (the rest computed: new tokens, misses and "
           "recomputed prefixes)";
  if (f.hit.any()) out += ", tier hit rate " + span(f.hit.lo, f.hit.hi, num);
  if (f.fits_known > 0 && f.hierarchy)
    out += f.fits == f.fits_known
               ? "; the DRAM tier holds the working set in every configuration"
               : "; the working set exceeds the DRAM tier in " +
                     std::to_string(f.fits_known - f.fits) + " of " + std::to_string(f.fits_known) +
                     " configurations, where the lower tier holds the rest (the loaded share "
                     "above counts its hits)";
  else if (f.fits_known > 0)
    out += f.fits == f.fits_known ? "; the tier holds the working set in every configuration"
           : f.fits == 0
               ? "; the working set does not fit the tier in any configuration (prefixes evicted "
                 "and recomputed)"
               : "; the tier holds the working set in " + std::to_string(f.fits) + " of " +
                     std::to_string(f.fits_known) + " configurations";
  if (f.transfer.any())
    out += "; KV loading is " + span(f.transfer.lo, f.transfer.hi, pct) +
           " of load + compute time" +
           (f.transfer.lo >= 0.5  ? ", so the loads, not compute, bound each request"
            : f.transfer.hi < 0.5 ? ", so compute, not the loads, bounds each request"
                                  : ", so the bound moves between the loads and compute");
  return out + ".\n\n";
}

std::size_t overloaded_count(const SweepData& d,
                             const std::vector<std::vector<std::size_t>>& configs) {
  return regime_facts(d, configs).overloaded;
}

std::string regime_brief(const SweepData& d, const std::vector<std::vector<std::size_t>>& configs) {
  const RegimeFacts f = regime_facts(d, configs);
  if (f.n == 0) return "—";
  std::string out;
  if (f.clients.any())
    out += "closed loop at concurrency " + span(f.clients.lo, f.clients.hi, num) + ", ";
  if (f.offered.any()) out += "offered " + span(f.offered.lo, f.offered.hi, num) + " req/s, ";
  out += f.overloaded == 0 ? "keeps up"
                           : std::to_string(f.overloaded) + " of " + std::to_string(f.n) +
                                 " configurations overloaded";
  if (f.decode_behind > 0)
    out += " (decode falls behind in " + std::to_string(f.decode_behind) + " of " +
           std::to_string(f.decode_measured) + ")";
  if (f.overloaded_in_a_seed > 0)
    out += " (" + std::to_string(f.overloaded_in_a_seed) +
           (f.overloaded == 0 ? " of " + std::to_string(f.n) + " overloaded in some seeds)"
                              : " more overloaded in some seeds)");
  if (f.rejecting > 0)
    out += " (" + span(f.rejected.lo, f.rejected.hi, pct) + " of arrivals rejected" +
           (f.rejecting == f.n ? std::string()
                               : " in " + std::to_string(f.rejecting) + " of " +
                                     std::to_string(f.n) + " configurations") +
           ": prompts larger than the KV pool)";
  if (f.loaded.any())
    out += "; " + span(f.loaded.lo, f.loaded.hi, pct) + " of prompt tokens loaded";
  const std::string tier = f.hierarchy ? "DRAM tier" : "tier";
  if (f.fits_known > 0)
    out += f.fits == f.fits_known
               ? "; " + tier + " holds the working set"
               : "; " + tier + " holds the working set in " + std::to_string(f.fits) + " of " +
                     std::to_string(f.fits_known) + (f.hierarchy ? " (a lower tier the rest)" : "");
  return out;
}

std::string serving_table(const SweepData& d, const std::string& axis, const std::string& fig,
                          const std::string& title, const FigureFolder& files) {
  const ResultsTable& t = d.table;
  std::ostringstream md;
  std::vector<std::vector<std::string>> rows;
  std::string plots;
  std::string bars = "config,budget_utilization_pct,vram_utilization_pct,gpu_power_tdp_pct\n";
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string label = t.get(r, axis);
    if (!t.ok(r)) {
      rows.push_back({label, "failed: " + t.get(r, "error")});
      continue;
    }
    bars += label + "," + format_number(100 * t.num(r, "budget_utilization")) + "," +
            format_number(100 * t.num(r, "vram_utilization")) + "," +
            format_number(100 * t.num(r, "gpu_power_tdp_fraction")) + "\n";
    rows.push_back({label, fmt_num(t.num(r, "requests_completed")),
                    fmt_num(t.num(r, "throughput_rps")), fmt_num(t.num(r, "ttft_p50_s")),
                    fmt_num(t.num(r, "ttft_p99_s")), fmt_num(t.num(r, "max_wait_s")),
                    fmt_num(t.num(r, "jain_index")), pct(t.num(r, "budget_utilization")),
                    pct(t.num(r, "vram_utilization")), pct(t.num(r, "transfer_time_fraction")),
                    pct(t.num(r, "load_ttft_fraction")), fmt_num(t.num(r, "p_oh_ratio_of_sums")),
                    pct(t.num(r, "gpu_power_tdp_fraction")),
                    gbs(t.num(r, "h2d_effective_bytes_per_s")) + " / " +
                        gbs(t.num(r, "h2d_effective_node_bytes_per_s")) + " / " +
                        gbs(t.num(r, "h2d_effective_model_bytes_per_s"))});
    const std::string cdf = ttft_cdf(point_dir(d.dir, t, r));
    if (!cdf.empty()) {
      // "-cdf-": a run labelled "utilisation" cannot collide with the bar chart's data file.
      const std::string f = fig + "-cdf-" + label + ".csv";
      files.write_data(f, cdf);
      plots += std::string(plots.empty() ? "" : ", ") + "'" + f +
               "' using 1:2 skip 1 with lines lw 2 title '" + label + "'";
    }
  }
  md << markdown_table(
            {axis, "requests", "throughput (req/s)", "TTFT p50 (s)", "TTFT p99 (s)", "max wait (s)",
             "Jain index", "budget utilisation", "VRAM KV used", "load / (load + compute)",
             "load / TTFT (queue included)", "P_OH Σ load / Σ compute", "GPU power / TDP",
             "H2D GB/s while the link is busy: GPU / node / model"},
            rows)
     << "\n";
  files.write_data(fig + "-utilisation.csv", bars);
  md << files.figure(
      {fig + "-utilisation", "Budget, VRAM and power utilisation",
       "  set title 'Token budget, VRAM KV pool and GPU power use'\n"
       "  set style data histograms\n  set style histogram clustered gap 1\n"
       "  set style fill solid 0.8 border -1\n  set yrange [0:100]\n  set ylabel '%'\n"
       "  set grid ytics\n  set key top right\n"
       "  plot '" +
           fig +
           "-utilisation.csv' using 2:xtic(1) skip 1 title 'token budget used', "
           "'' using 3 skip 1 title 'VRAM KV pool used', '' using 4 skip 1 title 'GPU power / "
           "TDP'"});
  if (!plots.empty())
    md << files.figure(
        {fig, title,
         "  set title '" + title +
             "'\n  set logscale x\n  set xlabel 'TTFT (s)'\n"
             "  set ylabel 'fraction of requests'\n  set key bottom right\n  set grid\n"
             "  set yrange [0:1]\n  plot " +
             plots});
  return md.str();
}

}  // namespace kappasim::report
