// The serving engine's invariant bookkeeping (RunSpec::check, `kappasim run --check`; issue 21):
// what it remembers to verify as requests finish — every request finishes once, finishes never
// go back in time, no request is scheduled or finishes before it arrives — and the end-of-run
// checks: every arrived request finished or was rejected, nothing is left in the system (no
// request state, no KV block held), the link back end conserved bytes, and the run ends after its
// last finish. A violation is a std::logic_error (a simulator bug, never bad input). The step
// groups check their own steps (serving/step_group.cpp). Plain C++ over the engine's parts.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "interconnects/link_model.hpp"
#include "serving/engine_stats.hpp"
#include "serving/rank.hpp"
#include "serving/request_ledger.hpp"

namespace kappasim {

class EngineCheck {
 public:
  // Request s finished (or was rejected) at now_s.
  void finished(const Sequence& s, double now_s);
  // At the end of the run (now_s: its simulated end).
  void end(const EngineStats& stats, const RequestLedger& ledger,
           const std::vector<std::unique_ptr<Rank>>& ranks, const LinkModule& link,
           double now_s) const;

 private:
  std::set<std::uint64_t> m_done;
  double m_last_finish_s = 0;
};

}  // namespace kappasim
