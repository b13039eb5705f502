// The scheduler's compact waiting queue (issue 24): a fresh arrival waits as an ArrivedRequest
// (serving/scheduler.hpp) and its RequestState and Sequence are built when the scheduler first
// needs them (serving/request_state.hpp pack_arrival / unpack_arrival, Scheduler::set_builder,
// RequestLedger::park / unpark). Every registered policy must admit in the same order, with the
// same passed-over counts, from a queue of records as from a queue of sequences; a record gives
// back the state it was packed from; the ledger's router figures count parked requests.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serving/paged_kv.hpp"
#include "serving/request_ledger.hpp"
#include "serving/request_state.hpp"
#include "serving/scheduler.hpp"

namespace kappasim {
namespace compact_queue_test {
namespace {

Request req(std::uint64_t id, std::int64_t prefix, std::int64_t fresh, double arrival) {
  Request r;
  r.id = id;
  r.arrival_s = arrival;
  r.sequence_id = 100 + id % 3;
  r.prefix_tokens = prefix;
  r.new_tokens = fresh;
  r.output_tokens = 1 + static_cast<std::int64_t>(id % 4);
  r.workload = "compact-queue-test";
  return r;
}

// A state as the engine builds one at arrival: K_hit = the prefix, R leading tokens recomputed.
std::unique_ptr<RequestState> arrival_state(const Request& r, int rank, std::int64_t recompute,
                                            bool decode) {
  auto st = std::make_unique<RequestState>();
  st->rank = rank;
  st->seq = std::make_unique<Sequence>(make_sequence(r, r.prefix_tokens));
  if (decode) st->seq->output_tokens = std::max<std::int64_t>(1, r.output_tokens);
  if (recompute > 0) {
    set_tier_split(*st->seq, recompute);
    st->recompute_tokens = recompute;
  }
  st->cached_tokens = st->seq->cached_tokens;
  st->compute_tokens = st->seq->compute_tokens;
  return st;
}

// One scheduler fed the same arrivals either as sequences or as compact records, run for a
// number of steps; what it admitted (request ids per step), the passed-over counts and how many
// records it built.
struct Trial {
  std::vector<std::vector<std::uint64_t>> admitted;
  std::map<std::uint64_t, double> credit;
  std::map<std::uint64_t, std::int64_t> cached_at_admission;
  int built = 0;
  int preemptions = 0;
};

Trial run_policy(const char* policy, bool compact, bool chunked, KvAllocation alloc) {
  SchedulerConfig cfg;
  cfg.policy = Policy{policy};
  cfg.max_num_seqs = 3;
  cfg.max_num_batched_tokens = 2048;
  cfg.chunked_prefill = chunked;
  cfg.fairness_max_wait_s = 1.5;
  cfg.kv_allocation = alloc;
  Scheduler s(cfg);
  PagedKv kv(160, 16);  // 2,560 tokens: a few prompts at once, so admission must choose
  std::map<std::uint64_t, std::unique_ptr<RequestState>> states;
  Trial t;
  s.set_builder([&](const ArrivedRequest& rec) {
    ++t.built;
    auto st = std::make_unique<RequestState>();
    unpack_arrival(rec, *st);
    Sequence* seq = st->seq.get();
    states[rec.id] = std::move(st);
    return seq;
  });
  // Twelve arrivals over the first steps: prompts of 200..1,900 tokens, cached 0..1,200.
  const std::int64_t prefix[] = {1200, 0, 300, 800, 0, 1100, 64, 500, 0, 900, 256, 40};
  const std::int64_t fresh[] = {700, 1500, 100, 900, 400, 600, 1800, 250, 1200, 300, 1000, 160};
  std::size_t next = 0;
  double now = 0;
  for (int step = 0; step < 40; ++step, now += 0.5) {
    // Two arrivals per step until all twelve are in.
    for (int k = 0; k < 2 && next < 12; ++k, ++next) {
      const Request r = req(next + 1, prefix[next], fresh[next], now);
      auto st = arrival_state(r, 0, next % 5 == 2 ? 32 : 0, true);
      s.enqueue(st->seq.get(), now);
      if (compact) {
        const std::optional<ArrivedRequest> rec = pack_arrival(*st);
        EXPECT_TRUE(rec.has_value());
        s.compact_back(st->seq.get(), *rec);
        st.reset();  // the record is all that is left of it
      } else {
        states[r.id] = std::move(st);
      }
    }
    StepPlan p = s.plan(now, kv);
    std::vector<std::uint64_t> ids;
    for (const StepItem& it : p.items)
      if (it.first) {
        ids.push_back(it.seq->req.id);
        t.cached_at_admission[it.seq->req.id] = it.seq->cached_tokens;
      }
    t.admitted.push_back(ids);
    s.complete(p, now + 0.25, kv);
    for (Sequence* f : s.take_finished()) {
      t.credit[f->req.id] = f->credit;
      t.preemptions += f->preemptions;
    }
  }
  EXPECT_TRUE(s.idle()) << policy;
  return t;
}

TEST(CompactQueue, EveryPolicyAdmitsAsFromAQueueOfSequences) {
  // The runs must preempt: by chunk, a running prefill's next chunk finds its blocks taken.
  int preempted = 0;
  for (const auto& [name, p] : policy_names())
    for (bool chunked : {true, false})
      for (KvAllocation alloc : {KvAllocation::Prompt, KvAllocation::Chunk}) {
        if (!chunked && alloc == KvAllocation::Chunk) continue;
        const Trial whole = run_policy(name, false, chunked, alloc);
        const Trial compact = run_policy(name, true, chunked, alloc);
        EXPECT_EQ(compact.admitted, whole.admitted) << name << " chunked " << chunked;
        EXPECT_EQ(compact.credit, whole.credit) << name << " chunked " << chunked;
        EXPECT_EQ(compact.cached_at_admission, whole.cached_at_admission) << name;
        EXPECT_EQ(compact.credit.size(), 12u) << name;  // every request finished
        EXPECT_EQ(compact.preemptions, whole.preemptions) << name;
        EXPECT_GT(compact.built, 0) << name;
        EXPECT_EQ(whole.built, 0) << name;  // nothing compact, nothing built
        preempted += whole.preemptions;
      }
  EXPECT_GT(preempted, 0);
}

// fifo with one seat: a step tries the head only (the seat check comes first), so one record is
// built per admission and the rest of the queue stays compact.
TEST(CompactQueue, FifoBuildsOnlyTheHead) {
  SchedulerConfig cfg;
  cfg.max_num_seqs = 1;
  Scheduler s(cfg);
  PagedKv kv(1000, 16);
  std::vector<std::unique_ptr<RequestState>> built;
  s.set_builder([&](const ArrivedRequest& rec) {
    built.push_back(std::make_unique<RequestState>());
    unpack_arrival(rec, *built.back());
    return built.back()->seq.get();
  });
  for (std::uint64_t id = 1; id <= 5; ++id) {
    auto st = arrival_state(req(id, 0, 100, 0), 0, 0, false);
    s.enqueue(st->seq.get(), 0);
    s.compact_back(st->seq.get(), *pack_arrival(*st));
  }
  StepPlan p = s.plan(0, kv);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].seq->req.id, 1u);
  EXPECT_EQ(built.size(), 1u);
  EXPECT_EQ(s.waiting(), 4u);
  ASSERT_NE(s.waiting_front(), nullptr);  // builds the new head, request 2
  EXPECT_EQ(s.waiting_front()->req.id, 2u);
  EXPECT_EQ(built.size(), 2u);
}

// A record gives back every field the engine set at arrival.
TEST(CompactQueue, UnpackGivesBackThePackedState) {
  Request r = req(7, 3000, 500, 1.25);
  r.extends_sequence = true;
  r.block_tokens = 0;
  auto st = arrival_state(r, 3, 512, true);
  st->seq->async_kv = true;
  st->seq->enqueue_s = 1.5;
  st->seq->arrival_seq = 41;
  const std::optional<ArrivedRequest> rec = pack_arrival(*st);
  ASSERT_TRUE(rec.has_value());
  RequestState back;
  unpack_arrival(*rec, back);
  const Sequence &a = *st->seq, &b = *back.seq;
  EXPECT_EQ(b.req.id, 7u);
  EXPECT_EQ(b.req.arrival_s, 1.25);
  EXPECT_EQ(b.req.sequence_id, r.sequence_id);
  EXPECT_EQ(b.req.prefix_tokens, 3000);
  EXPECT_EQ(b.req.new_tokens, 500);
  EXPECT_EQ(b.req.output_tokens, r.output_tokens);
  EXPECT_TRUE(b.req.extends_sequence);
  EXPECT_EQ(b.req.workload, "compact-queue-test");
  // K_hit 3,000 (prompt 3,500 keeps 500 to compute), 512 of them recomputed.
  EXPECT_EQ(b.cached_tokens, 3000 - 512);
  EXPECT_EQ(b.compute_tokens, 500 + 512);
  EXPECT_EQ(b.recompute_tokens, 512);
  EXPECT_EQ(b.tier_cached, a.tier_cached);
  EXPECT_EQ(b.tier_recompute, a.tier_recompute);
  EXPECT_EQ(b.output_tokens, a.output_tokens);
  EXPECT_EQ(b.enqueue_s, 1.5);
  EXPECT_EQ(b.arrival_seq, 41u);
  EXPECT_TRUE(b.async_kv);
  EXPECT_FALSE(b.pd_handoff);
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.recompute_tokens, 512);
  EXPECT_EQ(back.cached_tokens, 3000 - 512);
  EXPECT_EQ(back.compute_tokens, 500 + 512);
}

// What a record cannot hold keeps the whole state; a scheduled state is refused.
TEST(CompactQueue, PackRefusesWhatTheRecordCannotHold) {
  const Request r = req(1, 1024, 100, 0);
  Request hashed = r;
  hashed.block_hashes = {11, 12};
  EXPECT_FALSE(pack_arrival(*arrival_state(hashed, 0, 0, false)).has_value());
  auto levels = arrival_state(r, 0, 0, false);
  levels->chunk_levels = {0, 1};  // a hit chunk below DRAM: a prefetch may point at the state
  EXPECT_FALSE(pack_arrival(*levels).has_value());
  auto e2e = arrival_state(r, 0, 0, false);
  e2e->front_end_in_s = 0.001;
  EXPECT_FALSE(pack_arrival(*e2e).has_value());
  Request huge = r;
  huge.new_tokens = std::int64_t{1} << 33;
  EXPECT_FALSE(pack_arrival(*arrival_state(huge, 0, 0, false)).has_value());
  auto scheduled = arrival_state(r, 0, 0, false);
  scheduled->seq->first_scheduled_s = 2;
  EXPECT_THROW(pack_arrival(*scheduled), std::logic_error);
}

// A parked request is counted by the ledger as before: on its rank, its compute tokens (prompt
// less K_hit) and its cached tokens still to load.
TEST(CompactQueue, LedgerCountsParkedRequests) {
  RequestLedger ledger(2);
  const Request a = req(1, 1000, 300, 0), b = req(2, 0, 700, 0);
  RequestState& sa = ledger.open(1, 0);
  sa = std::move(*arrival_state(a, 0, 0, false));
  RequestState& sb = ledger.open(2, 1);
  sb = std::move(*arrival_state(b, 1, 0, false));
  const ArrivedRequest ra = *pack_arrival(sa);
  ledger.park(1);
  EXPECT_EQ(ledger.size(), 2u);
  EXPECT_EQ(ledger.outstanding(0), 1u);
  EXPECT_EQ(ledger.outstanding(1), 1u);
  EXPECT_EQ(ledger.compute_tokens(0), 300);
  EXPECT_EQ(ledger.compute_tokens(), 300 + 700);
  EXPECT_EQ(ledger.pending_load_tokens(0), 1000);
  EXPECT_EQ(ledger.pending_load_tokens(1), 0);
  RequestState& back = ledger.unpark(ra);
  unpack_arrival(ra, back);
  EXPECT_EQ(ledger.compute_tokens(0), 300);
  EXPECT_EQ(ledger.pending_load_tokens(), 1000);
  EXPECT_EQ(ledger.at(1).seq->req.id, 1u);
  ledger.close(1);
  ledger.close(2);
  EXPECT_TRUE(ledger.empty());
}

}  // namespace
}  // namespace compact_queue_test
}  // namespace kappasim
