// The serving engine's run counters and totals in one struct, and the pure function that turns
// them (with the tier's own counters) into the summary's Totals, power included. The engine
// only adds to these; nothing here knows about SystemC. Per-GPU figures are one rank's (every
// rank of the TP group moves and computes the same).
#pragma once

#include <cstdint>
#include <vector>

#include "serving/kv_hierarchy.hpp"
#include "serving/kv_tier.hpp"
#include "serving/metrics.hpp"
#include "serving/run_spec.hpp"
#include "serving/time_breakdown.hpp"

namespace kappasim {

struct EngineStats {
  std::uint64_t arrived = 0, finished = 0, rejected = 0, steps = 0;
  // Totals (per GPU unless said otherwise)
  double compute_busy_s = 0, flops = 0, hbm_bytes = 0, loaded_bytes_gpu = 0, stored_bytes_gpu = 0,
         link_busy_s = 0, buffer_bytes_gpu = 0;
  // serving.replicated_kv: shard_allgather: NVLink bytes a GPU sent all-gathering KV shards, and
  // the time from the shards' arrival to the gather's end, Σ over load groups (per GPU).
  double allgather_bytes_gpu = 0, allgather_s = 0;
  // The serving stack's software costs by where they sit (serving/stack_profile), per GPU.
  struct StackTimes {
    double scheduler_s = 0;  // scheduler critical path: lookups + per-step metadata
    double step_cpu_s = 0;   // in-step CPU before the copies (retrieve fixed + re-hashing)
    double gpu_gap_s = 0;    // GPU idle between chunks (implicit syncs + launches)
    double cpu_bound_s = 0;  // loads held by CPU work longer than their copies (overlapped part)
    double store_sw_s = 0;   // store software (fixed + a stream sync per chunk)
  } stack;
  TimeBreakdown run_time;  // Σ over steps (idle added in engine_totals)
  LoadBoundTimes run_bounds;
  // ---- KV tiers below host DRAM (issue 14): per hierarchy level, per GPU; empty without
  // serving.tiers. load_busy_s: Σ over load groups of the span of the level's copies;
  // load_span_s: Σ over the same groups of the whole group's span (the time-share base).
  struct TierIo {
    double loaded_bytes_gpu = 0, load_busy_s = 0, stored_bytes_gpu = 0, demoted_bytes_gpu = 0,
           promoted_bytes_gpu = 0, prefetched_bytes_gpu = 0;
  };
  std::vector<TierIo> tier_io;
  double tier_load_span_s = 0;
};

// Adds a step group's figures (per GPU of the group) into `into` at weight w (the group's share
// of the engine's GPUs), so that per-GPU figures become the mean over the engine's GPUs; counts
// (steps) add up. arrived / finished / rejected are the engine's own and are not touched.
void add_group_stats(EngineStats& into, const EngineStats& group, double w);

// What engine_totals needs from the simulation besides the counters.
struct EngineRunFacts {
  int gpus = 0;       // the engine's GPUs (0: serving.tp)
  int kv_copies = 0;  // GPUs holding one token's KV shards (tp x DP ranks; 0: serving.tp)
  double simulated_time_s = 0, wall_time_s = 0;
  double link_capacity_Bps = 0;  // per GPU per direction payload peak of the load path
  double kv_bytes_per_token_gpu = 0;
  std::uint64_t kernel_events = 0;
};

// The summary's totals: counters, power (models/gpu/power), the tier's accounting; the time
// breakdown's idle is the simulated time the steps did not cover.
// hier (issue 14, may be null): with lower tiers, per-level figures are added (tier_levels).
// Adds another rank's tier figures (the DRAM tier's chunk counts, capacity and working set; per
// level, the chunk counts and capacities) of `o` into `t` (a replica's ranks each have a tier).
void add_tier_counts(SummaryBuilder::Totals& t, const SummaryBuilder::Totals& o);

SummaryBuilder::Totals engine_totals(const EngineStats& s, const RunSpec& spec, const KvTier& tier,
                                     const EngineRunFacts& f, const KvHierarchy* hier = nullptr);

}  // namespace kappasim
