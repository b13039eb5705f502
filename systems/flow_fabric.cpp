#include "systems/flow_fabric.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/sim_seconds.hpp"

namespace kappasim {

FlowFabric::FlowFabric(const sc_core::sc_module_name& name, Topology topology)
    : LinkModule(name),
      m_topo(std::move(topology)),
      m_net(sc_core::sc_get_time_resolution().to_seconds()),
      m_next("next_finish") {
  m_topo.add_to(m_net);
  SC_METHOD(on_finish);
  sensitive << m_next;
  dont_initialize();
  SC_METHOD(on_start);
  sensitive << m_start;
  dont_initialize();
}

void FlowFabric::check_request(const TransferRequest& r) const {
  if (r.gpu < 0 || r.gpu >= m_topo.gpus())
    throw std::out_of_range(std::string(name()) + ": no GPU " + std::to_string(r.gpu));
  if (!(r.bytes >= 0) || !std::isfinite(r.bytes))
    throw std::logic_error(std::string(name()) + ": transfer bytes must be finite and >= 0");
  if (!(r.rate_cap_Bps >= 0) || std::isnan(r.rate_cap_Bps))
    throw std::logic_error(std::string(name()) + ": transfer rate cap must be >= 0");
}

double FlowFabric::cap_of(const TransferRequest& r) const {
  const double cap = m_topo.rate_cap(r);  // any endpoint (issue 14): its path's own limits
  return r.rate_cap_Bps > 0 ? std::min(cap, r.rate_cap_Bps) : cap;
}

const FlowFabric::HostRoute* FlowFabric::build_host_route(const TransferRequest& r) const {
  if (r.endpoint != Endpoint::HostDram || r.gpu < 0 || r.gpu >= m_topo.gpus()) return nullptr;
  // Topology::path(r) is path(gpu, dir, path, pinned) for host DRAM, never empty (the GPU's
  // HBM at least); one that throws is not stored, so it throws again on the next call.
  if (m_host_routes.empty()) m_host_routes.resize(static_cast<std::size_t>(m_topo.gpus()) * 12);
  HostRoute& route = m_host_routes[route_index(r)];
  if (route.path.empty()) {
    m_topo.path(r, m_path);
    m_net.merge_path(m_path, route.path);
    if (r.path != CopyPath::Kernel) {
      route.latency_s = m_topo.latency(r);
      route.cap_Bps = m_topo.rate_cap(r);
    }
  }
  return &route;
}

double FlowFabric::latency_of(const TransferRequest& r) const {
  const HostRoute* route = host_route(r);
  return route && r.path != CopyPath::Kernel ? route->latency_s : m_topo.latency(r);
}

sc_core::sc_time FlowFabric::admit(TransferRequest& r, TransferGroup& g, double delay_s,
                                   const sc_core::sc_time& now, double now_s) {
  check_request(r);
  ++m_transfers;
  g.add();
  r.start_s = now_s;
  const double lat = latency_of(r);
  const double wait = delay_s + lat;  // at `now` itself without a conversion (issue 24)
  if (wait == 0) return now;
  if (wait != m_wait_s) {
    m_wait = sc_core::sc_time(wait, sc_core::SC_SEC);
    m_wait_s = wait;
  }
  return now + m_wait;
}

void FlowFabric::start(TransferRequest& r, TransferGroup& g, double delay_s) {
  const sc_core::sc_time now = sim_now();
  const sc_core::sc_time at = admit(r, g, delay_s, now, sim_seconds(now));
  enqueue(now, at, Member{&r, &g});
}

void FlowFabric::start_many(TransferRequest* rs, std::size_t n, TransferGroup& g,
                            const double* delays_s) {
  if (n == 0) return;
  const sc_core::sc_time now = sim_now();
  const double now_s = sim_seconds(now);
  sc_core::sc_time at = admit(rs[0], g, delays_s[0], now, now_s);
  std::size_t i = 0;
  while (i < n) {
    // A run due at the same time: one pending entry, where start() would have queued each (after
    // every pending one due no later, so one after the other).
    std::size_t j = i + 1;
    sc_core::sc_time next;
    for (; j < n; ++j) {
      next = admit(rs[j], g, delays_s[j], now, now_s);
      if (next != at) break;
    }
    enqueue(now, at, Member{&rs[i], &g, j - i, true});
    i = j;
    at = next;
  }
}

void FlowFabric::enqueue(const sc_core::sc_time& now, const sc_core::sc_time& at, Member m) {
  // After every pending transfer due no later (as a multimap's insertion places it).
  const auto head = m_pending.begin() + static_cast<std::ptrdiff_t>(m_pending_head);
  const auto pos =
      std::upper_bound(head, m_pending.end(), at,
                       [](const sc_core::sc_time& t, const Pending& p) { return t < p.at; });
  // The start event is notified for the first pending transfer whenever one is pending (here
  // and in on_start): one due no earlier leaves it as it is (issue 24: a step's copies, one per
  // GPU, each cancelled and notified it again at the same time).
  const bool first_now = pos == head;
  m_pending.insert(pos, Pending{at, m});
  if (!first_now) return;
  m_start.cancel();
  const sc_core::sc_time first = m_pending[m_pending_head].at;
  m_start.notify(first > now ? first - now : sc_core::SC_ZERO_TIME);
}

void FlowFabric::start_lockstep(TransferRequest* rs, std::size_t n, TransferGroup& g) {
  if (n == 0) return;
  const double lat = latency_of(rs[0]);
  bool together = true;
  for (std::size_t i = 0; i < n; ++i) {
    check_request(rs[i]);
    together = together && rs[i].bytes == rs[0].bytes && latency_of(rs[i]) == lat;
  }
  if (!together || n == 1) {
    for (std::size_t i = 0; i < n; ++i) start(rs[i], g, 0);
    return;
  }
  m_transfers += n;
  g.add();
  const sc_core::sc_time now = sim_now();
  const double now_s = sim_seconds(now);
  for (std::size_t i = 0; i < n; ++i) rs[i].start_s = now_s;
  enqueue(now, lat == 0 ? now : now + sc_core::sc_time(lat, sc_core::SC_SEC), Member{rs, &g, n});
}

void FlowFabric::watch(int resource, std::function<void()> changed) {
  if (resource < 0 || static_cast<std::size_t>(resource) >= m_net.resources())
    throw std::out_of_range(std::string(name()) + ": no resource " + std::to_string(resource));
  m_watch = resource;
  m_watch_changed = std::move(changed);
}

void FlowFabric::set_capacity(int resource, double capacity) {
  m_net.set_capacity(sim_now_seconds(), resource, capacity);
  reschedule();
}

void FlowFabric::note_watched(FlowNetwork::FlowId id) {
  if (m_watch >= 0 && m_net.crosses(id, m_watch)) m_watched.insert(id);
}

void FlowFabric::watch_check(bool was_busy) {
  if (m_watch >= 0 && was_busy != watched_busy() && m_watch_changed) m_watch_changed();
}

void FlowFabric::on_start() {
  ++m_events;
  const bool was_busy = watched_busy();
  const sc_core::sc_time now = sim_now();
  const double now_s = sim_seconds(now);  // once for every flow started now
  while (m_pending_head < m_pending.size() && m_pending[m_pending_head].at <= now) {
    start_flow(m_pending[m_pending_head++].m, now_s);
  }
  if (m_pending_head == m_pending.size()) {
    m_pending.clear();
    m_pending_head = 0;
  } else if (2 * m_pending_head > m_pending.size()) {  // amortised O(1) per transfer
    m_pending.erase(m_pending.begin(),
                    m_pending.begin() + static_cast<std::ptrdiff_t>(m_pending_head));
    m_pending_head = 0;
  }
  m_net.settle();  // one rate recomputation for every flow started at this instant
  watch_check(was_busy);
  reschedule();
  if (m_pending_head < m_pending.size()) m_start.notify(m_pending[m_pending_head].at - now);
}

void FlowFabric::start_flow(const Member& m, double now) {
  if (m.each && m.count > 1) {  // start_many's run: a flow each, in order
    for (std::size_t k = 0; k < m.count; ++k) start_flow(Member{m.req + k, m.group}, now);
    return;
  }
  TransferRequest& r = *m.req;
  FlowNetwork::FlowId id;
  if (m.count > 1) {                  // lockstep: every request's path, the lowest cap
    const Lockstep* known = nullptr;  // a group on these GPUs' routes before (the last first)
    for (std::size_t e = 0; e < m_locksteps.size() && known == nullptr; ++e) {
      const std::size_t at = e == 0 ? m_lockstep_hit : (e == m_lockstep_hit ? 0 : e);
      const Lockstep& l = m_locksteps[at];
      bool same = l.routes.size() == m.count;
      for (std::size_t i = 0; same && i < m.count; ++i)
        same = m.req[i].path != CopyPath::Kernel && host_route(m.req[i]) == l.routes[i];
      if (same) {
        known = &l;
        m_lockstep_hit = at;
      }
    }
    double cap = FlowNetwork::kInf;
    if (known) {  // its merged path (kept unchanged: shared with the network) and routes' caps
      cap = known->route_cap;
      for (std::size_t i = 0; i < m.count; ++i)
        if (m.req[i].rate_cap_Bps > 0) cap = std::min(cap, m.req[i].rate_cap_Bps);  // as cap_of
      expect(known->path, r.bytes);
      id = m_net.start_deferred_shared(now, known->path, r.bytes, cap);
    } else {
      m_joined.clear();
      for (std::size_t i = 0; i < m.count; ++i)
        cap = std::min(cap, append_path(m.req[i], m_joined));
      expect(m_joined, r.bytes);
      id = m_net.start_deferred(now, m_joined, r.bytes, cap);
      Lockstep l;
      l.route_cap = FlowNetwork::kInf;
      bool routed = true;
      for (std::size_t i = 0; i < m.count; ++i) {
        const HostRoute* route = host_route(m.req[i]);
        routed = routed && route && m.req[i].path != CopyPath::Kernel;
        if (routed) l.route_cap = std::min(l.route_cap, route->cap_Bps);
        l.routes.push_back(route);
      }
      // Kept when every path is a host route (else a path of its own each time), up to a bound.
      if (routed && m_locksteps.size() < kLocksteps) {
        m_net.merge_path(m_joined, l.path);
        m_locksteps.push_back(std::move(l));
      }
    }
  } else if (const HostRoute* route = host_route(r)) {
    double cap = r.path != CopyPath::Kernel ? route->cap_Bps : m_topo.rate_cap(r);
    if (r.rate_cap_Bps > 0) cap = std::min(cap, r.rate_cap_Bps);  // as cap_of
    expect(route->path, r.bytes);
    id = m_net.start_deferred_shared(now, route->path, r.bytes, cap);  // built once, kept
  } else {
    m_topo.path(r, m_path);
    const double cap = cap_of(r);
    expect(m_path, r.bytes);
    id = m_net.start_deferred(now, m_path, r.bytes, cap);
  }
  note_watched(id);
  m_members.v.emplace_back(id, m);
}

double FlowFabric::append_path(const TransferRequest& r,
                               std::vector<FlowNetwork::Use>& path) const {
  if (const HostRoute* route = host_route(r)) {
    path.insert(path.end(), route->path.begin(), route->path.end());
    double cap = r.path != CopyPath::Kernel ? route->cap_Bps : m_topo.rate_cap(r);
    return r.rate_cap_Bps > 0 ? std::min(cap, r.rate_cap_Bps) : cap;  // as cap_of
  }
  std::vector<FlowNetwork::Use> own;
  m_topo.path(r, own);
  path.insert(path.end(), own.begin(), own.end());
  return cap_of(r);
}

void FlowFabric::expect(const std::vector<FlowNetwork::Use>& path, double bytes) {
  if (!m_track) return;
  if (m_expected.size() < m_net.resources()) m_expected.resize(m_net.resources(), 0.0);
  for (const auto& u : path) m_expected[static_cast<std::size_t>(u.resource)] += bytes * u.cost;
}

void FlowFabric::check_conservation() const {
  if (!m_track)
    throw std::logic_error(std::string(name()) + ": check_conservation needs track_conservation");
  std::size_t pending = 0;  // transfers not started (a start_many run is one entry)
  for (std::size_t i = m_pending_head; i < m_pending.size(); ++i) pending += m_pending[i].m.count;
  if (m_net.active_count() != 0 || pending != 0 || !m_waiters.empty() || !m_members.empty())
    throw std::logic_error(std::string(name()) + ": invariant violated: " +
                           std::to_string(m_net.active_count() + pending) +
                           " transfer(s) never finished");
  for (std::size_t i = 0; i < m_net.resources(); ++i) {
    const double want = i < m_expected.size() ? m_expected[i] : 0.0;
    const double got = m_net.carried(static_cast<int>(i));
    if (std::fabs(got - want) > 1e-9 * std::max(1.0, want) + 1e-6)
      throw std::logic_error(std::string(name()) + ": invariant violated: resource '" +
                             m_net.name(static_cast<int>(i)) + "' carried " + std::to_string(got) +
                             " units, transfers put " + std::to_string(want) + " on it");
  }
}

void FlowFabric::transfer(TransferRequest& r) {
  check_request(r);
  ++m_transfers;
  r.start_s = sim_now_seconds();
  auto path = m_topo.path(r);
  const double cap = cap_of(r);
  const double lat = m_topo.latency(r);
  if (lat > 0) {
    ++m_events;
    sc_core::wait(sc_core::sc_time(lat, sc_core::SC_SEC));
  }
  sc_core::sc_event done;
  const double now = sim_now_seconds();
  expect(path, r.bytes);
  const bool was_busy = watched_busy();
  const FlowNetwork::FlowId id = m_net.start(now, path, r.bytes, cap);
  note_watched(id);
  m_waiters.v.emplace_back(id, Waiter{&done, &r});
  watch_check(was_busy);
  reschedule();
  ++m_events;
  sc_core::wait(done);
  r.end_s = sim_now_seconds();
}

void FlowFabric::reschedule() {
  m_next.cancel();
  const double t = m_net.next_finish();
  if (std::isinf(t)) return;
  const double now = sim_now_seconds();
  const double delay = t > now ? t - now : 0.0;
  // sc_time rounds to the time resolution; FlowNetwork's epsilon is that resolution, so a
  // finish rounded early is still due when the event fires.
  if (delay == 0.0)
    m_next.notify(sc_core::SC_ZERO_TIME);
  else
    m_next.notify(sc_core::sc_time(delay, sc_core::SC_SEC));
}

void FlowFabric::on_finish() {
  ++m_events;
  const double now = sim_now_seconds();
  const bool was_busy = watched_busy();
  m_net.finish_due(now, m_done, m_done_bounds);
  for (std::size_t k = 0; k < m_done.size(); ++k) {
    const FlowNetwork::FlowId id = m_done[k];
    if (!m_watched.empty()) m_watched.erase(id);
    if (Waiter* w = m_waiters.find(id)) {
      w->req->bottleneck_s.swap(m_done_bounds[k]);  // blocking transfers too (issue 14)
      w->done->notify(sc_core::SC_ZERO_TIME);
      m_waiters.erase(w);
      continue;
    }
    Member* mt = m_members.find(id);
    if (mt == nullptr) throw std::logic_error("FlowFabric: finished flow has no owner");
    mt->req->end_s = now;
    mt->req->bottleneck_s.swap(m_done_bounds[k]);
    for (std::size_t i = 1; i < mt->count; ++i) {  // lockstep: the others end with it
      mt->req[i].end_s = now;
      mt->req[i].bottleneck_s = mt->req->bottleneck_s;
    }
    Group* g = mt->group;
    m_members.erase(mt);
    g->member_done(now);
  }
  m_waiters.compact();
  m_members.compact();
  watch_check(was_busy);
  reschedule();
}

std::vector<FlowFabric::ResourceStats> FlowFabric::stats() const {
  std::vector<ResourceStats> out;
  for (std::size_t i = 0; i < m_net.resources(); ++i) {
    const int r = static_cast<int>(i);
    out.push_back({m_net.name(r), m_net.capacity(r), m_net.carried(r), m_net.busy_time(r)});
  }
  return out;
}

}  // namespace kappasim
