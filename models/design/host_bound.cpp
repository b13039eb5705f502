#include "models/design/host_bound.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "interconnects/flow_network.hpp"
#include "interconnects/link_spec.hpp"
#include "interconnects/pcie_protocol.hpp"
#include "systems/topology.hpp"

namespace kappasim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Solved {
  double rate = kInf;
  LinkBinding binding = LinkBinding::Phy;
};

// Max-min fair rates with one bulk H2D flow per GPU of the system; the slowest of GPUs
// 0..min(tp, gpus)-1. phy_Bps = +inf solves the host side alone.
Solved solve(const Topology& t, int tp, double phy_Bps, std::optional<double> root_port_Bps) {
  FlowNetwork net;
  t.add_to(net);
  // Host-side resources of the topology, by id: the DRAM of each socket and the socket links.
  std::vector<int> kind(net.resources(), -1);
  for (int s = 0; s < t.sockets(); ++s)
    kind[static_cast<std::size_t>(t.dram(s))] = static_cast<int>(LinkBinding::HostDram);
  for (int a = 0; a < t.sockets(); ++a)
    for (int b = 0; b < t.sockets(); ++b)
      if (a != b)
        kind[static_cast<std::size_t>(t.socket_link(a, b))] =
            static_cast<int>(LinkBinding::SocketLink);
  const bool phy = std::isfinite(phy_Bps);
  std::vector<int> phy_id, port_id;
  for (int g = 0; phy && g < t.gpus(); ++g) {
    phy_id.push_back(net.add_resource("gpu" + std::to_string(g) + ".phy", phy_Bps));
    kind.push_back(static_cast<int>(LinkBinding::Phy));
  }
  for (int s = 0; root_port_Bps && s < t.sockets(); ++s) {
    port_id.push_back(
        net.add_resource("socket" + std::to_string(s) + ".root-ports", *root_port_Bps));
    kind.push_back(static_cast<int>(LinkBinding::RootPort));
  }

  const auto h2d = Direction::H2D;
  const auto dma = CopyPath::Dma;
  std::vector<std::vector<FlowNetwork::Use>> paths;
  std::vector<FlowNetwork::FlowId> ids;
  for (int g = 0; g < t.gpus(); ++g) {
    std::vector<FlowNetwork::Use> p;
    for (const FlowNetwork::Use& u : t.path(g, h2d, dma, /*pinned=*/true))
      if (kind[static_cast<std::size_t>(u.resource)] >= 0 && u.cost > 0) p.push_back(u);
    if (phy) p.push_back({phy_id[static_cast<std::size_t>(g)], 1.0});
    if (root_port_Bps) p.push_back({port_id[static_cast<std::size_t>(t.socket_of_gpu(g))], 1.0});
    paths.push_back(p);
    ids.push_back(p.empty() ? 0 : net.start(0.0, p, 1.0));
  }

  Solved out;
  int slowest = -1;
  for (int g = 0; g < std::min(tp, t.gpus()); ++g) {
    const double r = paths[static_cast<std::size_t>(g)].empty()
                         ? kInf
                         : net.rate(ids[static_cast<std::size_t>(g)]);
    if (slowest < 0 || r < out.rate) {
      out.rate = r;
      slowest = g;
    }
  }
  if (slowest < 0 || !std::isfinite(out.rate)) return out;
  // The binding resource: the PHY when the flow runs at it, else its max-min bottleneck: a
  // saturated host resource on its path on which no other flow gets more.
  if (phy && out.rate >= phy_Bps * (1 - 1e-12)) return out;
  const auto rate_of = [&](int g) {
    return paths[static_cast<std::size_t>(g)].empty() ? kInf
                                                      : net.rate(ids[static_cast<std::size_t>(g)]);
  };
  for (const FlowNetwork::Use& u : paths[static_cast<std::size_t>(slowest)]) {
    const int k = kind[static_cast<std::size_t>(u.resource)];
    if (k == static_cast<int>(LinkBinding::Phy)) continue;
    if (net.load(u.resource) < net.capacity(u.resource) * (1 - 1e-9)) continue;
    bool bottleneck = true;
    for (int g = 0; g < t.gpus() && bottleneck; ++g)
      for (const FlowNetwork::Use& v : paths[static_cast<std::size_t>(g)])
        if (v.resource == u.resource && rate_of(g) > out.rate * (1 + 1e-9)) bottleneck = false;
    if (bottleneck) {
      out.binding = static_cast<LinkBinding>(k);
      break;
    }
  }
  return out;
}

}  // namespace

DesignRequester design_requester(double phy_Bps, double base_phy_Bps) {
  // The link design_emit writes: presets/links/pcie5.yaml with its lanes and rate changed, which
  // change neither the round trip nor the request sizes nor the tags.
  static const PcieProtocol p = PcieProtocol::from(
      read_preset_config<LinkSpec>(ConfigNode::make_scalar("pcie5"), "link", "pcie5"), "pcie5");
  if (!(base_phy_Bps > 0))
    throw InputError("design: the base die's host_link_bandwidth must be greater than zero");
  const double rtt = p.round_trip_latency_s;
  DesignRequester r;
  r.tags = std::min(kMaxReadTags,
                    std::max(p.max_outstanding_reads,
                             std::round(p.max_outstanding_reads * phy_Bps / base_phy_Bps)));
  r.sm_ceiling_Bps = r.tags * request_bytes(p, PcieOp::SmRead) / rtt;
  r.dma_ceiling_Bps = r.tags * request_bytes(p, PcieOp::DmaRead) / rtt;
  return r;
}

void cap_by_requester(HostBound& h, double base_phy_Bps) {
  const DesignRequester r = design_requester(h.phy_Bps, base_phy_Bps);
  h.read_tags = r.tags;
  if (r.sm_ceiling_Bps < h.effective_Bps) {  // per GPU: nothing shared
    h.effective_Bps = r.sm_ceiling_Bps;
    h.binding = LinkBinding::ReadTags;
  }
}

HostBound unlimited_host(double phy_Bps) {
  HostBound h;
  h.phy_Bps = phy_Bps;
  h.effective_Bps = phy_Bps;
  h.unlimited = true;
  return h;
}

HostBound host_bound(const SystemSpec& host, int tp, double phy_Bps,
                     std::optional<double> root_port_Bps) {
  if (!(phy_Bps > 0) || !std::isfinite(phy_Bps))
    throw InputError("design: the link PHY bandwidth must be positive and finite, got " +
                     std::to_string(phy_Bps) + " B/s");
  if (tp < 1) throw InputError("tp: must be at least 1");
  if (root_port_Bps && !(*root_port_Bps > 0))
    throw InputError("host.root_port_bandwidth: must be greater than zero");
  const Topology t = build_topology(host);
  HostBound h;
  h.phy_Bps = phy_Bps;
  const Solved both = solve(t, tp, phy_Bps, root_port_Bps);
  h.effective_Bps = std::min(phy_Bps, both.rate);
  h.binding = both.binding;
  h.host_share_Bps = solve(t, tp, kInf, root_port_Bps).rate;
  return h;
}

}  // namespace kappasim
