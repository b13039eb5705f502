#include "serving/run_spec.hpp"

#include "models/gpu/kernel_timing.hpp"
#include "models/llm/parallelism.hpp"
#include "serving/paged_kv.hpp"

namespace kappasim {

void refuse_unservable_model(const ModelSpec& m, const std::string& prefix, bool hybrid_kv) {
  if (m.attention.type == AttentionType::Mla && m.attention.sparse())
    throw InputError(
        prefix + "model.attention.index_topk: model '" + m.name +
        "' runs DeepSeek Sparse Attention (top-" + std::to_string(m.attention.index_topk) +
        " of a lightning indexer); the serving engine times neither the indexer nor the sparse "
        "MLA kernels, and its KV cache does not hold the indexer keys beside the latent. Use "
        "`kappasim kappa --context K` for its analytic κ (docs/accounting.md \"DeepSeek Sparse "
        "Attention\")");
  const int linear = m.count_layers(LayerKind::Linear);
  if (linear == 0) return;  // full and sliding-window attention are served (unified KV cache)
  if (hybrid_kv) return;    // a hybrid-aware cache keeps their state (serving.kv_cache: hybrid)
  throw InputError(
      prefix + "model.layer_pattern: model '" + m.name + "' has " + std::to_string(linear) +
      " linear-attention layers (pattern '" + m.layer_pattern +
      "'); the serving engine models vLLM with a KV connector, which turns the hybrid KV cache "
      "manager off, and vLLM then cannot unify linear-attention state with per-token KV "
      "(ValueError in kv_cache_utils). Set serving.kv_cache: hybrid (a hybrid-aware connector, "
      "which keeps their state per request) or use `kappasim kappa --context K` for its "
      "analytic κ (docs/accounting.md \"Sliding-window and linear-attention layers\")");
}

double served_kv_unit_per_gpu(const ModelSpec& m, const ServingSpec& sv, int tp) {
  if (!sv.hybrid_kv()) return kv_bytes_per_token_unified_per_gpu(m, sv.kv_dtype, tp);
  return hybrid_kv_per_gpu(m, sv.kv_dtype, tp).full_Bpt;
}

ServedKv served_kv(const ModelSpec& m, const ServingSpec& sv, int tp) {
  ServedKv k;
  k.unit_per_gpu = served_kv_unit_per_gpu(m, sv, tp);
  k.store_per_gpu = served_kv_store_per_gpu(m, sv, tp);
  if (sv.hybrid_kv()) k.hybrid = hybrid_kv_per_gpu(m, sv.kv_dtype, tp);
  // Issue 23 item 5: replicated KV (tp > KV heads, MLA under TP) loaded once as r shards and an
  // NVLink all-gather; a layout without copies is the same run as each_rank.
  if (sv.replicated_kv == ReplicatedKv::ShardAllgather)
    k.replication = kv_replication_factor(m, sv.kv_dtype, tp);
  if (!k.hybrid) return k;
  k.pool = k.hybrid;
  const int pp = sv.parallelism.beyond_tp() ? sv.parallelism.pp : 1;
  if (pp <= 1) return k;
  // Issue 25: each stage's layer kinds; the pool by each kind's largest share; a stored chunk's
  // bytes by kind (served_kv_store_per_gpu's terms) for each stage's share of stores and loads.
  const HybridKv& h = *k.hybrid;
  const double c = sv.tier_chunk_tokens();
  const std::array<double, 4> chunk = {c * h.full_Bpt, std::min(h.window, c) * h.sliding_Bpt,
                                       c * h.chunked_Bpt, h.state_B};
  HybridKv env;
  for (int s = 0; s < pp; ++s) {
    const HybridKv st = stage_hybrid_kv_per_gpu(m, sv.kv_dtype, tp, pp, s);
    env.full_Bpt = std::max(env.full_Bpt, st.full_Bpt);
    env.sliding_Bpt = std::max(env.sliding_Bpt, st.sliding_Bpt);
    env.chunked_Bpt = std::max(env.chunked_Bpt, st.chunked_Bpt);
    env.state_B = std::max(env.state_B, st.state_B);
    k.stages.push_back(st);
    k.stage_share.push_back(hybrid_stage_share(h, st, chunk));
  }
  env.window = h.window;
  env.chunk = h.chunk;
  k.pool = env;
  return k;
}

double hybrid_stage_share(const HybridKv& whole, const HybridKv& stage,
                          const std::array<double, 4>& parts) {
  const double w[4] = {whole.full_Bpt, whole.sliding_Bpt, whole.chunked_Bpt, whole.state_B};
  const double s[4] = {stage.full_Bpt, stage.sliding_Bpt, stage.chunked_Bpt, stage.state_B};
  double held = 0, all = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    all += parts[i];
    if (w[i] > 0) held += parts[i] * s[i] / w[i];
  }
  return all > 0 ? held / all : 0;
}

double served_kv_store_per_gpu(const ModelSpec& m, const ServingSpec& sv, int tp) {
  if (!sv.hybrid_kv()) return kv_bytes_per_token_unified_per_gpu(m, sv.kv_dtype, tp);
  const HybridKv h = hybrid_kv_per_gpu(m, sv.kv_dtype, tp);
  const double c = sv.tier_chunk_tokens();
  // A stored chunk keeps what a hit at its end loads beyond the chunks before it: its tokens of
  // the full and chunked layers (every token of a chunk is in some later hit's chunk), the last
  // min(W, c) of the sliding layers (a window longer than the chunk is the chunks before it),
  // and the state at its end.
  return (c * (h.full_Bpt + h.chunked_Bpt) + std::min(h.window, c) * h.sliding_Bpt + h.state_B) / c;
}

double served_kv_model_bytes(const ModelSpec& m, const ServingSpec& sv, double K) {
  if (!sv.hybrid_kv()) return K * kv_bytes_per_token_unified(m, sv.kv_dtype);
  return kv_bytes_for_prefix(m, sv.kv_dtype, K);
}

void refuse_hybrid_kv_settings(const ModelSpec& m, const ServingSpec& sv, int system_gpus,
                               const std::string& path) {
  if (!sv.hybrid_kv()) return;
  // Issue 25: prefix caching, tiers below DRAM, layouts beyond TP (each stage's layer kinds,
  // served_kv), partial recompute (the chooser prices the loaded tail's bytes, request_cost) and
  // sharded replicated loads (only attention KV is replicated, StepGroup) are modelled with it.
  (void)system_gpus;
  const int tp =
      sv.parallelism.beyond_tp() && sv.parallelism.tp > 0 ? sv.parallelism.attention_tp() : sv.tp;
  try {
    hybrid_kv_per_gpu(m, sv.kv_dtype, tp);
  } catch (const InputError& e) {
    throw InputError(
        path + "serving.kv_cache: hybrid at " +
        (sv.parallelism.beyond_tp() ? "serving.parallelism's attention tp " : "serving.tp ") +
        std::to_string(tp) + ": " + e.what());
  }
}

void RunSpec::validate(const std::string& path) const {
  refuse_unservable_model(model, path, serving.hybrid_kv());
  refuse_hybrid_kv_settings(model, serving, system.gpus, path);
  if (serving.tp > system.gpus)
    throw InputError(path + "serving.tp: tensor parallelism " + std::to_string(serving.tp) +
                     " exceeds the " + std::to_string(system.gpus) + " GPUs of system '" +
                     system.name + "'");
  system.gpu.peak(serving.compute_dtype);
  require_kv_dtype_support(system.gpu, serving.kv_dtype, path + "serving.kv_dtype");
  // A GPU without a GPU-GPU link (PCIe-only L40S, RTX PRO 6000, Rubin CPX) runs at TP 1: the
  // tensor-parallel all-reduce would otherwise fail inside the simulation (models/gpu/
  // kernel_timing), after the run started. All-reduce over PCIe is not modelled
  // (docs/hardware-sources.md "GPUs without NVLink").
  // Issue 23 item 5: sharded loads of replicated KV all-gather the shards over NVLink; a part
  // without it cannot (a layout with nothing replicated runs as each_rank: nothing to gather).
  if (serving.replicated_kv == ReplicatedKv::ShardAllgather && !system.gpu.nvlink_Bps) {
    const int tp = serving.parallelism.tp > 0 ? serving.parallelism.tp : serving.tp;
    const int r = kv_replication_factor(model, serving.kv_dtype, tp);
    if (r > 1)
      throw InputError(
          path + "serving.replicated_kv: shard_allgather all-gathers over NVLink the " +
          "KV that " + std::to_string(r) + " TP ranks of " + model.name + " each hold, and GPU '" +
          system.gpu.name + "' has no GPU-GPU link (system.gpu.nvlink_bandwidth): use each_rank");
  }
  if (serving.tp > 1 && !system.gpu.nvlink_Bps)
    throw InputError(path + "system.gpu.nvlink_bandwidth: serving.tp " +
                     std::to_string(serving.tp) + " needs a GPU-GPU link, and GPU '" +
                     system.gpu.name +
                     "' has none (a PCIe-only part); all-reduce over PCIe is not modelled: use "
                     "serving.tp 1, or give the link (system.gpu.nvlink_bandwidth and "
                     "nvlink_latency)");
  // ---- layouts beyond plain TP (issues 14, 21: the engine's ranks and step model) ----
  // The layout must divide the model (validate_layout) and each GPU's weights, with the
  // activation reserve, must fit gpu_memory_utilization x HBM (vLLM's budget for a worker).
  if (serving.parallelism.beyond_tp()) {
    ParallelismSpec p = serving.parallelism;
    if (p.tp == 0) p.tp = serving.tp;
    const std::string where = path + "serving.parallelism";
    validate_layout(p, model, system.gpus, where);
    const double weights = layout_weight_bytes_per_gpu(
        model, p, bytes_per_element(weight_dtype_for(serving.compute_dtype)));
    const double budget = serving.gpu_memory_utilization * system.gpu.hbm_capacity_bytes;
    if (weights + serving.activation_reserve_bytes >= budget)
      throw InputError(where + ": layout '" + layout_name(p) +
                       "' leaves no KV cache: " + format_quantity(weights, dim::bytes) + " of " +
                       model.name + " " + serving.compute_dtype + " weights per GPU + " +
                       format_quantity(serving.activation_reserve_bytes, dim::bytes) +
                       " activation reserve exceed gpu_memory_utilization x HBM = " +
                       format_quantity(budget, dim::bytes) + " (more GPUs, pp or nodes, or " +
                       "a smaller compute_dtype)");
  }
  serving.tiers.validate_against(system, path + "serving.tiers");  // issue 14
  // Issue 25: each node of a replica is a host on its CXL pool's switch.
  if (system.has_cxl_pool() && serving.parallelism.nodes > system.cxl_pool.host_ports)
    throw InputError(
        path + "serving.parallelism.nodes: " + std::to_string(serving.parallelism.nodes) +
        " nodes share CXL pool '" + system.cxl_pool.name + "', whose switch has " +
        std::to_string(system.cxl_pool.host_ports) + " host ports (system.cxl_pool.host_ports)");
  // ---- capacities against the hardware (issue 20 part 5) ----
  // The DRAM tier cannot hold more than the hosts' DRAM less the stack's reserve (or an HBM
  // tier's capacity); a larger one would serve hits from memory that does not exist.
  if (serving.tier_capacity_bytes) {
    int gpus = serving.tp, nodes = 1;
    if (serving.parallelism.beyond_tp()) {
      ParallelismSpec p = serving.parallelism;
      if (p.tp == 0) p.tp = serving.tp;
      gpus = p.gpus();
      nodes = p.nodes;
    }
    const TierCapacity limit = tier_capacity_limit(serving.stack, system, gpus, nodes);
    if (*serving.tier_capacity_bytes > limit.bytes * (1 + 1e-12))
      throw InputError(path + "serving.tier_capacity: " +
                       format_quantity(*serving.tier_capacity_bytes, dim::bytes) +
                       " exceeds what system '" + system.name + "' can hold: " + limit.why + " = " +
                       format_quantity(limit.bytes, dim::bytes) +
                       " (expected at most that; put the rest in serving.tiers below DRAM)");
  }
  // A GPU-side buffer of kind hbm is carved out of the HBM the weights leave for paged KV.
  if (serving.kv_buffer.enabled() && serving.kv_buffer.kind == KvBufferKind::Hbm &&
      !serving.parallelism.beyond_tp()) {
    const double v_eff = effective_kv_bytes_per_gpu(
        model, system.gpu, serving.tp, weight_dtype_for(serving.compute_dtype),
        serving.activation_reserve_bytes, serving.gpu_memory_utilization);
    if (serving.kv_buffer.capacity_bytes >= v_eff)
      throw InputError(path + "serving.kv_buffer.capacity: " +
                       format_quantity(serving.kv_buffer.capacity_bytes, dim::bytes) +
                       " of kind hbm leaves no paged-KV pool (V_eff per GPU is " +
                       format_quantity(v_eff, dim::bytes) + ": HBM " +
                       format_quantity(system.gpu.hbm_capacity_bytes, dim::bytes) + " x " +
                       format_number(serving.gpu_memory_utilization) +
                       " less weights and the activation reserve)");
  }
}

bool adopt_gpu_kv_buffer(ServingSpec& serving, const GpuSpec& gpu) {
  const GpuSpec::KvBuffer& g = gpu.kv_buffer;
  // A serving.kv_buffer that is on wins whole; one whose capacity is written as 0 switches the
  // GPU's buffer off (issue 26 item 22: it was silently used).
  if (serving.kv_buffer.enabled() || serving.kv_buffer.capacity_given || !(g.capacity_bytes > 0))
    return false;
  KvBufferSpec& b = serving.kv_buffer;
  b.capacity_bytes = g.capacity_bytes;
  b.kind = g.sram ? KvBufferKind::Sram : KvBufferKind::Hbm;
  b.bandwidth_Bps = g.bandwidth_Bps;
  b.energy_per_byte_J = g.energy_per_byte_J;
  return true;
}

void RunSpec::adopt_gpu_kv_buffer(ConfigReader& r) {
  if (!kappasim::adopt_gpu_kv_buffer(serving, system.gpu)) return;
  for (const char* k : {"capacity", "bandwidth", "energy_per_bit"})
    r.derive(std::string("serving.kv_buffer.") + k, std::string("system.gpu.kv_buffer.") + k);
}

}  // namespace kappasim
