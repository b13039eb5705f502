// A vLLM-v1-like iteration-level scheduler for prefill with KV offloading; the admission order is
// a pluggable policy (serving/scheduler_policy.hpp, one file each under serving/policies/).
// Pure C++, no SystemC: the engine calls plan() before a step, simulates the step's loads and
// compute, then calls complete(). See docs/scheduler.md.
//
// One step (vLLM v1 Scheduler.schedule, chunked prefill on):
//  1. running sequences first, in admission order: one still prefilling gets min(its remaining
//     compute tokens, the budget left); one decoding (serving.decode) gets one token and the KV
//     slot for it. When no block is free for that slot, the most recently admitted running
//     sequence is preempted (its blocks freed, its progress dropped, back to the front of the
//     waiting queue; vLLM v1's recompute preemption) until the slot fits; a sequence that has
//     to preempt itself stops the running pass;
//  2. then the policy admits waiting sequences through Admission::try_admit, which admits one
//     while the budget, max_num_seqs and the free KV blocks allow. Admission allocates the KV
//     blocks of the cached tokens K (loaded into them in the sequence's first step: the VRAM
//     bound of the κ paper's Eq. 10) and of the new tokens: all T at once
//     (KvAllocation::Prompt, this struct's default) or the first chunk's, each later chunk's in
//     its step (KvAllocation::Chunk, vLLM v1; serving.kv_allocation's default).
// The token budget counts compute tokens only (cached tokens are loaded, not computed, as in
// vLLM where externally cached tokens count as already computed).
//
// Registered policies (serving.policy):
//  - fifo (vLLM FCFS): arrival order; admission stops at the first waiting sequence that does
//    not fit (free KV blocks, or the budget when chunked prefill is off): head-of-line blocking.
//  - utilization (κ paper Fig. 8): first-fit in arrival order over the whole waiting queue:
//    a sequence that does not fit is skipped and later ones that fit are admitted.
//  - fair: utilization plus a wait bound. A waiting sequence that has waited at least
//    fairness_max_wait_s is urgent; urgent sequences are admitted first, oldest first, and when
//    the oldest urgent one does not fit, nothing else is admitted that step (the running ones
//    drain until it fits). Guarantee: a sequence whose prompt fits the empty KV pool waits at
//    most fairness_max_wait_s plus the time to drain what was running (and the urgent ones
//    ahead of it) when it became urgent; utilization alone gives no bound.
//  - shortest_load: first-fit in order of cached tokens to load, fewest first (ties: arrival
//    order); no wait bound (serving/policies/shortest_load.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "serving/paged_kv.hpp"
#include "serving/scheduler_policy.hpp"
#include "workloads/request.hpp"

namespace kappasim {

struct Sequence {  // one request inside the engine
  Request req;
  std::int64_t cached_tokens = 0;   // K_hit: prompt tokens whose KV is loaded from the tier
  std::int64_t compute_tokens = 0;  // prompt tokens to prefill = prompt − cached (>= 1)
  std::int64_t computed = 0;        // prefilled so far
  double enqueue_s = 0, first_scheduled_s = -1, finish_s = -1;
  double credit = 0;  // steps in which a later arrival was admitted while this one waited
                      // (times passed over; the Scheduler counts it for every policy)
  std::uint64_t arrival_seq = 0;  // position in enqueue order (set by Scheduler::enqueue)
  bool kv_allocated = false;
  bool rejected = false;  // the prompt needs more KV blocks than the whole pool: never admitted
  // Decode (serving.decode; 1 = prefill only, the κ regime): output tokens to generate. The
  // prefill's last step produces the first; each decode step one more.
  std::int64_t output_tokens = 1;
  std::int64_t generated = 0;  // output tokens produced so far
  double first_token_s = -1;   // when the first was produced (the end of the prefill: TTFT)
  double last_token_s = -1;    // when the latest was
  int preemptions = 0;         // times preempted because KV blocks ran out (vLLM v1: recompute)
  std::int64_t preempted_kv_tokens = 0;  // tokens whose KV its preemptions discarded
  // async_kv: the KV of its cached tokens reaches its blocks after admission and outside any step
  // (vLLM: WAITING_FOR_REMOTE_KVS), not in its first step: pulled from a P/D prefill instance
  // (serving/cluster, docs/disaggregation.md) or loaded from the tier by a stack that loads
  // asynchronously (serving.stack.load: async, vLLM's OffloadingConnector); kv_resident once it
  // is there. hold_kv: its blocks outlive its finish until the P/D decode instance has pulled
  // them (the engine releases them).
  bool async_kv = false;
  bool pd_handoff = false;  // async_kv from a P/D prefill instance (else from the tier)
  bool kv_resident = false;
  bool hold_kv = false;
  // Preempted with a tier to look in (Scheduler::set_relookup): its next admission first looks its
  // prompt and generated tokens up there (docs/disaggregation.md, "A decode node's KV tier").
  bool relookup = false;
  // In a micro-batch still in flight (pipeline parallelism: Scheduler::plan is not yet completed
  // for it): not scheduled again, nor preempted, until that batch has left the last stage.
  bool in_batch = false;

  // serving.prefix_caching: prompt tokens [0, hbm_hit_tokens) whose KV the GPU's prefix cache
  // held at its latest admission (blocks shared with other requests, PagedKv): neither loaded
  // nor computed. recompute_tokens: the leading tokens of the tier's hit after them that are
  // prefilled again instead of loaded (serving.recompute); the loaded tokens are then
  // [load_start(), load_start() + cached_tokens). tier_cached / tier_recompute: the tier's hit as
  // set at arrival (loaded, recomputed; set_tier_split), which each admission splits around the
  // prefix cache's hit (split_prefix_hit). first_hbm_hit: hbm_hit_tokens at its first admission
  // (-1 before; the request's record reports it).
  std::int64_t hbm_hit_tokens = 0;
  std::int64_t recompute_tokens = 0;
  std::int64_t tier_cached = 0, tier_recompute = 0;
  std::int64_t first_hbm_hit = -1;
  // Prefix caching: its prompt's block keys (computed at its first admission try) and the pool's
  // answers for them at pool generation apc_generation (PagedKv::generation; a waiting sequence
  // tried every step asks again only when the pool's registered blocks changed).
  std::vector<std::uint64_t> block_keys;
  std::uint64_t apc_generation = ~std::uint64_t{0};
  std::int64_t apc_hit = 0, apc_hit_free = 0, apc_cap = -1;
  std::int64_t load_start() const { return hbm_hit_tokens + recompute_tokens; }

  // Tokens to prefill (the prompt; after a preemption of a decoding sequence, the prompt and
  // the tokens generated so far, all recomputed), the prefix cache's hit included.
  std::int64_t prompt_tokens() const { return hbm_hit_tokens + cached_tokens + compute_tokens; }
  std::int64_t remaining() const { return compute_tokens - computed; }
  // Prefill done, output tokens still to come: its next step decodes one token.
  bool decoding() const {
    return computed == compute_tokens && generated > 0 && generated < output_tokens;
  }
  // Tokens whose KV it holds after its next decode step (the prompt and every generated token:
  // the step writes the KV of the latest one, its input).
  std::int64_t decode_kv_tokens() const { return req.prompt_tokens() + generated; }
  // The most KV it ever holds: the prompt and every output token but the last (never fed back).
  std::int64_t max_kv_tokens() const { return req.prompt_tokens() + output_tokens - 1; }
};

// A request that has arrived and waits for its first admission, kept compact (issue 24: an
// overloaded run's queue holds most of its requests, ≈ 0.6 KB each as a RequestState and a
// Sequence). It holds the Request's fields (no block_hashes), the tier hit's split set at
// arrival and the scheduler's queue facts; the engine packs a fresh arrival into one only when
// the record holds everything its state had (pack_arrival, serving/request_state.hpp) and
// builds the state back when the scheduler first needs the whole sequence (Scheduler::Builder):
// when a policy tries to admit it, or it heads the queue at a step's start (its lookup cost).
// The fields a policy orders by without the whole sequence are read through WaitingEntry.
struct ArrivedRequest {
  std::uint64_t id = 0;
  std::uint64_t sequence_id = 0;
  double arrival_s = 0;
  double enqueue_s = 0;
  InternedName workload;
  std::uint32_t arrival_seq = 0;  // Sequence::arrival_seq
  std::uint32_t credit = 0;       // Sequence::credit (a count of steps)
  std::int32_t prefix_tokens = 0, new_tokens = 0, output_tokens = 1;  // the Request's
  std::int32_t block_tokens = 0;
  std::int32_t cached_tokens = 0;     // Sequence::cached_tokens (= tier_cached)
  std::int32_t recompute_tokens = 0;  // Sequence::recompute_tokens (= tier_recompute)
  std::int16_t rank = 0;              // RequestState::rank
  // Request::extends_sequence; Sequence::output_tokens is the request's (else 1); async_kv,
  // pd_handoff, hold_kv; RequestState::cached_tokens is the sequence's (else 0).
  enum : std::uint8_t {
    kExtends = 1,
    kDecodes = 2,
    kAsync = 4,
    kPdHandoff = 8,
    kHoldKv = 16,
    kStateCached = 32
  };
  std::uint8_t flags = 0;
  std::int64_t prompt_tokens() const { return std::int64_t{prefix_tokens} + new_tokens; }
};

// One entry of the scheduler's waiting queue: a sequence (preempted, or built already), an
// arrival's record held inline, or a record boxed on the heap; what a policy may read without
// building the sequence. 44 B, 4-byte aligned (issue 24: an overloaded run's queue holds most of
// its requests; 100,000 requests queue ≈ 67,000 at once). Inline, a record keeps no field that is
// shared or derivable: the workload name, block_tokens and rank are an index into its scheduler's
// small table of those triples (Scheduler::m_kinds), arrival_s is enqueue_s plus a float
// difference (kept only when it gives back arrival_s exactly; the two differ by the kernel's
// 1 ps rounding), and the id in 32 bits; a record that does not fit so (a sequence id, an id
// beyond 32 bits, more than 256 triples, a difference a float does not hold exactly) is boxed:
// the whole ArrivedRequest on the heap, owned by the queue. Trivially copyable.
class WaitingEntry {
 public:
  explicit WaitingEntry(Sequence* s) { set_ptr(s, kSeq); }
  // nullptr while compact (inline or boxed)
  Sequence* seq() const { return form() == kSeq ? static_cast<Sequence*>(ptr()) : nullptr; }
  std::uint64_t id() const {
    switch (form()) {
      case kInline:
        return m_id;
      case kBoxed:
        return boxed()->id;
      default:
        return seq_ptr()->req.id;
    }
  }
  double enqueue_s() const {
    switch (form()) {
      case kInline:
        return time();
      case kBoxed:
        return boxed()->enqueue_s;
      default:
        return seq_ptr()->enqueue_s;
    }
  }
  // K_hit: the cached tokens it loads as things stand (set at arrival; a preemption may change it)
  std::int64_t cached_tokens() const {
    switch (form()) {
      case kInline:
        return m_cached;
      case kBoxed:
        return boxed()->cached_tokens;
      default:
        return seq_ptr()->cached_tokens;
    }
  }
  std::uint64_t arrival_seq() const {
    switch (form()) {
      case kInline:
        return m_arrival_seq;
      case kBoxed:
        return boxed()->arrival_seq;
      default:
        return seq_ptr()->arrival_seq;
    }
  }
  bool dead() const { return form() == kDead; }  // a tombstone (WaitingQueue)

 private:
  friend class Scheduler;
  friend class WaitingQueue;
  // The form, in the top two bits of m_flags; the low six are ArrivedRequest's flags (inline).
  enum : std::uint8_t { kInline = 0, kSeq = 1 << 6, kBoxed = 2 << 6, kDead = 3 << 6 };
  static constexpr std::uint8_t kFormMask = 3 << 6;
  WaitingEntry() = default;  // uninitialised storage (WaitingQueue's chunks)
  std::uint8_t form() const { return m_flags & kFormMask; }
  // enqueue_s (inline) or the pointer (seq, boxed) in m_bits.
  double time() const {
    double t;
    std::memcpy(&t, m_bits, sizeof t);
    return t;
  }
  void set_time(double t) { std::memcpy(m_bits, &t, sizeof t); }
  void* ptr() const {
    void* p;
    std::memcpy(&p, m_bits, sizeof p);
    return p;
  }
  void set_ptr(void* p, std::uint8_t f) {
    std::memcpy(m_bits, &p, sizeof p);
    m_flags = f;
  }
  Sequence* seq_ptr() const { return static_cast<Sequence*>(ptr()); }
  ArrivedRequest* boxed() const { return static_cast<ArrivedRequest*>(ptr()); }

  std::uint32_t m_id;
  std::uint32_t m_bits[2];
  float m_arrival_delta;  // arrival_s − enqueue_s
  std::uint32_t m_arrival_seq;
  std::int32_t m_prefix, m_new, m_output, m_cached, m_recompute;
  std::uint16_t m_credit;
  std::uint8_t m_kind;
  std::uint8_t m_flags;
};
static_assert(sizeof(WaitingEntry) == 44, "WaitingEntry: 44 B, no padding");
static_assert(ArrivedRequest::kStateCached < 64, "ArrivedRequest's flags fit six bits");

// The scheduler's waiting queue: WaitingEntry slots in chunks of 1,024 (no node per entry), in
// queue order, with tombstones. kill() marks a slot dead without moving any other, so a policy's
// cursors (indices) stay valid across the erasures of one admission phase; tidy(), outside it,
// drops the dead slots at both ends and compacts the whole queue (stable) once the dead
// outnumber the live. Iteration skips the dead. Owns the boxed records of its entries.
class WaitingQueue {
 public:
  static constexpr std::size_t kChunk = 1024;
  class const_iterator {
   public:
    const WaitingEntry& operator*() const { return m_q->at(m_i); }
    const WaitingEntry* operator->() const { return &m_q->at(m_i); }
    const_iterator& operator++() {
      m_i = m_q->next_live(m_i + 1);
      return *this;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.m_i == b.m_i;
    }
    friend bool operator!=(const const_iterator& a, const const_iterator& b) {
      return a.m_i != b.m_i;
    }
    std::size_t index() const { return m_i; }  // the slot's position, tombstones included

   private:
    friend class WaitingQueue;
    const_iterator(const WaitingQueue* q, std::size_t i) : m_q(q), m_i(i) {}
    const WaitingQueue* m_q;
    std::size_t m_i;
  };

  WaitingQueue() = default;
  WaitingQueue(const WaitingQueue&) = delete;
  WaitingQueue& operator=(const WaitingQueue&) = delete;
  ~WaitingQueue();

  const_iterator begin() const { return {this, next_live(0)}; }
  const_iterator end() const { return {this, m_count}; }
  std::size_t size() const { return m_live; }  // live entries
  bool empty() const { return m_live == 0; }
  std::size_t slots() const { return m_count; }  // live and dead
  std::size_t chunks() const { return m_chunks.size(); }
  WaitingEntry& at(std::size_t i) {
    const std::size_t p = m_head + i;
    return m_chunks[p / kChunk][p % kChunk];
  }
  const WaitingEntry& at(std::size_t i) const {
    const std::size_t p = m_head + i;
    return m_chunks[p / kChunk][p % kChunk];
  }
  // The first live slot at or after i (slots() when none).
  std::size_t next_live(std::size_t i) const {
    while (i < m_count && at(i).dead()) ++i;
    return i;
  }
  void push_back(const WaitingEntry& e);
  void push_front(const WaitingEntry& e);
  // Marks slot i dead (it must be live and not boxed); other slots keep their positions.
  void kill(std::size_t i);
  void tidy();

 private:
  void release_spare();  // frees the chunks past the last slot but one
  std::vector<std::unique_ptr<WaitingEntry[]>> m_chunks;
  std::size_t m_head = 0;   // slot 0's position in m_chunks[0]
  std::size_t m_count = 0;  // slots, dead ones included
  std::size_t m_live = 0;
};

// A sequence for `r` with K_hit = cached_tokens clamped to [0, prompt − 1]: vLLM always
// recomputes at least the prompt's last token (LMCache logs "hit tokens: 10010, need to load:
// 10009" for a fully cached 10,010-token prompt, LMCache PR 1740).
Sequence make_sequence(const Request& r, std::int64_t cached_tokens);

// Partial recompute at arrival: of s's cached (tier-hit) tokens, the leading `recompute` are
// prefilled again instead of loaded (0 <= recompute <= cached_tokens; std::logic_error
// otherwise). Sets cached, compute, recompute and the tier split the admissions start from.
void set_tier_split(Sequence& s, std::int64_t recompute);

// A prefill of `total` tokens whose tier hit loads `loaded` tokens after `recompute` recomputed
// ones (prompt tokens [recompute, recompute + loaded)), when the prefix cache holds its first
// `hit` tokens: those are neither loaded nor computed; recomputed tokens the hit covers are not
// recomputed, loaded ones it covers are not loaded, the rest is computed.
struct PrefixSplit {
  std::int64_t hit = 0, cached = 0, recompute = 0, compute = 0;
};
PrefixSplit split_prefix_hit(std::int64_t total, std::int64_t loaded, std::int64_t recompute,
                             std::int64_t hit);

// first: the sequence's first step (its cached KV must be loaded this step);
// last: the sequence finishes its prefill this step (its next output token comes from it);
// decode: one decode token (tokens = 1; neither first nor last).
struct StepItem {
  Sequence* seq = nullptr;
  std::int64_t tokens = 0;
  bool first = false;
  bool last = false;
  bool decode = false;
};
struct StepPlan {
  std::vector<StepItem> items;
  std::int64_t tokens = 0;       // compute tokens of the step (<= max_num_batched_tokens)
  std::int64_t load_tokens = 0;  // cached tokens to load this step (sum over first items)
  bool empty() const { return items.empty(); }
};

// When a prefill's KV blocks are allocated (serving.kv_allocation).
enum class KvAllocation {
  Prompt,  // the whole prompt's at admission (vLLM v0's block manager; the κ paper's Eq. 10)
  Chunk,   // at admission its prefix-cache hit, its cached (loaded) tokens and its first chunk;
           // then each step's chunk (vLLM v1's allocate_slots), preempting the most recently
           // admitted running sequence when the blocks are not free, as for a decode token
};

struct SchedulerConfig {
  std::int64_t max_num_batched_tokens = 4096;  // the κ paper's token budget
  int max_num_seqs = 256;
  bool chunked_prefill = true;
  Policy policy = Policy::Fifo;
  double fairness_max_wait_s = 5;  // Fair only; see serving_spec.hpp for the default's basis
  KvAllocation kv_allocation = KvAllocation::Prompt;
  // Plans outstanding at once (vLLM's max_concurrent_batches: the pipeline-parallel size, its
  // engine core's batch queue; 1 without pipeline stages).
  int max_batches = 1;
};

class Scheduler;

// The admission phase of one Scheduler::plan(), as a policy sees it: the waiting queue and one
// operation, try_admit. The resource checks, allocation and rejection are done here, the same for
// every policy; the policy only chooses whom to try, in which order, and when to stop.
class Admission {
 public:
  using Queue = WaitingQueue;
  using Cursor = Queue::const_iterator;
  enum class Outcome {
    Admitted,    // allocated, added to the plan; `it` moved to the next waiting sequence
    Rejected,    // the prompt needs more KV blocks than the whole pool: finished as rejected
                 // (take_finished); `it` moved to the next waiting sequence
    DoesNotFit,  // too few free KV blocks now (or, chunked prefill off, too little budget);
                 // `it` unchanged
    NoRoom,      // the token budget is spent or max_num_seqs sequences run: nothing more can be
                 // admitted this step; `it` unchanged
  };

  double now() const { return m_now; }
  const SchedulerConfig& config() const;
  // The waiting requests in arrival order (a preempted one at the front). try_admit erases the
  // one it admits or rejects (a tombstone); other cursors stay valid, and a cursor to an erased
  // one is refused (std::logic_error).
  const Queue& waiting() const;
  // Compute tokens left in this step's budget.
  std::int64_t budget() const { return m_budget; }
  // Tries the waiting sequence at `it` (checks in this order: room, never fits, fits).
  Outcome try_admit(Cursor& it);

 private:
  friend class Scheduler;
  Admission(Scheduler& s, double now, PagedKv& kv, StepPlan& plan, std::int64_t budget)
      : m_s(s), m_now(now), m_kv(kv), m_plan(plan), m_budget(budget) {}
  Scheduler& m_s;
  double m_now;
  PagedKv& m_kv;
  StepPlan& m_plan;
  std::int64_t m_budget;
  std::uint64_t m_last_admitted_seq = 0;  // the latest arrival admitted this step
  bool m_admitted_any = false;
};

class Scheduler {
 public:
  // std::invalid_argument on a budget or max_num_seqs < 1 or a negative wait bound; InputError
  // when cfg.policy names no registered policy.
  explicit Scheduler(SchedulerConfig cfg);

  // Queues a sequence at time `now` (sets enqueue_s). The sequence must outlive its stay in the
  // scheduler and have compute_tokens >= 1, computed == 0 (std::logic_error otherwise). With
  // chunked prefill off, compute_tokens > max_num_batched_tokens can never be scheduled:
  // InputError (vLLM requires max_num_batched_tokens >= max_model_len then).
  void enqueue(Sequence* s, double now);

  // Compact arrivals (ArrivedRequest). The builder turns a record into its sequence (the engine:
  // its RequestState back in the ledger) when the scheduler first needs the whole sequence; it
  // must return a sequence equal to the one compacted, the queue facts (enqueue_s, arrival_seq,
  // credit) included. compact_back replaces the sequence just enqueued, `s` (the queue's last
  // entry), with `rec`, its record: `s` may be destroyed after (std::logic_error when `s` is not
  // the last entry or no builder is set). The order, admission and every figure are those of
  // the queue of sequences.
  using Builder = std::function<Sequence*(const ArrivedRequest&)>;
  void set_builder(Builder b) { m_build = std::move(b); }
  // A P/D decode engine with its tier (docs/disaggregation.md, "A decode node's KV tier"): a
  // sequence whose preemption discarded pulled or generated KV looks it up again at its next
  // admission (vLLM asks its connectors again, LMCache over request.all_token_ids): the call sets
  // its cached and compute tokens and whether it loads outside the steps. Unset: it recomputes.
  using Relookup = std::function<void(Sequence&)>;
  void set_relookup(Relookup f) { m_relookup = std::move(f); }
  void compact_back(const Sequence* s, const ArrivedRequest& rec);

  // The next step. Allocates KV blocks for admitted sequences. A sequence whose prompt needs
  // more blocks than the whole pool is rejected (rejected = true, finish_s = now, returned by
  // take_finished()), as vLLM rejects a prompt longer than it can ever hold. Returns an empty
  // plan when nothing can run. At most config().max_batches non-empty plans may be outstanding
  // (std::logic_error): complete() each before more; a sequence in an outstanding plan is
  // neither planned nor preempted (vLLM's scheduled_req_ids with pipeline parallelism).
  StepPlan plan(double now, PagedKv& kv);
  // The same into `out` (emptied first; its items' buffer kept: issue 24, no allocation per step).
  void plan(double now, PagedKv& kv, StepPlan& out);

  // Ends the outstanding step: advances `computed`; a sequence that finished its prefill
  // produces its first output token (first_token_s = now), a decoding one its next; one that
  // produced its last output token leaves (finish_s = now, its blocks released) and is returned
  // by take_finished().
  void complete(const StepPlan& plan, double now, PagedKv& kv);

  // The sequences that finished (or were rejected) since the last call, in finishing order.
  std::vector<Sequence*> take_finished();
  // The same into `out` (emptied first), whose buffer the scheduler keeps for the next ones.
  void take_finished(std::vector<Sequence*>& out);

  // An async_kv sequence admitted by plan() takes its blocks and no budget and waits outside the
  // step for its KV (vLLM: WAITING_FOR_REMOTE_KVS); take_pulls() returns those admitted since the
  // last call, for the engine to start their loads or pulls. pulled() makes one running with its
  // KV resident: the next plan() computes its remaining tokens (no load).
  std::vector<Sequence*> take_pulls();
  void pulled(Sequence* s);
  std::size_t pulling() const { return m_pulling.size(); }

  std::size_t waiting() const { return m_waiting.size(); }
  // The oldest waiting sequence (nullptr when none): the one the next step tries first (built
  // from its record if compact).
  Sequence* waiting_front();
  std::size_t running() const { return m_running.size(); }
  bool idle() const { return m_waiting.empty() && m_running.empty() && m_pulling.empty(); }
  const SchedulerConfig& config() const { return m_cfg; }

 private:
  friend class Admission;
  // Tokens of `rem` remaining a sequence can prefill in a step with `budget` left.
  std::int64_t tokens_for(std::int64_t rem, std::int64_t budget) const;
  // Admission's allocation of the blocks of s's first `alloc` tokens, sharing its first `hit`
  // blocks (keys: its prompt's block keys; empty without prefix caching).
  void admit(Sequence* s, std::int64_t tokens, double now, PagedKv& kv, StepPlan& plan,
             const std::vector<std::uint64_t>& keys, std::int64_t hit, std::int64_t alloc);
  void start_pull(Sequence* s, double now, PagedKv& kv, const std::vector<std::uint64_t>& keys,
                  std::int64_t hit, std::int64_t alloc);
  // Prefix caching: registers s's blocks computed or loaded so far (before it may release them).
  static void register_computed(Sequence& s, PagedKv& kv);
  // Prefix caching: registers the block s's decode step just filled, if it filled one.
  static void register_decoded(Sequence& s, PagedKv& kv);
  void reject(Sequence* s, double now);
  void preempt_last(PagedKv& kv);  // the most recently admitted running sequence
  // Grows s's blocks to `tokens`, preempting the most recently admitted running sequence while
  // they do not fit; false when s itself was preempted, or the one to preempt is in a batch in
  // flight (s is not planned: the running pass stops, as vLLM v1's does).
  bool grow_or_preempt(Sequence* s, std::int64_t tokens, PagedKv& kv);
  void produce(Sequence* s, double now, PagedKv& kv);  // one output token
  Sequence* built(WaitingEntry& e);  // e's sequence, built from its record if compact
  // rec as a queue entry: inline when it fits (one of at most 256 (workload, block_tokens,
  // rank) triples in m_kinds), else boxed.
  WaitingEntry compact_entry(const ArrivedRequest& rec);
  ArrivedRequest record_of(const WaitingEntry& e) const;  // an inline entry's record
  struct EntryKind {
    InternedName workload;
    std::int32_t block_tokens;
    std::int16_t rank;
  };

  SchedulerConfig m_cfg;
  WaitingQueue m_waiting;            // arrival (enqueue) order; preempted ones at the front
  std::vector<Sequence*> m_running;  // admission order
  std::vector<Sequence*> m_finished;
  std::vector<Sequence*> m_pulling;           // async_kv sequences admitted, their pull not done
  std::vector<Sequence*> m_new_pulls;         // of them, admitted since the last take_pulls()
  int m_in_flight = 0;                        // plans outstanding
  std::uint64_t m_enqueued = 0;               // sequences enqueued so far (next arrival_seq)
  std::unique_ptr<SchedulerPolicy> m_policy;  // made from m_cfg.policy by the registry
  Builder m_build;                            // compact arrivals' sequences (set_builder)
  Relookup m_relookup;                        // preempted sequences' tier lookup (set_relookup)
  std::vector<EntryKind> m_kinds;             // inline entries' shared fields (compact_entry)
};

// Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one takes everything.
// 1 for an empty vector or all zeros; std::invalid_argument on a negative or non-finite value.
// The engine reports it over per-request slowdown = TTFT / isolated TTFT (see docs/scheduler.md).
double jain_index(const std::vector<double>& x);

}  // namespace kappasim
