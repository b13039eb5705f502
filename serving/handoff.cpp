#include "serving/handoff.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "core/preset_listing.hpp"
#include "models/llm/parallelism.hpp"

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

const std::vector<std::pair<const char*, HandoffSend>>& handoff_send_names() {
  static const std::vector<std::pair<const char*, HandoffSend>> names = {
      {"pull", HandoffSend::Pull}, {"push_layer", HandoffSend::PushLayer}};
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
  if (g.pp < 1) throw std::invalid_argument("handoff_descriptors: pp must be >= 1");
  // A GPU's whole share is one piece over its stage's layers (the re-shard of identical layouts).
  return handoff_piece_descriptors(h, m, tokens, gpu_bytes, (m.num_layers + g.pp - 1) / g.pp, g);
}

int handoff_kv_heads(const ModelSpec& m) {
  return m.attention.type == AttentionType::Mla ? 1 : m.attention.num_kv_heads;
}

namespace {
// The first head of TP position j's range and how many it holds, at TP t over H heads.
std::pair<int, int> head_range(int H, int t, int j) {
  if (t <= H) return {j * (H / t), H / t};
  return {j / (t / H), 1};
}
// The TP position at TP t holding head h, for a reader at TP position `reader` (the replica
// reader mod replicas when t > H).
int head_holder(int H, int t, int h, int reader) {
  if (t <= H) return h / (H / t);
  const int r = t / H;
  return h * r + reader % r;
}
void check_split(int H, int L, const KvRankLayout& l, const char* side) {
  if (l.tp < 1 || l.pp < 1 || l.pp > L || (l.tp <= H ? H % l.tp != 0 : l.tp % H != 0))
    throw std::invalid_argument(std::string("reshard_pieces: the ") + side + " layout (tp " +
                                std::to_string(l.tp) + ", pp " + std::to_string(l.pp) +
                                ") cannot split " + std::to_string(H) + " KV heads over " +
                                std::to_string(L) + " layers");
}
}  // namespace

std::vector<double> hybrid_layer_bytes(const ModelSpec& m, const HybridKv& h, double tokens) {
  const std::array<LayerKind, 4> kinds = {LayerKind::Full, LayerKind::Sliding, LayerKind::Chunked,
                                          LayerKind::Linear};
  const std::array<double HybridKv::*, 4> part = {&HybridKv::full_Bpt, &HybridKv::sliding_Bpt,
                                                  &HybridKv::chunked_Bpt, &HybridKv::state_B};
  // Each kind's whole bytes (HybridKv::bytes with the others zeroed), shared by its layers.
  std::array<double, 4> per_layer{};
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    HybridKv one;
    one.window = h.window;
    one.chunk = h.chunk;
    one.*part[k] = h.*part[k];
    const int n = m.count_layers(kinds[k]);
    per_layer[k] = n > 0 ? one.bytes(0, tokens, tokens) / n : 0;
  }
  std::vector<double> out;
  for (int l = 0; l < m.num_layers; ++l) {
    const LayerKind kind = m.layer_kind(l);
    for (std::size_t k = 0; k < kinds.size(); ++k)
      if (kind == kinds[k]) out.push_back(per_layer[k]);
  }
  return out;
}

std::vector<ReshardPiece> reshard_pieces(const ModelSpec& m, const KvRankLayout& src,
                                         const KvRankLayout& dst,
                                         const std::vector<double>* layer_bytes) {
  const int H = handoff_kv_heads(m);
  const int L = m.num_layers;
  check_split(H, L, src, "source");
  check_split(H, L, dst, "destination");
  const std::vector<int> sl = stage_layer_counts(L, src.pp);
  const std::vector<int> dl = stage_layer_counts(L, dst.pp);
  std::vector<ReshardPiece> out;
  int d_first = 0;
  for (int ds = 0; ds < dst.pp; ++ds) {
    const int d_layers = dl[static_cast<std::size_t>(ds)];
    for (int dj = 0; dj < dst.tp; ++dj) {
      const auto [h0, nh] = head_range(H, dst.tp, dj);
      int s_first = 0;
      for (int ss = 0; ss < src.pp; ++ss) {
        const int s_layers = sl[static_cast<std::size_t>(ss)];
        const int common =
            std::min(d_first + d_layers, s_first + s_layers) - std::max(d_first, s_first);
        s_first += s_layers;
        if (common <= 0) continue;
        // The heads of the shard, grouped by the source TP position holding them (a source's
        // heads are one contiguous range, so each group is one run).
        for (int h = h0; h < h0 + nh;) {
          const int sj = head_holder(H, src.tp, h, dj);
          int n = 0;
          while (h + n < h0 + nh && head_holder(H, src.tp, h + n, dj) == sj) ++n;
          ReshardPiece p;
          p.src = ss * src.tp + sj;
          p.dst = ds * dst.tp + dj;
          p.layers = common;
          p.heads = n;
          // Integer ratios: a piece covering the whole shard is exactly 1.
          double layers_share = static_cast<double>(common) / d_layers;
          if (layer_bytes && common < d_layers) {
            const auto sum = [&](int from, int count) {
              double b = 0;
              for (int l = from; l < from + count; ++l)
                b += layer_bytes->at(static_cast<std::size_t>(l));
              return b;
            };
            const double all = sum(d_first, d_layers);
            if (all > 0) layers_share = sum(std::max(d_first, s_first - s_layers), common) / all;
          }
          p.fraction = layers_share * (static_cast<double>(n) / nh);
          out.push_back(p);
          h += n;
        }
      }
    }
    d_first += d_layers;
  }
  return out;
}

std::int64_t handoff_piece_descriptors(const HandoffSpec& h, const ModelSpec& m,
                                       std::int64_t tokens, double bytes, int layers,
                                       const HandoffGeometry& g) {
  if (tokens <= 0) return 0;
  if (layers < 1) throw std::invalid_argument("handoff_piece_descriptors: layers must be >= 1");
  switch (h.unit) {
    case HandoffUnit::LayerBlock: {
      if (g.block_tokens < 1)
        throw std::invalid_argument("handoff_piece_descriptors: block_tokens must be >= 1");
      const std::int64_t blocks = (tokens + g.block_tokens - 1) / g.block_tokens;
      return blocks * layers * handoff_kv_regions(m);
    }
    case HandoffUnit::Slice: {
      if (!(h.slice_bytes > 0))
        throw std::invalid_argument("handoff_piece_descriptors: slice must be > 0");
      // One entry per (layer, region): the request's blocks in one contiguous run.
      const std::int64_t entries = static_cast<std::int64_t>(layers) * handoff_kv_regions(m);
      const double per_entry = bytes / static_cast<double>(entries);
      const auto slices = static_cast<std::int64_t>(std::ceil(per_entry / h.slice_bytes));
      return entries * std::max<std::int64_t>(1, slices);
    }
    case HandoffUnit::Chunk:
      if (g.chunk_tokens < 1)
        throw std::invalid_argument("handoff_piece_descriptors: chunk_tokens must be >= 1");
      return (tokens + g.chunk_tokens - 1) / g.chunk_tokens;
  }
  return 0;
}

ReshardLoad reshard_load(const HandoffSpec& h, const ModelSpec& m, const KvRankLayout& src,
                         const KvRankLayout& dst, const std::vector<double>& dst_bytes,
                         std::int64_t tokens, const HandoffGeometry& g,
                         const std::vector<double>* layer_bytes) {
  if (dst_bytes.size() != static_cast<std::size_t>(dst.tp * dst.pp))
    throw std::invalid_argument("reshard_load: one byte count per destination GPU is needed");
  ReshardLoad out;
  out.dst_descriptors.assign(dst_bytes.size(), 0);
  out.src_bytes.assign(static_cast<std::size_t>(src.tp * src.pp), 0.0);
  for (const ReshardPiece& p : reshard_pieces(m, src, dst, layer_bytes)) {
    const double b = dst_bytes[static_cast<std::size_t>(p.dst)] * p.fraction;
    out.dst_descriptors[static_cast<std::size_t>(p.dst)] +=
        handoff_piece_descriptors(h, m, tokens, b, p.layers, g);
    out.src_bytes[static_cast<std::size_t>(p.src)] += b;
  }
  return out;
}

double handoff_post_rate_cap(double bytes, std::int64_t descriptors, const HandoffSpec& h) {
  const double post = static_cast<double>(descriptors) * h.post_per_descriptor_s;
  return post > 0 && bytes > 0 ? bytes / post : 0;
}

}  // namespace kappasim
