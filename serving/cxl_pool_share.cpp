#include "serving/cxl_pool_share.hpp"

#include <cmath>

#include "core/error.hpp"
#include "systems/flow_fabric.hpp"
#include "systems/topology.hpp"

namespace kappasim {

CxlPoolShare::CxlPoolShare(const CxlPoolSpec& pool, double capacity_bytes)
    : m_pool(pool), m_capacity_bytes(capacity_bytes) {}

CxlPoolShare::~CxlPoolShare() = default;

KvTier& CxlPoolShare::tier(int chunk_tokens, double bytes_per_token, const std::string& who) {
  if (!m_tier) {
    m_tier = std::make_unique<KvTier>(chunk_tokens, m_capacity_bytes, bytes_per_token);
    return *m_tier;
  }
  const double chunk = chunk_tokens * bytes_per_token;
  if (chunk_tokens != m_tier->chunk_tokens() ||
      std::fabs(chunk - m_tier->chunk_bytes()) > 1e-9 * m_tier->chunk_bytes())
    throw InputError(who +
                     ": the nodes sharing a CXL pool share its KV chunks, so their chunks must "
                     "be alike; this node's are " +
                     std::to_string(chunk_tokens) + " tokens of " +
                     format_quantity(chunk, dim::bytes) + ", the pool's " +
                     std::to_string(m_tier->chunk_tokens()) + " tokens of " +
                     format_quantity(m_tier->chunk_bytes(), dim::bytes) +
                     " (give the node groups the same serving.tp, kv_dtype and chunk size)");
  return *m_tier;
}

void CxlPoolShare::attach(LinkModule& link, const std::string& who) {
  auto* fabric = dynamic_cast<FlowFabric*>(&link);
  const Topology* topo = link.topology();
  if (!fabric || !topo || !topo->cxl_pool())
    throw InputError(who +
                     ".serving.link_fidelity: a CXL pool shared by the nodes of a cluster is "
                     "modelled by the flow back end (serving.link_fidelity: flow)");
  Host h{fabric, topo->cxl_media(0, 0), 0};
  for (int n = 0; n < topo->nodes(); ++n)
    h.demand += topo->resources()
                    .at(static_cast<std::size_t>(topo->cxl_link(0, Direction::H2D, n)))
                    .capacity;
  m_hosts.push_back(h);
  fabric->watch(h.media, [this] { rebalance(); });
}

std::vector<double> CxlPoolShare::shares() const {
  std::vector<double> active_demand;
  for (const Host& h : m_hosts)
    if (h.fabric->watched_busy()) active_demand.push_back(h.demand);
  const std::vector<double> s = pool_port_shares(m_pool.read_Bps(), active_demand);
  std::vector<double> out;
  std::size_t k = 0;
  for (const Host& h : m_hosts)
    out.push_back(h.fabric->watched_busy() ? s[k++] : m_pool.read_Bps());
  return out;
}

void CxlPoolShare::rebalance() {
  const std::vector<double> s = shares();
  for (std::size_t i = 0; i < m_hosts.size(); ++i)
    m_hosts[i].fabric->set_capacity(m_hosts[i].media, s[i]);
}

}  // namespace kappasim
