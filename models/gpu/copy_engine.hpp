// The initiators of host<->GPU copies, talking to any LinkModule (flow or packet fidelity)
// through a TLM socket.
//
// CopyEngine (one per GPU): cudaMemcpyAsync on the GPU's DMA copy engines. A copy takes one of
// `copy_engines` engines (FIFO when all are busy), waits `dma_copy_overhead` (the fixed cost of
// one cudaMemcpyAsync: descriptor fetch, engine setup, completion signalling) and then moves its
// bytes over the link (b_transport; the link model adds the first-byte latency and the shared,
// protocol-limited bandwidth). Copies on one stream are issued back to back by their caller, so
// a stream of n copies of s bytes takes n·(dma_copy_overhead + latency + s / B): the measured
// t0 + size / B curve. The engines serve both directions (cudaMemcpyAsync picks an engine per
// stream; deviceQuery reports only their number).
//
// CopyKernel: a copy kernel on SMs reading/writing pinned host memory directly (zero-copy; vLLM's
// and LMCache's block copy kernels). It holds `sms_wanted` SMs of an SmPool for its duration
// (compute then runs on what is left), and moves its blocks back to back, each after
// `copy_kernel_block_overhead` (address computation and issue of one block's loads, measured as
// the t0 of the per-block curve), over CopyPath::Kernel. Its H2D reads are bounded by Little's
// law on the loads its SMs keep in flight: its launch shape (CopyKernelShape: load width,
// threads per block, blocks per SM, loads per thread; the stack's or the probe's) under the
// GPU's occupancy limits gives the bytes per SM held, one round trip each (TransferRequest::
// sm_inflight_bytes): a kernel squeezed onto few SMs, or with few warps resident, reads slower.
// Without a shape, only the link and its read tags bound it.
//
// Non-blocking (the serving path, issue 13): CopyEngine::start and CopyKernel::start issue the
// same transfer through LinkModel::start into a TransferGroup, with the same fixed costs as
// delay (dma_stream_fixed_s, copy_kernel_fixed_s), after attach_link(). A started copy kernel
// takes its SMs from the pool at once and returns them when its transfer's last byte has
// arrived, so compute started meanwhile (GpuCompute::start_step) runs on fewer SMs.
// CopyEngine::start does not queue for one of the `copy_engines` engines (the blocking copy()
// does): its caller issues one stream per GPU and direction, as the serving engine does.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include <cstdint>
#include <deque>
#include <list>

#include "interconnects/link_model.hpp"
#include "models/gpu/copy_kernel_shape.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "models/gpu/sm_pool.hpp"

namespace kappasim {

// The fixed time `copies` back-to-back cudaMemcpyAsync calls on one stream spend before their
// bytes flow as one transfer: copies × dma_copy_overhead + (copies − 1) × latency (the first
// copy's latency is charged by the link model). Shared by CopyEngine::copy_many and the serving
// engine, which moves every GPU's shard as one group of flows.
double dma_stream_fixed_s(const GpuSpec& gpu, std::int64_t copies, double latency_s);
// How many of a stream's `copies` wait a request latency in series (issue 20 item 3): every one
// (copies) unless r is an NVMe read whose connector keeps r.queue_depth > 1 reads in flight,
// then ceil(copies / queue_depth) waves (TransferRequest::queue_depth).
std::int64_t dma_read_waves(const TransferRequest& r, std::int64_t copies);
// The fixed time of a copy kernel moving `blocks` blocks: blocks × copy_kernel_block_overhead.
double copy_kernel_fixed_s(const GpuSpec& gpu, std::int64_t blocks);

class CopyEngine : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<CopyEngine> out;

  // Needs gpu.copy_engines and gpu.dma_copy_overhead (InputError naming the missing one).
  CopyEngine(const sc_core::sc_module_name& name, const GpuSpec& gpu, int gpu_index);

  // Blocking; call from an SC_THREAD. r.gpu is set to this engine's GPU and r.path to Dma.
  // r.start_s is when copy() was called, r.end_s when the last byte arrived.
  void copy(TransferRequest& r);
  // `copies` back-to-back copies on one stream moving r.bytes in all (e.g. a layer-wise load:
  // one DMA per layer per chunk). Timed as one engine paying copies × dma_copy_overhead and
  // copies − 1 extra latencies (`extra_latency_s` each) serially, then one transfer of all the
  // bytes: exact when the copies run alone, and one flow instead of `copies` under contention.
  void copy_many(TransferRequest& r, std::int64_t copies, double extra_latency_s);

  // ---- non-blocking ----
  void attach_link(LinkModel& link) { m_link = &link; }
  // Binds `out` to the link's socket (the blocking path) and attaches it (call once, during
  // elaboration; the socket must be bound before the simulation starts).
  void connect(LinkModule& link) {
    out.bind(link.in);
    m_link = &link;
  }
  // `copies` back-to-back copies on one stream moving r.bytes in all, started `delay_s` from
  // now: r (gpu and path set here) joins g after dma_stream_fixed_s(copies, the link's latency).
  // logic_error without attach_link().
  void start(TransferRequest& r, std::int64_t copies, TransferGroup& g, double delay_s = 0);
  // start() up to the link: r's gpu and path set, the engine's counts taken, and the fixed cost
  // returned (r then joins its group at delay_s + that on link(); RankGpus::start_all starts a
  // rank's copies on the link together: issue 24). logic_error without attach_link().
  double prepare(TransferRequest& r, std::int64_t copies);
  LinkModel* link() const { return m_link; }

  int engines() const { return m_engines; }
  int gpu() const { return m_gpu; }
  std::uint64_t copies() const { return m_copies; }
  double bytes() const { return m_bytes; }

 private:
  void acquire();
  void release();

  int m_gpu;
  int m_engines;
  int m_free;
  GpuSpec m_gpu_spec;
  double m_overhead_s;
  std::deque<sc_core::sc_event*> m_queue;
  std::uint64_t m_copies = 0;
  double m_bytes = 0;
  LinkModel* m_link = nullptr;
};

class CopyKernel : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<CopyKernel> out;

  // Needs gpu.copy_kernel_block_overhead. `shape`: the kernel's launch shape (validated here;
  // not given: its reads have no Little's-law bound of their own).
  CopyKernel(const sc_core::sc_module_name& name, const GpuSpec& gpu,
             const CopyKernelShape& shape = {});

  // Blocking; call from an SC_THREAD. Copies `blocks` blocks of `block_bytes` from pinned host
  // memory (H2D) or to it (D2H) as one kernel. With a pool, takes up to sms_wanted SMs (at least
  // one must be granted: logic_error otherwise) and returns them at the end.
  // endpoint / endpoint_index (issue 14): the memory the kernel reads or writes (host DRAM, or
  // CXL-backed pinned memory: Endpoint::Cxl; the fabric decides what else it allows).
  void copy_blocks(int gpu, Direction dir, double block_bytes, int blocks, SmPool* sms = nullptr,
                   int sms_wanted = 0, Endpoint endpoint = Endpoint::HostDram,
                   int endpoint_index = 0);

  // ---- non-blocking ----
  void attach_link(LinkModel& link) { m_link = &link; }
  // Binds `out` to the link's socket (the blocking path) and attaches it (call once, during
  // elaboration; the socket must be bound before the simulation starts).
  void connect(LinkModule& link) {
    out.bind(link.in);
    m_link = &link;
  }
  // One kernel of `blocks` blocks moving r.bytes in all (r.gpu, r.dir and r's endpoint fields as
  // given; path set to Kernel, pinned), started `delay_s` from now: with a pool it takes up to
  // sms_wanted SMs now (at least one, logic_error otherwise) and holds them until r's last byte has
  // arrived; its H2D read is bounded by Little's law on the SMs held (all SMs without a pool). r
  // joins g after copy_kernel_fixed_s(blocks). logic_error without attach_link().
  void start(TransferRequest& r, std::int64_t blocks, TransferGroup& g, double delay_s = 0,
             SmPool* sms = nullptr, int sms_wanted = 0);
  // SMs held by started kernels whose transfer has not ended.
  int sms_held() const { return m_sms_held; }

  std::uint64_t kernels() const { return m_kernels; }
  std::uint64_t blocks() const { return m_blocks; }
  const CopyKernelShape& shape() const { return m_shape; }

 private:
  // Sets r.sm_inflight_bytes for an H2D read on `sms` SMs (when the shape is given).
  void set_inflight(TransferRequest& r, int sms) const;

  GpuSpec m_gpu_spec;
  CopyKernelShape m_shape;
  double m_block_overhead_s;
  std::uint64_t m_kernels = 0;
  std::uint64_t m_blocks = 0;
  LinkModel* m_link = nullptr;
  struct InFlight {  // one started kernel: its own group, to return its SMs at its end
    TransferGroup inner;
    bool over = false;
  };
  std::list<InFlight> m_inflight;  // stable addresses; finished entries dropped on next start
  int m_sms_held = 0;
};

}  // namespace kappasim
