#include "interconnects/pcie_packet.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace kappasim {

using sc_core::SC_SEC;
using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

namespace {
constexpr double kEps = 1e-9;  // bytes: payload counts are sums of exact sizes
}

PciePacketLink::PciePacketLink(const sc_core::sc_module_name& name, const PcieProtocol& p,
                               const PciePacketOptions& opts)
    : LinkModule(name),
      m_p(p),
      m_opts(opts),
      m_wire_Bps(p.wire_Bps()),
      m_rtt(p.round_trip_latency_s, SC_SEC),
      m_credit_return(opts.credit_return_s < 0 ? p.round_trip_latency_s : opts.credit_return_s,
                      SC_SEC),
      m_tags_free(std::floor(p.max_outstanding_reads)),
      m_credit_free(opts.posted_credit_bytes) {
  if (!(m_wire_Bps > 0)) throw InputError(std::string(basename()) + ": PCIe wire rate must be > 0");
  if (m_tags_free < 1)
    throw InputError(std::string(basename()) + ": max_outstanding_reads must be at least 1");
  const double largest_write =
      std::max(request_bytes(p, PcieOp::DmaWrite), request_bytes(p, PcieOp::SmWrite));
  if (opts.posted_credit_bytes < largest_write)
    throw InputError(std::string(basename()) + ": posted_credit_bytes (" +
                     format_number(opts.posted_credit_bytes) +
                     ") is smaller than one write TLP payload (" + format_number(largest_write) +
                     ")");
  SC_HAS_PROCESS(PciePacketLink);
  SC_THREAD(down_thread);
  SC_THREAD(up_thread);
}

PciePacketLink::~PciePacketLink() = default;

void PciePacketLink::transfer(TransferRequest& r) {
  r.start_s = sc_core::sc_time_stamp().to_seconds();
  if (r.path == CopyPath::Local)
    throw InputError(std::string(basename()) +
                     ": the packet-level PCIe link carries host<->GPU copies only; on-GPU "
                     "(CopyPath::Local) traffic needs the flow back end");
  if (!(r.bytes > 0)) {
    r.end_s = r.start_s;
    return;
  }
  Flow f;
  f.req = &r;
  f.op = pcie_op(r.dir == Direction::H2D, r.path == CopyPath::Dma);
  f.total = r.bytes;
  const double inflight = r.sm_inflight_bytes > 0 ? r.sm_inflight_bytes : m_opts.sm_inflight_bytes;
  if (f.op == PcieOp::SmRead && inflight > 0)
    f.max_inflight = std::max(1.0, std::floor(inflight / m_p.sm_access + 1e-9));
  m_flows.push_back(&f);
  ++m_stats.transfers;
  m_up.wake.notify(SC_ZERO_TIME);  // reads and writes both start upstream
  while (!f.finished) sc_core::wait(f.done);
  // Posted writes: the last TLP still needs one way (half the round trip) to reach host memory.
  if (!is_read(f.op)) {
    sc_core::wait(m_rtt / 2);
    r.end_s = sc_core::sc_time_stamp().to_seconds();
  }
}

double PciePacketLink::latency_s(int, Direction dir, CopyPath path, bool) const {
  // Idle link: a read's first completion comes back a round trip after its request; a posted
  // write's first byte needs one way (half the round trip), as transfer() charges.
  if (path == CopyPath::Local) return 0;
  return dir == Direction::H2D ? m_p.round_trip_latency_s : m_p.round_trip_latency_s / 2;
}

double PciePacketLink::solo_rate_Bps(int, Direction dir, CopyPath path, bool) const {
  if (path == CopyPath::Local)
    throw InputError(std::string(basename()) + ": a PCIe link carries no on-GPU (Local) traffic");
  const PcieOp op = pcie_op(dir == Direction::H2D, path == CopyPath::Dma);
  double r = std::min(payload_bandwidth(m_p, op), read_tag_limit_Bps(m_p, op));
  if (op == PcieOp::SmRead && m_opts.sm_inflight_bytes > 0)
    r = std::min(r, little_rate_Bps(m_opts.sm_inflight_bytes, m_p.round_trip_latency_s));
  return r;
}

bool PciePacketLink::ack_due(const Wire& w) const {
  const auto due = static_cast<std::uint64_t>(
      std::floor(static_cast<double>(w.tlps_to_ack) / m_p.tlps_per_ack + 1e-9));
  return due > w.acks_sent;
}

void PciePacketLink::reclaim_credits() {
  const sc_time now = sc_core::sc_time_stamp();
  while (!m_credit_returns.empty() && m_credit_returns.front().at <= now) {
    m_credit_free += m_credit_returns.front().bytes;
    m_credit_returns.pop_front();
  }
}

// Host -> GPU: ACK DLLPs first, then completions whose round trip has elapsed, round robin
// over transfers.
bool PciePacketLink::pick_down(Item& it, sc_time& next_ready) {
  if (ack_due(m_down)) {
    it = Item{Kind::Dllp, nullptr, 0, m_p.dllp, false};
    return true;
  }
  const sc_time now = sc_core::sc_time_stamp();
  const std::size_t n = m_flows.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t idx = (m_down.rr + k) % n;
    Flow& f = *m_flows[idx];
    if (f.completions.empty()) continue;
    const Chunk& c = f.completions.front();
    if (c.ready > now) {
      next_ready = std::min(next_ready, c.ready);
      continue;
    }
    it = Item{Kind::CplD, &f, c.bytes, c.bytes + m_p.tlp_3dw, c.last_of_request};
    f.completions.pop_front();
    m_down.rr = (idx + 1) % n;
    return true;
  }
  return false;
}

// GPU -> host: ACK DLLPs first, then one MRd (needs a free tag) or MWr (needs posted credit)
// per turn, round robin over transfers.
bool PciePacketLink::pick_up(Item& it, sc_time& next_ready) {
  if (ack_due(m_up)) {
    it = Item{Kind::Dllp, nullptr, 0, m_p.dllp, false};
    return true;
  }
  reclaim_credits();
  const std::size_t n = m_flows.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t idx = (m_up.rr + k) % n;
    Flow& f = *m_flows[idx];
    const double remaining = f.total - f.issued;
    if (remaining <= kEps) continue;
    const double size = std::min(request_bytes(m_p, f.op), remaining);
    if (is_read(f.op)) {
      if (m_tags_free < 1) continue;  // woken again when a request's last completion arrives
      // The kernel's own load slots (woken the same way).
      if (f.max_inflight > 0 && f.inflight + 1 > f.max_inflight + kEps) continue;
      m_tags_free -= 1;
      f.inflight += 1;
      it = Item{Kind::MRd, &f, size, m_p.tlp_4dw, false};
    } else {
      if (m_credit_free + kEps < size) {
        if (!m_credit_returns.empty())
          next_ready = std::min(next_ready, m_credit_returns.front().at);
        continue;
      }
      m_credit_free -= size;
      it = Item{Kind::MWr, &f, size, size + m_p.tlp_4dw, false};
    }
    f.issued += size;
    m_up.rr = (idx + 1) % n;
    return true;
  }
  return false;
}

// Serialises one TLP/DLLP. The end time is kept unrounded in busy_until_s so that back-to-back
// packets do not accumulate the rounding of sc_time to its resolution.
void PciePacketLink::send(Wire& w, PcieDirectionStats& st, const Item& it) {
  const double now_s = sc_core::sc_time_stamp().to_seconds();
  const double start_s = (now_s - w.busy_until_s <= 1e-12) ? w.busy_until_s : now_s;
  const double end_s = start_s + it.wire / m_wire_Bps;
  w.busy_until_s = end_s;
  st.wire_bytes += it.wire;
  st.busy_s += end_s - start_s;
  switch (it.kind) {
    case Kind::Dllp:
      ++st.dllps;
      ++w.acks_sent;
      break;
    case Kind::MRd:
      ++st.mrd_tlps;
      break;
    case Kind::CplD:
      ++st.cpl_tlps;
      st.payload_bytes += it.payload;
      break;
    case Kind::MWr:
      ++st.mwr_tlps;
      st.payload_bytes += it.payload;
      break;
    case Kind::None:
      break;
  }
  sc_core::wait(sc_time(end_s, SC_SEC) - sc_core::sc_time_stamp());
}

// A TLP has arrived at the GPU.
void PciePacketLink::deliver_down(const Item& it) {
  if (it.kind != Kind::CplD) return;
  Flow& f = *it.flow;
  f.delivered += it.payload;
  ++m_up.tlps_to_ack;
  bool wake_up = ack_due(m_up);
  if (it.last_of_request) {
    m_tags_free += 1;
    f.inflight -= 1;
    wake_up = true;
  }
  if (wake_up) m_up.wake.notify(SC_ZERO_TIME);
  if (f.delivered >= f.total - kEps && f.completions.empty() && f.issued >= f.total - kEps)
    finish(f);
}

// A TLP has arrived at the root complex.
void PciePacketLink::deliver_up(const Item& it) {
  if (it.kind == Kind::Dllp || it.kind == Kind::None) return;
  Flow& f = *it.flow;
  ++m_down.tlps_to_ack;
  if (ack_due(m_down)) m_down.wake.notify(SC_ZERO_TIME);
  const sc_time now = sc_core::sc_time_stamp();
  if (it.kind == Kind::MRd) {
    // The completer answers after the round trip, in RCB-sized completions.
    const sc_time ready = now + m_rtt;
    double left = it.payload;
    while (left > kEps) {
      const double b = std::min(m_p.read_completion, left);
      left -= b;
      f.completions.push_back(Chunk{ready, b, left <= kEps});
    }
    m_down.wake.notify(m_rtt);
    return;
  }
  // MWr: posted; its credit comes back after credit_return.
  f.delivered += it.payload;
  m_credit_returns.push_back(Credit{now + m_credit_return, it.payload});
  if (f.delivered >= f.total - kEps) finish(f);
}

void PciePacketLink::finish(Flow& f) {
  f.finished = true;
  f.req->end_s = sc_core::sc_time_stamp().to_seconds();
  auto pos = std::find(m_flows.begin(), m_flows.end(), &f);
  const auto idx = static_cast<std::size_t>(pos - m_flows.begin());
  m_flows.erase(pos);
  for (Wire* w : {&m_down, &m_up}) {
    if (w->rr > idx) --w->rr;
    if (m_flows.empty() || w->rr >= m_flows.size()) w->rr = 0;
  }
  f.done.notify(SC_ZERO_TIME);
}

void PciePacketLink::run(Wire& w, PcieDirectionStats& st, bool down) {
  for (;;) {
    Item it;
    sc_time next = sc_core::sc_max_time();
    const bool got = down ? pick_down(it, next) : pick_up(it, next);
    if (!got) {
      if (next < sc_core::sc_max_time())
        sc_core::wait(next - sc_core::sc_time_stamp(), w.wake);
      else
        sc_core::wait(w.wake);
      ++st.activations;
      continue;
    }
    send(w, st, it);
    ++st.activations;
    if (down)
      deliver_down(it);
    else
      deliver_up(it);
  }
}

void PciePacketLink::down_thread() { run(m_down, m_stats.down, true); }
void PciePacketLink::up_thread() { run(m_up, m_stats.up, false); }

}  // namespace kappasim
