#include "models/gpu/gpu_spec.hpp"

#include <utility>

namespace kappasim {

const std::vector<std::string>& GpuSpec::compute_dtypes() {
  static const std::vector<std::string> d = {"tf32", "fp16", "bf16", "fp8", "fp4", "int8"};
  return d;
}

double GpuSpec::peak(const std::string& dtype) const {
  auto it = peak_flops.find(dtype);
  if (it != peak_flops.end()) return it->second;
  std::string have;
  for (const auto& [k, v] : peak_flops) have += (have.empty() ? "" : ", ") + k;
  throw InputError("GPU '" + name + "' has no peak rate for precision '" + dtype +
                   "' (it has: " + have + ")");
}

double GpuSpec::gemm_efficiency_for(const std::string& dtype) const {
  auto it = gemm_efficiency_by_precision.find(dtype);
  if (it != gemm_efficiency_by_precision.end()) return it->second;
  return gemm_efficiency.value_or(0);
}

double GpuSpec::gemm_hbm_efficiency_for(const std::string& dtype) const {
  auto it = hbm_efficiency_by_precision.find(dtype);
  if (it != hbm_efficiency_by_precision.end()) return it->second;
  return hbm_efficiency.value_or(0);
}

void GpuSpec::apply_scale(ConfigReader& r) {
  const std::string at = r.path().empty() ? "scale" : r.path() + ".scale";
  for (const auto& [d, f] : scale.flops_by_dtype)
    if (!peak_flops.count(d))
      throw InputError(at + ".flops_by_dtype." + d + ": GPU '" + name + "' has no " + d +
                       " peak to scale (it has: " +
                       [&] {
                         std::string have;
                         for (const auto& [k, v] : peak_flops)
                           have += (have.empty() ? "" : ", ") + k;
                         return have;
                       }() +
                       ")");
  if (scale.hbm_bandwidth) {
    hbm_bandwidth_Bps *= *scale.hbm_bandwidth;
    r.derive("hbm_bandwidth",
             "× " + format_number(*scale.hbm_bandwidth) + " (scale.hbm_bandwidth)");
  }
  for (auto& [d, v] : peak_flops) {
    const auto it = scale.flops_by_dtype.find(d);
    if (!scale.flops && it == scale.flops_by_dtype.end()) continue;
    double f = scale.flops.value_or(1);
    std::string why = scale.flops ? "scale.flops " + format_number(*scale.flops) : "";
    if (it != scale.flops_by_dtype.end()) {
      f *= it->second;
      why += (why.empty() ? "" : " × ") + std::string("scale.flops_by_dtype.") + d + " " +
             format_number(it->second);
    }
    v *= f;
    r.derive("peak_flops." + d, "× " + format_number(f) + " (" + why + ")");
  }
  scale = Scale{};
}

void GpuSpec::validate(const std::string& path) const {
  if (peak_flops.empty())
    throw InputError(path + ".peak_flops: at least one dtype's peak FLOP/s is required");
  // Efficiencies divide a rate: zero would make every kernel of that kind take forever.
  for (const auto& [dtype, e] : gemm_efficiency_by_precision)
    if (!(e > 0))
      throw InputError(path + ".gemm_efficiency_by_precision." + dtype +
                       ": must be greater than zero (a fraction in (0, 1])");
  for (const auto& [dtype, e] : hbm_efficiency_by_precision)
    if (!(e > 0))
      throw InputError(path + ".hbm_efficiency_by_precision." + dtype +
                       ": must be greater than zero (a fraction in (0, 1])");
  if (attention_paged_kv_efficiency && !(*attention_paged_kv_efficiency > 0))
    throw InputError(
        path + ".attention_paged_kv_efficiency: must be greater than zero (a fraction in (0, 1])");
  // The all-reduce table (docs/compute-model.md, "All-reduce"): whole or absent.
  const AllReduceSpec& ar = all_reduce;
  const bool any_ar = ar.ring_bus_Bps || ar.nvls_alg_Bps || ar.nvls_latency_s ||
                      ar.barrier_latency_s || ar.ll.base_latency_s || ar.ll128.base_latency_s ||
                      ar.simple.base_latency_s;
  if (any_ar) {
    const std::string a = path + ".all_reduce";
    if (!ar.ring_bus_Bps || !(*ar.ring_bus_Bps > 0))
      throw InputError(a + ".ring_bus_bandwidth: required (> 0) when all_reduce is given");
    if (!nvlink_Bps)
      throw InputError(a + ": needs nvlink_bandwidth (the all-reduce runs over NVLink)");
    const std::pair<const char*, const AllReduceProtocol*> protos[] = {
        {"ll", &ar.ll}, {"ll128", &ar.ll128}, {"simple", &ar.simple}};
    for (const auto& [name, pr] : protos) {
      if (!pr->base_latency_s || !pr->step_latency_s)
        throw InputError(a + "." + name + ": base_latency and step_latency are required");
      if (pr->bandwidth_fraction && !(*pr->bandwidth_fraction > 0))
        throw InputError(a + "." + name + ".bandwidth_fraction: must be greater than zero");
      if (pr->max_bus_Bps && !(*pr->max_bus_Bps > 0))
        throw InputError(a + "." + name + ".max_bus_bandwidth: must be greater than zero");
    }
    if (ar.nvls_alg_Bps.has_value() != ar.nvls_latency_s.has_value())
      throw InputError(a + ": nvls_bandwidth and nvls_latency go together (both or neither)");
    if (ar.nvls_alg_Bps && !(*ar.nvls_alg_Bps > 0))
      throw InputError(a + ".nvls_bandwidth: must be greater than zero");
    if (!ar.barrier_latency_s)
      throw InputError(a + ".barrier_latency: required when all_reduce is given");
  }
  if (attention_reference_seqlen.has_value() != attention_pipeline_tiles.has_value())
    throw InputError(
        path + "." +
        (attention_reference_seqlen ? "attention_pipeline_tiles" : "attention_reference_seqlen") +
        ": needed with " +
        (attention_reference_seqlen ? "attention_reference_seqlen" : "attention_pipeline_tiles") +
        " (attention efficiency by length takes both, or neither)");
  if (attention_reference_seqlen && attention_efficiency) {
    // The long-sequence limit the reference implies must be a fraction of peak.
    const double limit = *attention_efficiency / attention_reference_factor();
    if (!(limit <= 1))
      throw InputError(
          path + ".attention_efficiency: " + std::to_string(*attention_efficiency) +
          " at attention_reference_seqlen " + std::to_string(*attention_reference_seqlen) +
          " with attention_pipeline_tiles " + std::to_string(*attention_pipeline_tiles) +
          " implies " + std::to_string(limit) + " of peak at long sequences; it must be at most 1");
  }
}

double GpuSpec::attention_reference_factor() const {
  if (!attention_reference_seqlen) return 1;
  // A causal forward over S tokens from nothing cached: n = S / 128 query tiles, tile i
  // computes i + 1 KV tiles (the diagonal one whole), of which the FLOP count holds i + 1/2.
  const double n = *attention_reference_seqlen / kAttentionTileM;
  return (n / 2) / ((n + 1) / 2 + *attention_pipeline_tiles);
}

void GpuSpec::require_sim(const std::string& path) const {
  std::string missing;
  auto need = [&](const std::optional<double>& v, const char* key) {
    if (!v) missing += (missing.empty() ? "" : ", ") + std::string(key);
  };
  // A GPU without a GPU-GPU link (PCIe-only L40S, RTX PRO 6000, Rubin CPX) leaves
  // nvlink_bandwidth out: it runs at TP 1, and a layout that needs the link is refused where its
  // traffic is costed (kernel_timing AllReduce, topology peer copies, kappa layouts, replica
  // step), naming system.gpu.nvlink_bandwidth. A GPU that has the link needs its latency too.
  need(copy_engines, "copy_engines");
  need(dma_copy_overhead_s, "dma_copy_overhead");
  need(copy_kernel_block_overhead_s, "copy_kernel_block_overhead");
  need(gemm_efficiency, "gemm_efficiency");
  need(attention_efficiency, "attention_efficiency");
  need(hbm_efficiency, "hbm_efficiency");
  need(kernel_launch_overhead_s, "kernel_launch_overhead");
  if (nvlink_Bps) need(nvlink_latency_s, "nvlink_latency");
  if (!missing.empty())
    throw InputError(path + ": the simulator needs " + missing + " (GPU '" + name + "')");
}

}  // namespace kappasim
