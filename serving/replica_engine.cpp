#include "serving/replica_engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/sim_runner.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "serving/paged_kv.hpp"
#include "serving/sim_clock.hpp"
#include "serving/stack_profile.hpp"
#include "systems/link_backend.hpp"
#include "systems/topology.hpp"

namespace kappasim {

using sc_core::SC_ZERO_TIME;

using sim_clock::now_s;  // serving/sim_clock.hpp
using sim_clock::wait_s;

ReplicaEngine::ReplicaEngine(const sc_core::sc_module_name& name, const RunSpec& spec,
                             WorkloadSource& source, EngineSinks sinks)
    : sc_core::sc_module(name), m_spec(spec), m_source(source), m_sinks(std::move(sinks)) {
  const ServingSpec& sv = m_spec.serving;
  m_spec.system.gpu.require_sim("system.gpu");
  m_L = make_replica_layout(m_spec);
  m_chunk_tokens = sv.tier_chunk_tokens();
  m_bkv_rank_gpu = kv_bytes_per_token_per_gpu(m_spec.model, sv.kv_dtype, m_L.tp);
  // HBM left for KV on every GPU: the layout's weights (largest stage) and the reserve out of
  // gpu_memory_utilization × HBM (RunSpec::validate refused a layout that leaves none); the
  // rank's pool is limited by its fullest stage's GPU (kv_bytes_rank: max over stages).
  const std::int64_t blocks = replica_kv_blocks(m_spec, m_L);
  // Each rank's LMCache: its own pinned pool, as a TP group of tp GPUs (× pp stages) would
  // have; a given tier capacity is the replica's, split evenly over the ranks.
  const double tier_rank =
      sv.tier_capacity_bytes
          ? *sv.tier_capacity_bytes / m_L.dp
          : default_tier_capacity(sv.stack, m_spec.system, m_L.tp * m_L.pp).bytes;
  for (int r = 0; r < m_L.dp; ++r) {
    Rank rk;
    rk.sched = std::make_unique<Scheduler>(sv.scheduler_config());
    rk.kv = std::make_unique<PagedKv>(blocks, sv.block_tokens);
    rk.tier = std::make_unique<KvTier>(m_chunk_tokens, tier_rank, m_L.tp * m_bkv_rank_gpu);
    m_ranks.push_back(std::move(rk));
  }
  // One link back end for the whole replica: the flow back end over build_topology(system,
  // nodes) (each node its own host DRAM, sockets and host links; NVLink and NIC ports per GPU).
  // GPU g of the replica is GPU g mod (gpus / nodes) of node g / (gpus / nodes): fabric GPU
  // node × system.gpus + local.
  const std::string fid = sim_clock::link_fidelity_name(sv.link_fidelity);
  // A system without nic_bandwidth takes the layout's (serving.parallelism.nic_bandwidth,
  // ConnectX-7 by default), as replica_step does.
  SystemSpec fabric_system = m_spec.system;
  if (!fabric_system.nic_Bps) fabric_system.nic_Bps = m_L.nic_Bps;
  m_link = make_link_backend(fid, "fabric", fabric_system, m_L.p.nodes);
  // The all-to-all and PP activations go through the fabric as PeerGpu transfers where it
  // carries them (the flow back end); else (packet) they are timed by replica_step's per-port
  // model.
  TransferRequest peer;
  peer.endpoint = Endpoint::PeerGpu;
  m_peer_fabric = m_link->carries(peer) && m_L.stage_gpus * m_L.pp > 1;
  for (int g = 0; g < m_L.gpus; ++g) {
    m_dma.push_back(std::make_unique<CopyEngine>(("dma" + std::to_string(g)).c_str(),
                                                 m_spec.system.gpu, fabric_gpu(g)));
    m_dma.back()->connect(*m_link);
  }
  m_link_capacity_Bps = m_link->capacity_Bps(0, Direction::H2D, CopyPath::Dma);
  SC_THREAD(arrivals);
  SC_THREAD(steps);
}

ReplicaEngine::~ReplicaEngine() = default;

int ReplicaEngine::fabric_gpu(int g) const {
  return g / m_L.gpus_per_node * m_spec.system.gpus + g % m_L.gpus_per_node;
}

int ReplicaEngine::gpu_index(int stage, std::size_t rank, int j) const {
  return stage * m_L.stage_gpus + static_cast<int>(rank) * m_L.tp + j;
}

std::size_t ReplicaEngine::route() const {
  // vLLM's DP load balancer: the rank with the least waiting × 4 + running (ties: lowest).
  std::size_t best = 0;
  std::size_t best_score = SIZE_MAX;
  for (std::size_t r = 0; r < m_ranks.size(); ++r) {
    const std::size_t s = m_ranks[r].sched->waiting() * 4 + m_ranks[r].sched->running();
    if (s < best_score) {
      best = r;
      best_score = s;
    }
  }
  return best;
}

void ReplicaEngine::arrivals() {
  const ServingSpec& sv = m_spec.serving;
  if (sv.warm_tier && m_sinks.warm_source) {
    // Every rank's tier as the stream would leave it had it served it all (routing is known
    // only as requests arrive).
    std::unique_ptr<WorkloadSource> src = m_sinks.warm_source();
    Request w;
    while (src->next(w)) {
      std::vector<std::uint64_t> keys = chunk_keys(w, m_chunk_tokens);
      keys.resize(std::min<std::size_t>(
          keys.size(), static_cast<std::size_t>(w.prefix_tokens / m_chunk_tokens)));
      for (Rank& rk : m_ranks) rk.tier->warm(keys);
    }
  }
  Request r;
  while (m_source.next(r)) {
    if (r.arrival_s > kSimTimeLimitS) {
      sim_fail(std::make_exception_ptr(
          InputError("workload: request " + std::to_string(r.id) + " arrives at " +
                     sim_time_limit_message(r.arrival_s) + "; expected arrivals within it")));
      break;
    }
    if (r.arrival_s > now_s()) wait_s(r.arrival_s - now_s());
    const std::size_t rank = route();
    Rank& rk = m_ranks[rank];
    if (sv.warm_tier && !m_sinks.warm_source) {
      // No copy of the stream to warm from (as the single-group engine): a prefix never placed
      // in this rank's tier counts as pre-populated at its first use.
      std::vector<std::uint64_t> pk = chunk_keys(r, m_chunk_tokens);
      pk.resize(std::min<std::size_t>(pk.size(),
                                      static_cast<std::size_t>(r.prefix_tokens / m_chunk_tokens)));
      pk.erase(std::remove_if(pk.begin(), pk.end(),
                              [&](std::uint64_t k) { return rk.tier->ever_placed(k); }),
               pk.end());
      rk.tier->warm(pk);
    }
    const std::size_t hits = rk.tier->lookup(chunk_keys(r, m_chunk_tokens));
    auto seq = std::make_unique<Sequence>(
        make_sequence(r, static_cast<std::int64_t>(hits) * m_chunk_tokens));
    try {
      rk.sched->enqueue(seq.get(), now_s());
    } catch (const InputError&) {
      sim_fail(std::current_exception());
      break;
    }
    ++m_stats.arrived;
    m_live[r.id].seq = std::move(seq);
    m_rank_of[r.id] = static_cast<int>(rank);
    m_work.notify(SC_ZERO_TIME);
  }
  m_source_done = true;
  m_work.notify(SC_ZERO_TIME);
}

void ReplicaEngine::steps() {
  for (;;) {
    bool idle = true;
    for (const Rank& rk : m_ranks) idle = idle && rk.sched->idle();
    if (idle) {
      if (m_source_done) return;
      sc_core::wait(m_work);
      continue;
    }
    std::vector<StepPlan> plans;
    bool any = false, running = false;
    for (Rank& rk : m_ranks) {
      plans.push_back(rk.sched->plan(now_s(), *rk.kv));
      any = any || !plans.back().items.empty();
    }
    if (!any) {
      for (Rank& rk : m_ranks) {
        for (Sequence* s : rk.sched->take_finished()) finish(s);
        running = running || rk.sched->running() > 0;
      }
      if (m_source_done && !running) return;
      sc_core::wait(m_work);
      continue;
    }
    run_step(plans);
  }
}

void ReplicaEngine::start_rank_copies(CopyGroup& c, std::vector<std::pair<int, std::int64_t>>& who,
                                      std::size_t r, double tokens, std::int64_t units,
                                      Direction dir) {
  for (int s = 0; s < m_L.pp; ++s) {
    const double bytes = tokens * m_L.cost.stages[static_cast<std::size_t>(s)].kv_bytes_rank;
    for (int j = 0; j < m_L.tp; ++j) {
      const int g = gpu_index(s, r, j);
      c.rs.emplace_back();
      TransferRequest& q = c.rs.back();
      q.gpu = fabric_gpu(g);
      q.dir = dir;
      q.path = CopyPath::Dma;
      q.bytes = bytes;
      who.emplace_back(g, units);
    }
  }
}

void ReplicaEngine::run_step(std::vector<StepPlan>& plans) {
  const ServingSpec& sv = m_spec.serving;
  ++m_stats.steps;
  const double t0 = now_s();
  TimeBreakdown tb;
  // Every rank's scheduler runs in its own process: the step waits for the slowest.
  double sched_s = 0;
  for (std::size_t r = 0; r < m_ranks.size(); ++r) {
    const SchedulerCpu c =
        scheduler_cpu(sv, plans[r], m_ranks[r].sched->waiting_front(), m_ranks[r].sched->running(),
                      m_spec.model.num_layers, false);
    sched_s = std::max(sched_s, c.overhead_s + c.lookup_s + c.meta_s);
  }
  wait_s(sched_s);
  tb.step_overhead_s += now_s() - t0;
  const RecomputeOf none = [](const Sequence&) { return std::int64_t{0}; };
  std::vector<StepWork> work;
  std::vector<std::vector<SeqSlice>> batches;
  for (const StepPlan& p : plans) {
    work.push_back(plan_step_work(p, none));
    batches.push_back(work.back().slices);
    for (const StepItem& it : p.items) ++m_live.at(it.seq->req.id).steps;
  }
  // Loads: each rank's newly admitted requests, every GPU of the rank (each stage its layers),
  // all ranks at once; the step computes when the last byte is in (lockstep).
  const double t_load = now_s();
  CopyGroup loads;
  std::vector<std::pair<int, std::int64_t>> who;  // per copy: replica GPU, DMA count
  for (std::size_t r = 0; r < m_ranks.size(); ++r) {
    if (work[r].load.empty()) continue;
    const LoadSplit ls = split_loads(work[r].load, none, m_chunk_tokens, sv.block_tokens, nullptr);
    for (std::size_t i = 0; i < work[r].load.size(); ++i)
      m_live.at(work[r].load[i]->req.id).link_tokens = ls.seq_link_tokens[i];
    if (ls.link_tokens > 0)
      start_rank_copies(loads, who, r, ls.link_tokens, ls.link_chunks, Direction::H2D);
  }
  double step_loaded_bytes = 0;
  // rs is complete (its addresses no longer move): start every copy, wait for the last.
  for (std::size_t k = 0; k < loads.rs.size(); ++k) {
    step_loaded_bytes += loads.rs[k].bytes;
    m_dma[static_cast<std::size_t>(who[k].first)]->start(loads.rs[k], who[k].second, loads.g);
  }
  if (!loads.rs.empty() && !loads.g.finished) sc_core::wait(loads.g.done);
  const double load_s = now_s() - t_load;
  tb.load_link_s += load_s;
  m_stats.loaded_bytes_gpu += step_loaded_bytes / m_L.gpus;
  if (load_s > 0) m_stats.link_busy_s += load_s;
  for (std::size_t r = 0; r < m_ranks.size(); ++r)
    for (Sequence* s : work[r].load) m_live.at(s->req.id).load_s = load_s;
  // The lockstep forward pass (serving/replica_step).
  const ReplicaStepCost cost = replica_step_cost(m_spec, m_L, batches);
  const double t_c = now_s();
  double a2a_s = cost.dispatch_s + cost.combine_s;
  if (!m_peer_fabric) {
    wait_s(cost.step_s);
  } else {
    a2a_s = 0;
    for (int s = 0; s < m_L.pp; ++s) {
      const std::size_t si = static_cast<std::size_t>(s);
      wait_s(cost.stage_local_s[si]);
      const int n_moe = cost.stage_moe_layers[si];
      const bool ep = m_L.p.ep > 1 && n_moe > 0 && !cost.layer_pair_dispatch_bytes.empty();
      double t = now_s();
      if (ep)
        peer_phase(s, cost.layer_pair_dispatch_bytes, n_moe, false, cost.dispatch_latency_s);
      else
        wait_s(cost.stage_dispatch_s[si]);
      a2a_s += now_s() - t;
      wait_s(cost.stage_expert_s[si]);
      t = now_s();
      if (ep)
        peer_phase(s, cost.layer_pair_dispatch_bytes,
                   n_moe * m_L.cost.combine_bytes_per_value / m_L.cost.dispatch_bytes_per_value,
                   true, cost.combine_latency_s, n_moe);
      else
        wait_s(cost.stage_combine_s[si]);
      a2a_s += now_s() - t;
      if (s + 1 < m_L.pp) {  // activations: GPU i of this stage to GPU i of the next
        t = now_s();
        CopyGroup act;
        act.rs.resize(static_cast<std::size_t>(m_L.stage_gpus));
        for (int i = 0; i < m_L.stage_gpus; ++i) {
          TransferRequest& q = act.rs[static_cast<std::size_t>(i)];
          q.gpu = fabric_gpu(s * m_L.stage_gpus + i);
          q.dir = Direction::D2H;
          q.path = CopyPath::Dma;
          q.endpoint = Endpoint::PeerGpu;
          q.endpoint_index = fabric_gpu((s + 1) * m_L.stage_gpus + i);
          q.bytes = cost.pp_bytes_per_gpu;
        }
        for (TransferRequest& q : act.rs) m_link->start(q, act.g);
        m_rs.peer_transfers += static_cast<double>(act.rs.size());
        if (!act.g.finished) sc_core::wait(act.g.done);
        m_rs.pp_s += now_s() - t;
      }
    }
  }
  const double step_compute_s = now_s() - t_c;  // the forward pass with its a2a, as simulated
  tb.compute_s += step_compute_s;
  m_stats.compute_busy_s += step_compute_s;
  m_stats.flops += cost.flops;
  m_stats.hbm_bytes += cost.hbm_bytes;
  for (std::size_t r = 0; r < m_ranks.size(); ++r)
    for (const StepItem& it : plans[r].items) m_live.at(it.seq->req.id).compute_s += step_compute_s;
  double tokens = 0, max_tokens = 0;
  for (double t : cost.rank_tokens) {
    tokens += t;
    max_tokens = std::max(max_tokens, t);
    if (t <= 0) m_rs.dummy_rank_steps += 1;
  }
  m_rs.rank_tokens += tokens;
  m_rs.max_rank_tokens += max_tokens;
  m_rs.rank_idle_s += cost.rank_idle_s;
  m_rs.local_s += cost.local_s;
  m_rs.expert_s += cost.expert_s;
  m_rs.a2a_s += a2a_s;
  m_rs.a2a_port_bound_s += cost.dispatch_s + cost.combine_s;
  if (!m_peer_fabric) m_rs.pp_s += cost.pp_s;
  m_rs.a2a_nvlink_bytes += cost.a2a_nvlink_bytes;
  m_rs.a2a_nic_bytes += cost.a2a_nic_bytes;
  m_rs.pp_bytes += cost.pp_bytes;
  // Stores: new full chunks of the finishing requests into their rank's tier (blocking).
  const double t_store = now_s();
  if (sv.effective_store() != StoreMode::None) {
    CopyGroup stores;
    std::vector<std::pair<int, std::int64_t>> who;
    for (std::size_t r = 0; r < m_ranks.size(); ++r) {
      std::int64_t n = 0;
      for (const Sequence* s : work[r].done) {
        const std::size_t k = m_ranks[r].tier->insert(chunk_keys(s->req, m_chunk_tokens));
        n += static_cast<std::int64_t>(k);
        m_live.at(s->req.id).stored_tokens = static_cast<double>(k) * m_chunk_tokens;
      }
      if (n > 0)
        start_rank_copies(stores, who, r, static_cast<double>(n) * m_chunk_tokens, n,
                          Direction::D2H);
    }
    for (std::size_t k = 0; k < stores.rs.size(); ++k) {
      m_stats.stored_bytes_gpu += stores.rs[k].bytes / m_L.gpus;
      m_dma[static_cast<std::size_t>(who[k].first)]->start(stores.rs[k], who[k].second, stores.g);
    }
    if (!stores.rs.empty() && !stores.g.finished) sc_core::wait(stores.g.done);
  }
  tb.store_s += now_s() - t_store;
  m_stats.run_time += tb;
  for (std::size_t r = 0; r < m_ranks.size(); ++r) {
    for (const StepItem& it : plans[r].items) m_live.at(it.seq->req.id).time += tb;
    if (!plans[r].items.empty()) m_ranks[r].sched->complete(plans[r], now_s(), *m_ranks[r].kv);
  }
  for (Rank& rk : m_ranks)
    for (Sequence* s : rk.sched->take_finished()) finish(s);
  if (m_sinks.summary) {
    StepRecord rec;
    rec.start_s = t0;
    rec.end_s = now_s();
    for (const StepPlan& p : plans) {
      rec.tokens += p.tokens;
      rec.seqs += static_cast<int>(p.items.size());
    }
    rec.budget = static_cast<std::int64_t>(sv.max_num_batched_tokens) * m_L.dp;
    double used = 0;
    for (const Rank& rk : m_ranks) used += rk.kv->utilization();
    rec.vram_used_fraction = used / m_L.dp;
    rec.load_s = load_s;
    rec.compute_s = step_compute_s;
    m_sinks.summary->add_step(rec);
  }
}

void ReplicaEngine::peer_phase(int stage, const std::vector<double>& layer_pairs, double layers,
                               bool combine, double latency_s, int moe_layers) {
  // One aggregated transfer per (sender, receiver) pair for all the stage's MoE layers of the
  // step (the fabric charges one latency; the other layers' latencies are waited after).
  const int S = m_L.stage_gpus;
  CopyGroup c;
  for (int a = 0; a < S; ++a)
    for (int b = 0; b < S; ++b) {
      const double bytes = layer_pairs[static_cast<std::size_t>(a * S + b)] * layers;
      if (!(bytes > 0)) continue;
      c.rs.emplace_back();
      TransferRequest& q = c.rs.back();
      // Dispatch: a sends to b; combine: the expert outputs come back, b to a.
      const int from = combine ? b : a, to = combine ? a : b;
      q.gpu = fabric_gpu(stage * S + from);
      q.dir = Direction::D2H;  // gpu -> endpoint
      q.path = CopyPath::Dma;
      q.endpoint = Endpoint::PeerGpu;
      q.endpoint_index = fabric_gpu(stage * S + to);
      q.bytes = bytes;
    }
  for (TransferRequest& q : c.rs) m_link->start(q, c.g);
  m_rs.peer_transfers += static_cast<double>(c.rs.size());
  if (!c.rs.empty() && !c.g.finished) sc_core::wait(c.g.done);
  const int n = moe_layers > 0 ? moe_layers : static_cast<int>(std::lround(layers));
  wait_s((n - 1) * latency_s);
}

void ReplicaEngine::finish(Sequence* s) {
  const std::uint64_t id = s->req.id;
  if (s->rejected) {
    ++m_stats.rejected;
    m_live.erase(id);
    return;
  }
  if (m_spec.check && now_s() < m_last_finish_s)
    throw std::logic_error("invariant violated: simulated time went back");
  m_last_finish_s = now_s();
  const RequestRecord rec =
      make_request_record(m_live.at(id), now_s(), m_bkv_rank_gpu, m_L.tp, "replica_dma");
  if (m_sinks.requests) m_sinks.requests->write(rec);
  if (m_sinks.summary) m_sinks.summary->add_request(rec);
  if (m_sinks.on_finish) m_sinks.on_finish(rec);
  m_live.erase(id);
  ++m_stats.finished;
}

void ReplicaEngine::check_end() const {
  if (m_stats.finished + m_stats.rejected != m_stats.arrived || !m_live.empty())
    throw std::logic_error("invariant violated: " + std::to_string(m_stats.arrived) + " arrived, " +
                           std::to_string(m_stats.finished) + " finished, " +
                           std::to_string(m_stats.rejected) + " rejected");
  m_link->check_conservation();
}

SummaryBuilder::Totals ReplicaEngine::totals(double wall_time_s) const {
  EngineRunFacts f;
  f.simulated_time_s = now_s();
  f.wall_time_s = wall_time_s;
  f.link_capacity_Bps = m_link_capacity_Bps;
  f.kv_bytes_per_token_gpu = m_bkv_rank_gpu;
  f.kernel_events = sc_core::sc_delta_count();
  SummaryBuilder::Totals t = engine_totals(m_stats, m_spec, *m_ranks[0].tier, f);
  // engine_totals counts one TP group of serving.tp GPUs; the replica has L.gpus.
  t.gpu_energy_j *= static_cast<double>(m_L.gpus) / m_spec.serving.tp;
  t.gpus = m_L.gpus;
  // Every rank's tier, summed (rank 0's is in already).
  for (std::size_t r = 1; r < m_ranks.size(); ++r) {
    const KvTier& k = *m_ranks[r].tier;
    t.tier_hit_chunks += static_cast<double>(k.hit_chunks());
    t.tier_miss_chunks += static_cast<double>(k.miss_chunks());
    t.tier_lookups += static_cast<double>(k.lookups());
    t.tier_stored_chunks += static_cast<double>(k.stored_chunks());
    t.tier_evicted_chunks += static_cast<double>(k.evicted_chunks());
    t.tier_restored_chunks += static_cast<double>(k.restored_chunks());
    t.tier_dropped_chunks += static_cast<double>(k.dropped_chunks());
    t.tier_warm_chunks += static_cast<double>(k.warm_chunks());
    t.tier_capacity_bytes += k.capacity_bytes();
    t.tier_working_set_bytes += static_cast<double>(k.distinct_chunks()) * k.chunk_bytes();
  }
  // The layout's own figures (docs/metrics.md "Replica figures").
  const double steps = static_cast<double>(m_stats.steps);
  const double nan = std::nan("");
  const double busy = m_rs.local_s + m_rs.expert_s + m_rs.a2a_s + m_rs.pp_s;
  t.extra = {
      {"dp_ranks", m_L.dp},
      {"replica_gpus", m_L.gpus},
      {"dp_mean_rank_tokens_per_step", steps > 0 ? m_rs.rank_tokens / steps / m_L.dp : nan},
      {"dp_max_rank_tokens_per_step", steps > 0 ? m_rs.max_rank_tokens / steps : nan},
      {"dp_rank_imbalance",
       m_rs.rank_tokens > 0 ? m_rs.max_rank_tokens * m_L.dp / m_rs.rank_tokens : nan},
      {"dp_rank_idle_s", m_rs.rank_idle_s},
      {"dp_dummy_rank_steps", m_rs.dummy_rank_steps},
      {"ep_a2a_s", m_rs.a2a_s},
      {"ep_a2a_time_share", busy > 0 ? m_rs.a2a_s / busy : nan},
      {"ep_a2a_port_bound_s", m_rs.a2a_port_bound_s},
      {"peer_gpu_transfers", m_rs.peer_transfers},
      {"ep_expert_s", m_rs.expert_s},
      {"pp_activation_s", m_rs.pp_s},
      {"ep_nvlink_bytes", m_rs.a2a_nvlink_bytes},
      {"ep_nic_bytes", m_rs.a2a_nic_bytes},
      {"pp_bytes", m_rs.pp_bytes},
  };
  return t;
}

SummaryBuilder::Totals run_replica_serving(const RunSpec& spec, WorkloadSource& source,
                                           EngineSinks sinks) {
  std::unique_ptr<ReplicaEngine> engine;
  const auto t0 = std::chrono::steady_clock::now();
  run_simulation([&] { engine = std::make_unique<ReplicaEngine>("replica", spec, source, sinks); });
  if (spec.check) engine->check_end();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return engine->totals(wall);
}

}  // namespace kappasim
