#include "models/gpu/gpu_compute.hpp"

#include <cmath>
#include <stdexcept>

#include "core/sim_seconds.hpp"

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
      m_sms(gpu.sm_count) {
  SC_HAS_PROCESS(GpuCompute);
  SC_METHOD(on_timed);
  sensitive << m_timed_ev;
  dont_initialize();
  m_sms.set_on_change([this] { m_sms_changed.notify(sc_core::SC_ZERO_TIME); });
}

void GpuCompute::account_held(double seconds, double hbm_bytes) {
  if (!(seconds >= 0) || !std::isfinite(seconds) || !(hbm_bytes >= 0) || !std::isfinite(hbm_bytes))
    throw std::logic_error(std::string(name()) + ": held compute needs finite seconds and bytes");
  m_stats.time.compute_time_s += seconds;
  m_stats.time.hbm_bytes += hbm_bytes;
  ++m_stats.kernel_events;
}

void GpuCompute::attach_link(LinkModel& link, int gpu_index) {
  if (gpu_index < 0) throw std::logic_error(std::string(name()) + ": GPU index must be >= 0");
  m_link = &link;
  m_index = gpu_index;
}

double GpuCompute::book_step(double compute_time_s, double hbm_bytes, TransferRequest& r,
                             double sm_bound_s, bool& flow) {
  if (!(compute_time_s >= 0) || !std::isfinite(compute_time_s) || !(hbm_bytes >= 0) ||
      !std::isfinite(hbm_bytes) || !(sm_bound_s >= 0) || sm_bound_s > compute_time_s)
    throw std::logic_error(std::string(name()) +
                           ": a step needs finite times and bytes >= 0, sm_bound_s <= its time");
  const double t = compute_time_s - sm_bound_s + sm_bound_s / m_sms.compute_fraction();
  auto bottlenecks = std::move(r.bottleneck_s);  // its buffer kept for the flow's (issue 24)
  bottlenecks.clear();
  r = TransferRequest{};
  r.bottleneck_s = std::move(bottlenecks);
  r.gpu = m_index;
  r.path = CopyPath::Local;
  r.bytes = hbm_bytes;
  m_stats.time.compute_time_s += t;
  m_stats.time.hbm_bytes += hbm_bytes;
  ++m_stats.kernel_events;
  flow = hbm_bytes > 0 && t > 0 && m_link && m_link->models_hbm();
  // Alone it runs at this cap and ends at t; sharing HBM can only slow it.
  if (flow) r.rate_cap_Bps = hbm_bytes / t;
  return t;
}

double GpuCompute::start_step(double compute_time_s, double hbm_bytes, TransferRequest& r,
                              TransferGroup& g, double delay_s, double sm_bound_s) {
  if (!(delay_s >= 0)) throw std::logic_error(std::string(name()) + ": a step needs a delay >= 0");
  bool flow = false;
  const double t = book_step(compute_time_s, hbm_bytes, r, sm_bound_s, flow);
  if (flow)
    m_link->start(r, g, delay_s);
  else
    finish_timed(r, g, delay_s, t);
  return t;
}

void GpuCompute::start_steps(GpuCompute* const* gpus, std::size_t n, double compute_time_s,
                             double hbm_bytes, TransferRequest* rs, TransferGroup& g) {
  if (n == 0) return;
  bool lockstep = n > 1;
  for (std::size_t i = 0; i < n; ++i) {
    bool flow = false;
    gpus[i]->book_step(compute_time_s, hbm_bytes, rs[i], 0, flow);
    lockstep = lockstep && flow && gpus[i]->m_link == gpus[0]->m_link &&
               rs[i].rate_cap_Bps == rs[0].rate_cap_Bps;
  }
  if (lockstep) {
    gpus[0]->m_link->start_lockstep(rs, n, g);
    return;
  }
  // Each on its own, as start_step: a flow has its rate cap (> 0), a timed step lasts
  // compute_time_s (no SM-bound part: the time at every SM).
  for (std::size_t i = 0; i < n; ++i) {
    GpuCompute& c = *gpus[i];
    if (rs[i].rate_cap_Bps > 0)
      c.m_link->start(rs[i], g, 0);
    else
      c.finish_timed(rs[i], g, 0, compute_time_s);
  }
}

void GpuCompute::finish_timed(TransferRequest& r, TransferGroup& g, double delay_s, double t) {
  g.add();
  const sc_core::sc_time now = sim_now();
  r.start_s = sim_seconds(now);
  const sc_core::sc_time at = now + sc_core::sc_time(delay_s + t, sc_core::SC_SEC);
  m_timed.emplace(at, Timed{&r, &g});
  m_timed_ev.cancel();
  m_timed_ev.notify(m_timed.begin()->first - now);
}

void GpuCompute::on_timed() {
  const sc_core::sc_time now = sim_now();
  while (!m_timed.empty() && m_timed.begin()->first <= now) {
    const Timed d = m_timed.begin()->second;
    m_timed.erase(m_timed.begin());
    d.req->end_s = sim_seconds(now);
    d.group->member_done(sim_seconds(now));
  }
  if (!m_timed.empty()) m_timed_ev.notify(m_timed.begin()->first - now);
}

void GpuCompute::run_kernels(const std::vector<Kernel>& ks) {
  if (ks.empty()) return;
  if (m_coarse) {
    const double frac = m_sms.compute_fraction();
    double total = 0;
    for (const Kernel& k : ks) {
      const KernelTime t = kernel_time(k, m_gpu, m_dtype, frac, m_launch.all_reduce);
      m_stats.time.add(k, t);
      total += t.time_s;
    }
    ++m_stats.kernel_events;
    sc_core::wait(sc_core::sc_time(total, sc_core::SC_SEC));
    return;
  }
  for (const Kernel& k : ks) {
    const KernelTime t =
        kernel_time(k, m_gpu, m_dtype, m_sms.compute_fraction(), m_launch.all_reduce);
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
  const PrefillTime before = m_stats.time;
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
  // The stack's host launches (models/gpu/launch_model): when the host issues this forward's
  // kernels more slowly than the GPU runs them, the GPU waits for it; one more wait here.
  PrefillTime fwd;
  fwd.compute_time_s = m_stats.time.compute_time_s - before.compute_time_s;
  fwd.host_time_s = m_stats.time.host_time_s - before.host_time_s;
  fwd.kernels = m_stats.time.kernels - before.kernels;
  // Outside any graph: one attention per layer (run_layer reads a BF16 cache: no dequant pass)
  // and the LM head.
  apply_launch(fwd, m_launch, T, m.num_layers, m.num_layers + 1.0);
  m_stats.time.host_issue_s += fwd.host_issue_s;
  if (fwd.launch_stall_s > 0) {
    m_stats.time.launch_stall_s += fwd.launch_stall_s;
    m_stats.time.compute_time_s += fwd.launch_stall_s;
    ++m_stats.kernel_events;
    sc_core::wait(sc_core::sc_time(fwd.launch_stall_s, sc_core::SC_SEC));
  }
  m_stream.unlock();
}

}  // namespace kappasim
