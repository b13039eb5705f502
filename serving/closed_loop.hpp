// Closed-loop clients (workload.concurrency, docs/workloads.md "Closed loop"): N clients, each
// sending its next request when its previous one has finished, after the think time. The
// arrivals process (the engine's front end, Arrivals::run, or Cluster::route: next_arrival) takes a
// client before each request (acquire: the request arrives then); the finish path gives it back
// (release: the request finished now, or was rejected). Every client is free at t = 0, so the first
// N requests arrive together, as the benchmark tools start their N workers at once.
//
// A client freed at t is ready at t + think_time. Finishes come in time order and the think time
// is one constant, so the ready times are queued in order and the earliest is at the front; which
// client sends which request does not matter (the stream is the workload's, in order).
#pragma once

#include <systemc>

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "core/sim_runner.hpp"
#include "core/sim_seconds.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {

class ClientPool {
 public:
  ClientPool(std::int64_t clients, double think_time_s) : m_think_s(think_time_s) {
    if (clients < 1) throw std::logic_error("ClientPool: needs at least one client");
    m_ready_s.assign(static_cast<std::size_t>(clients), 0.0);
  }

  // Waits (in the calling SystemC thread) until a client is ready, and takes it.
  void acquire() {
    while (m_ready_s.empty()) sc_core::wait(m_freed);
    const double t = m_ready_s.front();
    m_ready_s.pop_front();
    const double now = sim_now_seconds();
    if (t > now) sc_core::wait(sc_core::sc_time(t - now, sc_core::SC_SEC));
  }

  // A client's request finished (or was rejected) now: the client is ready after its think time.
  void release() {
    m_ready_s.push_back(sim_now_seconds() + m_think_s);
    m_freed.notify(sc_core::SC_ZERO_TIME);
  }

 private:
  double m_think_s;
  std::deque<double> m_ready_s;  // ready times of the clients not sending, in order
  sc_core::sc_event m_freed;
};

// The next request of `source` as it arrives: closed loop (`clients` not null), when a client is
// ready, at that time. False at the stream's end, or when the request would arrive past the time
// base's reach (core/sim_runner.hpp): an InputError through sim_fail, and the caller ends the
// stream as if exhausted, so the requests in flight drain and every process ends (none is killed
// while the simulation unwinds: SystemC kills a live thread by switching to its coroutine stack,
// which AddressSanitizer reports as a false stack-buffer-overflow).
inline bool next_arrival(WorkloadSource& source, ClientPool* clients, Request& r) {
  if (!source.next(r)) return false;
  if (clients) {
    clients->acquire();
    r.arrival_s = sim_now_seconds();
  }
  if (!(r.arrival_s > kSimTimeLimitS)) return true;
  sim_fail(std::make_exception_ptr(
      InputError("workload: request " + std::to_string(r.id) + " arrives at " +
                 sim_time_limit_message(r.arrival_s) +
                 "; expected arrivals within it: a higher workload.rate, fewer workload.requests "
                 "or a smaller trace time_scale")));
  return false;
}

}  // namespace kappasim
