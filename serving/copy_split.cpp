#include "serving/copy_split.hpp"

#include <algorithm>

namespace kappasim {

LoadBound rate_cap_bound(const TransferRequest& r) {
  if (!r.pinned) return LoadBound::Software;  // pageable: the CPU staging thread
  // A copy kernel's read with its own loads in flight: Little's law on its launch shape.
  if (r.path == CopyPath::Kernel && r.dir == Direction::H2D && r.sm_inflight_bytes > 0)
    return LoadBound::SmInflight;
  return LoadBound::ReadTags;  // other outstanding-request limits (an NVMe queue depth)
}

CopySplit split_copy_times(const std::vector<TransferRequest>& rs, double t_start, double t_end,
                           const std::vector<LoadBound>& resource_bound) {
  CopySplit out;
  if (rs.empty()) return out;
  const TransferRequest* slowest = &rs.front();
  for (const TransferRequest& r : rs) {
    if (r.end_s > slowest->end_s) slowest = &r;
    const double own = std::max(0.0, r.end_s - t_start);
    double software = 0, shared = 0;
    for (const auto& [res, sec] : r.bottleneck_s) {
      if (res < 0) {
        // Its rate cap (Topology::rate_cap): for a pinned copy, the zero-copy kernel's loads in
        // flight (Little's law: outstanding requests, link time); for a pageable one, the CPU
        // staging thread (software).
        if (!r.pinned) software += sec;
        continue;
      }
      const LoadBound b = resource_bound.at(static_cast<std::size_t>(res));
      if (b == LoadBound::HostDram || b == LoadBound::SocketLink) shared += sec;
    }
    software = std::min(software, own);
    shared = std::min(shared, own - software);
    out.software += software;
    out.wait += shared + std::max(0.0, t_end - r.end_s);  // the slowest rank
    out.link += own - software - shared;
  }
  const double n = static_cast<double>(rs.size());
  out.software /= n;
  out.wait /= n;
  out.link /= n;
  // The group's bound is the slowest rank's: per-copy costs, latency and link-bound time go to
  // the link, the rest to the resource that froze its rate.
  double named = 0;
  for (const auto& [res, sec] : slowest->bottleneck_s) {
    const LoadBound b =
        res >= 0 ? resource_bound.at(static_cast<std::size_t>(res)) : rate_cap_bound(*slowest);
    if (b == LoadBound::Link) continue;
    out.bounds[b] += sec;
    named += sec;
  }
  out.bounds[LoadBound::Link] += std::max(0.0, std::max(0.0, slowest->end_s - t_start) - named);
  return out;
}

}  // namespace kappasim
