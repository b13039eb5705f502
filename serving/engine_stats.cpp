#include "serving/engine_stats.hpp"

#include <algorithm>

#include "models/gpu/power.hpp"
#include "models/llm/architecture.hpp"
#include "serving/run_spec.hpp"

namespace kappasim {

void add_group_stats(EngineStats& into, const EngineStats& g, double w) {
  into.steps += g.steps;
  for (double EngineStats::*f :
       {&EngineStats::compute_busy_s, &EngineStats::flops, &EngineStats::hbm_bytes,
        &EngineStats::loaded_bytes_gpu, &EngineStats::stored_bytes_gpu, &EngineStats::link_busy_s,
        &EngineStats::buffer_bytes_gpu, &EngineStats::tier_load_span_s,
        &EngineStats::allgather_bytes_gpu, &EngineStats::allgather_s})
    into.*f += g.*f * w;
  for (double EngineStats::StackTimes::*f :
       {&EngineStats::StackTimes::scheduler_s, &EngineStats::StackTimes::step_cpu_s,
        &EngineStats::StackTimes::gpu_gap_s, &EngineStats::StackTimes::cpu_bound_s,
        &EngineStats::StackTimes::store_sw_s})
    into.stack.*f += g.stack.*f * w;
  for (const auto& c : TimeBreakdown::categories())
    into.run_time.*c.field += g.run_time.*c.field * w;
  for (std::size_t i = 0; i < into.run_bounds.s.size(); ++i)
    into.run_bounds.s[i] += g.run_bounds.s[i] * w;
  if (into.tier_io.size() < g.tier_io.size()) into.tier_io.resize(g.tier_io.size());
  for (std::size_t i = 0; i < g.tier_io.size(); ++i)
    for (double EngineStats::TierIo::*f :
         {&EngineStats::TierIo::loaded_bytes_gpu, &EngineStats::TierIo::load_busy_s,
          &EngineStats::TierIo::stored_bytes_gpu, &EngineStats::TierIo::demoted_bytes_gpu,
          &EngineStats::TierIo::promoted_bytes_gpu, &EngineStats::TierIo::prefetched_bytes_gpu})
      into.tier_io[i].*f += g.tier_io[i].*f * w;
}

void add_tier_counts(SummaryBuilder::Totals& t, const SummaryBuilder::Totals& o) {
  for (double SummaryBuilder::Totals::*k :
       {&SummaryBuilder::Totals::tier_hit_chunks, &SummaryBuilder::Totals::tier_miss_chunks,
        &SummaryBuilder::Totals::tier_lookups, &SummaryBuilder::Totals::tier_stored_chunks,
        &SummaryBuilder::Totals::tier_evicted_chunks, &SummaryBuilder::Totals::tier_restored_chunks,
        &SummaryBuilder::Totals::tier_dropped_chunks, &SummaryBuilder::Totals::tier_warm_chunks,
        &SummaryBuilder::Totals::tier_capacity_bytes,
        &SummaryBuilder::Totals::tier_working_set_bytes})
    t.*k += o.*k;
  for (std::size_t i = 0; i < t.tier_levels.size() && i < o.tier_levels.size(); ++i)
    if (o.tier_levels[i].first.find("_chunks") != std::string::npos ||
        o.tier_levels[i].first.find("capacity_bytes") != std::string::npos)
      t.tier_levels[i].second += o.tier_levels[i].second;
}

SummaryBuilder::Totals engine_totals(const EngineStats& s, const RunSpec& spec, const KvTier& tier,
                                     const EngineRunFacts& f, const KvHierarchy* hier) {
  const ServingSpec& sv = spec.serving;
  SummaryBuilder::Totals t;
  t.simulated_time_s = f.simulated_time_s;
  t.wall_time_s = f.wall_time_s;
  t.gpus = f.gpus > 0 ? f.gpus : sv.tp;
  const int kv_copies = f.kv_copies > 0 ? f.kv_copies : sv.tp;
  t.gpu_busy_s = s.compute_busy_s;
  t.h2d_bytes_per_gpu = s.loaded_bytes_gpu;
  t.link_capacity_Bps = f.link_capacity_Bps;
  t.link_busy_s = s.link_busy_s;
  PowerActivity a;
  a.duration_s = t.simulated_time_s;
  a.compute_busy_s = s.compute_busy_s;
  a.flops = s.flops;
  // Buffer copies write the KV pages, and an hbm buffer's copy also reads HBM.
  const double buffer_hbm = s.buffer_bytes_gpu * (sv.kv_buffer.kind == KvBufferKind::Hbm ? 2 : 1);
  a.hbm_bytes = s.hbm_bytes + s.loaded_bytes_gpu + s.stored_bytes_gpu + buffer_hbm;
  a.link_bytes = s.loaded_bytes_gpu + s.stored_bytes_gpu;
  a.link_energy_per_byte_J = spec.system.host_link.energy_per_byte_J.value_or(0);
  t.gpu_energy_j = t.gpus * gpu_energy_j(spec.system.gpu, a);
  // Reads from a separate (sram) buffer at its own energy per bit (issue 12.12); an hbm
  // buffer's reads are in hbm_bytes above.
  if (sv.kv_buffer.kind == KvBufferKind::Sram && sv.kv_buffer.energy_per_byte_J)
    t.gpu_energy_j += t.gpus * s.buffer_bytes_gpu * *sv.kv_buffer.energy_per_byte_J;
  t.tdp_w = spec.system.gpu.tdp_w;
  t.tier_hit_chunks = static_cast<double>(tier.hit_chunks());
  t.tier_miss_chunks = static_cast<double>(tier.miss_chunks());
  t.kernel_events = f.kernel_events;
  t.time = s.run_time;  // the steps' categories; idle is the rest of the simulated time
  t.time.idle_s = std::max(0.0, t.simulated_time_s - s.run_time.sum());
  t.load_bounds = s.run_bounds;
  t.requests_rejected = s.rejected;
  // H2D three ways: the model-level bytes count each cached token's KV once (B_kv of the model),
  // so replicated KV heads (TP > KV heads) are not counted twice.
  t.h2d_model_bytes = s.loaded_bytes_gpu / f.kv_bytes_per_token_gpu *
                      (sv.hybrid_kv() ? served_kv_unit_per_gpu(spec.model, sv, 1)
                                      : kv_bytes_per_token_unified(spec.model, sv.kv_dtype));
  t.stack_scheduler_s = s.stack.scheduler_s;
  t.stack_step_cpu_s = s.stack.step_cpu_s;
  t.stack_gpu_gap_s = s.stack.gpu_gap_s;
  t.stack_cpu_bound_s = s.stack.cpu_bound_s;
  t.stack_store_s = s.stack.store_sw_s;
  t.tier_lookups = static_cast<double>(tier.lookups());
  t.tier_stored_chunks = static_cast<double>(tier.stored_chunks());
  t.tier_evicted_chunks = static_cast<double>(tier.evicted_chunks());
  t.tier_restored_chunks = static_cast<double>(tier.restored_chunks());
  t.tier_dropped_chunks = static_cast<double>(tier.dropped_chunks());
  t.tier_warm_chunks = static_cast<double>(tier.warm_chunks());
  t.tier_capacity_bytes = tier.capacity_bytes();
  t.tier_working_set_bytes = static_cast<double>(tier.distinct_chunks()) * tier.chunk_bytes();
  // ---- per tier level (issue 14; docs/metrics.md "Tier levels"): bytes whole replica ----
  if (hier && hier->levels() > 1 && s.tier_io.size() == hier->levels()) {
    for (std::size_t i = 0; i < hier->levels(); ++i) {
      const std::string p = std::string("tiers_") + tier_level_name(hier->level(i)) + "_";
      const TierLevelStats& ls = hier->stats(i);
      const EngineStats::TierIo& io = s.tier_io[i];
      const KvTier& kt = hier->tier(i);
      auto add = [&](const char* k, double v) { t.tier_levels.emplace_back(p + k, v); };
      add("capacity_bytes", kt.capacity_bytes());
      add("hit_chunks", static_cast<double>(ls.hit_chunks));
      add("loaded_bytes", io.loaded_bytes_gpu * kv_copies);
      add("load_busy_s", io.load_busy_s);
      // Per GPU: its share over the time the level's copies were in flight.
      add("load_bandwidth_per_gpu_Bps",
          io.load_busy_s > 0 ? io.loaded_bytes_gpu / io.load_busy_s : 0.0);
      add("load_time_share", s.tier_load_span_s > 0 ? io.load_busy_s / s.tier_load_span_s : 0.0);
      add("stored_chunks", static_cast<double>(ls.stored_chunks));
      // DRAM's are the stores' D2H copies (stored_bytes_gpu); the lower levels' are their writes.
      add("stored_bytes", (i == 0 ? s.stored_bytes_gpu : io.stored_bytes_gpu) * kv_copies);
      add("evicted_chunks", static_cast<double>(kt.evicted_chunks()));
      add("demoted_in_chunks", static_cast<double>(ls.demoted_in));
      add("demoted_out_chunks", static_cast<double>(ls.demoted_out));
      add("demoted_bytes", io.demoted_bytes_gpu * kv_copies);
      add("promoted_out_chunks", static_cast<double>(ls.promoted_out));
      add("promoted_bytes", io.promoted_bytes_gpu * kv_copies);
      add("prefetched_bytes", io.prefetched_bytes_gpu * kv_copies);
    }
  }
  return t;
}

}  // namespace kappasim
