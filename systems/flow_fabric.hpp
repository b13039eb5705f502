// The flow-level host<->GPU fabric: a LinkModule whose transfers share the resources of a
// Topology (DRAM, socket links, PCIe / C2C link directions, HBM; issue 14: CXL links and media,
// NVMe bandwidth and IOPS, NVLink and NIC ports, for every TransferRequest::endpoint; each
// transfer's path, rate cap and latency come from Topology::path / rate_cap / latency(r))
// by weighted max-min fairness
// (interconnects/flow_network). A transfer waits its first-byte latency, joins the fluid model
// and returns when its last byte has arrived. Kernel events: one timed event for the network's
// next finish (moved whenever the set of flows changes) and one wake-up per transfer; nothing
// per byte or per packet.
//
// What it ignores: packet-level effects beyond the average wire cost per payload byte (credit
// stalls, reordering, completion timing) — interconnects/pcie_packet models those, and a test
// compares the two.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <vector>
#include "interconnects/flow_network.hpp"
#include "interconnects/link_model.hpp"
#include "systems/topology.hpp"

namespace kappasim {

class FlowFabric : public LinkModule {
 public:
  SC_HAS_PROCESS(FlowFabric);
  FlowFabric(const sc_core::sc_module_name& name, Topology topology);

  void transfer(TransferRequest& r) override;
  std::string fidelity() const override { return "flow"; }

  // Non-blocking transfers (LinkModel::start / start_group), for a caller that must not block
  // on each one (the serving engine moves every GPU's shard at once without a thread per GPU).
  // Each transfer starts after `delay_s` plus its own latency. No thread per transfer: one
  // pending queue and one finish event.
  using Group = TransferGroup;
  void start(TransferRequest& r, TransferGroup& g, double delay_s = 0) override;
  // One flow for the lockstep requests (LinkModel::start_lockstep): its path every request's
  // path (each GPU's HBM), its bytes theirs (equal), its rate cap the lowest of theirs; they all
  // end when it does, with its bottleneck times. Requests whose bytes or first-byte latencies
  // differ start on their own, as start() would.
  void start_lockstep(TransferRequest* rs, std::size_t n, TransferGroup& g) override;
  // start() of each, in order; consecutive requests due at the same time wait in the pending
  // queue as one entry and start one flow each, in order, when it is due.
  void start_many(TransferRequest* rs, std::size_t n, TransferGroup& g,
                  const double* delays_s) override;
  double latency_s(int gpu, Direction dir, CopyPath path, bool pinned) const override {
    return m_topo.latency(gpu, dir, path, pinned);
  }
  double solo_rate_Bps(int gpu, Direction dir, CopyPath path, bool pinned) const override {
    return m_topo.solo_rate(gpu, dir, path, pinned);
  }
  // Any endpoint (issue 14): the topology's path for the whole request.
  double request_latency_s(const TransferRequest& r) const override { return latency_of(r); }
  double request_solo_rate_Bps(const TransferRequest& r) const override {
    return m_topo.solo_rate(r);
  }

  struct ResourceStats {
    std::string name;
    double capacity;  // units/s
    double carried;   // units carried so far
    double busy_s;    // time with any flow on it
  };
  std::vector<ResourceStats> stats() const;
  // Issue 25: resource `resource` is shared with other fabrics (a CXL pool's devices, shared by
  // the nodes of a cluster; systems/cxl_pool_arbiter). `changed` is called, at the current time,
  // whenever a flow starts crossing it while none did, or the last one crossing it ends.
  void watch(int resource, std::function<void()> changed);
  bool watched_busy() const { return !m_watched.empty(); }
  // Its capacity from now on (flows progressed to now first, rates recomputed).
  void set_capacity(int resource, double capacity);
  // Invariant: bytes sent equal bytes received. Every transfer started has finished, and each
  // resource carried exactly Σ bytes × cost of the transfers that crossed it. Throws
  // std::logic_error naming the resource otherwise. Call when the simulation is over.
  void check_conservation() const override;
  void track_conservation(bool on) override { m_track = on; }
  const Topology* topology() const override { return &m_topo; }
  bool models_hbm() const override { return true; }
  const FlowNetwork& network() const { return m_net; }
  std::uint64_t transfers() const { return m_transfers; }
  // Kernel activations this fabric caused: latency waits, finish-event activations, wake-ups.
  std::uint64_t kernel_events() const { return m_events; }

 private:
  void on_finish();
  void on_start();
  void reschedule();
  // r's path appended to `path` (its host route, merged, when it has one) and its rate cap.
  double append_path(const TransferRequest& r, std::vector<FlowNetwork::Use>& path) const;
  void check_request(const TransferRequest& r) const;
  double cap_of(const TransferRequest& r) const;

  Topology m_topo;
  FlowNetwork m_net;
  sc_core::sc_event m_next;
  struct Waiter {
    sc_core::sc_event* done;
    TransferRequest* req;
  };
  // Flows in flight by id: vectors in ascending id order (the network hands ids out in order,
  // so each is appended), an erased entry's pointer nulled until on_finish compacts them
  // (issue 24: was a std::map, a node per flow).
  template <class T>
  struct ById {
    std::vector<std::pair<FlowNetwork::FlowId, T>> v;
    std::size_t erased = 0;
    bool empty() const { return v.size() == erased; }
    // The entry of `id` or nullptr.
    T* find(FlowNetwork::FlowId id) {
      auto it = std::lower_bound(v.begin(), v.end(), id,
                                 [](const auto& e, FlowNetwork::FlowId k) { return e.first < k; });
      return it != v.end() && it->first == id && it->second.req != nullptr ? &it->second : nullptr;
    }
    void erase(T* e) {
      e->req = nullptr;
      ++erased;
    }
    void compact() {
      if (erased == 0) return;
      v.erase(
          std::remove_if(v.begin(), v.end(), [](const auto& e) { return e.second.req == nullptr; }),
          v.end());
      erased = 0;
    }
  };
  ById<Waiter> m_waiters;
  std::vector<double> m_expected;  // per resource: Σ bytes × cost of the flows started on it
  bool m_track = true;             // m_expected kept (track_conservation)
  void expect(const std::vector<FlowNetwork::Use>& path, double bytes);
  struct Member {
    TransferRequest* req;
    Group* group;
    std::size_t count = 1;  // req[0, count) move as one flow (start_lockstep), or
    bool each = false;      //   as a flow each, started in order (start_many)
  };
  ById<Member> m_members;                          // group transfers in flight
  void start_flow(const Member& m, double now_s);  // now_s: the time now

  // Group transfers not yet started, by start time (equal times in the order started) from
  // m_pending_head on: a vector instead of a std::multimap (issue 24).
  struct Pending {
    sc_core::sc_time at;
    Member m;
  };
  std::vector<Pending> m_pending;
  std::size_t m_pending_head = 0;
  // m joins m_pending to start at `at`; the start event is moved to the first one due.
  void enqueue(const sc_core::sc_time& now, const sc_core::sc_time& at, Member m);
  // start()'s bookkeeping of r (checked, counted, joined to g, its start time set) and the
  // time it is due (now + delay_s + its first-byte latency).
  sc_core::sc_time admit(TransferRequest& r, TransferGroup& g, double delay_s,
                         const sc_core::sc_time& now, double now_s);
  // The last due time admit() converted from seconds: a rank's copies wait the same (issue 24).
  double m_wait_s = -1;
  sc_core::sc_time m_wait;
  mutable std::vector<FlowNetwork::Use> m_path;  // a path being built, one vector for all
  std::vector<FlowNetwork::Use> m_joined;        // a lockstep flow's paths (start_flow)
  // Host-DRAM transfers' routes (compute's HBM flows included) by (GPU, direction, copy path,
  // pinned), built once each: the topology does not change (issue 24: was built per flow). The
  // path merged as the network keeps it; the latency and rate cap (Topology::latency, rate_cap)
  // for the paths whose answer depends on nothing else (not a copy kernel's, which reads
  // sm_inflight_bytes).
  struct HostRoute {
    std::vector<FlowNetwork::Use> path;  // empty: not built yet
    double latency_s = 0, cap_Bps = 0;
  };
  mutable std::vector<HostRoute> m_host_routes;  // 12 per GPU, each built as first asked for
  // r's host route (built on first use), or nullptr for another endpoint. Inline: a transfer
  // asks for it two or three times (issue 24).
  const HostRoute* host_route(const TransferRequest& r) const {
    if (r.endpoint == Endpoint::HostDram && r.gpu >= 0 &&
        static_cast<std::size_t>(r.gpu) * 12 < m_host_routes.size()) {
      const HostRoute& route = m_host_routes[route_index(r)];
      if (!route.path.empty()) return &route;
    }
    return build_host_route(r);
  }
  static std::size_t route_index(const TransferRequest& r) {
    return ((static_cast<std::size_t>(r.gpu) * 2 + (r.dir == Direction::H2D ? 0 : 1)) * 3 +
            static_cast<std::size_t>(r.path)) *
               2 +
           (r.pinned ? 1 : 0);
  }
  const HostRoute* build_host_route(const TransferRequest& r) const;
  // Lockstep groups' host routes, their paths merged and their lowest rate cap (start_flow: a TP
  // group's steps ask for the same routes every step). Routes do not move: m_host_routes is
  // sized once. A deque, and an entry never changes once made: the network keeps the address of
  // its path (FlowNetwork::start_deferred_shared).
  struct Lockstep {
    std::vector<const HostRoute*> routes;
    std::vector<FlowNetwork::Use> path;
    double route_cap = 0;
  };
  static constexpr std::size_t kLocksteps = 16;  // groups kept (a run has one per TP group)
  std::deque<Lockstep> m_locksteps;
  std::size_t m_lockstep_hit = 0;                      // the entry found last
  double latency_of(const TransferRequest& r) const;   // Topology::latency(r)
  std::vector<FlowNetwork::FlowId> m_done;             // on_finish's finished flows
  std::vector<FlowNetwork::BoundTimes> m_done_bounds;  // and their bottleneck times, in order
  sc_core::sc_event m_start;
  int m_watch = -1;  // the shared resource (watch()), -1: none
  std::function<void()> m_watch_changed;
  std::set<FlowNetwork::FlowId> m_watched;  // flows in flight that cross it
  void note_watched(FlowNetwork::FlowId id);
  void watch_check(bool was_busy);
  std::uint64_t m_transfers = 0;
  std::uint64_t m_events = 0;
};

}  // namespace kappasim
