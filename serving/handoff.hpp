// P/D disaggregation's KV hand-off (docs/disaggregation.md): how a prompt's KV moves from the
// prefill instance that computed it to the decode instance, under a transfer-engine profile
// (cluster.handoff; presets/transfer-engines/, `kappasim list transfer-engine`): vLLM's
// NixlConnector over NIXL (the default), vLLM's MooncakeConnector over the Mooncake Transfer
// Engine, LMCache's P/D backend over NIXL. Every GPU of the decode rank moves its share of the
// prompt's KV over GPUDirect RDMA: the bytes cross the prefill GPU's NIC port out and the decode
// GPU's NIC port in (Endpoint::Remote in each node's fabric). A profile says what one RDMA
// descriptor (work request) covers and what posting one costs; the posting is serial on one
// worker thread, so the transfer moves no faster than its descriptors are posted:
// rate cap = bytes / (descriptors x post_per_descriptor). Pure C++, no SystemC.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "models/llm/architecture.hpp"

namespace kappasim {

// A node's part in P/D disaggregation (cluster.nodes[].role): Mixed serves prefill and decode
// (every run without P/D); Prefill serves each request's prefill and holds its blocks for the
// decode instance when it has more output tokens to come; Decode pulls the prompt's KV from the
// prefill instance, recomputes the prompt's last token, as vLLM's NixlConnector does, and decodes.
enum class EngineRole { Mixed, Prefill, Decode };
const std::vector<std::pair<const char*, EngineRole>>& engine_role_names();
const char* engine_role_name(EngineRole r);

// What one RDMA descriptor (one work request posted to the NIC) covers in a hand-off.
enum class HandoffUnit {
  // One per (layer, block, K/V region): vLLM's NixlConnector builds one NIXL descriptor per
  // block of each registered K or V tensor of each layer (its _read_blocks / get_block_descs_ids).
  LayerBlock,
  // One per `slice` bytes of each (layer, K/V region)'s run of the request's blocks: vLLM's
  // MooncakeConnector merges runs of contiguous blocks into one entry per layer and region
  // (group_concurrent_contiguous) and the Mooncake Transfer Engine cuts every entry into slices
  // of MC_SLICE_SIZE bytes, one RDMA work request each.
  Slice,
  // One per LMCache chunk (serving.chunk_tokens tokens): LMCache's P/D backend writes each chunk's
  // memory object (every layer's K and V, contiguous: its KV_2LTD format) as one NIXL descriptor.
  Chunk,
};
const std::vector<std::pair<const char*, HandoffUnit>>& handoff_unit_names();

// When the prompt's KV moves (docs/disaggregation.md).
enum class HandoffSend {
  // After the prefill: the decode node, chosen then, moves the whole prompt's KV once its
  // scheduler has allocated the blocks (vLLM's NixlConnector, MooncakeConnector, LMCache P/D).
  Pull,
  // During the prefill: the decode node is chosen at arrival (the proxy picks both instances)
  // and the prefill node sends each layer's KV as that layer's compute of the prompt's last chunk
  // ends, into the decode node's receive buffer, one send after another on each GPU's send
  // thread (vLLM's P2pNcclConnector, PUT_ASYNC: save_kv_layer, P2pNcclEngine.send_async).
  PushLayer,
};
const std::vector<std::pair<const char*, HandoffSend>>& handoff_send_names();

// Without cluster.handoff, or given as a map without `preset:`, the profile is these defaults:
// nixl-vllm's figures (vLLM's NixlConnector over NIXL, vLLM's reference P/D connector;
// presets/transfer-engines/nixl-vllm.yaml gives the same, a test holds them equal).
struct HandoffSpec {
  std::string name = "nixl-vllm";  // the profile (presets/transfer-engines/<name>.yaml)
  std::string display_name;
  std::string description;
  HandoffUnit unit = HandoffUnit::LayerBlock;
  HandoffSend send = HandoffSend::Pull;
  // Unit slice: the transfer engine's slice (Mooncake TE MC_SLICE_SIZE, default 65536 B).
  double slice_bytes = 65536;
  // [D, assumption for NIXL] Per pull, before the first byte: the transfer's setup and its
  // completion notification. 0.40 ms is the intercept of transfer time against KV size in the
  // Mooncake vLLM v1 benchmark (kvcache-ai.github.io/Mooncake, "vLLM with Mooncake Transfer
  // Engine Benchmark": Qwen3-8B 1P1D, 20 MB in 0.54 ms, 4.50 GiB in 31.65 ms -> 0.40 ms +
  // bytes / 144 GB/s); taken for NIXL too (no NIXL figure is published). Sweep 0.1-1 ms.
  double fixed_s = 0.40e-3;
  // [D] CPU time to post one transfer descriptor: 6.7 ms of synchronous posting for 1,785
  // descriptors per transfer = 3.75 us (vLLM issue #50913, decode-side NIXL metrics of a 3P1D
  // run, block size 64: "avg post duration (ms) 6.7", "avg descriptors per transfer 1785").
  double post_per_descriptor_s = 6.7e-3 / 1785;

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("transfer-engine profile name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.text("description", description, opt("how this transfer engine moves the KV"));
    v.choice("unit", unit, handoff_unit_names(),
             opt("what one RDMA descriptor covers: layer_block (NIXL in vLLM), slice (Mooncake "
                 "TE: `slice` bytes of a layer's contiguous run), chunk (LMCache P/D)"));
    v.choice("send", send, handoff_send_names(),
             opt("when the KV moves: pull (after the prefill, the whole prompt) or push_layer "
                 "(each layer as its prefill compute ends; `fixed` is then per layer's send)"));
    v.quantity("slice", slice_bytes, dim::bytes,
               opt("unit slice: the transfer engine's slice size (Mooncake MC_SLICE_SIZE)"));
    v.quantity(
        "fixed", fixed_s, dim::time,
        opt("per pull: the transfer's setup and completion notification", Range::NonNegative));
    v.quantity("post_per_descriptor", post_per_descriptor_s, dim::time,
               opt("CPU time to post one RDMA descriptor (work request)", Range::NonNegative));
  }
  void validate(const std::string&) const {}
};

// K/V regions a layer's block is split into in the KV cache the connector registers: 2 for
// GQA / MHA (vLLM's FlashAttention layout keeps K and V apart: NixlConnector registers each and
// builds one descriptor per block of each), 1 for MLA (one latent per token).
int handoff_kv_regions(const ModelSpec& m);

// Descriptors one GPU posts to pull `tokens` tokens: ceil(tokens / block_tokens) blocks x the
// layers on the GPU (num_layers / pp, rounded up: the fullest stage's) x handoff_kv_regions. 0
// for tokens <= 0. The pull counts each piece's own layers (handoff_piece_descriptors).
std::int64_t handoff_descriptors(const ModelSpec& m, std::int64_t tokens, int block_tokens,
                                 int pp = 1);

// What a hand-off's descriptor count depends on beside the profile and the model.
struct HandoffGeometry {
  int block_tokens = 16;   // the decode node's serving.block_tokens
  int chunk_tokens = 256;  // serving.chunk_tokens (LMCache's chunk)
  int pp = 1;              // the rank's pipeline stages
};
// Descriptors one GPU posts to move `tokens` tokens, `gpu_bytes` of them its share, under `h`:
//  layer_block: handoff_descriptors(m, tokens, block_tokens, pp);
//  slice:       layers x regions x ceil(gpu_bytes / (layers x regions) / slice) (the request's
//               blocks one contiguous run per layer and region);
//  chunk:       ceil(tokens / chunk_tokens).
// 0 for tokens <= 0.
std::int64_t handoff_descriptors(const HandoffSpec& h, const ModelSpec& m, std::int64_t tokens,
                                 double gpu_bytes, const HandoffGeometry& g);

// The pull's rate cap per GPU from posting (0: none): bytes / (descriptors x post).
double handoff_post_rate_cap(double bytes, std::int64_t descriptors, const HandoffSpec& h);

// ---- the re-shard: a hand-off between two KV layouts (docs/disaggregation.md) ----------------

// How the one rank holding a request lays out its KV: under DP-attention the request lives on
// one DP rank (the others hold none of it), so a layout is that rank's attention TP and its
// pipeline stages. GPU k of the rank is stage k / tp, TP position k % tp (RankGpus' order).
struct KvRankLayout {
  int tp = 1;
  int pp = 1;
};

// The KV "heads" a layout splits: GQA / MHA the model's KV heads; MLA 1 (the latent, not split
// by head: whole on every TP rank). At TP t, GPU j holds heads [j H/t, (j+1) H/t) when t <= H,
// else head j / (t/H) (t/H consecutive replicas per head, vLLM's num_kv_head_replicas).
int handoff_kv_heads(const ModelSpec& m);

// What one destination GPU receives from one source GPU in a hand-off.
struct ReshardPiece {
  int src = 0, dst = 0;  // GPU indices in the source (prefill) and destination (decode) ranks
  int layers = 0;        // the layers both GPUs' pipeline stages hold
  int heads = 0;         // the KV heads (MLA: the latent, 1) it takes from this source
  // Of the destination GPU's bytes, this piece's: layers / its stage's layers x heads / its heads.
  double fraction = 0;
};
// Every destination GPU's pieces, ordered by destination then source. Each destination GPU takes
// each KV head of its shard, for each of its stage's layers, from one source GPU: the GPU of the
// source stage holding that layer whose head range holds the head; where the source replicates
// the head (t_src > H, and every TP rank for MLA), the replica (dst TP position mod replicas) —
// deterministic, spreads the reads over the replicas, and with identical layouts GPU j reads
// from GPU j. std::invalid_argument when a layout cannot split the model's KV (tp neither
// dividing nor a multiple of the KV heads, pp above the layers).
// `layer_bytes` (one per layer; null: every layer alike): the layers' bytes of the request, so
// that a piece's fraction of its destination's stage is by bytes, not by layer count (a hybrid
// cache's layer kinds hold unequal bytes: hybrid_layer_bytes).
std::vector<ReshardPiece> reshard_pieces(const ModelSpec& m, const KvRankLayout& src,
                                         const KvRankLayout& dst,
                                         const std::vector<double>* layer_bytes = nullptr);
// A hybrid cache's bytes per layer for a prefix of `tokens` tokens on one GPU (HybridKv::bytes
// split over each kind's layers): a full layer every token, a sliding one the last W, a chunked
// one the current chunk's, a linear one its state.
std::vector<double> hybrid_layer_bytes(const ModelSpec& m, const HybridKv& h, double tokens);

// Descriptors of one piece: `bytes` of `tokens` tokens' KV over `layers` layers, under `h`. A
// piece is one contiguous run per (layer, block, region) in both caches (vLLM's HND block
// layout: a block's region is [heads][block_tokens][head_dim], so a contiguous head range is one
// run; [A] the NHD layout would cut it per token):
//  layer_block: ceil(tokens / block_tokens) x layers x regions;
//  slice:       layers x regions x ceil(bytes / (layers x regions) / slice), at least 1 each;
//  chunk:       ceil(tokens / chunk_tokens) (one memory object per chunk and source GPU).
// 0 for tokens <= 0. g.pp is not read (the piece's layers are).
std::int64_t handoff_piece_descriptors(const HandoffSpec& h, const ModelSpec& m,
                                       std::int64_t tokens, double bytes, int layers,
                                       const HandoffGeometry& g);

// A hand-off's load on each GPU of the two ranks.
struct ReshardLoad {
  std::vector<std::int64_t> dst_descriptors;  // per destination GPU: its pieces' descriptors
  std::vector<double> src_bytes;              // per source GPU: what its pieces carry (0: none)
};
// `dst_bytes[k]`: what destination GPU k holds of the request's `tokens` tokens (every one of
// its layers and heads); a piece carries dst_bytes[dst] x its fraction. With identical layouts
// src_bytes == dst_bytes and each destination's descriptors are its whole share's.
ReshardLoad reshard_load(const HandoffSpec& h, const ModelSpec& m, const KvRankLayout& src,
                         const KvRankLayout& dst, const std::vector<double>& dst_bytes,
                         std::int64_t tokens, const HandoffGeometry& g,
                         const std::vector<double>* layer_bytes = nullptr);

}  // namespace kappasim
