// GPU KV cache in HBM as paged blocks (vLLM's PagedAttention block pool). Pure C++.
//
// Capacity (vLLM's memory profiling, vllm/v1/worker/gpu_worker.py determine_available_memory):
//   V_eff = HBM × gpu_memory_utilization − weights / tp − activation reserve        (per GPU)
// where the activation reserve is what vLLM's profiling run measures on top of the weights
// (PyTorch activation peak of a dummy forward of max_num_batched_tokens tokens + non-torch
// memory: NCCL buffers, CUDA context growth, CUDA graphs). It is a parameter (ServingSpec
// activation_reserve, default and source there). The block pool is
//   blocks = floor(V_eff / (block_tokens × B_kv per GPU))
// with B_kv per GPU from kv_bytes_per_token_per_gpu (KV-head replication under TP included).
// Every TP rank holds the same block table, so one PagedKv stands for all ranks.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/id_table.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "models/llm/architecture.hpp"

namespace kappasim {

// vLLM's default KV block size in tokens (CacheConfig block_size 16 on CUDA).
inline constexpr int kVllmBlockTokens = 16;

// V_eff per GPU in bytes. InputError naming the model, GPU and tp when it is <= 0 (the model
// does not fit); std::invalid_argument on tp < 1, a utilisation outside (0, 1] or a negative
// reserve.
double effective_kv_bytes_per_gpu(const ModelSpec& model, const GpuSpec& gpu, int tp, DType weights,
                                  double activation_reserve_bytes, double gpu_memory_utilization);

// floor(v_eff / (block_tokens × kv_bytes_per_token_per_gpu)).
std::int64_t kv_blocks_for(double v_eff_bytes, int block_tokens, double kv_bytes_per_token_per_gpu);

class PagedKv {
 public:
  // total_blocks >= 0, block_tokens >= 1 (std::invalid_argument otherwise).
  PagedKv(std::int64_t total_blocks, int block_tokens = kVllmBlockTokens);

  // Issue 25, serving.kv_cache: hybrid: the pool as vLLM's hybrid allocator keeps it, each
  // request holding HybridKv::pool_bytes (the full layers' blocks, the sliding layers' blocks
  // still in the window, the chunked layers' of the current chunk, the linear layers' state), in
  // blocks of block_tokens × full_Bpt (a full-layer block, the unit total_blocks counts),
  // rounded up per request. vLLM groups layers into KV cache groups of one page size and
  // allocates the state in such pages too; the rounding here is per request, not per group (an
  // approximation within one block per layer kind). grow() then also frees blocks that left the
  // window. std::invalid_argument when full_Bpt is not > 0. Before enable_prefix_cache.
  void set_hybrid(const HybridKv& h);
  bool hybrid() const { return m_hybrid.has_value(); }

  // serving.prefix_caching: vLLM's automatic prefix caching (vllm/v1/core/kv_cache_manager.py,
  // block_pool.py). A full block of a prompt, once its KV is computed (or loaded), is registered
  // under its key (chunk_keys at block_tokens: the prefix chain identity). A later request whose
  // prompt starts with registered blocks shares them (reference count) instead of loading or
  // computing those tokens. A block whose last holder releases it keeps its key and joins the
  // free queue: it counts as free and is reused, LRU first (the key evicted then), only when an
  // allocation needs it. A release appends the holder's blocks in reverse order (vLLM frees a
  // request's blocks tail first, so a prefix's leading blocks are evicted last).
  // With set_hybrid (vLLM's HybridKVCacheCoordinator with mamba_cache_mode "align",
  // vllm/v1/core/single_type_kv_cache_manager.py MambaManager, kv_cache_coordinator.py): a
  // linear layer's state is cached only at block boundaries, one state per step of a prefill (the
  // state after floor(covered / block_tokens) blocks, register_blocks) and so at the prompt's
  // last whole block; a hit is the longest prefix of registered full-layer blocks that ends
  // where a state is cached (MambaManager.find_longest_cache_hit searches right to left for the
  // last block whose state is cached). A cached state takes state_blocks() blocks of the pool:
  // registered into the free queue's tail (it counts as free, evicted LRU like a block), held
  // by the requests that hit it until they release. The sliding and chunked layers' blocks of a
  // hit are taken to be cached with the full layers' (vLLM frees them with their hashes kept)
  // and are allocated as the request's own (blocks_for), not shared.
  void enable_prefix_cache();
  bool prefix_caching() const { return m_apc; }
  // Leading blocks of `keys` registered now (held or in the free queue), at most max_blocks.
  std::int64_t match(const std::vector<std::uint64_t>& keys, std::int64_t max_blocks) const;
  // Changes whenever a match or blocks_needed could answer differently (a key registered or
  // evicted, a registered block taken or given back): a caller may keep their answers while it
  // is unchanged.
  std::uint64_t generation() const { return m_generation; }
  // Free blocks an allocation of `tokens` tokens takes when its first `hit` blocks are the
  // registered blocks keys[0, hit): the new blocks plus the hit blocks now in the free queue.
  std::int64_t blocks_needed(std::int64_t tokens, const std::vector<std::uint64_t>& keys,
                             std::int64_t hit) const;
  // Of the registered blocks keys[0, hit), those in the free queue (no holder).
  std::int64_t free_among(const std::vector<std::uint64_t>& keys, std::int64_t hit) const;
  // allocate() sharing keys[0, hit) (which must be registered: std::logic_error otherwise); the
  // rest are new blocks. hit = 0 is allocate(seq, tokens).
  void allocate_shared(std::uint64_t seq, std::int64_t tokens,
                       const std::vector<std::uint64_t>& keys, std::int64_t hit);
  // Registers seq's blocks keys[next, upto) as computed (next: the first not yet registered) (a key
  // another block already holds leaves seq's block unregistered, as vLLM keeps one block per hash
  // for hits). Hybrid with a state: also the state after `upto` blocks, under keys[upto - 1],
  // when it is not cached yet and state_blocks() blocks are free (else it is not cached).
  void register_blocks(std::uint64_t seq, const std::vector<std::uint64_t>& keys,
                       std::int64_t upto);
  // Registered blocks (held or free) and how many registered blocks allocations have evicted.
  std::int64_t cached_blocks() const { return static_cast<std::int64_t>(m_keys.size()); }
  std::int64_t evicted_blocks() const { return m_evicted; }
  // Hybrid: blocks one cached linear-layer state takes, ceil(state_B / (block_tokens ×
  // full_Bpt)) (0 without linear layers), and the states cached now (held or free).
  std::int64_t state_blocks() const { return m_state_blocks; }
  std::int64_t cached_states() const { return static_cast<std::int64_t>(m_states.size()); }
  bool state_cached(std::uint64_t key) const { return m_states.count(key) != 0; }

  // ceil(tokens / block_tokens); 0 for tokens <= 0. Hybrid: those blocks plus the other layer
  // kinds' bytes in blocks, rounded up.
  std::int64_t blocks_for(std::int64_t tokens) const;
  bool can_allocate(std::int64_t tokens) const { return blocks_for(tokens) <= free_blocks(); }
  // Allocates the blocks of `tokens` tokens for sequence `seq`. std::logic_error when they are
  // not free (the caller must check can_allocate) or the sequence already holds blocks.
  void allocate(std::uint64_t seq, std::int64_t tokens);
  // Grows sequence `seq`'s allocation to cover `tokens` tokens (a decoding sequence's next
  // token, vLLM's allocate_slots): false, and nothing changed, when the extra blocks are not
  // free. std::logic_error when it holds no blocks.
  bool grow(std::uint64_t seq, std::int64_t tokens);
  // Frees the sequence's blocks; std::logic_error when it holds none.
  void release(std::uint64_t seq);
  bool holds(std::uint64_t seq) const { return m_held.find(seq) != nullptr; }

  std::int64_t total_blocks() const { return m_total; }
  std::int64_t used_blocks() const { return m_used; }
  std::int64_t free_blocks() const { return m_total - m_used; }
  int block_tokens() const { return m_block_tokens; }
  std::int64_t total_tokens() const { return m_total * m_block_tokens; }
  // used / total (0 when the pool is empty).
  double utilization() const;

 private:
  std::int64_t m_total;
  int m_block_tokens;
  std::int64_t m_used = 0;
  // sequence -> blocks (core/id_table, issue 24: no tree node per admission; only looked up)
  IdTable<std::int64_t> m_held;
  std::optional<HybridKv> m_hybrid;

  // Prefix caching. The free queue, LRU first: runs of blocks with no key, or one registered
  // block. Each key: its holders and, when it has none, its place in the free queue.
  struct FreeEntry {
    std::int64_t run = 0;  // > 0: a run of unregistered blocks; 0: the block of `key`
    std::uint64_t key = 0;
    bool state = false;  // run 0: the state_blocks() blocks of the state cached under `key`
  };
  struct KeyState {
    std::int64_t refs = 0;
    std::list<FreeEntry>::iterator free;  // valid when refs == 0
  };
  struct Holding {                       // a sequence's blocks under prefix caching
    std::vector<std::uint64_t> keys;     // the registered blocks it holds, in block order
    std::int64_t unregistered = 0;       // the others
    std::int64_t next = 0;               // its next block to register (blocks before it: done)
    std::optional<std::uint64_t> state;  // the cached state its hit holds (hybrid)
  };
  void take_free(std::int64_t n);  // n blocks from the free queue's head (evicting keys)
  void push_free_run(std::int64_t n);
  bool m_apc = false;
  std::list<FreeEntry> m_free;
  std::unordered_map<std::uint64_t, KeyState> m_keys;
  std::unordered_map<std::uint64_t, KeyState> m_states;  // hybrid: cached states by block key
  std::int64_t m_state_blocks = 0;
  // The state a hit of `hit` blocks holds: under keys[hit - 1] (null without one).
  const KeyState* hit_state(const std::vector<std::uint64_t>& keys, std::int64_t hit) const;
  std::unordered_map<std::uint64_t, Holding> m_holdings;
  std::int64_t m_evicted = 0;
  std::uint64_t m_generation = 0;
};

}  // namespace kappasim
