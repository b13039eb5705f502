#include "systems/topology.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/error.hpp"
#include "interconnects/pcie_protocol.hpp"

namespace kappasim {

namespace {
bool h2d(Direction d) { return d == Direction::H2D; }
bool dma(CopyPath p) { return p == CopyPath::Dma; }
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

int Topology::add(std::string name, double capacity) {
  m_resources.push_back(Resource{std::move(name), capacity});
  return static_cast<int>(m_resources.size() - 1);
}

int Topology::resource(const std::string& name) const {
  for (std::size_t i = 0; i < m_resources.size(); ++i)
    if (m_resources[i].name == name) return static_cast<int>(i);
  throw std::out_of_range("Topology: no resource '" + name + "'");
}

void Topology::add_to(FlowNetwork& net) const {
  if (net.resources() != 0)
    throw std::logic_error("Topology::add_to: the network must start empty");
  for (const Resource& r : m_resources) net.add_resource(r.name, r.capacity);
}

int Topology::node_of_gpu(int g) const {
  if (g < 0 || g >= m_gpus) throw std::out_of_range("Topology: no GPU " + std::to_string(g));
  return g / m_gpus_per_node;
}

int Topology::socket_of_gpu(int g) const {
  if (g < 0 || g >= m_gpus) throw std::out_of_range("Topology: no GPU " + std::to_string(g));
  return m_gpus_per_socket > 0 ? local(g) / m_gpus_per_socket : 0;
}

int Topology::pool_socket(int g) const {
  const int own = socket_of_gpu(g);
  switch (m_pool.at(static_cast<std::size_t>(local(g)))) {
    case SystemSpec::KvPool::Local:
      return own;
    case SystemSpec::KvPool::FirstTouch:
      return own;  // assumption: the rank's own socket
    case SystemSpec::KvPool::Socket0:
      return 0;
    case SystemSpec::KvPool::Remote:
      return (own + 1) % m_sockets;
    case SystemSpec::KvPool::Interleave:
      return m_sockets == 1 ? 0 : -1;
  }
  return 0;
}

int Topology::socket_link(int from, int to, int node) const {
  if (from < 0 || to < 0 || from >= m_sockets || to >= m_sockets || from == to || node < 0 ||
      node >= m_nodes)
    throw std::out_of_range("Topology: no socket link " + std::to_string(from) + "->" +
                            std::to_string(to));
  return m_socket_links[static_cast<std::size_t>((node * m_sockets + from) * m_sockets + to)];
}

int Topology::host_link(int instance, Direction dir) const {
  return h2d(dir) ? m_link_down.at(instance) : m_link_up.at(instance);
}

int Topology::gpu_link(int g, Direction dir) const {
  if (m_sharing <= 1) return -1;
  return h2d(dir) ? m_gpu_down.at(g) : m_gpu_up.at(g);
}

int Topology::cxl_link(int dev, Direction dir, int node) const {
  const auto i = static_cast<std::size_t>(node * m_cxl_devices + dev);
  if (dev < 0 || dev >= m_cxl_devices) return -1;
  return h2d(dir) ? m_cxl_up.at(i) : m_cxl_down.at(i);
}

int Topology::cxl_media(int dev, int node) const {
  if (dev < 0 || dev >= m_cxl_devices || m_cxl_media.empty()) return -1;
  return m_cxl_media.at(static_cast<std::size_t>(node * m_cxl_devices + dev));
}

int Topology::nvme_bandwidth(int drive, Direction dir, int node) const {
  if (drive < 0 || drive >= m_nvme_drives) return -1;
  const auto i = static_cast<std::size_t>(node * m_nvme_drives + drive);
  return h2d(dir) ? m_nvme_read.at(i) : m_nvme_write.at(i);
}

int Topology::nvme_iops(int drive, Direction dir, int node) const {
  if (drive < 0 || drive >= m_nvme_drives) return -1;
  const auto i = static_cast<std::size_t>(node * m_nvme_drives + drive);
  return h2d(dir) ? m_nvme_riops.at(i) : m_nvme_wiops.at(i);
}

int Topology::nvlink(int g, bool out) const {
  if (m_nvlink_out.empty()) return -1;
  return out ? m_nvlink_out.at(static_cast<std::size_t>(g))
             : m_nvlink_in.at(static_cast<std::size_t>(g));
}

int Topology::nic(int g, bool out) const {
  if (m_nic_out.empty()) return -1;
  return out ? m_nic_out.at(static_cast<std::size_t>(g)) : m_nic_in.at(static_cast<std::size_t>(g));
}

void Topology::gpu_side(std::vector<FlowNetwork::Use>& out, int gpu, bool down, int how,
                        int op_h2d) const {
  const int j = op_h2d ? 0 : 1;
  const auto put = [&](int dn, int upr) {
    out.push_back({down ? dn : upr, m_data_cost[how][j]});
    if (m_reverse_cost[how][j] > 0) out.push_back({down ? upr : dn, m_reverse_cost[how][j]});
  };
  const int inst = node_of_gpu(gpu) * m_instances_per_node + local(gpu) / m_sharing;
  put(m_link_down.at(static_cast<std::size_t>(inst)), m_link_up.at(static_cast<std::size_t>(inst)));
  if (m_sharing > 1)
    put(m_gpu_down.at(static_cast<std::size_t>(gpu)), m_gpu_up.at(static_cast<std::size_t>(gpu)));
  out.push_back({m_hbm.at(static_cast<std::size_t>(gpu)), 1.0});
}

std::vector<FlowNetwork::Use> Topology::path(int gpu, Direction dir, CopyPath how,
                                             bool pinned) const {
  std::vector<FlowNetwork::Use> uses;
  if (how != CopyPath::Local) uses.reserve(8);  // one allocation per call
  path(gpu, dir, how, pinned, uses);
  return uses;
}

void Topology::path(int gpu, Direction dir, CopyPath how, bool pinned,
                    std::vector<FlowNetwork::Use>& uses) const {
  uses.clear();
  const int gs = socket_of_gpu(gpu);
  // Local traffic (compute, on-GPU copies) stays in the GPU's HBM.
  if (how == CopyPath::Local) {
    uses.push_back({m_hbm.at(gpu), 1.0});
    return;
  }
  if (!pinned && !dma(how))
    throw InputError(
        "a copy kernel reads and writes pinned (page-locked, mapped) host memory "
        "only; pageable memory needs the DMA path");
  // Pageable: the driver's CPU thread reads the pageable buffer and writes a pinned staging
  // buffer, and the DMA reads (or writes) the staging buffer: DRAM is touched three times.
  const double dram_touches = pinned ? 1.0 : 3.0;
  const int ps = pool_socket(gpu);
  const int n = node_of_gpu(gpu);
  if (m_link_type == LinkType::HbmTier) {
    // The unified-HBM tier holds the KV itself: no host DRAM or socket link on the way.
  } else if (ps >= 0) {
    uses.push_back({dram(ps, n), dram_touches});
    if (ps != gs) uses.push_back({h2d(dir) ? socket_link(ps, gs, n) : socket_link(gs, ps, n), 1.0});
  } else {  // interleaved: 1/sockets of the bytes on each socket; the remote parts cross links
    const double share = 1.0 / m_sockets;
    for (int s = 0; s < m_sockets; ++s) {
      uses.push_back({dram(s, n), dram_touches * share});
      if (s != gs)
        uses.push_back({h2d(dir) ? socket_link(s, gs, n) : socket_link(gs, s, n), share});
    }
  }
  gpu_side(uses, gpu, h2d(dir), dma(how) ? 0 : 1, h2d(dir));
  // Reads hold a read tag for a round trip per request (Little's law: tags × request / RTT).
  const double tag_cost = m_tag_cost[dma(how) ? 0 : 1];
  if (h2d(dir) && tag_cost > 0) uses.push_back({m_read_tags.at(gpu), tag_cost});
}

double Topology::rate_cap(int gpu, Direction dir, CopyPath how, bool pinned,
                          double sm_inflight) const {
  socket_of_gpu(gpu);
  if (how == CopyPath::Local) return kInf;  // the request's own rate_cap_Bps, if any
  if (!dma(how) && h2d(dir) && m_link_type == LinkType::Pcie && pinned) {
    // Zero-copy SM reads: each load waits a round trip (Little's law); 0 = no bound.
    return little_rate_Bps(sm_inflight, m_round_trip_s);
  }
  if (pinned || m_link_type == LinkType::HbmTier) return kInf;  // the tier needs no CPU staging
  if (!dma(how))
    throw InputError("a copy kernel needs pinned host memory; pageable needs the DMA path");
  return m_memcpy_thread_Bps;
}

double Topology::latency(int gpu, Direction dir, CopyPath how, bool pinned,
                         double sm_inflight) const {
  socket_of_gpu(gpu);
  if (how == CopyPath::Local) return 0;         // on-GPU: no link round trip
  if (m_link_type != LinkType::Pcie) return 0;  // no sourced C2C / HBM-tier latency
  if (!dma(how) && h2d(dir) && pinned) {
    // Load-bound kernel reads: the round trip is part of every window (see the header).
    const double link =
        m_resources.at(static_cast<std::size_t>(m_link_down.at(0))).capacity / m_data_cost[1][0];
    if (rate_cap(gpu, dir, how, pinned, sm_inflight) < link) return 0;
  }
  // Reads (H2D, by a copy engine or by SMs): request out, completion back, one round trip per
  // transfer (the requests of one transfer are pipelined up to the tag limit). Posted writes
  // (D2H): the data needs one way, half the round trip. The packet model charges the same.
  return h2d(dir) ? m_round_trip_s : m_round_trip_s / 2;
}

double Topology::solo_rate(int gpu, Direction dir, CopyPath how, bool pinned) const {
  double r = rate_cap(gpu, dir, how, pinned);
  for (const auto& u : path(gpu, dir, how, pinned))
    if (u.cost > 0) r = std::min(r, m_resources[u.resource].capacity / u.cost);
  return r;
}

// ---- any endpoint (issue 14) ----------------------------------------------------------------

void Topology::check_endpoint(const TransferRequest& r) const {
  socket_of_gpu(r.gpu);
  if (r.endpoint == Endpoint::HostDram) return;
  // The transfer, named only for a message (issue 24: every transfer to a CXL device, drive or
  // peer GPU is checked, and building the name each time was most of the check's cost).
  const auto what = [&r] {
    return std::string(to_string(r.dir)) + " transfer between GPU " + std::to_string(r.gpu) +
           " and " + to_string(r.endpoint) + " " + std::to_string(r.endpoint_index);
  };
  if (r.path == CopyPath::Local)
    throw InputError(what() + ": an on-GPU (Local) transfer has no other end");
  if (!r.pinned)
    throw InputError(what() + ": pageable memory is modelled for the host-DRAM pool only");
  const auto range = [&](int count, const char* key, const char* noun) {
    if (count == 0)
      throw InputError(std::string(key) + ": " + what() + ", but the system has no " + noun);
    if (r.endpoint_index < 0 || r.endpoint_index >= count)
      throw InputError(std::string(key) + ": " + what() + ": " + noun +
                       " index out of range (the " + "system has " + std::to_string(count) + ")");
  };
  switch (r.endpoint) {
    case Endpoint::HostDram:
      return;
    case Endpoint::Cxl:
      range(m_cxl_devices, "system.cxl_devices", "CXL devices");
      return;
    case Endpoint::Nvme:
      range(m_nvme_drives, "system.nvme_drives", "NVMe drives");
      if (r.direct && !dma(r.path))
        throw InputError(what() +
                         ": GPUDirect Storage is the drive's own DMA; a copy kernel "
                         "cannot read the drive (use the dma path or direct: false)");
      if (!(r.io_bytes >= 0) || !std::isfinite(r.io_bytes))
        throw InputError(what() + ": io_bytes must be finite and >= 0");
      if (r.queue_depth < 0) throw InputError(what() + ": queue_depth must be >= 0");
      return;
    case Endpoint::PeerGpu: {
      if (r.endpoint_index < 0 || r.endpoint_index >= m_gpus)
        throw InputError("system.gpus: " + what() + ": peer GPU out of range (the replica has " +
                         std::to_string(m_gpus) + " GPUs)");
      if (r.endpoint_index == r.gpu) throw InputError(what() + ": a GPU is not its own peer");
      if (node_of_gpu(r.endpoint_index) == node_of_gpu(r.gpu)) {
        if (m_nvlink_out.empty())
          throw InputError("system.gpu.nvlink_bandwidth: " + what() +
                           " within a node needs the GPU's NVLink bandwidth");
      } else if (m_nic_out.empty()) {
        throw InputError("system.nic_bandwidth: " + what() +
                         " between nodes needs the NIC bandwidth per GPU");
      }
      return;
    }
    case Endpoint::Remote:
      if (m_nic_out.empty())
        throw InputError("system.nic_bandwidth: " + what() + " needs the NIC bandwidth per GPU");
      return;
  }
}

double Topology::io_bytes(const TransferRequest& r) const {
  return r.io_bytes > 0 ? r.io_bytes : m_nvme.io_bytes;
}

std::vector<FlowNetwork::Use> Topology::path(const TransferRequest& r) const {
  std::vector<FlowNetwork::Use> uses;
  if (r.endpoint != Endpoint::HostDram || r.path != CopyPath::Local) uses.reserve(8);
  path(r, uses);
  return uses;
}

void Topology::path(const TransferRequest& r, std::vector<FlowNetwork::Use>& uses) const {
  check_endpoint(r);
  const bool in = h2d(r.dir);  // data into the GPU
  const int g = r.gpu, how = dma(r.path) ? 0 : 1, n = node_of_gpu(g), gs = socket_of_gpu(g);
  if (r.endpoint == Endpoint::HostDram) return path(g, r.dir, r.path, r.pinned, uses);
  uses.clear();
  switch (r.endpoint) {
    case Endpoint::HostDram:
      break;  // above
    case Endpoint::Cxl: {
      // device media -> device link -> (socket link) -> the GPU's host link (a DMA or SM read
      // of host-managed memory, as for DRAM) -> HBM; reads hold tags for the longer round trip.
      const int d = r.endpoint_index, ds = cxl_socket(d);
      if (const int m = cxl_media(d, n); m >= 0) uses.push_back({m, in ? 1.0 : m_cxl_write_cost});
      uses.push_back({cxl_link(d, r.dir, n), 1.0});
      if (ds != gs) uses.push_back({in ? socket_link(ds, gs, n) : socket_link(gs, ds, n), 1.0});
      gpu_side(uses, g, in, how, in);
      if (in && m_tag_cost[how] > 0)
        uses.push_back(
            {m_read_tags.at(static_cast<std::size_t>(g)),
             m_tag_cost[how] * (m_round_trip_s + m_cxl_added_latency_s) / m_round_trip_s});
      return;
    }
    case Endpoint::Nvme: {
      const int d = r.endpoint_index, ds = nvme_socket(d);
      uses.push_back({nvme_bandwidth(d, r.dir, n), 1.0});
      uses.push_back({nvme_iops(d, r.dir, n), 1.0 / io_bytes(r)});
      if (r.direct) {
        // GPUDirect Storage: the drive writes (reads) GPU memory peer-to-peer through its
        // socket's root complex: posted writes down the GPU's link (completions of the drive's
        // reads up it); no host DRAM, no GPU read tags.
        if (ds != gs) uses.push_back({in ? socket_link(ds, gs, n) : socket_link(gs, ds, n), 1.0});
        gpu_side(uses, g, in, 0, !in);
        return;
      }
      // Bounce: the drive writes the host buffer on its own socket, the GPU's copy reads it
      // (or the reverse): DRAM is written once and read once.
      uses.push_back({dram(ds, n), 2.0});
      if (ds != gs) uses.push_back({in ? socket_link(ds, gs, n) : socket_link(gs, ds, n), 1.0});
      gpu_side(uses, g, in, how, in);
      if (in && m_tag_cost[how] > 0)
        uses.push_back({m_read_tags.at(static_cast<std::size_t>(g)), m_tag_cost[how]});
      return;
    }
    case Endpoint::Remote: {
      // GPUDirect RDMA: the NIC reads / writes GPU memory; the remote store's side is not
      // modelled (assumption: it keeps up with one NIC port).
      const auto hbm = FlowNetwork::Use{m_hbm.at(static_cast<std::size_t>(g)), 1.0};
      if (in) {
        uses.push_back({m_nic_in.at(static_cast<std::size_t>(g)), 1.0});
        uses.push_back(hbm);
      } else {
        uses.push_back(hbm);
        uses.push_back({m_nic_out.at(static_cast<std::size_t>(g)), 1.0});
      }
      return;
    }
    case Endpoint::PeerGpu: {
      // The sender's HBM -> its port out -> (NVSwitch, non-blocking / the network) -> the
      // receiver's port in -> its HBM. NVLink within a node, the NICs between nodes.
      const int p = r.endpoint_index;
      const auto from = static_cast<std::size_t>(in ? p : g),
                 to = static_cast<std::size_t>(in ? g : p);
      const bool nvl = node_of_gpu(p) == n;
      uses.push_back({m_hbm.at(from), 1.0});
      uses.push_back({(nvl ? m_nvlink_out : m_nic_out).at(from), 1.0});
      uses.push_back({(nvl ? m_nvlink_in : m_nic_in).at(to), 1.0});
      uses.push_back({m_hbm.at(to), 1.0});
      return;
    }
  }
}

double Topology::rate_cap(const TransferRequest& r) const {
  check_endpoint(r);
  const bool in = h2d(r.dir);
  switch (r.endpoint) {
    case Endpoint::HostDram:
      return rate_cap(r.gpu, r.dir, r.path, r.pinned, r.sm_inflight_bytes);
    case Endpoint::Cxl:
      if (!dma(r.path) && in && m_link_type == LinkType::Pcie) {
        // Zero-copy SM loads of CXL memory: the same loads in flight, each round trip longer by
        // the device's added latency (Little's law) — why a copy kernel reads CXL slower.
        return little_rate_Bps(r.sm_inflight_bytes, m_round_trip_s + m_cxl_added_latency_s);
      }
      return kInf;
    case Endpoint::Nvme: {
      double cap = r.direct ? kInf : rate_cap(r.gpu, r.dir, r.path, true, r.sm_inflight_bytes);
      // Reads: the transfer keeps at most queue_depth requests in flight, each a read latency
      // (Little's law); a connector that keeps fewer in flight (r.queue_depth) is bound by its
      // own. Writes: no write latency in the drive's spec, no cap (assumption).
      if (in && m_nvme.read_latency_s > 0) {
        const int q =
            r.queue_depth > 0 ? std::min(r.queue_depth, m_nvme.queue_depth) : m_nvme.queue_depth;
        cap = std::min(cap, q * io_bytes(r) / m_nvme.read_latency_s);
      }
      return cap;
    }
    case Endpoint::PeerGpu:
    case Endpoint::Remote:
      return kInf;
  }
  return kInf;
}

double Topology::latency(const TransferRequest& r) const {
  check_endpoint(r);
  const bool in = h2d(r.dir);
  switch (r.endpoint) {
    case Endpoint::HostDram:
      return latency(r.gpu, r.dir, r.path, r.pinned, r.sm_inflight_bytes);
    case Endpoint::Cxl: {
      if (m_link_type != LinkType::Pcie) return cxl_latency(in);
      if (!dma(r.path) && in) {
        const double link = m_resources.at(static_cast<std::size_t>(m_link_down.at(0))).capacity /
                            m_data_cost[1][0];
        if (rate_cap(r) < link) return 0;  // load-bound: the round trip is in every window
      }
      return (in ? m_round_trip_s : m_round_trip_s / 2) + cxl_latency(in);
    }
    case Endpoint::Nvme: {
      // The drive's read latency (also for writes: no write figure in the spec, assumption),
      // then the GPU-side hop: a DMA read of the bounce buffer (round trip), a posted write
      // (half), or for GDS the drive's posted write (half) / read of GPU memory (round trip).
      double hop = 0;
      if (m_link_type == LinkType::Pcie)
        hop = r.direct ? (in ? m_round_trip_s / 2 : m_round_trip_s)
                       : latency(r.gpu, r.dir, r.path, true, r.sm_inflight_bytes);
      return m_nvme.read_latency_s + hop;
    }
    case Endpoint::PeerGpu:
      return node_of_gpu(r.endpoint_index) == node_of_gpu(r.gpu) ? m_nvlink_latency_s
                                                                 : m_nic_latency_s;
    case Endpoint::Remote:
      return m_nic_latency_s;
  }
  return 0;
}

double Topology::solo_rate(const TransferRequest& r) const {
  double rate = rate_cap(r);
  for (const auto& u : path(r))
    if (u.cost > 0) rate = std::min(rate, m_resources[u.resource].capacity / u.cost);
  return rate;
}

Topology build_topology(const SystemSpec& s, int nodes) {
  s.gpu.require_sim("system.gpu");
  s.host_link.require_sim("system.host_link");
  const HostMemorySpec& hm = s.host_memory;
  {
    std::string missing;
    if (!hm.memcpy_thread_Bps) missing += "memcpy_thread_bandwidth";
    if (!hm.dram_efficiency)
      missing += std::string(missing.empty() ? "" : ", ") + "dram_efficiency";
    if (!missing.empty())
      throw InputError("system.host_memory: the simulator needs " + missing + " (host memory '" +
                       hm.name + "')");
  }
  if (hm.sockets < 1) throw InputError("system.host_memory.sockets: need at least one socket");
  if (hm.sockets > 1 && !hm.inter_socket_Bps)
    throw InputError("system.host_memory: a " + std::to_string(hm.sockets) +
                     "-socket host needs inter_socket_bandwidth (host memory '" + hm.name + "')");
  if (s.gpus < 1) throw InputError("system.gpus: need at least one GPU");
  if (s.gpus_per_socket > 0 && (s.gpus - 1) / s.gpus_per_socket >= hm.sockets)
    throw InputError("system.gpus_per_socket: " + std::to_string(s.gpus) + " GPUs at " +
                     std::to_string(s.gpus_per_socket) + " per socket need " +
                     std::to_string((s.gpus + s.gpus_per_socket - 1) / s.gpus_per_socket) +
                     " sockets, host memory '" + hm.name + "' has " + std::to_string(hm.sockets));
  if (s.gpus_sharing_host_link < 1)
    throw InputError("system.gpus_sharing_host_link: must be at least 1");

  if (nodes < 1) throw InputError("nodes: a replica needs at least one node");

  Topology t;
  t.m_nodes = nodes;
  t.m_gpus_per_node = s.gpus;
  t.m_gpus = s.gpus * nodes;
  t.m_sockets = hm.sockets;
  t.m_gpus_per_socket = s.gpus_per_socket;
  t.m_sharing = s.gpus_sharing_host_link;
  t.m_instances_per_node = (s.gpus + s.gpus_sharing_host_link - 1) / s.gpus_sharing_host_link;
  t.m_instances = t.m_instances_per_node * nodes;
  for (int g = 0; g < s.gpus; ++g) t.m_pool.push_back(s.pool_of_gpu(g));
  t.m_link_type = s.host_link.type;
  t.m_memcpy_thread_Bps = *hm.memcpy_thread_Bps;

  double link_capacity = 0;
  if (s.host_link.type == LinkType::Pcie) {
    const PcieProtocol p = PcieProtocol::from(s.host_link, "system.host_link");
    link_capacity = p.raw_Bps * p.usable_fraction();
    for (int how = 0; how < 2; ++how)
      for (int dir = 0; dir < 2; ++dir) {
        const WireCost c = wire_cost(p, pcie_op(dir == 0, how == 0));
        t.m_data_cost[how][dir] = c.data_dir;
        t.m_reverse_cost[how][dir] = c.reverse_dir;
      }
    t.m_round_trip_s = p.round_trip_latency_s;
    t.m_tags = p.max_outstanding_reads;
    for (int how = 0; how < 2; ++how)
      t.m_tag_cost[how] = p.round_trip_latency_s / request_bytes(p, pcie_op(true, how == 0));
  } else {
    if (!s.host_link.bandwidth_per_direction_Bps)
      throw InputError("system.host_link.bandwidth_per_direction: required for link '" +
                       s.host_link.name + "'");
    link_capacity = *s.host_link.bandwidth_per_direction_Bps;
  }
  if (!(link_capacity > 0))
    throw InputError("system.host_link: link '" + s.host_link.name + "' has no bandwidth");

  const double dram = hm.socket_bandwidth() * *hm.dram_efficiency;
  if (!(dram > 0))
    throw InputError("system.host_memory: host memory '" + hm.name + "' has no DRAM bandwidth");
  // Node 0 keeps the single-node names; node n > 0 its own copies (see the header).
  const auto node = [](int n) { return n == 0 ? std::string() : "node" + std::to_string(n) + "."; };
  const int S = hm.sockets, G = t.m_gpus;
  for (int n = 0; n < nodes; ++n)
    for (int k = 0; k < S; ++k)
      t.m_dram.push_back(t.add(node(n) + "socket" + std::to_string(k) + ".dram", dram));
  t.m_socket_links.assign(static_cast<std::size_t>(nodes * S * S), -1);
  for (int n = 0; n < nodes; ++n)
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b)
        if (a != b)
          t.m_socket_links[static_cast<std::size_t>((n * S + a) * S + b)] =
              t.add("socket-link." + node(n) + std::to_string(a) + "to" + std::to_string(b),
                    *hm.inter_socket_Bps);
  // links: C2C measured per-direction sustained rates (GH200 H2D above D2H) where given.
  const double down_capacity = s.host_link.type == LinkType::C2c && s.host_link.bandwidth_h2d_Bps
                                   ? *s.host_link.bandwidth_h2d_Bps
                                   : link_capacity;
  const double up_capacity = s.host_link.type == LinkType::C2c && s.host_link.bandwidth_d2h_Bps
                                 ? *s.host_link.bandwidth_d2h_Bps
                                 : link_capacity;
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < t.m_instances_per_node; ++i) {
      const std::string l = node(n) + "hostlink" + std::to_string(i);
      t.m_link_down.push_back(t.add(l + ".down", down_capacity));
      t.m_link_up.push_back(t.add(l + ".up", up_capacity));
    }
  if (t.m_sharing > 1)
    for (int g = 0; g < G; ++g) {
      t.m_gpu_down.push_back(t.add("gpu" + std::to_string(g) + ".link.down", down_capacity));
      t.m_gpu_up.push_back(t.add("gpu" + std::to_string(g) + ".link.up", up_capacity));
    }
  const double hbm = s.gpu.hbm_bandwidth_Bps * s.gpu.hbm_efficiency.value_or(1.0);
  for (int g = 0; g < G; ++g) t.m_hbm.push_back(t.add("gpu" + std::to_string(g) + ".hbm", hbm));
  if (t.m_tag_cost[0] > 0 || t.m_tag_cost[1] > 0)
    for (int g = 0; g < G; ++g)
      t.m_read_tags.push_back(t.add("gpu" + std::to_string(g) + ".read-tags", t.m_tags));

  // ---- issue 14: devices below DRAM, NVLink, NIC (appended; absent ones add nothing) ----
  if (s.cxl_devices < 0) throw InputError("system.cxl_devices: must be >= 0");
  if (s.nvme_drives < 0) throw InputError("system.nvme_drives: must be >= 0");
  if (s.cxl_devices > 0) {
    const CxlExpanderSpec& c = s.cxl;
    if (!(c.link_Bps() > 0))
      throw InputError("system.cxl: CXL device '" + c.name +
                       "' has no link bandwidth (rate_per_lane, lanes, flit_bytes, "
                       "flit_data_bytes)");
    t.m_cxl_devices = s.cxl_devices;
    t.m_cxl_added_latency_s = c.added_latency_s;
    // The media: one resource for both directions (the device's DRAM serves reads and writes
    // alike), measured in bytes read; a byte written costs read / write bandwidth. A missing
    // figure takes the other's (assumption).
    const std::optional<double> rd = c.media_read_Bps ? c.media_read_Bps : c.media_write_Bps;
    const std::optional<double> wr = c.media_write_Bps ? c.media_write_Bps : c.media_read_Bps;
    if (rd && !(*rd > 0 && *wr > 0))
      throw InputError("system.cxl: CXL device '" + c.name + "' media bandwidth must be > 0");
    if (rd) t.m_cxl_write_cost = *rd / *wr;
    for (int n = 0; n < nodes; ++n)
      for (int i = 0; i < s.cxl_devices; ++i) {
        const std::string d = node(n) + "cxl" + std::to_string(i);
        t.m_cxl_up.push_back(t.add(d + ".link.up", c.link_Bps()));
        t.m_cxl_down.push_back(t.add(d + ".link.down", c.link_Bps()));
        if (rd) t.m_cxl_media.push_back(t.add(d + ".media", *rd));
      }
  }
  if (s.has_cxl_pool()) {
    // Issue 25: the pool is the system's one CXL endpoint (index 0). Each node of the replica
    // reaches the switch over its own host port (its lanes); the pool's devices, striped, are
    // one media resource shared by every node of the replica (and, in a cluster, by the other
    // nodes' fabrics through CxlPoolArbiter). The switch is non-blocking (no resource).
    const CxlPoolSpec& p = s.cxl_pool;
    const double port = p.port_Bps(s.cxl_pool_lanes);
    if (!(port > 0) || !(p.read_Bps() > 0) || !(p.write_Bps() > 0))
      throw InputError("system.cxl_pool: CXL pool '" + p.name +
                       "' has no bandwidth (rate_per_lane, flit_bytes, flit_data_bytes, the "
                       "device's link)");
    t.m_cxl_devices = 1;
    t.m_cxl_pool = true;
    t.m_cxl_added_latency_s = p.read_latency_s();
    t.m_cxl_write_latency_s = p.write_latency_s();
    t.m_cxl_write_cost = p.read_Bps() / p.write_Bps();
    const int media = t.add("cxlpool.media", p.read_Bps());
    for (int n = 0; n < nodes; ++n) {
      t.m_cxl_up.push_back(t.add(node(n) + "cxlpool.port.up", port));
      t.m_cxl_down.push_back(t.add(node(n) + "cxlpool.port.down", port));
      t.m_cxl_media.push_back(media);
    }
  }
  if (s.nvme_drives > 0) {
    const NvmeDriveSpec& v = s.nvme;
    std::string bad;
    for (const auto& [key, val] :
         {std::pair<const char*, double>{"seq_read_bandwidth", v.seq_read_Bps},
          {"seq_write_bandwidth", v.seq_write_Bps},
          {"read_iops", v.read_iops},
          {"write_iops", v.write_iops},
          {"io_size", v.io_bytes}})
      if (!(val > 0)) bad += std::string(bad.empty() ? "" : ", ") + key;
    if (!bad.empty()) throw InputError("system.nvme: drive '" + v.name + "' needs " + bad + " > 0");
    t.m_nvme_drives = s.nvme_drives;
    t.m_nvme = v;
    for (int n = 0; n < nodes; ++n)
      for (int i = 0; i < s.nvme_drives; ++i) {
        const std::string d = node(n) + "nvme" + std::to_string(i);
        t.m_nvme_read.push_back(t.add(d + ".read", v.seq_read_Bps));
        t.m_nvme_write.push_back(t.add(d + ".write", v.seq_write_Bps));
        t.m_nvme_riops.push_back(t.add(d + ".read-iops", v.read_iops));
        t.m_nvme_wiops.push_back(t.add(d + ".write-iops", v.write_iops));
      }
  }
  if (s.gpu.nvlink_Bps && s.gpus > 1) {
    if (!(*s.gpu.nvlink_Bps > 0)) throw InputError("system.gpu.nvlink_bandwidth: must be > 0");
    t.m_nvlink_latency_s = s.gpu.nvlink_latency_s.value_or(0);
    for (int g = 0; g < G; ++g) {
      t.m_nvlink_out.push_back(t.add("gpu" + std::to_string(g) + ".nvlink.out", *s.gpu.nvlink_Bps));
      t.m_nvlink_in.push_back(t.add("gpu" + std::to_string(g) + ".nvlink.in", *s.gpu.nvlink_Bps));
    }
  }
  if (s.nic_Bps) {
    if (!(*s.nic_Bps > 0)) throw InputError("system.nic_bandwidth: must be > 0");
    t.m_nic_latency_s = s.nic_latency_s.value_or(0);
    for (int g = 0; g < G; ++g) {
      t.m_nic_out.push_back(t.add("gpu" + std::to_string(g) + ".nic.out", *s.nic_Bps));
      t.m_nic_in.push_back(t.add("gpu" + std::to_string(g) + ".nic.in", *s.nic_Bps));
    }
  }
  return t;
}

}  // namespace kappasim
