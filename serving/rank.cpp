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
  for (GpuUnit* u : m_gpus) {
    if (u->fabric != r.gpu) continue;
    if (r.endpoint == Endpoint::HostDram && dram_path == CopyPath::Kernel)
      u->kernel->start(r, units, g, delay_s, &u->compute->sm_pool(), m_sm_count);
    else
      u->dma->start(r, units, g, delay_s);
    return;
  }
  throw std::logic_error("RankGpus: GPU " + std::to_string(r.gpu) + " is not the rank's");
}

void RankGpus::issue(CopyGroup& c, const std::vector<std::int64_t>& units, CopyPath dram_path,
                     double delay_s) const {
  for (std::size_t i = 0; i < c.rs.size(); ++i)
    issue_one(c.rs[i], units[i], c.g, dram_path, delay_s);
}

void RankGpus::start_all(CopyGroup& c, double bytes_per_gpu, std::int64_t units, Direction dir,
                         CopyPath path, double delay_s) const {
  // plan_all into c.rs's members as they are (issue 24: their bottleneck buffers kept, which
  // the flow back end takes back when it hands a flow's times over).
  c.rs.resize(m_gpus.size());
  for (std::size_t k = 0; k < m_gpus.size(); ++k)
    plan_one(c.rs[k], *m_gpus[k], bytes_per_gpu, dir, path);
  for (TransferRequest& r : c.rs) issue_one(r, units, c.g, path, delay_s);
}

}  // namespace kappasim
