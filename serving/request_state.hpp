// One request's state inside the serving engine, from its arrival to its finish: the scheduler's
// Sequence (tokens, queue times) plus what the engine accounts per request (its load, compute,
// steps, loaded tokens by source, stored tokens, recomputed leading tokens, time breakdown and
// load bounds, its rank and the tier level of each hit chunk). The engine's ledger holds one per
// live request in one map and drops it in one place when the request finishes or is rejected
// (serving/request_ledger.hpp). Plain data; no SystemC.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "serving/metrics.hpp"
#include "serving/scheduler.hpp"
#include "serving/time_breakdown.hpp"

namespace kappasim {

struct RequestState {
  std::unique_ptr<Sequence> seq;      // the scheduler's view (holds a pointer to it while live)
  std::int64_t recompute_tokens = 0;  // R: leading cached tokens prefilled again instead of loaded
  double load_s = 0;                  // its load's time (the step it was first scheduled in)
  double compute_s = 0;               // compute of every step it was part of
  int steps = 0;                      // steps it was scheduled in
  double link_tokens = 0;             // cached tokens loaded over the host links
  double link_state_tokens = 0;       // hybrid: of them, the linear layers' state (never copied)
  double buffer_tokens = 0;           // cached tokens copied from the GPU-side KV buffer
  double stored_tokens = 0;           // tokens whose KV it stored to the tier
  TimeBreakdown time;                 // Σ over its steps of the step's categories
  std::optional<LoadBoundTimes> load_bounds;  // its load's time per bound (when it loaded)
  int rank = 0;                               // the engine rank serving it (serving/rank.hpp)
  // Its cached (loaded) and computed prompt tokens as admitted (a preemption while decoding
  // makes the sequence prefill everything again; the record keeps these).
  std::int64_t cached_tokens = 0, compute_tokens = 0;
  // With KV tiers below DRAM: the level that served each hit chunk (empty: all from DRAM).
  std::vector<int> chunk_levels;
  // Its prompt's chunk keys at the tier's chunk size (chunk_keys), kept once computed so the
  // store and the finish do not compute them again (issue 24; KvStore::keys_of). Empty until
  // then; a packed arrival has none (the record is rebuilt without them).
  std::vector<std::uint64_t> tier_keys;
  // End-to-end TTFT (serving.ttft): the front end's time before the scheduler saw it, and the
  // output path's after its first token (0 for an engine TTFT).
  double front_end_in_s = 0, front_end_out_s = 0;
  // End-to-end TTFT: the tier's per-request lookup costs charged for it (every lookup of it).
  double tier_request_s = 0;
};

// A fresh arrival's state (what the engine set before it enqueued it, nothing scheduled yet) as a
// compact record (serving/scheduler.hpp ArrivedRequest), or nullopt when the record cannot hold
// it: a Mooncake trace's block hashes, a tier level below DRAM for a hit chunk (chunk_levels: a
// prefetch may hold a pointer to the state), an end-to-end TTFT's front-end times, prefix caching's
// block keys already computed, or a count beyond the record's 32 bits. Every other field of the
// state and the sequence must have its default (std::logic_error otherwise: a field added to
// either is packed here or required at its default here). unpack_arrival(*pack_arrival(st))
// gives a state equal to st.
std::optional<ArrivedRequest> pack_arrival(const RequestState& st);
// The state `rec` was packed from (st fresh: its sequence made here, in the storage of the one
// st holds if any: RequestLedger::unpark's spare, overwritten whole).
void unpack_arrival(const ArrivedRequest& rec, RequestState& st);

// The requests.csv / summary record of a finished request at `now_s` (its last output token):
// TTFT at its first output token, bytes from tokens × per-GPU B_kv × tp; its queueing is the
// rest of its TTFT (steps it waited for or sat out). meets_slo is left false (the engine knows
// the SLOs). Stored bytes take `store_bytes_per_token_gpu` (a stored chunk's per token under
// serving.kv_cache: hybrid; < 0: kv_bytes_per_token_gpu). `link_shards`: r with
// serving.replicated_kv: shard_allgather (each GPU's host link carries 1/r of its KV;
// bytes_loaded counts what crossed the host links), else 1; the state part of link_tokens
// (link_state_tokens, hybrid) is not replicated and crosses whole.
RequestRecord make_request_record(const RequestState& r, double now_s,
                                  double kv_bytes_per_token_gpu, int tp,
                                  const std::string& load_path,
                                  double store_bytes_per_token_gpu = -1, int link_shards = 1);
// The same into `rec`, every field set (issue 24: the engine reuses one record, its strings'
// buffers kept: no allocation per finished request).
void make_request_record(RequestRecord& rec, const RequestState& r, double now_s,
                         double kv_bytes_per_token_gpu, int tp, const std::string& load_path,
                         double store_bytes_per_token_gpu = -1, int link_shards = 1);

}  // namespace kappasim
