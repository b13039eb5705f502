#include "serving/handoff.hpp"

#include <stdexcept>

namespace kappasim {

const std::vector<std::pair<const char*, EngineRole>>& engine_role_names() {
  static const std::vector<std::pair<const char*, EngineRole>> names = {
      {"mixed", EngineRole::Mixed},
      {"prefill", EngineRole::Prefill},
      {"decode", EngineRole::Decode}};
  return names;
}

const char* engine_role_name(EngineRole r) {
  for (const auto& [n, v] : engine_role_names())
    if (v == r) return n;
  return "?";
}

int handoff_kv_regions(const ModelSpec& m) {
  return m.attention.type == AttentionType::Mla ? 1 : 2;
}

std::int64_t handoff_descriptors(const ModelSpec& m, std::int64_t tokens, int block_tokens,
                                 int pp) {
  if (block_tokens < 1 || pp < 1)
    throw std::invalid_argument("handoff_descriptors: block_tokens and pp must be >= 1");
  if (tokens <= 0) return 0;
  const std::int64_t blocks = (tokens + block_tokens - 1) / block_tokens;
  const std::int64_t layers = (m.num_layers + pp - 1) / pp;
  return blocks * layers * handoff_kv_regions(m);
}

double handoff_post_rate_cap(double bytes, std::int64_t descriptors, const HandoffSpec& h) {
  const double post = static_cast<double>(descriptors) * h.post_per_descriptor_s;
  return post > 0 && bytes > 0 ? bytes / post : 0;
}

}  // namespace kappasim
