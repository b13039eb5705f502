#include "serving/handoff.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/preset_listing.hpp"

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

const std::vector<std::pair<const char*, HandoffUnit>>& handoff_unit_names() {
  static const std::vector<std::pair<const char*, HandoffUnit>> names = {
      {"layer_block", HandoffUnit::LayerBlock},
      {"slice", HandoffUnit::Slice},
      {"chunk", HandoffUnit::Chunk}};
  return names;
}

namespace {
// Transfer-engine profiles are preset files (presets/transfer-engines/, --preset-dir), as stack
// profiles are: listed as `kappasim list transfer-engine` through the preset listing
// (core/preset_listing.hpp); cluster.handoff resolves a name through the preset registry.
const PresetListing kTransferEngines("transfer-engine", "transfer-engine",
                                     "transfer-engine profile", "cluster.handoff");
}  // namespace

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

std::int64_t handoff_descriptors(const HandoffSpec& h, const ModelSpec& m, std::int64_t tokens,
                                 double gpu_bytes, const HandoffGeometry& g) {
  if (tokens <= 0) return 0;
  switch (h.unit) {
    case HandoffUnit::LayerBlock:
      return handoff_descriptors(m, tokens, g.block_tokens, g.pp);
    case HandoffUnit::Slice: {
      if (!(h.slice_bytes > 0) || g.pp < 1)
        throw std::invalid_argument("handoff_descriptors: slice and pp must be > 0");
      // One entry per (layer, region): the request's blocks in one contiguous run.
      const std::int64_t entries =
          static_cast<std::int64_t>((m.num_layers + g.pp - 1) / g.pp) * handoff_kv_regions(m);
      const double per_entry = gpu_bytes / static_cast<double>(entries);
      const auto slices = static_cast<std::int64_t>(std::ceil(per_entry / h.slice_bytes));
      return entries * std::max<std::int64_t>(1, slices);
    }
    case HandoffUnit::Chunk:
      if (g.chunk_tokens < 1)
        throw std::invalid_argument("handoff_descriptors: chunk_tokens must be >= 1");
      return (tokens + g.chunk_tokens - 1) / g.chunk_tokens;
  }
  return 0;
}

double handoff_post_rate_cap(double bytes, std::int64_t descriptors, const HandoffSpec& h) {
  const double post = static_cast<double>(descriptors) * h.post_per_descriptor_s;
  return post > 0 && bytes > 0 ? bytes / post : 0;
}

}  // namespace kappasim
