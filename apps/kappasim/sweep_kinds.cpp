// The built-in sweep point kinds (docs/sweeps.md "Point kinds"):
//   run       a serving simulation, as `kappasim run` does it; metrics = the summary's figures
//             minus wall_time_s; writes summary.json (and requests.csv with keep_requests: true)
//   kappa     the analytic κ model (evaluate_kappa) for {model, system, serving?, K?, T?}
//   selftest  tests the sweep machinery: {x, sleep?, fail?} -> {x, x2}
// Each kind reads its config with read_config, so unknown keys and bad values are InputErrors
// (the point is recorded as invalid with the message).
#include <time.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <optional>

#include "apps/kappasim/kinds.hpp"
#include "apps/kappasim/sweep_run.hpp"
#include "core/output.hpp"
#include "core/trace_writer.hpp"
#include "models/analytic/kappa.hpp"
#include "serving/engine.hpp"
#include "sweeps/point_kind.hpp"
#include "workloads/trace_reader.hpp"

namespace kappasim::sweep {

namespace {

// ---- run ------------------------------------------------------------------------------------

PointResult run_point(const ConfigNode& config, const PointContext& ctx) {
  ConfigNode node = config;
  bool keep_requests = false;
  if (const ConfigNode* k = node.find("keep_requests")) {
    if (!k->is_scalar() || (k->scalar != "true" && k->scalar != "false"))
      throw InputError(k->loc, "keep_requests: expected true or false");
    keep_requests = k->scalar == "true";
    node.erase("keep_requests");
  }
  const bool trace_given = node.is_map() && node.find("trace") != nullptr;
  RunSpec spec = read_config<RunSpec>(node, "");
  if (!trace_given) spec.trace = false;
  spec.workload.seed = ctx.seed;
  if (spec.workload.type == WorkloadType::Trace) validate_trace(spec.workload.trace, ctx.base_dir);
  auto source = make_source(spec.workload, static_cast<std::uint64_t>(spec.workload.seed), ctx.base_dir);

  std::optional<RequestsCsvWriter> csv;
  if (keep_requests) csv.emplace(ctx.out_dir + "/requests.csv");
  TraceWriter trace = spec.trace ? TraceWriter(ctx.out_dir + "/trace.json") : TraceWriter();
  SummaryBuilder summary;
  EngineSinks sinks;
  // warm_tier: the tier starts as the same request stream would leave it (a second copy).
  sinks.warm_source = [&spec, &ctx] {
    return make_source(spec.workload, static_cast<std::uint64_t>(spec.workload.seed), ctx.base_dir);
  };
  sinks.requests = csv ? &*csv : nullptr;
  sinks.trace = spec.trace ? &trace : nullptr;
  sinks.summary = &summary;
  const SummaryBuilder::Totals totals = run_serving(spec, *source, sinks);
  if (csv) csv->close();
  trace.close();
  write_file_atomic(ctx.out_dir + "/summary.json", summary.to_json(totals));
  PointResult r;
  for (const auto& [k, v] : summary.figures(totals))
    if (k != "wall_time_s") r.metrics.emplace_back(k, v);
  return r;
}

// ---- kappa ----------------------------------------------------------------------------------

struct KappaServing {
  int tp = 1;
  DType kv_dtype = DType::Bf16;
  template <class V>
  void visit(V& v) {
    v.integer("tp", tp, opt("tensor parallelism", Range::AtLeastOne));
    v.choice("kv_dtype", kv_dtype, dtype_names(), opt("KV cache dtype"));
  }
  void validate(const std::string&) const {}
};

struct KappaPointSpec {
  ModelSpec model;
  SystemSpec system;
  KappaServing serving;
  std::string precision = "bf16";
  std::optional<double> K, T;
  template <class V>
  void visit(V& v) {
    v.object("model", model, req("the LLM"), "model");
    v.object("system", system, req("the hardware system"), "system");
    v.object("serving", serving, opt("tp and kv_dtype"));
    v.text("precision", precision, opt("compute dtype whose peak is C_eff (bf16, fp8, ...)"));
    v.quantity("K", K, dim::none, opt("cached tokens K", Range::NonNegative));
    v.quantity("T", T, dim::none, opt("new tokens T", Range::AtLeastOne));
  }
  void validate(const std::string&) const {}
};

PointResult kappa_point(const ConfigNode& config, const PointContext&) {
  ProvenanceTable prov;
  const KappaPointSpec spec = read_config<KappaPointSpec>(config, "", &prov);
  KappaQuery q;
  q.compute_dtype = spec.precision;
  q.kv_dtype = spec.serving.kv_dtype;
  q.tp = spec.serving.tp;
  q.context_k = spec.K;
  q.new_tokens_t = spec.T;
  const KappaPoint p = evaluate_kappa(spec.model, spec.system, q, &prov);
  PointResult r;
  r.metrics = {{"n_active_params", p.n_active_params}, {"b_kv_bytes", p.b_kv},
               {"b_kv_gpu_bytes", p.b_kv_gpu},         {"f_pf_flops", p.f_pf},
               {"compute_flops", p.compute},           {"bandwidth_bytes_per_s", p.bandwidth},
               {"kappa_m", p.kappa_m},                 {"kappa_hw", p.kappa_hw},
               {"kappa_crit", p.kappa_crit}};
  if (p.f_attention) {
    r.metrics.emplace_back("f_attention_flops", *p.f_attention);
    r.metrics.emplace_back("kappa_crit_attention", *p.kappa_crit_attention);
  }
  if (p.ttft && p.ttft_attention) {
    const TtftParts& a = *p.ttft;
    const TtftParts& b = *p.ttft_attention;
    r.metrics.emplace_back("kappa_ratio", *p.context_k / *p.new_tokens_t);
    r.metrics.emplace_back("t_transfer_s", a.t_transfer);
    r.metrics.emplace_back("t_compute_s", a.t_compute);
    r.metrics.emplace_back("ttft_s", a.ttft_serial());
    r.metrics.emplace_back("p_oh", a.p_oh());
    r.metrics.emplace_back("utilization", a.utilization());
    r.metrics.emplace_back("t_compute_attention_s", b.t_compute);
    r.metrics.emplace_back("ttft_attention_s", b.ttft_serial());
    r.metrics.emplace_back("p_oh_attention", b.p_oh());
    r.metrics.emplace_back("utilization_attention", b.utilization());
  }
  return r;
}

// ---- selftest -------------------------------------------------------------------------------

enum class Fail { None, Exit, Abort, Segv, Invalid };

struct SelftestSpec {
  double x = 0;
  double sleep_s = 0;
  Fail fail = Fail::None;
  template <class V>
  void visit(V& v) {
    v.number("x", x, req("the value echoed back (x, x2 = x·x)", Range::Any));
    v.quantity("sleep", sleep_s, dim::time, opt("time to sleep before answering", Range::NonNegative));
    v.choice("fail", fail,
             {{"none", Fail::None}, {"exit", Fail::Exit}, {"abort", Fail::Abort},
              {"segv", Fail::Segv}, {"invalid", Fail::Invalid}},
             opt("how to fail on purpose"));
  }
  void validate(const std::string&) const {}
};

PointResult selftest_point(const ConfigNode& config, const PointContext&) {
  const SelftestSpec s = read_config<SelftestSpec>(config, "");
  if (s.sleep_s > 0) {
    timespec ts;
    ts.tv_sec = static_cast<time_t>(s.sleep_s);
    ts.tv_nsec = static_cast<long>((s.sleep_s - static_cast<double>(ts.tv_sec)) * 1e9);
    while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
  switch (s.fail) {
    case Fail::None:
      break;
    case Fail::Exit:
      std::_Exit(1);
    case Fail::Abort:
      std::abort();
    case Fail::Segv:
      std::raise(SIGSEGV);
      std::_Exit(1);  // a SIGSEGV handler (a sanitizer) returned
    case Fail::Invalid:
      throw InputError(config.find("fail") ? config.find("fail")->loc : config.loc,
                       "selftest: invalid input on request (fail: invalid)");
  }
  return PointResult{{{"x", s.x}, {"x2", s.x * s.x}}};
}

}  // namespace

void register_builtin_kinds() {
  KindRegistry& r = kinds();
  if (r.find("selftest")) return;
  r.add({"run", "a serving simulation (kappasim run): the summary's figures minus wall_time_s",
         run_point});
  r.add({"kappa", "the analytic κ model (kappasim kappa) for {model, system, serving: {tp, kv_dtype}, K, T}",
         kappa_point});
  r.add({"selftest", "tests the sweep machinery: {x, sleep, fail: none|exit|abort|segv|invalid} -> {x, x2}",
         selftest_point});
  // ---- kinds of other areas (wired by the lead once their files exist) ----
  cli::register_cluster_kind(r);  // serving/cluster (apps/kappasim/kind_cluster.cpp)
  cli::register_design_kind(r);   // models/design (apps/kappasim/kind_design.cpp)
  cli::register_measure_kinds(r);  // isolated, kappa-crit (apps/kappasim/kind_measure.cpp)
}

}  // namespace kappasim::sweep
