// One request's prefill cost, the one model the engine's recompute choice, the router and the
// design study share (issue 13 item 3). Pure C++, no SystemC.
//
// A request of K cached + T new tokens, with its leading R cached tokens recomputed, on one TP
// group that is otherwise idle:
//   cpu      the tier's CPU-side retrieve before the first copy (per request + per chunk);
//   x        the load: GPU gaps between chunks + max(copies, the CPU work that issues them):
//            copies = per-copy fixed costs + (K − R)·B_kv_gpu / load rate (hybrid KV: the
//            tail's bytes, HybridKv::bytes(R, K, K), RequestCostModel::hybrid); the issuing CPU is
//            the stack's overlapped Python (kernel), one cudaMemcpyAsync per copy (block_dma) or
//            the per-(layer, chunk) objects of every layer (layerwise): a load lasts at least that;
//   compute  batch_step_time of {R over no context (causal), T over K} + one step overhead per
//            max_num_batched_tokens tokens;
// and ONE way to combine them (combine_request_cost):
//   serial (kernel, block_dma):  total = cpu + x + compute
//   layer-wise:                  total = cpu + max(x + last layer, x / L + compute)
// i.e. a pipeline of L layers: the first layer's load (x / L) before compute starts, the last
// layer's compute after the last load (the engine's step-granularity pipeline, serving/engine).
//
// Where its parameters come from: the model, GPU and serving stack of the run (the same
// descriptions the engine simulates) and a per-GPU load rate the caller gives. Every caller gives
// the TP group's max-min fair share on the idle topology (group_load_rate): all ranks load at
// once over shared host DRAM and socket links. Ignores: queueing and other requests (request
// level), the copy latency (~µs), the prefix chunks not yet in the tier.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "models/gpu/gpu_spec.hpp"
#include "models/llm/architecture.hpp"
#include "serving/run_spec.hpp"
#include "serving/serving_spec.hpp"
#include "serving/stack_profile.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {

enum class LoadOverlap { Serial, Layerwise };

// The parts of one request's prefill, however they were derived.
struct RequestCostParts {
  double cpu_s = 0;         // CPU before the copies (serial with everything)
  double load_s = 0;        // x: the load (gaps, copies, the CPU that issues them)
  double compute_s = 0;     // the forward pass with its step overheads
  double last_layer_s = 0;  // the last layer's compute (the layer-wise pipeline's drain)
  int layers = 1;
};
struct RequestCost {
  double load_s = 0;  // cpu + x
  double compute_s = 0;
  double total_s = 0;  // its prefill time alone on the group
};
// The one overlap formula (above). With nothing to load (cpu = x = 0) total = compute.
RequestCost combine_request_cost(LoadOverlap overlap, const RequestCostParts& p);

// What is fixed per node: the model and GPU, the stack's costs, the load rate.
struct RequestCostModel {
  ModelSpec model;
  GpuSpec gpu;
  int tp = 1;
  std::string compute_dtype = "bf16";
  DType kv_dtype = DType::Bf16;
  LoadPath path = LoadPath::Kernel;
  StackProfile stack;
  double kv_bytes_per_token_gpu = 0;  // B_kv per GPU at this TP
  // serving.kv_cache: hybrid (issue 25): the loaded tail [R, K) moves HybridKv::bytes(R, K, K)
  // (its full layers' tokens, the sliding layers' tokens of it in the last W, the state at K),
  // not (K − R)·B_kv: recomputing the head saves full-layer bytes (and window bytes only inside
  // the last W). Unset: unified, uniform bytes per token.
  std::optional<HybridKv> hybrid;
  double load_rate_Bps = 0;  // per GPU, all ranks loading (group_load_rate)
  int chunk_tokens = 256;    // tier entry (LMCache chunk; block for block_dma)
  int block_tokens = 16;     // vLLM block (block_dma's copies)
  double step_overhead_s = 0;
  std::int64_t budget_tokens = 4096;  // max_num_batched_tokens
};
// From a run's descriptions; the load rate is group_load_rate(system, tp, load_path).
RequestCostModel request_cost_model(const RunSpec& spec);

// Needs 0 <= R <= K and T >= 1 (std::logic_error otherwise).
RequestCostParts request_cost_parts(const RequestCostModel& m, std::int64_t K, std::int64_t T,
                                    std::int64_t R);
RequestCost request_cost(const RequestCostModel& m, std::int64_t K, std::int64_t T, std::int64_t R);

// The per-GPU load rate of a TP group: every GPU 0..tp-1 starts one H2D copy on the idle
// topology (kernel path: copy kernel of launch shape `kernel` on all SMs; else DMA) and the
// slowest GPU's max-min fair rate is taken.
double group_load_rate(const SystemSpec& system, int tp, LoadPath path,
                       const CopyKernelShape& kernel = {});

// recompute.mode auto: the R in [0, K] minimising request_cost's total (33-point grid over
// [0, K], then 33 points between the best one's neighbours; ties go to the smaller R).
std::int64_t choose_recompute_tokens(const RequestCostModel& m, std::int64_t K, std::int64_t T);

// The same from a run's descriptions (request_cost_model(spec) each call).
using RecomputeEstimate = RequestCost;
RecomputeEstimate estimate_recompute(const RunSpec& spec, std::int64_t K, std::int64_t T,
                                     std::int64_t R);
std::int64_t choose_recompute_tokens(const RunSpec& spec, std::int64_t K, std::int64_t T);

// serving.recompute as the engine applies it at an arrival: R leading cached tokens of K
// prefilled again (none: 0; fixed: floor(fraction x K); auto: choose_recompute_tokens, memoised
// per (K, T)), clamped to [0, K].
class RecomputeChooser {
 public:
  explicit RecomputeChooser(const RunSpec& spec);
  std::int64_t operator()(std::int64_t K, std::int64_t T);

 private:
  RecomputeSpec m_spec;
  std::optional<RequestCostModel> m_cost;  // auto only
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> m_auto;
};

}  // namespace kappasim
