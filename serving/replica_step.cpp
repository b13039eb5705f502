#include "serving/replica_step.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "serving/paged_kv.hpp"

namespace kappasim {

namespace {
constexpr double kHiddenBf16 = 2;  // bytes per value of a BF16 hidden state

bool is_moe_model(const ModelSpec& m) { return m.mlp.type == MlpType::Moe; }

bool is_expert_kernel(const Kernel& k) {
  return k.name.rfind("experts_", 0) == 0 || k.name == "moe_sum";
}

// The routed-expert kernels of one MoE layer on one GPU: time and FLOPs.
struct ExpertPart {
  double time_s = 0, flops = 0, hbm_bytes = 0;
};
ExpertPart expert_part(const ModelSpec& m, const GpuSpec& gpu, int layer, double T, int tp,
                       const std::string& dtype, DType kv) {
  ExpertPart e;
  for (const Kernel& k : layer_kernels(m, layer, T, 0, tp, weight_dtype_for(dtype), kv)) {
    if (!is_expert_kernel(k)) continue;
    const KernelTime t = kernel_time(k, gpu, dtype);
    e.time_s += t.time_s;
    e.flops += k.flops;
    e.hbm_bytes += k.hbm_bytes;
  }
  return e;
}
}  // namespace

std::int64_t replica_kv_blocks(const RunSpec& spec, const ReplicaLayout& L, double carve_bytes) {
  const ServingSpec& sv = spec.serving;
  const double weights = layout_weight_bytes_per_gpu(
      spec.model, L.p, bytes_per_element(weight_dtype_for(sv.compute_dtype)));
  const double v_eff = sv.gpu_memory_utilization * spec.system.gpu.hbm_capacity_bytes - weights -
                       sv.activation_reserve_bytes - carve_bytes;
  if (!(v_eff > 0))
    throw InputError("serving.parallelism: layout '" + layout_name(L.p) +
                     "' leaves no HBM for the KV cache");
  return kv_blocks_for(v_eff, sv.block_tokens, L.cost.kv_bytes_rank);
}

ReplicaLayout make_replica_layout(const RunSpec& spec) {
  const ServingSpec& sv = spec.serving;
  ReplicaLayout L;
  L.p = sv.parallelism;
  if (L.p.tp == 0) L.p.tp = sv.tp;
  const int gpn = spec.system.gpus;
  validate_layout(L.p, spec.model, gpn, "serving.parallelism");
  // replica_step_cost times the dense layers as one block before the MoE ones.
  if (spec.model.mlp.type == MlpType::Moe && spec.model.mlp.moe_layer_step > 1)
    throw InputError("model.mlp.moe_layer_step: model '" + spec.model.name +
                     "' interleaves dense and MoE layers (moe_layer_step " +
                     std::to_string(spec.model.mlp.moe_layer_step) +
                     "); serving.parallelism layouts beyond tensor parallelism take "
                     "the dense layers to come first and do not model it: use serving.tp");
  L.cost = layout_cost(spec.model, sv.kv_dtype, sv.compute_dtype, L.p, gpn, sv.hybrid_kv());
  L.tp = L.p.attention_tp();
  L.dp = L.p.dp_attention;
  L.stage_gpus = L.p.stage_gpus();
  L.pp = L.p.pp;
  L.gpus = L.p.gpus();
  L.gpus_per_node = L.cost.gpus_per_node;
  const GpuSpec& g = spec.system.gpu;
  if (L.stage_gpus > 1 || L.pp > 1) {
    if (!g.nvlink_Bps)
      throw InputError("system.gpu.nvlink_bandwidth: needed for serving.parallelism '" +
                       layout_name(L.p) + "' (GPU '" + g.name + "')");
    L.nvlink_Bps = *g.nvlink_Bps;
    L.nvlink_latency_s = g.nvlink_latency_s.value_or(0);
  }
  // The routed experts are timed as layer_kernels at tp = the stage's GPUs (same FLOPs and
  // expert bytes as E/ep whole experts per GPU), which needs the stage size to split the heads.
  if (is_moe_model(spec.model) && L.stage_gpus > 1) {
    try {
      check_prefill_args(spec.model, L.stage_gpus, 1, 0);
    } catch (const InputError& e) {
      throw InputError("serving.parallelism: layout '" + layout_name(L.p) +
                       "': the layout step times the experts over the stage's " +
                       std::to_string(L.stage_gpus) +
                       " GPUs, which must split the model's heads (" + e.what() + ")");
    }
  }
  L.nic_Bps = spec.system.nic_Bps.value_or(L.p.nic_bandwidth_Bps);
  L.nic_latency_s = spec.system.nic_latency_s.value_or(0);
  if (L.p.ep > 1) {
    const ModelSpec& m = spec.model;
    const int E = m.mlp.num_experts, k = m.mlp.experts_per_token;
    const int ng = m.mlp.num_expert_groups > 1 ? m.mlp.num_expert_groups : 1;
    const int tg = ng > 1 ? std::max(1, m.mlp.topk_groups) : 1;
    const int S = L.stage_gpus;
    const int gn = std::min(S, L.gpus_per_node);
    const int n_e = S / gn;
    L.p_gpu = 1 - p_holder_not_selected(E, E / S, k, ng, tg);
    L.p_node = n_e > 1 ? 1 - p_holder_not_selected(E, E / n_e, k, ng, tg) : 0;
  }
  return L;
}

A2aPhase a2a_phase(const ReplicaLayout& L, const ModelSpec& m,
                   const std::vector<double>& gpu_tokens, double bytes_per_value) {
  const int S = L.stage_gpus;
  const int gn = std::min(S, L.gpus_per_node);  // stage GPUs per node
  const std::size_t n = static_cast<std::size_t>(S);
  A2aPhase a;
  a.pair_bytes.assign(n * n, 0);
  a.nvl_out.assign(n, 0);
  a.nvl_in.assign(n, 0);
  a.nic_out.assign(n, 0);
  a.nic_in.assign(n, 0);
  const double tok = static_cast<double>(m.hidden_size) * bytes_per_value;
  auto add = [&](int from, int to, double b, bool nic) {
    if (!(b > 0)) return;
    const std::size_t f = static_cast<std::size_t>(from), t = static_cast<std::size_t>(to);
    a.pair_bytes[f * n + t] += b;
    (nic ? a.nic_out : a.nvl_out)[f] += b;
    (nic ? a.nic_in : a.nvl_in)[t] += b;
  };
  for (int s = 0; s < S; ++s) {
    const double t = gpu_tokens[static_cast<std::size_t>(s)];
    const int node = s / gn;
    for (int d = 0; d < S; ++d) {
      if (d == s) continue;
      if (d / gn == node) {
        add(s, d, t * L.p_gpu * tok, false);  // NVLink straight to the rank
      } else if (d % gn == s % gn) {
        // RDMA once per remote node to the GPU of the same local index (DeepEP normal
        // kernels), which forwards over NVLink to that node's other selected ranks.
        add(s, d, t * L.p_node * tok, true);
        for (int f = (d / gn) * gn; f < (d / gn + 1) * gn; ++f)
          if (f != d) add(d, f, t * L.p_gpu * tok, false);
      }
    }
  }
  double nvl = 0, nic = 0;
  for (std::size_t i = 0; i < n; ++i) {
    nvl = std::max({nvl, a.nvl_out[i], a.nvl_in[i]});
    nic = std::max({nic, a.nic_out[i], a.nic_in[i]});
  }
  // The ports work in parallel; the phase ends with the busiest one, plus its latency.
  const double t_nvl = nvl > 0 ? nvl / L.nvlink_Bps + L.nvlink_latency_s : 0;
  const double t_nic = nic > 0 ? nic / L.nic_Bps + L.nic_latency_s : 0;
  a.time_s = std::max(t_nvl, t_nic);
  return a;
}

ReplicaStepCost replica_step_cost(const RunSpec& spec, const ReplicaLayout& L,
                                  const std::vector<std::vector<SeqSlice>>& rank_batches) {
  const ModelSpec& m = spec.model;
  const GpuSpec& gpu = spec.system.gpu;
  const ServingSpec& sv = spec.serving;
  const std::string& dt = sv.compute_dtype;
  const int nl = static_cast<int>(m.num_layers);
  const bool moe_model = m.mlp.type == MlpType::Moe;
  const int D = moe_model ? m.mlp.first_dense_layers : nl;  // dense layers come first
  const std::size_t R = static_cast<std::size_t>(L.dp);
  if (rank_batches.size() != R)
    throw std::logic_error("replica_step_cost: one batch per DP rank expected");
  ReplicaStepCost c;
  c.rank_tokens.assign(R, 0);
  // Per rank: one dense layer's and one MoE layer's non-expert time, and the edge kernels.
  std::vector<double> dense_s(R, 0), moe_local_s(R, 0), edge_s(R, 0);
  double t_all = 0, local_work_flops = 0, local_work_hbm = 0;
  for (std::size_t r = 0; r < R; ++r) {
    std::vector<SeqSlice> batch = rank_batches[r];
    for (const SeqSlice& s : batch) c.rank_tokens[r] += s.T;
    if (batch.empty()) batch.push_back(SeqSlice{1, 0, false});  // vLLM's dummy batch
    double T = 0;
    for (const SeqSlice& s : batch) T += s.T;
    t_all += T;
    const StepTime st = batch_step_time(m, gpu, L.tp, batch, dt, 1.0, sv.kv_dtype, sv.stack.launch);
    dense_s[r] = D > 0 ? st.first_layer_s : 0;
    ExpertPart own;
    if (D < nl) {
      own = expert_part(m, gpu, D, T, L.tp, dt, sv.kv_dtype);
      moe_local_s[r] = st.last_layer_s - own.time_s;
    }
    edge_s[r] = st.total.compute_time_s - D * dense_s[r] - (nl - D) * st.last_layer_s;
    local_work_flops += L.tp * (st.total.flops - (nl - D) * own.flops);
    local_work_hbm += L.tp * (st.total.hbm_bytes - (nl - D) * own.hbm_bytes);
  }
  // Routed experts over every rank's tokens, balanced over the stage's GPUs.
  ExpertPart ex;
  if (D < nl) ex = expert_part(m, gpu, D, t_all, L.stage_gpus, dt, sv.kv_dtype);
  // Tokens each stage GPU sends in the all-to-all: its 1/tp share of its rank's tokens.
  std::vector<double> gpu_tokens(static_cast<std::size_t>(L.stage_gpus), 0);
  for (int gi = 0; gi < L.stage_gpus; ++gi) {
    const std::size_t r = static_cast<std::size_t>(gi / L.tp);
    gpu_tokens[static_cast<std::size_t>(gi)] = std::max(c.rank_tokens[r], 1.0) / L.tp;
  }
  A2aPhase disp, comb;
  if (L.p.ep > 1 && D < nl) {
    disp = a2a_phase(L, m, gpu_tokens, L.cost.dispatch_bytes_per_value);
    comb = a2a_phase(L, m, gpu_tokens, L.cost.combine_bytes_per_value);
  }
  const double h = static_cast<double>(m.hidden_size);
  const int S = L.stage_gpus;
  const bool stage_on_nvlink = S <= L.gpus_per_node;
  // ep = 1 with dp > 1: all-gather before, reduce-scatter after the experts, over the stage.
  double gather_s = 0;
  if (L.p.ep == 1 && L.dp > 1 && D < nl) {
    const double b = (S - 1.0) / S * t_all * h * kHiddenBf16;
    gather_s =
        stage_on_nvlink ? b / L.nvlink_Bps + L.nvlink_latency_s : b / L.nic_Bps + L.nic_latency_s;
  }
  const std::vector<int> layers = stage_layer_counts(nl, L.pp);
  c.rank_local_s.assign(static_cast<std::size_t>(L.pp), std::vector<double>(R, 0));
  int first = 0;
  double total_flops = local_work_flops, total_hbm = local_work_hbm;
  for (int s = 0; s < L.pp; ++s) {
    const int n_layers = layers[static_cast<std::size_t>(s)];
    const int n_dense = std::clamp(D - first, 0, n_layers);
    const int n_moe = n_layers - n_dense;
    const bool last = s == L.pp - 1;
    double dense_max = 0, moe_max = 0, edge_max = 0;
    for (std::size_t r = 0; r < R; ++r) {
      dense_max = std::max(dense_max, dense_s[r]);
      moe_max = std::max(moe_max, moe_local_s[r]);
      edge_max = std::max(edge_max, edge_s[r]);
      c.rank_local_s[static_cast<std::size_t>(s)][r] =
          n_dense * dense_s[r] + n_moe * moe_local_s[r] + (last ? edge_s[r] : 0);
    }
    // Lockstep per layer: every layer waits for the slowest rank.
    const double stage = n_dense * dense_max + n_moe * moe_max + (last ? edge_max : 0);
    c.stage_local_s.push_back(stage);
    c.local_s += stage;
    for (std::size_t r = 0; r < R; ++r)
      c.rank_idle_s += (stage - c.rank_local_s[static_cast<std::size_t>(s)][r]) / L.dp;
    c.stage_moe_layers.push_back(n_moe);
    c.stage_layers.push_back(n_layers);
    if (last) c.edge_s = edge_max;
    c.stage_expert_s.push_back(n_moe * ex.time_s);
    c.stage_dispatch_s.push_back(n_moe * (disp.time_s + gather_s));
    c.stage_combine_s.push_back(n_moe * (comb.time_s + gather_s));
    c.stage_pp_s.push_back(0);
    c.expert_s += n_moe * ex.time_s;
    total_flops += static_cast<double>(S) * n_moe * ex.flops;
    total_hbm += static_cast<double>(S) * n_moe * ex.hbm_bytes;
    c.dispatch_s += n_moe * (disp.time_s + gather_s);
    c.combine_s += n_moe * (comb.time_s + gather_s);
    for (std::size_t i = 0; i < disp.nvl_out.size(); ++i) {
      c.a2a_nvlink_bytes += n_moe * (disp.nvl_out[i] + comb.nvl_out[i]);
      c.a2a_nic_bytes += n_moe * (disp.nic_out[i] + comb.nic_out[i]);
    }
    if (s == 0 && !disp.pair_bytes.empty()) {
      c.pair_dispatch_bytes = disp.pair_bytes;
      for (double& b : c.pair_dispatch_bytes) b *= n_moe;
    }
    if (!last) {  // activations to the next stage, split over the stage's GPUs
      const double b = t_all * h * kHiddenBf16 / S;
      const bool crosses = ((s + 1) * S) % L.gpus_per_node == 0 && L.p.nodes > 1;
      const double t =
          crosses ? b / L.nic_Bps + L.nic_latency_s : b / L.nvlink_Bps + L.nvlink_latency_s;
      c.pp_s += t;
      c.stage_pp_s.back() = t;
      c.pp_bytes_per_gpu = b;
      c.pp_bytes += b * S;
    }
    first += n_layers;
  }
  c.layer_pair_dispatch_bytes = disp.pair_bytes;
  auto latency = [&](const A2aPhase& a) {
    double nvl = 0, nic = 0;
    for (std::size_t i = 0; i < a.nvl_out.size(); ++i) {
      nvl += a.nvl_out[i];
      nic += a.nic_out[i];
    }
    return std::max(nvl > 0 ? L.nvlink_latency_s : 0, nic > 0 ? L.nic_latency_s : 0);
  };
  c.dispatch_latency_s = latency(disp);
  c.combine_latency_s = latency(comb);
  c.step_s = c.local_s + c.dispatch_s + c.expert_s + c.combine_s + c.pp_s;
  // Per GPU over the replica: the local kernels were counted for all layers on one stage's
  // ranks, the experts per stage; pp stages share that work.
  c.flops = total_flops / L.gpus;
  c.hbm_bytes = total_hbm / L.gpus;
  return c;
}

}  // namespace kappasim
