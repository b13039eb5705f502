#include "serving/request_ledger.hpp"

namespace kappasim {

RequestState& RequestLedger::open(std::uint64_t id, int rank) {
  RequestState& st = m_live[id];
  st.rank = rank;
  ++m_per_rank.at(static_cast<std::size_t>(rank));
  return st;
}

void RequestLedger::close(std::uint64_t id) {
  const auto it = m_live.find(id);
  if (it == m_live.end()) return;
  --m_per_rank.at(static_cast<std::size_t>(it->second.rank));
  m_live.erase(it);
}

std::size_t RequestLedger::outstanding(int r) const {
  if (r >= 0) return m_per_rank.at(static_cast<std::size_t>(r));
  return m_live.size();
}

std::int64_t RequestLedger::compute_tokens(int r) const {
  std::int64_t n = 0;
  for (const auto& [id, st] : m_live)
    if (r < 0 || st.rank == r) n += st.seq->remaining();
  return n;
}

std::int64_t RequestLedger::pending_load_tokens(int r) const {
  std::int64_t n = 0;
  for (const auto& [id, st] : m_live)
    if ((r < 0 || st.rank == r) && st.seq->first_scheduled_s < 0) n += st.seq->cached_tokens;
  return n;
}

}  // namespace kappasim
