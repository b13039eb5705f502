#include "serving/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/sim_runner.hpp"
#include "serving/load_paths/registry.hpp"
#include "serving/replica_engine.hpp"
#include "serving/sim_clock.hpp"
#include "systems/link_backend.hpp"
#include "systems/topology.hpp"

namespace kappasim {

using sc_core::SC_SEC;
using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

using sim_clock::link_fidelity_name;  // serving/sim_clock.hpp (shared with the replica engine)
using sim_clock::now_s;
using sim_clock::wait_s;

namespace {
// ServingSpec::load_path's name: the load path registry's key (serving/load_paths).
std::string load_path_name(LoadPath p) {
  for (const auto& [name, v] : load_path_names())
    if (v == p) return name;
  return "?";
}
}  // namespace

struct ServingEngine::Step {
  StepPlan plan;
  double start_s = 0, load_s = 0, compute_s = 0, store_s = 0;
  double kv_used = 0;
};

ServingEngine::ServingEngine(const sc_core::sc_module_name& name, const RunSpec& spec,
                             WorkloadSource& source, EngineSinks sinks)
    : sc_core::sc_module(name), m_spec(spec), m_source(source), m_sinks(std::move(sinks)) {
  const ServingSpec& sv = m_spec.serving;
  m_tp = sv.tp;
  m_bkv_gpu = kv_bytes_per_token_per_gpu(m_spec.model, sv.kv_dtype, m_tp);
  m_chunk_tokens = sv.tier_chunk_tokens();
  m_chunk_bytes_gpu = m_chunk_tokens * m_bkv_gpu;
  m_spec.system.gpu.require_sim("system.gpu");
  // The link back end (serving.link_fidelity, systems/link_backend's registry). Bound reports
  // need the flow back end's resources; the packet back end reports its whole time as the link's.
  m_link = make_link_backend(link_fidelity_name(sv.link_fidelity), "fabric", m_spec.system);
  if (const Topology* topo = m_link->topology())
    for (const auto& res : topo->resources())
      m_resource_bound.push_back(load_bound_of_resource(res.name));
  // Every TP rank's LMCache engine stores its own shard, replicated KV heads included, so a
  // token takes tp × (per-GPU KV bytes) of host memory.
  m_on_package = m_spec.system.host_link.type == LinkType::HbmTier;
  m_store = sv.effective_store();
  if (!stack_supports(sv.stack, sv.load_path))
    throw InputError("serving.load_path: not a load path of stack '" + sv.stack.name +
                     "' (it supports: " + stack_load_paths(sv.stack) + ")");
  // The tier's capacity: given, or the stack's pinned pool per rank × tp (or the HBM tier's,
  // or host DRAM less a reserve): default_tier_capacity.
  const double tier_bytes = sv.tier_capacity_bytes
                                ? *sv.tier_capacity_bytes
                                : default_tier_capacity(sv.stack, m_spec.system, m_tp).bytes;
  m_tier = std::make_unique<KvTier>(m_chunk_tokens, tier_bytes, m_tp * m_bkv_gpu);
  init_tiers();  // issue 14: the hierarchy over m_tier (serving/engine_tiers.cpp)
  double v_eff = effective_kv_bytes_per_gpu(m_spec.model, m_spec.system.gpu, m_tp,
                                            weight_dtype_for(sv.compute_dtype),
                                            sv.activation_reserve_bytes, sv.gpu_memory_utilization);
  if (sv.kv_buffer.enabled()) {
    sv.kv_buffer.validate("serving.kv_buffer");
    m_buffer_Bps = kv_buffer_bandwidth(sv.kv_buffer, m_spec.system.gpu);
    // One buffer per GPU holding that GPU's shard of each chunk (per-GPU bytes per token).
    m_buffer = std::make_unique<KvTier>(m_chunk_tokens, sv.kv_buffer.capacity_bytes, m_bkv_gpu);
    if (sv.kv_buffer.kind == KvBufferKind::Hbm) {  // carved out of vLLM's paged-KV pool
      if (sv.kv_buffer.capacity_bytes >= v_eff)
        throw InputError("serving.kv_buffer.capacity: " +
                         format_quantity(sv.kv_buffer.capacity_bytes, dim::bytes) +
                         " of kind hbm leaves no paged-KV pool (V_eff per GPU is " +
                         format_quantity(v_eff, dim::bytes) + ")");
      v_eff -= sv.kv_buffer.capacity_bytes;
    }
  }
  m_kv =
      std::make_unique<PagedKv>(kv_blocks_for(v_eff, sv.block_tokens, m_bkv_gpu), sv.block_tokens);
  m_sched = std::make_unique<Scheduler>(sv.scheduler_config());
  if (sv.recompute.mode == RecomputeMode::Auto) m_cost = request_cost_model(m_spec);
  m_load_path = make_load_path(load_path_name(sv.load_path));
  // One compute engine and one DMA copy engine per GPU, and a copy kernel per GPU on the kernel
  // path, all issuing into the link back end (their socket bound for the blocking path too).
  for (int k = 0; k < m_tp; ++k) {
    const std::string g = std::to_string(k);
    m_gpus.push_back(
        std::make_unique<GpuCompute>(("gpu" + g).c_str(), m_spec.system.gpu, sv.compute_dtype));
    m_gpus.back()->set_launch(sv.stack.launch);
    m_gpus.back()->attach_link(*m_link, k);
    m_dma.push_back(std::make_unique<CopyEngine>(("dma" + g).c_str(), m_spec.system.gpu, k));
    m_dma.back()->connect(*m_link);
    if (m_load_path->copy_path() == CopyPath::Kernel) {
      m_copy_kernels.push_back(std::make_unique<CopyKernel>(
          ("copy_kernel" + g).c_str(), m_spec.system.gpu, m_spec.serving.stack.copy_kernel));
      m_copy_kernels.back()->connect(*m_link);
    }
  }
  LoadContext::spec = &m_spec;
  LoadContext::on_package = m_on_package;
  LoadContext::kv_bytes_per_token_gpu = m_bkv_gpu;
  LoadContext::buffer_Bps = m_buffer_Bps;
  LoadContext::stats = &m_stats;
  LoadContext::step_time = &m_step_time;
  LoadContext::step_bounds = &m_step_bounds;
  // The run's link capacity figure, from the back end that carries the copies.
  m_link_capacity_Bps = m_link->capacity_Bps(0, Direction::H2D, m_load_path->copy_path());
  m_recompute_of = [this](const Sequence& q) { return recompute_of(q.req.id); };
  if (m_sinks.trace) {
    m_track_step = m_sinks.trace->track("engine", "steps (compute)");
    m_track_load = m_sinks.trace->track("engine", "KV loads (all GPUs)");
    m_track_store = m_sinks.trace->track("engine", "KV stores (all GPUs)");
    for (int g = 0; g < m_tp; ++g) {
      const std::string gpu = "gpu" + std::to_string(g);
      m_track_gpu_compute.push_back(m_sinks.trace->track(gpu, "compute"));
      m_track_gpu_link.push_back(m_sinks.trace->track(gpu, "host link (copies)"));
    }
  }
  SC_THREAD(arrivals);
  SC_THREAD(steps);
}

ServingEngine::~ServingEngine() = default;

namespace {
// The keys of a request's reusable prefix (its leading whole chunks inside prefix_tokens).
std::vector<std::uint64_t> prefix_keys(const Request& r, int chunk_tokens) {
  std::vector<std::uint64_t> keys = chunk_keys(r, chunk_tokens);
  keys.resize(
      std::min<std::size_t>(keys.size(), static_cast<std::size_t>(r.prefix_tokens / chunk_tokens)));
  return keys;
}
}  // namespace

void ServingEngine::warm_tier_before_run() {
  // The tier as the workload's own request stream would leave it: every request's prefix in
  // arrival order, LRU within the capacity (what does not fit is evicted, as in the run).
  if (!m_sinks.warm_source) return;
  std::unique_ptr<WorkloadSource> src = m_sinks.warm_source();
  Request r;
  while (src->next(r)) m_hier->warm(prefix_keys(r, m_chunk_tokens));
  m_warmed = true;
}

void ServingEngine::arrivals() {
  const ServingSpec& sv = m_spec.serving;
  if (sv.warm_tier) warm_tier_before_run();
  Request r;
  while (m_source.next(r)) {
    if (r.arrival_s > kSimTimeLimitS) {  // the time base's reach (core/sim_runner.hpp)
      sim_fail(std::make_exception_ptr(InputError(
          "workload: request " + std::to_string(r.id) + " arrives at " +
          sim_time_limit_message(r.arrival_s) +
          "; expected arrivals within it: a higher workload.rate, fewer workload.requests or a "
          "smaller trace time_scale")));
      // End the source as if exhausted: the requests in flight drain and both threads end, so
      // none is killed while the engine unwinds (SystemC kills a live thread by switching to
      // its coroutine stack, which AddressSanitizer reports as a false stack-buffer-overflow).
      break;
    }
    if (r.arrival_s > now_s()) wait_s(r.arrival_s - now_s());
    const std::vector<std::uint64_t> keys = chunk_keys(r, m_chunk_tokens);
    if (sv.warm_tier && !m_warmed) {
      // No copy of the stream to warm from: a prefix never placed before counts as
      // pre-populated at its first use; later uses find it only if it survived LRU.
      std::vector<std::uint64_t> pk = prefix_keys(r, m_chunk_tokens);
      pk.erase(std::remove_if(pk.begin(), pk.end(),
                              [&](std::uint64_t k) { return m_tier->ever_placed(k); }),
               pk.end());
      m_hier->warm(pk);
    }
    // Through the hierarchy (issue 14): DRAM alone is the tier's own lookup.
    const std::vector<int> at = m_hier->lookup(keys);
    const std::size_t hits = at.size();
    if (tiered()) note_levels(r.id, at);
    // make_sequence keeps at least one prompt token to compute (its logits), as vLLM does.
    auto seq = std::make_unique<Sequence>(
        make_sequence(r, static_cast<std::int64_t>(hits) * m_chunk_tokens));
    std::int64_t recompute = 0;
    if (sv.recompute.mode != RecomputeMode::None && seq->cached_tokens > 0) {
      // The leading R cached tokens are prefilled again (they need no earlier KV); the other
      // K − R are loaded. Recomputed tokens count as computed.
      const std::int64_t K = seq->cached_tokens, T = seq->compute_tokens;
      std::int64_t R = 0;
      if (sv.recompute.mode == RecomputeMode::Fixed) {
        R = static_cast<std::int64_t>(std::floor(sv.recompute.fraction * static_cast<double>(K)));
      } else {
        const auto key = std::make_pair(K, T);
        auto f = m_auto_recompute.find(key);
        if (f == m_auto_recompute.end())
          f = m_auto_recompute.emplace(key, choose_recompute_tokens(m_cost, K, T)).first;
        R = f->second;
      }
      R = std::clamp<std::int64_t>(R, 0, K);
      if (R > 0) {
        seq->cached_tokens -= R;
        seq->compute_tokens += R;
        recompute = R;
      }
    }
    // A request that cannot fit one step (chunked prefill off, budget too small) is an input
    // error found only here (its cached tokens depend on the tier): report it through sim_fail
    // (an exception leaving an SC_THREAD would become SystemC's internal error) and end the
    // source as below, so the requests in flight drain.
    Sequence* sp = seq.get();
    ++m_stats.arrived;
    RequestState& state = m_live[r.id];
    state.seq = std::move(seq);
    state.recompute_tokens = recompute;
    // issue 14: a prefetch may hold the request out of the queue until its chunks are in DRAM.
    const bool deferred = tiered() && start_prefetch(r.id, keys);
    try {
      if (!deferred) m_sched->enqueue(sp, now_s());
    } catch (const InputError&) {
      m_live.erase(r.id);
      --m_stats.arrived;
      sim_fail(std::current_exception());
      break;
    }
    m_work.notify(SC_ZERO_TIME);
  }
  m_source_done = true;
  m_work.notify(SC_ZERO_TIME);
}

void ServingEngine::steps() {
  for (;;) {
    // Requests held out of the queue by their prefetch (issue 14) are still to come.
    const bool held = std::any_of(m_prefetch.begin(), m_prefetch.end(),
                                  [](const auto& p) { return !p.second->enqueued; }) &&
                      !m_spec.serving.tiers.admit_while_prefetching;
    if (m_sched->waiting() == 0 && m_sched->running() == 0) {
      if (m_source_done && !held) return;
      sc_core::wait(m_work);
      continue;
    }
    Step st;
    st.plan = m_sched->plan(now_s(), *m_kv);
    if (st.plan.items.empty()) {
      // plan() may have rejected prompts larger than the whole pool and admitted nothing:
      // count them now (no step will call take_finished() if they were the last arrivals).
      for (Sequence* s : m_sched->take_finished()) finish(s);
      // With nothing running every waiting prompt fits (larger ones were rejected above), so an
      // empty plan with the source done means the system is empty; check_end() verifies it.
      if (m_source_done && m_sched->running() == 0 && !held) return;
      sc_core::wait(m_work);
      continue;
    }
    run_step(st);
  }
}

void ServingEngine::run_step(Step& st) {
  const ServingSpec& sv = m_spec.serving;
  ++m_stats.steps;
  st.start_s = now_s();
  m_step_time = TimeBreakdown{};
  m_step_bounds = LoadBoundTimes{};
  // Scheduler critical path (serial before the step; serving/step_plan).
  const SchedulerCpu sched =
      scheduler_cpu(sv, st.plan, m_sched->waiting_front(), m_sched->running(),
                    m_spec.model.num_layers, m_on_package);
  m_stats.stack.scheduler_s += sched.lookup_s + sched.meta_s;
  wait_s(sched.overhead_s);  // vLLM's per-step CPU scheduling work
  m_step_time.step_overhead_s += now_s() - st.start_s;
  const double t_sched = now_s();
  wait_s(sched.lookup_s + sched.meta_s);  // the stack's scheduler-side software
  m_step_time.sched_software_s += now_s() - t_sched;
  // What the step computes and loads (serving/step_plan).
  StepWork work = plan_step_work(st.plan, m_recompute_of);
  m_step_slices = work.slices;
  const std::vector<Sequence*>& first = work.load;
  const std::vector<Sequence*>& done = work.done;
  for (const StepItem& it : st.plan.items) ++state_of(it.seq).steps;
  st.kv_used = m_kv->utilization();  // after admission, before this step's finishers leave
  const StepTime step_time = batch_step_time(m_spec.model, m_spec.system.gpu, m_tp, work.slices,
                                             sv.compute_dtype, 1.0, sv.kv_dtype, sv.stack.launch);
  const double compute_s = step_time.total.compute_time_s;
  if (!first.empty()) {  // the load path's strategy: the loads and the step's compute
    if (tiered()) wait_prefetch(first);  // issue 14
    const LoadSplit ls = split_step_loads(first);
    st.load_s = m_load_path->run(*this, ls, static_cast<std::int64_t>(first.size()), step_time);
    if (tiered()) promote_loaded(first);  // issue 14: lower-tier hits copied up into DRAM
  } else {
    compute(step_time);
  }
  st.compute_s = compute_s;
  for (Sequence* s : first) state_of(s).load_s = st.load_s;
  for (const StepItem& it : st.plan.items) state_of(it.seq).compute_s += compute_s;
  m_stats.compute_busy_s += compute_s;
  m_stats.flops += step_time.total.flops;
  m_stats.hbm_bytes += step_time.total.hbm_bytes;
  const double t_store = now_s();
  st.store_s = store_phase(done);
  m_step_time.store_s += now_s() - t_store;
  // The step's categories sum to its duration (--check); every sequence in it waited all of it.
  if (m_spec.check &&
      std::fabs(m_step_time.sum() - (now_s() - st.start_s)) > 1e-12 + 1e-12 * now_s())
    throw std::logic_error("invariant violated: step " + std::to_string(m_stats.steps) +
                           "'s time breakdown does not sum to its duration");
  m_stats.run_time += m_step_time;
  m_stats.run_bounds += m_step_bounds;
  for (const StepItem& it : st.plan.items) state_of(it.seq).time += m_step_time;
  if (m_step_bounds.total() > 0)
    for (Sequence* s : first) state_of(s).load_bounds = m_step_bounds;
  m_sched->complete(st.plan, now_s(), *m_kv);
  for (Sequence* s : m_sched->take_finished()) finish(s);
  if (m_spec.check) check_step(st);
  if (m_sinks.summary) {
    StepRecord rec;
    rec.start_s = st.start_s;
    rec.end_s = now_s();
    rec.tokens = st.plan.tokens;
    rec.budget = sv.max_num_batched_tokens;
    rec.seqs = static_cast<int>(st.plan.items.size());
    rec.vram_used_fraction = st.kv_used;
    rec.load_s = st.load_s;
    rec.compute_s = st.compute_s;
    m_sinks.summary->add_step(rec);
  }
  if (m_sinks.trace) {
    m_sinks.trace->counter("engine", "VRAM KV used (fraction)", st.start_s, st.kv_used);
    m_sinks.trace->counter("engine", "scheduled tokens", st.start_s,
                           static_cast<double>(st.plan.tokens));
    m_sinks.trace->counter("engine", "waiting requests", st.start_s,
                           static_cast<double>(m_sched->waiting()));
  }
}

void ServingEngine::start_all(CopyGroup& c, double bytes_per_gpu, std::int64_t units, Direction dir,
                              CopyPath path, double delay_s) {
  // issue 14: a step's H2D load with lower-tier chunks is split by level (engine_tiers.cpp).
  if (tiered() && dir == Direction::H2D && path != CopyPath::Local &&
      start_tiered(c, bytes_per_gpu, units, path, delay_s))
    return;
  c.rs.assign(static_cast<std::size_t>(m_tp), TransferRequest{});
  for (int k = 0; k < m_tp; ++k) {
    TransferRequest& r = c.rs[static_cast<std::size_t>(k)];
    r.gpu = k;
    r.dir = dir;
    r.path = path;
    r.bytes = bytes_per_gpu;
  }
  // Every GPU's component issues its share and charges its fixed cost (CopyEngine::start:
  // dma_stream_fixed_s; CopyKernel::start: copy_kernel_fixed_s). A copy kernel takes SMs from
  // its GPU's pool until its last byte: every SM free (assumption: LMCache's and vLLM's copy
  // kernels launch a grid of one block per token or block, thousands, above any GPU's SM
  // count), which also keeps its Little's-law read bound at the whole GPU's, as before.
  for (int k = 0; k < m_tp; ++k) {
    TransferRequest& r = c.rs[static_cast<std::size_t>(k)];
    if (path == CopyPath::Kernel) {
      SmPool& sms = m_gpus[static_cast<std::size_t>(k)]->sm_pool();
      m_copy_kernels[static_cast<std::size_t>(k)]->start(r, units, c.g, delay_s, &sms,
                                                         m_spec.system.gpu.sm_count);
    } else {
      m_dma[static_cast<std::size_t>(k)]->start(r, units, c.g, delay_s);
    }
  }
}

double ServingEngine::now() const { return now_s(); }
void ServingEngine::wait(double s) { wait_s(s); }

void ServingEngine::wait_copies(CopyGroup& c) {
  if (!c.g.finished) sc_core::wait(c.g.done);
  if (tiered()) account_tier_loads(c);  // issue 14: per-level load bytes and time
}

void ServingEngine::start_compute(CopyGroup& c, double compute_s, double hbm_bytes) {
  c.rs.assign(static_cast<std::size_t>(m_tp), TransferRequest{});
  for (int k = 0; k < m_tp; ++k) {
    GpuCompute& gpu = *m_gpus[static_cast<std::size_t>(k)];
    double t = compute_s;
    if (gpu.sm_pool().free() < gpu.sm_pool().total()) {
      // A copy kernel holds SMs: the step (or this share of it) takes as much longer as the
      // step's batch does at the free SM fraction (kernel_timing). Today's paths never get
      // here (counted; see docs/serving-engine.md).
      ++m_compute_on_fewer_sms;
      const ServingSpec& sv = m_spec.serving;
      const double all = batch_step_time(m_spec.model, m_spec.system.gpu, m_tp, m_step_slices,
                                         sv.compute_dtype, 1.0, sv.kv_dtype, sv.stack.launch)
                             .total.compute_time_s;
      const double part =
          batch_step_time(m_spec.model, m_spec.system.gpu, m_tp, m_step_slices, sv.compute_dtype,
                          gpu.sm_pool().compute_fraction(), sv.kv_dtype, sv.stack.launch)
              .total.compute_time_s;
      if (all > 0) t = compute_s * part / all;
    }
    gpu.start_step(t, hbm_bytes, c.rs[static_cast<std::size_t>(k)], c.g);
  }
}

void ServingEngine::compute(const StepTime& st) {
  const double t_c = now_s();
  CopyGroup c;
  start_compute(c, st.total.compute_time_s, st.total.hbm_bytes);
  wait_copies(c);
  m_step_time.compute_s += now_s() - t_c;
  trace_compute(t_c, now_s());
}

void ServingEngine::trace_copies(const CopyGroup& c, const std::string& what) {
  if (!m_sinks.trace) return;
  for (const TransferRequest& r : c.rs) {
    const std::size_t g = static_cast<std::size_t>(r.gpu);
    if (m_spec.check && r.end_s < r.start_s)
      throw std::logic_error("invariant violated: a copy ends before it starts (time went back)");
    m_sinks.trace->span(m_track_gpu_link[g], what, r.start_s, r.end_s);
    const double dt = r.end_s - r.start_s;
    if (dt > 0)
      m_sinks.trace->counter("gpu" + std::to_string(r.gpu),
                             what.rfind("store", 0) == 0 ? "D2H GB/s" : "H2D GB/s", r.start_s,
                             r.bytes / dt / 1e9);
  }
}

void ServingEngine::trace_load(const std::string& what, double t0, double t1) {
  if (m_sinks.trace) m_sinks.trace->span(m_track_load, what, t0, t1);
}

void ServingEngine::trace_link(const std::string& what, double t0, double t1) {
  if (!m_sinks.trace) return;
  for (int track : m_track_gpu_link) m_sinks.trace->span(track, what, t0, t1);
}

void ServingEngine::trace_compute(double start_s, double end_s) {
  if (!m_sinks.trace) return;
  const std::string name = "step " + std::to_string(m_stats.steps);
  m_sinks.trace->span(m_track_step, name, start_s, end_s);
  for (int track : m_track_gpu_compute) m_sinks.trace->span(track, name, start_s, end_s);
}

std::int64_t ServingEngine::recompute_of(std::uint64_t id) const {
  const auto f = m_live.find(id);
  return f == m_live.end() ? 0 : f->second.recompute_tokens;
}

LoadSplit ServingEngine::split_step_loads(const std::vector<Sequence*>& first) {
  LoadSplit ls = split_loads(first, m_recompute_of, m_chunk_tokens, m_spec.serving.block_tokens,
                             m_buffer.get());
  if (tiered()) split_step_levels(first);  // issue 14: the step's link tokens by tier level
  for (std::size_t i = 0; i < first.size(); ++i) {
    RequestState& rs = state_of(first[i]);
    rs.link_tokens = ls.seq_link_tokens[i];
    if (m_buffer) rs.buffer_tokens = ls.seq_buffer_tokens[i];
  }
  return ls;
}

CopySplit ServingEngine::split_copies(const CopyGroup& c, double t_start) const {
  return split_copy_times(c.rs, t_start, c.g.end_s, m_resource_bound);
}

double ServingEngine::store_phase(const std::vector<Sequence*>& done) {
  const ServingSpec& sv = m_spec.serving;
  reap_stores();
  if (done.empty() || m_store == StoreMode::None) return 0;
  std::int64_t stored = 0;
  for (const Sequence* s : done) {
    // Through the hierarchy (issue 14): DRAM's new chunks are this store's D2H copy; the
    // lower levels' (write-through, demotions) are written asynchronously.
    const TierMoves mv = m_hier->store(chunk_keys(s->req, m_chunk_tokens));
    const std::size_t n = mv.placed[0];
    if (tiered()) write_lower(mv);
    stored += static_cast<std::int64_t>(n);
    state_of(s).stored_tokens = static_cast<double>(n) * m_chunk_tokens;
  }
  if (stored == 0) return 0;
  const double bytes = static_cast<double>(stored) * m_chunk_bytes_gpu;
  m_stats.stored_bytes_gpu += bytes;
  // The stack's store software (fixed + one stream sync per chunk), then one DMA per chunk to
  // pinned host memory.
  const double software =
      stack_store_s(sv.stack, static_cast<std::int64_t>(done.size()), stored, m_on_package);
  m_stats.stack.store_sw_s += software;
  m_stores.emplace_back();
  Store& st = m_stores.back();
  st.start_s = now_s();
  start_all(st.c, bytes, stored, Direction::D2H, CopyPath::Dma, software);
  if (m_store == StoreMode::Async) return 0;
  wait_copies(st.c);  // LMCache's store synchronises the stream before the step ends
  const double t = now_s() - st.start_s;
  reap_stores();
  return t;
}

void ServingEngine::reap_stores() {
  while (!m_stores.empty() && m_stores.front().c.g.finished) {
    if (m_sinks.trace) {
      m_sinks.trace->span(m_track_store, "store", m_stores.front().start_s,
                          m_stores.front().c.g.end_s);
      trace_copies(m_stores.front().c, "store");
    }
    m_stores.pop_front();
  }
}

void ServingEngine::finish(Sequence* s) {
  const std::uint64_t id = s->req.id;
  if (m_spec.check) {
    if (!m_done_ids.insert(id).second)
      throw std::logic_error("invariant violated: request " + std::to_string(id) +
                             " finished twice");
    if (now_s() < m_last_finish_s)
      throw std::logic_error("invariant violated: simulated time went back");
    m_last_finish_s = now_s();
    // Every output's times: a request starts and finishes after it arrived (a TTFT or queue
    // below zero means the time base wrapped; core/sim_runner.hpp).
    // Tolerance: the arrival wait rounds to 1 ps, and a double holds ~1e-16 relative.
    const double slack = 1e-12 + 1e-14 * s->req.arrival_s;
    if (now_s() < s->req.arrival_s - slack ||
        (s->first_scheduled_s >= 0 && s->first_scheduled_s < s->req.arrival_s - slack))
      throw std::logic_error("invariant violated: request " + std::to_string(id) +
                             " is scheduled or finishes before it arrives (time went back)");
  }
  // A tier alone (no levels below it to demote into) never places this request's own chunks
  // again: forget them, so the tier's "ever placed" set stays bounded (issue 24).
  if (!tiered()) m_tier->forget(own_chunk_keys(s->req, m_chunk_tokens));
  if (s->rejected) {  // the prompt needs more KV blocks than the whole pool (vLLM rejects it)
    ++m_stats.rejected;
    m_live.erase(id);  // the request's whole state, in one place
    m_chunk_levels.erase(id);
    m_prefetch.erase(id);
    return;
  }
  const RequestRecord rec =
      make_request_record(m_live.at(id), now_s(), m_bkv_gpu, m_tp, m_load_path->name());
  if (m_sinks.requests) m_sinks.requests->write(rec);
  if (m_sinks.summary) m_sinks.summary->add_request(rec);
  if (m_sinks.on_finish) m_sinks.on_finish(rec);
  if (m_sinks.trace) {
    // Lanes by interval, so that no two request spans overlap on one lane.
    const int lane = m_sinks.trace->track(
        "requests", "lane " + std::to_string(m_request_lanes.place(rec.arrival_s, now_s())));
    m_sinks.trace->span(lane, "request " + std::to_string(id), rec.arrival_s, now_s());
  }
  m_live.erase(id);          // the request's whole state, in one place
  m_chunk_levels.erase(id);  // issue 14
  m_prefetch.erase(id);
  ++m_stats.finished;
}

void ServingEngine::check_step(const Step& st) {
  if (st.start_s < m_last_step_end_s || now_s() < st.start_s)
    throw std::logic_error("invariant violated: step " + std::to_string(m_stats.steps) +
                           " starts before the previous one ended");
  m_last_step_end_s = now_s();
  // KV in HBM: the blocks in use, with the weights and the reserve, fit the GPU's HBM.
  if (m_kv->used_blocks() > m_kv->total_blocks())
    throw std::logic_error("invariant violated: KV blocks in use exceed the pool");
  const ServingSpec& sv = m_spec.serving;
  const double weights = weight_bytes(m_spec.model, weight_dtype_for(sv.compute_dtype)) / m_tp;
  const double kv = static_cast<double>(m_kv->used_blocks()) * sv.block_tokens * m_bkv_gpu;
  if (weights + sv.activation_reserve_bytes + kv > m_spec.system.gpu.hbm_capacity_bytes)
    throw std::logic_error("invariant violated: KV in HBM (" + format_quantity(kv, dim::bytes) +
                           ") exceeds what the GPU's HBM leaves");
}

void ServingEngine::check_end() const {
  if (m_stats.finished + m_stats.rejected != m_stats.arrived || !m_live.empty())
    throw std::logic_error("invariant violated: " + std::to_string(m_stats.arrived) + " arrived, " +
                           std::to_string(m_stats.finished) + " finished, " +
                           std::to_string(m_stats.rejected) + " rejected, " +
                           std::to_string(m_live.size()) + " still in the system");
  m_link->check_conservation();
  if (now_s() < m_last_finish_s)  // summary.json: the run ends after its last finish
    throw std::logic_error("invariant violated: the run ends before its last request finished");
}

SummaryBuilder::Totals ServingEngine::totals(double wall_time_s) const {
  EngineRunFacts f;
  f.simulated_time_s = now_s();
  f.wall_time_s = wall_time_s;
  f.link_capacity_Bps = m_link_capacity_Bps;
  f.kv_bytes_per_token_gpu = m_bkv_gpu;
  f.kernel_events = sc_core::sc_delta_count();  // SystemC delta cycles of the whole run
  return engine_totals(m_stats, m_spec, *m_tier, f, m_hier.get());
}

SummaryBuilder::Totals run_serving(const RunSpec& spec, WorkloadSource& source, EngineSinks sinks) {
  // Layouts beyond plain TP (issue 14): the replica engine (serving/replica_engine).
  if (spec.serving.parallelism.beyond_tp()) return run_replica_serving(spec, source, sinks);
  std::unique_ptr<ServingEngine> engine;
  const auto t0 = std::chrono::steady_clock::now();
  run_simulation([&] { engine = std::make_unique<ServingEngine>("engine", spec, source, sinks); });
  if (spec.check) engine->check_end();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return engine->totals(wall);
}

}  // namespace kappasim
