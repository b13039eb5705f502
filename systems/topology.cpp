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

int Topology::socket_of_gpu(int g) const {
  if (g < 0 || g >= m_gpus) throw std::out_of_range("Topology: no GPU " + std::to_string(g));
  return m_gpus_per_socket > 0 ? g / m_gpus_per_socket : 0;
}

int Topology::pool_socket(int g) const {
  const int own = socket_of_gpu(g);
  switch (m_pool.at(static_cast<std::size_t>(g))) {
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

int Topology::socket_link(int from, int to) const {
  if (from < 0 || to < 0 || from >= m_sockets || to >= m_sockets || from == to)
    throw std::out_of_range("Topology: no socket link " + std::to_string(from) + "->" +
                            std::to_string(to));
  return m_socket_links[static_cast<std::size_t>(from * m_sockets + to)];
}

int Topology::host_link(int instance, Direction dir) const {
  return h2d(dir) ? m_link_down.at(instance) : m_link_up.at(instance);
}

int Topology::gpu_link(int g, Direction dir) const {
  if (m_sharing <= 1) return -1;
  return h2d(dir) ? m_gpu_down.at(g) : m_gpu_up.at(g);
}

void Topology::link_uses(std::vector<FlowNetwork::Use>& out, int down, int up, Direction dir,
                         CopyPath how) const {
  const int i = dma(how) ? 0 : 1, j = h2d(dir) ? 0 : 1;
  const int data = h2d(dir) ? down : up, reverse = h2d(dir) ? up : down;
  out.push_back({data, m_data_cost[i][j]});
  if (m_reverse_cost[i][j] > 0) out.push_back({reverse, m_reverse_cost[i][j]});
}

std::vector<FlowNetwork::Use> Topology::path(int gpu, Direction dir, CopyPath how,
                                             bool pinned) const {
  const int gs = socket_of_gpu(gpu);
  // Local traffic (compute, on-GPU copies) stays in the GPU's HBM.
  if (how == CopyPath::Local) return {{m_hbm.at(gpu), 1.0}};
  if (!pinned && !dma(how))
    throw InputError(
        "a copy kernel reads and writes pinned (page-locked, mapped) host memory "
        "only; pageable memory needs the DMA path");
  // Pageable: the driver's CPU thread reads the pageable buffer and writes a pinned staging
  // buffer, and the DMA reads (or writes) the staging buffer: DRAM is touched three times.
  const double dram_touches = pinned ? 1.0 : 3.0;
  std::vector<FlowNetwork::Use> uses;
  const int ps = pool_socket(gpu);
  if (m_link_type == LinkType::HbmTier) {
    // The unified-HBM tier holds the KV itself: no host DRAM or socket link on the way.
  } else if (ps >= 0) {
    uses.push_back({m_dram[ps], dram_touches});
    if (ps != gs) uses.push_back({h2d(dir) ? socket_link(ps, gs) : socket_link(gs, ps), 1.0});
  } else {  // interleaved: 1/sockets of the bytes on each socket; the remote parts cross links
    const double share = 1.0 / m_sockets;
    for (int s = 0; s < m_sockets; ++s) {
      uses.push_back({m_dram[s], dram_touches * share});
      if (s != gs) uses.push_back({h2d(dir) ? socket_link(s, gs) : socket_link(gs, s), share});
    }
  }
  const int inst = gpu / m_sharing;
  link_uses(uses, m_link_down.at(inst), m_link_up.at(inst), dir, how);
  if (m_sharing > 1) link_uses(uses, m_gpu_down.at(gpu), m_gpu_up.at(gpu), dir, how);
  uses.push_back({m_hbm.at(gpu), 1.0});
  // Reads hold a read tag for a round trip per request (Little's law: tags × request / RTT).
  const double tag_cost = m_tag_cost[dma(how) ? 0 : 1];
  if (h2d(dir) && tag_cost > 0) uses.push_back({m_read_tags.at(gpu), tag_cost});
  return uses;
}

double Topology::rate_cap(int gpu, Direction dir, CopyPath how, bool pinned,
                          double sm_inflight) const {
  socket_of_gpu(gpu);
  if (how == CopyPath::Local) return kInf;  // the request's own rate_cap_Bps, if any
  if (!dma(how) && h2d(dir) && m_link_type == LinkType::Pcie && pinned) {
    // Zero-copy SM reads: each load waits a round trip (Little's law).
    const double inflight = sm_inflight > 0 ? sm_inflight : m_sm_inflight_default;
    return little_rate_Bps(inflight, m_round_trip_s);
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

Topology build_topology(const SystemSpec& s) {
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

  Topology t;
  t.m_gpus = s.gpus;
  t.m_sockets = hm.sockets;
  t.m_gpus_per_socket = s.gpus_per_socket;
  t.m_sharing = s.gpus_sharing_host_link;
  t.m_instances = (s.gpus + s.gpus_sharing_host_link - 1) / s.gpus_sharing_host_link;
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
    if (s.gpu.sm_host_loads_per_sm && s.gpu.copy_kernel_load_width)
      t.m_sm_inflight_default = sm_inflight_bytes(s.gpu.sm_count, *s.gpu.sm_host_loads_per_sm,
                                                  *s.gpu.copy_kernel_load_width);
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
  for (int k = 0; k < hm.sockets; ++k)
    t.m_dram.push_back(t.add("socket" + std::to_string(k) + ".dram", dram));
  t.m_socket_links.assign(static_cast<std::size_t>(hm.sockets * hm.sockets), -1);
  for (int a = 0; a < hm.sockets; ++a)
    for (int b = 0; b < hm.sockets; ++b)
      if (a != b)
        t.m_socket_links[static_cast<std::size_t>(a * hm.sockets + b)] = t.add(
            "socket-link." + std::to_string(a) + "to" + std::to_string(b), *hm.inter_socket_Bps);
  // links: C2C measured per-direction sustained rates (GH200 H2D above D2H) where given.
  const double down_capacity = s.host_link.type == LinkType::C2c && s.host_link.bandwidth_h2d_Bps
                                   ? *s.host_link.bandwidth_h2d_Bps
                                   : link_capacity;
  const double up_capacity = s.host_link.type == LinkType::C2c && s.host_link.bandwidth_d2h_Bps
                                 ? *s.host_link.bandwidth_d2h_Bps
                                 : link_capacity;
  for (int i = 0; i < t.m_instances; ++i) {
    t.m_link_down.push_back(t.add("hostlink" + std::to_string(i) + ".down", down_capacity));
    t.m_link_up.push_back(t.add("hostlink" + std::to_string(i) + ".up", up_capacity));
  }
  if (t.m_sharing > 1)
    for (int g = 0; g < s.gpus; ++g) {
      t.m_gpu_down.push_back(t.add("gpu" + std::to_string(g) + ".link.down", down_capacity));
      t.m_gpu_up.push_back(t.add("gpu" + std::to_string(g) + ".link.up", up_capacity));
    }
  const double hbm = s.gpu.hbm_bandwidth_Bps * s.gpu.hbm_efficiency.value_or(1.0);
  for (int g = 0; g < s.gpus; ++g)
    t.m_hbm.push_back(t.add("gpu" + std::to_string(g) + ".hbm", hbm));
  if (t.m_tag_cost[0] > 0 || t.m_tag_cost[1] > 0)
    for (int g = 0; g < s.gpus; ++g)
      t.m_read_tags.push_back(t.add("gpu" + std::to_string(g) + ".read-tags", t.m_tags));
  return t;
}

}  // namespace kappasim
