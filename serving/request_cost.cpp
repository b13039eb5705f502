#include "serving/request_cost.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "interconnects/flow_network.hpp"
#include "interconnects/transfer.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "serving/run_spec.hpp"
#include "systems/topology.hpp"

namespace kappasim {

RequestCost combine_request_cost(LoadOverlap overlap, const RequestCostParts& p) {
  RequestCost c;
  c.load_s = p.cpu_s + p.load_s;
  c.compute_s = p.compute_s;
  if (c.load_s <= 0) {
    c.total_s = p.compute_s;
  } else if (overlap == LoadOverlap::Layerwise) {
    const double L = std::max(1, p.layers);
    c.total_s = p.cpu_s + std::max(p.load_s + p.last_layer_s, p.load_s / L + p.compute_s);
  } else {
    c.total_s = c.load_s + p.compute_s;
  }
  return c;
}

RequestCostModel request_cost_model(const RunSpec& spec) {
  const ServingSpec& sv = spec.serving;
  RequestCostModel m;
  m.model = spec.model;
  m.gpu = spec.system.gpu;
  m.tp = sv.tp;
  m.compute_dtype = sv.compute_dtype;
  m.kv_dtype = sv.kv_dtype;
  m.path = sv.load_path;
  m.stack = sv.stack;
  m.kv_bytes_per_token_gpu = served_kv_unit_per_gpu(spec.model, sv, sv.tp);
  if (sv.hybrid_kv()) m.hybrid = hybrid_kv_per_gpu(spec.model, sv.kv_dtype, sv.tp);
  m.load_rate_Bps = group_load_rate(spec.system, sv.tp, sv.load_path, sv.stack.copy_kernel);
  m.chunk_tokens = sv.tier_chunk_tokens();
  m.block_tokens = sv.block_tokens;
  m.step_overhead_s = sv.step_overhead_s;
  m.budget_tokens = sv.max_num_batched_tokens;
  return m;
}

RequestCostParts request_cost_parts(const RequestCostModel& m, std::int64_t K, std::int64_t T,
                                    std::int64_t R) {
  if (K < 0 || T < 1 || R < 0 || R > K)
    throw std::logic_error("request_cost: need 0 <= R <= K and T >= 1");
  RequestCostParts p;
  p.layers = m.model.num_layers;
  std::vector<SeqSlice> b;
  if (R > 0) b.push_back({static_cast<double>(R), 0, false});
  b.push_back({static_cast<double>(T), static_cast<double>(K), true});
  const StepTime st =
      batch_step_time(m.model, m.gpu, m.tp, b, m.compute_dtype, 1.0, m.kv_dtype, m.stack.launch);
  const std::int64_t steps = (T + R + m.budget_tokens - 1) / m.budget_tokens;
  p.compute_s = st.total.compute_time_s + static_cast<double>(steps) * m.step_overhead_s;
  p.last_layer_s = st.last_layer_s;
  const std::int64_t loaded = K - R;
  if (loaded <= 0) return p;
  // The loaded range [R, K): the chunks and 16-token blocks it touches.
  const std::int64_t c = m.chunk_tokens, bt = m.block_tokens;
  const std::int64_t chunks = (K + c - 1) / c - R / c;
  const std::int64_t blocks = (K + bt - 1) / bt - R / bt;
  const RetrieveCost rc = stack_retrieve(m.stack, m.path, 1, chunks, blocks, p.layers);
  p.cpu_s = rc.cpu_before_s;
  // Hybrid: the tail's bytes (the window and the state sit at its end, so they are loaded
  // unless R reaches into the last W).
  const double tail = m.hybrid ? m.hybrid->bytes(static_cast<double>(R), static_cast<double>(K),
                                                 static_cast<double>(K))
                               : static_cast<double>(loaded) * m.kv_bytes_per_token_gpu;
  double copies = tail / m.load_rate_Bps;
  // Per-copy fixed costs, as CopyKernel / CopyEngine charge them (models/gpu/copy_engine:
  // copy_kernel_fixed_s, dma_stream_fixed_s without the copy latency).
  const LoadPathCosts& lp = load_path_costs(m.path);
  if (lp.copy == CopyPath::Kernel)
    copies += static_cast<double>(rc.copies) * m.gpu.copy_kernel_block_overhead_s.value_or(0);
  else
    copies += static_cast<double>(lp.per_layer ? rc.copies * p.layers : rc.copies) *
              m.gpu.dma_copy_overhead_s.value_or(0);
  // The CPU that issues the copies runs alongside them: the load lasts at least that.
  const double issue = std::max(rc.cpu_overlap_s, p.layers * rc.per_layer_cpu_s);
  p.load_s = rc.gpu_gap_s + std::max(copies, issue);
  return p;
}

RequestCost request_cost(const RequestCostModel& m, std::int64_t K, std::int64_t T,
                         std::int64_t R) {
  return combine_request_cost(
      load_path_costs(m.path).per_layer ? LoadOverlap::Layerwise : LoadOverlap::Serial,
      request_cost_parts(m, K, T, R));
}

double group_load_rate(const SystemSpec& system, int tp, LoadPath path,
                       const CopyKernelShape& kernel) {
  const Topology topo = build_topology(system);
  const auto h2d = Direction::H2D;
  const CopyPath how = load_path_costs(path).copy;
  // The kernel on every SM of an idle GPU (CopyKernel's Little's law, copy_kernel_shape).
  const double inflight = how == CopyPath::Kernel
                              ? copy_kernel_inflight_bytes(kernel, system.gpu, system.gpu.sm_count)
                              : 0;
  FlowNetwork net;
  topo.add_to(net);
  std::vector<FlowNetwork::FlowId> flows;
  for (int g = 0; g < tp; ++g)
    flows.push_back(net.start(0, topo.path(g, h2d, how, true), 1e18,
                              topo.rate_cap(g, h2d, how, true, inflight)));
  double rate = FlowNetwork::kInf;
  for (FlowNetwork::FlowId f : flows) rate = std::min(rate, net.rate(f));
  return rate;
}

std::int64_t choose_recompute_tokens(const RequestCostModel& m, std::int64_t K, std::int64_t T) {
  if (K <= 0) return 0;
  constexpr std::int64_t kGrid = 32;
  std::int64_t best = 0;
  double best_t = request_cost(m, K, T, 0).total_s;
  auto consider = [&](std::int64_t R) {
    const double t = request_cost(m, K, T, R).total_s;
    if (t < best_t || (t == best_t && R < best)) {
      best_t = t;
      best = R;
    }
  };
  for (std::int64_t i = 1; i <= kGrid; ++i) consider(K * i / kGrid);
  const std::int64_t lo = std::max<std::int64_t>(0, best - K / kGrid - 1);
  const std::int64_t hi = std::min<std::int64_t>(K, best + K / kGrid + 1);
  const std::int64_t step = std::max<std::int64_t>(1, (hi - lo) / kGrid);
  for (std::int64_t R = lo; R <= hi; R += step) consider(R);
  return best;
}

RecomputeEstimate estimate_recompute(const RunSpec& spec, std::int64_t K, std::int64_t T,
                                     std::int64_t R) {
  return request_cost(request_cost_model(spec), K, T, R);
}

std::int64_t choose_recompute_tokens(const RunSpec& spec, std::int64_t K, std::int64_t T) {
  return choose_recompute_tokens(request_cost_model(spec), K, T);
}

RecomputeChooser::RecomputeChooser(const RunSpec& spec) : m_spec(spec.serving.recompute) {
  if (m_spec.mode == RecomputeMode::Auto) m_cost = request_cost_model(spec);
}

std::int64_t RecomputeChooser::operator()(std::int64_t K, std::int64_t T) {
  if (m_spec.mode == RecomputeMode::None || K <= 0) return 0;
  std::int64_t R = 0;
  if (m_spec.mode == RecomputeMode::Fixed) {
    R = static_cast<std::int64_t>(std::floor(m_spec.fraction * static_cast<double>(K)));
  } else {
    auto f = m_auto.find({K, T});
    if (f == m_auto.end())
      f = m_auto.emplace(std::make_pair(K, T), choose_recompute_tokens(*m_cost, K, T)).first;
    R = f->second;
  }
  return std::clamp<std::int64_t>(R, 0, K);
}

}  // namespace kappasim
