// The serving engine's front end (issue 21): the arrivals process. It owns the workload stream,
// the closed-loop clients (workload.concurrency: a request arrives when a client is ready;
// serving/closed_loop.hpp), the rank router (serving.dp_router, with several ranks) and the KV
// stores' warm-up (warm_tier: every rank's DRAM tier as the stream would leave it, or each prefix
// at its first use). For every request it waits for the arrival time (or a client), charges the
// stack's front end (serving.ttft: end_to_end), routes it to a rank and hands it to the engine's
// admission (`Admit`: the KV lookup, recompute choice and enqueue stay in the engine, in one
// place). A request arriving past the time base's reach ends the stream through sim_fail.
// SystemC: run() is a thread process; the engine spawns it.
#pragma once

#include <systemc>

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "serving/closed_loop.hpp"
#include "serving/handoff.hpp"
#include "serving/rank.hpp"
#include "serving/router_policy.hpp"
#include "serving/run_spec.hpp"
#include "workloads/request.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {

class Arrivals {
 public:
  // The engine takes request r on rank `rank` after the front end's `front_end_in_s`; false when
  // it could not (an input error already reported through sim_fail): the stream then ends.
  using Admit = std::function<bool(const Request& r, std::size_t rank, double front_end_in_s)>;
  using WarmSource = std::function<std::unique_ptr<WorkloadSource>()>;
  // `ranks`: the engine's (their KV stores are warmed); `view`: them as the router sees them;
  // `work`: notified when the stream ends. `warm_source` may be empty (see EngineSinks).
  Arrivals(const RunSpec& spec, WorkloadSource& source, EngineRole role, WarmSource warm_source,
           const std::vector<std::unique_ptr<Rank>>& ranks, const ClusterView& view, Admit admit,
           sc_core::sc_event& work);
  ~Arrivals();

  void run();                           // the process
  bool done() const { return m_done; }  // the stream has ended
  void finished() {
    if (m_clients) m_clients->release();
  }  // a request left: its client is free

 private:
  std::size_t route(const Request& r);

  const RunSpec& m_spec;
  WorkloadSource& m_source;
  EngineRole m_role;
  WarmSource m_warm_source;
  const std::vector<std::unique_ptr<Rank>>& m_ranks;
  const ClusterView& m_view;
  Admit m_admit;
  sc_core::sc_event& m_work;
  std::unique_ptr<RouterPolicy> m_router;  // several ranks only
  // workload.concurrency > 0: the closed-loop clients; else null. A cluster's nodes have none:
  // the cluster's router holds them (serving/cluster.cpp).
  std::unique_ptr<ClientPool> m_clients;
  bool m_done = false;
};

}  // namespace kappasim
