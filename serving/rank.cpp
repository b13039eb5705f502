#include "serving/rank.hpp"

#include <stdexcept>
#include <string>

namespace kappasim {

TransferRequest peer_transfer(const GpuUnit& from, const GpuUnit& to, double bytes) {
  TransferRequest q;
  q.gpu = from.fabric;
  q.dir = Direction::D2H;  // gpu -> endpoint
  q.path = CopyPath::Dma;
  q.endpoint = Endpoint::PeerGpu;
  q.endpoint_index = to.fabric;
  q.bytes = bytes;
  return q;
}

bool carries_peer(const LinkModel& link) {
  TransferRequest peer;
  peer.endpoint = Endpoint::PeerGpu;
  return link.carries(peer);
}

namespace {
// `u`'s share as plan_all plans it, into r (a new request but for its bottleneck buffer).
void plan_one(TransferRequest& r, const GpuUnit& u, double bytes_per_gpu, Direction dir,
              CopyPath path) {
  auto bottlenecks = std::move(r.bottleneck_s);
  bottlenecks.clear();
  r = TransferRequest{};
  r.bottleneck_s = std::move(bottlenecks);
  r.gpu = u.fabric;
  r.dir = dir;
  r.path = path;
  r.bytes = u.kv_share == 1 ? bytes_per_gpu : bytes_per_gpu * u.kv_share;
}
}  // namespace

void RankGpus::plan_all(std::vector<TransferRequest>& rs, double bytes_per_gpu, Direction dir,
                        CopyPath path) const {
  for (const GpuUnit* u : m_gpus) plan_one(rs.emplace_back(), *u, bytes_per_gpu, dir, path);
}

bool RankGpus::owns(int fabric) const {
  for (const GpuUnit* u : m_gpus)
    if (u->fabric == fabric) return true;
  return false;
}

void RankGpus::issue_one(TransferRequest& r, std::int64_t units, TransferGroup& g,
                         CopyPath dram_path, double delay_s) const {
  GpuUnit* u = unit_of(r.gpu);
  if (r.endpoint == Endpoint::HostDram && dram_path == CopyPath::Kernel)
    u->kernel->start(r, units, g, delay_s, &u->compute->sm_pool(), m_sm_count);
  else
    u->dma->start(r, units, g, delay_s);
}

GpuUnit* RankGpus::unit_of(int fabric) const {
  for (GpuUnit* u : m_gpus)
    if (u->fabric == fabric) return u;
  throw std::logic_error("RankGpus: GPU " + std::to_string(fabric) + " is not the rank's");
}

void RankGpus::issue_all(CopyGroup& c, const std::int64_t* units, bool one_units,
                         CopyPath dram_path, double delay_s) const {
  const std::size_t n = c.rs.size();
  // Every member by DMA on one link: their fixed costs taken, then started on the link in one
  // call (issue 24: a step's stores, one copy per GPU). The same times as issue_one's, each.
  // Members planned by start_all are the rank's GPUs in order (unit_of not needed).
  const bool in_order = n == m_gpus.size() && [&] {
    for (std::size_t i = 0; i < n; ++i)
      if (c.rs[i].gpu != m_gpus[i]->fabric) return false;
    return true;
  }();
  m_units.resize(n);
  LinkModel* link = nullptr;
  bool together = n > 1;
  for (std::size_t i = 0; together && i < n; ++i) {
    const TransferRequest& r = c.rs[i];
    m_units[i] = in_order ? m_gpus[i] : unit_of(r.gpu);
    LinkModel* l = m_units[i]->dma->link();
    together = !(r.endpoint == Endpoint::HostDram && dram_path == CopyPath::Kernel) &&
               l != nullptr && (i == 0 || l == link);
    link = l;
  }
  if (!together) {
    for (std::size_t i = 0; i < n; ++i)
      issue_one(c.rs[i], units[one_units ? 0 : i], c.g, dram_path, delay_s);
    return;
  }
  m_delays.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    m_delays[i] = delay_s + m_units[i]->dma->prepare(c.rs[i], units[one_units ? 0 : i]);
  link->start_many(c.rs.data(), n, c.g, m_delays.data());
}

void RankGpus::issue(CopyGroup& c, const std::vector<std::int64_t>& units, CopyPath dram_path,
                     double delay_s) const {
  issue_all(c, units.data(), false, dram_path, delay_s);
}

void RankGpus::start_all(CopyGroup& c, double bytes_per_gpu, std::int64_t units, Direction dir,
                         CopyPath path, double delay_s) const {
  // plan_all into c.rs's members as they are (issue 24: their bottleneck buffers kept, which
  // the flow back end takes back when it hands a flow's times over).
  c.rs.resize(m_gpus.size());
  for (std::size_t k = 0; k < m_gpus.size(); ++k)
    plan_one(c.rs[k], *m_gpus[k], bytes_per_gpu, dir, path);
  issue_all(c, &units, true, path, delay_s);
}

}  // namespace kappasim
