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
#include <map>
#include <vector>

#include "serving/request_state.hpp"

namespace kappasim {

class RequestLedger {
 public:
  explicit RequestLedger(std::size_t ranks)
      : m_per_rank(ranks, 0), m_parked_compute(ranks, 0), m_parked_cached(ranks, 0) {}

  // Request `id`'s state, arrived on rank `rank` (a fresh state; rank set).
  RequestState& open(std::uint64_t id, int rank);
  RequestState& at(std::uint64_t id) { return m_live.at(id); }
  const RequestState& at(std::uint64_t id) const { return m_live.at(id); }
  // Drops request `id`'s whole state (it finished, was rejected or never entered a queue).
  void close(std::uint64_t id);
  // A waiting request kept as its compact record (serving/scheduler.hpp ArrivedRequest): park
  // drops its state but keeps it counted (on its rank, with its compute and cached tokens, as
  // nothing of it is scheduled yet); unpark opens its state again, to be filled from the record
  // (unpack_arrival), and returns it.
  void park(std::uint64_t id);
  RequestState& unpark(const ArrivedRequest& rec);
  std::size_t size() const { return m_live.size() + m_parked; }
  bool empty() const { return size() == 0; }

  // Rank r's requests (r >= 0) or every rank's (r < 0): how many, their prompt tokens still to
  // compute, and the cached tokens of those not yet scheduled (whose load is still ahead).
  std::size_t outstanding(int r = -1) const;
  std::int64_t compute_tokens(int r = -1) const;
  std::int64_t pending_load_tokens(int r = -1) const;

 private:
  std::map<std::uint64_t, RequestState> m_live;
  std::vector<std::size_t> m_per_rank;  // live requests per rank, parked ones included
  // Parked requests: how many, and per rank their compute and cached tokens (all still ahead).
  std::size_t m_parked = 0;
  std::vector<std::int64_t> m_parked_compute, m_parked_cached;
};

}  // namespace kappasim
