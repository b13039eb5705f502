#include "serving/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/error.hpp"

namespace kappasim {

Sequence make_sequence(const Request& r, std::int64_t cached_tokens) {
  Sequence s;
  s.req = r;
  const std::int64_t prompt = r.prompt_tokens();
  if (prompt < 1)
    throw std::logic_error("make_sequence: request " + std::to_string(r.id) +
                           " has an empty prompt");
  s.cached_tokens = std::clamp<std::int64_t>(cached_tokens, 0, prompt - 1);
  s.compute_tokens = prompt - s.cached_tokens;
  s.tier_cached = s.cached_tokens;
  return s;
}

void set_tier_split(Sequence& s, std::int64_t recompute) {
  if (recompute < 0 || recompute > s.cached_tokens || s.hbm_hit_tokens != 0 ||
      s.recompute_tokens != 0)
    throw std::logic_error("set_tier_split: request " + std::to_string(s.req.id) +
                           " cannot recompute " + std::to_string(recompute) + " of " +
                           std::to_string(s.cached_tokens) + " cached tokens");
  s.cached_tokens -= recompute;
  s.compute_tokens += recompute;
  s.recompute_tokens = s.tier_recompute = recompute;
  s.tier_cached = s.cached_tokens;
}

PrefixSplit split_prefix_hit(std::int64_t total, std::int64_t loaded, std::int64_t recompute,
                             std::int64_t hit) {
  if (hit < 0 || loaded < 0 || recompute < 0 || hit >= total || recompute + loaded >= total)
    throw std::logic_error("split_prefix_hit: a hit of " + std::to_string(hit) + " with " +
                           std::to_string(recompute) + " recomputed and " + std::to_string(loaded) +
                           " loaded tokens of " + std::to_string(total));
  PrefixSplit p;
  p.hit = hit;
  p.recompute = std::max<std::int64_t>(0, recompute - hit);
  p.cached = std::max<std::int64_t>(0, recompute + loaded - std::max(hit, recompute));
  p.compute = total - hit - p.cached;
  return p;
}

Scheduler::Scheduler(SchedulerConfig cfg) : m_cfg(cfg) {
  if (m_cfg.max_num_batched_tokens < 1)
    throw std::invalid_argument("Scheduler: max_num_batched_tokens must be >= 1");
  if (m_cfg.max_num_seqs < 1) throw std::invalid_argument("Scheduler: max_num_seqs must be >= 1");
  if (!(m_cfg.fairness_max_wait_s >= 0))
    throw std::invalid_argument("Scheduler: fairness_max_wait_s must be >= 0");
  m_policy = make_scheduler_policy(m_cfg.policy);
}

void Scheduler::enqueue(Sequence* s, double now) {
  if (!s) throw std::logic_error("Scheduler::enqueue: null sequence");
  if (s->compute_tokens < 1 || s->cached_tokens < 0 || s->computed != 0 || s->kv_allocated ||
      s->output_tokens < 1 || s->generated != 0)
    throw std::logic_error("Scheduler::enqueue: request " + std::to_string(s->req.id) +
                           " must have compute_tokens >= 1, cached_tokens >= 0, output_tokens "
                           ">= 1 and nothing computed, generated or allocated yet");
  if (!m_cfg.chunked_prefill && s->compute_tokens > m_cfg.max_num_batched_tokens)
    throw InputError("request " + std::to_string(s->req.id) + " needs " +
                     std::to_string(s->compute_tokens) +
                     " prefill tokens in one step but serving.max_num_batched_tokens is " +
                     std::to_string(m_cfg.max_num_batched_tokens) +
                     " and serving.chunked_prefill is false: set serving.chunked_prefill=true "
                     "or raise serving.max_num_batched_tokens to at least " +
                     std::to_string(s->compute_tokens));
  s->enqueue_s = now;
  s->arrival_seq = m_enqueued++;
  m_waiting.push_back(WaitingEntry(s));
}

// ---- WaitingQueue ---------------------------------------------------------------------------

WaitingQueue::~WaitingQueue() {
  for (std::size_t i = 0; i < m_count; ++i)
    if (at(i).form() == WaitingEntry::kBoxed) delete at(i).boxed();
}

void WaitingQueue::push_back(const WaitingEntry& e) {
  const std::size_t p = m_head + m_count;
  if (p / kChunk >= m_chunks.size()) m_chunks.emplace_back(new WaitingEntry[kChunk]);
  m_chunks[p / kChunk][p % kChunk] = e;
  ++m_count;
  ++m_live;
}

void WaitingQueue::push_front(const WaitingEntry& e) {
  if (m_head == 0) {
    m_chunks.emplace(m_chunks.begin(), new WaitingEntry[kChunk]);
    m_head = kChunk;
  }
  --m_head;
  ++m_count;
  ++m_live;
  at(0) = e;
}

void WaitingQueue::kill(std::size_t i) {
  if (i >= m_count || at(i).dead() || at(i).form() == WaitingEntry::kBoxed)
    throw std::logic_error("WaitingQueue::kill: slot " + std::to_string(i) +
                           " is past the queue, dead or boxed");
  at(i).m_flags = WaitingEntry::kDead;
  --m_live;
}

void WaitingQueue::tidy() {
  while (m_count > 0 && at(m_count - 1).dead()) --m_count;
  while (m_count > 0 && at(0).dead()) {
    --m_count;
    if (++m_head == kChunk) {
      m_chunks.erase(m_chunks.begin());
      m_head = 0;
    }
  }
  if (m_count - m_live > m_live) {  // compact, keeping the order
    std::size_t w = 0;
    for (std::size_t r = 0; r < m_count; ++r)
      if (!at(r).dead()) at(w++) = at(r);
    m_count = w;
  }
  if (m_count == 0) m_head = 0;
  release_spare();
}

void WaitingQueue::release_spare() {
  const std::size_t used = (m_head + m_count + kChunk - 1) / kChunk;
  if (m_chunks.size() > used + 1) m_chunks.resize(used + 1);
}

// ---- Compact entries -------------------------------------------------------------------------

void Scheduler::compact_back(const Sequence* s, const ArrivedRequest& rec) {
  if (!m_build || m_waiting.empty() || m_waiting.at(m_waiting.slots() - 1).seq() != s ||
      rec.id != s->req.id)
    throw std::logic_error("Scheduler::compact_back: request " + std::to_string(rec.id) +
                           " is not the last enqueued, or no builder is set");
  m_waiting.at(m_waiting.slots() - 1) = compact_entry(rec);
}

WaitingEntry Scheduler::compact_entry(const ArrivedRequest& rec) {
  const auto delta = static_cast<float>(rec.arrival_s - rec.enqueue_s);
  std::size_t kind = 0;
  while (kind < m_kinds.size() &&
         !(m_kinds[kind].workload == rec.workload &&
           m_kinds[kind].block_tokens == rec.block_tokens && m_kinds[kind].rank == rec.rank))
    ++kind;
  // arrival_s given back bit for bit (the difference of two close doubles is exact, and a few
  // bits long, so a float holds it)
  const double back = rec.enqueue_s + static_cast<double>(delta);
  const bool fits = rec.id <= std::numeric_limits<std::uint32_t>::max() && rec.sequence_id == 0 &&
                    rec.credit <= std::numeric_limits<std::uint16_t>::max() &&
                    std::memcmp(&back, &rec.arrival_s, sizeof back) == 0 && kind < 256;
  WaitingEntry e(nullptr);
  if (!fits) {
    e.set_ptr(new ArrivedRequest(rec), WaitingEntry::kBoxed);
    return e;
  }
  if (kind == m_kinds.size()) m_kinds.push_back({rec.workload, rec.block_tokens, rec.rank});
  e.m_id = static_cast<std::uint32_t>(rec.id);
  e.set_time(rec.enqueue_s);
  e.m_arrival_delta = delta;
  e.m_arrival_seq = rec.arrival_seq;
  e.m_prefix = rec.prefix_tokens;
  e.m_new = rec.new_tokens;
  e.m_output = rec.output_tokens;
  e.m_cached = rec.cached_tokens;
  e.m_recompute = rec.recompute_tokens;
  e.m_credit = static_cast<std::uint16_t>(rec.credit);
  e.m_kind = static_cast<std::uint8_t>(kind);
  e.m_flags = static_cast<std::uint8_t>(rec.flags | WaitingEntry::kInline);
  return e;
}

ArrivedRequest Scheduler::record_of(const WaitingEntry& e) const {
  ArrivedRequest rec;
  const EntryKind& k = m_kinds[e.m_kind];
  rec.id = e.m_id;
  rec.enqueue_s = e.time();
  rec.arrival_s = rec.enqueue_s + static_cast<double>(e.m_arrival_delta);
  rec.workload = k.workload;
  rec.arrival_seq = e.m_arrival_seq;
  rec.credit = e.m_credit;
  rec.prefix_tokens = e.m_prefix;
  rec.new_tokens = e.m_new;
  rec.output_tokens = e.m_output;
  rec.block_tokens = k.block_tokens;
  rec.cached_tokens = e.m_cached;
  rec.recompute_tokens = e.m_recompute;
  rec.rank = k.rank;
  rec.flags = static_cast<std::uint8_t>(e.m_flags & ~WaitingEntry::kFormMask);
  return rec;
}

Sequence* Scheduler::built(WaitingEntry& e) {
  if (e.form() == WaitingEntry::kSeq) return e.seq_ptr();
  std::uint64_t id = 0;
  Sequence* s = nullptr;
  if (e.form() == WaitingEntry::kBoxed) {
    std::unique_ptr<ArrivedRequest> box(e.boxed());
    id = box->id;
    s = m_build(*box);
  } else {
    const ArrivedRequest rec = record_of(e);
    id = rec.id;
    s = m_build(rec);
  }
  if (!s || s->req.id != id)
    throw std::logic_error("Scheduler: the builder returned no sequence for request " +
                           std::to_string(id));
  e.set_ptr(s, WaitingEntry::kSeq);
  return s;
}

Sequence* Scheduler::waiting_front() {
  return m_waiting.empty() ? nullptr : built(m_waiting.at(m_waiting.next_live(0)));
}

std::int64_t Scheduler::tokens_for(std::int64_t rem, std::int64_t budget) const {
  if (m_cfg.chunked_prefill) return std::min(rem, budget);
  return rem <= budget ? rem : 0;
}

void Scheduler::admit(Sequence* s, std::int64_t tokens, double now, PagedKv& kv, StepPlan& plan,
                      const std::vector<std::uint64_t>& keys, std::int64_t hit,
                      std::int64_t alloc) {
  kv.allocate_shared(s->req.id, alloc, keys, hit);
  s->kv_allocated = true;
  if (s->first_scheduled_s < 0) s->first_scheduled_s = now;  // a preempted one keeps its first
  m_running.push_back(s);
  plan.items.push_back({s, tokens, true, tokens == s->remaining()});
  plan.tokens += tokens;
  plan.load_tokens += s->cached_tokens;
}

void Scheduler::start_pull(Sequence* s, double now, PagedKv& kv,
                           const std::vector<std::uint64_t>& keys, std::int64_t hit,
                           std::int64_t alloc) {
  kv.allocate_shared(s->req.id, alloc, keys, hit);
  s->kv_allocated = true;
  if (s->first_scheduled_s < 0) s->first_scheduled_s = now;
  m_pulling.push_back(s);
  m_new_pulls.push_back(s);
}

std::vector<Sequence*> Scheduler::take_pulls() {
  std::vector<Sequence*> out;
  out.swap(m_new_pulls);
  return out;
}

void Scheduler::pulled(Sequence* s) {
  const auto it = std::find(m_pulling.begin(), m_pulling.end(), s);
  if (it == m_pulling.end())
    throw std::logic_error("Scheduler::pulled: request " + std::to_string(s ? s->req.id : 0) +
                           " is not pulling");
  m_pulling.erase(it);
  s->kv_resident = true;
  m_running.push_back(s);  // its next step computes its remaining tokens over the pulled KV
}

bool Scheduler::grow_or_preempt(Sequence* s, std::int64_t tokens, PagedKv& kv) {
  while (!kv.grow(s->req.id, tokens)) {
    if (m_running.back()->in_batch) return false;
    const bool self = m_running.back() == s;
    preempt_last(kv);
    if (self) return false;
  }
  return true;
}

void Scheduler::preempt_last(PagedKv& kv) {
  Sequence* v = m_running.back();
  m_running.pop_back();
  kv.release(v->req.id);
  v->kv_allocated = false;
  ++v->preemptions;
  if (v->async_kv && v->pd_handoff) {
    // Its pulled KV is gone with its blocks (the prefill instance has released its copy): the
    // whole prompt, and what it generated, is prefilled here (vLLM: a preempted P/D request
    // recomputes).
    v->preempted_kv_tokens +=
        v->cached_tokens + v->computed + std::max<std::int64_t>(0, v->generated - 1);
    v->compute_tokens = v->req.prompt_tokens() + v->generated;
    v->cached_tokens = v->hbm_hit_tokens = v->recompute_tokens = 0;
    v->tier_cached = v->tier_recompute = 0;
    v->async_kv = v->kv_resident = v->pd_handoff = false;
    v->relookup = static_cast<bool>(m_relookup);  // a decode tier: looked up at its readmission
  } else if (v->generated > 0) {
    v->async_kv = v->kv_resident = false;  // prefilled again in the steps (below)
    // Its prompt and generated tokens are prefilled again (vLLM v1 resets num_computed_tokens;
    // a re-lookup in the KV tier is not modelled: docs/serving-engine.md "Decode").
    v->preempted_kv_tokens += v->decode_kv_tokens() - 1;
    v->compute_tokens = v->req.prompt_tokens() + v->generated;
    v->cached_tokens = v->hbm_hit_tokens = v->recompute_tokens = 0;
    v->tier_cached = v->tier_recompute = 0;
    v->relookup = static_cast<bool>(m_relookup);
  } else {
    v->preempted_kv_tokens += v->cached_tokens + v->computed;  // its cached KV loads again
    v->kv_resident = false;  // an async load runs again when it is admitted again
  }
  v->computed = 0;
  m_waiting.push_front(WaitingEntry(v));
}

namespace {
// s's prompt's block keys (chunk_keys at the pool's block), computed once.
const std::vector<std::uint64_t>& block_keys(Sequence& s, const PagedKv& kv) {
  if (s.block_keys.empty()) s.block_keys = chunk_keys(s.req, kv.block_tokens());
  return s.block_keys;
}
}  // namespace

void Scheduler::register_computed(Sequence& s, PagedKv& kv) {
  // Its KV is in its blocks up to: the hit, then the recomputed tokens as computed, then (once
  // those are done: the load ran in its first step, or the async load before it) the loaded
  // ones and the computed ones after them.
  const std::int64_t covered = s.computed < s.recompute_tokens
                                   ? s.hbm_hit_tokens + s.computed
                                   : s.hbm_hit_tokens + s.cached_tokens + s.computed;
  const std::int64_t b = kv.block_tokens();
  kv.register_blocks(s.req.id, block_keys(s, kv), covered / b);
}

void Scheduler::register_decoded(Sequence& s, PagedKv& kv) {
  // After its decode step the sequence's KV covers its prompt and every token generated so far
  // (the token fed in this step included): vLLM caches a block once its tokens are all computed,
  // generated ones too (the request's block hashes grow as it generates). Only when this step
  // filled a block; the keys then run through the last token it will hold (computed once).
  const std::int64_t covered = s.decode_kv_tokens(), b = kv.block_tokens();
  if (covered % b != 0) return;
  if (static_cast<std::int64_t>(s.block_keys.size()) < covered / b)
    s.block_keys = chunk_keys(s.req, kv.block_tokens(), std::max(covered, s.max_kv_tokens()));
  kv.register_blocks(s.req.id, s.block_keys, covered / b);
}

void Scheduler::produce(Sequence* s, double now, PagedKv& kv) {
  ++s->generated;
  if (s->first_token_s < 0) s->first_token_s = now;
  s->last_token_s = now;
  if (s->generated < s->output_tokens) return;
  s->finish_s = now;
  if (!s->hold_kv) {  // a P/D prefill's blocks stay until the decode instance pulled them
    kv.release(s->req.id);
    s->kv_allocated = false;
  }
  m_finished.push_back(s);
}

void Scheduler::reject(Sequence* s, double now) {
  s->rejected = true;
  s->finish_s = now;
  m_finished.push_back(s);
}

// ---- Admission ----------------------------------------------------------------------------------

const SchedulerConfig& Admission::config() const { return m_s.m_cfg; }
const Admission::Queue& Admission::waiting() const { return m_s.m_waiting; }

Admission::Outcome Admission::try_admit(Cursor& it) {
  if (it == m_s.m_waiting.end() || it->dead())
    throw std::logic_error(
        "Admission::try_admit: the cursor is past the waiting queue or its entry has left it");
  if (m_budget == 0 || m_s.m_running.size() >= static_cast<std::size_t>(m_s.m_cfg.max_num_seqs))
    return Outcome::NoRoom;
  const std::size_t slot = it.index();
  Sequence* s = m_s.built(m_s.m_waiting.at(slot));
  if (m_kv.blocks_for(s->max_kv_tokens()) > m_kv.total_blocks()) {
    m_s.reject(s, m_now);
    m_s.m_waiting.kill(slot);
    ++it;
    return Outcome::Rejected;
  }
  // Preempted on a P/D decode engine with its tier: looked up once, at the first try after the
  // preemption; the answer stands while it waits (LMCache's lookup client keeps it until the
  // request is scheduled) [A: vLLM's native connector asks at every try].
  if (s->relookup) {
    s->relookup = false;
    m_s.m_relookup(*s);
  }
  // serving.prefix_caching (vLLM: the local prefix-cache hit first, then the connector's hit
  // beyond it): the leading registered blocks of its prompt, in whole blocks, at most the
  // prefill less one token. A P/D decode instance's pulled prompt is not looked up.
  static const std::vector<std::uint64_t> kNoKeys;
  const bool apc = m_kv.prefix_caching() && !s->pd_handoff;
  const std::vector<std::uint64_t>& keys = apc ? block_keys(*s, m_kv) : kNoKeys;
  PrefixSplit split{s->hbm_hit_tokens, s->cached_tokens, s->recompute_tokens, s->compute_tokens};
  std::int64_t hit = 0;
  if (apc) {
    const std::int64_t total = s->prompt_tokens(), b = m_kv.block_tokens();
    // The pool's answers are kept while its registered blocks are unchanged (a sequence waiting
    // at the head of the queue is tried every step); a preemption may change the cap.
    const std::int64_t cap = (total - 1) / b;
    if (s->apc_generation != m_kv.generation() || s->apc_cap != cap) {
      s->apc_hit = m_kv.match(keys, cap);
      s->apc_hit_free = m_kv.free_among(keys, s->apc_hit);
      s->apc_generation = m_kv.generation();
      s->apc_cap = cap;
    }
    hit = s->apc_hit;
    split = split_prefix_hit(total, s->tier_cached, s->tier_recompute, hit * b);
  }
  // An async tier load with nothing left to load after the hit is admitted as any other.
  const bool pull = s->async_kv && !s->kv_resident && (s->pd_handoff || split.cached > 0);
  // The tokens whose blocks admission allocates: the whole prompt, or (serving.kv_allocation:
  // chunk, not for a pull) the hit, the cached tokens and this step's chunk.
  const std::int64_t t = m_s.tokens_for(split.compute - s->computed, m_budget);
  const std::int64_t alloc = m_s.m_cfg.kv_allocation == KvAllocation::Chunk && !pull
                                 ? split.hit + split.cached + t
                                 : s->prompt_tokens();
  const std::int64_t need =
      apc ? std::max<std::int64_t>(0, m_kv.blocks_for(alloc) - hit) + s->apc_hit_free
          : m_kv.blocks_for(alloc);
  const auto apply = [&] {
    s->hbm_hit_tokens = split.hit;
    s->cached_tokens = split.cached;
    s->recompute_tokens = split.recompute;
    s->compute_tokens = split.compute;
    if (s->first_hbm_hit < 0) s->first_hbm_hit = split.hit;
  };
  if (pull) {  // P/D or an async tier load: blocks now, the pull outside the step
    if (need > m_kv.free_blocks()) return Outcome::DoesNotFit;
    apply();
    m_s.start_pull(s, m_now, m_kv, keys, hit, alloc);
    m_s.m_waiting.kill(slot);
    ++it;
    return Outcome::Admitted;
  }
  if (t == 0 || need > m_kv.free_blocks()) return Outcome::DoesNotFit;
  if (s->async_kv && !s->kv_resident) s->async_kv = false;  // nothing left to load
  apply();
  m_s.admit(s, t, m_now, m_kv, m_plan, keys, hit, alloc);
  m_budget -= t;
  if (!m_admitted_any || s->arrival_seq > m_last_admitted_seq) m_last_admitted_seq = s->arrival_seq;
  m_admitted_any = true;
  m_s.m_waiting.kill(slot);
  ++it;
  return Outcome::Admitted;
}

// ---- Scheduler ------------------------------------------------------------------------------

StepPlan Scheduler::plan(double now, PagedKv& kv) {
  StepPlan p;
  plan(now, kv, p);
  return p;
}

void Scheduler::plan(double now, PagedKv& kv, StepPlan& plan) {
  if (m_in_flight >= m_cfg.max_batches)
    throw std::logic_error("Scheduler::plan: the previous step has not been completed");
  plan.items.clear();
  plan.tokens = 0;
  plan.load_tokens = 0;
  std::int64_t budget = m_cfg.max_num_batched_tokens;

  // 1. Running sequences, in admission order (preemption takes them from the back); those in a
  // batch still in flight wait for it.
  for (std::size_t i = 0; i < m_running.size() && budget > 0; ++i) {
    Sequence* s = m_running[i];
    if (s->in_batch) continue;
    if (!s->decoding()) {
      const std::int64_t t = std::min(s->remaining(), budget);
      // serving.kv_allocation: chunk: this chunk's blocks now, preempting as for a decode token.
      if (m_cfg.kv_allocation == KvAllocation::Chunk &&
          !grow_or_preempt(s, s->hbm_hit_tokens + s->cached_tokens + s->computed + t, kv))
        break;
      plan.items.push_back({s, t, false, t == s->remaining(), false});
      plan.tokens += t;
      budget -= t;
      continue;
    }
    if (!grow_or_preempt(s, s->decode_kv_tokens(), kv)) break;  // vLLM v1 stops here
    plan.items.push_back({s, 1, false, false, true});
    plan.tokens += 1;
    budget -= 1;
  }

  // 2. Admission, in the policy's order.
  Admission step(*this, now, kv, plan, budget);
  m_policy->admit(step);
  // Passed over: still waiting although a later arrival was admitted this step. The queue is in
  // arrival order, so they are the front of the queue up to the latest admitted arrival.
  if (step.m_admitted_any)
    for (std::size_t i = m_waiting.next_live(0); i < m_waiting.slots();
         i = m_waiting.next_live(i + 1)) {
      WaitingEntry& e = m_waiting.at(i);
      if (e.arrival_seq() > step.m_last_admitted_seq) break;
      if (e.form() == WaitingEntry::kInline &&
          e.m_credit == std::numeric_limits<std::uint16_t>::max()) {
        // Its count outgrows the inline field: boxed from here on.
        ArrivedRequest rec = record_of(e);
        e.set_ptr(new ArrivedRequest(rec), WaitingEntry::kBoxed);
      }
      switch (e.form()) {
        case WaitingEntry::kInline:
          ++e.m_credit;
          break;
        case WaitingEntry::kBoxed:
          ++e.boxed()->credit;
          break;
        default:
          e.seq_ptr()->credit += 1;
      }
    }
  m_waiting.tidy();

  if (plan.tokens > m_cfg.max_num_batched_tokens)
    throw std::logic_error("Scheduler::plan: token budget exceeded");
  if (!plan.items.empty()) ++m_in_flight;
  for (const StepItem& it : plan.items) it.seq->in_batch = true;
}

void Scheduler::complete(const StepPlan& plan, double now, PagedKv& kv) {
  if (plan.items.empty()) return;
  if (m_in_flight == 0) throw std::logic_error("Scheduler::complete: no step is outstanding");
  --m_in_flight;
  for (const StepItem& it : plan.items) it.seq->in_batch = false;
  bool any_finished = false;
  for (const StepItem& item : plan.items) {
    Sequence* s = item.seq;
    if (!s || !s->kv_allocated || s->finish_s >= 0)
      throw std::logic_error("Scheduler::complete: the plan names a sequence that is not running");
    if (item.decode) {
      if (!s->decoding() || item.tokens != 1)
        throw std::logic_error("Scheduler::complete: request " + std::to_string(s->req.id) +
                               " is planned to decode but is not decoding");
      // A hybrid pool caches linear-attention state at prefill steps' block boundaries only
      // (docs/accounting.md); a P/D decode instance's pulled prompt is not in its prefix cache.
      if (kv.prefix_caching() && !kv.hybrid() && !s->pd_handoff) register_decoded(*s, kv);
      produce(s, now, kv);
    } else {
      s->computed += item.tokens;
      if (s->computed > s->compute_tokens)
        throw std::logic_error("Scheduler::complete: request " + std::to_string(s->req.id) +
                               " computed more tokens than its prompt needs");
      if (kv.prefix_caching()) register_computed(*s, kv);
      if (s->computed == s->compute_tokens) produce(s, now, kv);
    }
    any_finished = any_finished || s->finish_s >= 0;
  }
  if (any_finished)
    m_running.erase(std::remove_if(m_running.begin(), m_running.end(),
                                   [](const Sequence* s) { return s->finish_s >= 0; }),
                    m_running.end());
}

std::vector<Sequence*> Scheduler::take_finished() {
  std::vector<Sequence*> out;
  out.swap(m_finished);
  return out;
}

void Scheduler::take_finished(std::vector<Sequence*>& out) {
  out.clear();
  out.swap(m_finished);
}

double jain_index(const std::vector<double>& x) {
  double sum = 0, sum_sq = 0;
  for (double v : x) {
    if (!(v >= 0) || !std::isfinite(v))
      throw std::invalid_argument("jain_index: values must be finite and >= 0");
    sum += v;
    sum_sq += v * v;
  }
  if (x.empty() || sum_sq == 0) return 1;
  return sum * sum / (static_cast<double>(x.size()) * sum_sq);
}

}  // namespace kappasim
