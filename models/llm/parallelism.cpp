#include "models/llm/parallelism.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "core/error.hpp"
#include "core/units.hpp"

namespace kappasim {

namespace {
std::string num(int v) { return std::to_string(v); }

// C(n − m, k) / C(n, k): none of k draws without replacement from n hits the m marked ones.
double p_none_of(int n, int m, int k) {
  if (k > n - m) return 0;
  double p = 1;
  for (int i = 0; i < k; ++i) p *= static_cast<double>(n - m - i) / (n - i);
  return p;
}
// Hypergeometric: P(c of the j marked items among tk drawn out of ng).
double hyper(int ng, int j, int tk, int c) {
  if (c > j || c > tk || tk - c > ng - j) return 0;
  // C(j, c) C(ng − j, tk − c) / C(ng, tk) via logs of gamma.
  auto lc = [](int n, int r) {
    return std::lgamma(n + 1.0) - std::lgamma(r + 1.0) - std::lgamma(n - r + 1.0);
  };
  return std::exp(lc(j, c) + lc(ng - j, tk - c) - lc(ng, tk));
}
}  // namespace

void ParallelismSpec::validate(const std::string& path) const {
  const std::string p = path.empty() ? "" : path + ".";
  if (tp < 0) throw InputError(p + "tp: must be >= 0 (0: serving.tp), got " + num(tp));
  if (dp_attention < 1)
    throw InputError(p + "dp_attention: must be at least 1, got " + num(dp_attention));
  if (ep < 1) throw InputError(p + "ep: must be at least 1, got " + num(ep));
  if (pp < 1) throw InputError(p + "pp: must be at least 1, got " + num(pp));
  if (nodes < 1) throw InputError(p + "nodes: must be at least 1, got " + num(nodes));
  if (!(nic_bandwidth_Bps > 0) || !std::isfinite(nic_bandwidth_Bps))
    throw InputError(p + "nic_bandwidth: must be a finite bandwidth > 0");
}

ParallelismSpec parse_layout(const std::string& text, const std::string& what) {
  ParallelismSpec p;
  p.tp = 1;
  std::stringstream ss(text);
  std::string item;
  bool any = false;
  std::vector<std::string> seen;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    auto trim = [](std::string s) {
      const auto a = s.find_first_not_of(" \t");
      const auto b = s.find_last_not_of(" \t");
      return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    const std::string key = trim(eq == std::string::npos ? item : item.substr(0, eq));
    const std::string val = eq == std::string::npos ? "" : trim(item.substr(eq + 1));
    const std::vector<std::string> keys = {"tp", "dp_attention", "ep",
                                           "pp", "nodes",        "nic_bandwidth"};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      const std::string near = nearest(key, keys);
      throw InputError(what + ": unknown layout key '" + excerpt(key) + "'" +
                       (near.empty() ? "" : "; did you mean '" + near + "'?") +
                       " (expected key=value items separated by commas: tp, dp_attention, ep, "
                       "pp, nodes, nic_bandwidth)");
    }
    if (val.empty())
      throw InputError(what + ": layout key '" + key + "' needs a value (" + key + "=N)");
    // A repeated key (tp=8,tp=4) is a typo, not "the last one wins" (issue 26.12).
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw InputError(what + ": layout key '" + key + "' is given twice (each key at most once)");
    seen.push_back(key);
    any = true;
    if (key == "nic_bandwidth") {
      try {
        p.nic_bandwidth_Bps = parse_quantity_as(val, dim::bandwidth);
      } catch (const UnitError& e) {
        throw InputError(what + ": nic_bandwidth: " + e.what());
      }
      continue;
    }
    int v = 0;
    std::size_t used = 0;
    try {
      v = std::stoi(val, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != val.size() || v < 1 || v > 1000000)
      throw InputError(what + ": layout key '" + key +
                       "' needs a whole number from 1 to 1000000, got '" + excerpt(val) + "'");
    if (key == "tp") p.tp = v;
    if (key == "dp_attention") p.dp_attention = v;
    if (key == "ep") p.ep = v;
    if (key == "pp") p.pp = v;
    if (key == "nodes") p.nodes = v;
  }
  if (!any) throw InputError(what + ": empty layout (expected e.g. tp=8 or dp_attention=8,ep=8)");
  p.validate(what);
  return p;
}

std::string layout_name(const ParallelismSpec& p) {
  std::string s = "tp=" + num(p.attention_tp());
  if (p.dp_attention > 1) s += ",dp_attention=" + num(p.dp_attention);
  if (p.ep > 1) s += ",ep=" + num(p.ep);
  if (p.pp > 1) s += ",pp=" + num(p.pp);
  if (p.nodes > 1) s += ",nodes=" + num(p.nodes);
  if (p.nic_bandwidth_Bps != kConnectX7BytesPerS)
    s += ",nic_bandwidth=" + format_quantity(p.nic_bandwidth_Bps, dim::bandwidth);
  return s;
}

std::vector<int> stage_layer_counts(int num_layers, int pp) {
  // vLLM model_executor/models/utils.py get_pp_indices: L // pp each; the remainder adds one
  // layer to each of the stages just before the last (the last stage holds the LM head).
  std::vector<int> n(static_cast<std::size_t>(pp), num_layers / pp);
  const int rem = num_layers % pp;
  for (int i = 2; i < rem + 2; ++i) n[static_cast<std::size_t>(pp - i)] += 1;
  return n;
}

double p_holder_not_selected(int experts, int held, int k, int groups, int topk_groups) {
  if (groups <= 1) return p_none_of(experts, held, k);
  const int s = experts / groups;    // experts per group
  const int pool = topk_groups * s;  // experts the token may choose from
  if (held % s == 0) {
    // The holder has j whole groups; c of them chosen (hypergeometric), then none of the k
    // experts may fall in those c groups' experts.
    const int j = held / s;
    double p = 0;
    for (int c = 0; c <= std::min(j, topk_groups); ++c)
      p += hyper(groups, j, topk_groups, c) * p_none_of(pool, c * s, k);
    return p;
  }
  // The holder has part of one group: not chosen, or chosen and none of its `held` picked.
  const double chosen = static_cast<double>(topk_groups) / groups;
  return (1 - chosen) + chosen * p_none_of(pool, held, k);
}

void validate_layout(const ParallelismSpec& p, const ModelSpec& m, int gpus_per_node,
                     const std::string& path) {
  p.validate(path);
  const std::string pre = path + ": ";
  const int tp = p.attention_tp();
  const int S = p.stage_gpus();
  const int G = p.gpus();
  const std::string count = "tp x dp_attention x pp = " + num(tp) + " x " + num(p.dp_attention) +
                            " x " + num(p.pp) + " = " + num(G) + " GPUs";
  if (G % p.nodes != 0)
    throw InputError(pre + "nodes: the layout's " + count + " do not split evenly over " +
                     num(p.nodes) + " nodes");
  const int g_n = G / p.nodes;
  if (g_n > gpus_per_node)
    throw InputError(pre + "nodes: the layout needs " + count + ", " + num(g_n) + " per node on " +
                     num(p.nodes) + " node(s), but a node of the system has " + num(gpus_per_node) +
                     " GPUs (raise nodes to " + num((G + gpus_per_node - 1) / gpus_per_node) +
                     " or shrink the layout)");
  if (S % g_n != 0 && g_n % S != 0)
    throw InputError(pre + "a pipeline stage (tp x dp_attention = " + num(S) +
                     " GPUs) must fill whole nodes or fit in one (" + num(g_n) + " GPUs per node)");
  const AttentionSpec& a = m.attention;
  if (a.num_q_heads % tp != 0)
    throw InputError(pre + "tp: " + num(tp) + " does not divide the " + num(a.num_q_heads) +
                     " query heads of " + m.name);
  if (a.type == AttentionType::Gqa) {
    if (tp >= a.num_kv_heads ? tp % a.num_kv_heads != 0 : a.num_kv_heads % tp != 0)
      throw InputError(pre + "tp: " + num(tp) + " must divide the " + num(a.num_kv_heads) +
                       " KV heads of " + m.name + " or be a multiple of them");
  }
  if (p.pp > m.num_layers)
    throw InputError(pre + "pp: " + num(p.pp) + " stages exceed the " + num(m.num_layers) +
                     " layers of " + m.name);
  if (p.ep > 1) {
    if (m.mlp.type != MlpType::Moe)
      throw InputError(pre + "ep: " + num(p.ep) + " > 1 needs a MoE model; " + m.name +
                       " has a dense MLP (use ep=1)");
    const int E = m.mlp.num_experts;
    if (p.ep > E)
      throw InputError(pre + "ep: " + num(p.ep) + " exceeds the " + num(E) + " routed experts of " +
                       m.name);
    if (E % p.ep != 0)
      throw InputError(pre + "ep: " + num(p.ep) + " does not divide the " + num(E) +
                       " routed experts of " + m.name);
    if (p.ep != S)
      throw InputError(pre + "ep: " + num(p.ep) + " must be 1 (experts tensor-parallel) or the " +
                       "stage's tp x dp_attention = " + num(S) +
                       " (vLLM/SGLang: the EP group is the attention DP x TP group)");
    const int ng = m.mlp.num_expert_groups;
    if (ng > 1) {
      const int n_e = S > g_n ? S / g_n : 1;
      for (int units : {p.ep, n_e})
        if (units > 1 && units % ng != 0 && ng % units != 0)
          throw InputError(pre + "ep: " + num(units) + " EP ranks or nodes do not align with the " +
                           num(ng) + " expert groups of " + m.name +
                           " (one must divide the other)");
    }
  }
}

HybridKv stage_hybrid_kv_per_gpu(const ModelSpec& m, DType kv, int tp, int pp, int stage) {
  const std::vector<int> layers = stage_layer_counts(m.num_layers, pp);
  int first = 0;
  for (int s = 0; s < stage; ++s) first += layers.at(static_cast<std::size_t>(s));
  int n[4] = {0, 0, 0, 0};  // full, sliding, chunked, linear layers of the stage
  for (int l = first; l < first + layers.at(static_cast<std::size_t>(stage)); ++l) {
    const LayerKind k = m.layer_kind(l);
    ++n[k == LayerKind::Sliding ? 1 : k == LayerKind::Chunked ? 2 : k == LayerKind::Linear ? 3 : 0];
  }
  const HybridKv whole = hybrid_kv_per_gpu(m, kv, tp);
  const double b = kv_bytes_per_token_per_layer_per_gpu(m, kv, tp);
  const int linear = m.count_layers(LayerKind::Linear);
  HybridKv h;
  h.full_Bpt = n[0] * b;
  h.sliding_Bpt = n[1] * b;
  h.chunked_Bpt = n[2] * b;
  if (h.sliding_Bpt > 0) h.window = whole.window;
  if (h.chunked_Bpt > 0) h.chunk = whole.chunk;
  // Every linear layer's state is the same size: the stage holds its layers' share of the whole.
  if (linear > 0) h.state_B = whole.state_B * n[3] / linear;
  return h;
}

LayoutCost layout_cost(const ModelSpec& m, DType kv, const std::string& compute_dtype,
                       const ParallelismSpec& p, int gpus_per_node, bool hybrid) {
  validate_layout(p, m, gpus_per_node, "layout");
  LayoutCost c;
  c.layout = p;
  const int tp = p.attention_tp(), dp = p.dp_attention;
  const int S = p.stage_gpus();
  c.gpus = p.gpus();
  c.stage_gpus = S;
  c.gpus_per_node = c.gpus / p.nodes;
  const int g_n = c.gpus_per_node;
  const double h = static_cast<double>(m.hidden_size);
  const double hb = h * 2;  // one token's hidden state in BF16

  // KV per layer per own-rank token on one GPU.
  // Every layer's KV as a unified cache keeps it (issue 25; the same as the full-attention
  // accounting for a model without a layer pattern).
  // Hybrid (issue 25): a stage holds per token its full layers' KV only (stage_hybrid_kv_per_gpu);
  // the copies are the attention layers' (a linear layer's state is split tp ways, never copied).
  if (hybrid) {
    c.kv_bytes_per_layer_rank = kv_bytes_per_token_per_layer_per_gpu(m, kv, tp);
    c.kv_replication = kv_replication_factor(m, kv, tp);
  } else {
    c.kv_bytes_per_layer_rank = kv_bytes_per_token_unified_per_gpu(m, kv, tp) / m.num_layers;
    c.kv_replication =
        tp * c.kv_bytes_per_layer_rank * m.num_layers / kv_bytes_per_token_unified(m, kv);
  }

  // EP all-to-all (ep == S > 1): expected other ranks / nodes a token's top-k reach.
  c.dispatch_bytes_per_value = compute_dtype == "fp8" ? 1 + 4.0 / 128 : 2;
  c.combine_bytes_per_value = 2;
  double nvl_copies = 0, nic_copies = 0;
  if (p.ep > 1) {
    const int E = m.mlp.num_experts, k = m.mlp.experts_per_token;
    const int ng = m.mlp.num_expert_groups > 1 ? m.mlp.num_expert_groups : 1;
    const int tg = ng > 1 ? std::max(1, m.mlp.topk_groups) : 1;
    const int g = std::min(S, g_n);  // EP ranks per node
    const int n_e = S / g;           // nodes the EP group spans
    const double p_rank = 1 - p_holder_not_selected(E, E / S, k, ng, tg);
    const double p_node = n_e > 1 ? 1 - p_holder_not_selected(E, E / n_e, k, ng, tg) : 0;
    c.ep_ranks_reached = (S - 1) * p_rank;
    c.ep_nodes_reached = (n_e - 1) * p_node;
    // DeepEP normal kernels: a token goes once to each remote node it needs (RDMA, to the
    // same-index GPU), then over NVLink to the other selected ranks there; within the
    // sender's node straight over NVLink. Per node: (g − 1) · p_rank NVLink copies expected.
    nvl_copies = n_e * (g - 1) * p_rank;
    nic_copies = c.ep_nodes_reached;
  }
  const double ab_ep = h * (c.dispatch_bytes_per_value + c.combine_bytes_per_value);
  const bool tp_on_nvlink = tp <= g_n && g_n % tp == 0;
  const bool stage_on_nvlink = S <= g_n;
  const double allreduce_tp = tp > 1 ? 2.0 * (tp - 1) / tp * hb / dp : 0;

  const ParamCounts pc = count_params(m);
  const double active_total = pc.active();
  const std::vector<int> layers = stage_layer_counts(m.num_layers, p.pp);
  int first = 0;
  for (int s = 0; s < p.pp; ++s) {
    StageCost st;
    st.first_layer = first;
    st.layers = layers[static_cast<std::size_t>(s)];
    double nvl = 0, nic = 0;
    for (int l = first; l < first + st.layers; ++l) {
      const bool moe = m.is_moe_layer(l);
      st.moe_layers += moe ? 1 : 0;
      st.active_params += attention_params_per_layer(m) + mlp_active_params_per_layer(m, l) + 2 * h;
      // Attention output: all-reduce within the DP rank's TP group.
      st.tp_allreduce_bytes += allreduce_tp;
      (tp_on_nvlink ? nvl : nic) += allreduce_tp;
      if (!moe || (p.ep == 1 && dp == 1)) {
        // Dense MLP (or MoE tensor-parallel over tp): one more all-reduce over tp.
        st.tp_allreduce_bytes += allreduce_tp;
        (tp_on_nvlink ? nvl : nic) += allreduce_tp;
      } else if (p.ep == 1) {
        // MoE tensor-parallel over the whole stage (vLLM: DP x TP group): all-gather the DP
        // ranks' tokens, reduce-scatter the outputs: 2 (S − 1)/S of a token per GPU.
        const double b = 2.0 * (S - 1) / S * hb;
        st.moe_collective_bytes += b;
        (stage_on_nvlink ? nvl : nic) += b;
      } else {
        st.ep_nvlink_bytes += nvl_copies * ab_ep / S;
        st.ep_nic_bytes += nic_copies * ab_ep / S;
        nvl += nvl_copies * ab_ep / S;
        nic += nic_copies * ab_ep / S;
      }
    }
    if (s == 0) st.active_params += pc.embedding;
    if (s == p.pp - 1) st.active_params += pc.lm_head + h;  // LM head, final norm
    if (s < p.pp - 1) {
      // Activations to the next stage, split over the stage's GPUs (Megatron scatter/gather);
      // over the NIC when the next stage starts on another node.
      st.pp_bytes = hb / S;
      const bool crosses = ((s + 1) * S) % g_n == 0;
      (crosses ? nic : nvl) += st.pp_bytes;
    }
    st.kv_bytes_rank = hybrid ? stage_hybrid_kv_per_gpu(m, kv, tp, p.pp, s).full_Bpt
                              : st.layers * c.kv_bytes_per_layer_rank;
    st.kv_bytes_share = st.kv_bytes_rank / dp;
    // One stage holds the whole model: exactly F_pf (no rounding from the per-layer sum).
    st.flops_fraction = p.pp == 1 ? 1.0 : st.active_params / active_total;
    st.nvlink_bytes = nvl;
    st.nic_bytes = nic;
    c.max_stage_layers = std::max(c.max_stage_layers, st.layers);
    c.kv_bytes_rank = std::max(c.kv_bytes_rank, st.kv_bytes_rank);
    c.kv_bytes_share = std::max(c.kv_bytes_share, st.kv_bytes_share);
    c.max_flops_fraction = std::max(c.max_flops_fraction, st.flops_fraction);
    c.stages.push_back(st);
    first += st.layers;
  }
  return c;
}

double layout_weight_bytes_per_gpu(const ModelSpec& m, const ParallelismSpec& p,
                                   double bytes_per_param) {
  const int tp = p.attention_tp(), S = p.stage_gpus();
  const double h = static_cast<double>(m.hidden_size);
  const ParamCounts pc = count_params(m);
  const std::vector<int> layers = stage_layer_counts(m.num_layers, p.pp);
  double worst = 0;
  int first = 0;
  for (int s = 0; s < p.pp; ++s) {
    double n = 0;
    for (int l = first; l < first + layers[static_cast<std::size_t>(s)]; ++l) {
      n += attention_params_per_layer(m) / tp + 2 * h;
      const bool moe = m.is_moe_layer(l);
      if (!moe) {
        n += 3 * h * static_cast<double>(m.mlp.intermediate_size) / tp;
        continue;
      }
      const double expert = 3 * h * static_cast<double>(m.mlp.moe_intermediate_size);
      n += m.mlp.num_experts * expert / S + m.mlp.num_shared_experts * expert / tp +
           h * m.mlp.num_experts;
    }
    if (s == 0) n += pc.embedding / tp;
    if (s == p.pp - 1) n += pc.lm_head / tp + h;
    worst = std::max(worst, n);
    first += layers[static_cast<std::size_t>(s)];
  }
  return worst * bytes_per_param;
}

const std::vector<std::pair<const char*, ReplicatedKv>>& replicated_kv_names() {
  static const std::vector<std::pair<const char*, ReplicatedKv>> n = {
      {"each_rank", ReplicatedKv::EachRank}, {"shard_allgather", ReplicatedKv::ShardAllgather}};
  return n;
}

int kv_replication_factor(const ModelSpec& m, DType kv, int tp) {
  // One attention layer's bytes per token on a GPU over the whole layer's (its value at tp 1):
  // the same ratio for every attention layer kind; a linear layer's state is split, not copied
  // (issue 25: so a model with linear layers has a factor too).
  const double copies = tp * kv_bytes_per_token_per_layer_per_gpu(m, kv, tp) /
                        kv_bytes_per_token_per_layer_per_gpu(m, kv, 1);
  return std::max(1, static_cast<int>(std::lround(copies)));
}

ShardedKvLoad shard_replicated_kv(double bytes_per_gpu, int r) {
  if (r < 1) throw std::logic_error("shard_replicated_kv: replication factor < 1");
  ShardedKvLoad s;
  s.r = r;
  s.host_bytes = bytes_per_gpu / r;
  s.gather_bytes = bytes_per_gpu * (r - 1) / r;
  return s;
}

double ring_allgather_s(double bytes_per_gpu, int r, double link_Bps, double step_latency_s) {
  if (r <= 1 || !(bytes_per_gpu > 0)) return 0;
  if (!(link_Bps > 0)) throw std::logic_error("ring_allgather_s: link rate must be > 0");
  return (r - 1) * step_latency_s + bytes_per_gpu * (r - 1) / r / link_Bps;
}

}  // namespace kappasim
