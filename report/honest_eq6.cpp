// Probes for the honest test of Eq. 6 (see honest_eq6.hpp).
#include "report/honest_eq6.hpp"

#include "core/units.hpp"
#include "models/llm/architecture.hpp"
#include "serving/measure.hpp"
#include "serving/stack_profile.hpp"

namespace kappasim::report {

namespace {
// The large T at which `probe prefill` gives the effective compute rate Eq. 6 takes as C: large
// enough to be compute-bound, small enough that attention over the T new tokens themselves
// (quadratic) stays a few per cent of the FLOPs.
constexpr double kLargeT = 4096;
}  // namespace

HonestKappa honest_kappa_crit(const std::string& model, const std::string& system,
                              const std::string& load_path, int tp, double T,
                              const ProbeRunner& probe, const std::string& work_file) {
  ConfigNode root = ConfigNode::make_map();
  root.set("model", ConfigNode::make_scalar(model));
  root.set("system", ConfigNode::make_scalar(system));
  ConfigNode sv = ConfigNode::make_map();
  sv.set("tp", ConfigNode::make_scalar(std::to_string(tp)));
  sv.set("load_path", ConfigNode::make_scalar(load_path));
  // block_dma is vLLM's native connector: run it with the stack the kappa-crit-testbed sweep
  // pairs with it (experiments/reproduce/kappa-crit-testbed.yaml); the LMCache paths keep the
  // default stack (lmcache-0.3.5, the paper's).
  if (load_path == "block_dma") sv.set("stack", ConfigNode::make_scalar("vllm-native-0.12"));
  root.set("serving", sv);
  const RunSpec spec = isolated_run_spec(root, tp, nullptr);
  const ModelSpec& m = spec.model;
  const ServingSpec& s = spec.serving;
  HonestKappa h;
  analysis::HonestInputs& in = h.in;
  in.T = T;
  in.f_gpu = count_params(m).active() * 2 / tp;
  in.b_kv_eq6 = kv_bytes_per_token(m, s.kv_dtype) / tp;
  in.b_kv_gpu = kv_bytes_per_token_per_gpu(m, s.kv_dtype, tp);
  in.chunk_tokens = s.tier_chunk_tokens();
  // The stack's serial retrieve software (serving/stack_profile), as the engine charges it: per
  // request, and per chunk the up-front re-hash, the GPU gap (kernel path) and, layer-wise, the
  // CPU that issues the chunk's (layer, chunk) objects (a layer's load ends no earlier); the CPU
  // work overlapped with copies is left out.
  {
    const int L = m.num_layers;
    const RetrieveCost c0 = stack_retrieve(s.stack, s.load_path, 1, 0, 0, L);
    const RetrieveCost c1 = stack_retrieve(s.stack, s.load_path, 1, 1, 0, L);
    in.t_request_s = c0.cpu_before_s;
    in.t_chunk_s = c1.cpu_before_s + c1.gpu_gap_s - c0.cpu_before_s + L * c1.per_layer_cpu_s;
  }
  // The copy the load path issues (serving/engine): one copy-kernel block per tier chunk, one DMA
  // per layer per chunk, or one DMA per vLLM block.
  const LoadPathCosts& lp = load_path_costs(s.load_path);
  h.copy_path = lp.copy == CopyPath::Kernel ? "kernel" : "dma";
  h.copy_bytes =
      lp.per_layer ? in.chunk_tokens * in.b_kv_gpu / m.num_layers : in.chunk_tokens * in.b_kv_gpu;
  const std::string what = "honest Eq. 6 (" + model + ", " + system + ", " + load_path + ")";
  in.link_Bps = probe(
      {"probe", "h2d", "--system", system, "--path", h.copy_path, "--sizes",
       format_quantity(h.copy_bytes, dim::bytes), "--gpus", std::to_string(tp), "--format", "json"},
      "/0/bandwidth_bytes_per_s", work_file, what);
  auto prefill = [&](double t) {
    return probe(
        {"probe", "prefill", "--model", model, "--system", system, "--tp", std::to_string(tp),
         "--t", format_number(t), "--precision", s.compute_dtype, "--format", "json"},
        "/0/compute_time_s", work_file, what);
  };
  in.compute = in.f_gpu * kLargeT / prefill(kLargeT);
  // The compute of T new tokens at K = 0, probed at the row's own T: it carries what an effective
  // rate at large T hides (weight reads: for MoE every expert the T tokens touch; TP all-reduce
  // latency; launches).
  in.floor_s = prefill(T);
  const GpuSpec& g = spec.system.gpu;
  in.attn_s_per_kt = attention_flops_per_token_per_cached(m) / tp /
                     (g.peak(s.compute_dtype) * g.attention_efficiency.value_or(1.0));
  h.eq6 = analysis::kappa_crit_eq6_probed(in);
  h.extended = analysis::kappa_crit_extended(in);
  return h;
}

}  // namespace kappasim::report
