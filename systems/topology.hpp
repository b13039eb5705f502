// A system (systems/system_spec) as the resources of the flow model and the path each host<->GPU
// copy takes through them. Pure C++; the SystemC fabric (systems/flow_fabric) asks it for
// paths, rate caps and latencies.
//
// Resources (capacity in units per second; a flow consumes `cost` units per payload byte):
//   socket<s>.dram          DRAM of socket s: socket_bandwidth() × dram_efficiency, B/s, shared by
//                           reads and writes
//   socket-link.<a>to<b>    inter-socket link (UPI / xGMI), one per ordered pair, B/s
//   hostlink<i>.down / .up  host-link instance i (PCIe root port / switch uplink, or the C2C;
//                           GPUs g with the same g / gpus_sharing_host_link share it), per
//                           direction; PCIe in wire bytes/s (raw_Bps × usable_fraction); C2C
//                           bandwidth_h2d / bandwidth_d2h where measured, else per direction
//   gpu<g>.link.down / .up  GPU g's own link to its switch (only when gpus_sharing_host_link > 1)
//   gpu<g>.hbm              GPU g's HBM (hbm_bandwidth × hbm_efficiency), both directions;
//                           also the only resource of a CopyPath::Local flow (compute's HBM
//                           bytes, on-GPU copies), which shares it max-min with host copies
//   (a copy kernel's H2D read also has a rate cap: Little's law on its in-flight loads,
//    sm_inflight / round_trip, the bound `sm_inflight`; see rate_cap and models/gpu/
//    copy_kernel_shape; the read tags below are the bound `read_tags`)
//   gpu<g>.read-tags        PCIe only: GPU g's outstanding read requests (max_outstanding_reads);
//                           a read holds one tag per request for a round trip, so an H2D flow
//                           costs round_trip_latency / request_bytes tag-seconds per payload byte
//                           (Little's law: tags × request / RTT, as pcie_protocol's
//                           read_tag_limit_Bps)
//
// On a PCIe resource a flow costs wire_cost().data_dir wire bytes per payload byte on the
// payload's direction and wire_cost().reverse_dir on the other (read requests, ACK/flow-control
// DLLPs): this is how H2D and D2H copies on one link slow each other. C2C and the unified-HBM
// tier carry no published framing: cost 1 on the data direction, 0 on the other (assumption).
//
// Issue 14: the other end of a transfer (TransferRequest::endpoint). Resources created only when
// the system has them, appended after the ones above (so a system without them keeps exactly
// the resource list above, and every output that names resources stays the same):
//   cxl<i>.link.up / .down  CXL device i's link (device->host / host->device), payload B/s
//                           (cxl.link_Bps(): flit framing); device i on socket i mod sockets
//   cxl<i>.media            the device's DRAM, both directions: capacity media_read_bandwidth,
//                           a read costs 1, a write media_read / media_write per byte
//   nvme<i>.read / .write   drive i's sequential read / write bandwidth, B/s
//   nvme<i>.read-iops / .write-iops
//                           the drive's IOPS in IO/s: a transfer in requests of io_bytes costs
//                           1 / io_bytes per payload byte (so alone min(seq, iops × io_bytes))
//   cxlpool.media           issue 25: a CXL pool's devices together (system.cxl_pool), both
//                           directions as cxl<i>.media; one resource for every node
//   cxlpool.port.up / .down the node's host port to the pool's switch (system.cxl_pool_lanes),
//                           per node ("node<n>.cxlpool.port.up")
//   gpu<g>.nvlink.out / .in GPU g's NVLink per direction (gpu.nvlink_bandwidth); the NVSwitch
//                           is non-blocking, so a peer copy crosses only the two GPUs' ports
//                           (only with nvlink_bandwidth and more than one GPU per node)
//   gpu<g>.nic.out / .in    GPU g's NIC port per direction (system.nic_bandwidth)
// Multi-node (build_topology(s, nodes)): every node has its own copy of the host resources
// (node 0 keeps the names above; node n > 0: "node<n>.socket0.dram", "socket-link.node<n>.0to1",
// "node<n>.hostlink<i>.down", "node<n>.cxl<i>...", "node<n>.nvme<i>..."); GPU resources are
// named by the global GPU index g (node g / gpus_per_node).
#pragma once

#include <string>
#include <vector>

#include "interconnects/flow_network.hpp"
#include "interconnects/link_spec.hpp"
#include "interconnects/transfer.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {

class Topology {
 public:
  struct Resource {
    std::string name;
    double capacity;  // units per second
  };

  int gpus() const { return m_gpus; }  // every node's GPUs (gpus_per_node × nodes)
  int nodes() const { return m_nodes; }
  int gpus_per_node() const { return m_gpus_per_node; }
  int node_of_gpu(int g) const;
  int cxl_devices() const { return m_cxl_devices; }  // per node
  int nvme_drives() const { return m_nvme_drives; }  // per node
  int sockets() const { return m_sockets; }
  int host_link_instances() const { return m_instances; }
  const std::vector<Resource>& resources() const { return m_resources; }
  // Index of a resource by name; std::out_of_range when there is none.
  int resource(const std::string& name) const;
  // Adds every resource to `net` in order, so resource i here is ResourceId i there.
  void add_to(FlowNetwork& net) const;

  // The resources one copy crosses and its cost on each (units per payload byte).
  // InputError for a copy kernel over pageable memory (zero-copy needs pinned memory).
  std::vector<FlowNetwork::Use> path(int gpu, Direction dir, CopyPath how, bool pinned) const;
  void path(int gpu, Direction dir, CopyPath how, bool pinned,
            std::vector<FlowNetwork::Use>& out) const;  // into `out`, cleared first
  // Payload bytes/s one copy cannot exceed on its own: +inf when pinned; pageable memory is
  // staged by one CPU memcpy thread (memcpy_thread_bandwidth), pipelined with the DMA. A copy
  // kernel's read over PCIe is also bounded by Little's law on the bytes its loads keep in
  // flight: sm_inflight / round_trip_latency (sm_inflight = 0: the kernel's shape is not
  // known, no bound of its own; CopyKernel sets it from its CopyKernelShape).
  double rate_cap(int gpu, Direction dir, CopyPath how, bool pinned, double sm_inflight = 0) const;
  // Time to the first payload byte of one transfer, charged before it joins the fluid model.
  // A copy kernel's read whose Little's-law bound is below the link's SmRead rate gets 0: its
  // first round trip is already inside bytes / (sm_inflight / round_trip) (each window of
  // sm_inflight bytes takes one round trip), as the packet model shows.
  double latency(int gpu, Direction dir, CopyPath how, bool pinned, double sm_inflight = 0) const;

  // Payload bytes/s one copy gets alone on an idle system (the tightest resource on its path,
  // or its rate cap): used by tests and the probe's notes.
  double solo_rate(int gpu, Direction dir, CopyPath how, bool pinned) const;

  // ---- any endpoint (issue 14): the same four for a whole request (gpu, dir, path, pinned,
  // endpoint, endpoint_index, direct, io_bytes, sm_inflight_bytes; not its own rate_cap_Bps).
  // HostDram gives exactly the four above. InputError for an endpoint the system lacks (no
  // such CXL device / NVMe drive / peer GPU, no NIC, no NVLink), a peer equal to the GPU
  // itself, a Local path with another endpoint, pageable memory with another endpoint.
  std::vector<FlowNetwork::Use> path(const TransferRequest& r) const;
  // The same into `out` (cleared first; issue 24: the flow fabric keeps one vector for every
  // transfer instead of a new one per transfer).
  void path(const TransferRequest& r, std::vector<FlowNetwork::Use>& out) const;
  double rate_cap(const TransferRequest& r) const;
  double latency(const TransferRequest& r) const;
  double solo_rate(const TransferRequest& r) const;

  int socket_of_gpu(int g) const;
  int pool_socket(int g) const;  // -1 for an interleaved pool (per rank: SystemSpec::pool_of_gpu)
  int dram(int socket, int node = 0) const {
    return m_dram.at(static_cast<std::size_t>(node * m_sockets + socket));
  }
  int socket_link(int from, int to, int node = 0) const;
  int host_link(int instance, Direction dir) const;  // instance: global (node-major)
  int gpu_link(int g, Direction dir) const;          // -1 when GPUs do not share a host link
  int hbm(int g) const { return m_hbm.at(g); }
  int read_tags(int g) const { return m_read_tags.empty() ? -1 : m_read_tags.at(g); }
  // Issue 14 resources (-1 / std::out_of_range when the system has none). dev: per node.
  int cxl_socket(int dev) const { return dev % m_sockets; }
  int nvme_socket(int drive) const { return drive % m_sockets; }
  int cxl_link(int dev, Direction dir, int node = 0) const;  // H2D: the device's up direction
  int cxl_media(int dev, int node = 0) const;                // -1 without media figures
  // Issue 25: the system's CXL endpoint is a pool behind a switch (cxl_devices() == 1): its
  // media resource ("cxlpool.media", shared by the nodes) and one host port per node.
  bool cxl_pool() const { return m_cxl_pool; }
  // The latency a CXL transfer adds over local DRAM (a pool's reads cross its switch twice,
  // its writes once; an expander's are the same both ways).
  double cxl_latency(bool read) const {
    return read || !m_cxl_pool ? m_cxl_added_latency_s : m_cxl_write_latency_s;
  }
  int nvme_bandwidth(int drive, Direction dir, int node = 0) const;  // H2D: .read
  int nvme_iops(int drive, Direction dir, int node = 0) const;
  int nvlink(int g, bool out) const;
  int nic(int g, bool out) const;

 private:
  friend Topology build_topology(const SystemSpec& s, int nodes);
  int add(std::string name, double capacity);
  // The GPU's own side of a host-side transfer: its host-link instance (and GPU link), data on
  // the down direction when `down`, with the framing of operation [how][op_h2d]; its HBM.
  void gpu_side(std::vector<FlowNetwork::Use>& out, int gpu, bool down, int how, int op_h2d) const;
  int local(int g) const { return g % m_gpus_per_node; }
  void check_endpoint(const TransferRequest& r) const;
  double io_bytes(const TransferRequest& r) const;

  int m_nodes = 1;
  int m_gpus_per_node = 0;
  int m_instances_per_node = 0;
  // ---- issue 14 devices (per node: index node * count + i) ----
  int m_cxl_devices = 0;
  int m_nvme_drives = 0;
  double m_cxl_added_latency_s = 0;
  double m_cxl_write_cost = 1;  // media units per byte written (media_read / media_write)
  bool m_cxl_pool = false;      // issue 25: the CXL endpoint is a pool behind a switch
  double m_cxl_write_latency_s = 0;
  std::vector<int> m_cxl_up, m_cxl_down, m_cxl_media;
  NvmeDriveSpec m_nvme;
  std::vector<int> m_nvme_read, m_nvme_write, m_nvme_riops, m_nvme_wiops;
  double m_nvlink_latency_s = 0;
  std::vector<int> m_nvlink_out, m_nvlink_in;  // per GPU; empty without NVLink
  double m_nic_latency_s = 0;
  std::vector<int> m_nic_out, m_nic_in;  // per GPU; empty without system.nic_bandwidth

  int m_gpus = 0;
  int m_sockets = 1;
  int m_instances = 0;
  int m_gpus_per_socket = 0;
  int m_sharing = 1;
  std::vector<SystemSpec::KvPool> m_pool;  // per GPU
  LinkType m_link_type = LinkType::Pcie;
  // wire bytes per payload byte on the payload's / the opposite direction, [dma][h2d]
  double m_data_cost[2][2] = {{1, 1}, {1, 1}};
  double m_reverse_cost[2][2] = {{0, 0}, {0, 0}};
  double m_round_trip_s = 0;
  double m_tags = 0;              // outstanding read requests per GPU (PCIe)
  double m_tag_cost[2] = {0, 0};  // tag-seconds per payload byte read, [dma]
  double m_memcpy_thread_Bps = 0;
  std::vector<Resource> m_resources;
  std::vector<int> m_read_tags;
  std::vector<int> m_dram, m_hbm, m_link_down, m_link_up, m_gpu_down, m_gpu_up;
  std::vector<int> m_socket_links;  // [from * sockets + to], -1 on the diagonal
};

// Throws InputError naming what the system lacks for simulation: the GPU's and host link's
// simulator fields, host_memory.memcpy_thread_bandwidth / dram_efficiency, inter-socket
// bandwidth of a multi-socket host, a GPU placed on a socket that does not exist.
// nodes: the replica's nodes (issue 14), each a copy of `s` (GPU g on node g / s.gpus).
Topology build_topology(const SystemSpec& s, int nodes = 1);

}  // namespace kappasim
