#include "serving/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/sim_runner.hpp"
#include "models/gpu/power.hpp"

namespace kappasim {

using sc_core::sc_time;
using sc_core::SC_SEC;
using sc_core::SC_ZERO_TIME;

namespace {
double now_s() { return sc_core::sc_time_stamp().to_seconds(); }
void wait_s(double s) {
  if (s > 0) sc_core::wait(sc_time(s, SC_SEC));
}
const char* load_path_name(LoadPath p) {
  switch (p) {
    case LoadPath::Kernel: return "kernel";
    case LoadPath::Layerwise: return "layerwise";
    case LoadPath::BlockDma: return "block_dma";
  }
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
  m_fabric = std::make_unique<FlowFabric>("fabric", build_topology(m_spec.system));
  // Every TP rank's LMCache engine stores its own shard, replicated KV heads included, so a
  // token takes tp × (per-GPU KV bytes) of host memory.
  m_tier = std::make_unique<KvTier>(m_chunk_tokens, sv.tier_capacity_bytes, m_tp * m_bkv_gpu);
  const double v_eff = effective_kv_bytes_per_gpu(
      m_spec.model, m_spec.system.gpu, m_tp, weight_dtype_for(sv.compute_dtype),
      sv.activation_reserve_bytes, sv.gpu_memory_utilization);
  m_kv = std::make_unique<PagedKv>(kv_blocks_for(v_eff, sv.block_tokens, m_bkv_gpu),
                                   sv.block_tokens);
  m_sched = std::make_unique<Scheduler>(sv.scheduler_config());
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

void ServingEngine::arrivals() {
  const ServingSpec& sv = m_spec.serving;
  Request r;
  while (m_source.next(r)) {
    if (r.arrival_s > now_s()) wait_s(r.arrival_s - now_s());
    const std::vector<std::uint64_t> keys = chunk_keys(r, m_chunk_tokens);
    if (sv.warm_tier) {  // κ experiments: the prefix is in the tier before the request arrives
      const auto prefix_chunks = std::min<std::size_t>(
          keys.size(), static_cast<std::size_t>(r.prefix_tokens / m_chunk_tokens));
      m_tier->insert(std::vector<std::uint64_t>(
          keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(prefix_chunks)));
    }
    const std::size_t hits = m_tier->lookup(keys);
    // make_sequence keeps at least one prompt token to compute (its logits), as vLLM does.
    auto seq = std::make_unique<Sequence>(
        make_sequence(r, static_cast<std::int64_t>(hits) * m_chunk_tokens));
    ++m_arrived;
    m_sched->enqueue(seq.get(), now_s());
    m_live[r.id] = std::move(seq);
    m_work.notify(SC_ZERO_TIME);
  }
  m_source_done = true;
  m_work.notify(SC_ZERO_TIME);
}

void ServingEngine::steps() {
  for (;;) {
    if (m_sched->waiting() == 0 && m_sched->running() == 0) {
      if (m_source_done) return;
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
      if (m_source_done && m_sched->running() == 0) return;
      sc_core::wait(m_work);
      continue;
    }
    run_step(st);
  }
}

void ServingEngine::run_step(Step& st) {
  const ServingSpec& sv = m_spec.serving;
  ++m_step_no;
  st.start_s = now_s();
  wait_s(sv.step_overhead_s);  // vLLM's per-step CPU scheduling work
  std::vector<Sequence*> first, done;
  std::vector<SeqSlice> slices;
  for (const StepItem& it : st.plan.items) {
    if (it.first && it.seq->cached_tokens > 0) first.push_back(it.seq);
    if (it.last) done.push_back(it.seq);
    slices.push_back({static_cast<double>(it.tokens),
                      static_cast<double>(it.seq->cached_tokens + it.seq->computed), it.last});
    ++m_steps_of[it.seq->req.id];
  }
  st.kv_used = m_kv->utilization();  // after admission, before this step's finishers leave
  const StepTime compute = batch_step_time(m_spec.model, m_spec.system.gpu, m_tp, slices,
                                           sv.compute_dtype);
  const double compute_s = compute.total.compute_time_s;
  if (sv.load_path == LoadPath::Layerwise && !first.empty()) {
    load_layerwise(first, st, compute);  // overlapped with compute
    st.compute_s = compute_s;
  } else {
    if (!first.empty()) st.load_s = load_phase(first);
    const double t_c = now_s();
    wait_s(compute_s);
    st.compute_s = compute_s;
    trace_compute(t_c, now_s());
  }
  for (Sequence* s : first) m_load_s[s->req.id] = st.load_s;
  for (const StepItem& it : st.plan.items) m_compute_s[it.seq->req.id] += compute_s;
  m_compute_busy_s += compute_s;
  m_flops += compute.total.flops;
  m_hbm_bytes += compute.total.hbm_bytes;
  st.store_s = store_phase(done);
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

void ServingEngine::start_all(std::vector<TransferRequest>& rs, FlowFabric::Group& g,
                              double bytes_per_gpu, std::int64_t units, Direction dir,
                              CopyPath path, double delay_s) {
  rs.assign(static_cast<std::size_t>(m_tp), TransferRequest{});
  for (int k = 0; k < m_tp; ++k) {
    TransferRequest& r = rs[static_cast<std::size_t>(k)];
    r.gpu = k;
    r.dir = dir;
    r.path = path;
    r.bytes = bytes_per_gpu;
  }
  // Every GPU's copies cost the same fixed time (CopyEngine / CopyKernel's cost model).
  const GpuSpec& gpu = m_spec.system.gpu;
  const double fixed =
      path == CopyPath::Kernel
          ? copy_kernel_fixed_s(gpu, units)
          : dma_stream_fixed_s(gpu, units, m_fabric->topology().latency(0, dir, path, true));
  m_fabric->start_group(rs, g, delay_s + fixed);
}

void ServingEngine::wait_group(FlowFabric::Group& g) {
  if (!g.finished) sc_core::wait(g.done);
}

void ServingEngine::trace_copies(const std::vector<TransferRequest>& rs, const std::string& what) {
  if (!m_sinks.trace) return;
  for (const TransferRequest& r : rs) {
    const std::size_t g = static_cast<std::size_t>(r.gpu);
    m_sinks.trace->span(m_track_gpu_link[g], what, r.start.to_seconds(), r.end.to_seconds());
    const double dt = (r.end - r.start).to_seconds();
    if (dt > 0)
      m_sinks.trace->counter("gpu" + std::to_string(r.gpu),
                             what.rfind("store", 0) == 0 ? "D2H GB/s" : "H2D GB/s",
                             r.start.to_seconds(), r.bytes / dt / 1e9);
  }
}

void ServingEngine::trace_compute(double start_s, double end_s) {
  if (!m_sinks.trace) return;
  const std::string name = "step " + std::to_string(m_step_no);
  m_sinks.trace->span(m_track_step, name, start_s, end_s);
  for (int track : m_track_gpu_compute) m_sinks.trace->span(track, name, start_s, end_s);
}

double ServingEngine::load_phase(const std::vector<Sequence*>& first) {
  const ServingSpec& sv = m_spec.serving;
  const double t0 = now_s();
  double tokens = 0;
  std::int64_t chunks = 0, blocks16 = 0;
  for (const Sequence* s : first) {
    tokens += static_cast<double>(s->cached_tokens);
    chunks += (s->cached_tokens + m_chunk_tokens - 1) / m_chunk_tokens;
    blocks16 += (s->cached_tokens + sv.block_tokens - 1) / sv.block_tokens;
  }
  wait_s(static_cast<double>(first.size()) * sv.retrieve_fixed_s() +
         static_cast<double>(chunks) * sv.retrieve_per_entry_s());
  const double bytes = tokens * m_bkv_gpu;
  const double t_x = now_s();
  std::vector<TransferRequest> rs;
  FlowFabric::Group g;
  if (sv.load_path == LoadPath::Kernel)
    start_all(rs, g, bytes, chunks, Direction::H2D, CopyPath::Kernel);
  else
    start_all(rs, g, bytes, blocks16, Direction::H2D, CopyPath::Dma);
  wait_group(g);
  trace_copies(rs, std::string("load (") + load_path_name(sv.load_path) + ")");
  m_link_busy_s += now_s() - t_x;
  m_loaded_bytes_gpu += bytes;
  if (m_sinks.trace) m_sinks.trace->span(m_track_load, load_path_name(sv.load_path), t0, now_s());
  return now_s() - t0;
}

void ServingEngine::load_layerwise(const std::vector<Sequence*>& first, Step& st,
                                   const StepTime& compute) {
  const ServingSpec& sv = m_spec.serving;
  const int L = m_spec.model.num_layers;
  const double t0 = now_s();
  double tokens = 0;
  std::int64_t chunks = 0;
  for (const Sequence* s : first) {
    tokens += static_cast<double>(s->cached_tokens);
    chunks += (s->cached_tokens + m_chunk_tokens - 1) / m_chunk_tokens;
  }
  // CPU side first (token hashing, chunk lookup), then the pipeline.
  wait_s(static_cast<double>(first.size()) * sv.retrieve_fixed_s() +
         static_cast<double>(chunks) * sv.retrieve_per_entry_s());
  const double bytes = tokens * m_bkv_gpu;
  const double t_pipe = now_s();
  const double compute_s = compute.total.compute_time_s;
  double load_end = t_pipe;
  double transfer_s = 0;  // time the links spent moving this step's KV
  std::vector<TransferRequest> rs;
  FlowFabric::Group g;
  if (sv.granularity == Granularity::Layer) {
    // Load of layer 0, then compute layer l while layer l+1 loads: one DMA per layer per chunk.
    start_all(rs, g, bytes / L, chunks, Direction::H2D, CopyPath::Dma);
    wait_group(g);
    transfer_s += g.end_s - t_pipe;
    for (int l = 0; l < L; ++l) {
      const double t_l = now_s();
      if (l + 1 < L) start_all(rs, g, bytes / L, chunks, Direction::H2D, CopyPath::Dma);
      wait_s(compute_s / L);
      if (l + 1 < L) {
        wait_group(g);
        transfer_s += g.end_s - t_l;
        load_end = g.end_s;
      }
    }
    load_end = std::max(load_end, t_pipe);
  } else {
    // One flow per GPU for the whole load, compute alongside; then the pipeline's fill (the
    // first layer's load before compute can start) and drain (the last layer's compute after
    // the last load) from per-layer times.
    start_all(rs, g, bytes, chunks * L, Direction::H2D, CopyPath::Dma);
    wait_s(compute_s);
    wait_group(g);
    load_end = g.end_s;
    transfer_s = load_end - t_pipe;
    const double end =
        std::max(load_end + compute.last_layer_s, t_pipe + transfer_s / L + compute_s);
    wait_s(end - now_s());
  }
  m_link_busy_s += transfer_s;
  m_loaded_bytes_gpu += bytes;
  st.load_s = (t_pipe - t0) + transfer_s;  // CPU-side costs + the links' transfer time
  if (m_sinks.trace) {
    m_sinks.trace->span(m_track_load, "layerwise", t0, load_end);
    for (int track : m_track_gpu_link) m_sinks.trace->span(track, "load (layerwise)", t_pipe, load_end);
    trace_compute(t_pipe, now_s());
  }
}

double ServingEngine::store_phase(const std::vector<Sequence*>& done) {
  const ServingSpec& sv = m_spec.serving;
  reap_stores();
  if (done.empty() || sv.store == StoreMode::None) return 0;
  std::int64_t stored = 0;
  for (const Sequence* s : done) {
    const std::size_t n = m_tier->insert(chunk_keys(s->req, m_chunk_tokens));
    stored += static_cast<std::int64_t>(n);
    m_stored_tokens[s->req.id] = static_cast<double>(n) * m_chunk_tokens;
  }
  if (stored == 0) return 0;
  const double bytes = static_cast<double>(stored) * m_chunk_bytes_gpu;
  m_stored_bytes_gpu += bytes;
  // CPU side (gather, hashing, dispatch), then one DMA per chunk to pinned host memory.
  const double software = static_cast<double>(done.size()) * sv.store_fixed_s() +
                          static_cast<double>(stored) * sv.store_per_entry_s();
  m_stores.emplace_back();
  Store& st = m_stores.back();
  st.start_s = now_s();
  start_all(st.rs, st.group, bytes, stored, Direction::D2H, CopyPath::Dma, software);
  if (sv.store == StoreMode::Async) return 0;
  wait_group(st.group);  // LMCache's store synchronises the stream before the step ends
  const double t = now_s() - st.start_s;
  reap_stores();
  return t;
}

void ServingEngine::reap_stores() {
  while (!m_stores.empty() && m_stores.front().group.finished) {
    if (m_sinks.trace) {
      m_sinks.trace->span(m_track_store, "store", m_stores.front().start_s,
                          m_stores.front().group.end_s);
      trace_copies(m_stores.front().rs, "store");
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
  }
  if (s->rejected) {  // the prompt needs more KV blocks than the whole pool (vLLM rejects it)
    ++m_rejected;
    m_live.erase(id);
    return;
  }
  RequestRecord rec;
  rec.id = id;
  rec.workload = s->req.workload;
  rec.arrival_s = s->req.arrival_s;
  // Arrival waits are rounded to the kernel's 1 ps resolution; never report a negative queue.
  rec.queue_s = std::max(0.0, s->first_scheduled_s - s->req.arrival_s);
  rec.load_s = m_load_s.count(id) ? m_load_s[id] : 0;
  rec.compute_s = m_compute_s[id];
  rec.ttft_s = now_s() - s->req.arrival_s;
  rec.cached_tokens = s->cached_tokens;
  rec.computed_tokens = s->compute_tokens;
  rec.kappa_ratio = s->compute_tokens > 0 ? static_cast<double>(s->cached_tokens) / s->compute_tokens : 0;
  rec.bytes_loaded = static_cast<double>(s->cached_tokens) * m_bkv_gpu * m_tp;
  rec.bytes_stored = (m_stored_tokens.count(id) ? m_stored_tokens[id] : 0) * m_bkv_gpu * m_tp;
  rec.load_path = load_path_name(m_spec.serving.load_path);
  rec.steps = m_steps_of[id];
  if (m_sinks.requests) m_sinks.requests->write(rec);
  if (m_sinks.summary) m_sinks.summary->add_request(rec);
  if (m_sinks.on_finish) m_sinks.on_finish(rec);
  if (m_sinks.trace) {
    const int lane = m_sinks.trace->track("requests", "lane " + std::to_string(id % 16));
    m_sinks.trace->span(lane, "request " + std::to_string(id), rec.arrival_s, now_s());
  }
  m_load_s.erase(id);
  m_compute_s.erase(id);
  m_steps_of.erase(id);
  m_stored_tokens.erase(id);
  m_live.erase(id);
  ++m_finished;
}

void ServingEngine::check_step(const Step& st) {
  if (st.start_s < m_last_step_end_s || now_s() < st.start_s)
    throw std::logic_error("invariant violated: step " + std::to_string(m_step_no) +
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
  if (m_finished + m_rejected != m_arrived || !m_live.empty())
    throw std::logic_error("invariant violated: " + std::to_string(m_arrived) + " arrived, " +
                           std::to_string(m_finished) + " finished, " +
                           std::to_string(m_rejected) + " rejected, " +
                           std::to_string(m_live.size()) + " still in the system");
  m_fabric->check_conservation();
}

SummaryBuilder::Totals ServingEngine::totals(double wall_time_s) const {
  SummaryBuilder::Totals t;
  t.simulated_time_s = now_s();
  t.wall_time_s = wall_time_s;
  t.gpus = m_tp;
  t.gpu_busy_s = m_compute_busy_s;
  t.h2d_bytes_per_gpu = m_loaded_bytes_gpu;
  const CopyPath how = m_spec.serving.load_path == LoadPath::Kernel ? CopyPath::Kernel : CopyPath::Dma;
  t.link_capacity_Bps = m_fabric->topology().solo_rate(0, Direction::H2D, how, true);
  t.link_busy_s = m_link_busy_s;
  PowerActivity a;
  a.duration_s = t.simulated_time_s;
  a.compute_busy_s = m_compute_busy_s;
  a.flops = m_flops;
  a.hbm_bytes = m_hbm_bytes + m_loaded_bytes_gpu + m_stored_bytes_gpu;
  a.link_bytes = m_loaded_bytes_gpu + m_stored_bytes_gpu;
  a.link_energy_per_byte_J = m_spec.system.host_link.energy_per_byte_J.value_or(0);
  t.gpu_energy_j = m_tp * gpu_energy_j(m_spec.system.gpu, a);
  t.tdp_w = m_spec.system.gpu.tdp_w;
  t.tier_hit_chunks = static_cast<double>(m_tier->hit_chunks());
  t.tier_miss_chunks = static_cast<double>(m_tier->miss_chunks());
  t.kernel_events = sc_core::sc_delta_count();  // SystemC delta cycles of the whole run
  t.requests_rejected = m_rejected;
  return t;
}

SummaryBuilder::Totals run_serving(const RunSpec& spec, WorkloadSource& source, EngineSinks sinks) {
  std::unique_ptr<ServingEngine> engine;
  const auto t0 = std::chrono::steady_clock::now();
  run_simulation([&] { engine = std::make_unique<ServingEngine>("engine", spec, source, sinks); });
  if (spec.check) engine->check_end();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return engine->totals(wall);
}

}  // namespace kappasim
