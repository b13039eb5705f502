// The packet-level back end for a whole system: one PciePacketLink (interconnects/pcie_packet,
// TLPs, DLLPs, read tags, posted credits) per GPU, so a serving run can move its copies packet
// by packet through the same LinkModel interface as the flow fabric (systems/link_backend
// selects it by name: "packet").
//
// What it does not model that the flow fabric does (systems/topology): host DRAM bandwidth and
// its sharing between GPUs, inter-socket links (a remote or interleaved KV pool costs nothing
// extra), switch uplinks shared by several GPUs, pageable staging through a CPU memcpy thread,
// and HBM (CopyPath::Local traffic and host copies landing in HBM do not contend). GPUs never
// slow each other here; each link is exact for its own PCIe protocol.
// It rejects what it cannot represent, with LinkModel::refusal's one text naming
// serving.link_fidelity: a host link that is not PCIe (C2C, the unified-HBM tier), GPUs sharing
// a host link (gpus_sharing_host_link > 1: the per-GPU read tags and the shared uplink are not
// one PciePacketLink), more than one node, and (carries()) pageable transfers, Local transfers
// and (issue 14) any endpoint other than HostDram: CXL, NVMe, peer GPU, remote (the flow back
// end carries them).
// Cost: ≈ 15,000 kernel activations per MiB moved (pcie_packet.hpp): meant for checks and
// small runs, not for sweeps.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "interconnects/link_model.hpp"
#include "interconnects/pcie_packet.hpp"
#include "systems/system_spec.hpp"
#include "systems/topology.hpp"

namespace kappasim {

class PacketFabric : public LinkModule {
 public:
  // InputError (refusal) for a system or node count the packet model cannot represent.
  PacketFabric(const sc_core::sc_module_name& name, const SystemSpec& s, int nodes = 1);

  void transfer(TransferRequest& r) override;  // blocking, on GPU r.gpu's link
  void start(TransferRequest& r, TransferGroup& g, double delay_s = 0) override;
  double latency_s(int gpu, Direction dir, CopyPath path, bool pinned) const override;
  double solo_rate_Bps(int gpu, Direction dir, CopyPath path, bool pinned) const override;
  // The system's nominal path capacity (host DRAM, socket, host link: the topology's solo rate,
  // the figure the flow back end reports), so a packet run's link utilisation divides by the
  // same capacity as a flow run's; the packet link's own rate is solo_rate_Bps.
  double capacity_Bps(int gpu, Direction dir, CopyPath path) const override;
  // Pinned host-DRAM DMA and copy-kernel transfers only.
  bool carries(const TransferRequest& r, std::string* why = nullptr) const override;
  // Every transfer started has finished, and each link carried its payload bytes.
  void check_conservation() const override;
  std::string fidelity() const override { return "packet"; }

  int gpus() const { return static_cast<int>(m_links.size()); }
  const PciePacketLink& link(int gpu) const { return *m_links.at(static_cast<std::size_t>(gpu)); }

 private:
  PciePacketLink& link_for(const TransferRequest& r);

  Topology m_topo;  // the system's checks and its nominal capacity (not timed here)
  std::vector<std::unique_ptr<PciePacketLink>> m_links;
  std::uint64_t m_started = 0, m_finished = 0;
  double m_bytes_in = 0;  // payload bytes handed to the links
};

}  // namespace kappasim
