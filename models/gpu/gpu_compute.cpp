#include "models/gpu/gpu_compute.hpp"

namespace kappasim {

namespace {
const GpuSpec& checked(const GpuSpec& gpu, const std::string& dtype) {
  gpu.require_sim("system.gpu");
  gpu.peak(dtype);
  return gpu;
}
}  // namespace

GpuCompute::GpuCompute(sc_core::sc_module_name name, const GpuSpec& gpu,
                       const std::string& compute_dtype, bool coarse)
    : sc_core::sc_module(name),
      m_gpu(checked(gpu, compute_dtype)),
      m_dtype(compute_dtype),
      m_weights(weight_dtype_for(compute_dtype)),
      m_coarse(coarse),
      m_sms(gpu.sm_count) {}

void GpuCompute::run_kernels(const std::vector<Kernel>& ks) {
  if (ks.empty()) return;
  if (m_coarse) {
    const double frac = m_sms.compute_fraction();
    double total = 0;
    for (const Kernel& k : ks) {
      const KernelTime t = kernel_time(k, m_gpu, m_dtype, frac);
      m_stats.time.add(k, t);
      total += t.time_s;
    }
    ++m_stats.kernel_events;
    sc_core::wait(sc_core::sc_time(total, sc_core::SC_SEC));
    return;
  }
  for (const Kernel& k : ks) {
    const KernelTime t = kernel_time(k, m_gpu, m_dtype, m_sms.compute_fraction());
    m_stats.time.add(k, t);
    ++m_stats.kernel_events;
    sc_core::wait(sc_core::sc_time(t.time_s, sc_core::SC_SEC));
  }
}

void GpuCompute::run_layer(const ModelSpec& m, int layer, double T, double K, int tp) {
  const std::vector<Kernel> ks = layer_kernels(m, layer, T, K, tp, m_weights);
  m_stream.lock();
  run_kernels(ks);
  m_stream.unlock();
}

void GpuCompute::run_prefill(const ModelSpec& m, double T, double K, int tp) {
  check_prefill_args(m, tp, T, K);
  {
    const auto head = prefill_head_kernels(m, T);
    m_stream.lock();
    run_kernels(head);
    m_stream.unlock();
  }
  for (int l = 0; l < m.num_layers; ++l) run_layer(m, l, T, K, tp);
  const auto tail = prefill_tail_kernels(m, T, tp, m_weights);
  m_stream.lock();
  run_kernels(tail);
  m_stream.unlock();
}

}  // namespace kappasim
