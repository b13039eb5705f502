#include "interconnects/flow_fabric.hpp"

#include <cmath>
#include <stdexcept>

namespace kappasim {

// topology.cpp reads these enums by value to stay free of SystemC.
static_assert(static_cast<int>(Direction::H2D) == 0 && static_cast<int>(Direction::D2H) == 1);
static_assert(static_cast<int>(CopyPath::Dma) == 0 && static_cast<int>(CopyPath::Kernel) == 1);

FlowFabric::FlowFabric(const sc_core::sc_module_name& name, Topology topology)
    : LinkModule(name),
      m_topo(std::move(topology)),
      m_net(sc_core::sc_get_time_resolution().to_seconds()),
      m_next("next_finish") {
  m_topo.add_to(m_net);
  SC_METHOD(on_finish);
  sensitive << m_next;
  dont_initialize();
}

void FlowFabric::transfer(TransferRequest& r) {
  if (r.gpu < 0 || r.gpu >= m_topo.gpus())
    throw std::out_of_range(std::string(name()) + ": no GPU " + std::to_string(r.gpu));
  if (!(r.bytes >= 0) || !std::isfinite(r.bytes))
    throw std::logic_error(std::string(name()) + ": transfer bytes must be finite and >= 0");
  ++m_transfers;
  r.start = sc_core::sc_time_stamp();
  auto path = m_topo.path(r.gpu, r.dir, r.path, r.pinned);
  const double cap = m_topo.rate_cap(r.gpu, r.dir, r.path, r.pinned);
  const double lat = m_topo.latency(r.gpu, r.dir, r.path, r.pinned);
  if (lat > 0) {
    ++m_events;
    sc_core::wait(sc_core::sc_time(lat, sc_core::SC_SEC));
  }
  sc_core::sc_event done;
  const double now = sc_core::sc_time_stamp().to_seconds();
  const FlowNetwork::FlowId id = m_net.start(now, std::move(path), r.bytes, cap);
  m_waiters.emplace(id, &done);
  reschedule();
  ++m_events;
  sc_core::wait(done);
  r.end = sc_core::sc_time_stamp();
}

void FlowFabric::reschedule() {
  m_next.cancel();
  const double t = m_net.next_finish();
  if (std::isinf(t)) return;
  const double now = sc_core::sc_time_stamp().to_seconds();
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
  const double now = sc_core::sc_time_stamp().to_seconds();
  for (FlowNetwork::FlowId id : m_net.finish_due(now)) {
    auto it = m_waiters.find(id);
    if (it == m_waiters.end()) throw std::logic_error("FlowFabric: finished flow has no waiter");
    it->second->notify(sc_core::SC_ZERO_TIME);
    m_waiters.erase(it);
  }
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
