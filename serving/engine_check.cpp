#include "serving/engine_check.hpp"

#include <stdexcept>
#include <string>

namespace kappasim {

void EngineCheck::finished(const Sequence& s, double now_s) {
  const std::uint64_t id = s.req.id;
  if (!m_done.insert(id).second)
    throw std::logic_error("invariant violated: request " + std::to_string(id) + " finished twice");
  if (now_s < m_last_finish_s)
    throw std::logic_error("invariant violated: simulated time went back");
  m_last_finish_s = now_s;
  // Every output's times: a request starts and finishes after it arrived (a TTFT or queue below
  // zero means the time base wrapped; core/sim_runner.hpp).
  // Tolerance: the arrival wait rounds to 1 ps, and a double holds ~1e-16 relative.
  const double slack = 1e-12 + 1e-14 * s.req.arrival_s;
  if (now_s < s.req.arrival_s - slack ||
      (s.first_scheduled_s >= 0 && s.first_scheduled_s < s.req.arrival_s - slack))
    throw std::logic_error("invariant violated: request " + std::to_string(id) +
                           " is scheduled or finishes before it arrives (time went back)");
}

void EngineCheck::end(const EngineStats& stats, const RequestLedger& ledger,
                      const std::vector<std::unique_ptr<Rank>>& ranks, const LinkModule& link,
                      double now_s) const {
  if (stats.finished + stats.rejected != stats.arrived || !ledger.empty())
    throw std::logic_error("invariant violated: " + std::to_string(stats.arrived) + " arrived, " +
                           std::to_string(stats.finished) + " finished, " +
                           std::to_string(stats.rejected) + " rejected, " +
                           std::to_string(ledger.size()) + " still in the system");
  for (const auto& rank : ranks)
    if (rank->kv->used_blocks() != 0)
      throw std::logic_error("invariant violated: rank " + std::to_string(rank->index) +
                             " still holds " + std::to_string(rank->kv->used_blocks()) +
                             " KV blocks at the end (a P/D hand-off never released?)");
  link.check_conservation();
  if (now_s < m_last_finish_s)  // summary.json: the run ends after its last finish
    throw std::logic_error("invariant violated: the run ends before its last request finished");
}

}  // namespace kappasim
