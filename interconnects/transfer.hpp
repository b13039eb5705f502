// The plain data of one host<->GPU (or on-GPU) transfer, shared by every link back end
// (interconnects/link_model.hpp), the topology (systems/topology) and the components that issue
// transfers. SystemC-free on purpose: pure code (topology, analytic estimators) uses the enums by
// name, and times are plain seconds of simulated time.
#pragma once

#include <utility>
#include <vector>

namespace kappasim {

enum class Direction { H2D, D2H };
// Who moves the bytes:
//  - Dma: a DMA copy engine (cudaMemcpyAsync; reads host memory in large requests returned as
//    read-completion-size completions);
//  - Kernel: SMs running a copy kernel over pinned host memory (zero-copy; one small read per
//    sm_read_size);
//  - Local: traffic that stays on one GPU's HBM (compute's weight / KV / activation bytes,
//    GPU-side buffer->page copies). It crosses only that GPU's HBM resource; `dir` is ignored.
enum class CopyPath { Dma, Kernel, Local };
// The other end of a transfer (issue 14; `gpu` is always one end). H2D: endpoint -> gpu; D2H:
// gpu -> endpoint.
//  - HostDram: the GPU's pinned KV pool in host DRAM (every transfer before issue 14);
//  - Cxl: CXL Type-3 expander `endpoint_index` (system.cxl_devices);
//  - Nvme: NVMe drive `endpoint_index` (system.nvme_drives), through a host-DRAM bounce buffer,
//    or straight to / from GPU memory when `direct` (GPUDirect Storage);
//  - PeerGpu: GPU `endpoint_index` of the replica (NVLink within a node, the two GPUs' NICs
//    between nodes: GPU index g is on node g / system.gpus);
//  - Remote: a remote KV store over the GPU's NIC (GPUDirect RDMA).
enum class Endpoint { HostDram, Cxl, Nvme, PeerGpu, Remote };

struct TransferRequest {
  int gpu = 0;
  Direction dir = Direction::H2D;
  CopyPath path = CopyPath::Dma;
  double bytes = 0;    // payload bytes
  bool pinned = true;  // host buffer pinned (false: pageable, staged through a CPU memcpy)
  Endpoint endpoint = Endpoint::HostDram;  // issue 14: the other end (see Endpoint)
  int endpoint_index = 0;                  // Cxl device, Nvme drive or peer GPU index
  bool direct = false;                     // Nvme: GPUDirect Storage (no host bounce)
  // Nvme: bytes per I/O request the transfer is split into (0: the drive's io_size, the size
  // of its IOPS figures). The drive then moves min(seq, iops × io_bytes) and one transfer at
  // most queue_depth × io_bytes / read_latency (systems/topology, docs/flow-model.md).
  double io_bytes = 0;
  // Nvme reads: the reads the software keeps in flight (the connector's queue depth; issue 20
  // item 3). 0 or 1: one at a time, as a DMA stream of `copies` copies is timed by default
  // (each copy waits its request latency after the one before: dma_stream_fixed_s). q > 1: the
  // copies go q at a time, so the stream waits ceil(copies / q) latencies
  // (dma_read_waves), and Little's law caps the rate at q × io_bytes / read_latency.
  int queue_depth = 0;
  // Copy-kernel reads (CopyPath::Kernel, H2D): payload bytes the kernel's loads keep in flight
  // (sm_inflight_bytes in pcie_protocol); Little's law bounds the read at this / round trip.
  // 0: no bound of its own (a kernel of unknown shape): both back ends then apply only the
  // read tags and the wire. CopyKernel sets it from its CopyKernelShape.
  double sm_inflight_bytes = 0;
  // Payload bytes/s this transfer may not exceed on its own (0: no cap of its own). A Local
  // compute flow sets hbm_bytes / compute_time, so alone it lasts exactly its compute time.
  double rate_cap_Bps = 0;
  // Filled by the model (simulated seconds): when the transfer was issued to the link and when
  // its last payload byte arrived.
  double start_s = 0, end_s = 0;
  // Flow model: seconds the transfer moved with each resource as its bottleneck (Topology
  // resource index; -1: its rate cap). Empty for the packet model.
  std::vector<std::pair<int, double>> bottleneck_s;
};

inline const char* to_string(Direction d) { return d == Direction::H2D ? "H2D" : "D2H"; }
inline const char* to_string(Endpoint e) {
  switch (e) {
    case Endpoint::HostDram:
      return "dram";
    case Endpoint::Cxl:
      return "cxl";
    case Endpoint::Nvme:
      return "nvme";
    case Endpoint::PeerGpu:
      return "peer";
    case Endpoint::Remote:
      return "remote";
  }
  return "?";
}
inline const char* to_string(CopyPath p) {
  return p == CopyPath::Dma ? "dma" : p == CopyPath::Kernel ? "kernel" : "local";
}

}  // namespace kappasim
