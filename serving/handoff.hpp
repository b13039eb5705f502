// P/D disaggregation's KV hand-off (docs/disaggregation.md): how a decode instance pulls a
// prompt's KV from the prefill instance that computed it, as vLLM's NixlConnector does it. The
// decode side allocates the prompt's blocks, then every GPU of its rank posts one RDMA READ
// descriptor per (layer, block, K/V region) of its share to its NIC (GPUDirect RDMA); the bytes
// cross the decode GPU's NIC port into its HBM (Endpoint::Remote in the fabric). Posting is
// serial on the worker's CPU, so the pull moves no faster than descriptors are posted:
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

struct HandoffSpec {
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
    v.quantity(
        "fixed", fixed_s, dim::time,
        opt("per pull: the transfer's setup and completion notification", Range::NonNegative));
    v.quantity("post_per_descriptor", post_per_descriptor_s, dim::time,
               opt("CPU time to post one RDMA descriptor (one per layer, block and K/V region)",
                   Range::NonNegative));
  }
  void validate(const std::string&) const {}
};

// K/V regions a layer's block is split into in the KV cache the connector registers: 2 for
// GQA / MHA (vLLM's FlashAttention layout keeps K and V apart: NixlConnector registers each and
// builds one descriptor per block of each), 1 for MLA (one latent per token).
int handoff_kv_regions(const ModelSpec& m);

// Descriptors one GPU posts to pull `tokens` tokens: ceil(tokens / block_tokens) blocks x the
// layers on the GPU (num_layers / pp, rounded up) x handoff_kv_regions. 0 for tokens <= 0.
std::int64_t handoff_descriptors(const ModelSpec& m, std::int64_t tokens, int block_tokens,
                                 int pp = 1);

// The pull's rate cap per GPU from posting (0: none): bytes / (descriptors x post).
double handoff_post_rate_cap(double bytes, std::int64_t descriptors, const HandoffSpec& h);

}  // namespace kappasim
