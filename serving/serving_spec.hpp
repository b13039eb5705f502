// The serving configuration: vLLM + LMCache (or vLLM's native offloading) settings that the
// engine runs with. Visitor-based like the hardware specs (core/config.hpp). These are software
// settings, so their defaults live here, each with its provenance next to it:
//   [S] a documented software default or the κ paper's stated setting,
//   [M] measured by someone (log or benchmark), [D] derived by arithmetic from cited numbers,
//   [A] assumption: sweep it.
// Their machine-readable form, with the range `kappasim sensitivity` varies each over:
// analysis/parameters.cpp serving_tags().
// See docs/scheduler.md for the derivations.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "models/llm/architecture.hpp"
#include "models/llm/parallelism.hpp"
#include "serving/load_path_kind.hpp"
#include "serving/paged_kv.hpp"
#include "serving/router_policy.hpp"
#include "serving/scheduler.hpp"
#include "serving/stack_profile.hpp"
#include "systems/link_backends.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {

// How cached KV moves from the host tier into HBM: serving.load_path, a registered load path's
// name (LoadPath, serving/load_path_kind.hpp: kernel | layerwise | block_dma built in).
// How new KV is written back to the tier.
enum class StoreMode {
  Blocking,  // LMCache v0.3: gather kernel, DMA to pinned host, blocking stream synchronise
  Async,     // overlapped with the next steps (vLLM native connector, LMCache async save)
  None,      // no store (read-only tier, e.g. a pre-warmed κ experiment)
  Stack,     // the stack profile's own store (StackProfile::store); resolved when read
};
// How finely the engine simulates a step.
enum class Granularity {
  Step,   // one compute wait per step; loads overlap the step as a whole
  Layer,  // per layer: layer i's compute overlaps layer i+1's load (layer-wise overlap)
};

// Where a GPU-side KV buffer lives (KvBufferSpec).
enum class KvBufferKind {
  Hbm,   // a region of the GPU's HBM carved out of vLLM's paged-KV pool
  Sram,  // a separate on-package store (SRAM / stacked near-memory die): no carve-out
};
// How much of a request's cached prefix is recomputed instead of loaded (RecomputeSpec).
enum class RecomputeMode {
  None,   // load the whole cached prefix (vLLM + LMCache)
  Fixed,  // recompute the leading `fraction` of every request's cached prefix
  Auto,   // per request, the leading part that minimises its prefill time (choose_recompute)
};

// What the KV cache keeps and the connector moves for a model with sliding-window, chunked or
// linear-attention layers (serving.kv_cache; issue 25, docs/accounting.md "What a serving stack
// keeps and moves").
enum class KvCacheMode {
  Unified,  // vLLM's hybrid KV cache manager off (a connector without SupportsHMA): every
            // attention layer keeps and moves every token; linear-attention models refused
  Hybrid,   // a hybrid-aware connector: each layer kind keeps and moves what a prefix leaves
            // (HybridKv, models/llm): window, chunk, a state per request
};
const std::vector<std::pair<const char*, KvCacheMode>>& kv_cache_mode_names();
const std::vector<std::pair<const char*, KvAllocation>>& kv_allocation_names();

// Where a request's TTFT starts (serving.ttft; issue 20 item 3, docs/serving-stacks.md "Front
// end").
enum class TtftMode {
  Engine,    // at the scheduler's queue: the engine's TTFT (the κ paper's, vLLM's metrics)
  EndToEnd,  // at the client's request: the stack's front end and the tier's per-request
             // lookup costs (StackProfile::front_end, tier_request) are charged too
};
const std::vector<std::pair<const char*, TtftMode>>& ttft_mode_names();

// serving.replicated_kv (ReplicatedKv, replicated_kv_names): models/llm/parallelism.hpp.

const std::vector<std::pair<const char*, KvBufferKind>>& kv_buffer_kind_names();
const std::vector<std::pair<const char*, RecomputeMode>>& recompute_mode_names();
const std::vector<std::pair<const char*, StoreMode>>& store_mode_names();
const std::vector<std::pair<const char*, Granularity>>& granularity_names();
// serving.link_fidelity (issue 13 item 1): the link back end a run's transfers go through, a
// registered back end's name (LinkFidelity, systems/link_backends.hpp): flow (FlowFabric,
// max-min fair fluid over the whole topology, HBM included) or packet (PciePacketLink per GPU:
// TLPs, tags, credits; PCIe only) built in.

// A GPU-side store of hot prefix chunks (docs/studies-kv.md): per GPU, holding that GPU's TP
// shard of each chunk, LRU by chunk key like the CPU tier. Chunks of a request's cached prefix
// that are in the buffer are copied buffer → KV pages on the GPU instead of crossing the host
// link; loaded chunks are inserted (LRU). A study feature: off by default.
struct KvBufferSpec {
  // [A] study knob: 0 = no buffer (the default; vLLM + LMCache have none).
  double capacity_bytes = 0;
  // [A] where it lives; `hbm` carves the capacity out of the paged-KV pool, `sram` does not.
  KvBufferKind kind = KvBufferKind::Hbm;
  // Copy bandwidth buffer → KV pages, per GPU. No default number: `hbm` derives it from the GPU
  // (hbm_bandwidth × hbm_efficiency / 2: the copy reads and writes HBM) [D]; `sram` requires it
  // (a near-memory die's bandwidth is a design assumption, give its source) and is capped by
  // the HBM write rate (hbm_bandwidth × hbm_efficiency) [D].
  std::optional<double> bandwidth_Bps;
  // [A] energy per bit read from a separate (sram) store; an hbm buffer's reads are HBM traffic
  // and are charged at the GPU's energy_per_hbm_bit (issue 12.12).
  std::optional<double> energy_per_byte_J;

  // Whether the config wrote `capacity` (0 included): a written 0 switches a GPU preset's own
  // buffer off (adopt_gpu_kv_buffer; issue 26 item 22), an absent one lets the GPU's apply.
  bool capacity_given = false;

  template <class V>
  void visit(V& v) {
    const Field cap = opt("buffer capacity per GPU (0 = off, also for a GPU preset's buffer)",
                          Range::NonNegative);
    if constexpr (std::is_same_v<V, ConfigReader>) {
      std::optional<double> c;
      v.quantity("capacity", c, dim::bytes, cap);
      if (c) {
        capacity_bytes = *c;
        capacity_given = true;
      }
    } else {
      v.quantity("capacity", capacity_bytes, dim::bytes, cap);
    }
    v.choice("kind", kind, kv_buffer_kind_names(),
             opt("hbm (carved out of the paged-KV pool) or sram (separate store)"));
    v.quantity("bandwidth", bandwidth_Bps, dim::bandwidth,
               opt("buffer -> KV pages copy bandwidth per GPU (hbm: default HBM/2)"));
    v.quantity("energy_per_bit", energy_per_byte_J, dim::energy_per_byte,
               opt("energy per bit read from a separate (sram) store", Range::NonNegative));
  }
  void validate(const std::string& path) const;
  bool enabled() const { return capacity_bytes > 0; }
};

// Partial recompute of the cached prefix (docs/studies-kv.md): the leading R tokens of a
// request's K cached tokens are prefilled again instead of loaded (they need no earlier KV);
// the other K − R are loaded as usual. Off by default.
struct RecomputeSpec {
  // [S] vLLM + LMCache load the whole hit prefix: none.
  RecomputeMode mode = RecomputeMode::None;
  // [A] study knob for `fixed`: R = floor(fraction × K).
  double fraction = 0;

  template <class V>
  void visit(V& v) {
    v.choice("mode", mode, recompute_mode_names(), opt("none, fixed or auto"));
    v.quantity("fraction", fraction, dim::none,
               opt("fixed: fraction of the cached prefix recomputed", Range::Fraction));
  }
  void validate(const std::string& path) const;
};

// Service-level objectives for goodput (issue 23): a request meets them when its TTFT and its
// TPOT are within them; goodput = such requests per second. Unset: that bound is not checked;
// both unset: no goodput figure.
struct SloSpec {
  std::optional<double> ttft_s, tpot_s;
  template <class V>
  void visit(V& v) {
    v.quantity("ttft", ttft_s, dim::time, opt("largest TTFT that meets the SLO"));
    v.quantity("tpot", tpot_s, dim::time,
               opt("largest TPOT (mean time per output token after the first) that meets it"));
  }
  void validate(const std::string& path) const;  // InputError on a bound not finite and > 0
  bool any() const { return ttft_s.has_value() || tpot_s.has_value(); }
  bool met(double ttft, double tpot) const {
    return (!ttft_s || ttft <= *ttft_s) && (!tpot_s || !(tpot > *tpot_s));
  }
};

// ---- KV tier hierarchy below host DRAM (issue 14; docs/serving-engine.md "Tier hierarchy") ----
// LMCache 0.3.x builds its storage as an ordered list of backends (StorageManager:
// LocalCPUBackend, then LocalDiskBackend / GdsBackend, then a remote backend): a lookup takes
// each chunk from the first backend that has it. Here: host DRAM (serving.tier_capacity) ->
// CXL expanders -> NVMe drives -> a remote store. A lower tier with capacity 0 is absent.
enum class TierWritePolicy {
  WriteThrough,  // every stored chunk goes to every tier (LMCache StorageManager.batched_put)
  WriteBack,     // only to DRAM; a tier's LRU evictions are demoted to the next tier
};
const std::vector<std::pair<const char*, TierWritePolicy>>& tier_write_policy_names();

struct TiersSpec {
  // [A] capacities, whole replica (every TP rank's shard counted); 0 = tier absent (LMCache's
  // max_local_disk_size default is 0: disk offloading is off by default).
  double cxl_capacity_bytes = 0;
  double nvme_capacity_bytes = 0;
  double remote_capacity_bytes = 0;
  // [S] LMCache StorageManager.batched_put submits each chunk to every configured backend.
  TierWritePolicy write = TierWritePolicy::WriteThrough;
  // [S] LMCache StorageManager.get: a chunk found in a backend other than LocalCPUBackend is
  // written back into LocalCPUBackend (local_cpu_backend.write_back).
  bool promote_on_hit = true;
  // [A] study switch: on arrival, the request's chunks found below DRAM start moving up into
  // DRAM while it waits (LMCache has prefetch tasks in its StorageManager, off by default).
  bool prefetch = false;
  // [S] off: LMCache's LocalDiskBackend reads a chunk into a host buffer (GdsBackend, cuFile
  // straight into GPU memory, is a separate opt-in backend).
  bool gds = false;
  // [A] the scheduler may admit a request whose prefetch is still in flight (its load then
  // waits for those chunks); off: it waits in the queue until its prefetch landed.
  bool admit_while_prefetching = false;

  template <class V>
  void visit(V& v) {
    // An untouched block stays out of the effective config (outputs of runs without lower
    // tiers unchanged).
    if constexpr (V::kWriting)
      if (is_default()) return;
    v.quantity("cxl_capacity", cxl_capacity_bytes, dim::bytes,
               opt("CXL tier capacity, whole replica (0 = no CXL tier)", Range::NonNegative));
    v.quantity("nvme_capacity", nvme_capacity_bytes, dim::bytes,
               opt("NVMe tier capacity, whole replica (0 = no NVMe tier)", Range::NonNegative));
    v.quantity("remote_capacity", remote_capacity_bytes, dim::bytes,
               opt("remote store capacity (0 = none)", Range::NonNegative));
    v.choice("write", write, tier_write_policy_names(),
             opt("write_through (every tier) or write_back (DRAM; evictions demoted)"));
    v.boolean("promote_on_hit", promote_on_hit, opt("copy a lower-tier hit up into DRAM"));
    v.boolean("prefetch", prefetch, opt("move a waiting request's lower-tier chunks up early"));
    v.boolean("gds", gds, opt("NVMe reads straight into GPU memory (GPUDirect Storage)"));
    v.boolean("admit_while_prefetching", admit_while_prefetching,
              opt("admit a request whose prefetch is still in flight"));
  }
  bool is_default() const {
    const TiersSpec d;
    return cxl_capacity_bytes == d.cxl_capacity_bytes &&
           nvme_capacity_bytes == d.nvme_capacity_bytes &&
           remote_capacity_bytes == d.remote_capacity_bytes && write == d.write &&
           promote_on_hit == d.promote_on_hit && prefetch == d.prefetch && gds == d.gds &&
           admit_while_prefetching == d.admit_while_prefetching;
  }
  bool enabled() const {
    return cxl_capacity_bytes > 0 || nvme_capacity_bytes > 0 || remote_capacity_bytes > 0;
  }
  void validate(const std::string& path) const;
  // Against the system's devices: a tier larger than its devices, a tier without its device,
  // a remote tier without system.nic_bandwidth -> InputError naming the key.
  void validate_against(const SystemSpec& system, const std::string& path) const;
};

struct ServingSpec {
  // ---- parallelism and precision -----------------------------------------------------------
  // [S] vLLM --tensor-parallel-size default 1; the κ paper's testbed runs TP 8 (set tp: 8).
  int tp = 1;
  // [A] the κ paper serves BF16 checkpoints; one of GpuSpec::compute_dtypes().
  std::string compute_dtype = "bf16";
  // [S] vLLM --kv-cache-dtype "auto" = the model dtype (BF16).
  DType kv_dtype = DType::Bf16;
  // [A] unified: every stack preset runs a connector that turns vLLM's hybrid KV cache manager
  // off (LMCache 0.3.x; vLLM's OffloadingConnector before 0.28). hybrid is conditional on a
  // connector that declares hybrid support (docs/accounting.md).
  KvCacheMode kv_cache = KvCacheMode::Unified;
  bool hybrid_kv() const { return kv_cache == KvCacheMode::Hybrid; }

  // ---- KV offloading ------------------------------------------------------------------------
  // [S] LMCache v0.3 default: non-layerwise load by the zero-copy CUDA kernel (use_layerwise
  // false; reference-data.md "LMCache v0.3.x").
  LoadPath load_path = LoadPath::Kernel;
  // The serving software stack (presets/stacks/, docs/serving-stacks.md): per-operation CPU
  // costs and where they sit, the pinned pool size, valid load paths. Absent: kDefaultStack.
  StackProfile stack;
  // [S] the stack's own store (LMCache v0.3: blocking stream synchronise per chunk; vLLM
  // native: asynchronous); `stack` is resolved to it when the config is read.
  StoreMode store = StoreMode::Stack;
  // [S] LMCache chunk_size default 256 tokens (kernel and layerwise paths).
  int chunk_tokens = 256;
  // [S] vLLM CacheConfig block_size default 16 on CUDA: the GPU page and the block_dma unit.
  int block_tokens = kVllmBlockTokens;
  // Whole TP group. Absent: default_tier_capacity (the stack's pinned pool per rank × tp,
  // LMCache's max_local_cpu_size 5 GB; an HBM tier's capacity; else host DRAM less a reserve),
  // filled in when the config is read, with its provenance. The κ paper does not state it.
  std::optional<double> tier_capacity_bytes;
  // [A] experiment switch: before the run, the tier holds what the workload's own request
  // stream would have left in it: every request's reusable prefix inserted in arrival order,
  // LRU, within the capacity (docs/serving-stacks.md "Warm tier"). When the working set fits,
  // K_hit = the prefix (the κ paper's setting: the prefix is in CPU memory).
  bool warm_tier = false;

  // ---- studies (docs/studies-kv.md) ---------------------------------------------------------
  KvBufferSpec kv_buffer;
  RecomputeSpec recompute;

  // ---- decode (issue 23; docs/serving-engine.md "Decode") ----------------------------------
  // [A] regime switch. false: prefill only, one output token per request (the κ regime: the
  // paper measures TTFT). true: each request generates its output_tokens (the workload's output
  // lengths), decoded with continuous batching in the same steps as other requests' prefills.
  bool decode = false;
  SloSpec slo;  // goodput's SLOs (decode runs)

  // ---- prefix caching in HBM (issue 23; docs/serving-engine.md "Prefix caching") -----------
  // [S] vLLM's automatic prefix caching (--enable-prefix-caching; on by default in vLLM v1):
  // the KV blocks of computed prompt blocks stay in the GPU's pool, keyed by their prefix, after
  // their request finished, until an allocation reuses them (LRU); a later prompt with that
  // prefix shares them instead of loading or computing those tokens (serving/paged_kv.hpp).
  // Default false: the κ paper's regime (every prompt's prefix comes over the link), and every
  // run published before it.
  bool prefix_caching = false;
  // [S] when a prefill's blocks are allocated (scheduler.hpp KvAllocation). Default chunk: vLLM
  // v1, which every stack profile models (vllm/v1/core/sched/scheduler.py: allocate_slots for the
  // cached tokens and each step's new tokens). prompt: the whole prompt at admission (vLLM v0's
  // block manager; the κ paper's Eq. 10 bound). They differ only when a prompt's computed tokens
  // span several steps while the pool is short: within 1% on the paper's runs.
  KvAllocation kv_allocation = KvAllocation::Chunk;

  // ---- scheduler ----------------------------------------------------------------------------
  // [S] the κ paper's testbed: max_num_batched_tokens 4096.
  std::int64_t max_num_batched_tokens = 4096;
  // [S] vLLM default for GPUs under 70 GiB and A100 (vllm/engine/arg_utils.py
  // get_batch_defaults); vLLM raises it to 1024 on H100-class GPUs (>= 70 GiB, not A100).
  int max_num_seqs = 256;
  // [S] vLLM v1 always runs chunked prefill.
  bool chunked_prefill = true;
  // [S] vLLM --scheduling-policy default "fcfs".
  Policy policy = Policy::Fifo;
  // [A] Fair's wait bound; sweep it (fairness against utilisation).
  double fairness_max_wait_s = 5;

  // ---- memory -------------------------------------------------------------------------------
  // [S] vLLM --gpu-memory-utilization default 0.9.
  double gpu_memory_utilization = 0.9;
  // [M→A] vLLM's profiling log for Llama-3-8B on H100 at TP 2 (vLLM PR 10511): non-torch memory
  // 3.58 GiB + PyTorch activation peak 1.26 GiB = 4.84 GiB per GPU (3.05 GiB at TP 1). Measured
  // for another model and budget, so an assumption for others.
  double activation_reserve_bytes = 4.84 * 1073741824.0;

  // ---- software costs -----------------------------------------------------------------------
  // [A] CPU time per engine step (schedule + input preparation), bracketed by measurements:
  // vLLM v0 scheduler 2.5 ms per iteration (vLLM PR 4261, A10); early vLLM v1 5-6 ms between
  // decode steps at batch 256 (vLLM issue 10634); 0.15-0.17 ms with async scheduling (vLLM
  // PR 11133, opt-in, off in v0.10.1). Prefill-only steps hold few sequences: 2 ms assumed.
  double step_overhead_s = 2e-3;
  // [S] engine: TTFT from the scheduler's queue to the first token, as vLLM's engine metrics
  // and the κ paper measure it. end_to_end: from the client's request, through the stack's front
  // end (HTTP, tokeniser, engine-core hop) and the tier's per-request lookup RPC, to the first
  // token streamed back (a served benchmark's client-side TTFT).
  TtftMode ttft = TtftMode::Engine;
  bool end_to_end() const { return ttft == TtftMode::EndToEnd; }
  // ---- simulation fidelity ------------------------------------------------------------------
  // [A] per-layer simulation, needed for the layer-wise path's overlap; `step` is faster.
  Granularity granularity = Granularity::Layer;
  // [S] each_rank: LMCache 0.3.5 keys each TP rank's chunks by its worker id
  // (CacheEngineKey(..., worker_id, chunk_hash), utils.py:76) and every rank retrieves its own;
  // shard_allgather is the alternative a connector could use (a study setting).
  ReplicatedKv replicated_kv = ReplicatedKv::EachRank;
  // ---- parallelism layout (issue 14, docs/parallelism.md) ----------------------------------
  // tp, dp_attention, ep, pp, nodes: the engine's ranks and step model (serving/engine.hpp).
  ParallelismSpec parallelism;
  // [S] vLLM's DP load balancer (DPLBAsyncMPClient) routes arrivals to DP-attention ranks.
  RouterKind dp_router{"dp_balance"};
  LinkFidelity link_fidelity = LinkFidelity::Flow;  // issue 13 item 1
  // ---- KV tiers below host DRAM (issue 14) ----
  TiersSpec tiers;

  template <class V>
  void visit(V& v) {
    v.integer("tp", tp, opt("tensor-parallel size (GPUs per model replica)", Range::AtLeastOne));
    v.text("compute_dtype", compute_dtype, opt("compute and weight dtype (bf16, fp8, ...)"));
    v.choice("kv_dtype", kv_dtype, dtype_names(), opt("KV cache dtype"));
    if (!V::kWriting || hybrid_kv())
      v.choice("kv_cache", kv_cache, kv_cache_mode_names(),
               opt("unified (every attention layer keeps every token: vLLM with a KV connector "
                   "that turns its hybrid KV cache manager off) or hybrid (a hybrid-aware "
                   "connector: sliding and chunked layers keep and load their window, linear "
                   "layers a state per request)"));
    v.choice("load_path", load_path, load_path_names(),
             opt("KV load path, a registered name (kappasim list load-path): kernel (LMCache "
                 "zero-copy), layerwise (LMCache per-layer DMA), block_dma (vLLM native, "
                 "16-token blocks)"));
    if constexpr (V::kWriting) {  // the stack's optional blocks that apply to this run
      stack.write_end_to_end = end_to_end();
      stack.write_nvme = tiers.nvme_capacity_bytes > 0;
    }
    v.object("stack", stack,
             opt("serving software stack profile (lmcache-0.3.5, lmcache-0.3.7, "
                 "vllm-native-0.11, vllm-native-0.12, ideal)"),
             "stack", kDefaultStack, kDefaultStackWhy);
    v.choice("store", store, store_mode_names(),
             opt("KV store: stack (the stack's own), blocking, async or none"));
    v.integer("chunk_tokens", chunk_tokens, opt("LMCache chunk size in tokens", Range::AtLeastOne));
    v.integer("block_tokens", block_tokens,
              opt("vLLM KV block size in tokens (GPU pages, block_dma unit)", Range::AtLeastOne));
    v.quantity("tier_capacity", tier_capacity_bytes, dim::bytes,
               opt("KV tier capacity, whole TP group (default: from the stack / tier)",
                   Range::NonNegative));
    v.boolean("warm_tier", warm_tier, opt("pre-populate the tier with every request's prefix"));
    v.boolean("decode", decode,
              opt("generate each request's output tokens (false: prefill only, one token)"));
    v.object("slo", slo, opt("goodput's SLOs: ttft, tpot (decode runs)"));
    if (!V::kWriting || prefix_caching)
      v.boolean("prefix_caching", prefix_caching,
                opt("vLLM's automatic prefix caching: computed prompt blocks stay in HBM, shared "
                    "by later prompts with that prefix"));
    if (!V::kWriting || kv_allocation != KvAllocation::Chunk)
      v.choice("kv_allocation", kv_allocation, kv_allocation_names(),
               opt("when a prefill's KV blocks are allocated: chunk (the cached tokens at "
                   "admission, the computed ones chunk by chunk, preempting when the pool runs "
                   "out: vLLM v1, the default) or prompt (all at admission, vLLM v0's block "
                   "manager)"));
    v.integer("max_num_batched_tokens", max_num_batched_tokens,
              opt("token budget per step", Range::AtLeastOne));
    v.integer("max_num_seqs", max_num_seqs,
              opt("most sequences running at once", Range::AtLeastOne));
    v.boolean("chunked_prefill", chunked_prefill, opt("split long prefills over steps"));
    v.choice("policy", policy, policy_names(),
             opt("admission policy, a registered name (kappasim presets policies)"));
    v.quantity(
        "fairness_max_wait", fairness_max_wait_s, dim::time,
        opt("fair: wait after which a request is admitted before newer ones", Range::NonNegative));
    v.quantity("gpu_memory_utilization", gpu_memory_utilization, dim::none,
               opt("fraction of HBM vLLM may use, in (0, 1] (checked in validate)", Range::Any));
    v.quantity("activation_reserve", activation_reserve_bytes, dim::bytes,
               opt("HBM per GPU held for activations and non-torch memory", Range::NonNegative));
    v.quantity("step_overhead", step_overhead_s, dim::time,
               opt("CPU scheduling time per engine step", Range::NonNegative));
    // Written only when not the default (the effective config of an engine-TTFT run as before).
    if (!V::kWriting || ttft != TtftMode::Engine)
      v.choice("ttft", ttft, ttft_mode_names(),
               opt("where TTFT starts: engine (the scheduler's queue) or end_to_end (the "
                   "client's request: the stack's front end and per-request tier costs)"));
    v.choice("granularity", granularity, granularity_names(),
             opt("simulation granularity: step or layer"));
    // Written only when not the default (every effective config of each_rank as before).
    if (!V::kWriting || replicated_kv != ReplicatedKv::EachRank)
      v.choice("replicated_kv", replicated_kv, replicated_kv_names(),
               opt("KV replicated over TP ranks (tp > KV heads, MLA): each_rank (every rank "
                   "loads its copy) or shard_allgather (1/r each over the host link, then an "
                   "NVLink all-gather; docs/parallelism.md)"));
    v.object("kv_buffer", kv_buffer, opt("GPU-side KV buffer of hot prefix chunks (study)"));
    v.object("recompute", recompute, opt("partial recompute of the cached prefix (study)"));
    // ---- parallelism layout (issue 14) ----
    v.object("parallelism", parallelism,
             opt("parallelism layout: tp, dp_attention, ep, pp, nodes, nic_bandwidth "
                 "(docs/parallelism.md)"));
    v.choice("dp_router", dp_router, router_names(),
             opt("router of arrivals to DP-attention ranks, a registered name (kappasim list "
                 "router)"));
    // issue 13 item 1: the transfer back end (docs/serving-engine.md)
    v.choice("link_fidelity", link_fidelity, link_fidelity_names(),
             opt("link back end, a registered name (kappasim list link-backend): flow (fluid "
                 "max-min over the topology) or packet (PCIe TLPs per GPU; PCIe host links only)"));
    // issue 14: the KV tier hierarchy below host DRAM (docs/serving-engine.md)
    v.object("tiers", tiers,
             opt("KV tiers below host DRAM: cxl/nvme/remote capacities, write policy, "
                 "promotion, prefetch, gds"));
  }
  void validate(const std::string& path) const;

  // The scheduler settings.
  SchedulerConfig scheduler_config() const;
  // Tokens per tier entry: chunk_tokens for LMCache paths, block_tokens for block_dma (the
  // native connector keys 16-token blocks).
  int tier_chunk_tokens() const;
  // The per-request in-step CPU cost of a retrieve (the stack profile's, host tier), and the
  // store mode in effect.
  double retrieve_fixed_s() const;
  StoreMode effective_store() const;
  // Fills the defaults that depend on the system (tier capacity, the stack's store mode) and
  // returns, in `notes`, each filled key with its provenance (for the effective config).
  void resolve(const SystemSpec& system,
               std::vector<std::pair<std::string, Provenance>>* notes = nullptr);
};

// ---- studies (docs/studies-kv.md) ----------------------------------------------------------
// Copy bandwidth buffer → KV pages per GPU: kind hbm: the given bandwidth, else hbm_bandwidth ×
// hbm_efficiency / 2 (the copy reads and writes HBM); kind sram: the given bandwidth capped by
// the HBM write rate hbm_bandwidth × hbm_efficiency. InputError when sram has none.
double kv_buffer_bandwidth(const KvBufferSpec& b, const GpuSpec& gpu);

}  // namespace kappasim
