// serving/request_ledger: the engine's per-request ledger. Requests are opened on ranks and
// closed; the ledger's counts and token sums are checked against sums worked out by hand from the
// sequences' fields (remaining = compute_tokens - computed; a request not yet scheduled still has
// its cached tokens to load).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "core/id_table.hpp"
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

// core/id_table (issue 24): the same answers as a std::map under random insertions and erasures
// of clustered and spread ids (backward-shift deletion keeps every probe run whole).
TEST(IdTable, AgreesWithAMap) {
  std::mt19937_64 rng(24);
  IdTable<std::int64_t> t;
  std::map<std::uint64_t, std::int64_t> m;
  for (int op = 0; op < 20000; ++op) {
    const std::uint64_t id = op % 3 == 0 ? rng() : rng() % 300;
    if (rng() % 3 == 0) {
      std::int64_t out = -1;
      const bool had = m.erase(id) != 0;
      ASSERT_EQ(t.erase(id, &out), had);
    } else if (!m.count(id)) {
      m[id] = op;
      t.insert(id, op);
    }
    ASSERT_EQ(t.size(), m.size());
    if (op % 97 == 0) {
      for (const auto& [k, v] : m) ASSERT_TRUE(t.find(k) && *t.find(k) == v);
      std::size_t n = 0;
      t.for_each([&](std::uint64_t k, std::int64_t v) {
        ++n;
        EXPECT_EQ(m.at(k), v);
      });
      EXPECT_EQ(n, m.size());
    }
  }
}

// A closed state comes back fresh (its storage reused, issue 24): no sequence, defaults only.
TEST(RequestLedger, ReusedStatesAreFresh) {
  RequestLedger l(1);
  for (std::uint64_t id = 1; id <= 40; ++id) {
    RequestState& st = l.open(id, 0);
    EXPECT_FALSE(st.seq);
    EXPECT_EQ(st.steps, 0);
    EXPECT_TRUE(st.chunk_levels.empty());
    EXPECT_FALSE(st.load_bounds);
    Sequence s;
    s.req.id = id;
    s.compute_tokens = 5;
    Sequence& q = l.seat(st, std::move(s));
    EXPECT_EQ(q.req.id, id);
    EXPECT_EQ(q.computed, 0);
    q.computed = 3;  // dirty it: a reused sequence is overwritten whole
    st.steps = 7;
    st.chunk_levels = {1, 2};
    st.load_bounds = LoadBoundTimes{};
    if (id % 4 != 0) l.close(id);
  }
  EXPECT_EQ(l.size(), 10u);
  EXPECT_EQ(l.compute_tokens(), 10 * 2);
}

// make_request_record into a reused record sets every field: the same bytes as a fresh one.
TEST(RequestLedger, RecordIntoAReusedRecordEqualsAFreshOne) {
  RequestState st;
  st.seq = std::make_unique<Sequence>();
  st.seq->req.id = 9;
  st.seq->req.arrival_s = 1.5;
  st.seq->req.workload = "w";
  st.seq->first_scheduled_s = 2;
  st.seq->generated = 1;
  st.compute_tokens = 100;
  st.steps = 2;
  RequestRecord dirty = make_request_record(st, 3.0, 2.0, 8, "kernel");
  dirty.meets_slo = true;
  dirty.load_bound = "link";
  dirty.load_bound_s.s[0] = 1;
  dirty.workload = "a much longer workload name than the other";
  make_request_record(dirty, st, 3.25, 2.0, 8, "layerwise");
  const RequestRecord fresh = make_request_record(st, 3.25, 2.0, 8, "layerwise");
  EXPECT_EQ(dirty.workload, fresh.workload);
  EXPECT_EQ(dirty.load_path, fresh.load_path);
  EXPECT_EQ(dirty.load_bound, fresh.load_bound);
  EXPECT_EQ(dirty.meets_slo, fresh.meets_slo);
  EXPECT_EQ(std::memcmp(&dirty.load_bound_s, &fresh.load_bound_s, sizeof fresh.load_bound_s), 0);
  EXPECT_EQ(RequestsCsvWriter::row(dirty, true, true), RequestsCsvWriter::row(fresh, true, true));
}

// A staged arrival (issue 24) counts as an open one; parking or closing drops it, commit keeps it
// at its address.
TEST(RequestLedger, StagedArrivalsCountAsOpen) {
  RequestLedger l(2);
  RequestState& a = l.stage(1, 1);
  Sequence s;
  s.req.id = 1;
  s.compute_tokens = 40;
  s.cached_tokens = 8;
  l.seat(a, std::move(s));
  EXPECT_TRUE(l.staged());
  EXPECT_EQ(l.size(), 1u);
  EXPECT_EQ(l.outstanding(1), 1u);
  EXPECT_EQ(l.compute_tokens(1), 40);
  EXPECT_EQ(l.pending_load_tokens(), 8);
  EXPECT_EQ(&l.at(1), &a);
  EXPECT_THROW(l.stage(2, 0), std::logic_error);  // one at a time
  l.park(1);
  EXPECT_FALSE(l.staged());
  EXPECT_EQ(l.size(), 1u);
  EXPECT_EQ(l.compute_tokens(1), 40);
  EXPECT_THROW(l.at(1), std::out_of_range);
  RequestState& b = l.stage(2, 0);
  EXPECT_FALSE(b.seq);  // fresh
  l.seat(b, Sequence());
  l.commit();
  EXPECT_EQ(&l.at(2), &b);
  RequestState& c = l.stage(3, 0);
  l.close(3);
  EXPECT_NE(&c, &b);
  EXPECT_EQ(l.outstanding(0), 1u);
  l.close(2);
  EXPECT_EQ(l.size(), 1u);  // the parked one
}

}  // namespace
}  // namespace request_ledger_test
}  // namespace kappasim
