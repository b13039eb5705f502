// The scheduler's compact waiting queue (issue 24): a fresh arrival waits as an ArrivedRequest
// (serving/scheduler.hpp) and its RequestState and Sequence are built when the scheduler first
// needs them (serving/request_state.hpp pack_arrival / unpack_arrival, Scheduler::set_builder,
// RequestLedger::park / unpark). Every registered policy must admit in the same order, with the
// same passed-over counts, from a queue of records as from a queue of sequences; a record gives
// back the state it was packed from; the ledger's router figures count parked requests.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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

// seq_ids: requests on three prefix sequences (their records are boxed); else none (inline).
Request req(std::uint64_t id, std::int64_t prefix, std::int64_t fresh, double arrival,
            bool seq_ids = true) {
  Request r;
  r.id = id;
  r.arrival_s = arrival;
  r.sequence_id = seq_ids ? 100 + id % 3 : 0;
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

Trial run_policy(const char* policy, bool compact, bool chunked, KvAllocation alloc, bool seq_ids) {
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
      const Request r = req(next + 1, prefix[next], fresh[next], now, seq_ids);
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
        // Records boxed (requests on prefix sequences) and held inline (none).
        for (bool seq_ids : {true, false}) {
          const Trial whole = run_policy(name, false, chunked, alloc, seq_ids);
          const Trial compact = run_policy(name, true, chunked, alloc, seq_ids);
          EXPECT_EQ(compact.admitted, whole.admitted) << name << " chunked " << chunked;
          EXPECT_EQ(compact.credit, whole.credit) << name << " chunked " << chunked;
          EXPECT_EQ(compact.cached_at_admission, whole.cached_at_admission) << name;
          EXPECT_EQ(compact.credit.size(), 12u) << name;  // every request finished
          EXPECT_EQ(compact.preemptions, whole.preemptions) << name;
          EXPECT_GT(compact.built, 0) << name;
          EXPECT_EQ(whole.built, 0) << name;  // nothing compact, nothing built
          preempted += whole.preemptions;
        }
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

// ---- WaitingQueue: slots with tombstones ----------------------------------------------------

std::vector<const Sequence*> live(const WaitingQueue& q) {
  std::vector<const Sequence*> out;
  for (const WaitingEntry& e : q) out.push_back(e.seq());
  return out;
}

// An admitted entry leaves a tombstone: every other cursor still points at its own entry, a
// cursor at the tombstone's neighbour steps over it, and the ends are tidied after the phase.
TEST(WaitingQueue, EraseUnderCursorKeepsTheOtherCursors) {
  Sequence s[5];
  WaitingQueue q;
  for (Sequence& x : s) q.push_back(WaitingEntry(&x));
  std::vector<WaitingQueue::const_iterator> cur;
  for (auto it = q.begin(); it != q.end(); ++it) cur.push_back(it);
  ASSERT_EQ(cur.size(), 5u);
  q.kill(cur[1].index());  // s[1] admitted
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.slots(), 5u);
  EXPECT_EQ(cur[0]->seq(), &s[0]);
  EXPECT_EQ(cur[2]->seq(), &s[2]);
  EXPECT_EQ(cur[4]->seq(), &s[4]);
  auto next = cur[0];
  ++next;  // over the tombstone
  EXPECT_EQ(next->seq(), &s[2]);
  EXPECT_EQ(next, cur[2]);
  q.kill(cur[4].index());
  q.kill(cur[0].index());
  EXPECT_EQ(q.begin()->seq(), &s[2]);
  EXPECT_EQ(live(q), (std::vector<const Sequence*>{&s[2], &s[3]}));
  q.tidy();  // both ends' tombstones go; one dead (s[1]) is gone with the front, none is left
  EXPECT_EQ(q.slots(), 2u);
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(live(q), (std::vector<const Sequence*>{&s[2], &s[3]}));
  EXPECT_THROW(q.kill(5), std::logic_error);  // past the queue
}

// Tombstones in the middle stay until they outnumber the live entries; then the queue is
// compacted in order.
TEST(WaitingQueue, TombstonesAreCompactedOnceTheyOutnumberTheLive) {
  Sequence s[10];
  WaitingQueue q;
  for (Sequence& x : s) q.push_back(WaitingEntry(&x));
  for (std::size_t i : {1, 3, 5, 7, 9}) q.kill(i);
  EXPECT_THROW(q.kill(3), std::logic_error);  // dead already
  q.tidy();  // slot 9 goes with the back; 4 dead against 5 live: kept
  EXPECT_EQ(q.slots(), 9u);
  EXPECT_EQ(q.size(), 5u);
  q.kill(2);  // 5 dead (1, 2, 3, 5, 7) against 4 live (0, 4, 6, 8)
  q.tidy();
  EXPECT_EQ(q.slots(), 4u);
  EXPECT_EQ(live(q), (std::vector<const Sequence*>{&s[0], &s[4], &s[6], &s[8]}));
  // A preempted sequence goes to the front.
  Sequence p;
  q.push_front(WaitingEntry(&p));
  EXPECT_EQ(live(q), (std::vector<const Sequence*>{&p, &s[0], &s[4], &s[6], &s[8]}));
}

// Chunks of 1,024 slots: the front's are freed as the head leaves them, push_front opens one
// before the first, and at most one spare is kept past the last slot.
TEST(WaitingQueue, ChunksFollowTheSlots) {
  std::vector<Sequence> s(2500);
  WaitingQueue q;
  for (Sequence& x : s) q.push_back(WaitingEntry(&x));
  EXPECT_EQ(q.chunks(), 3u);  // 1,024 + 1,024 + 452
  for (std::size_t i = 0; i < 1100; ++i) q.kill(i);
  q.tidy();  // the head at slot 1,100: the first chunk is freed
  EXPECT_EQ(q.slots(), 1400u);
  EXPECT_EQ(q.chunks(), 2u);
  EXPECT_EQ(q.begin()->seq(), &s[1100]);
  for (std::size_t i = 0; i < 1400; ++i) q.kill(i);
  q.tidy();  // empty: one chunk kept
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.slots(), 0u);
  EXPECT_EQ(q.chunks(), 1u);
  Sequence a, b, c;
  q.push_front(WaitingEntry(&a));  // before slot 0 of the kept chunk: a new chunk
  q.push_front(WaitingEntry(&b));
  q.push_back(WaitingEntry(&c));
  EXPECT_EQ(q.chunks(), 2u);
  EXPECT_EQ(live(q), (std::vector<const Sequence*>{&b, &a, &c}));
}

// A record given to the builder equals the one compacted, field for field, whether the queue
// held it inline or boxed, and after passed-over counts were added to it.
TEST(WaitingQueue, RecordsComeBackBitForBit) {
  SchedulerConfig cfg;
  Scheduler sched(cfg);
  std::vector<ArrivedRequest> got;
  std::vector<std::unique_ptr<Sequence>> made;
  sched.set_builder([&](const ArrivedRequest& rec) {
    got.push_back(rec);
    made.push_back(std::make_unique<Sequence>(make_sequence(req(rec.id, 0, 100, 0, false), 0)));
    return made.back().get();
  });
  std::vector<ArrivedRequest> sent;
  const auto add = [&](std::uint64_t id, std::uint64_t sequence_id, double arrival, double enqueue,
                       const char* workload) {
    Sequence s = make_sequence(req(id, 0, 100, arrival, false), 0);
    sched.enqueue(&s, enqueue);
    ArrivedRequest rec;
    rec.id = id;
    rec.sequence_id = sequence_id;
    rec.arrival_s = arrival;
    rec.enqueue_s = enqueue;
    rec.workload = workload;
    rec.arrival_seq = static_cast<std::uint32_t>(s.arrival_seq);
    rec.credit = 7;
    rec.prefix_tokens = 300;
    rec.new_tokens = 100 + static_cast<std::int32_t>(id);
    rec.output_tokens = 5;
    rec.block_tokens = 16;
    rec.cached_tokens = 250;
    rec.recompute_tokens = 20;
    rec.rank = 2;
    rec.flags = ArrivedRequest::kDecodes | ArrivedRequest::kStateCached;
    sched.compact_back(&s, rec);
    sent.push_back(rec);
  };
  const double t = 12.345678901234567;
  add(1, 0, t, t + 3e-13, "w");                   // inline: a 1 ps rounding's difference
  add(2, 0, 0.1, 0.3, "w");                       // 0.1 − 0.3 is no float: boxed
  add(3, 42, 1, 1, "w");                          // a sequence id: boxed
  add(std::uint64_t{1} << 33, 0, 2, 2, "other");  // an id beyond 32 bits: boxed
  add(5, 0, -0.0, 0.0, "other");                  // −0 is not 0 + 0: boxed
  add(6, 0, 4, 4, "other");                       // inline, the second (workload, block, rank)
  ASSERT_NE(sched.waiting_front(), nullptr);      // builds the head
  EXPECT_EQ(got.size(), 1u);
  PagedKv kv(1000, 16);
  StepPlan p = sched.plan(0, kv);
  EXPECT_EQ(p.items.size(), sent.size());  // every one admitted in the first step
  EXPECT_EQ(sched.waiting(), 0u);
  sched.complete(p, 1, kv);
  ASSERT_EQ(got.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const ArrivedRequest &a = sent[i], &b = got[i];
    EXPECT_EQ(b.id, a.id) << i;
    EXPECT_EQ(b.sequence_id, a.sequence_id) << i;
    EXPECT_EQ(std::memcmp(&b.arrival_s, &a.arrival_s, sizeof(double)), 0) << i;
    EXPECT_EQ(std::memcmp(&b.enqueue_s, &a.enqueue_s, sizeof(double)), 0) << i;
    EXPECT_EQ(b.workload, a.workload) << i;
    EXPECT_EQ(b.arrival_seq, a.arrival_seq) << i;
    EXPECT_EQ(b.credit, 7u) << i;
    EXPECT_EQ(b.prefix_tokens, 300) << i;
    EXPECT_EQ(b.new_tokens, a.new_tokens) << i;
    EXPECT_EQ(b.output_tokens, 5) << i;
    EXPECT_EQ(b.block_tokens, 16) << i;
    EXPECT_EQ(b.cached_tokens, 250) << i;
    EXPECT_EQ(b.recompute_tokens, 20) << i;
    EXPECT_EQ(b.rank, 2) << i;
    EXPECT_EQ(b.flags, a.flags) << i;
  }
}

// A passed-over count past the inline field's 16 bits: the record is boxed and counts on.
// shortest_load with two seats: request 3 (nothing cached) goes ahead of request 2 (100 cached
// tokens) and takes the last seat, so request 2 is passed over without being tried (built).
TEST(WaitingQueue, PassedOverCountsOutgrowTheInlineField) {
  SchedulerConfig cfg;
  cfg.policy = Policy{"shortest_load"};
  cfg.max_num_seqs = 2;
  Scheduler sched(cfg);
  std::vector<ArrivedRequest> got;
  std::vector<std::unique_ptr<Sequence>> made;
  sched.set_builder([&](const ArrivedRequest& rec) {
    got.push_back(rec);
    made.push_back(std::make_unique<Sequence>(
        make_sequence(req(rec.id, 0, rec.new_tokens, rec.arrival_s, false), rec.cached_tokens)));
    made.back()->enqueue_s = rec.enqueue_s;
    made.back()->arrival_seq = rec.arrival_seq;
    made.back()->credit = rec.credit;
    return made.back().get();
  });
  PagedKv kv(100, 16);
  // R: decoding 100 tokens, so it keeps its seat.
  Sequence r = make_sequence(req(1, 0, 160, 0, false), 0);
  r.output_tokens = 100;
  sched.enqueue(&r, 0);
  StepPlan p = sched.plan(0, kv);
  ASSERT_EQ(p.items.size(), 1u);
  sched.complete(p, 0.1, kv);
  const auto add = [&](std::uint64_t id, std::int32_t cached, std::uint32_t credit) {
    Sequence s = make_sequence(req(id, 0, 160, 0.2, false), cached);
    sched.enqueue(&s, 0.2);
    ArrivedRequest rec;
    rec.id = id;
    rec.arrival_s = rec.enqueue_s = 0.2;
    rec.arrival_seq = static_cast<std::uint32_t>(s.arrival_seq);
    rec.credit = credit;
    rec.new_tokens = 160;
    rec.cached_tokens = cached;
    sched.compact_back(&s, rec);
  };
  add(2, 100, 65535);
  add(3, 0, 0);
  p = sched.plan(0.2, kv);
  ASSERT_EQ(p.items.size(), 2u);  // R's decode token and request 3
  EXPECT_EQ(p.items[1].seq->req.id, 3u);
  ASSERT_EQ(got.size(), 1u);  // request 2 was not tried
  ASSERT_NE(sched.waiting_front(), nullptr);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].id, 2u);
  EXPECT_EQ(got[1].credit, 65536u);
}

}  // namespace
}  // namespace compact_queue_test
}  // namespace kappasim
