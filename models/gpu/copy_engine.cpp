#include "models/gpu/copy_engine.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "core/sim_seconds.hpp"
#include "interconnects/pcie_protocol.hpp"

namespace kappasim {

namespace {

// One blocking transaction carrying `r` to the link model; copies the filled request back.
template <class Socket>
void send(Socket& out, TransferRequest& r, const char* who) {
  TransferExtension ext;
  ext.request = r;
  tlm::tlm_generic_payload gp;
  gp.set_command(r.dir == Direction::H2D ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  gp.set_address(0);
  gp.set_data_ptr(nullptr);
  gp.set_data_length(0);
  gp.set_streaming_width(0);
  gp.set_byte_enable_ptr(nullptr);
  gp.set_dmi_allowed(false);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  gp.set_extension(&ext);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  out->b_transport(gp, delay);
  gp.clear_extension(&ext);
  if (gp.get_response_status() != tlm::TLM_OK_RESPONSE)
    throw std::runtime_error(std::string(who) + ": the link model rejected a transfer");
  if (delay > sc_core::SC_ZERO_TIME) sc_core::wait(delay);
  r.end_s = ext.request.end_s;
  r.bottleneck_s = ext.request.bottleneck_s;
}

}  // namespace

CopyEngine::CopyEngine(const sc_core::sc_module_name& name, const GpuSpec& gpu, int gpu_index)
    : sc_core::sc_module(name), out("out"), m_gpu(gpu_index) {
  if (!gpu.copy_engines)
    throw InputError("gpu '" + gpu.name + "': the copy engine model needs copy_engines");
  if (!gpu.dma_copy_overhead_s)
    throw InputError("gpu '" + gpu.name + "': the copy engine model needs dma_copy_overhead");
  const double n = *gpu.copy_engines;
  if (n < 1 || n != std::floor(n) || n > 1024)
    throw InputError("gpu '" + gpu.name + "': copy_engines must be a whole number >= 1");
  m_engines = static_cast<int>(n);
  m_free = m_engines;
  m_overhead_s = *gpu.dma_copy_overhead_s;
  m_gpu_spec = gpu;
}

void CopyEngine::acquire() {
  if (m_free > 0 && m_queue.empty()) {
    --m_free;
    return;
  }
  sc_core::sc_event granted;
  m_queue.push_back(&granted);
  sc_core::wait(granted);  // release() handed its engine straight to us
}

void CopyEngine::release() {
  if (m_queue.empty()) {
    ++m_free;
    return;
  }
  sc_core::sc_event* next = m_queue.front();
  m_queue.pop_front();
  next->notify(sc_core::SC_ZERO_TIME);
}

void CopyEngine::copy(TransferRequest& r) {
  r.gpu = m_gpu;
  r.path = CopyPath::Dma;
  r.start_s = sim_now_seconds();
  acquire();
  if (m_overhead_s > 0) sc_core::wait(sc_core::sc_time(m_overhead_s, sc_core::SC_SEC));
  const double start = r.start_s;
  send(out, r, name());
  r.start_s = start;
  ++m_copies;
  m_bytes += r.bytes;
  release();
}

CopyKernel::CopyKernel(const sc_core::sc_module_name& name, const GpuSpec& gpu,
                       const CopyKernelShape& shape)
    : sc_core::sc_module(name), out("out") {
  if (!gpu.copy_kernel_block_overhead_s)
    throw InputError("gpu '" + gpu.name +
                     "': the copy kernel model needs copy_kernel_block_overhead");
  shape.validate("copy_kernel");
  m_block_overhead_s = *gpu.copy_kernel_block_overhead_s;
  m_gpu_spec = gpu;
  m_shape = shape;
}

void CopyKernel::set_inflight(TransferRequest& r, int sms) const {
  // Little's law on the loads in flight (copy_kernel_shape.hpp): the SMs holding the kernel,
  // each with its resident warps' loads of 32 × load_width bytes.
  if (r.dir == Direction::H2D && m_shape.given())
    r.sm_inflight_bytes = copy_kernel_inflight_bytes(m_shape, m_gpu_spec, sms);
}

double dma_stream_fixed_s(const GpuSpec& gpu, std::int64_t copies, double latency_s) {
  if (copies < 1) return 0;
  return static_cast<double>(copies) * gpu.dma_copy_overhead_s.value_or(0) +
         static_cast<double>(copies - 1) * latency_s;
}

std::int64_t dma_read_waves(const TransferRequest& r, std::int64_t copies) {
  if (r.endpoint != Endpoint::Nvme || r.dir != Direction::H2D || r.queue_depth <= 1) return copies;
  return (copies + r.queue_depth - 1) / r.queue_depth;
}

double copy_kernel_fixed_s(const GpuSpec& gpu, std::int64_t blocks) {
  return blocks > 0 ? static_cast<double>(blocks) * gpu.copy_kernel_block_overhead_s.value_or(0)
                    : 0;
}

void CopyEngine::copy_many(TransferRequest& r, std::int64_t copies, double extra_latency_s) {
  if (copies < 1) throw std::logic_error(std::string(name()) + ": copy_many needs copies >= 1");
  r.gpu = m_gpu;
  r.path = CopyPath::Dma;
  r.start_s = sim_now_seconds();
  acquire();
  const double fixed = dma_stream_fixed_s(m_gpu_spec, copies, extra_latency_s);
  if (fixed > 0) sc_core::wait(sc_core::sc_time(fixed, sc_core::SC_SEC));
  const double start = r.start_s;
  send(out, r, name());
  r.start_s = start;
  release();
  m_copies += static_cast<std::uint64_t>(copies);
  m_bytes += r.bytes;
}

double CopyEngine::prepare(TransferRequest& r, std::int64_t copies) {
  if (!m_link) throw std::logic_error(std::string(name()) + ": start() needs attach_link()");
  if (copies < 1) throw std::logic_error(std::string(name()) + ": start needs copies >= 1");
  r.gpu = m_gpu;
  r.path = CopyPath::Dma;
  // The latency of r's own path (issue 14: a CXL / NVMe / peer copy pays its endpoint's).
  // An NVMe read whose connector keeps several reads in flight waits one latency per wave.
  const std::int64_t waves = dma_read_waves(r, copies);
  const double fixed = waves == copies
                           ? dma_stream_fixed_s(m_gpu_spec, copies, m_link->request_latency_s(r))
                           : dma_stream_fixed_s(m_gpu_spec, copies, 0) +
                                 static_cast<double>(waves - 1) * m_link->request_latency_s(r);
  m_copies += static_cast<std::uint64_t>(copies);
  m_bytes += r.bytes;
  return fixed;
}

void CopyEngine::start(TransferRequest& r, std::int64_t copies, TransferGroup& g, double delay_s) {
  const double fixed = prepare(r, copies);
  m_link->start(r, g, delay_s + fixed);
}

void CopyKernel::start(TransferRequest& r, std::int64_t blocks, TransferGroup& g, double delay_s,
                       SmPool* sms, int sms_wanted) {
  if (!m_link) throw std::logic_error(std::string(name()) + ": start() needs attach_link()");
  if (blocks < 0 || !(r.bytes >= 0))
    throw std::logic_error(std::string(name()) + ": blocks and bytes must be >= 0");
  m_inflight.remove_if([](const InFlight& k) { return k.over; });
  int held = 0;
  if (sms) {
    if (sms_wanted < 1) throw std::logic_error(std::string(name()) + ": a copy kernel wants SMs");
    // Earlier copy kernels may hold every SM but the one the pool keeps for compute (PP
    // micro-batches in flight each start their own): this one's blocks then run on that SM,
    // shared with compute (held 0, its loads in flight on one SM: little_sms below).
    held = sms->acquire(sms_wanted);
  }
  ++m_kernels;
  m_blocks += static_cast<decltype(m_blocks)>(blocks);
  m_sms_held += held;
  // The SMs whose loads are in flight: those held, plus the one SM the pool keeps for compute
  // when the kernel wanted it and took every other (a grid larger than the GPU runs blocks on
  // every idle SM; compute issued later shares that SM). So a kernel on an idle GPU reads at
  // the whole GPU's Little's-law rate, as the serving engine's copy kernels did before they
  // took SMs (issue 13).
  const int little_sms = sms && sms_wanted > held && sms->free() == 1 ? held + 1 : held;
  r.path = CopyPath::Kernel;
  r.pinned = true;
  set_inflight(r, sms ? little_sms : m_gpu_spec.sm_count);
  g.add();
  m_inflight.emplace_back();
  InFlight* k = &m_inflight.back();
  TransferGroup* outer = &g;
  k->inner.on_finished = [this, k, outer, sms, held](double end_s) {
    if (sms) sms->release(held);
    m_sms_held -= held;
    k->over = true;
    outer->member_done(end_s);
  };
  m_link->start(r, k->inner, delay_s + copy_kernel_fixed_s(m_gpu_spec, blocks));
}

void CopyKernel::copy_blocks(int gpu, Direction dir, double block_bytes, int blocks, SmPool* sms,
                             int sms_wanted, Endpoint endpoint, int endpoint_index) {
  if (blocks < 0 || !(block_bytes >= 0))
    throw std::logic_error(std::string(name()) + ": blocks and block bytes must be >= 0");
  int held = 0;
  if (sms) {
    held = sms->acquire(sms_wanted);
    if (held < 1) throw std::logic_error(std::string(name()) + ": no SM free for a copy kernel");
  }
  ++m_kernels;
  // One kernel keeps its blocks' loads in flight together, so its bytes cross the link as one
  // pipelined transfer (one round trip); the per-block fixed cost (thread-block scheduling,
  // address setup) is serial and paid before it: t = blocks·t0 + round trip + bytes / B.
  if (blocks > 0 && m_block_overhead_s > 0)
    sc_core::wait(sc_core::sc_time(copy_kernel_fixed_s(m_gpu_spec, blocks), sc_core::SC_SEC));
  if (blocks > 0) {
    TransferRequest r;
    r.gpu = gpu;
    r.dir = dir;
    r.path = CopyPath::Kernel;
    r.bytes = block_bytes * blocks;
    r.pinned = true;
    r.endpoint = endpoint;
    r.endpoint_index = endpoint_index;
    // Little's law on the loads in flight: the SMs this kernel holds (all without a pool).
    set_inflight(r, sms ? held : m_gpu_spec.sm_count);
    r.start_s = sim_now_seconds();
    send(out, r, name());
    m_blocks += static_cast<decltype(m_blocks)>(blocks);
  }
  if (sms) sms->release(held);
}

}  // namespace kappasim
