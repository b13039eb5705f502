// serving/request_ledger: the engine's per-request ledger. Requests are opened on ranks and
// closed; the ledger's counts and token sums are checked against sums worked out by hand from the
// sequences' fields (remaining = compute_tokens - computed; a request not yet scheduled still has
// its cached tokens to load).
#include <gtest/gtest.h>

#include <memory>

#include "serving/request_ledger.hpp"

namespace kappasim {
namespace request_ledger_test {
namespace {

// A live request on `rank` with `compute` prompt tokens to compute, `done` of them computed,
// `cached` tokens cached, scheduled or not.
void open(RequestLedger& l, std::uint64_t id, int rank, std::int64_t compute, std::int64_t done,
          std::int64_t cached, bool scheduled) {
  RequestState& st = l.open(id, rank);
  st.seq = std::make_unique<Sequence>();
  st.seq->req.id = id;
  st.seq->compute_tokens = compute;
  st.seq->computed = done;
  st.seq->cached_tokens = cached;
  st.seq->first_scheduled_s = scheduled ? 0.5 : -1;
}

TEST(RequestLedger, CountsAndSumsPerRankAndOverAll) {
  RequestLedger l(3);
  open(l, 7, 0, 100, 0, 400, false);  // rank 0: 100 to compute, 400 to load
  open(l, 8, 0, 50, 20, 200, true);   // rank 0: 30 to compute, its load done
  open(l, 9, 2, 10, 0, 30, false);    // rank 2: 10 to compute, 30 to load
  EXPECT_EQ(l.size(), 3u);
  EXPECT_EQ(l.at(9).rank, 2);
  EXPECT_EQ(l.outstanding(), 3u);
  EXPECT_EQ(l.outstanding(0), 2u);
  EXPECT_EQ(l.outstanding(1), 0u);
  EXPECT_EQ(l.outstanding(2), 1u);
  EXPECT_EQ(l.compute_tokens(0), 100 + 30);
  EXPECT_EQ(l.compute_tokens(), 100 + 30 + 10);
  EXPECT_EQ(l.pending_load_tokens(0), 400);
  EXPECT_EQ(l.pending_load_tokens(), 400 + 30);
  // Closing drops the whole state and the rank's count; closing twice is a no-op.
  l.close(7);
  l.close(7);
  EXPECT_EQ(l.outstanding(0), 1u);
  EXPECT_EQ(l.pending_load_tokens(), 30);
  EXPECT_THROW(l.at(7), std::out_of_range);
  l.close(8);
  l.close(9);
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(l.outstanding(2), 0u);
}

}  // namespace
}  // namespace request_ledger_test
}  // namespace kappasim
