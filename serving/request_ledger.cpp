#include "serving/request_ledger.hpp"

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace kappasim {

std::size_t RequestLedger::find(std::uint64_t id) const {
  const std::size_t n = m_live.size();
  if (m_size == 0) return n;
  const std::size_t mask = n - 1;
  for (std::size_t i = home(id);; i = (i + 1) & mask) {
    const Slot& s = m_live[i];
    if (!s.st) return n;
    if (s.id == id) return i;
  }
}

std::size_t RequestLedger::find_or_throw(std::uint64_t id) const {
  const std::size_t i = find(id);
  if (i == m_live.size())
    throw std::out_of_range("RequestLedger: no live request " + std::to_string(id));
  return i;
}

void RequestLedger::grow() {
  std::vector<Slot> old;
  old.swap(m_live);
  const std::size_t n = old.empty() ? 16 : old.size() * 2;
  m_live.resize(n);
  m_shift = 64;
  for (std::size_t k = n; k > 1; k /= 2) --m_shift;
  const std::size_t mask = n - 1;
  for (Slot& s : old) {
    if (!s.st) continue;
    std::size_t i = home(s.id);
    while (m_live[i].st) i = (i + 1) & mask;
    m_live[i] = std::move(s);
  }
}

RequestState& RequestLedger::insert(std::uint64_t id) {
  if ((m_size + 1) * 2 > m_live.size()) grow();
  const std::size_t mask = m_live.size() - 1;
  std::size_t i = home(id);
  while (m_live[i].st) i = (i + 1) & mask;
  Slot& s = m_live[i];
  s.id = id;
  if (!m_spare.empty()) {
    s.st = std::move(m_spare.back());
    m_spare.pop_back();
  } else {
    s.st = std::make_unique<RequestState>();
  }
  ++m_size;
  return *s.st;
}

std::unique_ptr<RequestState> RequestLedger::take(std::size_t i) {
  std::unique_ptr<RequestState> out = std::move(m_live[i].st);
  --m_size;
  // Backward shift: a later entry of the probe run moves into the hole when the hole lies
  // between its home and where it sits (no tombstones).
  const std::size_t mask = m_live.size() - 1;
  for (std::size_t j = (i + 1) & mask; m_live[j].st; j = (j + 1) & mask) {
    if (((j - home(m_live[j].id)) & mask) >= ((j - i) & mask)) {
      m_live[i] = std::move(m_live[j]);
      i = j;
    }
  }
  return out;
}

void RequestLedger::recycle(std::unique_ptr<RequestState> st) {
  if (st->seq && m_spare_seqs.size() < kSpare) m_spare_seqs.push_back(std::move(st->seq));
  if (m_spare.size() >= kSpare) return;
  st->~RequestState();  // fresh again in place (cheaper than assigning a fresh one)
  new (st.get()) RequestState();
  m_spare.push_back(std::move(st));
}

Sequence& RequestLedger::seat(RequestState& st, Sequence&& s) {
  if (m_spare_seqs.empty()) {
    st.seq = std::make_unique<Sequence>(std::move(s));
  } else {
    st.seq = std::move(m_spare_seqs.back());
    m_spare_seqs.pop_back();
    *st.seq = std::move(s);
  }
  return *st.seq;
}

RequestState& RequestLedger::open(std::uint64_t id, int rank) {
  const std::size_t i = find(id);
  RequestState& st = i == m_live.size() ? insert(id) : *m_live[i].st;
  st.rank = rank;
  ++m_per_rank.at(static_cast<std::size_t>(rank));
  return st;
}

void RequestLedger::close(std::uint64_t id) {
  const std::size_t i = find(id);
  if (i == m_live.size()) return;
  --m_per_rank.at(static_cast<std::size_t>(m_live[i].st->rank));
  recycle(take(i));
}

void RequestLedger::park(std::uint64_t id) {
  const std::size_t i = find(id);
  if (i == m_live.size())
    throw std::logic_error("RequestLedger::park: no request " + std::to_string(id));
  const RequestState& st = *m_live[i].st;
  if (st.seq->first_scheduled_s >= 0 || st.seq->computed != 0)
    throw std::logic_error("RequestLedger::park: request " + std::to_string(id) +
                           " has been scheduled");
  const auto r = static_cast<std::size_t>(st.rank);
  m_parked_compute.at(r) += st.seq->remaining();
  m_parked_cached.at(r) += st.seq->cached_tokens;
  ++m_parked;
  recycle(take(i));
}

RequestState& RequestLedger::unpark(const ArrivedRequest& rec) {
  const auto r = static_cast<std::size_t>(rec.rank);
  if (find(rec.id) != m_live.size() || m_parked == 0)
    throw std::logic_error("RequestLedger::unpark: request " + std::to_string(rec.id) +
                           " is not parked");
  --m_parked;
  m_parked_compute.at(r) -= rec.prompt_tokens() - rec.cached_tokens;
  m_parked_cached.at(r) -= rec.cached_tokens;
  RequestState& st = insert(rec.id);
  if (!m_spare_seqs.empty()) {
    st.seq = std::move(m_spare_seqs.back());
    m_spare_seqs.pop_back();
  }
  return st;
}

std::size_t RequestLedger::outstanding(int r) const {
  if (r >= 0) return m_per_rank.at(static_cast<std::size_t>(r));
  return size();
}

std::int64_t RequestLedger::compute_tokens(int r) const {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < m_parked_compute.size(); ++i)
    if (r < 0 || static_cast<int>(i) == r) n += m_parked_compute[i];
  for (const Slot& s : m_live)
    if (s.st && (r < 0 || s.st->rank == r)) n += s.st->seq->remaining();
  return n;
}

std::int64_t RequestLedger::pending_load_tokens(int r) const {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < m_parked_cached.size(); ++i)
    if (r < 0 || static_cast<int>(i) == r) n += m_parked_cached[i];
  for (const Slot& s : m_live)
    if (s.st && (r < 0 || s.st->rank == r) && s.st->seq->first_scheduled_s < 0)
      n += s.st->seq->cached_tokens;
  return n;
}

}  // namespace kappasim
