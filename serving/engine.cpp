#include "serving/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/sim_runner.hpp"
#include "serving/cluster_spec.hpp"
#include "serving/load_paths/registry.hpp"
#include "serving/sim_clock.hpp"
#include "serving/step_group.hpp"
#include "systems/link_backend.hpp"

namespace kappasim {

using sc_core::SC_ZERO_TIME;
using sim_clock::now_s;
using sim_clock::wait_s;

namespace {
// ServingSpec::load_path's name: the load path registry's key (serving/load_paths).
std::string load_path_name(LoadPath p) {
  for (const auto& [name, v] : load_path_names())
    if (v == p) return name;
  return "?";
}

// Plain TP: one rank of serving.tp GPUs on one node.
ReplicaLayout tp_layout(const RunSpec& spec) {
  ReplicaLayout L;
  L.p.tp = spec.serving.tp;
  L.tp = L.stage_gpus = L.gpus = spec.serving.tp;
  L.gpus_per_node = spec.system.gpus;
  return L;
}

// The keys of a request's reusable prefix (its leading whole chunks inside prefix_tokens).
std::vector<std::uint64_t> prefix_keys(const Request& r, int chunk_tokens) {
  std::vector<std::uint64_t> keys = chunk_keys(r, chunk_tokens);
  keys.resize(
      std::min<std::size_t>(keys.size(), static_cast<std::size_t>(r.prefix_tokens / chunk_tokens)));
  return keys;
}

// An engine's ranks as routers see them (serving/router_policy.hpp): nodes are ranks.
class RankView final : public ClusterView {
 public:
  RankView(const ServingEngine& e, std::size_t ranks) : m_e(e), m_ranks(ranks) {}
  std::size_t nodes() const override { return m_ranks; }
  std::size_t outstanding(std::size_t i) const override { return m_e.outstanding(rank(i)); }
  std::size_t waiting(std::size_t i) const override { return m_e.waiting(rank(i)); }
  double estimated_completion_s(std::size_t i, const Request& r) const override {
    // kappa_aware over ranks: the cluster's estimator (serving/cluster_spec) on the rank's
    // backlog, r's cached tokens in the rank's KV store.
    if (!m_model) m_model = make_node_model(m_e.spec());
    const std::int64_t K = m_e.cached_tokens(r, rank(i));
    return estimate_backlog(*m_model, m_e.pending_load_tokens(rank(i)),
                            m_e.outstanding_compute_tokens(rank(i))) +
           estimate_service(*m_model, K, r.prompt_tokens() - K).total_s;
  }
  NodeCache cache(std::size_t i, const Request& r) const override {
    NodeCache c;
    c.cached_tokens = m_e.cached_tokens(r, rank(i));
    c.pending_prefill_tokens = m_e.outstanding_compute_tokens(rank(i));
    c.kv_tokens_used = m_e.kv_tokens_used(rank(i));
    c.kv_tokens_total = m_e.kv_tokens_total(rank(i));
    c.store_bytes = m_e.store_bytes(rank(i));
    return c;
  }

 private:
  static int rank(std::size_t i) { return static_cast<int>(i); }
  const ServingEngine& m_e;
  std::size_t m_ranks;
  mutable std::optional<NodeModel> m_model;
};
}  // namespace

ServingEngine::ServingEngine(const sc_core::sc_module_name& name, const RunSpec& spec,
                             WorkloadSource& source, EngineSinks sinks)
    : sc_core::sc_module(name),
      m_spec(spec),
      m_source(source),
      m_sinks(std::move(sinks)),
      m_recompute(m_spec) {
  const ServingSpec& sv = m_spec.serving;
  const GpuSpec& gpu = m_spec.system.gpu;
  gpu.require_sim("system.gpu");
  const bool beyond_tp = sv.parallelism.beyond_tp();
  m_layout = beyond_tp ? make_replica_layout(m_spec) : tp_layout(m_spec);
  const ReplicaLayout& L = m_layout;
  m_bkv_gpu = served_kv_unit_per_gpu(m_spec.model, sv, L.tp);
  m_store_bkv_gpu = served_kv_store_per_gpu(m_spec.model, sv, L.tp);
  if (sv.hybrid_kv()) m_hybrid = hybrid_kv_per_gpu(m_spec.model, sv.kv_dtype, L.tp);
  // Issue 23 item 5: replicated KV (tp > KV heads, MLA under TP) loaded once as r shards and an
  // NVLink all-gather; a layout without copies is the same run as each_rank.
  if (sv.replicated_kv == ReplicatedKv::ShardAllgather)
    m_kv_r = kv_replication_factor(m_spec.model, sv.kv_dtype, L.tp);
  if (!stack_supports(sv.stack, sv.load_path))
    throw InputError("serving.load_path: not a load path of stack '" + sv.stack.name +
                     "' (it supports: " + stack_load_paths(sv.stack) + ")");
  m_load_path = make_load_path(load_path_name(sv.load_path));
  // An async load (stack.load: async) is modelled where it is one request's DMA copies from host
  // DRAM outside the steps: nothing else would take part in it.
  if (sv.stack.load == StackLoad::Async) {
    std::string why;
    if (!m_load_path->loads_outside_steps() || m_load_path->copy_path() != CopyPath::Dma)
      why = "serving.load_path " + load_path_name(sv.load_path) +
            " (an async load is the copy engines' DMA copies: block_dma; a copy kernel would take "
            "the SMs of the steps it overlaps, and the layer-wise path interleaves with compute)";
    else if (beyond_tp)
      why = "serving.parallelism (one TP rank without pipeline stages)";
    else if (sv.tiers.enabled())
      why = "serving.tiers (KV tiers below host DRAM)";
    else if (sv.kv_buffer.enabled())
      why = "serving.kv_buffer (a GPU-side KV buffer)";
    else if (sv.recompute.mode != RecomputeMode::None)
      why = "serving.recompute (partial recompute)";
    if (!why.empty())
      throw InputError("serving.stack.load: async loads (stack '" + sv.stack.name +
                       "') are modelled for one TP rank's DMA loads from host DRAM; not with " +
                       why + ". Use serving.stack.load: in_step, or change that setting");
  }
  // The link back end (serving.link_fidelity, systems/link_backend's registry) over every node
  // of the replica: each node its own host DRAM, sockets and host links, NVLink and NIC ports
  // per GPU. A system without nic_bandwidth takes the layout's (ConnectX-7 by default).
  SystemSpec fabric = m_spec.system;
  if (beyond_tp && !fabric.nic_Bps) fabric.nic_Bps = L.nic_Bps;
  m_link = make_link_backend(sim_clock::link_fidelity_name(sv.link_fidelity), "fabric", fabric,
                             L.p.nodes);
  // Every GPU's components, all issuing into the back end. GPU g of the replica (stage-major:
  // stage s, rank r, TP position j at s x stage_gpus + r x tp + j) is GPU g mod gpus_per_node of
  // node g / gpus_per_node.
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
    if (L.pp > 1)
      u->kv_share =
          L.cost.stages[static_cast<std::size_t>(g / L.stage_gpus)].kv_bytes_rank / m_bkv_gpu;
    m_gpus.push_back(std::move(u));
  }
  // The ranks' paged KV pools: gpu_memory_utilization x HBM less the weights per GPU, the
  // activation reserve and a GPU-side buffer of kind hbm (carved out of the pool).
  double carve = 0;
  if (sv.kv_buffer.enabled() && sv.kv_buffer.kind == KvBufferKind::Hbm)
    carve = sv.kv_buffer.capacity_bytes;
  std::int64_t blocks = 0;
  if (beyond_tp) {
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
    blocks = kv_blocks_for(v_eff, sv.block_tokens, m_bkv_gpu);
  }
  for (int r = 0; r < L.dp; ++r) {
    auto rank = std::make_unique<Rank>();
    rank->index = r;
    std::vector<GpuUnit*> units;
    for (int s = 0; s < L.pp; ++s)
      for (int j = 0; j < L.tp; ++j)
        units.push_back(m_gpus[static_cast<std::size_t>(s * L.stage_gpus + r * L.tp + j)].get());
    rank->gpus = std::make_unique<RankGpus>(std::move(units), L.tp, gpu.sm_count);
    rank->sched = std::make_unique<Scheduler>(sv.scheduler_config());
    rank->kv = std::make_unique<PagedKv>(blocks, sv.block_tokens);
    if (m_hybrid) rank->kv->set_hybrid(*m_hybrid);
    if (sv.prefix_caching) rank->kv->enable_prefix_cache();
    m_ranks.push_back(std::move(rank));
  }
  m_layout_stats.rank_tokens.assign(m_ranks.size(), 0);
  for (std::size_t r = 0; r < m_ranks.size(); ++r)
    m_load_stream.push_back(
        std::make_unique<sc_core::sc_mutex>(("load_stream" + std::to_string(r)).c_str()));
  // Step groups: a MoE model's DP ranks in lockstep; otherwise every rank steps alone, by the
  // TP step model unless it has pipeline stages or expert parallelism.
  const bool moe = m_spec.model.mlp.type == MlpType::Moe;
  const double all = static_cast<double>(L.gpus);
  if (moe && L.dp > 1) {
    std::vector<Rank*> rs;
    std::vector<const RankGpus*> gs;
    for (auto& r : m_ranks) {
      rs.push_back(r.get());
      gs.push_back(r->gpus.get());
    }
    m_groups.push_back(std::make_unique<Group>(
        *this, rs, make_layout_step(m_spec, L, gs, *m_link, m_layout_stats, m_on_fewer_sms), 1.0));
  } else {
    ReplicaLayout one = L;  // a rank alone
    one.dp = one.p.dp_attention = 1;
    one.stage_gpus = L.tp;
    one.gpus = L.tp * L.pp;
    for (auto& r : m_ranks) {
      std::unique_ptr<StepModel> model =
          L.pp == 1 && L.p.ep == 1 ? make_tp_step(m_spec, *r->gpus, m_on_fewer_sms)
                                   : make_layout_step(m_spec, one, {r->gpus.get()}, *m_link,
                                                      m_layout_stats, m_on_fewer_sms);
      const double share = L.dp == 1 ? 1.0 : one.gpus / all;
      m_groups.push_back(
          std::make_unique<Group>(*this, std::vector<Rank*>{r.get()}, std::move(model), share));
    }
  }
  // Every rank's KV store (its own LMCache instance and pinned pool): a given DRAM capacity is
  // the replica's, split evenly; else the stack's pool per GPU of the rank.
  const double dram = sv.tier_capacity_bytes
                          ? *sv.tier_capacity_bytes / L.dp
                          : default_tier_capacity(sv.stack, m_spec.system, L.tp * L.pp).bytes;
  KvStore::Hooks hooks;
  hooks.stored = [this](const CopyGroup& c, double start_s) {
    if (!m_sinks.trace) return;
    m_sinks.trace->span(m_trace.store, "store", start_s, c.g.end_s);
    trace_copy_group(m_sinks.trace, m_trace.gpu_link, c, "store", m_spec.check);
  };
  hooks.ready = [this](RequestState& st) {
    enqueue(st);
    m_work.notify(SC_ZERO_TIME);
  };
  for (auto& g : m_groups)
    for (Rank* r : g->ranks)
      r->store = std::make_unique<KvStore>(m_spec, *r->gpus, *m_link, m_store_bkv_gpu, dram,
                                           g->stats, g->store_weight(), 1.0 / g->ranks.size(),
                                           L.dp == 1 ? 1.0 : 1.0 / L.dp, hooks);
  for (auto& g : m_groups) g->buffer_Bps = g->ranks.front()->store->buffer_Bps();
  if (L.dp > 1) m_router = make_router(sv.dp_router);
  if (m_sinks.trace) {
    m_trace.step = m_sinks.trace->track("engine", "steps (compute)");
    m_trace.load = m_sinks.trace->track("engine", "KV loads (all GPUs)");
    m_trace.store = m_sinks.trace->track("engine", "KV stores (all GPUs)");
    for (const auto& u : m_gpus) {
      const std::string g = "gpu" + std::to_string(u->fabric);
      m_trace.gpu_compute[u->fabric] = m_sinks.trace->track(g, "compute");
      m_trace.gpu_link[u->fabric] = m_sinks.trace->track(g, "host link (copies)");
    }
  }
  if (m_spec.workload.concurrency > 0)
    m_clients =
        std::make_unique<ClientPool>(m_spec.workload.concurrency, m_spec.workload.think_time_s);
  SC_THREAD(arrivals);
  for (auto& g : m_groups) sc_core::sc_spawn([gp = g.get()] { gp->steps(); });
}

ServingEngine::~ServingEngine() = default;

std::uint64_t ServingEngine::copy_kernels_started() const {
  std::uint64_t n = 0;
  for (const auto& u : m_gpus)
    if (u->kernel) n += u->kernel->kernels();
  return n;
}

std::size_t ServingEngine::outstanding(int r) const {
  if (r >= 0) return m_ranks.at(static_cast<std::size_t>(r))->live;
  return m_live.size();
}

std::size_t ServingEngine::waiting(int r) const {
  std::size_t n = 0;
  for (const auto& rank : m_ranks)
    if (r < 0 || rank->index == r) n += rank->sched->waiting();
  return n;
}

std::int64_t ServingEngine::outstanding_compute_tokens(int r) const {
  std::int64_t n = 0;
  for (const auto& [id, st] : m_live)
    if (r < 0 || st.rank == r) n += st.seq->remaining();
  return n;
}

std::int64_t ServingEngine::pending_load_tokens(int r) const {
  std::int64_t n = 0;
  for (const auto& [id, st] : m_live)
    if ((r < 0 || st.rank == r) && st.seq->first_scheduled_s < 0) n += st.seq->cached_tokens;
  return n;
}

std::int64_t ServingEngine::cached_tokens(const Request& r, int rank) const {
  if (rank < 0) {
    std::int64_t most = 0;
    for (const auto& rk : m_ranks) most = std::max(most, cached_tokens(r, rk->index));
    return most;
  }
  const KvTier& t = store(static_cast<std::size_t>(rank)).dram();
  const int chunk = t.chunk_tokens();
  const std::vector<std::uint64_t> keys = chunk_keys(r, chunk);
  std::size_t hits = 0;
  while (hits < keys.size() && t.contains(keys[hits])) ++hits;
  if (m_spec.serving.warm_tier)  // arrivals put the prefix's whole chunks in the tier
    hits = std::max<std::size_t>(
        hits,
        std::min<std::size_t>(keys.size(), static_cast<std::size_t>(r.prefix_tokens / chunk)));
  std::int64_t held = static_cast<std::int64_t>(hits) * chunk;
  // serving.prefix_caching: or the leading blocks its GPUs' prefix cache holds (llm-d's prefix
  // scorer sees both: vLLM publishes KV events for the GPU's blocks and the offloaded ones).
  const PagedKv& kv = *m_ranks.at(static_cast<std::size_t>(rank))->kv;
  if (kv.prefix_caching()) {
    const std::int64_t b = kv.block_tokens();
    held = std::max(held, kv.match(chunk_keys(r, static_cast<int>(b)), r.prompt_tokens()) * b);
  }
  // As make_sequence: at least one prompt token is computed.
  return std::clamp<std::int64_t>(held, 0, std::max<std::int64_t>(r.prompt_tokens() - 1, 0));
}

std::int64_t ServingEngine::kv_tokens_used(int r) const {
  std::int64_t n = 0;
  for (const auto& rank : m_ranks)
    if (r < 0 || rank->index == r) n += rank->kv->used_blocks() * rank->kv->block_tokens();
  return n;
}

std::int64_t ServingEngine::kv_tokens_total(int r) const {
  std::int64_t n = 0;
  for (const auto& rank : m_ranks)
    if (r < 0 || rank->index == r) n += rank->kv->total_tokens();
  return n;
}

double ServingEngine::store_bytes(int r) const {
  double b = 0;
  for (const auto& rank : m_ranks)
    if (r < 0 || rank->index == r) b += rank->store->dram().used_bytes();
  return b;
}

std::size_t ServingEngine::route(const Request& r) {
  if (m_ranks.size() == 1) return 0;
  const std::size_t i = m_router->choose(r, RankView(*this, m_ranks.size()));
  if (i >= m_ranks.size())
    throw std::logic_error(std::string("router ") + router_name(m_spec.serving.dp_router) +
                           " chose rank " + std::to_string(i) + " of " +
                           std::to_string(m_ranks.size()));
  return i;
}

void ServingEngine::enqueue(RequestState& st) {
  try {
    m_ranks[static_cast<std::size_t>(st.rank)]->sched->enqueue(st.seq.get(), now_s());
  } catch (const InputError&) {
    sim_fail(std::current_exception());
  }
}

void ServingEngine::arrivals() {
  const ServingSpec& sv = m_spec.serving;
  const int chunk = sv.tier_chunk_tokens();
  bool warmed = false;
  if (sv.warm_tier && m_sinks.warm_source) {
    // Every rank's tier as the workload's own stream would leave it: every request's prefix in
    // arrival order, LRU within the capacity (routing is known only as requests arrive).
    std::unique_ptr<WorkloadSource> src = m_sinks.warm_source();
    Request w;
    while (src->next(w))
      for (auto& rank : m_ranks) rank->store->warm(prefix_keys(w, chunk));
    warmed = true;
  }
  Request r;
  while (m_source.next(r)) {
    // Closed loop: the request arrives when a client is ready (its previous request finished,
    // then its think time); the stream's own arrival time is not used.
    if (m_clients) {
      m_clients->acquire();
      r.arrival_s = now_s();
    }
    if (r.arrival_s > kSimTimeLimitS) {  // the time base's reach (core/sim_runner.hpp)
      sim_fail(std::make_exception_ptr(InputError(
          "workload: request " + std::to_string(r.id) + " arrives at " +
          sim_time_limit_message(r.arrival_s) +
          "; expected arrivals within it: a higher workload.rate, fewer workload.requests or a "
          "smaller trace time_scale")));
      // End the source as if exhausted: the requests in flight drain and every process ends, so
      // none is killed while the engine unwinds (SystemC kills a live thread by switching to
      // its coroutine stack, which AddressSanitizer reports as a false stack-buffer-overflow).
      break;
    }
    if (r.arrival_s > now_s()) wait_s(r.arrival_s - now_s());
    // End-to-end TTFT (serving.ttft): the stack's front end (one API server process, serial:
    // a request waits for the ones before it) handles the request before the scheduler sees it.
    const double fe_in = sv.end_to_end() ? front_end_in_s(sv.stack, r.prompt_tokens()) : 0;
    if (fe_in > 0) wait_s(fe_in);
    const std::vector<std::uint64_t> keys = chunk_keys(r, chunk);
    const std::size_t ri = route(r);
    Rank& rank = *m_ranks[ri];
    if (sv.warm_tier && !warmed && m_sinks.role != EngineRole::Decode) {
      // No copy of the stream to warm from: a prefix never placed before counts as
      // pre-populated at its first use; later uses find it only if it survived LRU.
      std::vector<std::uint64_t> pk = prefix_keys(r, chunk);
      pk.erase(std::remove_if(pk.begin(), pk.end(),
                              [&](std::uint64_t k) { return rank.store->dram().ever_placed(k); }),
               pk.end());
      rank.store->warm(pk);
    }
    RequestState& st = m_live[r.id];
    st.rank = static_cast<int>(ri);
    if (sv.end_to_end()) {
      // Its handling in the front end, and the output path its first token takes back.
      st.front_end_in_s = fe_in;
      st.front_end_out_s = front_end_out_s(sv.stack);
    }
    const EngineRole role = m_sinks.role;
    const bool decode_role = role == EngineRole::Decode;
    // A decode instance pulls the prompt's KV from the prefill instance instead of looking it up.
    const std::int64_t cached =
        decode_role ? r.prompt_tokens() - 1
                    : static_cast<std::int64_t>(rank.store->lookup(st, keys)) * chunk;
    // make_sequence keeps at least one prompt token to compute (its logits), as vLLM does.
    st.seq = std::make_unique<Sequence>(make_sequence(r, cached));
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
    if (!decode_role) st.seq->async_kv = group_of(rank).can_load_async(st);
    ++m_stats.arrived;
    ++rank.live;
    // A prefetch may hold the request out of the queue until its chunks are in DRAM. A request
    // that cannot fit one step (chunked prefill off, budget too small) is an input error found
    // only here (its cached tokens depend on the tier): reported through sim_fail (an exception
    // leaving a process would become SystemC's internal error); the source ends as above.
    if (decode_role || !rank.store->prefetch(st, keys)) {
      try {
        rank.sched->enqueue(st.seq.get(), now_s());
      } catch (const InputError&) {
        m_live.erase(r.id);
        --m_stats.arrived;
        --rank.live;
        sim_fail(std::current_exception());
        break;
      }
    }
    m_work.notify(SC_ZERO_TIME);
  }
  m_source_done = true;
  m_work.notify(SC_ZERO_TIME);
}

void ServingEngine::finish(Sequence* s) {
  const std::uint64_t id = s->req.id;
  if (m_spec.check) {
    if (!m_check.done.insert(id).second)
      throw std::logic_error("invariant violated: request " + std::to_string(id) +
                             " finished twice");
    if (now_s() < m_check.last_finish_s)
      throw std::logic_error("invariant violated: simulated time went back");
    m_check.last_finish_s = now_s();
    // Every output's times: a request starts and finishes after it arrived (a TTFT or queue
    // below zero means the time base wrapped; core/sim_runner.hpp).
    // Tolerance: the arrival wait rounds to 1 ps, and a double holds ~1e-16 relative.
    const double slack = 1e-12 + 1e-14 * s->req.arrival_s;
    if (now_s() < s->req.arrival_s - slack ||
        (s->first_scheduled_s >= 0 && s->first_scheduled_s < s->req.arrival_s - slack))
      throw std::logic_error("invariant violated: request " + std::to_string(id) +
                             " is scheduled or finishes before it arrives (time went back)");
  }
  RequestState& st = m_live.at(id);
  Rank& rank = *m_ranks[static_cast<std::size_t>(st.rank)];
  rank.store->finished(st);
  --rank.live;
  if (s->rejected) {  // the prompt needs more KV blocks than the whole pool (vLLM rejects it)
    ++m_stats.rejected;
    m_live.erase(id);  // the request's whole state, in one place
    if (m_sinks.on_reject) m_sinks.on_reject(id);
    if (m_clients) m_clients->release();  // its client sends its next request
    return;
  }
  RequestRecord rec = make_request_record(st, now_s(), m_bkv_gpu, m_layout.tp, m_load_path->name(),
                                          m_store_bkv_gpu, m_kv_r);
  rec.meets_slo = m_spec.serving.slo.met(rec.ttft_s, rec.tpot_s);
  if (m_sinks.requests) m_sinks.requests->write(rec);
  if (m_sinks.summary) m_sinks.summary->add_request(rec);
  if (m_sinks.on_finish) m_sinks.on_finish(rec);
  if (m_sinks.trace) {
    // Lanes by interval, so that no two request spans overlap on one lane.
    const int lane = m_sinks.trace->track(
        "requests", "lane " + std::to_string(m_trace.lanes.place(rec.arrival_s, now_s())));
    m_sinks.trace->span(lane, "request " + std::to_string(id), rec.arrival_s, now_s());
  }
  m_live.erase(id);  // the request's whole state, in one place
  ++m_stats.finished;
  if (m_clients) m_clients->release();  // its client sends its next request
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

ServingEngine::Group& ServingEngine::group_of(const Rank& rank) const {
  for (const auto& g : m_groups)
    if (std::find(g->ranks.begin(), g->ranks.end(), &rank) != g->ranks.end()) return *g;
  throw std::logic_error("rank " + std::to_string(rank.index) + " is in no step group");
}

void ServingEngine::pull(Rank& rank, Sequence* s) {
  // One request's load at a time per rank, in the order they were admitted (the worker's one
  // thread issues a request's copies or posts its descriptors, one stream).
  sc_core::sc_mutex& stream = *m_load_stream.at(static_cast<std::size_t>(rank.index));
  stream.lock();
  if (m_sinks.role != EngineRole::Decode) {  // an async load from the tier (stack.load: async)
    group_of(rank).load_async(m_live.at(s->req.id));
    stream.unlock();
    rank.sched->pulled(s);
    m_work.notify(SC_ZERO_TIME);
    return;
  }
  // P/D: the decode instance pulls the prompt's KV from the prefill instance.
  const HandoffSpec& h = m_sinks.handoff;
  const double t0 = now_s();
  wait_s(h.fixed_s);
  // Every GPU of the rank pulls its share of the prompt's KV (all but the last token) through its
  // NIC (GPUDirect RDMA), no faster than its worker posts the descriptors.
  const std::int64_t tokens = s->cached_tokens;
  const std::int64_t desc =
      handoff_descriptors(m_spec.model, tokens, m_spec.serving.block_tokens, m_layout.pp);
  double bytes = 0;
  if (tokens > 0) {
    CopyGroup c;
    rank.gpus->plan_all(c.rs, static_cast<double>(tokens) * m_bkv_gpu, Direction::H2D,
                        CopyPath::Dma);
    for (TransferRequest& r : c.rs) {
      r.endpoint = Endpoint::Remote;
      r.rate_cap_Bps = handoff_post_rate_cap(r.bytes, desc, h);
      bytes += r.bytes;
    }
    rank.gpus->issue(c, std::vector<std::int64_t>(c.rs.size(), 1), CopyPath::Dma, 0);
    if (!c.g.finished) sc_core::wait(c.g.done);
  }
  stream.unlock();
  rank.sched->pulled(s);
  if (m_sinks.on_pulled) m_sinks.on_pulled(s->req.id, t0, now_s(), bytes);
  m_work.notify(SC_ZERO_TIME);
}

void ServingEngine::check_end() const {
  if (m_stats.finished + m_stats.rejected != m_stats.arrived || !m_live.empty())
    throw std::logic_error("invariant violated: " + std::to_string(m_stats.arrived) + " arrived, " +
                           std::to_string(m_stats.finished) + " finished, " +
                           std::to_string(m_stats.rejected) + " rejected, " +
                           std::to_string(m_live.size()) + " still in the system");
  for (const auto& rank : m_ranks)
    if (rank->kv->used_blocks() != 0)
      throw std::logic_error("invariant violated: rank " + std::to_string(rank->index) +
                             " still holds " + std::to_string(rank->kv->used_blocks()) +
                             " KV blocks at the end (a P/D hand-off never released?)");
  m_link->check_conservation();
  if (now_s() < m_check.last_finish_s)  // summary.json: the run ends after its last finish
    throw std::logic_error("invariant violated: the run ends before its last request finished");
}

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
  f.kv_bytes_per_token_gpu = m_bkv_gpu / L.pp / m_kv_r;  // over the host link
  f.kernel_events = sc_core::sc_delta_count();           // SystemC delta cycles of the whole run
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
    t.kv_replication = m_kv_r;
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
  run_simulation([&] { engine = std::make_unique<ServingEngine>("engine", spec, source, sinks); });
  if (spec.check) engine->check_end();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return engine->totals(wall);
}

}  // namespace kappasim
