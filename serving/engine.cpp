#include "serving/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "core/sim_runner.hpp"
#include "serving/load_paths/registry.hpp"
#include "serving/sim_clock.hpp"
#include "serving/step_group.hpp"
#include "systems/link_backend.hpp"

namespace kappasim {

using sc_core::SC_ZERO_TIME;
using sim_clock::now_s;

namespace {
// The replica's layout: beyond TP, make_replica_layout's; plain TP, one rank of serving.tp GPUs
// on one node.
ReplicaLayout layout_of(const RunSpec& spec) {
  spec.system.gpu.require_sim("system.gpu");
  if (spec.serving.parallelism.beyond_tp()) return make_replica_layout(spec);
  ReplicaLayout L;
  L.p.tp = spec.serving.tp;
  L.tp = L.stage_gpus = L.gpus = spec.serving.tp;
  L.gpus_per_node = spec.system.gpus;
  return L;
}
}  // namespace

ServingEngine::ServingEngine(const sc_core::sc_module_name& name, const RunSpec& spec,
                             WorkloadSource& source, EngineSinks sinks)
    : sc_core::sc_module(name),
      m_spec(spec),
      m_sinks(std::move(sinks)),
      m_recompute(m_spec),
      m_layout(layout_of(m_spec)),
      m_kv(served_kv(m_spec.model, m_spec.serving, m_layout.tp)),
      m_ledger(static_cast<std::size_t>(m_layout.dp)),
      m_view(m_spec, m_ranks, m_ledger) {
  const ServingSpec& sv = m_spec.serving;
  if (!stack_supports(sv.stack, sv.load_path))
    throw InputError("serving.load_path: not a load path of stack '" + sv.stack.name +
                     "' (it supports: " + stack_load_paths(sv.stack) + ")");
  m_load_path = make_load_path(sv.load_path.name);
  m_tier_chunk = sv.tier_chunk_tokens();
  m_load_path_name = m_load_path->name();
  KvPull::check_async(m_spec, *m_load_path);
  // The link back end (serving.link_fidelity, systems/link_backend's registry) over every node
  // of the replica: each node its own host DRAM, sockets and host links, NVLink and NIC ports
  // per GPU. A system without nic_bandwidth takes the layout's (ConnectX-7 by default).
  SystemSpec fabric = m_spec.system;
  if (sv.parallelism.beyond_tp() && !fabric.nic_Bps) fabric.nic_Bps = m_layout.nic_Bps;
  m_link = make_link_backend(sim_clock::link_fidelity_name(sv.link_fidelity), "fabric", fabric,
                             m_layout.p.nodes);
  // Issue 25: a CXL pool; a cluster's is shared with its other nodes' fabrics.
  if (m_spec.system.has_cxl_pool()) {
    if (!m_sinks.cxl_pool) {
      m_own_pool =
          std::make_unique<CxlPoolShare>(m_spec.system.cxl_pool, sv.tiers.cxl_capacity_bytes);
    } else {
      m_sinks.cxl_pool->attach(*m_link, std::string(basename()));
    }
  }
  make_gpus();
  make_ranks();
  m_pull = std::make_unique<KvPull>(m_ranks.size(), m_spec, m_sinks.role, m_sinks.handoff,
                                    KvRankLayout{m_layout.tp, m_layout.pp}, m_kv.unit_per_gpu,
                                    m_kv.hybrid, m_sinks.on_pulled, m_sinks.send_kv,
                                    m_sinks.source_layout, m_work);
  // P/D push_layer (docs/disaggregation.md): a prefill engine sends each layer as it is computed;
  // a decode engine's "pull" waits for the last layer's arrival.
  if (m_sinks.handoff.send == HandoffSend::PushLayer) {
    if (m_sinks.role == EngineRole::Prefill)
      m_pull->push =
          std::make_unique<KvPush>(m_spec, m_sinks.handoff, KvRankLayout{m_layout.tp, m_layout.pp},
                                   m_kv.unit_per_gpu, m_sinks.receive_kv, m_sinks.on_pushed);
    if (m_sinks.role == EngineRole::Decode) m_pull->wait_pushed = m_sinks.wait_pushed;
  }
  std::vector<int> fabric_gpus;
  for (const auto& u : m_gpus) fabric_gpus.push_back(u->fabric);
  m_trace = std::make_unique<EngineTrace>(m_sinks.trace, fabric_gpus, m_spec.check);
  make_groups();
  make_stores();
  m_arrivals = std::make_unique<Arrivals>(
      m_spec, source, m_sinks.role, m_sinks.warm_source, m_ranks, m_view,
      [this](const Request& r, std::size_t rank, double fe_in) { return admit(r, rank, fe_in); },
      m_work);
  sc_core::sc_spawn([a = m_arrivals.get()] { a->run(); });
  for (auto& g : m_groups) sc_core::sc_spawn([gp = g.get()] { gp->steps(); });
}

ServingEngine::~ServingEngine() = default;

void ServingEngine::make_gpus() {
  // Every GPU's components, all issuing into the back end. GPU g of the replica (stage-major:
  // stage s, rank r, TP position j at s x stage_gpus + r x tp + j) is GPU g mod gpus_per_node of
  // node g / gpus_per_node.
  const ReplicaLayout& L = m_layout;
  const ServingSpec& sv = m_spec.serving;
  const GpuSpec& gpu = m_spec.system.gpu;
  const bool kernel = m_load_path->copy_path() == CopyPath::Kernel;
  for (int g = 0; g < L.gpus; ++g) {
    auto u = std::make_unique<GpuUnit>();
    const std::string k = std::to_string(g);
    u->fabric = g / L.gpus_per_node * m_spec.system.gpus + g % L.gpus_per_node;
    u->compute = std::make_unique<GpuCompute>(("gpu" + k).c_str(), gpu, sv.compute_dtype);
    u->compute->set_launch(sv.stack.launch);
    u->compute->attach_link(*m_link, u->fabric);
    u->dma = std::make_unique<CopyEngine>(("dma" + k).c_str(), gpu, u->fabric);
    u->dma->connect(*m_link);
    if (kernel) {
      u->kernel =
          std::make_unique<CopyKernel>(("copy_kernel" + k).c_str(), gpu, sv.stack.copy_kernel);
      u->kernel->connect(*m_link);
    }
    const std::size_t stage = static_cast<std::size_t>(g / L.stage_gpus);
    if (L.pp > 1)  // hybrid: its layer kinds' share of a stored chunk (issue 25, served_kv)
      u->kv_share = m_kv.hybrid ? m_kv.stage_share.at(stage)
                                : L.cost.stages[stage].kv_bytes_rank / m_kv.unit_per_gpu;
    m_gpus.push_back(std::move(u));
  }
}

void ServingEngine::make_ranks() {
  // The ranks' paged KV pools: gpu_memory_utilization x HBM less the weights per GPU, the
  // activation reserve and a GPU-side buffer of kind hbm (carved out of the pool).
  const ReplicaLayout& L = m_layout;
  const ServingSpec& sv = m_spec.serving;
  const GpuSpec& gpu = m_spec.system.gpu;
  double carve = 0;
  if (sv.kv_buffer.enabled() && sv.kv_buffer.kind == KvBufferKind::Hbm)
    carve = sv.kv_buffer.capacity_bytes;
  std::int64_t blocks = 0;
  if (sv.parallelism.beyond_tp()) {
    blocks = replica_kv_blocks(m_spec, L, carve);
  } else {
    double v_eff =
        effective_kv_bytes_per_gpu(m_spec.model, gpu, L.tp, weight_dtype_for(sv.compute_dtype),
                                   sv.activation_reserve_bytes, sv.gpu_memory_utilization);
    if (carve >= v_eff)
      throw InputError("serving.kv_buffer.capacity: " + format_quantity(carve, dim::bytes) +
                       " of kind hbm leaves no paged-KV pool (V_eff per GPU is " +
                       format_quantity(v_eff, dim::bytes) + ")");
    v_eff -= carve;
    blocks = kv_blocks_for(v_eff, sv.block_tokens, m_kv.unit_per_gpu);
  }
  for (int r = 0; r < L.dp; ++r) {
    auto rank = std::make_unique<Rank>();
    rank->index = r;
    std::vector<GpuUnit*> units;
    for (int s = 0; s < L.pp; ++s)
      for (int j = 0; j < L.tp; ++j)
        units.push_back(m_gpus[static_cast<std::size_t>(s * L.stage_gpus + r * L.tp + j)].get());
    rank->gpus = std::make_unique<RankGpus>(std::move(units), L.tp, gpu.sm_count);
    SchedulerConfig sched = sv.scheduler_config();
    sched.max_batches = L.pp;  // a micro-batch per pipeline stage in flight (StepGroup)
    rank->sched = std::make_unique<Scheduler>(sched);
    // A compact arrival's state back in the ledger when its scheduler needs the sequence.
    rank->sched->set_builder([this](const ArrivedRequest& rec) {
      RequestState& st = m_ledger.unpark(rec);
      unpack_arrival(rec, st);
      return st.seq.get();
    });
    rank->kv = std::make_unique<PagedKv>(blocks, sv.block_tokens);
    if (m_kv.pool) rank->kv->set_hybrid(*m_kv.pool);
    if (sv.prefix_caching) rank->kv->enable_prefix_cache();
    m_ranks.push_back(std::move(rank));
  }
  m_layout_stats.rank_tokens.assign(m_ranks.size(), 0);
}

void ServingEngine::make_groups() {
  // Step groups: a MoE model's DP ranks in lockstep; otherwise every rank steps alone, by the
  // TP step model unless it has pipeline stages or expert parallelism.
  const ReplicaLayout& L = m_layout;
  const bool moe = m_spec.model.mlp.type == MlpType::Moe;
  const double all = static_cast<double>(L.gpus);
  const StepGroupEnv env{m_spec,
                         m_kv,
                         m_layout,
                         *m_link,
                         *m_load_path,
                         m_ledger,
                         m_layout_stats,
                         *m_trace,
                         *m_pull,
                         m_sinks.summary,
                         m_work,
                         [this] { return m_arrivals->done(); },
                         [this](Sequence* s) { finish(s); },
                         m_pull->push.get(),
                         DecodeStores{m_sinks.role == EngineRole::Decode, m_sinks.decode_tier,
                                      m_sinks.decode_tier_prompt}};
  if (moe && L.dp > 1) {
    std::vector<Rank*> rs;
    std::vector<const RankGpus*> gs;
    for (auto& r : m_ranks) {
      rs.push_back(r.get());
      gs.push_back(r->gpus.get());
    }
    m_groups.push_back(std::make_unique<StepGroup>(
        env, rs, make_layout_step(m_spec, L, gs, *m_link, m_layout_stats), 1.0));
    return;
  }
  ReplicaLayout one = L;  // a rank alone
  one.dp = one.p.dp_attention = 1;
  one.stage_gpus = L.tp;
  one.gpus = L.tp * L.pp;
  for (auto& r : m_ranks) {
    std::unique_ptr<StepModel> model =
        L.pp == 1 && L.p.ep == 1
            ? make_tp_step(m_spec, *r->gpus, m_layout_stats)
            : make_layout_step(m_spec, one, {r->gpus.get()}, *m_link, m_layout_stats);
    const double share = L.dp == 1 ? 1.0 : one.gpus / all;
    m_groups.push_back(
        std::make_unique<StepGroup>(env, std::vector<Rank*>{r.get()}, std::move(model), share));
  }
}

void ServingEngine::make_stores() {
  // Every rank's KV store (its own LMCache instance and pinned pool): a given DRAM capacity is
  // the replica's, split evenly; else the stack's pool per GPU of the rank.
  const ReplicaLayout& L = m_layout;
  const ServingSpec& sv = m_spec.serving;
  const double dram = sv.tier_capacity_bytes
                          ? *sv.tier_capacity_bytes / L.dp
                          : default_tier_capacity(sv.stack, m_spec.system, L.tp * L.pp).bytes;
  KvStore::Hooks hooks;
  hooks.stored = [this](const CopyGroup& c, double start_s) { m_trace->store(c, start_s); };
  hooks.ready = [this](RequestState& st) {  // its prefetch landed: into its rank's queue
    try {
      m_ranks[static_cast<std::size_t>(st.rank)]->sched->enqueue(st.seq.get(), now_s());
    } catch (const InputError&) {
      sim_fail(std::current_exception());
    }
    m_work.notify(SC_ZERO_TIME);
  };
  CxlPoolShare* pool = m_sinks.cxl_pool ? m_sinks.cxl_pool : m_own_pool.get();
  for (auto& g : m_groups)
    for (Rank* r : g->ranks) {
      KvTier* shared = nullptr;  // issue 25: the pooled CXL level, one for every rank and node
      if (pool && sv.tiers.cxl_capacity_bytes > 0)
        shared = &pool->tier(sv.tier_chunk_tokens(), r->gpus->tp() * m_kv.store_per_gpu,
                             std::string(basename()));
      r->store = std::make_unique<KvStore>(m_spec, *r->gpus, *m_link, m_kv.store_per_gpu, dram,
                                           g->stats, g->store_weight(), 1.0 / g->ranks.size(),
                                           L.dp == 1 ? 1.0 : 1.0 / L.dp, hooks, shared);
      if (m_kv.hybrid) r->store->set_hybrid(*m_kv.hybrid);
    }
  for (auto& g : m_groups) g->buffer_Bps = g->ranks.front()->store->buffer_Bps();
  // P/D, a decode engine with its tier: preempted requests look their KV up there.
  if (m_sinks.role == EngineRole::Decode && m_sinks.decode_tier)
    for (std::size_t r = 0; r < m_ranks.size(); ++r)
      m_ranks[r]->sched->set_relookup([this, r](Sequence& s) { relookup(s, r); });
}

void ServingEngine::relookup(Sequence& s, std::size_t ri) {
  // Its preemption discarded its KV and set it to prefill its prompt and every token generated so
  // far (Scheduler::preempt_last); its connectors are asked again for those tokens (vLLM:
  // get_num_new_matched_tokens at its readmission; NIXL answers 0 after its one transfer,
  // "Only trigger 1 KV transfer per request"; LMCache looks up request.all_token_ids, "all token
  // ids covers the preemption case"). The leading chunks found load, as any tier hit of the
  // stack (in the step or asynchronously); the rest, the last token at least, is computed.
  const int chunk = m_spec.serving.tier_chunk_tokens();
  RequestState& st = m_ledger.at(s.req.id);
  const std::int64_t tokens = s.compute_tokens;  // the prompt and the tokens generated
  if (s.cached_tokens != 0 || s.hbm_hit_tokens != 0 || s.recompute_tokens != 0 || s.computed != 0 ||
      tokens != s.req.prompt_tokens() + s.generated)
    throw std::logic_error("relookup: request " + std::to_string(s.req.id) +
                           " is not a preempted sequence prefilling its whole KV again");
  st.chunk_levels.clear();  // a lookup before this one's levels
  const std::int64_t found = static_cast<std::int64_t>(
      m_ranks.at(ri)->store->lookup(st, chunk_keys(s.req, chunk, tokens)));
  const std::int64_t hit = std::min(found * chunk, tokens - 1);
  ++m_relookups;
  m_reloaded_tokens += std::max<std::int64_t>(0, hit);
  if (hit <= 0) return;
  s.cached_tokens = s.tier_cached = hit;
  s.compute_tokens = tokens - hit;
  s.kv_resident = false;
  s.async_kv = StepGroup::loads_async(m_spec.serving, st);
}

std::uint64_t ServingEngine::copy_kernels_started() const {
  std::uint64_t n = 0;
  for (const auto& u : m_gpus)
    if (u->kernel) n += u->kernel->kernels();
  return n;
}

bool ServingEngine::admit(const Request& r, std::size_t ri, double fe_in) {
  const ServingSpec& sv = m_spec.serving;
  const int chunk = m_tier_chunk;
  std::vector<std::uint64_t>& keys = m_admit_keys;
  chunk_keys(r, chunk, -1, keys);
  Rank& rank = *m_ranks[ri];
  // Staged, not yet in the ledger's table: a fresh arrival is parked at once (below).
  RequestState& st = m_ledger.stage(r.id, static_cast<int>(ri));
  if (sv.end_to_end()) {
    // Its handling in the front end, and the output path its first token takes back.
    st.front_end_in_s = fe_in;
    st.front_end_out_s = front_end_out_s(sv.stack);
  }
  const EngineRole role = m_sinks.role;
  const bool decode_role = role == EngineRole::Decode;
  // A decode instance pulls the prompt's KV from the prefill instance instead of looking it up.
  const std::int64_t cached = decode_role
                                  ? r.prompt_tokens() - 1
                                  : static_cast<std::int64_t>(rank.store->lookup(st, keys)) * chunk;
  // make_sequence keeps at least one prompt token to compute (its logits), as vLLM does.
  m_ledger.seat(st, make_sequence(r, cached));
  // Prefill only (the κ regime) unless serving.decode: then the workload's output length. P/D:
  // the prefill instance computes the first token; the decode instance the whole output (vLLM's
  // NixlConnector recomputes the prompt's last token there).
  if ((sv.decode && role == EngineRole::Mixed) || decode_role)
    st.seq->output_tokens = std::max<std::int64_t>(1, r.output_tokens);
  st.seq->async_kv = st.seq->pd_handoff = decode_role;
  st.seq->hold_kv = role == EngineRole::Prefill && r.output_tokens > 1;
  // Partial recompute: the leading R cached tokens are prefilled again (they need no earlier
  // KV); the other K - R are loaded. Recomputed tokens count as computed.
  const std::int64_t R =
      decode_role ? 0 : m_recompute(st.seq->cached_tokens, st.seq->compute_tokens);
  if (R > 0) {
    set_tier_split(*st.seq, R);
    st.recompute_tokens = R;
  }
  // a preemption may change the sequence's; a pulled prompt's tokens are not the tier's
  st.cached_tokens = decode_role ? 0 : st.seq->cached_tokens;
  st.compute_tokens = st.seq->compute_tokens;
  // serving.stack.load: async (vLLM's OffloadingConnector): its cached KV is loaded outside
  // the steps, after admission, while other requests' steps run.
  if (!decode_role) st.seq->async_kv = StepGroup::loads_async(sv, st);
  ++m_stats.arrived;
  // A lookup that found chunks below DRAM: a prefetch may hold the state (by its address, which
  // commit() keeps); such a state is never packed.
  if (!st.chunk_levels.empty()) m_ledger.commit();
  // A prefetch may hold the request out of the queue until its chunks are in DRAM. A request
  // that cannot fit one step (chunked prefill off, budget too small) is an input error found
  // only here (its cached tokens depend on the tier): reported through sim_fail (an exception
  // leaving a process would become SystemC's internal error); the stream ends.
  if (decode_role || !rank.store->prefetch(st, keys)) {
    try {
      rank.sched->enqueue(st.seq.get(), now_s());
      // Waiting as a compact record until its scheduler needs the sequence (issue 24: the
      // queue's memory); its state and sequence are built back then, equal to these.
      if (const std::optional<ArrivedRequest> rec = pack_arrival(st)) {
        rank.sched->compact_back(st.seq.get(), *rec);
        m_ledger.park(r.id);
      } else {
        if (m_ledger.staged()) m_ledger.commit();
        st.tier_keys.swap(keys);  // kept whole: its store needs them (KvStore::keys_of)
      }
    } catch (const InputError&) {
      m_ledger.close(r.id);
      --m_stats.arrived;
      sim_fail(std::current_exception());
      return false;
    }
  }
  if (m_ledger.staged()) m_ledger.commit();  // (held by its prefetch: committed above)
  m_work.notify(SC_ZERO_TIME);
  return true;
}

void ServingEngine::finish(Sequence* s) {
  const std::uint64_t id = s->req.id;
  if (m_spec.check) m_check.finished(*s, now_s());
  RequestState& st = m_ledger.at(id);
  m_ranks[static_cast<std::size_t>(st.rank)]->store->finished(st);
  if (s->rejected) {  // the prompt needs more KV blocks than the whole pool (vLLM rejects it)
    ++m_stats.rejected;
    m_ledger.close(id);  // the request's whole state, in one place
    if (m_sinks.on_reject) m_sinks.on_reject(id);
    m_arrivals->finished();  // its client (closed loop) sends its next request
    return;
  }
  RequestRecord& rec = m_record;
  make_request_record(rec, st, now_s(), m_kv.unit_per_gpu, m_layout.tp, m_load_path_name,
                      m_kv.store_per_gpu, m_kv.replication);
  rec.meets_slo = m_spec.serving.slo.met(rec.ttft_s, rec.tpot_s);
  if (m_sinks.requests) m_sinks.requests->write(rec);
  if (m_sinks.summary) m_sinks.summary->add_request(rec);
  if (m_sinks.on_finish) m_sinks.on_finish(rec);
  m_trace->request(id, rec.arrival_s, now_s());
  m_ledger.close(id);  // the request's whole state, in one place
  ++m_stats.finished;
  m_arrivals->finished();  // its client (closed loop) sends its next request
}

void ServingEngine::release_kv(std::uint64_t id) {
  for (auto& rank : m_ranks)
    if (rank->kv->holds(id)) {
      rank->kv->release(id);
      m_work.notify(SC_ZERO_TIME);  // blocks freed: a waiting request may fit
      return;
    }
  throw std::logic_error("release_kv: request " + std::to_string(id) + " holds no KV blocks");
}

std::shared_ptr<CopyGroup> ServingEngine::send_kv(std::uint64_t id,
                                                  const std::vector<double>& gpu_bytes,
                                                  double rate_cap_Bps, int nvlink_base) {
  for (auto& rank : m_ranks)
    if (rank->kv->holds(id))
      return KvPull::send(*rank, m_spec.system.gpus, gpu_bytes, rate_cap_Bps, nvlink_base);
  throw std::logic_error("send_kv: request " + std::to_string(id) + " holds no KV blocks");
}

std::shared_ptr<CopyGroup> ServingEngine::receive_kv(const std::vector<double>& gpu_bytes,
                                                     double rate_cap_Bps) {
  // One rank (ClusterRunSpec::validate refuses push_layer to decode groups of several).
  return KvPush::receive(*m_ranks.at(0), gpu_bytes, rate_cap_Bps);
}

void ServingEngine::check_end() const { m_check.end(m_stats, m_ledger, m_ranks, *m_link, now_s()); }
SummaryBuilder::Totals ServingEngine::totals(double wall_time_s) const {
  const ReplicaLayout& L = m_layout;
  EngineStats s = m_stats;
  for (const auto& g : m_groups) {
    if (m_groups.size() > 1) {
      add_group_stats(s, g->stats, g->gpu_share);
      continue;
    }
    const EngineStats counts = s;  // one group: its figures are the engine's
    s = g->stats;
    s.arrived = counts.arrived, s.finished = counts.finished, s.rejected = counts.rejected;
  }
  EngineRunFacts f;
  f.gpus = L.gpus;
  f.kv_copies = L.stage_gpus;
  f.simulated_time_s = now_s();
  f.wall_time_s = wall_time_s;
  // The run's link capacity figure, from the back end that carries the copies.
  f.link_capacity_Bps = m_link->capacity_Bps(0, Direction::H2D, m_load_path->copy_path());
  f.kv_bytes_per_token_gpu = m_kv.unit_per_gpu / L.pp / m_kv.replication;  // over the host link
  f.kernel_events = sc_core::sc_delta_count();  // SystemC delta cycles of the whole run
  SummaryBuilder::Totals t = engine_totals(s, m_spec, store().dram(), f, &store().hierarchy());
  t.decode = m_spec.serving.decode;
  t.end_to_end = m_spec.serving.end_to_end();
  t.concurrency = static_cast<double>(m_spec.workload.concurrency);
  t.think_time_s = m_spec.workload.concurrency > 0 ? m_spec.workload.think_time_s : 0;
  t.slo_set = m_spec.serving.slo.any();
  t.prefix_cache = m_spec.serving.prefix_caching;
  for (const auto& rank : m_ranks)
    t.prefix_cache_evicted_blocks += static_cast<double>(rank->kv->evicted_blocks());
  if (m_spec.serving.replicated_kv == ReplicatedKv::ShardAllgather) {  // issue 23 item 5
    t.kv_shard = true;
    t.kv_replication = m_kv.replication;
    t.kv_allgather_bytes_per_gpu = s.allgather_bytes_gpu;
    t.kv_allgather_s = s.allgather_s;
  }
  // Every other rank's tiers, added (rank 0's are in already).
  for (std::size_t r = 1; r < m_ranks.size(); ++r) {
    const KvStore& st = store(r);
    EngineStats none;
    none.tier_io.resize(s.tier_io.size());
    add_tier_counts(t, engine_totals(none, m_spec, st.dram(), f, &st.hierarchy()));
  }
  // A P/D decode engine without its tier (EngineSinks::decode_tier) runs no tier connector: its
  // KV store is never looked up or stored into, so it holds no tier capacity (docs/metrics.md,
  // tier_capacity_bytes).
  if (m_sinks.role == EngineRole::Decode && !m_sinks.decode_tier) t.tier_capacity_bytes = 0;
  if (!m_spec.serving.parallelism.beyond_tp()) return t;
  // Every rank's own KV store's hit rate: the lowest and the highest (issue 23 part 4).
  LayoutStats ls = m_layout_stats;
  for (const auto& rank : m_ranks) {
    const KvTier& d = rank->store->dram();
    const double looked = static_cast<double>(d.hit_chunks() + d.miss_chunks());
    if (!(looked > 0)) continue;
    const double rate = static_cast<double>(d.hit_chunks()) / looked;
    const bool first = std::isnan(ls.rank_hit_rate_min);
    ls.rank_hit_rate_min = first ? rate : std::min(ls.rank_hit_rate_min, rate);
    ls.rank_hit_rate_max = first ? rate : std::max(ls.rank_hit_rate_max, rate);
  }
  t.extra = layout_figures(ls, L);  // docs/metrics.md "Replica figures"
  return t;
}

SummaryBuilder::Totals run_serving(const RunSpec& spec, WorkloadSource& source, EngineSinks sinks) {
  std::unique_ptr<ServingEngine> engine;
  const auto t0 = std::chrono::steady_clock::now();
  run_simulation([&] {
    engine = std::make_unique<ServingEngine>("engine", spec, source, sinks);
    if (!spec.check) engine->unchecked();  // no check_end(): no conservation ledger to keep
  });
  if (spec.check) engine->check_end();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return engine->totals(wall);
}

}  // namespace kappasim
