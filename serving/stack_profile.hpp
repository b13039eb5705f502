// The serving software stack as a named, versioned profile (serving.stack; presets/stacks/):
// LMCache 0.3.5 / 0.3.7 on vLLM's v1 connector, vLLM's native OffloadingConnector 0.11 / 0.12,
// and `ideal` (no software cost: the hardware bound). Pure C++, no SystemC: the engine only
// charges what these functions return, and the router or the design model can reuse them.
//
// What it models: per-operation CPU costs of the KV-offload software, each charged WHERE it sits
// (docs/serving-stacks.md; code-level facts in /work/shared/docs/kv-stack-mechanisms.md, "KSM"):
//  - scheduler critical path: the lookup of a request (re-hashes every chunk of the prompt on
//    every TP rank; ranks answer in parallel, the scheduler waits for all), repeated on every
//    step while the request waits at the queue head (KSM §1.2); per-step connector metadata
//    tensor conversions (LMCache 0.3.5 only, removed in 0.3.6 by PR #1463; KSM §1.6);
//  - inside the forward step, per TP rank (the step waits for the slowest rank): the retrieve's
//    fixed cost and up-front re-hashing of every chunk (KSM §1.3), the layer-wise mode's Python
//    per (layer, chunk) object and, in 0.3.5 only, one WARNING log line per object (KSM §1.4),
//    the native connector's CPU issue cost per cudaMemcpyAsync (KSM §3);
//  - GPU idle gaps between chunks: one implicit stream sync (pageable pointer copy) plus one
//    launch per chunk (KSM §1.3), serial with the copies;
//  - overlapped with a copy: the per-chunk Python of the non-layer-wise retrieve runs while the
//    previous chunk's kernel copies, so the load ends no earlier than its total (KSM §1.3);
//  - store: a fixed cost plus one stream sync per chunk, blocking the step (KSM §1.5), or the
//    native connector's asynchronous store.
// Every cost applies on every tier, an on-package one (LinkType::HbmTier) included: the
// connector's CPU work does not depend on where the bytes sit. The `ideal` stack has none of it.
// Ignored: CPU contention between ranks and the GIL (ranks are modelled as running in parallel,
// equal); pinning of looked-up chunks (it can make a full pool drop a store); Zen 5 → Zen 3
// speed (the measured Python costs are used as measured).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "models/gpu/copy_kernel_shape.hpp"
#include "models/gpu/launch_model.hpp"

namespace kappasim {

struct SystemSpec;
struct LoadPath;  // serving/load_path_kind.hpp

enum class StackFamily {
  Lmcache,     // LMCache's vLLM v1 connector: load paths kernel | layerwise
  VllmNative,  // vLLM's native OffloadingConnector: load path block_dma
  Ideal,       // no software cost: any load path
};
// The unit of one native-connector copy.
enum class NativeCopyUnit {
  Block,         // vLLM >= 0.12 (PR #27743): one contiguous cross-layer block per 16 tokens
  BlockLayerKv,  // vLLM 0.11: one copy per block, per layer, per K/V (8 KB on Llama-3.1-70B)
};
// The stack's own store mode (serving.store: stack takes it).
enum class StackStore { Blocking, Async };
// How the stack loads a request's cached KV: in the step that first schedules it (the step waits:
// LMCache's retrieve), or asynchronously, outside the steps, before the request is scheduled
// (vLLM's OffloadingConnector: get_num_new_matched_tokens returns load_async, the request waits
// as WAITING_FOR_REMOTE_KVS while other requests' steps run; docs/serving-stacks.md).
enum class StackLoad { InStep, Async };

const std::vector<std::pair<const char*, StackFamily>>& stack_family_names();
const std::vector<std::pair<const char*, NativeCopyUnit>>& native_copy_unit_names();
const std::vector<std::pair<const char*, StackStore>>& stack_store_names();
const std::vector<std::pair<const char*, StackLoad>>& stack_load_names();

// The stack built in when serving.stack is not given, and why.
inline constexpr const char* kDefaultStack = "lmcache-0.3.5";
inline constexpr const char* kDefaultStackWhy =
    "default: the kappa paper's stack (arXiv 2601.19910: LMCache 0.3.5 with vLLM 0.10.1)";

// The request's path outside the GPU engine (issue 20 item 3; docs/serving-stacks.md "Front
// end"): the HTTP/tokeniser front end before the scheduler sees the request and the output path
// after its first token. Charged only when a run asks for end-to-end TTFT (serving.ttft:
// end_to_end); engine TTFT (the default) starts at the scheduler's queue.
struct FrontEndSpec {
  double http_s = 0;                // per request: HTTP, JSON, request validation, chat template
  double tokenize_per_token_s = 0;  // per prompt token: the tokenizer's encode
  double ipc_s = 0;                 // per request: API server -> engine core hop (one way)
  double first_token_s = 0;         // after the first token: hop back, detokenise, stream out

  template <class V>
  void visit(V& v) {
    v.quantity(
        "http", http_s, dim::time,
        opt("per request: HTTP, JSON, request validation, chat template", Range::NonNegative));
    v.quantity("tokenize_per_token", tokenize_per_token_s, dim::time,
               opt("per prompt token: tokenizer encode", Range::NonNegative));
    v.quantity("ipc", ipc_s, dim::time,
               opt("per request: API server -> engine core hop", Range::NonNegative));
    v.quantity("first_token", first_token_s, dim::time,
               opt("after the first token: hop back, detokenise, stream", Range::NonNegative));
  }
  void validate(const std::string&) const {}  // the reader checks every range
};
// The KV tier's per-request costs on the scheduler's path that only an end-to-end TTFT charges
// (issue 20 item 3): the lookup's RPC to the ranks' lookup servers and its conversion of the
// prompt. Charged with every lookup (stack_lookup_s), so a lookup repeated while the request
// waits pays them again.
struct TierRequestSpec {
  double lookup_rpc_s = 0;        // per lookup: round trip to every rank (in parallel)
  double lookup_per_token_s = 0;  // per lookup, per prompt token: the prompt's conversion

  template <class V>
  void visit(V& v) {
    v.quantity("lookup_rpc", lookup_rpc_s, dim::time,
               opt("per lookup: RPC round trip to the ranks' lookup servers", Range::NonNegative));
    v.quantity("lookup_per_token", lookup_per_token_s, dim::time,
               opt("per lookup, per prompt token: the prompt's conversion", Range::NonNegative));
  }
  void validate(const std::string&) const {}  // the reader checks every range
};

struct StackProfile {
  std::string name;  // the preset name
  std::string display_name;
  std::string description;
  StackFamily family = StackFamily::Ideal;
  StackStore store = StackStore::Async;
  StackLoad load = StackLoad::InStep;
  // An async load's hand-off (load: async; docs/serving-stacks.md "When an async load's request
  // runs"): one engine-core iteration that schedules no token (vLLM v1: schedule(), the worker's
  // execute_model without a forward, kv_connector_no_forward, then update_from_output). The
  // engine runs them back to back while only requests waiting for their loads remain; a load is
  // seen done at the end of the first step, empty or not, after its copies end. 0: none (the
  // hand-off waits for the copies only on an idle engine).
  double empty_step_s = 0;

  // ---- the pinned host pool --------------------------------------------------------------
  // Per TP rank (every rank allocates its own; a full pool drops stores). Absent: host DRAM
  // minus host_reserve_fraction, shared by the ranks.
  std::optional<double> pool_per_rank_bytes;
  double host_reserve_fraction = 0.25;

  // ---- scheduler critical path (per lookup; ranks in parallel, the slowest answers last) ---
  double lookup_fixed_s = 0;
  double lookup_per_chunk_s = 0;      // re-hash + contains per chunk of the whole prompt
  double lookup_per_layer_key_s = 0;  // layer-wise: contains() per (layer, hit chunk) key
  bool lookup_repeats_while_waiting = false;
  double meta_per_token_s = 0;  // per step, per prefilling request, per prompt token

  // ---- inside the forward step, per TP rank ----------------------------------------------
  double retrieve_fixed_s = 0;             // per retrieved request
  double retrieve_hash_per_chunk_s = 0;    // up-front re-hashing, before any copy
  double retrieve_python_per_chunk_s = 0;  // overlapped with the previous chunk's copy
  double retrieve_gap_per_chunk_s = 0;     // GPU idle per chunk: implicit sync + launch
  double layerwise_per_object_s = 0;       // Python per (layer, chunk), serial on the rank
  double layerwise_log_per_object_s = 0;   // a WARNING log line per (layer, chunk) (0.3.5)
  NativeCopyUnit copy_unit = NativeCopyUnit::Block;
  double native_issue_per_copy_s = 0;  // CPU issue cost of one cudaMemcpyAsync

  // ---- store ------------------------------------------------------------------------------
  double store_fixed_s = 0;           // per storing request
  double store_sync_per_chunk_s = 0;  // one stream sync (+ launches) per stored chunk
  // The chunks a request fills while it decodes are stored as well (each as it fills), not only
  // its prompt's: vLLM's OffloadingConnector stores every newly full block of every scheduled
  // request each step; LMCache only with save_decode_cache (off by default).
  bool store_decode = false;

  // ---- the zero-copy load kernel (LoadPath::Kernel): its launch shape ---------------------
  // Sets the loads its SMs keep in flight (models/gpu/copy_kernel_shape, docs/pcie-model.md);
  // absent: the kernel's reads are bounded by the link and its read tags only.
  CopyKernelShape copy_kernel;
  // ---- how the stack launches a forward's kernels (models/gpu/launch_model) ---------------
  // CUDA-graph mode and capture limit, host cost per eager launch and per graph replay. Absent:
  // no host launch cost (the GPU's own per-kernel launch is GpuSpec::kernel_launch_overhead).
  LaunchSpec launch;
  // ---- outside the GPU engine: charged only for an end-to-end TTFT (serving.ttft) ----------
  FrontEndSpec front_end;
  TierRequestSpec tier_request;
  // ---- NVMe tier reads (docs/memory-tiers.md "Queue depth the connector keeps") ------------
  // Reads the connector keeps in flight for one load from an NVMe tier; 0: the drive's own
  // datasheet queue depth (NvmeDriveSpec::queue_depth).
  int nvme_read_queue_depth = 0;

  // Not config keys: which optional blocks the effective config shows (set by ServingSpec's
  // visit when writing): the end-to-end blocks only in an end-to-end run, the NVMe queue depth
  // only with an NVMe tier, so that runs without them write the config they always wrote.
  bool write_end_to_end = false;
  bool write_nvme = false;

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("stack profile name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.text("description", description, opt("what this stack is"));
    v.choice("family", family, stack_family_names(),
             opt("lmcache (kernel | layerwise), vllm_native (block_dma) or ideal (any)"));
    v.choice("store", store, stack_store_names(), opt("the stack's store: blocking or async"));
    v.choice("load", load, stack_load_names(),
             opt("the stack's load: in_step (the step waits) or async (outside the steps)"));
    // Written where it can be paid: an async stack's parked loads, and any stack that sets it
    // (a P/D decode node's parked pulls take empty steps too).
    if (!V::kWriting || load == StackLoad::Async || empty_step_s > 0)
      v.quantity("empty_step", empty_step_s, dim::time,
                 opt("one engine iteration that schedules no token while requests wait for their "
                     "async loads or P/D pulls",
                     Range::NonNegative));
    v.quantity("pool_per_rank", pool_per_rank_bytes, dim::bytes,
               opt("pinned host pool per TP rank (absent: host DRAM minus the reserve)"));
    v.quantity(
        "host_reserve_fraction", host_reserve_fraction, dim::none,
        opt("share of host DRAM kept for the OS and the serving processes", Range::Fraction));
    v.quantity("lookup_fixed", lookup_fixed_s, dim::time,
               opt("scheduler: per lookup", Range::NonNegative));
    v.quantity("lookup_per_chunk", lookup_per_chunk_s, dim::time,
               opt("scheduler: per prompt chunk looked up", Range::NonNegative));
    v.quantity("lookup_per_layer_key", lookup_per_layer_key_s, dim::time,
               opt("scheduler: layer-wise, per (layer, hit chunk) key", Range::NonNegative));
    v.boolean("lookup_repeats_while_waiting", lookup_repeats_while_waiting,
              opt("a request not admitted is looked up again next step"));
    v.quantity(
        "meta_per_token", meta_per_token_s, dim::time,
        opt("scheduler: per step, per prefilling request's prompt token", Range::NonNegative));
    v.quantity("retrieve_fixed", retrieve_fixed_s, dim::time,
               opt("in step: per retrieved request", Range::NonNegative));
    v.quantity("retrieve_hash_per_chunk", retrieve_hash_per_chunk_s, dim::time,
               opt("in step: up-front re-hash per chunk", Range::NonNegative));
    v.quantity("retrieve_python_per_chunk", retrieve_python_per_chunk_s, dim::time,
               opt("in step: Python per chunk, overlapped with the copies", Range::NonNegative));
    v.quantity("retrieve_gap_per_chunk", retrieve_gap_per_chunk_s, dim::time,
               opt("GPU idle per chunk (implicit sync + launch)", Range::NonNegative));
    v.quantity("layerwise_per_object", layerwise_per_object_s, dim::time,
               opt("layer-wise: Python per (layer, chunk)", Range::NonNegative));
    v.quantity("layerwise_log_per_object", layerwise_log_per_object_s, dim::time,
               opt("layer-wise: log line per (layer, chunk)", Range::NonNegative));
    v.choice("copy_unit", copy_unit, native_copy_unit_names(),
             opt("native connector copy unit: block or block_layer_kv"));
    v.quantity("native_issue_per_copy", native_issue_per_copy_s, dim::time,
               opt("native: CPU issue cost per cudaMemcpyAsync", Range::NonNegative));
    v.quantity("store_fixed", store_fixed_s, dim::time,
               opt("store: per storing request", Range::NonNegative));
    v.quantity("store_sync_per_chunk", store_sync_per_chunk_s, dim::time,
               opt("store: stream sync per stored chunk", Range::NonNegative));
    v.boolean("store_decode", store_decode,
              opt("store: the chunks a request fills while it decodes are stored too"));
    v.object("copy_kernel", copy_kernel,
             opt("zero-copy load kernel's launch shape: {load_width, threads_per_block, "
                 "blocks_per_sm, loads_per_thread}"));
    v.object("launch", launch,
             opt("kernel launches: {graph_mode, max_capture_tokens, host_launch, graph_launch}"));
    if (!V::kWriting || write_end_to_end) {
      v.object("front_end", front_end,
               opt("end-to-end TTFT only: {http, tokenize_per_token, ipc, first_token}"));
      v.object("tier_request", tier_request,
               opt("end-to-end TTFT only: the tier's {lookup_rpc, lookup_per_token}"));
    }
    if (!V::kWriting || write_nvme)
      v.integer("nvme_read_queue_depth", nvme_read_queue_depth,
                opt("reads in flight per NVMe-tier load (0: the drive's queue depth)",
                    Range::NonNegative));
  }
  void validate(const std::string& path) const;
};

// ---- pure cost functions (seconds), by where they sit ----------------------------------------
// They apply on every tier, an on-package HBM tier included: the connector's CPU work (hashing,
// lookups, Python per chunk, logging) does not depend on where the bytes sit. A tier without a
// connector's software is modelled with the `ideal` stack (issue 22: like for like).

// One lookup on the scheduler's critical path: prompt_chunks = full chunks of the prompt
// (every one is re-hashed), hit_chunks = the leading ones found (layer-wise: L keys each).
double stack_lookup_s(const StackProfile& p, LoadPath path, std::int64_t prompt_chunks,
                      std::int64_t hit_chunks, int layers);
// End-to-end TTFT only (serving.ttft: end_to_end), added to every lookup: the RPC round trip to
// the ranks' lookup servers and the prompt's conversion (prompt_tokens = its whole prompt).
double stack_lookup_request_s(const StackProfile& p, std::int64_t prompt_tokens);
// End-to-end TTFT only: the front end's time before the request reaches the scheduler (HTTP,
// tokenising its prompt_tokens, the hop to the engine core), and after its first token.
double front_end_in_s(const StackProfile& p, std::int64_t prompt_tokens);
double front_end_out_s(const StackProfile& p);
// Both together: the front end's share of one request's end-to-end TTFT (requests.csv's
// front_end_s, probe prefill's).
double front_end_s(const StackProfile& p, std::int64_t prompt_tokens);
// Per step on the scheduler's critical path: the connector metadata of the prefilling requests
// (prompt_tokens = the sum of their prompt lengths).
double stack_step_meta_s(const StackProfile& p, std::int64_t prompt_tokens);

// A step's retrieve, per TP rank (the step waits for the slowest; ranks are equal here).
struct RetrieveCost {
  double cpu_before_s = 0;     // in-step CPU before the first copy (fixed + re-hashing)
  double gpu_gap_s = 0;        // GPU idle between chunks, serial with the copies
  double cpu_overlap_s = 0;    // CPU work overlapped with the copies: the load lasts >= this
  double per_layer_cpu_s = 0;  // layer-wise: CPU to issue one layer's objects (serial on rank)
  std::int64_t copies = 0;     // copies per rank the copy hardware charges (DMA / kernel blocks)
};
// requests = requests retrieved, chunks = tier entries retrieved (per rank), blocks = 16-token
// blocks (block_dma), layers = model layers.
RetrieveCost stack_retrieve(const StackProfile& p, LoadPath path, std::int64_t requests,
                            std::int64_t chunks, std::int64_t blocks, int layers);

// A step's store: the CPU/sync time before the store's copies complete (blocking: the step waits).
double stack_store_s(const StackProfile& p, std::int64_t requests, std::int64_t chunks);

// Whether the stack supports a load path (lmcache: kernel, layerwise; vllm_native: block_dma;
// ideal: all), and the supported ones' names for messages.
bool stack_supports(const StackProfile& p, LoadPath path);
std::string stack_load_paths(const StackProfile& p);

// The tier's default capacity (whole TP group) and why: an HBM tier's capacity × GPUs of the
// group; else pool_per_rank × tp; else host DRAM × (1 − host_reserve_fraction).
struct TierCapacity {
  double bytes = 0;
  std::string why;
};
TierCapacity default_tier_capacity(const StackProfile& p, const SystemSpec& system, int tp);
// The most a DRAM KV tier (serving.tier_capacity) can physically hold (issue 20 part 5): an HBM
// tier's capacity × GPUs of the group; else the host DRAM of `nodes` hosts less the stack's
// reserve (host_reserve_fraction: the OS, the serving processes, the weights' page cache).
// RunSpec::validate refuses a larger tier_capacity.
TierCapacity tier_capacity_limit(const StackProfile& p, const SystemSpec& system, int tp,
                                 int nodes = 1);

}  // namespace kappasim
