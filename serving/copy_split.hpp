// Where a copy group's time went (issue 12 items 4 and 10): per rank, software (a pageable
// copy's CPU staging thread, its rate cap), shared-host waits (host DRAM, socket link, and the
// wait for the slowest rank) and the copies themselves (the rest), averaged over the ranks; and
// the slowest rank's time per active bound (FlowNetwork's per-flow bottlenecks). Pure C++: reads
// the TransferRequests a link back end filled (the packet back end fills no bottlenecks: all
// its time is the link's).
#pragma once

#include <vector>

#include "interconnects/transfer.hpp"
#include "serving/time_breakdown.hpp"

namespace kappasim {

// The bound a transfer's own rate cap (Topology::rate_cap, FlowNetwork resource -1) stands for:
// a pageable copy's staging thread (software), a copy kernel's loads in flight (sm_inflight),
// otherwise an outstanding-request limit of its endpoint (read_tags).
LoadBound rate_cap_bound(const TransferRequest& r);

struct CopySplit {
  double software = 0, link = 0, wait = 0;
  LoadBoundTimes bounds;
};
// rs: the group's copies (one per rank); t_start: when the group started; t_end: its end (the
// slowest rank's); resource_bound: the LoadBound of every Topology resource by index.
CopySplit split_copy_times(const std::vector<TransferRequest>& rs, double t_start, double t_end,
                           const std::vector<LoadBound>& resource_bound);

}  // namespace kappasim
