#include "systems/packet_fabric.hpp"

#include <cmath>
#include <stdexcept>

#include "core/error.hpp"
#include "systems/topology.hpp"

namespace kappasim {

namespace {
// The system checks, before anything is built (refusal: the one text).
const SystemSpec& carried_system(const SystemSpec& s, int nodes) {
  if (s.host_link.type != LinkType::Pcie)
    throw LinkModel::refusal("packet", "a host link that is not PCIe (system.host_link '" +
                                           s.host_link.name + "'; it models PCIe links only)");
  if (s.gpus_sharing_host_link != 1)
    throw LinkModel::refusal("packet",
                             "GPUs sharing a host link (system.gpus_sharing_host_link is " +
                                 std::to_string(s.gpus_sharing_host_link) +
                                 "; it models one PCIe link per GPU)");
  if (nodes < 1) throw InputError("nodes: a replica needs at least one node");
  if (nodes != 1)
    throw LinkModel::refusal(
        "packet", "a replica of " + std::to_string(nodes) + " nodes (it models one node)");
  return s;
}
}  // namespace

PacketFabric::PacketFabric(const sc_core::sc_module_name& name, const SystemSpec& s, int nodes)
    : LinkModule(name), m_topo(build_topology(carried_system(s, nodes))) {
  // build_topology: the same checks as the flow back end. Copy kernels bring their own loads in
  // flight (TransferRequest::sm_inflight_bytes, from their CopyKernelShape).
  const PcieProtocol p = PcieProtocol::from(s.host_link, "system.host_link");
  PciePacketOptions opts;
  for (int g = 0; g < s.gpus; ++g)
    m_links.push_back(
        std::make_unique<PciePacketLink>(("pcie" + std::to_string(g)).c_str(), p, opts));
}

PciePacketLink& PacketFabric::link_for(const TransferRequest& r) {
  if (r.gpu < 0 || r.gpu >= gpus())
    throw std::out_of_range(std::string(name()) + ": no GPU " + std::to_string(r.gpu));
  check_carries(r);
  if (!(r.bytes >= 0) || !std::isfinite(r.bytes))
    throw std::logic_error(std::string(name()) + ": transfer bytes must be finite and >= 0");
  return *m_links[static_cast<std::size_t>(r.gpu)];
}

void PacketFabric::transfer(TransferRequest& r) {
  PciePacketLink& l = link_for(r);
  ++m_started;
  m_bytes_in += r.bytes;
  l.transfer(r);
  ++m_finished;
}

void PacketFabric::start(TransferRequest& r, TransferGroup& g, double delay_s) {
  link_for(r);  // reject before anything is spawned
  start_by_thread(r, g, delay_s);
}

bool PacketFabric::carries(const TransferRequest& r, std::string* why) const {
  std::string no;
  if (r.endpoint != Endpoint::HostDram)
    no = std::string("a transfer with endpoint '") + to_string(r.endpoint) +
         "' (it models the PCIe host link to host DRAM only)";
  else if (r.path == CopyPath::Local)
    no = "on-GPU (Local) traffic (it has no HBM)";
  else if (!r.pinned)
    no = "a pageable transfer (it models pinned host memory only, no CPU staging)";
  if (no.empty()) return true;
  if (why) *why = no;
  return false;
}

double PacketFabric::capacity_Bps(int gpu, Direction dir, CopyPath path) const {
  return m_topo.solo_rate(gpu, dir, path, true);
}

double PacketFabric::latency_s(int gpu, Direction dir, CopyPath path, bool pinned) const {
  return m_links.at(static_cast<std::size_t>(gpu))->latency_s(gpu, dir, path, pinned);
}

double PacketFabric::solo_rate_Bps(int gpu, Direction dir, CopyPath path, bool pinned) const {
  return m_links.at(static_cast<std::size_t>(gpu))->solo_rate_Bps(gpu, dir, path, pinned);
}

void PacketFabric::check_conservation() const {
  if (m_started != m_finished)
    throw std::logic_error(std::string(name()) + ": invariant violated: " +
                           std::to_string(m_started - m_finished) + " transfer(s) never finished");
  double carried = 0;
  for (const auto& l : m_links)
    carried += l->stats().down.payload_bytes + l->stats().up.payload_bytes;
  if (std::fabs(carried - m_bytes_in) > 1e-9 * std::max(1.0, m_bytes_in))
    throw std::logic_error(std::string(name()) + ": invariant violated: the links carried " +
                           std::to_string(carried) + " payload bytes, transfers put " +
                           std::to_string(m_bytes_in) + " on them");
}

}  // namespace kappasim
