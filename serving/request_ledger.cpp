#include "serving/request_ledger.hpp"

#include <stdexcept>
#include <string>

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

void RequestLedger::park(std::uint64_t id) {
  const auto it = m_live.find(id);
  if (it == m_live.end())
    throw std::logic_error("RequestLedger::park: no request " + std::to_string(id));
  const RequestState& st = it->second;
  if (st.seq->first_scheduled_s >= 0 || st.seq->computed != 0)
    throw std::logic_error("RequestLedger::park: request " + std::to_string(id) +
                           " has been scheduled");
  const auto r = static_cast<std::size_t>(st.rank);
  m_parked_compute.at(r) += st.seq->remaining();
  m_parked_cached.at(r) += st.seq->cached_tokens;
  ++m_parked;
  m_live.erase(it);
}

RequestState& RequestLedger::unpark(const ArrivedRequest& rec) {
  const auto r = static_cast<std::size_t>(rec.rank);
  const auto [it, fresh] = m_live.try_emplace(rec.id);
  if (!fresh || m_parked == 0)
    throw std::logic_error("RequestLedger::unpark: request " + std::to_string(rec.id) +
                           " is not parked");
  --m_parked;
  m_parked_compute.at(r) -= rec.prompt_tokens() - rec.cached_tokens;
  m_parked_cached.at(r) -= rec.cached_tokens;
  return it->second;
}

std::size_t RequestLedger::outstanding(int r) const {
  if (r >= 0) return m_per_rank.at(static_cast<std::size_t>(r));
  return size();
}

std::int64_t RequestLedger::compute_tokens(int r) const {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < m_parked_compute.size(); ++i)
    if (r < 0 || static_cast<int>(i) == r) n += m_parked_compute[i];
  for (const auto& [id, st] : m_live)
    if (r < 0 || st.rank == r) n += st.seq->remaining();
  return n;
}

std::int64_t RequestLedger::pending_load_tokens(int r) const {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < m_parked_cached.size(); ++i)
    if (r < 0 || static_cast<int>(i) == r) n += m_parked_cached[i];
  for (const auto& [id, st] : m_live)
    if ((r < 0 || st.rank == r) && st.seq->first_scheduled_s < 0) n += st.seq->cached_tokens;
  return n;
}

}  // namespace kappasim
