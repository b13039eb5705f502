// How a serving stack launches a forward pass's kernels, and what that costs on the host
// (docs/compute-model.md, "Launch and CUDA graphs"). Pure C++, no SystemC.
//
// Every kernel costs the GPU its device-side launch (GpuSpec::kernel_launch_overhead, in
// kernel_timing). Besides, the host must enqueue the work: one API call per kernel launched
// eagerly (cudaLaunchKernel through the stack's framework), one per CUDA-graph replay. The host
// runs ahead of the GPU on one stream, so a forward takes
//     max(GPU busy time, host issue time)
// and the GPU stalls for the difference when the host is slower (many small kernels, no graphs).
// The stack decides what is captured:
//   none       every kernel is launched eagerly (TensorRT-LLM v0.5; vLLM --enforce-eager);
//   piecewise  steps of at most max_capture_tokens tokens replay one captured graph per piece of
//              the model between attention calls (layers + 1 pieces); attention (and a KV
//              dequantisation pass) and the LM head run eagerly (vLLM v1's default: torch.compile
//              splits the graph at the attention op); larger steps run eagerly;
//   full       steps of at most max_capture_tokens tokens replay one graph for the model;
//              the LM head runs eagerly.
// A model run in eager PyTorch (vLLM --enforce-eager) also pays, per transformer layer, the Python
// between its kernels: nn.Module calls, custom-op wrappers, tensor allocations, the MoE block's
// routing set-up (host_per_layer). A captured graph has none of it, nor has a compiled model
// (torch.compile's Inductor wrapper calls its kernels without the modules' Python), so a stack
// whose uncaptured steps run a compiled model keeps it 0.
// Ignored: host work that is not a launch (input preparation, sampling: serving.step_overhead,
// GpuSpec::forward_overhead), a launch queue filling up (CUDA queues ~1000 launches, more than a
// forward's host lead needs), CPU contention between TP ranks (ranks launch in parallel).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "models/gpu/all_reduce.hpp"

namespace kappasim {

enum class GraphMode { None, Piecewise, Full };
const std::vector<std::pair<const char*, GraphMode>>& graph_mode_names();
// The kernel a stack runs a decode token's attention with (issue 20):
//   flash       FlashAttention's varlen forward, the token's query row in a 128-row tile (GQA
//               heads packed into its rows): vLLM, the default;
//   masked_mha  one query row per head streamed over its KV by CUDA-core warps, no row tile
//               (TensorRT-LLM's generation phase: release/0.5.0 docs/source/gpt_attention.md,
//               "masked multi-head attention"). Its ≈ 2 FLOP per KV element are far below any
//               GPU's CUDA-core ridge point, so it runs at the memory roof: its bytes are
//               charged, its FLOPs recorded.
enum class DecodeAttention { Flash, MaskedMha };
const std::vector<std::pair<const char*, DecodeAttention>>& decode_attention_names();

struct LaunchSpec {
  GraphMode graph_mode = GraphMode::None;
  double max_capture_tokens = 0;  // largest step (tokens) that replays a captured graph
  double host_launch_s = 0;       // host time to enqueue one kernel eagerly
  double graph_launch_s = 0;      // host time to replay one captured graph
  double host_per_layer_s = 0;    // eager PyTorch: the Python per layer besides its launches
  DecodeAttention decode_attention = DecodeAttention::Flash;
  // The library the stack runs TP all-reduces with (models/gpu/all_reduce; default NCCL).
  AllReduceImpl all_reduce;
  template <class V>
  void visit(V& v) {
    v.choice("graph_mode", graph_mode, graph_mode_names(),
             opt("none (every kernel eager), piecewise (graphs between attention calls) or full"));
    v.quantity("max_capture_tokens", max_capture_tokens, dim::none,
               opt("largest step, in tokens, that replays a captured graph", Range::NonNegative));
    v.quantity("host_launch", host_launch_s, dim::time,
               opt("host time to enqueue one kernel eagerly", Range::NonNegative));
    v.quantity("graph_launch", graph_launch_s, dim::time,
               opt("host time to replay one captured graph", Range::NonNegative));
    // Written only when set, so that the effective config of every stack without it is unchanged.
    if (!V::kWriting || host_per_layer_s > 0)
      v.quantity("host_per_layer", host_per_layer_s, dim::time,
                 opt("eager PyTorch: host Python per transformer layer of an uncaptured forward, "
                     "besides its kernel launches (0: the uncaptured model is compiled)",
                     Range::NonNegative));
    if (!V::kWriting || decode_attention != DecodeAttention::Flash)
      v.choice("decode_attention", decode_attention, decode_attention_names(),
               opt("the kernel of a decode token's attention: flash (FlashAttention, query rows "
                   "in tiles) or masked_mha (TensorRT-LLM's generation kernel, no row tile)"));
    if (!V::kWriting || all_reduce.library != AllReduceLibrary::Nccl)
      v.object("all_reduce", all_reduce,
               opt("the TP all-reduce implementation: {library: nccl | vllm_custom, "
                   "custom_max}"));
  }
  void validate(const std::string&) const {}
};

// The launches one forward pass of `tokens` tokens needs on the host: `kernels` GPU kernels in
// all, `layers` transformer layers, `outside_graph` of the kernels that no graph captures
// (attention and KV dequantisation per layer, the LM head).
struct ForwardLaunches {
  double eager_kernels = 0;
  double graph_replays = 0;
  double eager_layers = 0;  // layers run outside any graph (each pays host_per_layer)
  bool captured = false;    // the step replays graphs
};
ForwardLaunches forward_launches(const LaunchSpec& s, double tokens, double kernels, int layers,
                                 double outside_graph);
// Host time to issue those launches.
double host_issue_s(const LaunchSpec& s, const ForwardLaunches& f);
// The GPU's wait for the host: max(0, host issue − GPU busy).
double launch_stall_s(double host_issue, double gpu_busy);

}  // namespace kappasim
