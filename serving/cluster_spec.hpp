// The config of a routed serving cluster (serving/cluster runs it) and the router's completion-time
// estimator. No SystemC here: the config layer, the fuzzers and unit tests read it without the
// simulator. docs/routing.md explains the routers and what the estimator ignores.
//
//   cluster:
//     router: kappa_aware        # round_robin | least_loaded | kappa_aware (any registered)
//     nodes:                     # node groups; each node = one TP group = one ServingEngine
//       - {name: pcie, count: 2, system: h100, serving: {tp: 8}}
//       - {name: c2c,  count: 1, system: gb200, serving: {tp: 2}}
//   model: qwen3-235b-a22b       # shared by all nodes
//   workload: {...}              # one stream of requests, routed at arrival
//   check: true                  # optional, as in a run config
//
// `nodes` is a list, which the visitor layer does not read, so read_config<ClusterRunSpec> is
// specialised below: every other key goes through ConfigReader (unknown keys, ranges, presets,
// provenance) and each list item is read with read_config<NodeGroupSpec>.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "models/llm/architecture.hpp"
#include "serving/handoff.hpp"
#include "serving/request_cost.hpp"
#include "serving/router_policy.hpp"
#include "serving/run_spec.hpp"
#include "serving/serving_spec.hpp"
#include "systems/system_spec.hpp"
#include "workloads/request.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {

// RouterKind (cluster.router) and the router registry: serving/router_policy.hpp; one file per
// router under serving/routers/.

// One group of identical nodes. Node names are "<name>_<i>" (i = 0 .. count-1).
struct NodeGroupSpec {
  std::string name;
  int count = 1;
  SystemSpec system;
  ServingSpec serving;  // ServingSpec defaults per node, as in a run config
  // P/D disaggregation (docs/disaggregation.md): mixed (prefill and decode on one node, the
  // default), prefill or decode.
  EngineRole role = EngineRole::Mixed;
  // P/D on one node (docs/disaggregation.md, "Prefill and decode on one node"): groups naming the
  // same host share physical nodes, node i of each on host "<host>_<i>" (equal counts, one
  // system); their GPUs together fit the system's. A hand-off between two nodes on one host
  // travels over NVLink. Empty: the group's nodes are hosts of their own.
  std::string host;
  // P/D, a decode group (docs/disaggregation.md, "A decode node's KV tier"): the node uses its KV
  // store (serving.tier_capacity, serving.tiers) as a second connector beside the hand-off's
  // (vLLM's MultiConnector): it stores what its stack stores of the requests it decodes (the pulled
  // prompt's full chunks: decode_tier_stores_prompt; the chunks decode fills, with the stack's
  // store_decode), and a preempted request looks its prompt and generated tokens up there
  // (loading the hit instead of recomputing it). False (the default, as LMCache's kv_consumer and
  // the llm-d and Dynamo P/D guides run the decode pool): it neither looks up nor stores.
  bool decode_tier = false;

  template <class V>
  void visit(V& v) {
    v.text("name", name, req("node group name ([A-Za-z0-9_]+; metrics are <name>.<figure>)"));
    v.integer("count", count, opt("identical nodes in the group", Range::AtLeastOne));
    v.object("system", system, req("each node's hardware system"), "system");
    v.object("serving", serving, opt("each node's serving settings (vLLM + LMCache)"));
    v.choice("role", role, engine_role_names(),
             opt("mixed, prefill or decode (P/D disaggregation: docs/disaggregation.md)"));
    v.text("host", host,
           opt("P/D: the physical nodes this group shares with the other groups naming the same "
               "host (node i of each on host <host>_<i>; hand-offs between them over NVLink)"));
    // Written only when set (every effective config of a P/D cluster as before).
    if (!V::kWriting || decode_tier)
      v.boolean(
          "decode_tier", decode_tier,
          opt("P/D decode group: the node uses its KV tier (serving.tier_capacity, "
              "serving.tiers): it stores what its stack stores of the requests it decodes and "
              "looks up its preempted requests there (docs/disaggregation.md)"));
  }
  void validate(const std::string& path) const;
  // GPUs one node of the group takes on its host (serving.tp, or the layout's tp x dp x pp).
  int node_gpus() const;
};

// The `cluster:` section without its node list (read by the visitor).
struct ClusterHead {
  // [A] default round_robin: the simplest router (vLLM production-stack's roundrobin routing
  // logic); the routing study sets it explicitly.
  RouterKind router = RouterKind::RoundRobin;
  // P/D: how a decode node pulls a prompt's KV from its prefill node (serving/handoff.hpp).
  HandoffSpec handoff;

  template <class V>
  void visit(V& v) {
    v.choice("router", router, router_names(),
             opt("routing policy, a registered name (kappasim presets policies); with P/D it "
                 "picks the prefill node at arrival and the decode node at the hand-off"));
    v.object("handoff", handoff,
             opt("P/D: the KV hand-off's transfer-engine profile, a preset name (kappasim list "
                 "transfer-engine: nixl-vllm, mooncake-te, lmcache-pd) or a map of its keys"),
             "transfer-engine");
  }
  void validate(const std::string&) const {}
};

struct ClusterRunSpec {
  ClusterHead cluster;
  std::vector<NodeGroupSpec> nodes;  // cluster.nodes
  ModelSpec model;
  WorkloadSpec workload;
  bool check = kCheckInvariantsByDefault;

  // Everything but cluster.nodes.
  template <class V>
  void visit(V& v) {
    v.object("cluster", cluster, req("the node groups and the router"));
    v.object("model", model, req("the LLM every node serves"), "model");
    v.object("workload", workload, req("the requests (one stream, routed at arrival)"));
    v.boolean("check", check,
              opt("check the simulator's invariants as it runs (on in debug builds)"));
  }
  // Node group g checked as the run it serves (RunSpec::validate of node_run_spec(g)); read_config
  // calls it for each group as it is read, so an error carries the group's position.
  void validate_node(std::size_t g, const std::string& path) const;
  void validate(const std::string& path) const;

  int node_count() const;
  // P/D disaggregation: some node group is a prefill or a decode group (validate() then requires
  // both, and no mixed group).
  bool disaggregated() const;
  // The run config of node group g (trace off, check as the cluster's).
  RunSpec node_run_spec(std::size_t g) const;
  // The physical host of node i of group g ("<host>_<i>"; empty: a host of its own).
  std::string node_host(std::size_t g, int i) const;
  // Whether some prefill node and some decode node sit on different hosts (so a hand-off may
  // cross the NIC).
  bool handoff_crosses_nodes() const;
  // cluster.handoff.send: push_layer's refusals (InputError; `p` the file's prefix).
  void validate_push(const std::string& p) const;
  // cluster.nodes[].decode_tier's refusals (InputError naming it; `p` the file's prefix).
  void validate_decode_tiers(const std::string& p) const;
  // Whether some decode group has its own KV tier (NodeGroupSpec::decode_tier).
  bool any_decode_tier() const;
  // Whether some prefill node shares its host with a decode node (hand-offs over NVLink).
  bool handoff_within_node() const;
};

// P/D, a decode group with its tier (NodeGroupSpec::decode_tier): whether it stores the pulled
// prompt's full chunks when the request first runs there. A tier connector beside the hand-off's
// sees a prompt another connector filled as computed and not yet stored: vLLM's
// OffloadingConnector starts its store at block 0 (_next_stored_block_idx unset; MultiConnector
// gives it the request's blocks with 0 external tokens), LMCacheConnectorV1 (kv_both) at the
// tokens it loaded itself (RequestTracker.num_saved_tokens = lmcache_cached_tokens, 0 here). So
// true, except when the hand-off is LMCache's own P/D backend (unit chunk) on an LMCache stack:
// its retrieve counted the prompt as saved.
bool decode_tier_stores_prompt(const HandoffSpec& handoff, const StackProfile& stack);

// Reads a cluster config: InputError naming file:line:col (or the key) for any bad input.
ClusterRunSpec read_cluster_config(const ConfigNode& root, const std::string& path,
                                   ProvenanceTable* prov = nullptr);
// The effective config tree (defaults filled), for --dump-config and config.yaml.
ConfigNode write_cluster_config(const ClusterRunSpec& spec, const ProvenanceTable* prov = nullptr);
// True when a config tree is a cluster config (a map with a `cluster:` key).
bool is_cluster_config(const ConfigNode& root);

template <>
inline ClusterRunSpec read_config<ClusterRunSpec>(const ConfigNode& node, const std::string& path,
                                                  ProvenanceTable* prov) {
  return read_cluster_config(node, path, prov);
}

// ---- the κ-aware router's estimator (pure) ---------------------------------------------------

// What the router knows about one node: fixed per node group (from the same descriptions the
// engine reads) plus live state it reads at each arrival.
struct NodeModel {
  ModelSpec model;
  GpuSpec gpu;
  int tp = 1;
  std::string compute_dtype = "bf16";
  double kv_bytes_per_token_gpu = 0;  // B_kv per GPU at this TP (KV-head replication included)
  // Payload bytes/s each GPU's host link gives when all tp GPUs load at once (the flow model's
  // max-min fair share on an idle system: shared C2C, DRAM, read tags; see group_load_rate).
  double load_rate_Bps = 0;
  bool overlap = false;             // layerwise: load overlaps compute (max), else serial (sum)
  double retrieve_fixed_s = 0;      // tier CPU cost per request
  double retrieve_per_entry_s = 0;  // tier CPU cost per chunk (block for block_dma)
  int chunk_tokens = 256;           // tier entry
  double step_overhead_s = 0;
  std::int64_t budget_tokens = 4096;  // max_num_batched_tokens
  double full_step_s = 0;             // compute of one full-budget step at zero context
  RequestCostModel cost;              // estimate_service's model (serving/request_cost)
};
// Builds the fixed part for one node group (InputError if the system cannot be simulated).
NodeModel make_node_model(const RunSpec& node);

// group_load_rate (the per-GPU load rate of a TP group): serving/request_cost.hpp.

// The isolated service time of one request on a node: request_cost (serving/request_cost) of K
// cached + T new tokens, nothing recomputed: t_load = retrieve CPU + the load (gaps, per-copy
// costs, K·B_kv_gpu / load_rate, at least the CPU issuing it); t_compute = batch_step_time of one
// slice (T new over K cached) + ceil(T / budget) step overheads; serial paths add them,
// layerwise overlaps them as a pipeline of L layers: cpu + max(x + last layer, x / L + compute).
struct ServiceEstimate {
  double load_s = 0, compute_s = 0, total_s = 0;
};
ServiceEstimate estimate_service(const NodeModel& n, std::int64_t cached_tokens,
                                 std::int64_t new_tokens);

// The work a node has ahead: load of the cached tokens of the requests not yet admitted, plus
// the compute of every outstanding compute token as full-budget steps (the remainder as one
// partial step), each step with its overhead. Attention over the context is ignored here.
double estimate_backlog(const NodeModel& n, std::int64_t pending_load_tokens,
                        std::int64_t pending_compute_tokens);

}  // namespace kappasim
