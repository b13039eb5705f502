#include "serving/cluster.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "core/sim_runner.hpp"
#include "serving/sim_clock.hpp"
#include "serving/stat_catalog.hpp"
#include "workloads/trace_reader.hpp"

namespace kappasim {

using sim_clock::now_s;

// ---- NodeQueue -------------------------------------------------------------------------------

bool NodeQueue::next(Request& out) {
  while (m_q.empty() && !m_closed) sc_core::wait(m_ev);
  if (m_q.empty()) return false;
  out = std::move(m_q.front().r);
  m_load -= m_q.front().load;
  m_compute -= m_q.front().compute;
  m_q.pop_front();
  return true;
}

void NodeQueue::push(const Request& r, std::int64_t load_tokens, std::int64_t compute_tokens) {
  if (m_closed) throw std::logic_error("NodeQueue::push after close()");
  m_q.push_back({r, load_tokens, compute_tokens});
  m_load += load_tokens;
  m_compute += compute_tokens;
  m_ev.notify(sc_core::SC_ZERO_TIME);
}

void NodeQueue::close() {
  m_closed = true;
  m_ev.notify(sc_core::SC_ZERO_TIME);
}

// ---- Cluster ---------------------------------------------------------------------------------

Cluster::Cluster(const sc_core::sc_module_name& name, const ClusterRunSpec& spec,
                 WorkloadSource& source, ClusterSinks sinks)
    : sc_core::sc_module(name), m_spec(spec), m_source(source), m_sinks(std::move(sinks)) {
  m_router = make_router(m_spec.cluster.router);  // InputError for an unregistered name
  const std::size_t groups = m_spec.nodes.size();
  m_group_summary.resize(groups);
  m_group_offered_kappa.assign(groups, 0);
  m_group_routed.assign(groups, 0);
  for (std::size_t g = 0; g < groups; ++g) {
    const RunSpec rs = m_spec.node_run_spec(g);
    m_group_models.push_back(make_node_model(rs));
    for (int i = 0; i < m_spec.nodes[g].count; ++i) {
      Node n;
      n.name = m_spec.nodes[g].name + "_" + std::to_string(i);
      n.group = g;
      n.role = m_spec.nodes[g].role;
      n.host = m_spec.node_host(g, i);
      n.queue = std::make_unique<NodeQueue>(n.name);
      m_nodes.push_back(std::move(n));
    }
  }
  // Issue 25: one CXL pool for every node whose system names one (ClusterRunSpec::validate
  // holds them to one pool and one pooled tier).
  for (const NodeGroupSpec& g : m_spec.nodes)
    if (g.system.has_cxl_pool() && !m_cxl_pool) {
      m_cxl_pool =
          std::make_unique<CxlPoolShare>(g.system.cxl_pool, g.serving.tiers.cxl_capacity_bytes);
    }
  const bool pd = m_spec.disaggregated();
  if (pd) m_decode_router = make_router(m_spec.cluster.router);  // its own cursor and state
  for (std::size_t i = 0; i < m_nodes.size(); ++i) {
    Node& n = m_nodes[i];
    (n.role == EngineRole::Decode ? m_decode : m_entry).push_back(i);
    EngineSinks es;
    es.summary = &m_group_summary[n.group];
    if (m_spec.nodes[n.group].system.has_cxl_pool()) es.cxl_pool = m_cxl_pool.get();
    es.on_finish = [this, i](const RequestRecord& rec) {
      switch (m_nodes[i].role) {
        case EngineRole::Prefill:
          prefilled(rec, i);
          break;
        case EngineRole::Decode:
          decoded(rec, i);
          break;
        case EngineRole::Mixed:
          finished(rec, i);
          break;
      }
    };
    // A rejected request is done: its closed-loop client sends its next one.
    es.on_reject = [this, i, pd](std::uint64_t id) {
      if (pd) rejected(id, i);
      if (m_clients) m_clients->release();
    };
    if (pd) {
      es.role = n.role;
      es.handoff = m_spec.cluster.handoff;
      // A decode node's own KV tier (docs/disaggregation.md, "A decode node's KV tier").
      const NodeGroupSpec& gs = m_spec.nodes[n.group];
      es.decode_tier = gs.decode_tier;
      es.decode_tier_prompt = decode_tier_stores_prompt(m_spec.cluster.handoff, gs.serving.stack);
      es.on_pulled = [this](std::uint64_t id, double t0, double t1, double bytes) {
        pulled(id, t0, t1, bytes);
      };
      // The pull's prefill side: the prefill node's GPUs send through their NIC ports, or over
      // NVLink to the decode node's GPUs beside theirs on one host (in the prefill node's fabric
      // the decode GPUs are the host's GPUs past the prefill engine's own).
      es.send_kv = [this](std::uint64_t id, const std::vector<double>& bytes, double cap) {
        const Handoff& h = m_handoffs.at(id);
        ServingEngine& p = *m_nodes[h.prefill_node].engine;
        return p.send_kv(id, bytes, cap, h.nvlink ? p.layout().gpus : -1);
      };
      // push_layer (docs/disaggregation.md): a prefill node's layer sends enter the decode node
      // the router chose at arrival (none, once that node has rejected the request).
      es.receive_kv = [this](std::uint64_t id, const std::vector<double>& bytes, double cap) {
        const auto it = m_handoffs.find(id);
        return it == m_handoffs.end()
                   ? nullptr
                   : m_nodes[it->second.decode_node].engine->receive_kv(bytes, cap);
      };
      es.on_pushed = [this, i](std::uint64_t id, double, double, double bytes) {
        pushed(id, i, bytes);
      };
      es.wait_pushed = [this](std::uint64_t id) { return wait_pushed(id); };
      // The re-shard's source: the prefill rank's layout (serving/handoff.hpp reshard_pieces),
      // and where it sits: on this host (over NVLink: in this node's fabric the prefill GPUs are
      // the host's GPUs past this engine's own) or another (over the NICs).
      es.source_layout = [this, i](std::uint64_t id) {
        const Handoff& h = m_handoffs.at(id);
        const ReplicaLayout& L = m_nodes[h.prefill_node].engine->layout();
        HandoffSource s;
        s.layout = KvRankLayout{L.tp, L.pp};
        if (h.nvlink) s.nvlink_base = m_nodes[i].engine->layout().gpus;
        return s;
      };
    }
    n.engine = std::make_unique<ServingEngine>(n.name.c_str(), m_spec.node_run_spec(n.group),
                                               *n.queue, es);
  }
  if (m_spec.workload.concurrency > 0)
    m_clients =
        std::make_unique<ClientPool>(m_spec.workload.concurrency, m_spec.workload.think_time_s);
  SC_THREAD(route);
}

void Cluster::finished(const RequestRecord& rec, std::size_t node) {
  m_summary.add_request(rec);
  if (m_sinks.requests) m_sinks.requests->write(rec);
  if (m_sinks.on_finish) m_sinks.on_finish(rec, node);
  if (m_clients) m_clients->release();  // its client sends its next request
}

void Cluster::prefill_stage_done() {
  if (m_in_prefill == 0) throw std::logic_error("cluster: more requests left prefill than entered");
  --m_in_prefill;
  if (m_source_done && m_in_prefill == 0)
    for (std::size_t d : m_decode) m_nodes[d].queue->close();
}

void Cluster::prefilled(const RequestRecord& rec, std::size_t node) {
  const auto it = m_handoffs.find(rec.id);
  if (it == m_handoffs.end())
    throw std::logic_error("cluster: request " + std::to_string(rec.id) + " prefilled unrouted");
  Handoff& h = it->second;
  if (h.r.output_tokens <= 1) {  // its one output token is the prefill's: no decode stage
    finished(rec, node);
    m_handoffs.erase(it);
    prefill_stage_done();
    return;
  }
  // Its KV stays in the prefill node's blocks until the decode node has pulled it (pulled()).
  h.prefill = rec;
  h.prefill_node = node;
  h.prefill_end_s = now_s();
  const bool push = m_spec.cluster.handoff.send == HandoffSend::PushLayer;
  // push_layer: its decode node was chosen at arrival; its sends may all have arrived already.
  if (push && h.pushed) m_nodes[node].engine->release_kv(rec.id);
  const std::size_t d = push ? h.decode_node : choose_among(m_decode, *m_decode_router, h.r);
  Node& n = m_nodes[d];
  h.nvlink = !n.host.empty() && n.host == m_nodes[node].host;
  ++n.routed;
  ++m_group_routed[n.group];
  m_group_offered_kappa[n.group] += h.r.kappa_ratio();
  if (m_sinks.on_route) m_sinks.on_route(h.r, d);
  n.queue->push(h.r, 0, 1);
  prefill_stage_done();
}

void Cluster::pulled(std::uint64_t id, double start_s, double end_s, double bytes) {
  Handoff& h = m_handoffs.at(id);
  h.pull_start_s = start_s;
  h.pull_end_s = end_s;
  h.bytes = bytes;
  if (m_spec.cluster.handoff.send == HandoffSend::Pull)
    m_nodes[h.prefill_node].engine->release_kv(id);  // NIXL: the decode side notifies the prefill
}

void Cluster::pushed(std::uint64_t id, std::size_t node, double bytes) {
  const auto it = m_handoffs.find(id);
  // The prefill node holds the request's blocks until its last layer's send has arrived [A: the
  // extracted per-layer tensors P2pNcclConnector queues count as the blocks they were copied
  // from]; then it frees them (at once, or when its prefill's finish reaches the cluster).
  if (it == m_handoffs.end()) {  // its decode node rejected it: nothing waits for the bytes
    m_nodes[node].engine->release_kv(id);
    return;
  }
  Handoff& h = it->second;
  h.pushed = true;
  h.bytes = bytes;
  if (h.prefill_end_s >= 0) m_nodes[node].engine->release_kv(id);
  h.pushed_ev->notify(sc_core::SC_ZERO_TIME);
}

double Cluster::wait_pushed(std::uint64_t id) {
  const std::shared_ptr<sc_core::sc_event> ev = m_handoffs.at(id).pushed_ev;
  if (!m_handoffs.at(id).pushed) sc_core::wait(*ev);
  return m_handoffs.at(id).bytes;
}

void Cluster::decoded(const RequestRecord& rec, std::size_t node) {
  const auto it = m_handoffs.find(rec.id);
  if (it == m_handoffs.end() || it->second.pull_end_s < 0)
    throw std::logic_error("cluster: request " + std::to_string(rec.id) +
                           " decoded without a hand-off");
  const Handoff& h = it->second;
  // The request as its user sees it: the prefill node's tokens, loads and compute; the decode
  // node's first token (TTFT, hand-off included), output tokens and TPOT.
  RequestRecord f = h.prefill;
  f.ttft_s = rec.ttft_s;
  f.e2e_s = rec.e2e_s;
  f.output_tokens = rec.output_tokens;
  f.tpot_s = rec.tpot_s;
  f.compute_s += rec.compute_s;
  f.steps += rec.steps;
  f.preemptions += rec.preemptions;
  f.preempted_kv_tokens += rec.preempted_kv_tokens;
  f.meets_slo = rec.meets_slo;
  f.time.queue_s = 0;  // the rest of its TTFT: queues, the hand-off and the decode node's step
  f.time.queue_s = std::max(0.0, f.ttft_s - f.time.sum());
  HandoffStats& st = m_handoff_stats;
  ++st.count;
  st.nvlink += h.nvlink;
  st.bytes += h.bytes;
  st.wait_s += h.pull_start_s - h.prefill_end_s;
  st.transfer_s += h.pull_end_s - h.pull_start_s;
  st.total_s.add(std::max(QuantileSketch::kMinValue, h.pull_end_s - h.prefill_end_s));
  m_handoffs.erase(it);
  finished(f, node);
}

void Cluster::rejected(std::uint64_t id, std::size_t node) {
  const auto it = m_handoffs.find(id);
  if (it == m_handoffs.end()) throw std::logic_error("cluster: an unrouted request was rejected");
  if (m_nodes[node].role == EngineRole::Decode) {  // its prompt never fits the decode node's pool
    // push_layer: the prefill node frees the blocks when its sends end (pushed()).
    if (m_spec.cluster.handoff.send == HandoffSend::Pull)
      m_nodes[it->second.prefill_node].engine->release_kv(id);
  } else
    prefill_stage_done();
  m_handoffs.erase(it);
}

Cluster::~Cluster() = default;

void Cluster::route() {
  Request r;
  // Closed loop: it arrives when a client is ready. Past the time base's reach: the source ends
  // as if exhausted, the engines drain and their threads end.
  while (next_arrival(m_source, m_clients.get(), r)) {
    if (r.arrival_s > now_s())
      sc_core::wait(sc_core::sc_time(r.arrival_s - now_s(), sc_core::SC_SEC));
    const std::size_t i = choose(r);
    Node& n = m_nodes[i];
    if (n.role == EngineRole::Prefill) {
      Handoff& h = m_handoffs[r.id];
      h.r = r;
      ++m_in_prefill;
      // push_layer: the proxy picks the decode instance too, at arrival (vLLM's P2pNccl proxy
      // names it in the request id the prefill instance sends to).
      if (m_spec.cluster.handoff.send == HandoffSend::PushLayer && r.output_tokens > 1) {
        h.decode_node = choose_among(m_decode, *m_decode_router, r);
        h.pushed_ev = std::make_shared<sc_core::sc_event>();
      }
    }
    const std::int64_t K = cached_tokens_on(i, r);
    const std::int64_t T = r.prompt_tokens() - K;
    ++n.routed;
    ++m_arrived;
    ++m_group_routed[n.group];
    m_group_offered_kappa[n.group] += r.kappa_ratio();
    if (m_sinks.on_route) m_sinks.on_route(r, i);
    n.queue->push(r, K, T);
  }
  for (std::size_t i : m_entry) m_nodes[i].queue->close();
  m_source_done = true;
  // Decode nodes take hand-offs until the last request has left its prefill node.
  if (m_in_prefill == 0)
    for (std::size_t d : m_decode) m_nodes[d].queue->close();
}

std::int64_t Cluster::cached_tokens_on(std::size_t i, const Request& r) const {
  return m_nodes.at(i).engine->ranks().cached_tokens(r);  // its ranks' best
}

double Cluster::estimated_completion_s(std::size_t i, const Request& r) const {
  const Node& n = m_nodes.at(i);
  const NodeModel& m = m_group_models.at(n.group);
  const std::int64_t K = cached_tokens_on(i, r);
  const std::int64_t T = r.prompt_tokens() - K;
  const double backlog =
      estimate_backlog(m, n.engine->ranks().pending_load_tokens() + n.queue->load_tokens(),
                       n.engine->ranks().compute_tokens() + n.queue->compute_tokens());
  return backlog + estimate_service(m, K, T).total_s;
}

std::size_t Cluster::outstanding(std::size_t i) const {
  return m_nodes.at(i).engine->ranks().outstanding() + m_nodes.at(i).queue->size();
}

std::size_t Cluster::waiting(std::size_t i) const {
  return m_nodes.at(i).engine->ranks().waiting() + m_nodes.at(i).queue->size();
}

namespace {
// The cluster's nodes `n` (all of them, or a P/D stage's) as routers see them
// (serving/router_policy.hpp): the router's node k is the cluster's node n[k].
class View final : public ClusterView {
 public:
  View(const Cluster& c, const std::vector<std::size_t>& n) : m_c(c), m_n(n) {}
  std::size_t nodes() const override { return m_n.size(); }
  std::size_t outstanding(std::size_t k) const override { return m_c.outstanding(m_n[k]); }
  std::size_t waiting(std::size_t k) const override { return m_c.waiting(m_n[k]); }
  double estimated_completion_s(std::size_t k, const Request& r) const override {
    return m_c.estimated_completion_s(m_n[k], r);
  }
  NodeCache cache(std::size_t k, const Request& r) const override {
    const std::size_t i = m_n[k];
    const ServingEngine& e = m_c.engine(i);
    NodeCache c;
    c.cached_tokens = m_c.cached_tokens_on(i, r);
    c.pending_prefill_tokens = e.ranks().compute_tokens() + m_c.queued_compute_tokens(i);
    c.kv_tokens_used = e.ranks().kv_tokens_used();
    c.kv_tokens_total = e.ranks().kv_tokens_total();
    c.store_bytes = e.ranks().store_bytes();
    return c;
  }
  double capacity(std::size_t k) const override {
    const ServingEngine& e = m_c.engine(m_n[k]);
    return e.layout().gpus * e.spec().system.gpu.peak(e.spec().serving.compute_dtype);
  }

 private:
  const Cluster& m_c;
  const std::vector<std::size_t>& m_n;
};
}  // namespace

std::size_t Cluster::choose(const Request& r) { return choose_among(m_entry, *m_router, r); }

std::size_t Cluster::choose_among(const std::vector<std::size_t>& nodes, RouterPolicy& router,
                                  const Request& r) {
  const std::size_t k = router.choose(r, View(*this, nodes));
  if (k >= nodes.size())
    throw std::logic_error(std::string("router ") + router_name(m_spec.cluster.router) +
                           " chose node " + std::to_string(k) + " of " +
                           std::to_string(nodes.size()));
  return nodes[k];
}

SummaryBuilder::Totals Cluster::combined_totals(const std::vector<std::size_t>& nodes,
                                                double wall_time_s) const {
  // Per-GPU figures are averaged over the GPUs of the nodes (weight = TP size); energy, tier
  // chunks and rejections add up.
  SummaryBuilder::Totals t;
  t.simulated_time_s = now_s();
  t.wall_time_s = wall_time_s;
  double w = 0;
  for (std::size_t i : nodes) {
    const SummaryBuilder::Totals e = m_nodes[i].engine->totals(wall_time_s);
    const double g = e.gpus;
    w += g;
    t.gpus += e.gpus;
    t.gpu_busy_s += g * e.gpu_busy_s;
    t.h2d_bytes_per_gpu += g * e.h2d_bytes_per_gpu;
    t.link_capacity_Bps += g * e.link_capacity_Bps;
    t.link_busy_s += g * e.link_busy_s;
    t.tdp_w += g * e.tdp_w;
    t.gpu_energy_j += e.gpu_energy_j;
    t.tier_hit_chunks += e.tier_hit_chunks;
    t.tier_miss_chunks += e.tier_miss_chunks;
    t.requests_rejected += e.requests_rejected;
    // Stack software time, model-level H2D bytes and tier counts add up over the nodes.
    t.h2d_model_bytes += e.h2d_model_bytes;
    t.stack_scheduler_s += e.stack_scheduler_s;
    t.stack_step_cpu_s += e.stack_step_cpu_s;
    t.stack_gpu_gap_s += e.stack_gpu_gap_s;
    t.stack_cpu_bound_s += e.stack_cpu_bound_s;
    t.stack_store_s += e.stack_store_s;
    t.tier_lookups += e.tier_lookups;
    t.tier_stored_chunks += e.tier_stored_chunks;
    t.tier_evicted_chunks += e.tier_evicted_chunks;
    t.tier_restored_chunks += e.tier_restored_chunks;
    t.tier_dropped_chunks += e.tier_dropped_chunks;
    t.tier_warm_chunks += e.tier_warm_chunks;
    t.tier_capacity_bytes += e.tier_capacity_bytes;
    t.tier_working_set_bytes += e.tier_working_set_bytes;
    t.kernel_events = e.kernel_events;  // the whole simulation's delta cycles
    for (const auto& c : TimeBreakdown::categories()) t.time.*c.field += g * (e.time.*c.field);
    t.load_bounds += e.load_bounds;  // load time per bound adds up over the nodes
    t.decode = t.decode || e.decode;
    t.end_to_end = t.end_to_end || e.end_to_end;
    if (e.kv_shard) {  // serving.replicated_kv: the copies are the largest node's
      t.kv_replication =
          t.kv_shard ? std::max(t.kv_replication, e.kv_replication) : e.kv_replication;
      t.kv_shard = true;
    }
    t.kv_allgather_bytes_per_gpu += g * e.kv_allgather_bytes_per_gpu;
    t.kv_allgather_s += g * e.kv_allgather_s;
    t.slo_set = t.slo_set || e.slo_set;
    t.prefix_cache = t.prefix_cache || e.prefix_cache;
    t.prefix_cache_evicted_blocks += g * e.prefix_cache_evicted_blocks;
  }
  // Closed loop: the cluster's router holds the clients (the nodes' engines have none).
  t.concurrency = static_cast<double>(m_spec.workload.concurrency);
  t.think_time_s = m_spec.workload.concurrency > 0 ? m_spec.workload.think_time_s : 0;
  if (w > 0) {
    for (const auto& c : TimeBreakdown::categories()) t.time.*c.field /= w;
    t.gpu_busy_s /= w;
    t.h2d_bytes_per_gpu /= w;
    t.link_capacity_Bps /= w;
    t.link_busy_s /= w;
    t.tdp_w /= w;
    t.kv_allgather_bytes_per_gpu /= w;
    t.kv_allgather_s /= w;
  }
  return t;
}

std::vector<std::pair<std::string, double>> Cluster::figures(double wall_time_s) const {
  const std::size_t groups = m_spec.nodes.size();
  std::vector<std::size_t> all(m_nodes.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  // Inter-token gaps go to each group's summary (the engines' sink): the pool's are theirs.
  SummaryBuilder pool = m_summary;
  for (const SummaryBuilder& g : m_group_summary) pool.merge_itl(g);
  std::vector<std::pair<std::string, double>> f = pool.figures(combined_totals(all, wall_time_s));

  std::vector<std::vector<std::pair<std::string, double>>> gf(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    std::vector<std::size_t> mine;
    for (std::size_t i = 0; i < m_nodes.size(); ++i)
      if (m_nodes[i].group == g) mine.push_back(i);
    gf[g] = m_group_summary[g].figures(combined_totals(mine, wall_time_s));
  }
  auto get = [](const std::vector<std::pair<std::string, double>>& v, const std::string& k) {
    for (const auto& [key, val] : v)
      if (key == k) return val;
    return std::numeric_limits<double>::quiet_NaN();
  };
  // The overall summary holds requests only (steps go to each group's summary): its per-step
  // figures are the groups', weighted by their steps.
  double steps = 0;
  for (std::size_t g = 0; g < groups; ++g) steps += get(gf[g], "steps");
  for (auto& [key, val] : f) {
    if (key == "steps") {
      val = steps;
    } else if (key == "step_time_mean_s" || key == "scheduled_tokens_per_iter" ||
               key == "budget_utilization" || key == "seqs_per_iter" || key == "vram_utilization") {
      double sum = 0;
      for (std::size_t g = 0; g < groups; ++g) {
        const double s = get(gf[g], "steps");
        if (s > 0) sum += s * get(gf[g], key);
      }
      val = steps > 0 ? sum / steps : std::numeric_limits<double>::quiet_NaN();
    }
  }
  // Per node group, the declared fields (serving/stat_catalog: StatWhen::Cluster) in order: the
  // router's own figures, and the group's summary figures of the same names.
  static const std::vector<std::string> fields = cluster_group_stat_fields();
  for (std::size_t g = 0; g < groups; ++g) {
    const std::string p = m_spec.nodes[g].name + ".";
    const double routed = static_cast<double>(m_group_routed[g]);
    for (const std::string& k : fields) {
      double v;
      if (k == "nodes") {
        v = m_spec.nodes[g].count;
      } else if (k == "requests_routed") {
        v = routed;
      } else if (k == "routed_fraction") {
        v = m_arrived ? routed / static_cast<double>(m_arrived)
                      : std::numeric_limits<double>::quiet_NaN();
      } else if (k == "offered_kappa_mean") {
        v = routed > 0 ? m_group_offered_kappa[g] / routed
                       : std::numeric_limits<double>::quiet_NaN();
      } else {
        if (!summary_stat_declared(k))
          throw std::logic_error("cluster: group figure '" + k +
                                 "' is neither the router's nor a summary figure");
        v = get(gf[g], k);
      }
      f.emplace_back(p + k, v);
    }
  }
  if (!m_spec.disaggregated()) return f;
  // P/D: the hand-offs' figures (serving/stat_catalog: StatWhen::Disagg), in declared order.
  const HandoffStats& h = m_handoff_stats;
  const double n = static_cast<double>(h.count);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const std::string& k : disagg_stat_names()) {
    double v = nan;
    if (k == "handoffs_nvlink") {  // only where a prefill and a decode group share a host
      if (!m_spec.handoff_within_node()) continue;
      v = static_cast<double>(h.nvlink);
    } else if (k == "handoffs")
      v = n;
    else if (k == "handoff_bytes_mean")
      v = n > 0 ? h.bytes / n : nan;
    else if (k == "handoff_wait_mean_s")
      v = n > 0 ? h.wait_s / n : nan;
    else if (k == "handoff_transfer_mean_s")
      v = n > 0 ? h.transfer_s / n : nan;
    else if (k == "handoff_p50_s")
      v = n > 0 ? h.total_s.quantile(0.5) : nan;
    else if (k == "handoff_p99_s")
      v = n > 0 ? h.total_s.quantile(0.99) : nan;
    else if (k.rfind("decode_tier_", 0) == 0) {  // only where a decode group has its tier
      if (!m_spec.any_decode_tier()) continue;
      v = 0;
      for (std::size_t d : m_decode) {
        const ServingEngine& e = *m_nodes[d].engine;
        if (k == "decode_tier_stored_chunks")
          v += static_cast<double>(e.totals(wall_time_s).tier_stored_chunks);
        else if (k == "decode_tier_relookups")
          v += static_cast<double>(e.relookups());
        else if (k == "decode_tier_reloaded_tokens")
          v += static_cast<double>(e.reloaded_tokens());
        else
          throw std::logic_error("cluster: P/D figure '" + k + "' is declared but not computed");
      }
    } else
      throw std::logic_error("cluster: P/D figure '" + k + "' is declared but not computed");
    f.emplace_back(k, v);
  }
  return f;
}

void Cluster::check_end() const {
  if (!m_handoffs.empty())
    throw std::logic_error("invariant violated: " + std::to_string(m_handoffs.size()) +
                           " P/D requests never finished their decode stage");
  // P/D: a handed-off request is routed twice (its prefill and its decode node).
  std::uint64_t handed = 0;
  for (std::size_t d : m_decode) handed += m_nodes[d].routed;
  std::uint64_t routed = 0, done = 0;
  for (const Node& n : m_nodes) {
    n.engine->check_end();
    if (n.engine->stats().arrived != n.routed)
      throw std::logic_error("invariant violated: node " + n.name + " was routed " +
                             std::to_string(n.routed) + " requests and saw " +
                             std::to_string(n.engine->stats().arrived));
    routed += n.routed;
    done += n.engine->stats().finished + n.engine->stats().rejected;
  }
  if (routed != m_arrived + handed || done != m_arrived + handed)
    throw std::logic_error("invariant violated: " + std::to_string(m_arrived) + " arrived (" +
                           std::to_string(handed) + " handed to decode nodes), " +
                           std::to_string(routed) + " routed, " + std::to_string(done) +
                           " finished or rejected");
}

std::vector<std::pair<std::string, double>> run_cluster(const ClusterRunSpec& spec,
                                                        WorkloadSource& source,
                                                        ClusterSinks sinks) {
  std::unique_ptr<Cluster> cluster;
  const auto t0 = std::chrono::steady_clock::now();
  run_simulation([&] { cluster = std::make_unique<Cluster>("cluster", spec, source, sinks); });
  if (spec.check) cluster->check_end();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return cluster->figures(wall);
}

std::vector<std::pair<std::string, double>> cluster_point(const ConfigNode& config,
                                                          std::uint64_t seed,
                                                          const std::string& base_dir) {
  const ClusterRunSpec spec = read_config<ClusterRunSpec>(config, "", nullptr);
  if (spec.workload.type == WorkloadType::Trace) validate_trace(spec.workload.trace, base_dir);
  auto source = make_source(spec.workload, seed, base_dir);
  std::vector<std::pair<std::string, double>> f = run_cluster(spec, *source);
  f.erase(
      std::remove_if(f.begin(), f.end(), [](const auto& kv) { return kv.first == "wall_time_s"; }),
      f.end());
  return f;
}

}  // namespace kappasim
