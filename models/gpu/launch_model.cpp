#include "models/gpu/launch_model.hpp"

#include <algorithm>

namespace kappasim {

const std::vector<std::pair<const char*, DecodeAttention>>& decode_attention_names() {
  static const std::vector<std::pair<const char*, DecodeAttention>> n = {
      {"flash", DecodeAttention::Flash}, {"masked_mha", DecodeAttention::MaskedMha}};
  return n;
}

const std::vector<std::pair<const char*, GraphMode>>& graph_mode_names() {
  static const std::vector<std::pair<const char*, GraphMode>> n = {
      {"none", GraphMode::None}, {"piecewise", GraphMode::Piecewise}, {"full", GraphMode::Full}};
  return n;
}

ForwardLaunches forward_launches(const LaunchSpec& s, double tokens, double kernels, int layers,
                                 double outside_graph) {
  ForwardLaunches f;
  f.captured = s.graph_mode != GraphMode::None && tokens <= s.max_capture_tokens;
  if (!f.captured) {
    f.eager_kernels = kernels;
    f.eager_layers = layers;
    return f;
  }
  f.eager_kernels = std::min(outside_graph, kernels);
  // Piecewise: the model's graph is split at every attention call, layers + 1 pieces.
  f.graph_replays = s.graph_mode == GraphMode::Piecewise ? layers + 1.0 : 1.0;
  return f;
}

double host_issue_s(const LaunchSpec& s, const ForwardLaunches& f) {
  return f.eager_kernels * s.host_launch_s + f.graph_replays * s.graph_launch_s +
         f.eager_layers * s.host_per_layer_s;
}

double launch_stall_s(double host_issue, double gpu_busy) {
  return std::max(0.0, host_issue - gpu_busy);
}

}  // namespace kappasim
