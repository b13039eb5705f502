// The `capacity-probe` sweep kind (issue 26 item 19): one serving simulation at the config's
// offered load (workload.rate), measured in its steady-state window (serving/steady_window.hpp)
// rather than over the whole run, for the capacity search of `kappasim measure capacity` and
// the `capacity` kind (analysis/capacity.hpp), each probe one process.
// Config: a run config plus `window: {warmup, percentile}`. Metrics, in this order:
//   offered_rps            workload.rate as configured
//   arrival_rps            arrivals in the window / its length (what the window saw)
//   served_rps             finishes in the window / its length (the steady-state throughput)
//   window_start_s, window_end_s, window_requests
//   ttft_q_s               the window's TTFT at window.percentile (nearest rank)
//   ttft_p50_s, ttft_p90_s, ttft_p99_s   the window's TTFT quantiles (nearest rank)
//   tier_hit_rate, requests_rejected, throughput_rps (whole run, as summary.json)
// The point's seed replaces workload.seed, as in the run kind. Warnings as the run kind's.
#include <cmath>

#include "serving/run_folder.hpp"
#include "serving/steady_window.hpp"
#include "sweeps/point_kind.hpp"

namespace kappasim {

namespace {

using sweep::PointContext;
using sweep::PointResult;

struct WindowSpec {
  double warmup = 0.2;  // [A] fraction of the requests (by arrival) left out as warm-up
  double percentile = 0.99;
  template <class V>
  void visit(V& v) {
    v.number("warmup", warmup,
             opt("fraction of the requests, by arrival, left out as warm-up (0 to <1)",
                 Range::Fraction));
    v.number("percentile", percentile,
             opt("the TTFT quantile reported as ttft_q_s (0 to 1, e.g. 0.99)", Range::Fraction));
  }
  void validate(const std::string& path) const {
    if (!(warmup < 1)) throw InputError(path + ".warmup: expected below 1");
    if (!(percentile > 0)) throw InputError(path + ".percentile: expected above 0");
  }
};

PointResult capacity_probe(const ConfigNode& config, const PointContext& ctx) {
  ConfigNode node = config;
  WindowSpec win;
  if (const ConfigNode* w = node.find("window")) {
    win = read_config<WindowSpec>(*w, "window", nullptr);
    node.erase("window");
  }
  RunSpec spec = read_config<RunSpec>(node, "");
  if (spec.workload.type == WorkloadType::Trace)
    throw InputError(
        "workload.type: a trace has no offered rate to vary; the capacity search needs a "
        "generator (sharegpt, narrativeqa, docfinqa, mix) with workload.rate");
  spec.trace = false;
  spec.workload.seed = ctx.seed;
  std::vector<double> arrivals, finishes;
  arrivals.reserve(static_cast<std::size_t>(spec.workload.requests));
  finishes.reserve(static_cast<std::size_t>(spec.workload.requests));
  SummaryBuilder summary;
  EngineSinks sinks;
  sinks.summary = &summary;
  sinks.on_finish = [&](const RequestRecord& r) {
    arrivals.push_back(r.arrival_s);
    finishes.push_back(r.arrival_s + r.ttft_s);
  };
  const SummaryBuilder::Totals totals = run_workload(spec, ctx.base_dir, sinks);
  const SteadyWindow w =
      steady_window(std::move(arrivals), std::move(finishes), win.warmup, "workload.requests");
  PointResult out;
  out.metrics = {{"offered_rps", spec.workload.rate},
                 {"arrival_rps", w.arrival_rps},
                 {"served_rps", w.served_rps},
                 {"window_start_s", w.t0_s},
                 {"window_end_s", w.t1_s},
                 {"window_requests", static_cast<double>(w.requests)},
                 {"ttft_q_s", w.ttft_quantile(win.percentile)},
                 {"ttft_p50_s", w.ttft_quantile(0.5)},
                 {"ttft_p90_s", w.ttft_quantile(0.9)},
                 {"ttft_p99_s", w.ttft_quantile(0.99)}};
  for (const auto& [k, v] : summary.figures(totals))
    if (k == "tier_hit_rate" || k == "requests_rejected" || k == "throughput_rps")
      out.metrics.emplace_back(k, v);
  if (std::string warn = tier_overflow_warning(spec, totals); !warn.empty())
    out.warnings.push_back(std::move(warn));
  return out;
}

const sweep::KindRegistration kCapacityProbeKind{
    {"capacity-probe",
     "one serving run at workload.rate measured in its steady-state window (window: {warmup, "
     "percentile}): offered, arrival and served rps, window TTFT quantiles (measure capacity)",
     capacity_probe,
     false,
     true,
     {{"offered_rps", "Hz", "the rate offered (workload.rate)"},
      {"arrival_rps", "Hz", "requests arrived per second in the steady-state window"},
      {"served_rps", "Hz", "requests whose first token came within the window, per second"},
      {"window_start_s", "s", "the window's start (after window.warmup of the requests)"},
      {"window_end_s", "s", "the window's end"},
      {"window_requests", "1", "requests in the window"},
      {"ttft_q_s", "s", "the window's TTFT at window.percentile"},
      {"ttft_p50_s", "s", "the window's median TTFT"},
      {"ttft_p90_s", "s", "the window's 90th-percentile TTFT"},
      {"ttft_p99_s", "s", "the window's 99th-percentile TTFT"},
      {"tier_hit_rate", "1", "as summary.json's, over the whole run"},
      {"requests_rejected", "1", "as summary.json's, over the whole run"},
      {"throughput_rps", "Hz", "as summary.json's, over the whole run"}}}};

}  // namespace

}  // namespace kappasim
