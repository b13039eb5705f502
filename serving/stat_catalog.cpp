#include "serving/stat_catalog.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "core/error.hpp"
#include "core/table.hpp"
#include "serving/kv_hierarchy.hpp"

namespace kappasim {

const char* stat_agg_name(StatAgg a) {
  switch (a) {
    case StatAgg::Value:
      return "value";
    case StatAgg::Count:
      return "count";
    case StatAgg::Sum:
      return "sum";
    case StatAgg::Mean:
      return "mean";
    case StatAgg::Quantile:
      return "quantile";
    case StatAgg::Max:
      return "max";
    case StatAgg::Ratio:
      return "ratio";
    case StatAgg::PerGpu:
      return "per GPU";
    case StatAgg::Total:
      return "total";
    case StatAgg::Setting:
      return "setting";
    case StatAgg::Flag:
      return "flag";
  }
  return "?";
}

const char* stat_agg_doc(StatAgg a) {
  switch (a) {
    case StatAgg::Value:
      return "one request's own value";
    case StatAgg::Count:
      return "events counted over the run";
    case StatAgg::Sum:
      return "summed over the requests served";
    case StatAgg::Mean:
      return "mean over the requests served (over the scheduler steps where the definition says "
             "so); exact";
    case StatAgg::Quantile:
      return "a percentile over the requests served, from the quantile sketch: within 0.5% "
             "(section \"Percentiles\")";
    case StatAgg::Max:
      return "largest over the requests served; exact";
    case StatAgg::Ratio:
      return "a ratio of other figures, as defined; null when its denominator is 0";
    case StatAgg::PerGpu:
      return "a run total per GPU, averaged over the GPUs";
    case StatAgg::Total:
      return "a run total: all GPUs, the whole run";
    case StatAgg::Setting:
      return "the configuration's (or the model's) value, not measured";
    case StatAgg::Flag:
      return "1 when the condition holds, else 0";
  }
  return "?";
}

const char* stat_when_doc(StatWhen w) {
  switch (w) {
    case StatWhen::Always:
      return "always";
    case StatWhen::Replica:
      return "layouts beyond TP";
    case StatWhen::Tiers:
      return "with serving.tiers";
    case StatWhen::Decode:
      return "with serving.decode";
    case StatWhen::EndToEnd:
      return "with serving.ttft: end_to_end";
    case StatWhen::ShardKv:
      return "with serving.replicated_kv: shard_allgather";
    case StatWhen::ClosedLoop:
      return "with workload.concurrency";
    case StatWhen::PrefixCache:
      return "with serving.prefix_caching";
    case StatWhen::Cluster:
      return "cluster runs";
    case StatWhen::Disagg:
      return "P/D cluster runs";
  }
  return "?";
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// a / b, NaN when b is zero (or either is NaN).
double ratio(double a, double b) { return b != 0 ? a / b : kNaN; }

using In = SummaryInputs;
using Value = std::function<double(const In&)>;
using Cell = CsvCell;

double n_req(const In& x) { return static_cast<double>(x.a.requests); }
double n_steps(const In& x) { return static_cast<double>(x.a.steps); }
// Events per second between the 10th- and 90th-percentile time of a sketch of event times: the
// order statistics' ranks apart over their times apart (QuantileSketch's lower-rank quantiles).
// NaN under 10 events or for a zero span.
double mid_rate(const QuantileSketch& times) {
  const std::uint64_t n = times.count();
  if (n < 10) return kNaN;
  const auto rank = [n](double q) { return std::floor(q * static_cast<double>(n - 1)); };
  const double span = times.quantile(0.9) - times.quantile(0.1);
  return span > 0 ? (rank(0.9) - rank(0.1)) / span : kNaN;
}
double gpu_power(const In& x) {
  return ratio(ratio(x.t.gpu_energy_j, static_cast<double>(x.t.gpus)), x.t.simulated_time_s);
}

// ---- requests.csv ---------------------------------------------------------------------------

StatDecl column(const char* name, const char* unit, const char* doc, Cell cell) {
  StatDecl d{name, unit, StatAgg::Value, StatWhen::Always, doc, {}};
  d.keys.push_back({name, kShowNone, nullptr, std::move(cell)});
  return d;
}
Cell number(double RequestRecord::*m) { return Cell(m); }
Cell integer(std::int64_t RequestRecord::*m) { return Cell(m); }
Cell text(std::string RequestRecord::*m) { return Cell(m); }

std::string category_list(const char* skip) {
  std::string s;
  for (const auto& c : TimeBreakdown::categories())
    if (std::string(c.name) != skip) s += std::string(s.empty() ? "" : ", ") + c.name;
  return s;
}

std::vector<StatDecl> make_requests_csv() {
  std::vector<StatDecl> v;
  v.push_back(column("id", "-", "the request's id", Cell(&RequestRecord::id)));
  v.push_back(column("workload", "text",
                     "the request's source (`narrativeqa`, `trace:x.jsonl`; in a mix, the "
                     "component it came from)",
                     text(&RequestRecord::workload)));
  v.push_back(column("arrival_s", "s", "arrival time", number(&RequestRecord::arrival_s)));
  v.push_back(column("queue_s", "s", "first scheduled − arrival", number(&RequestRecord::queue_s)));
  v.push_back(column("load_s", "s",
                     "time its cached KV took to arrive (tier software costs included)",
                     number(&RequestRecord::load_s)));
  v.push_back(
      column("compute_s", "s", "its prefill compute time", number(&RequestRecord::compute_s)));
  v.push_back(column("ttft_s", "s",
                     "its first output token (the end of its prefill) − arrival; prefill only, "
                     "its finish; with serving.ttft: end_to_end the front end's time is in it",
                     number(&RequestRecord::ttft_s)));
  v.push_back(
      column("front_end_s", "s",
             "with serving.ttft: end_to_end, its time in the stack's front end (HTTP, "
             "tokenising its whole prompt, the hop to the engine core; after its first "
             "token the hop back, detokenising and the SSE chunk): in ttft_s, not in the time "
             "breakdown (t_*_s); a wait behind other requests for the front end "
             "is queueing, not this. 0 with an engine TTFT",
             number(&RequestRecord::front_end_s)));
  v.push_back(column("tier_request_s", "s",
                     "with serving.ttft: end_to_end, the tier's per-request lookup costs charged "
                     "for it (the stack's tier_request: lookup RPC and the prompt's conversion, on "
                     "every lookup of it, repeats while it waits included): on the scheduler's "
                     "path, so inside t_sched_software_s (which the whole step waits for). 0 with "
                     "an engine TTFT or a stack without them (vLLM native, ideal)",
                     number(&RequestRecord::tier_request_s)));
  v.push_back(column("cached_tokens", "tokens",
                     "K loaded (with `serving.recompute`, the recomputed leading tokens are not "
                     "in it)",
                     integer(&RequestRecord::cached_tokens)));
  {
    StatDecl d = column("hbm_hit_tokens", "tokens",
                        "prompt tokens whose KV the GPU's prefix cache held at its first "
                        "admission (serving.prefix_caching: blocks shared with, or left by, "
                        "earlier requests): neither loaded nor computed, in none of "
                        "cached_tokens, computed_tokens",
                        integer(&RequestRecord::hbm_hit_tokens));
    d.when = StatWhen::PrefixCache;
    v.push_back(std::move(d));
  }
  v.push_back(column("computed_tokens", "tokens",
                     "T prefilled (with `serving.recompute`, the recomputed leading tokens count "
                     "as computed)",
                     integer(&RequestRecord::computed_tokens)));
  v.push_back(column("kappa_ratio", "1", "K / T", number(&RequestRecord::kappa_ratio)));
  v.push_back(column("bytes_loaded", "B",
                     "KV bytes loaded for it over the host links, whole TP group (buffer hits "
                     "are not in it)",
                     number(&RequestRecord::bytes_loaded)));
  v.push_back(column("bytes_stored", "B",
                     "KV bytes stored for it over the host links, whole TP group",
                     number(&RequestRecord::bytes_stored)));
  v.push_back(column("load_path", "text", "`kernel`, `layerwise`, `block-dma`, ...",
                     text(&RequestRecord::load_path)));
  v.push_back(column("steps", "steps",
                     "scheduler steps it took part in before its first output token (its TTFT's)",
                     Cell(&RequestRecord::steps)));
  {
    StatDecl d{"t_<category>_s",
               "s",
               StatAgg::Value,
               StatWhen::Always,
               "its TTFT by category; they sum to ttft_s, less the front end's time in an "
               "end-to-end run (section \"Time breakdown\" below). "
               "Categories: " +
                   category_list("idle"),
               {}};
    for (const auto& c : TimeBreakdown::categories())
      if (c.field != &TimeBreakdown::idle_s) {
        d.keys.push_back({std::string("t_") + c.name + "_s", kShowNone, nullptr, Cell(c.field)});
      }
    v.push_back(std::move(d));
  }
  {
    auto decode = [&v](const char* name, const char* unit, const char* doc, Cell cell) {
      StatDecl d = column(name, unit, doc, std::move(cell));
      d.when = StatWhen::Decode;
      v.push_back(std::move(d));
    };
    decode("e2e_s", "s", "its last output token − arrival (end-to-end latency)",
           number(&RequestRecord::e2e_s));
    decode("output_tokens", "tokens",
           "output tokens generated (the first at the end of the prefill)",
           integer(&RequestRecord::output_tokens));
    decode("tpot_s", "s",
           "time per output token after the first: (e2e_s − ttft_s) / (output_tokens − 1); empty "
           "for one output token",
           number(&RequestRecord::tpot_s));
    decode("preemptions", "preemptions",
           "times it was preempted because the KV blocks ran out (its KV discarded, recomputed)",
           Cell(&RequestRecord::preemptions));
  }
  v.push_back(column("load_bound", "text",
                     "what held its KV load back longest: `software`, `read_tags`, "
                     "`sm_inflight`, `link`, `host_dram`, `socket_link` or `hbm`; empty when it "
                     "loaded nothing",
                     text(&RequestRecord::load_bound)));
  return v;
}

// ---- summary.json ---------------------------------------------------------------------------

StatDecl fig(const char* name, const char* unit, StatAgg agg, std::string doc, Value value,
             unsigned show = kShowNone) {
  StatDecl d{name, unit, agg, StatWhen::Always, std::move(doc), {}};
  d.keys.push_back({name, show, std::move(value), nullptr});
  return d;
}
// A figure the engine computes itself (Totals::extra).
StatDecl replica(const char* name, const char* unit, StatAgg agg, const char* doc) {
  StatDecl d{name, unit, agg, StatWhen::Replica, doc, {}};
  d.keys.push_back({name, kShowNone, nullptr, nullptr});
  return d;
}
const TierLevel kTierLevels[] = {TierLevel::Dram, TierLevel::Cxl, TierLevel::Nvme,
                                 TierLevel::Remote};
// One field of every tier level (Totals::tier_levels).
StatDecl tier(const char* field, const char* unit, StatAgg agg, const char* doc) {
  StatDecl d{std::string("tiers_<level>_") + field, unit, agg, StatWhen::Tiers, doc, {}};
  for (TierLevel l : kTierLevels)
    d.keys.push_back(
        {std::string("tiers_") + tier_level_name(l) + "_" + field, kShowNone, nullptr, nullptr});
  return d;
}
// A cluster's per-group figure; the key holds the field after "<group>.".
StatDecl group(const char* field, const char* unit, StatAgg agg, std::string doc,
               unsigned show = kShowNone) {
  StatDecl d{std::string("<group>.") + field, unit, agg, StatWhen::Cluster, std::move(doc), {}};
  d.keys.push_back({field, show, nullptr, nullptr});
  return d;
}

// A P/D cluster's hand-off figure (Cluster::figures).
StatDecl disagg(const char* name, const char* unit, StatAgg agg, const char* doc) {
  StatDecl d{name, unit, agg, StatWhen::Disagg, doc, {}};
  d.keys.push_back({name, kShowCluster, nullptr, nullptr});
  return d;
}

std::vector<StatDecl> make_summary() {
  using A = StatAgg;
  std::vector<StatDecl> v;
  auto add = [&v](StatDecl d) { v.push_back(std::move(d)); };
  // clang-format off
  add(fig("requests_completed", "requests", A::Count, "requests finished",
          n_req, kShowCluster));
  add(fig("requests_rejected", "requests", A::Count,
          "requests refused without being served: a prompt larger than the whole paged-KV pool "
          "(vLLM rejects it)",
          [](const In& x) { return static_cast<double>(x.t.requests_rejected); }));
  add(fig("simulated_time_s", "s", A::Total, "simulated length of the run",
          [](const In& x) { return x.t.simulated_time_s; }));
  add(fig("wall_time_s", "s", A::Total, "host wall-clock seconds (**non-deterministic**)",
          [](const In& x) { return x.t.wall_time_s; }));
  add(fig("throughput_rps", "req/s", A::Ratio, "requests_completed / simulated_time_s",
          [](const In& x) { return ratio(n_req(x), x.t.simulated_time_s); },
          kShowRun | kShowCluster));
  // The middle 80% of the run (10th to 90th percentile) of arrivals and of completions: a
  // server that keeps up completes requests as fast as they arrive there, whatever its start and
  // its drain after the last arrival (which throughput_rps counts); one that falls behind (its
  // queue growing) completes them at its own rate. Sketch quantiles: within 0.5% of each time.
  add(fig("mid_arrival_rps", "req/s", A::Ratio,
          "the completed requests between their 10th- and 90th-percentile arrival time, per "
          "second of that span: the rate they arrived at over the run's middle 80%",
          [](const In& x) { return mid_rate(x.a.arrivals); }));
  add(fig("mid_completion_rps", "req/s", A::Ratio,
          "the completed requests between their 10th- and 90th-percentile finish time (arrival + "
          "TTFT, + decode: e2e), per second of that span: the rate they were served at over the "
          "run's middle 80%, without the drain after the last arrival that throughput_rps counts "
          "(below mid_arrival_rps: the server fell behind, its queue growing; the report calls a "
          "run overloaded under 95% of it, a decode node behind under 90%: docs/report.md)",
          [](const In& x) { return mid_rate(x.a.finishes); }));
  add(fig("ttft_mean_s", "s", A::Mean, "TTFT (ttft_s) mean",
          [](const In& x) { return x.a.ttft.mean(); }));
  add(fig("ttft_p50_s", "s", A::Quantile, "TTFT median",
          [](const In& x) { return x.a.ttft.quantile(0.50); }, kShowRun | kShowCluster));
  add(fig("ttft_p90_s", "s", A::Quantile, "TTFT 90th percentile",
          [](const In& x) { return x.a.ttft.quantile(0.90); }));
  add(fig("ttft_p99_s", "s", A::Quantile, "TTFT 99th percentile",
          [](const In& x) { return x.a.ttft.quantile(0.99); }, kShowRun | kShowCluster));
  add(fig("ttft_max_s", "s", A::Max, "largest TTFT",
          [](const In& x) { return x.a.ttft.max(); }));
  {  // end-to-end TTFT (serving.ttft: end_to_end; docs/serving-stacks.md "Front end")
    StatDecl d = fig("front_end_mean_s", "s", A::Mean,
                     "time in the stack's front end per request (HTTP, tokenising, the hop to "
                     "the engine core before the scheduler; the output path after the first "
                     "token), mean; part of its TTFT, not of the time breakdown",
                     [](const In& x) { return ratio(x.a.front_end_sum, n_req(x)); });
    d.when = StatWhen::EndToEnd;
    add(std::move(d));
    StatDecl t = fig("tier_request_mean_s", "s", A::Mean,
                     "the tier's per-request lookup costs charged per request (tier_request_s: "
                     "lookup RPC and the prompt's conversion, every lookup), mean; on the "
                     "scheduler's path (sched_software), 0 on a stack without them",
                     [](const In& x) { return ratio(x.a.tier_request_sum, n_req(x)); });
    t.when = StatWhen::EndToEnd;
    add(std::move(t));
  }
  {  // closed-loop clients (workload.concurrency; docs/workloads.md "Closed loop"): the offered
     // load is the clients, not a rate
    StatDecl d = fig(
        "concurrency", "clients", A::Setting,
        "workload.concurrency: clients, each sending its next request when its previous one "
        "finished (its last token with serving.decode, else its first) plus think_time_s",
        [](const In& x) { return x.t.concurrency; }, kShowRun | kShowCluster);
    d.when = StatWhen::ClosedLoop;
    add(std::move(d));
    StatDecl th = fig("think_time_s", "s", A::Setting,
                      "workload.think_time: a client's pause between a finish and its next request",
                      [](const In& x) { return x.t.think_time_s; });
    th.when = StatWhen::ClosedLoop;
    add(std::move(th));
  }
  add(fig("queue_mean_s", "s", A::Mean, "queueing delay (queue_s) mean",
          [](const In& x) { return x.a.queue.mean(); }));
  add(fig("queue_p50_s", "s", A::Quantile, "queueing delay median",
          [](const In& x) { return x.a.queue.quantile(0.50); }));
  add(fig("queue_p99_s", "s", A::Quantile, "queueing delay 99th percentile",
          [](const In& x) { return x.a.queue.quantile(0.99); }));
  add(fig("max_wait_s", "s", A::Max, "largest queue_s",
          [](const In& x) { return x.a.requests ? x.a.max_wait_s : kNaN; }));
  add(fig("slowdown_mean", "1", A::Mean,
          "mean over requests of slowdown = ttft / (load + compute) (its isolated service time)",
          [](const In& x) { return ratio(x.a.slow_sum, static_cast<double>(x.a.slow_n)); }));
  add(fig("jain_index", "1", A::Ratio,
          "Jain's fairness index over slowdowns: (Σx)² / (n·Σx²); 1 = all requests slowed alike",
          [](const In& x) {
            return ratio(x.a.slow_sum * x.a.slow_sum,
                         static_cast<double>(x.a.slow_n) * x.a.slow_sq);
          }));
  add(fig("load_mean_s", "s", A::Mean, "load_s mean",
          [](const In& x) { return ratio(x.a.load_sum, n_req(x)); }));
  add(fig("compute_mean_s", "s", A::Mean, "compute_s mean",
          [](const In& x) { return ratio(x.a.compute_sum, n_req(x)); }));
  add(fig("p_oh_mean", "1", A::Mean,
          "mean over requests with compute_s > 0 of load_s / compute_s (the paper's P_OH per "
          "request, averaged: requests with tiny compute dominate it)",
          [](const In& x) { return ratio(x.a.poh_sum, static_cast<double>(x.a.poh_n)); }));
  // Issue 20 part 4: Σ load / Σ compute, not dominated by tiny-compute requests as the mean of
  // per-request ratios is.
  add(fig("p_oh_ratio_of_sums", "1", A::Ratio,
          "Σ load_s / Σ compute_s over all requests (the run's P_OH; the reports use this one)",
          [](const In& x) { return ratio(x.a.load_sum, x.a.compute_sum); }));
  add(fig("transfer_time_fraction", "1", A::Ratio,
          "Σ load_s / Σ (load_s + compute_s): the load's share of load + compute time, **not** "
          "of TTFT (queueing is not in it)",
          [](const In& x) { return ratio(x.a.load_sum, x.a.load_sum + x.a.compute_sum); },
          kShowRun));
  add(fig("load_ttft_fraction", "1", A::Ratio,
          "Σ load_s / Σ ttft_s: the load's share of the time requests waited, queue included",
          [](const In& x) { return ratio(ratio(x.a.load_sum, n_req(x)), x.a.ttft.mean()); }));
  add(fig("kappa_ratio_mean", "1", A::Mean, "κ_ratio (kappa_ratio) of the requests served",
          [](const In& x) { return x.a.kappa.mean(); }));
  add(fig("kappa_ratio_p50", "1", A::Quantile, "κ_ratio median",
          [](const In& x) { return x.a.kappa.quantile(0.50); }));
  add(fig("cached_tokens_total", "tokens", A::Sum, "cached_tokens",
          [](const In& x) { return x.a.cached_tokens; }));
  add(fig("computed_tokens_total", "tokens", A::Sum, "computed_tokens",
          [](const In& x) { return x.a.computed_tokens; }));
  add(fig("bytes_loaded_total", "B", A::Sum, "bytes_loaded",
          [](const In& x) { return x.a.bytes_loaded; }));
  add(fig("bytes_stored_total", "B", A::Sum, "bytes_stored",
          [](const In& x) { return x.a.bytes_stored; }));
  add(fig("last_finish_s", "s", A::Max, "latest arrival + ttft (+ its decode: e2e)",
          [](const In& x) { return x.a.requests ? x.a.last_finish_s : kNaN; }));
  add(fig("steps", "steps", A::Count, "scheduler steps", n_steps));
  add(fig("step_time_mean_s", "s", A::Mean, "mean step length (over steps)",
          [](const In& x) { return ratio(x.a.step_time_sum, n_steps(x)); }));
  add(fig("scheduled_tokens_per_iter", "tokens", A::Mean, "mean tokens scheduled per step",
          [](const In& x) { return ratio(x.a.step_tokens, n_steps(x)); }));
  add(fig("budget_utilization", "1", A::Mean, "mean over steps (with a budget) of tokens / budget",
          [](const In& x) {
            return ratio(x.a.budget_frac_sum, static_cast<double>(x.a.budget_n));
          },
          kShowRun));
  add(fig("seqs_per_iter", "requests", A::Mean, "mean sequences per step",
          [](const In& x) { return ratio(x.a.seqs_sum, n_steps(x)); }));
  add(fig("vram_utilization", "1", A::Mean, "mean over steps of the used fraction of usable HBM",
          [](const In& x) { return ratio(x.a.vram_sum, n_steps(x)); }));
  add(fig("gpus", "GPUs", A::Setting,
          "GPUs simulated (a layout beyond TP: the replica's GPUs; a cluster: all nodes')",
          [](const In& x) { return static_cast<double>(x.t.gpus); }));
  add(fig("gpu_utilization", "1", A::Ratio, "per-GPU compute-busy time / simulated_time_s",
          [](const In& x) { return ratio(x.t.gpu_busy_s, x.t.simulated_time_s); }));
  add(fig("h2d_bytes_per_gpu", "B", A::PerGpu, "host→device KV bytes per GPU",
          [](const In& x) { return x.t.h2d_bytes_per_gpu; }));
  add(fig("h2d_effective_bytes_per_s", "B/s", A::Ratio,
          "**per GPU**: h2d_bytes_per_gpu / time the GPU's host link spent loading (link-busy "
          "time: the copies only, no tier software; the bandwidth the copies got). Not the "
          "`h2d_load_bytes_per_s` of `measure kappa-crit` / `measure poh`, which divides by the "
          "whole load time, software included (below)",
          [](const In& x) { return ratio(x.t.h2d_bytes_per_gpu, x.t.link_busy_s); }, kShowRun));
  add(fig("h2d_effective_node_bytes_per_s", "B/s", A::Ratio,
          "**per node**: the same loads over all `gpus` of the TP group together = "
          "h2d_effective_bytes_per_s × gpus (every GPU loads its shard at once)",
          [](const In& x) { return ratio(x.t.h2d_bytes_per_gpu * x.t.gpus, x.t.link_busy_s); },
          kShowRun));
  add(fig("h2d_effective_model_bytes_per_s", "B/s", A::Ratio,
          "**model level**: K · B_kv / load time, B_kv the model's KV bytes per token "
          "(models/llm kv_bytes_per_token): each cached token's KV counted once, so KV heads "
          "replicated across TP ranks (Qwen3-235B's 4 KV heads at TP 8: ×2) are not; it "
          "undercounts what crossed the links by that factor",
          [](const In& x) { return ratio(x.t.h2d_model_bytes, x.t.link_busy_s); }, kShowRun));
  add(fig("link_capacity_Bps", "B/s", A::Setting,
          "per-GPU, per-direction payload peak of the host link",
          [](const In& x) { return x.t.link_capacity_Bps; }));
  add(fig("link_utilization", "1", A::Ratio,
          "h2d_bytes_per_gpu / (link_capacity_Bps · simulated_time_s) (bandwidth share)",
          [](const In& x) {
            return ratio(x.t.h2d_bytes_per_gpu, x.t.link_capacity_Bps * x.t.simulated_time_s);
          }));
  add(fig("link_busy_fraction", "1", A::Ratio,
          "link busy time / simulated_time_s (time share, at most 1): the time the GPU's host link "
          "carried KV loads' copies, from each load's first copy to its last (an async load's "
          "wait for the copy stream is the previous load's time)",
          [](const In& x) { return ratio(x.t.link_busy_s, x.t.simulated_time_s); }));
  {  // vLLM's automatic prefix caching in HBM (serving.prefix_caching; docs/serving-engine.md)
    auto apc = [&add](const char* name, const char* unit, StatAgg agg, const char* doc,
                      Value value) {
      StatDecl d = fig(name, unit, agg, doc, std::move(value));
      d.when = StatWhen::PrefixCache;
      add(std::move(d));
    };
    apc("hbm_hit_tokens_total", "tokens", A::Sum, "hbm_hit_tokens",
        [](const In& x) { return x.a.hbm_hit_tokens; });
    apc("hbm_hit_fraction", "1", A::Ratio,
        "hbm_hit_tokens_total / (hbm_hit_tokens_total + cached_tokens_total + "
        "computed_tokens_total): the share of the prompts' tokens the prefix cache held",
        [](const In& x) {
          return ratio(x.a.hbm_hit_tokens,
                       x.a.hbm_hit_tokens + x.a.cached_tokens + x.a.computed_tokens);
        });
    apc("prefix_cache_evicted_blocks", "blocks", A::Count,
        "registered KV blocks reused for other KV (their key dropped), over every rank's pool; "
        "with serving.kv_cache: hybrid, a cached linear-attention state's blocks too",
        [](const In& x) { return x.t.prefix_cache_evicted_blocks; });
  }
  {  // replicated KV loaded once (serving.replicated_kv: shard_allgather; docs/parallelism.md)
    auto shard = [&add](const char* name, const char* unit, StatAgg agg, const char* doc,
                        Value value) {
      StatDecl d = fig(name, unit, agg, doc, std::move(value));
      d.when = StatWhen::ShardKv;
      add(std::move(d));
    };
    shard("kv_replication", "copies", A::Setting,
          "copies r of each token's KV in a TP group (GQA: tp / KV heads when above 1; MLA: tp): "
          "each GPU loads 1/r of its KV over its host link (h2d_bytes_per_gpu) and the ring "
          "all-gathers the rest over NVLink; 1: nothing replicated, the run is each_rank's",
          [](const In& x) { return x.t.kv_replication; });
    shard("kv_allgather_bytes_per_gpu", "B", A::PerGpu,
          "NVLink bytes a GPU sent all-gathering the KV shards: (r − 1) × its shard per load "
          "group (a ring)",
          [](const In& x) { return x.t.kv_allgather_bytes_per_gpu; });
    shard("kv_allgather_s", "s", A::PerGpu,
          "Σ over load groups of the time from the shards' arrival to the all-gather's end "
          "(part of the load's link time and of link-busy time)",
          [](const In& x) { return x.t.kv_allgather_s; });
  }
  add(fig("gpu_energy_j", "J", A::Total, "energy of all GPUs (power model below)",
          [](const In& x) { return x.t.gpu_energy_j; }));
  add(fig("gpu_power_w", "W", A::Ratio, "gpu_energy_j / gpus / simulated_time_s", gpu_power));
  add(fig("gpu_power_tdp_fraction", "1", A::Ratio, "gpu_power_w / TDP (the paper measured 0.28)",
          [](const In& x) { return ratio(gpu_power(x), x.t.tdp_w); }, kShowRun));
  add(fig("energy_per_request_j", "J", A::Ratio, "gpu_energy_j / requests_completed",
          [](const In& x) { return ratio(x.t.gpu_energy_j, n_req(x)); }));
  add(fig("tier_hit_chunks", "chunks", A::Count,
          "KV tier lookups over every full chunk of each prompt that hit (first-miss "
          "accounting: after the first miss every key counts as a miss)",
          [](const In& x) { return x.t.tier_hit_chunks; }));
  add(fig("tier_miss_chunks", "chunks", A::Count, "the same lookups that missed",
          [](const In& x) { return x.t.tier_miss_chunks; }));
  add(fig("tier_hit_rate", "1", A::Ratio, "tier_hit_chunks / (tier_hit_chunks + tier_miss_chunks)",
          [](const In& x) {
            return ratio(x.t.tier_hit_chunks, x.t.tier_hit_chunks + x.t.tier_miss_chunks);
          }));
  add(fig("bytes_from_buffer_total", "B", A::Sum,
          "KV bytes copied from the GPU-side KV buffer instead of crossing the host link, whole "
          "TP group (`serving.kv_buffer`, docs/studies-kv.md; bytes_loaded_total counts the link "
          "only)",
          [](const In& x) { return x.a.bytes_buffer; }));
  add(fig("buffer_hit_rate", "1", A::Ratio,
          "bytes_from_buffer_total / (bytes_from_buffer_total + bytes_loaded_total): the byte "
          "share of loaded KV the buffer served",
          [](const In& x) {
            return ratio(x.a.bytes_buffer, x.a.bytes_buffer + x.a.bytes_loaded);
          }));
  add(fig("kappa_link_ratio_mean", "1", A::Mean,
          "effective κ_ratio the link sees: per request, cached tokens that still crossed the "
          "link (buffer hits and recomputed tokens excluded) / computed tokens; equals "
          "kappa_ratio without a buffer",
          [](const In& x) { return x.a.kappa_link.mean(); }));
  add(fig("kappa_link_ratio_p50", "1", A::Quantile, "its median",
          [](const In& x) { return x.a.kappa_link.quantile(0.50); }));
  add(fig("recomputed_tokens_total", "tokens", A::Sum,
          "cached tokens recomputed instead of loaded (`serving.recompute`); they count in "
          "computed_tokens_total, not in cached_tokens_total",
          [](const In& x) { return x.a.recomputed_tokens; }));
  // ---- the serving stack's software time by where it sits (docs/serving-stacks.md)
  add(fig("stack_scheduler_s", "s", A::PerGpu,
          "serving stack software (docs/serving-stacks.md) on the scheduler critical path: "
          "lookups, per-step metadata",
          [](const In& x) { return x.t.stack_scheduler_s; }));
  add(fig("stack_step_cpu_s", "s", A::PerGpu,
          "stack software in the step before the copies: retrieve fixed, re-hashing",
          [](const In& x) { return x.t.stack_step_cpu_s; }));
  add(fig("stack_gpu_gap_s", "s", A::PerGpu, "GPU idle gaps between chunks",
          [](const In& x) { return x.t.stack_gpu_gap_s; }));
  add(fig("stack_cpu_bound_s", "s", A::PerGpu,
          "time a load was held by CPU work that outlasted its copies (per-chunk Python, "
          "per-object issue and log lines, native copy issue)",
          [](const In& x) { return x.t.stack_cpu_bound_s; }));
  add(fig("stack_store_s", "s", A::PerGpu, "store software",
          [](const In& x) { return x.t.stack_store_s; }));
  // ---- the KV tier's honest accounting (serving/kv_tier)
  add(fig("tier_lookups", "lookups", A::Count, "tier lookups (one per arriving request)",
          [](const In& x) { return x.t.tier_lookups; }));
  add(fig("tier_stored_chunks", "chunks", A::Count, "chunks stored by the run (D2H)",
          [](const In& x) { return x.t.tier_stored_chunks; }));
  add(fig("tier_evicted_chunks", "chunks", A::Count, "chunks evicted (LRU)",
          [](const In& x) { return x.t.tier_evicted_chunks; }));
  add(fig("tier_restored_chunks", "chunks", A::Count,
          "stores of chunks the tier held before and evicted (thrashing)",
          [](const In& x) { return x.t.tier_restored_chunks; }));
  add(fig("tier_restore_fraction", "1", A::Ratio, "tier_restored_chunks / tier_stored_chunks",
          [](const In& x) { return ratio(x.t.tier_restored_chunks, x.t.tier_stored_chunks); }));
  add(fig("tier_dropped_chunks", "chunks", A::Count,
          "stores dropped: a chunk larger than the per-rank pool (LMCache drops it)",
          [](const In& x) { return x.t.tier_dropped_chunks; }));
  add(fig("tier_warm_chunks", "chunks", A::Count,
          "chunks placed before the run by `warm_tier` (not stores; docs/serving-stacks.md)",
          [](const In& x) { return x.t.tier_warm_chunks; }));
  add(fig("tier_capacity_bytes", "B", A::Setting,
          "the tier's capacity (whole TP group; a layout beyond TP: its ranks' tiers summed; a "
          "cluster: its nodes' summed, a P/D decode node's only with its tier, decode_tier)",
          [](const In& x) { return x.t.tier_capacity_bytes; }));
  add(fig("tier_working_set_bytes", "B", A::Total, "the distinct chunks ever placed × chunk bytes",
          [](const In& x) { return x.t.tier_working_set_bytes; }));
  add(fig("tier_working_set_fits", "1", A::Flag,
          "tier_working_set_bytes ≤ tier_capacity_bytes: the DRAM tier alone holds the working set "
          "(`kappasim run` warns when DRAM and the tiers below it together do not and an evicted "
          "chunk was stored again or one dropped: tier_restored_chunks, tier_dropped_chunks)",
          [](const In& x) {
            return x.t.tier_working_set_bytes <= x.t.tier_capacity_bytes ? 1.0 : 0.0;
          }));
  add(fig("kernel_events", "events", A::Count, "simulation events (cost of fidelity)",
          [](const In& x) { return static_cast<double>(x.t.kernel_events); }));
  add(fig("kernel_events_per_request", "events", A::Ratio, "kernel_events / requests_completed",
          [](const In& x) { return ratio(static_cast<double>(x.t.kernel_events), n_req(x)); }));
  add(fig("quantile_relative_accuracy", "1", A::Setting,
          "α of the percentile sketches (0.005)",
          [](const In& x) { return x.a.ttft.relative_accuracy(); }));
  // clang-format on

  // ---- where the time went (serving/time_breakdown.hpp; section "Time breakdown" below)
  {
    StatDecl d{"ttft_mean_<category>_s",
               "s",
               A::Mean,
               StatWhen::Always,
               "the mean request's TTFT by category (the requests.csv `t_*` columns averaged); "
               "they sum to ttft_mean_s. Categories: " +
                   category_list("idle"),
               {}};
    for (const auto& c : TimeBreakdown::categories())
      if (c.field != &TimeBreakdown::idle_s) {
        const auto field = c.field;
        d.keys.push_back({std::string("ttft_mean_") + c.name + "_s", kShowNone,
                          [field](const In& x) { return ratio(x.a.time_sum.*field, n_req(x)); },
                          nullptr});
      }
    add(std::move(d));
  }
  {
    StatDecl d{"time_fraction_<category>",
               "1",
               A::Ratio,
               StatWhen::Always,
               "the GPUs' time by category as fractions of simulated_time_s (no queue; idle "
               "added): they sum to 1 (with pipeline stages a step counts 1/pp, a stage's share: "
               "docs/parallelism.md). Categories: " +
                   category_list("queue"),
               {}};
    for (const auto& c : TimeBreakdown::categories())
      if (c.field != &TimeBreakdown::queue_s) {
        const auto field = c.field;
        d.keys.push_back(
            {std::string("time_fraction_") + c.name, kShowGpuTime,
             [field](const In& x) { return ratio(x.t.time.*field, x.t.simulated_time_s); },
             nullptr});
      }
    add(std::move(d));
  }
  {
    std::string bounds;
    for (int b = 0; b < kLoadBounds; ++b)
      bounds += std::string(b ? ", " : "") + load_bound_name(static_cast<LoadBound>(b));
    StatDecl d{"load_bound_share_<bound>",
               "1",
               A::Ratio,
               StatWhen::Always,
               "the loads' time (CPU-side software and copies, overlapped with compute or not) "
               "by the bound that ended each part of it (its critical path: copies running under "
               "a longer CPU issue, as on the layer-wise path, count as software), as shares: "
               "they sum to 1; null when nothing was loaded. Bounds: " +
                   bounds,
               {}};
    for (int b = 0; b < kLoadBounds; ++b) {
      const auto bound = static_cast<LoadBound>(b);
      d.keys.push_back(
          {std::string("load_bound_share_") + load_bound_name(bound), kShowNone,
           [bound](const In& x) { return ratio(x.t.load_bounds[bound], x.t.load_bounds.total()); },
           nullptr});
    }
    add(std::move(d));
  }

  // ---- decode (serving.decode, issue 23; docs/serving-engine.md "Decode"): present only when the
  // run generates output tokens.
  {
    auto dec = [&add](const char* name, const char* unit, StatAgg agg, std::string doc, Value value,
                      unsigned show = kShowNone) {
      StatDecl d = fig(name, unit, agg, std::move(doc), std::move(value), show);
      d.when = StatWhen::Decode;
      add(std::move(d));
    };
    const auto slo = [](const In& x, double n) { return x.t.slo_set ? n : kNaN; };
    dec("output_tokens_total", "tokens", A::Sum, "output_tokens",
        [](const In& x) { return x.a.output_tokens; });
    dec(
        "output_throughput_tps", "tokens/s", A::Ratio, "output_tokens_total / simulated_time_s",
        [](const In& x) { return ratio(x.a.output_tokens, x.t.simulated_time_s); }, kShowRun);
    dec("tpot_mean_s", "s", A::Mean,
        "TPOT (tpot_s) mean, over requests with two or more output tokens",
        [](const In& x) { return x.a.tpot.count() ? x.a.tpot.mean() : kNaN; });
    dec(
        "tpot_p50_s", "s", A::Quantile, "TPOT median",
        [](const In& x) { return x.a.tpot.count() ? x.a.tpot.quantile(0.50) : kNaN; }, kShowRun);
    dec(
        "tpot_p99_s", "s", A::Quantile, "TPOT 99th percentile",
        [](const In& x) { return x.a.tpot.count() ? x.a.tpot.quantile(0.99) : kNaN; }, kShowRun);
    dec("itl_p50_s", "s", A::Quantile,
        "inter-token latency median: over every output token after a request's first, the time "
        "since the one before it",
        [](const In& x) { return x.a.itl.count() ? x.a.itl.quantile(0.50) : kNaN; });
    dec("itl_p99_s", "s", A::Quantile, "inter-token latency 99th percentile",
        [](const In& x) { return x.a.itl.count() ? x.a.itl.quantile(0.99) : kNaN; });
    dec("e2e_mean_s", "s", A::Mean, "end-to-end latency (e2e_s) mean",
        [](const In& x) { return x.a.e2e.mean(); });
    dec("e2e_p50_s", "s", A::Quantile, "end-to-end latency median",
        [](const In& x) { return x.a.e2e.quantile(0.50); });
    dec("e2e_p99_s", "s", A::Quantile, "end-to-end latency 99th percentile",
        [](const In& x) { return x.a.e2e.quantile(0.99); });
    dec("preemptions", "preemptions", A::Sum, "preemptions (KV blocks ran out while decoding)",
        [](const In& x) { return x.a.preemptions; });
    dec("preempted_kv_tokens", "tokens", A::Sum,
        "tokens whose KV preemptions discarded (prefilled or loaded again)",
        [](const In& x) { return x.a.preempted_kv_tokens; });
    dec("slo_attainment", "1", A::Ratio,
        "share of the requests completed that met serving.slo (TTFT and TPOT); null without one",
        [slo](const In& x) { return slo(x, ratio(static_cast<double>(x.a.met_slo), n_req(x))); });
    dec(
        "goodput_rps", "req/s", A::Ratio,
        "requests that met serving.slo per simulated second; null without one",
        [slo](const In& x) {
          return slo(x, ratio(static_cast<double>(x.a.met_slo), x.t.simulated_time_s));
        },
        kShowRun);
    dec("first_token_rps", "req/s", A::Ratio,
        "requests_completed / the latest first token's time: the rate prefills were served at "
        "(throughput_rps also counts the last outputs' decode after the arrivals end)",
        [](const In& x) { return ratio(n_req(x), x.a.last_first_token_s); });
    dec("arrival_rps", "req/s", A::Ratio,
        "requests_completed / the latest arrival's time: the rate the completed requests arrived "
        "at (first_token_rps below 90% of it: the prefills fell behind)",
        [](const In& x) { return ratio(n_req(x), x.a.last_arrival_s); });
  }

  // ---- a layout beyond TP (serving.parallelism, issue 14; docs/parallelism.md "The replica
  // engine"): the engine's Totals::extra (serving/step_model.cpp layout_figures), in this order.
  // There `gpus` is the replica's GPUs, per-GPU figures average over them, and the tier figures sum
  // the ranks' tiers.
  // clang-format off
  add(replica("dp_ranks", "ranks", A::Setting, "DP ranks of the replica"));
  add(replica("replica_gpus", "GPUs", A::Setting, "the replica's GPUs"));
  add(replica("dp_mean_rank_tokens_per_step", "tokens", A::Mean,
              "tokens a rank computed per step it took part in (dummy batches count as steps)"));
  add(replica("dp_max_rank_tokens_per_step", "tokens", A::Mean,
              "the busiest rank's tokens per step of its step group, mean over group steps"));
  add(replica("dp_rank_imbalance", "1", A::Ratio,
              "lockstep waste: Σ over group steps of busiest rank's tokens x ranks in the group / Σ tokens (1 when ranks step alone: a dense model)"));
  add(replica("dp_routing_imbalance", "1", A::Ratio,
              "the busiest rank's tokens over the whole run / the mean rank's (the router's balance)"));
  add(replica("dp_rank_idle_s", "s", A::Total,
              "Σ over lockstep steps of the mean rank's wait for the slowest (non-expert part)"));
  add(replica("dp_dummy_rank_steps", "rank-steps", A::Count, "rank-steps run as a dummy batch (MoE lockstep only)"));
  add(replica("ep_a2a_s", "s", A::Total,
              "EP all-to-all time (dispatch and combine), simulated through the fabric"));
  add(replica("ep_a2a_time_share", "1", A::Ratio,
              "ep_a2a_s / the compute part of the steps (local, expert, all-to-all and PP time)"));
  add(replica("ep_a2a_port_bound_s", "s", A::Total,
              "the all-to-all's analytic per-port time (a lower bound on ep_a2a_s)"));
  add(replica("peer_gpu_transfers", "transfers", A::Count,
              "PeerGpu transfers issued into the fabric (all-to-all, PP)"));
  add(replica("ep_expert_s", "s", A::Total, "expert (MoE FFN) compute time"));
  add(replica("pp_activation_s", "s", A::Total, "PP activation transfer time"));
  add(replica("pp_stage_wait_s", "s", A::Total,
              "Σ over micro-batches of the time waiting for a pipeline stage busy with another "
              "(the requests' queue, not compute)"));
  add(replica("ep_nvlink_bytes", "B", A::Total, "EP all-to-all bytes over NVLink (all GPUs, both phases)"));
  add(replica("ep_nic_bytes", "B", A::Total, "EP all-to-all bytes over the NIC (all GPUs, both phases)"));
  add(replica("pp_bytes", "B", A::Total, "PP activation bytes"));
  add(replica("dp_rank_hit_rate_min", "1", A::Ratio,
              "the lowest of the DP ranks' KV-store hit rates (each rank's DRAM tier: hit chunks "
              "/ looked-up chunks; null for a rank that looked nothing up): where requests land "
              "decides which store they hit (serving.dp_router)"));
  add(replica("dp_rank_hit_rate_max", "1", A::Ratio, "the highest of the DP ranks' hit rates"));

  // ---- per level of the tier hierarchy (serving.tiers; docs/serving-engine.md "Tier
  // hierarchy"): the engine's Totals::tier_levels, per level (dram, cxl, nvme, remote) in
  // hierarchy order, these fields in this order. Bytes are the whole replica's.
  add(tier("capacity_bytes", "B", A::Setting, "the level's capacity"));
  add(tier("hit_chunks", "chunks", A::Count, "prefix chunks it served"));
  add(tier("loaded_bytes", "B", A::Total, "bytes loaded from it"));
  add(tier("load_busy_s", "s", A::Total, "Σ over load groups of the span of its copies"));
  add(tier("load_bandwidth_per_gpu_Bps", "B/s", A::Ratio,
           "per-GPU bytes loaded / load_busy_s (achieved); 0 when it loaded nothing"));
  add(tier("load_time_share", "1", A::Ratio,
           "load_busy_s / Σ of the load groups' spans (levels overlap, so shares may sum above "
           "1); 0 when nothing was loaded"));
  add(tier("stored_chunks", "chunks", A::Count, "chunks written to it by stores"));
  add(tier("stored_bytes", "B", A::Total,
           "bytes written by stores: DRAM's D2H copies, write-through's lower writes"));
  add(tier("evicted_chunks", "chunks", A::Count, "chunks evicted (LRU)"));
  add(tier("demoted_in_chunks", "chunks", A::Count,
           "chunks placed here by a demotion from the level above (write-back)"));
  add(tier("demoted_out_chunks", "chunks", A::Count,
           "evictions from here demoted into the next level (write-back)"));
  add(tier("demoted_bytes", "B", A::Total, "bytes of those demotions"));
  add(tier("promoted_out_chunks", "chunks", A::Count, "hits from here copied up into DRAM"));
  add(tier("promoted_bytes", "B", A::Total, "bytes of those promotions"));
  add(tier("prefetched_bytes", "B", A::Total, "bytes prefetched from it"));

  // ---- a cluster run (serving/cluster, docs/routing.md): per node group, after the pool's
  // figures (whose per-GPU figures average over all nodes' GPUs, weighted by their GPUs, and
  // whose per-step figures weight the groups by their steps).
  add(group("nodes", "nodes", A::Setting, "the group's nodes"));
  add(group("gpus", "GPUs", A::Setting, "the group's GPUs (its summary's `gpus`)"));
  add(group("requests_routed", "requests", A::Count, "arrivals the router sent to the group",
            kShowCluster));
  add(group("requests_completed", "requests", A::Count, "the group's requests_completed"));
  add(group("routed_fraction", "1", A::Ratio, "requests_routed / arrivals"));
  add(group("offered_kappa_mean", "1", A::Mean,
            "mean κ_ratio of the requests routed to the group (null when none)", kShowCluster));
  // clang-format on
  // The group's own summary figures of these names (same unit, aggregation and definition).
  for (const char* k :
       {"kappa_ratio_mean", "ttft_p50_s", "ttft_p99_s", "load_mean_s", "compute_mean_s",
        "gpu_utilization", "budget_utilization", "link_busy_fraction", "tier_hit_rate"}) {
    const StatDecl* src = nullptr;
    for (const StatDecl& d : v)
      if (d.name == k && d.when == StatWhen::Always) src = &d;
    if (!src) throw std::logic_error(std::string("stat_catalog: no figure ") + k);
    const bool shown = std::string(k) == "gpu_utilization";
    add(group(k, src->unit.c_str(), src->agg, std::string("the group's ") + k,
              shown ? kShowCluster : kShowNone));
  }
  // ---- P/D disaggregation (serving/cluster, docs/disaggregation.md): the KV hand-offs from
  // prefill to decode nodes, over the requests that decoded.
  // clang-format off
  add(disagg("handoffs", "requests", A::Count, "requests whose KV a decode node pulled from their prefill node"));
  add(disagg("handoffs_nvlink", "requests", A::Count, "of the hand-offs, those over NVLink (decode node on the prefill node's host, cluster.nodes[].host); the rest crossed the NIC. Present only where a prefill and a decode group share a host"));
  add(disagg("handoff_bytes_mean", "B", A::Mean, "KV bytes pulled per hand-off (all GPUs of the decode rank)"));
  add(disagg("handoff_wait_mean_s", "s", A::Mean,
             "from the prefill's end to the pull's start: the decode node's queue, free blocks and step boundary"));
  add(disagg("handoff_transfer_mean_s", "s", A::Mean,
             "the pull: its fixed cost, then the RDMA reads (NIC port, posting rate)"));
  add(disagg("handoff_p50_s", "s", A::Quantile, "from the prefill's end to the pull's end, median"));
  add(disagg("handoff_p99_s", "s", A::Quantile, "the same, 99th percentile"));
  add(disagg("decode_tier_stored_chunks", "chunks", A::Count,
             "chunks the decode nodes stored into their own DRAM tier (D2H): the pulled prompts' and those decode filled, by their stacks' rules (docs/disaggregation.md, \"A decode node's KV tier\"). Present only where a decode group has its tier (cluster.nodes[].decode_tier)"));
  add(disagg("decode_tier_relookups", "lookups", A::Count,
             "lookups of preempted requests in their decode node's tier at their readmission. Present only with a decode tier"));
  add(disagg("decode_tier_reloaded_tokens", "tokens", A::Count,
             "tokens those lookups found, loaded instead of recomputed (the last token is always computed). Present only with a decode tier"));
  // clang-format on
  return v;
}

const std::map<std::string, const StatKey*>& summary_index() {
  static const std::map<std::string, const StatKey*> idx = [] {
    std::map<std::string, const StatKey*> m;
    for (const StatDecl& d : summary_stats())
      if (d.when != StatWhen::Cluster)
        for (const StatKey& k : d.keys) m.emplace(k.name, &k);
    return m;
  }();
  return idx;
}
const std::map<std::string, const StatKey*>& cluster_index() {
  static const std::map<std::string, const StatKey*> idx = [] {
    std::map<std::string, const StatKey*> m;
    for (const StatDecl& d : summary_stats())
      if (d.when == StatWhen::Cluster)
        for (const StatKey& k : d.keys) m.emplace(k.name, &k);
    return m;
  }();
  return idx;
}

const StatKey* find_summary_key(const std::string& key) {
  const auto dot = key.rfind('.');  // "<group>.<field>": a group's name may hold dots
  const auto& idx = dot == std::string::npos ? summary_index() : cluster_index();
  const auto it = idx.find(dot == std::string::npos ? key : key.substr(dot + 1));
  return it == idx.end() ? nullptr : it->second;
}

}  // namespace

const std::vector<StatDecl>& requests_csv_stats() {
  static const std::vector<StatDecl> v = make_requests_csv();
  return v;
}

const std::vector<StatDecl>& summary_stats() {
  static const std::vector<StatDecl> v = make_summary();
  return v;
}

std::vector<std::string> tier_level_stat_fields() {
  std::vector<std::string> f;
  const std::string p = "tiers_<level>_";
  for (const StatDecl& d : summary_stats())
    if (d.when == StatWhen::Tiers) f.push_back(d.name.substr(p.size()));
  return f;
}

std::vector<std::string> cluster_group_stat_fields() {
  std::vector<std::string> f;
  for (const StatDecl& d : summary_stats())
    if (d.when == StatWhen::Cluster) f.push_back(d.keys.front().name);
  return f;
}

std::vector<std::string> disagg_stat_names() {
  std::vector<std::string> f;
  for (const StatDecl& d : summary_stats())
    if (d.when == StatWhen::Disagg) f.push_back(d.name);
  return f;
}

std::vector<std::string> replica_stat_names() {
  std::vector<std::string> f;
  for (const StatDecl& d : summary_stats())
    if (d.when == StatWhen::Replica) f.push_back(d.name);
  return f;
}

bool summary_stat_declared(const std::string& key) { return find_summary_key(key) != nullptr; }

unsigned stat_show(const std::string& key) {
  const StatKey* k = find_summary_key(key);
  return k ? k->show : kShowNone;
}

void check_summary_declared(const std::vector<std::pair<std::string, double>>& figures) {
  for (const auto& f : figures)
    if (!summary_stat_declared(f.first))
      throw std::logic_error("summary figure '" + f.first +
                             "' is not declared (serving/stat_catalog.cpp)");
}

// ---- docs/metrics.md ------------------------------------------------------------------------

StatTable parse_stat_table(const std::string& s) {
  if (s == "requests") return StatTable::RequestsCsv;
  if (s == "summary") return StatTable::Summary;
  if (s == "aggregations") return StatTable::Aggregations;
  throw InputError("unknown statistics table '" + s +
                   "' (expected requests, summary, aggregations or kinds)");
}

const char* stat_table_name(StatTable t) {
  switch (t) {
    case StatTable::RequestsCsv:
      return "requests";
    case StatTable::Summary:
      return "summary";
    case StatTable::Aggregations:
      return "aggregations";
  }
  return "?";
}

namespace {
// A key as Markdown code: `<category>` would otherwise be read as an HTML tag.
std::string code(const std::string& s) { return "`" + s + "`"; }
}  // namespace

std::string stat_markdown(StatTable t) {
  std::vector<std::vector<std::string>> rows;
  switch (t) {
    case StatTable::RequestsCsv:
      for (const StatDecl& d : requests_csv_stats()) rows.push_back({code(d.name), d.unit, d.doc});
      return markdown_table({"column", "unit", "definition"}, rows);
    case StatTable::Summary:
      for (const StatDecl& d : summary_stats())
        rows.push_back({code(d.name), d.unit, stat_agg_name(d.agg), stat_when_doc(d.when), d.doc});
      return markdown_table({"key", "unit", "aggregation", "present", "definition"}, rows);
    case StatTable::Aggregations:
      for (StatAgg a : {StatAgg::Value, StatAgg::Count, StatAgg::Sum, StatAgg::Mean,
                        StatAgg::Quantile, StatAgg::Max, StatAgg::Ratio, StatAgg::PerGpu,
                        StatAgg::Total, StatAgg::Setting, StatAgg::Flag})
        rows.push_back({stat_agg_name(a), stat_agg_doc(a)});
      return markdown_table({"aggregation", "meaning"}, rows);
  }
  return "";
}

std::string splice_generated_tables(const std::string& text, const std::string& file,
                                    const std::map<std::string, std::string>& more) {
  static const std::string kBegin = "<!-- generated by `kappasim metrics ";
  static const std::string kEnd = "<!-- end generated -->";
  std::string out;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t b = text.find(kBegin, pos);
    if (b == std::string::npos) break;
    const std::size_t name_end = text.find(' ', b + kBegin.size());
    const std::size_t line_end = text.find('\n', b);
    if (name_end == std::string::npos || line_end == std::string::npos || name_end > line_end)
      throw InputError(file + ": a generated-table marker without a table name");
    const std::string name = text.substr(b + kBegin.size(), name_end - b - kBegin.size());
    const auto other = more.find(name);
    const std::string table =
        other != more.end() ? other->second : stat_markdown(parse_stat_table(name));
    const std::size_t e = text.find(kEnd, line_end);
    if (e == std::string::npos)
      throw InputError(file + ": generated table '" + name + "' has no '" + kEnd + "'");
    out += text.substr(pos, line_end + 1 - pos);
    out += table;
    pos = e;
  }
  return out + text.substr(pos);
}

}  // namespace kappasim
