// A routed pool of serving nodes in one SystemC simulation: every node is one tensor-parallel
// group served by its own ServingEngine (its own fabric, GPU KV cache, CPU KV tier and
// scheduler); a router thread pulls the one global WorkloadSource, waits until each arrival,
// picks a node from the nodes' live state (a registered router, serving/router_policy.hpp and
// serving/routers/) and hands the request to that node's queue. Each engine reads its queue as its
// WorkloadSource: next() blocks (sc_core::wait, legal: the engine calls it from its arrivals
// SC_THREAD) until the router pushes a request or closes the stream. Routing takes no simulated
// time. docs/routing.md describes the routers and the κ-aware estimator.
#pragma once

#include <systemc>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/quantile.hpp"
#include "serving/cluster_spec.hpp"
#include "serving/engine.hpp"
#include "serving/metrics.hpp"

namespace kappasim {

// A node's share of the stream: requests the router pushed and the engine has not yet pulled.
class NodeQueue : public WorkloadSource {
 public:
  explicit NodeQueue(std::string name) : m_name(std::move(name)) {}
  bool next(Request& out) override;  // blocks in simulated time until a push or close()
  std::string describe() const override { return "requests routed to " + m_name; }
  // `load_tokens` / `compute_tokens`: the router's estimate of the request's cached tokens to
  // load and prompt tokens to compute on this node (counted in the node's backlog until pulled).
  void push(const Request& r, std::int64_t load_tokens, std::int64_t compute_tokens);
  void close();
  std::size_t size() const { return m_q.size(); }
  std::int64_t load_tokens() const { return m_load; }
  std::int64_t compute_tokens() const { return m_compute; }

 private:
  struct Item {
    Request r;
    std::int64_t load = 0, compute = 0;
  };
  std::string m_name;
  std::deque<Item> m_q;
  std::int64_t m_load = 0, m_compute = 0;
  bool m_closed = false;
  sc_core::sc_event m_ev;
};

struct ClusterSinks {
  RequestsCsvWriter* requests = nullptr;  // every node's finished requests; may be null
  // Called at each routing decision with the node index; may be empty.
  std::function<void(const Request&, std::size_t node)> on_route;
  // Called for every finished request with its node; may be empty.
  std::function<void(const RequestRecord&, std::size_t node)> on_finish;
};

class Cluster : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Cluster);
  // Builds every node's engine (InputError for bad inputs, before simulating).
  Cluster(const sc_core::sc_module_name& name, const ClusterRunSpec& spec, WorkloadSource& source,
          ClusterSinks sinks);
  ~Cluster() override;

  std::size_t nodes() const { return m_nodes.size(); }
  const std::string& node_name(std::size_t i) const { return m_nodes.at(i).name; }
  std::size_t group_of(std::size_t i) const { return m_nodes.at(i).group; }
  const ServingEngine& engine(std::size_t i) const { return *m_nodes.at(i).engine; }
  const NodeModel& node_model(std::size_t i) const {
    return m_group_models.at(m_nodes.at(i).group);
  }
  std::uint64_t routed(std::size_t i) const { return m_nodes.at(i).routed; }
  std::uint64_t arrived() const { return m_arrived; }

  // The node a request goes to now (the router's decision, serving/routers/; advances
  // round_robin's cursor).
  std::size_t choose(const Request& r);
  // Requests routed to node i and not finished: queued for its engine or inside it.
  std::size_t outstanding(std::size_t i) const;
  std::size_t waiting(std::size_t i) const;  // of them, not yet admitted by its scheduler
  // For kappa_aware (and tests): the cached tokens `r` would find on node i right now.
  std::int64_t cached_tokens_on(std::size_t i, const Request& r) const;
  // Prompt tokens to compute of the requests queued for node i (not yet in its engine).
  std::int64_t queued_compute_tokens(std::size_t i) const {
    return m_nodes.at(i).queue->compute_tokens();
  }
  // kappa_aware's estimate of when `r` would finish on node i if sent there now (seconds from
  // now): backlog + isolated service time.
  double estimated_completion_s(std::size_t i, const Request& r) const;

  // After the simulation: the cluster's figures (SummaryBuilder's, over all requests and all
  // GPUs, then per node group "<group>.<figure>"); wall_time_s is the one non-deterministic one.
  std::vector<std::pair<std::string, double>> figures(double wall_time_s) const;
  // Invariants at the end (RunSpec::check): every engine's, and every routed request finished
  // once or was rejected.
  void check_end() const;

 private:
  struct Node {
    std::string name;
    std::size_t group = 0;
    EngineRole role = EngineRole::Mixed;
    std::string host;  // its physical host (ClusterRunSpec::node_host; empty: its own)
    std::unique_ptr<NodeQueue> queue;
    std::unique_ptr<ServingEngine> engine;
    std::uint64_t routed = 0;
  };
  // P/D disaggregation (docs/disaggregation.md): a request between its arrival and its decode
  // node's finish: its prefill node's record, and its hand-off's times.
  struct Handoff {
    Request r;
    RequestRecord prefill;
    std::size_t prefill_node = 0;
    bool nvlink = false;  // its decode node shares the prefill node's host: over NVLink
    double prefill_end_s = -1, pull_start_s = -1, pull_end_s = -1, bytes = 0;
    // cluster.handoff.send: push_layer: the decode node the router chose at arrival; whether the
    // prefill node's sends have all arrived, and the event a decode node waiting for them wakes on.
    std::size_t decode_node = 0;
    bool pushed = false;
    std::shared_ptr<sc_core::sc_event> pushed_ev;
  };
  struct HandoffStats {
    std::uint64_t count = 0, nvlink = 0;
    double bytes = 0, wait_s = 0, transfer_s = 0;
    QuantileSketch total_s;
  };
  void route();
  std::size_t choose_among(const std::vector<std::size_t>& nodes, RouterPolicy& router,
                           const Request& r);
  void finished(const RequestRecord& rec, std::size_t node);   // a request's last stage ended
  void prefilled(const RequestRecord& rec, std::size_t node);  // a P/D prefill node's finish
  void decoded(const RequestRecord& rec, std::size_t node);    // a P/D decode node's finish
  void pulled(std::uint64_t id, double start_s, double end_s, double bytes);
  void pushed(std::uint64_t id, std::size_t node, double bytes);  // push_layer: all arrived
  double wait_pushed(std::uint64_t id);  // push_layer: a decode node waits for the last layer
  void rejected(std::uint64_t id, std::size_t node);
  void prefill_stage_done();  // one request left the prefill stage: maybe close decode queues
  SummaryBuilder::Totals combined_totals(const std::vector<std::size_t>& nodes,
                                         double wall_time_s) const;

  ClusterRunSpec m_spec;
  WorkloadSource& m_source;
  ClusterSinks m_sinks;
  std::vector<NodeModel> m_group_models;
  std::vector<SummaryBuilder> m_group_summary;  // steps and requests of each group's nodes
  std::vector<double> m_group_offered_kappa;    // Σ κ_ratio (prefix / new) routed per group
  std::vector<std::uint64_t> m_group_routed;
  SummaryBuilder m_summary;  // requests of every node
  // Issue 25: the CXL pool the nodes' systems share (null: none); outlives the engines.
  std::unique_ptr<CxlPoolShare> m_cxl_pool;
  std::vector<Node> m_nodes;
  std::unique_ptr<RouterPolicy> m_router;  // cluster.router, from the registry
  std::uint64_t m_arrived = 0;
  // P/D: the nodes arrivals go to (every node without P/D), the decode nodes and their router
  // (its own instance of cluster.router), the requests between stages, the hand-offs' figures.
  std::vector<std::size_t> m_entry, m_decode;
  std::unique_ptr<RouterPolicy> m_decode_router;
  std::map<std::uint64_t, Handoff> m_handoffs;
  std::uint64_t m_in_prefill = 0;  // routed to a prefill node, not yet past it
  bool m_source_done = false;
  // workload.concurrency > 0: the closed-loop clients (serving/closed_loop.hpp), taken before a
  // request is routed, given back when it finishes or is rejected anywhere; else null.
  std::unique_ptr<ClientPool> m_clients;
  HandoffStats m_handoff_stats;
};

// Runs a whole cluster simulation (one per process); returns Cluster::figures().
std::vector<std::pair<std::string, double>> run_cluster(const ClusterRunSpec& spec,
                                                        WorkloadSource& source,
                                                        ClusterSinks sinks = {});

// The `cluster` sweep kind's work, without argv or files: reads the config (InputError on bad
// input), makes the workload with `seed` (relative trace paths from `base_dir`), runs the cluster
// and returns its deterministic figures (no wall_time_s).
std::vector<std::pair<std::string, double>> cluster_point(const ConfigNode& config,
                                                          std::uint64_t seed,
                                                          const std::string& base_dir);

}  // namespace kappasim
