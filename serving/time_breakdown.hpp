// Where the time went (issue 12 items 4 and 10): a breakdown that sums to the whole, per request
// (its TTFT) and per run (the GPUs' simulated time), and the active bound of every KV load.
// Pure C++, no SystemC: the engine fills these next to the charges it already makes; the
// statistics declared from the names below (serving/stat_catalog: requests.csv's t_* columns,
// summary.json's families) write them.
//
// Categories (seconds; docs/metrics.md "Time breakdown"):
//   queue          waiting for the scheduler: arrival to first step, and steps it sat out
//                  (requests only; the run has `idle` instead)
//   sched_software scheduler and prefix-lookup software on the critical path of a step
//   load_software  CPU-side software of a KV load (the tier's per-request and per-chunk
//                  retrieve costs; a pageable copy's staging thread)
//   load_link      the copies themselves: per-copy fixed costs, first-byte latency, and bytes
//                  moving at the rate the GPU's own link, read tags or HBM allow (GPU-side
//                  buffer copies included)
//   load_wait      a load held back by a shared host resource (host DRAM, the socket link) or
//                  a rank waiting for the slowest rank of its TP group
//   compute        the forward pass (a layer-wise load's overlapped part is not counted again)
//   store          blocking stores of new KV (software and copies)
//   step_overhead  the engine's per-step CPU work (vLLM's step overhead)
//   idle           run only: no step running (simulated time − Σ steps)
// For a request, every step it was scheduled in counts whole (it waits for the loads of the
// requests admitted with it and the stores of those finishing with it); `queue` is the rest of
// its TTFT, so the categories sum to the TTFT. For the run, the steps' categories plus `idle`
// sum to the simulated time.
//
// Adding a category (e.g. a stack profile's GPU idle gap per chunk): add a field and one line to
// categories() (its name becomes the CSV column t_<name>_s and the summary figures
// ttft_mean_<name>_s and time_fraction_<name>; then `kappasim metrics --update docs/metrics.md`),
// and add the charge to the step's breakdown in serving/engine.cpp next to
// the wait that charges it. sum(), +=, the CSV header, the summary and the --check that a step's
// categories sum to its duration all read categories().
#pragma once

#include <array>
#include <string>

namespace kappasim {

struct TimeBreakdown {
  double queue_s = 0;
  double sched_software_s = 0;
  double load_software_s = 0;
  double load_link_s = 0;
  double load_wait_s = 0;
  double compute_s = 0;
  double store_s = 0;
  double step_overhead_s = 0;
  double idle_s = 0;

  // Every category as (name, member) in the fixed output order: the one list of names.
  struct Category {
    const char* name;
    double TimeBreakdown::*field;
  };
  static const std::array<Category, 9>& categories() {
    static const std::array<Category, 9> c = {{
        {"queue", &TimeBreakdown::queue_s},
        {"sched_software", &TimeBreakdown::sched_software_s},
        {"load_software", &TimeBreakdown::load_software_s},
        {"load_link", &TimeBreakdown::load_link_s},
        {"load_wait", &TimeBreakdown::load_wait_s},
        {"compute", &TimeBreakdown::compute_s},
        {"store", &TimeBreakdown::store_s},
        {"step_overhead", &TimeBreakdown::step_overhead_s},
        {"idle", &TimeBreakdown::idle_s},
    }};
    return c;
  }

  double sum() const {
    double s = 0;
    for (const Category& c : categories()) s += this->*c.field;
    return s;
  }
  double load_s() const { return load_software_s + load_link_s + load_wait_s; }
  // A load's exposed time (the part compute did not hide) split over the load categories in
  // proportion to that load's own software, link and wait times; all of it to load_link when
  // those are all zero (the layer-wise pipeline, and a pipeline stage's load beyond the stages
  // before it).
  void add_exposed_load(double exposed, double software, double link, double wait) {
    const double total = software + link + wait;
    if (total > 0) {
      load_software_s += exposed * software / total;
      load_link_s += exposed * link / total;
      load_wait_s += exposed * wait / total;
    } else {
      load_link_s += exposed;
    }
  }
  TimeBreakdown& operator+=(const TimeBreakdown& o) {
    for (const Category& c : categories()) this->*c.field += o.*c.field;
    return *this;
  }
};

// What held a KV load back, for the share of its time: the CPU-side software (the tier's retrieve
// costs, a pageable copy's staging thread), the GPU's outstanding PCIe read requests (the
// requester's read tags, a resource shared by all of a GPU's reads), a copy kernel's own loads
// in flight (sm_inflight: its launch shape on the SMs it holds, Little's law; docs/pcie-model.md),
// its host link (per-copy costs and the link's wire rate), host DRAM, the inter-socket link, or
// HBM (the GPU side, GPU-side KV buffer copies included).
enum class LoadBound { Software, ReadTags, SmInflight, Link, HostDram, SocketLink, Hbm };
inline constexpr int kLoadBounds = 7;
inline const char* load_bound_name(LoadBound b) {
  switch (b) {
    case LoadBound::Software:
      return "software";
    case LoadBound::ReadTags:
      return "read_tags";
    case LoadBound::SmInflight:
      return "sm_inflight";
    case LoadBound::Link:
      return "link";
    case LoadBound::HostDram:
      return "host_dram";
    case LoadBound::SocketLink:
      return "socket_link";
    case LoadBound::Hbm:
      return "hbm";
  }
  return "?";
}

// The bound a flow-network resource stands for, from its Topology name (interconnects/
// topology.hpp): socket<s>.dram, socket-link.<a>to<b>, hostlink<i>.down|up, gpu<g>.link.down|up,
// gpu<g>.read-tags, gpu<g>.hbm.
inline LoadBound load_bound_of_resource(const std::string& name) {
  const auto ends = [&](const char* suffix) {
    const std::string s(suffix);
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  if (name.rfind("socket-link", 0) == 0) return LoadBound::SocketLink;
  if (ends(".dram")) return LoadBound::HostDram;
  if (ends(".read-tags")) return LoadBound::ReadTags;
  if (ends(".hbm")) return LoadBound::Hbm;
  return LoadBound::Link;
}

// Seconds of load time per bound; the bound of a load is the one holding the most.
struct LoadBoundTimes {
  std::array<double, kLoadBounds> s{};
  double& operator[](LoadBound b) { return s[static_cast<std::size_t>(b)]; }
  double operator[](LoadBound b) const { return s[static_cast<std::size_t>(b)]; }
  double total() const {
    double t = 0;
    for (double v : s) t += v;
    return t;
  }
  LoadBoundTimes& operator+=(const LoadBoundTimes& o) {
    for (std::size_t i = 0; i < s.size(); ++i) s[i] += o.s[i];
    return *this;
  }
  // The largest share; ties go to the earlier bound in LoadBound's order. Meaningful only when
  // total() > 0.
  LoadBound bound() const {
    std::size_t best = 0;
    for (std::size_t i = 1; i < s.size(); ++i)
      if (s[i] > s[best]) best = i;
    return static_cast<LoadBound>(best);
  }
};

}  // namespace kappasim
