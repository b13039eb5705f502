// The serving engine's per-request ledger (issue 21: one per-request map): one RequestState for
// every request that arrived and has not finished, keyed by request id, opened when the request
// arrives on a rank and closed in one place when it finishes or is rejected, with how many each
// rank holds. It answers the questions a router asks about the requests in the system (how many,
// their prompt tokens still to prefill, the cached tokens still to load), for one rank or all.
// What a request's state holds is serving/request_state.hpp; the ranks' KV pools and stores are
// asked elsewhere (serving/rank_view.hpp). Plain C++; no SystemC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/id_table.hpp"
#include "serving/request_state.hpp"

namespace kappasim {

class RequestLedger {
 public:
  explicit RequestLedger(std::size_t ranks)
      : m_per_rank(ranks, 0), m_parked_compute(ranks, 0), m_parked_cached(ranks, 0) {}

  // Request `id`'s state, arrived on rank `rank` (a fresh state, no sequence yet; rank set).
  RequestState& open(std::uint64_t id, int rank);
  // An arrival's state while it is admitted (issue 24: most arrivals are parked at once, so their
  // state never enters the table): like open(), but held apart until commit() puts it in the
  // table (at its address: pointers to it stay valid) or park() / close() drops it. At most one
  // at a time (std::logic_error); at(), size() and the sums see it as an open one.
  RequestState& stage(std::uint64_t id, int rank);
  void commit();
  bool staged() const { return m_staged_live; }
  // std::out_of_range when request `id` is not live.
  RequestState& at(std::uint64_t id) { return *find_or_throw(id); }
  const RequestState& at(std::uint64_t id) const { return *find_or_throw(id); }
  // Gives st (no sequence yet) a sequence, s moved in: a spare one's storage when one is kept
  // (the sequence of a state closed or parked), else a new one (issue 24: no allocation per
  // request). Returns it.
  Sequence& seat(RequestState& st, Sequence&& s);
  // Drops request `id`'s whole state (it finished, was rejected or never entered a queue).
  void close(std::uint64_t id);
  // A waiting request kept as its compact record (serving/scheduler.hpp ArrivedRequest): park
  // drops its state but keeps it counted (on its rank, with its compute and cached tokens, as
  // nothing of it is scheduled yet); unpark opens its state again, to be filled from the record
  // (unpack_arrival), and returns it (holding a spare sequence when one is kept, whose storage
  // unpack_arrival fills).
  void park(std::uint64_t id);
  RequestState& unpark(const ArrivedRequest& rec);
  std::size_t size() const { return m_live.size() + m_parked + (m_staged_live ? 1 : 0); }
  bool empty() const { return size() == 0; }

  // Rank r's requests (r >= 0) or every rank's (r < 0): how many, their prompt tokens still to
  // compute, and the cached tokens of those not yet scheduled (whose load is still ahead).
  std::size_t outstanding(int r = -1) const;
  std::int64_t compute_tokens(int r = -1) const;
  std::int64_t pending_load_tokens(int r = -1) const;

 private:
  RequestState* find_or_throw(std::uint64_t id) const;
  // The state of live request id (staged included), or nullptr.
  RequestState* find(std::uint64_t id) const;
  // Drops the staged state (counted, parked or not, by the caller).
  void unstage();

  RequestState& insert(std::uint64_t id);          // a fresh state for id (not live)
  void recycle(std::unique_ptr<RequestState> st);  // to m_spare, fresh, its sequence kept apart

  // The live states by id (core/id_table: issue 24, a hash and a probe or two instead of a
  // tree's descent; at() is asked several times per request per step), each state on the heap
  // (its address is stable: steps and stores hold pointers to it). A closed or parked state goes
  // back to m_spare with its buffers, so a request's state costs no allocation. Nothing reads
  // the states in table order but integer sums.
  static constexpr std::size_t kSpare = 256;  // spare states and sequences kept, at most
  IdTable<std::unique_ptr<RequestState>> m_live;
  std::unique_ptr<RequestState> m_staged;  // stage()'s state (kept between arrivals)
  std::uint64_t m_staged_id = 0;
  bool m_staged_live = false;
  std::vector<std::unique_ptr<RequestState>> m_spare;  // fresh states (no sequence)
  std::vector<std::unique_ptr<Sequence>> m_spare_seqs;
  std::vector<std::size_t> m_per_rank;  // live requests per rank, parked ones included
  // Parked requests: how many, and per rank their compute and cached tokens (all still ahead).
  std::size_t m_parked = 0;
  std::vector<std::int64_t> m_parked_compute, m_parked_cached;
};

}  // namespace kappasim
