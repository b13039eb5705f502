#include "serving/cluster_spec.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "interconnects/flow_network.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "systems/topology.hpp"

namespace kappasim {

namespace {
bool valid_group_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}
constexpr int kMaxNodes = 256;  // a sanity bound: each node is a whole engine in one simulation
}  // namespace

void NodeGroupSpec::validate(const std::string& path) const {
  const std::string p = path.empty() ? "" : path + ".";
  if (!valid_group_name(name))
    throw InputError(p + "name: expected 1-64 characters of [A-Za-z0-9_], got \"" + name + "\"");
  if (count > kMaxNodes)
    throw InputError(p + "count: at most " + std::to_string(kMaxNodes) + " nodes, got " +
                     std::to_string(count));
  if (!host.empty() && !valid_group_name(host))
    throw InputError(p + "host: expected 1-64 characters of [A-Za-z0-9_], got \"" + host + "\"");
}

int NodeGroupSpec::node_gpus() const {
  const ParallelismSpec& l = serving.parallelism;
  if (!l.beyond_tp()) return serving.tp;
  return (l.tp > 0 ? l.tp : serving.tp) * l.dp_attention * l.pp;
}

namespace {
// P/D on one node (docs/disaggregation.md): the groups naming one host share its nodes. Each
// engine's fabric is its own (one host's DRAM, sockets, PCIe and NIC ports, NVLink ports); a
// decode engine touches none of the host's side (no tier lookups or stores: it pulls over
// NVLink), so one prefill and any decode groups can share a host without any resource counted
// twice. Refused: what would count a shared resource twice or cannot be a host.
void validate_hosts(const std::vector<NodeGroupSpec>& nodes, const std::string& p) {
  std::map<std::string, std::vector<std::size_t>> hosts;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (!nodes[i].host.empty()) hosts[nodes[i].host].push_back(i);
  for (const auto& [h, gs] : hosts) {
    const NodeGroupSpec& f = nodes[gs.front()];
    const std::string fp = "cluster.nodes." + std::to_string(gs.front());
    int gpus = 0, prefill = 0, decode = 0;
    std::string sum;
    for (std::size_t i : gs) {
      const NodeGroupSpec& g = nodes[i];
      const std::string ip = p + "cluster.nodes." + std::to_string(i) + ".";
      if (g.role == EngineRole::Mixed)
        throw InputError(ip + "host: sharing host '" + h +
                         "' is modelled for a P/D cluster's prefill and decode groups (role "
                         "prefill or decode); group " +
                         g.name + " is mixed");
      if (g.count != f.count)
        throw InputError(ip + "count: the groups on host '" + h +
                         "' share its nodes, node i of each on host " + h + "_i: group " + g.name +
                         " has " + std::to_string(g.count) + " nodes, group " + f.name + " (" + fp +
                         ") " + std::to_string(f.count));
      if (g.system.name != f.system.name)
        throw InputError(ip + "system: the groups on host '" + h + "' share one system; group " +
                         g.name + " names '" + g.system.name + "', group " + f.name + " (" + fp +
                         ") '" + f.system.name + "'");
      if (g.serving.parallelism.nodes > 1)
        throw InputError(ip + "serving.parallelism.nodes: a group sharing host '" + h +
                         "' serves each replica on one node of it; got " +
                         std::to_string(g.serving.parallelism.nodes) + " nodes");
      if (g.serving.link_fidelity != LinkFidelity::Flow)
        throw InputError(ip + "serving.link_fidelity: a hand-off within host '" + h +
                         "' is a GPU-to-GPU transfer over NVLink, which the flow back end "
                         "carries; use link_fidelity: flow");
      prefill += g.role == EngineRole::Prefill;
      decode += g.role == EngineRole::Decode;
      if (prefill > 1)
        throw InputError(ip +
                         "host: at most one prefill group per host: each engine's fabric "
                         "holds the host's DRAM, CPU KV tier and PCIe switches whole, and "
                         "two prefill engines would each count them (host '" +
                         h + "')");
      gpus += g.node_gpus();
      sum += (sum.empty() ? "" : " + ") + g.name + " " + std::to_string(g.node_gpus());
      if (gpus > g.system.gpus)
        throw InputError(ip + "host: the GPUs of the groups on host '" + h + "' (" + sum + " = " +
                         std::to_string(gpus) + ") exceed the " + std::to_string(g.system.gpus) +
                         " GPUs of system '" + g.system.name + "'");
    }
    if (prefill > 0 && decode > 0 && !(f.system.gpu.nvlink_Bps.value_or(0) > 0))
      throw InputError(p + fp +
                       ".host: the KV hand-off between the prefill and decode groups on "
                       "host '" +
                       h + "' travels over NVLink, which GPU '" + f.system.gpu.name +
                       "' of system '" + f.system.name +
                       "' lacks (no system.gpu.nvlink_bandwidth); give the groups hosts of "
                       "their own (the hand-off then crosses the NIC)");
  }
}
}  // namespace

void ClusterRunSpec::validate_node(std::size_t g, const std::string& path) const {
  // The run the group serves (RunSpec::validate), as a single-node run is checked: its TP
  // against its GPUs, its precisions, the model it can serve, and its capacities against its own
  // hardware (issue 20 part 5: a DRAM tier no larger than the host's DRAM less the stack's
  // reserve, a KV buffer within the HBM the weights leave, tiers the host can hold).
  node_run_spec(g).validate(path);
}

void ClusterRunSpec::validate(const std::string& path) const {
  const std::string p = path.empty() ? "" : path + ".";
  if (nodes.empty()) throw InputError(p + "cluster.nodes: at least one node group is needed");
  // Each node group is checked as the run it serves (validate_node), where it is read.
  std::set<std::string> seen;
  for (const NodeGroupSpec& g : nodes)
    if (!seen.insert(g.name).second)
      throw InputError(p + "cluster.nodes: node group name \"" + g.name + "\" used twice");
  if (node_count() > kMaxNodes)
    throw InputError(p + "cluster.nodes: at most " + std::to_string(kMaxNodes) +
                     " nodes in all, got " + std::to_string(node_count()));
  // Issue 25: every node whose system names a CXL pool shares the one pool of the cluster, so
  // they must name the same pool and the same pooled tier, and fit its switch's host ports.
  const NodeGroupSpec* first = nullptr;
  std::size_t first_i = 0;
  int hosts = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeGroupSpec& g = nodes[i];
    if (!g.system.has_cxl_pool()) continue;
    const std::string ip = p + "cluster.nodes." + std::to_string(i) + ".";
    hosts += g.count * std::max(1, g.serving.parallelism.nodes);
    if (!first) {
      first = &g;
      first_i = i;
      continue;
    }
    const std::string fp = "cluster.nodes." + std::to_string(first_i) + ".";
    if (g.system.cxl_pool.name != first->system.cxl_pool.name)
      throw InputError(ip + "system.cxl_pool: the nodes of a cluster share one CXL pool; group " +
                       g.name + " names '" + g.system.cxl_pool.name + "', " + fp +
                       "system.cxl_pool '" + first->system.cxl_pool.name + "'");
    if (g.serving.tiers.cxl_capacity_bytes != first->serving.tiers.cxl_capacity_bytes)
      throw InputError(ip + "serving.tiers.cxl_capacity: the nodes sharing a CXL pool share one " +
                       "pooled KV tier; group " + g.name + " gives " +
                       format_quantity(g.serving.tiers.cxl_capacity_bytes, dim::bytes) + ", " + fp +
                       "serving.tiers.cxl_capacity " +
                       format_quantity(first->serving.tiers.cxl_capacity_bytes, dim::bytes));
  }
  if (first && hosts > first->system.cxl_pool.host_ports)
    throw InputError(p + "cluster.nodes: " + std::to_string(hosts) + " hosts share CXL pool '" +
                     first->system.cxl_pool.name + "', whose switch has " +
                     std::to_string(first->system.cxl_pool.host_ports) +
                     " host ports (cxl_pool.host_ports)");
  validate_hosts(nodes, p);
  validate_decode_tiers(p);
  if (!disaggregated()) return;
  // P/D: prefill and decode groups, nothing mixed; a decode node pulls over its NIC unless every
  // prefill node shares its host with every decode node (docs/disaggregation.md: NVLink).
  const bool nic = handoff_crosses_nodes();
  bool prefill = false, decode = false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeGroupSpec& g = nodes[i];
    const std::string ip = p + "cluster.nodes." + std::to_string(i) + ".";
    if (g.role == EngineRole::Mixed)
      throw InputError(ip +
                       "role: a P/D cluster (some group is prefill or decode) needs every "
                       "group's role to be prefill or decode; mixed groups beside P/D pools "
                       "are not modelled");
    prefill = prefill || g.role == EngineRole::Prefill;
    decode = decode || g.role == EngineRole::Decode;
    if (nic && g.role == EngineRole::Decode && !(g.system.nic_Bps.value_or(0) > 0))
      throw InputError(ip +
                       "system.nic_bandwidth: a decode node pulls the prompt's KV from its "
                       "prefill node over its NIC (GPUDirect RDMA); give the NIC bandwidth "
                       "per GPU (e.g. \"50 GB/s\" for ConnectX-7 400 Gb/s)");
    if (nic && g.role == EngineRole::Prefill && !(g.system.nic_Bps.value_or(0) > 0))
      throw InputError(ip +
                       "system.nic_bandwidth: the KV hand-off leaves a prefill node's GPUs "
                       "through their NIC (GPUDirect RDMA); a system without one cannot hand "
                       "off (every hand-off crosses the NIC); give the NIC bandwidth per GPU");
  }
  if (!prefill || !decode)
    throw InputError(p +
                     "cluster.nodes: a P/D cluster needs a group with role prefill and one "
                     "with role decode (got only " +
                     std::string(prefill ? "prefill" : "decode") + ")");
  // The hand-off re-shards the KV from the prefill rank's layout to the decode rank's
  // (serving/handoff.hpp reshard_pieces; docs/disaggregation.md): any two layouts that each split
  // the model's KV can hand off. Refused only what no re-shard can mean: a layout whose TP
  // neither divides nor is a multiple of the KV heads (no GPU would hold a whole head), and
  // pools whose KV caches hold different dtypes (the hand-off copies the prefill's bytes into
  // the decode's blocks; no connector converts them).
  const int heads = handoff_kv_heads(model);
  if (cluster.handoff.send == HandoffSend::PushLayer) validate_push(p);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeGroupSpec& g = nodes[i];
    const std::string ip = p + "cluster.nodes." + std::to_string(i) + ".";
    const ParallelismSpec& l = g.serving.parallelism;
    const int tp = l.tp > 0 ? l.tp : g.serving.tp;
    if (tp <= heads ? heads % tp != 0 : tp % heads != 0)
      throw InputError(ip + (l.tp > 0 ? "serving.parallelism.tp" : "serving.tp") + ": " +
                       std::to_string(tp) + " must divide the " + std::to_string(heads) +
                       " KV heads of " + model.name +
                       " or be a multiple of them: the P/D hand-off moves each decode GPU's "
                       "whole KV heads");
    if (g.serving.kv_dtype != nodes[0].serving.kv_dtype)
      throw InputError(ip + "serving.kv_dtype: " + dtype_name(g.serving.kv_dtype) + ", but group " +
                       nodes[0].name + " (cluster.nodes.0) caches the KV in " +
                       dtype_name(nodes[0].serving.kv_dtype) +
                       "; the P/D hand-off copies the prefill's KV bytes into the decode's "
                       "blocks and no connector converts them: give every group one kv_dtype");
    // A hybrid cache keeps only the sliding layers' window and the linear layers' state: a
    // unified decode cache would need tokens the prefill never kept.
    if (g.serving.hybrid_kv() != nodes[0].serving.hybrid_kv())
      throw InputError(ip + "serving.kv_cache: " + (g.serving.hybrid_kv() ? "hybrid" : "unified") +
                       ", but group " + nodes[0].name + " (cluster.nodes.0) keeps a " +
                       (nodes[0].serving.hybrid_kv() ? "hybrid" : "unified") +
                       " KV cache; the P/D hand-off copies the prefill's blocks as they are: give "
                       "every group one kv_cache");
  }
}

void ClusterRunSpec::validate_decode_tiers(const std::string& p) const {
  // A decode node's own KV tier (docs/disaggregation.md, "A decode node's KV tier"): refused
  // where it cannot mean anything or is not modelled.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeGroupSpec& g = nodes[i];
    if (!g.decode_tier) continue;
    const std::string key = p + "cluster.nodes." + std::to_string(i) + ".decode_tier";
    if (g.role != EngineRole::Decode)
      throw InputError(key + ": group " + g.name + " has role " + engine_role_name(g.role) +
                       "; only a P/D decode group (role: decode) has a decode tier (a prefill or "
                       "mixed group looks up and stores through its tier anyway)");
    if (!g.host.empty())
      throw InputError(key + ": group " + g.name + " shares host '" + g.host +
                       "' with a prefill group, whose engine's fabric holds that host's DRAM, CPU "
                       "KV tier and PCIe switches whole; a decode tier there would count them "
                       "twice (not modelled): give the decode group hosts of its own");
    if (g.serving.hybrid_kv())
      throw InputError(key + ": group " + g.name +
                       " keeps a hybrid KV cache (serving.kv_cache: hybrid), whose decode chunks "
                       "carry no window or state and whose prompt chunks a preempted request "
                       "cannot extend; not modelled");
    if (cluster.handoff.send == HandoffSend::PushLayer && g.serving.stack.load == StackLoad::Async)
      throw InputError(key + ": group " + g.name + "'s stack '" + g.serving.stack.name +
                       "' loads asynchronously (serving.stack.load: async), and an async tier load "
                       "beside push_layer's receive (cluster.handoff.send) is not modelled: use "
                       "send: pull or an in-step stack");
  }
}

bool decode_tier_stores_prompt(const HandoffSpec& handoff, const StackProfile& stack) {
  return !(handoff.unit == HandoffUnit::Chunk && stack.family == StackFamily::Lmcache);
}

void ClusterRunSpec::validate_push(const std::string& p) const {
  // The layer-wise push (docs/disaggregation.md) models the same layout on both pools, one decode
  // rank, over the NICs: each prefill GPU sends its layer's share to the decode GPU at its
  // position.
  const std::string key = p + "cluster.handoff.send: push_layer";
  const auto layout = [](const NodeGroupSpec& g) {
    const ParallelismSpec& l = g.serving.parallelism;
    return std::array<int, 4>{l.tp > 0 ? l.tp : g.serving.tp, l.dp_attention, l.pp, l.nodes};
  };
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeGroupSpec& g = nodes[i];
    const std::string ip = "cluster.nodes." + std::to_string(i) + ".";
    if (layout(g) != layout(nodes[0]))
      throw InputError(key + " needs one KV layout on every group (" + ip +
                       "serving: tp, parallelism differ from cluster.nodes.0's); the re-shard of a "
                       "layer-wise push is not modelled: use send: pull");
    if (g.role == EngineRole::Decode && g.serving.parallelism.dp_attention > 1)
      throw InputError(key + ": decode group " + g.name + " (" + ip +
                       "serving.parallelism.dp_attention " +
                       std::to_string(g.serving.parallelism.dp_attention) +
                       ") has several ranks; a push to a DP-attention rank chosen at arrival is "
                       "not modelled: use send: pull");
    if (!g.host.empty())
      throw InputError(key + ": group " + g.name + " (" + ip +
                       "host) shares a host; a layer-wise push over NVLink is not modelled: use "
                       "send: pull");
    if (g.serving.hybrid_kv())
      throw InputError(key + ": group " + g.name + " (" + ip +
                       "serving.kv_cache: hybrid); a hybrid cache's per-layer bytes are not "
                       "modelled for a layer-wise push: use send: pull");
  }
}

bool ClusterRunSpec::disaggregated() const {
  for (const NodeGroupSpec& g : nodes)
    if (g.role != EngineRole::Mixed) return true;
  return false;
}

std::string ClusterRunSpec::node_host(std::size_t g, int i) const {
  const std::string& h = nodes.at(g).host;
  return h.empty() ? std::string() : h + "_" + std::to_string(i);
}

bool ClusterRunSpec::handoff_crosses_nodes() const {
  for (std::size_t a = 0; a < nodes.size(); ++a)
    for (std::size_t b = 0; b < nodes.size(); ++b) {
      if (nodes[a].role != EngineRole::Prefill || nodes[b].role != EngineRole::Decode) continue;
      // Hosts of their own, different hosts, or several nodes on each (node i of one group
      // may hand off to node j != i of the other).
      if (nodes[a].host.empty() || nodes[a].host != nodes[b].host || nodes[a].count > 1)
        return true;
    }
  return false;
}

bool ClusterRunSpec::any_decode_tier() const {
  return std::any_of(nodes.begin(), nodes.end(),
                     [](const NodeGroupSpec& g) { return g.decode_tier; });
}

bool ClusterRunSpec::handoff_within_node() const {
  for (std::size_t a = 0; a < nodes.size(); ++a)
    for (std::size_t b = 0; b < nodes.size(); ++b)
      if (nodes[a].role == EngineRole::Prefill && nodes[b].role == EngineRole::Decode &&
          !nodes[a].host.empty() && nodes[a].host == nodes[b].host)
        return true;
  return false;
}

int ClusterRunSpec::node_count() const {
  int n = 0;
  for (const NodeGroupSpec& g : nodes) n += g.count;
  return n;
}

RunSpec ClusterRunSpec::node_run_spec(std::size_t g) const {
  RunSpec r;
  r.model = model;
  r.system = nodes.at(g).system;
  r.serving = nodes.at(g).serving;
  adopt_gpu_kv_buffer(r.serving, r.system.gpu);  // the GPU's own KV buffer (issue 12.12)
  // P/D: a prefill node computes the first token only; a decode node decodes every request.
  if (nodes.at(g).role == EngineRole::Prefill) r.serving.decode = false;
  if (nodes.at(g).role == EngineRole::Decode) r.serving.decode = true;
  r.workload = workload;
  // Closed loop: the cluster's router holds the clients (serving/cluster.cpp); a node's engine
  // takes the routed requests as they come.
  r.workload.concurrency = 0;
  r.workload.think_time_s = 0;
  r.trace = false;
  r.check = check;
  return r;
}

bool is_cluster_config(const ConfigNode& root) {
  return root.is_map() && root.find("cluster") != nullptr;
}

ClusterRunSpec read_cluster_config(const ConfigNode& root, const std::string& path,
                                   ProvenanceTable* prov) {
  const std::string p = path.empty() ? "" : path + ".";
  if (!root.is_map())
    throw InputError(root.loc, (path.empty() ? std::string("config") : path) +
                                   ": expected a map with cluster, model and workload");
  const ConfigNode* cl = root.find("cluster");
  if (!cl || cl->is_null())
    throw InputError(root.loc,
                     (path.empty() ? std::string("the config") : "'" + path + "'") +
                         ": missing required key 'cluster' (the node groups and the router)");
  if (!cl->is_map()) throw InputError(cl->loc, p + "cluster: expected a map (router, nodes)");
  const ConfigNode* nodes = cl->find("nodes");
  if (!nodes || nodes->is_null())
    throw InputError(cl->loc, p + "cluster: missing required key 'nodes' (a list of node groups)");
  if (nodes->kind != ConfigNode::Kind::Seq || nodes->items.empty())
    throw InputError(nodes->loc, p + "cluster.nodes: expected a non-empty list of node groups "
                                     "({name, count, system, serving})");

  // Everything but the list through the visitor (unknown keys, presets, provenance).
  ConfigNode rest = root;
  ConfigNode* rest_cluster = rest.find("cluster");
  rest_cluster->erase("nodes");
  ClusterRunSpec out;
  {
    ConfigReader r(rest, path, prov);
    out.visit(r);
    r.finish();
  }
  for (std::size_t i = 0; i < nodes->items.size(); ++i) {
    const ConfigNode& item = nodes->items[i];
    const std::string ip = p + "cluster.nodes." + std::to_string(i);
    if (!item.is_map())
      throw InputError(item.loc, ip + ": expected a map ({name, count, system, serving})");
    NodeGroupSpec g;
    ConfigReader r(item, ip, prov);
    g.visit(r);
    r.finish();
    out.nodes.push_back(std::move(g));
    try {
      out.nodes.back().validate(ip);
      out.validate_node(i, ip + ".");
    } catch (const InputError& e) {
      throw InputError(item.loc, e.what());
    }
  }
  try {
    out.validate(path);
  } catch (const InputError& e) {
    throw InputError(nodes->loc, e.what());
  }
  return out;
}

ConfigNode write_cluster_config(const ClusterRunSpec& spec, const ProvenanceTable* prov) {
  ClusterRunSpec copy = spec;
  ConfigNode out = ConfigNode::make_map();
  ConfigWriter w(out, "", prov);
  copy.visit(w);
  ConfigNode list;
  list.kind = ConfigNode::Kind::Seq;
  for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
    list.items.push_back(write_config(spec.nodes[i], "cluster.nodes." + std::to_string(i), prov));
    if (spec.nodes[i].host.empty()) list.items.back().erase("host");  // a host of its own
  }
  out.find("cluster")->set("nodes", std::move(list));
  return out;
}

// ---- estimator -------------------------------------------------------------------------------

// group_load_rate: serving/request_cost.cpp (the request-cost model every estimate shares).

NodeModel make_node_model(const RunSpec& node) {
  const ServingSpec& sv = node.serving;
  NodeModel n;
  n.model = node.model;
  n.gpu = node.system.gpu;
  n.tp = sv.tp;
  n.compute_dtype = sv.compute_dtype;
  // Hybrid: a stored chunk's bytes per token (its sliding-window tail and state amortised over
  // it, served_kv_store_per_gpu), what a pending load moves per token of a long prefix.
  n.kv_bytes_per_token_gpu = served_kv_store_per_gpu(node.model, sv, sv.tp);
  n.cost = request_cost_model(node);  // the request-cost model (serving/request_cost)
  n.load_rate_Bps = n.cost.load_rate_Bps;
  n.overlap = load_path_costs(sv.load_path).per_layer;
  // The stack's in-step retrieve costs (serving/stack_profile): per request, and per chunk the
  // up-front re-hash and the GPU gap, on every tier (an on-package one too).
  const RetrieveCost c0 = stack_retrieve(sv.stack, sv.load_path, 1, 0, 0, node.model.num_layers);
  const RetrieveCost c1 = stack_retrieve(sv.stack, sv.load_path, 1, 1, 0, node.model.num_layers);
  n.retrieve_fixed_s = c0.cpu_before_s;
  // Layer-wise: the rank's CPU issues every (layer, chunk) object, serial per layer.
  n.retrieve_per_entry_s =
      c1.cpu_before_s + c1.gpu_gap_s - c0.cpu_before_s + node.model.num_layers * c1.per_layer_cpu_s;
  n.chunk_tokens = sv.tier_chunk_tokens();
  n.step_overhead_s = sv.step_overhead_s;
  n.budget_tokens = sv.max_num_batched_tokens;
  n.full_step_s =
      batch_step_time(n.model, n.gpu, n.tp, {{static_cast<double>(n.budget_tokens), 0, true}},
                      n.compute_dtype, 1.0, n.cost.kv_dtype, n.cost.stack.launch)
          .total.compute_time_s;
  return n;
}

ServiceEstimate estimate_service(const NodeModel& n, std::int64_t cached_tokens,
                                 std::int64_t new_tokens) {
  // The one request-cost model the engine's recompute choice and the design study use too.
  const RequestCost c = request_cost(n.cost, std::max<std::int64_t>(cached_tokens, 0),
                                     std::max<std::int64_t>(new_tokens, 1), 0);
  ServiceEstimate e;
  e.load_s = c.load_s;
  e.compute_s = c.compute_s;
  e.total_s = c.total_s;
  return e;
}

double estimate_backlog(const NodeModel& n, std::int64_t pending_load_tokens,
                        std::int64_t pending_compute_tokens) {
  double t = static_cast<double>(std::max<std::int64_t>(pending_load_tokens, 0)) *
             n.kv_bytes_per_token_gpu / n.load_rate_Bps;
  if (pending_compute_tokens > 0) {
    const std::int64_t full = pending_compute_tokens / n.budget_tokens;
    const std::int64_t rest = pending_compute_tokens % n.budget_tokens;
    t += static_cast<double>(full) * (n.full_step_s + n.step_overhead_s);
    if (rest > 0)
      t += batch_step_time(n.model, n.gpu, n.tp, {{static_cast<double>(rest), 0, true}},
                           n.compute_dtype, 1.0, n.cost.kv_dtype, n.cost.stack.launch)
               .total.compute_time_s +
           n.step_overhead_s;
  }
  return t;
}

}  // namespace kappasim
