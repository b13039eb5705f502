#include "serving/request_ledger.hpp"

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace kappasim {

RequestState* RequestLedger::find(std::uint64_t id) const {
  if (m_staged_live && id == m_staged_id) return m_staged.get();
  const std::unique_ptr<RequestState>* st = m_live.find(id);
  return st ? st->get() : nullptr;
}

RequestState* RequestLedger::find_or_throw(std::uint64_t id) const {
  RequestState* st = find(id);
  if (!st) throw std::out_of_range("RequestLedger: no live request " + std::to_string(id));
  return st;
}

RequestState& RequestLedger::stage(std::uint64_t id, int rank) {
  if (m_staged_live || m_live.find(id))
    throw std::logic_error("RequestLedger::stage: request " + std::to_string(id) +
                           " while another is staged, or live already");
  if (!m_staged) m_staged = std::make_unique<RequestState>();
  m_staged->rank = rank;
  ++m_per_rank.at(static_cast<std::size_t>(rank));
  m_staged_id = id;
  m_staged_live = true;
  return *m_staged;
}

void RequestLedger::commit() {
  if (!m_staged_live) throw std::logic_error("RequestLedger::commit: nothing staged");
  m_staged_live = false;
  m_live.insert(m_staged_id, std::move(m_staged));
}

void RequestLedger::unstage() {
  m_staged_live = false;
  RequestState& st = *m_staged;
  if (st.seq && m_spare_seqs.size() < kSpare) m_spare_seqs.push_back(std::move(st.seq));
  st.~RequestState();  // fresh again in place, for the next arrival
  new (&st) RequestState();
}

RequestState& RequestLedger::insert(std::uint64_t id) {
  std::unique_ptr<RequestState> st;
  if (!m_spare.empty()) {
    st = std::move(m_spare.back());
    m_spare.pop_back();
  } else {
    st = std::make_unique<RequestState>();
  }
  return *m_live.insert(id, std::move(st));
}

void RequestLedger::recycle(std::unique_ptr<RequestState> st) {
  if (st->seq && m_spare_seqs.size() < kSpare) m_spare_seqs.push_back(std::move(st->seq));
  if (m_spare.size() >= kSpare) return;
  st->~RequestState();  // fresh again in place (cheaper than assigning a fresh one)
  new (st.get()) RequestState();
  m_spare.push_back(std::move(st));
}

Sequence& RequestLedger::seat(RequestState& st, Sequence&& s) {
  if (st.seq) {
    *st.seq = std::move(s);
  } else if (m_spare_seqs.empty()) {
    st.seq = std::make_unique<Sequence>(std::move(s));
  } else {
    st.seq = std::move(m_spare_seqs.back());
    m_spare_seqs.pop_back();
    *st.seq = std::move(s);
  }
  return *st.seq;
}

RequestState& RequestLedger::open(std::uint64_t id, int rank) {
  RequestState* live = find(id);
  RequestState& st = live ? *live : insert(id);
  st.rank = rank;
  ++m_per_rank.at(static_cast<std::size_t>(rank));
  return st;
}

void RequestLedger::close(std::uint64_t id) {
  if (m_staged_live && id == m_staged_id) {
    --m_per_rank.at(static_cast<std::size_t>(m_staged->rank));
    unstage();
    return;
  }
  std::unique_ptr<RequestState> st;
  if (!m_live.erase(id, &st)) return;
  --m_per_rank.at(static_cast<std::size_t>(st->rank));
  recycle(std::move(st));
}

void RequestLedger::park(std::uint64_t id) {
  const RequestState* live = find(id);
  if (!live) throw std::logic_error("RequestLedger::park: no request " + std::to_string(id));
  const RequestState& st = *live;
  if (st.seq->first_scheduled_s >= 0 || st.seq->computed != 0)
    throw std::logic_error("RequestLedger::park: request " + std::to_string(id) +
                           " has been scheduled");
  const auto r = static_cast<std::size_t>(st.rank);
  m_parked_compute.at(r) += st.seq->remaining();
  m_parked_cached.at(r) += st.seq->cached_tokens;
  ++m_parked;
  if (&st == m_staged.get()) {  // never in the table
    unstage();
    return;
  }
  std::unique_ptr<RequestState> out;
  m_live.erase(id, &out);
  recycle(std::move(out));
}

RequestState& RequestLedger::unpark(const ArrivedRequest& rec) {
  const auto r = static_cast<std::size_t>(rec.rank);
  if (find(rec.id) || m_parked == 0)
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
  const auto add = [&](const RequestState& st) {
    if (r < 0 || st.rank == r) n += st.seq->remaining();
  };
  m_live.for_each([&](std::uint64_t, const std::unique_ptr<RequestState>& st) { add(*st); });
  if (m_staged_live && m_staged->seq) add(*m_staged);
  return n;
}

std::int64_t RequestLedger::pending_load_tokens(int r) const {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < m_parked_cached.size(); ++i)
    if (r < 0 || static_cast<int>(i) == r) n += m_parked_cached[i];
  const auto add = [&](const RequestState& st) {
    if ((r < 0 || st.rank == r) && st.seq->first_scheduled_s < 0) n += st.seq->cached_tokens;
  };
  m_live.for_each([&](std::uint64_t, const std::unique_ptr<RequestState>& st) { add(*st); });
  if (m_staged_live && m_staged->seq) add(*m_staged);
  return n;
}

}  // namespace kappasim
