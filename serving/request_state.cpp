#include "serving/request_state.hpp"

#include <algorithm>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

namespace kappasim {

namespace {
bool fits32(std::int64_t v) {
  return v >= std::numeric_limits<std::int32_t>::min() &&
         v <= std::numeric_limits<std::int32_t>::max();
}
bool no_time(const TimeBreakdown& t) {
  for (const TimeBreakdown::Category& c : TimeBreakdown::categories())
    if (t.*c.field != 0) return false;
  return true;
}
}  // namespace

std::optional<ArrivedRequest> pack_arrival(const RequestState& st) {
  const Sequence& s = *st.seq;
  const Request& r = s.req;
  // What the record cannot hold: the state stays whole.
  if (!r.block_hashes.empty() || !st.chunk_levels.empty() || st.front_end_in_s != 0 ||
      st.front_end_out_s != 0 || !s.block_keys.empty() || !fits32(r.prefix_tokens) ||
      !fits32(r.new_tokens) || !fits32(r.output_tokens) || !fits32(s.cached_tokens) ||
      !fits32(s.recompute_tokens) || s.arrival_seq > std::numeric_limits<std::uint32_t>::max() ||
      st.rank < 0 || st.rank > std::numeric_limits<std::int16_t>::max() ||
      (s.output_tokens != 1 && s.output_tokens != std::max<std::int64_t>(1, r.output_tokens)) ||
      (st.cached_tokens != 0 && st.cached_tokens != s.cached_tokens))
    return std::nullopt;
  // What an arrival never has: a state that does is not fresh.
  const std::int64_t prompt = r.prompt_tokens();
  const bool fresh =
      s.compute_tokens == prompt - s.cached_tokens && s.tier_cached == s.cached_tokens &&
      s.tier_recompute == s.recompute_tokens && st.recompute_tokens == s.recompute_tokens &&
      st.compute_tokens == s.compute_tokens && s.computed == 0 && s.first_scheduled_s == -1 &&
      s.finish_s == -1 && s.credit == 0 && !s.kv_allocated && !s.rejected && s.generated == 0 &&
      s.first_token_s == -1 && s.last_token_s == -1 && s.preemptions == 0 &&
      s.preempted_kv_tokens == 0 && !s.kv_resident && !s.in_batch && !s.relookup &&
      s.hbm_hit_tokens == 0 && s.first_hbm_hit == -1 && s.apc_generation == ~std::uint64_t{0} &&
      s.apc_hit == 0 && s.apc_hit_free == 0 && s.apc_cap == -1 && st.load_s == 0 &&
      st.compute_s == 0 && st.steps == 0 && st.link_tokens == 0 && st.buffer_tokens == 0 &&
      st.stored_tokens == 0 && !st.load_bounds && st.tier_request_s == 0 && no_time(st.time) &&
      st.tier_keys.empty();
  if (!fresh)
    throw std::logic_error("pack_arrival: request " + std::to_string(r.id) +
                           " has been scheduled, or has state the record does not hold");
  ArrivedRequest a;
  a.id = r.id;
  a.sequence_id = r.sequence_id;
  a.arrival_s = r.arrival_s;
  a.enqueue_s = s.enqueue_s;
  a.workload = r.workload;
  a.arrival_seq = static_cast<std::uint32_t>(s.arrival_seq);
  a.prefix_tokens = static_cast<std::int32_t>(r.prefix_tokens);
  a.new_tokens = static_cast<std::int32_t>(r.new_tokens);
  a.output_tokens = static_cast<std::int32_t>(r.output_tokens);
  a.block_tokens = r.block_tokens;
  a.cached_tokens = static_cast<std::int32_t>(s.cached_tokens);
  a.recompute_tokens = static_cast<std::int32_t>(s.recompute_tokens);
  a.rank = static_cast<std::int16_t>(st.rank);
  using A = ArrivedRequest;
  a.flags = static_cast<std::uint8_t>(
      (r.extends_sequence ? A::kExtends : 0) | (s.output_tokens != 1 ? A::kDecodes : 0) |
      (s.async_kv ? A::kAsync : 0) | (s.pd_handoff ? A::kPdHandoff : 0) |
      (s.hold_kv ? A::kHoldKv : 0) | (st.cached_tokens != 0 ? A::kStateCached : 0));
  return a;
}

void unpack_arrival(const ArrivedRequest& a, RequestState& st) {
  using A = ArrivedRequest;
  // A sequence st already holds (RequestLedger::unpark's spare) is made fresh in place.
  if (st.seq) {
    st.seq->~Sequence();
    new (st.seq.get()) Sequence();
  } else {
    st.seq = std::make_unique<Sequence>();
  }
  Sequence& s = *st.seq;
  Request& r = s.req;
  r.id = a.id;
  r.arrival_s = a.arrival_s;
  r.sequence_id = a.sequence_id;
  r.prefix_tokens = a.prefix_tokens;
  r.new_tokens = a.new_tokens;
  r.output_tokens = a.output_tokens;
  r.extends_sequence = (a.flags & A::kExtends) != 0;
  r.block_tokens = a.block_tokens;
  r.workload = a.workload;
  s.cached_tokens = s.tier_cached = a.cached_tokens;
  s.compute_tokens = a.prompt_tokens() - a.cached_tokens;
  s.recompute_tokens = s.tier_recompute = a.recompute_tokens;
  s.enqueue_s = a.enqueue_s;
  s.credit = a.credit;
  s.arrival_seq = a.arrival_seq;
  s.output_tokens = (a.flags & A::kDecodes) != 0 ? std::max<std::int64_t>(1, a.output_tokens) : 1;
  s.async_kv = (a.flags & A::kAsync) != 0;
  s.pd_handoff = (a.flags & A::kPdHandoff) != 0;
  s.hold_kv = (a.flags & A::kHoldKv) != 0;
  st.rank = a.rank;
  st.recompute_tokens = s.recompute_tokens;
  st.cached_tokens = (a.flags & A::kStateCached) != 0 ? s.cached_tokens : 0;
  st.compute_tokens = s.compute_tokens;
}

RequestRecord make_request_record(const RequestState& r, double now_s,
                                  double kv_bytes_per_token_gpu, int tp,
                                  const std::string& load_path, double store_bytes_per_token_gpu,
                                  int link_shards) {
  RequestRecord rec;
  make_request_record(rec, r, now_s, kv_bytes_per_token_gpu, tp, load_path,
                      store_bytes_per_token_gpu, link_shards);
  return rec;
}

void make_request_record(RequestRecord& rec, const RequestState& r, double now_s,
                         double kv_bytes_per_token_gpu, int tp, const std::string& load_path,
                         double store_bytes_per_token_gpu, int link_shards) {
  // Every field of the record is set here (a reused record's earlier values never show).
  const Sequence& s = *r.seq;
  rec.id = s.req.id;
  rec.workload = s.req.workload.str();  // into the record's own buffer (issue 24)
  rec.arrival_s = s.req.arrival_s;
  // Arrival waits are rounded to the kernel's 1 ps resolution; never report a negative queue.
  // End-to-end TTFT: the front end's time before the scheduler saw it is not queueing.
  rec.queue_s = std::max(0.0, s.first_scheduled_s - s.req.arrival_s - r.front_end_in_s);
  rec.load_s = r.load_s;
  rec.compute_s = r.compute_s;
  // Prefill only: the first token is the last (first_token_s = now_s).
  // End-to-end TTFT: its tokens reach the client after the output path (front_end_out_s).
  rec.ttft_s =
      (s.first_token_s >= 0 ? s.first_token_s : now_s) - s.req.arrival_s + r.front_end_out_s;
  rec.e2e_s = now_s - s.req.arrival_s + r.front_end_out_s;
  rec.front_end_s = r.front_end_in_s + r.front_end_out_s;
  rec.tier_request_s = r.tier_request_s;
  rec.output_tokens = s.generated;
  // TPOT: the mean time per output token after the first (vLLM's definition); undefined for one.
  rec.tpot_s = s.generated > 1 ? (rec.e2e_s - rec.ttft_s) / static_cast<double>(s.generated - 1)
                               : std::numeric_limits<double>::quiet_NaN();
  rec.preemptions = s.preemptions;
  rec.preempted_kv_tokens = s.preempted_kv_tokens;
  // Its split as first admitted: the arrival's, less the prefix cache's hit then (a preemption
  // may change the sequence's own).
  PrefixSplit first{0, r.cached_tokens, r.recompute_tokens, r.compute_tokens};
  if (s.first_hbm_hit > 0)
    first = split_prefix_hit(r.cached_tokens + r.compute_tokens, r.cached_tokens,
                             r.recompute_tokens, s.first_hbm_hit);
  rec.hbm_hit_tokens = first.hit;
  rec.cached_tokens = first.cached;
  rec.computed_tokens = first.compute;
  rec.kappa_ratio = first.compute > 0 ? static_cast<double>(first.cached) / first.compute : 0;
  rec.bytes_loaded = r.link_tokens * kv_bytes_per_token_gpu * tp / link_shards;  // host links
  if (r.link_state_tokens > 0 && link_shards > 1)  // hybrid: the state is split, not copied
    rec.bytes_loaded = ((r.link_tokens - r.link_state_tokens) / link_shards + r.link_state_tokens) *
                       kv_bytes_per_token_gpu * tp;
  rec.bytes_from_buffer = r.buffer_tokens * kv_bytes_per_token_gpu * tp;
  rec.recomputed_tokens = first.recompute;
  rec.kappa_link_ratio = first.compute > 0 ? r.link_tokens / static_cast<double>(first.compute) : 0;
  rec.bytes_stored =
      r.stored_tokens *
      (store_bytes_per_token_gpu < 0 ? kv_bytes_per_token_gpu : store_bytes_per_token_gpu) * tp;
  rec.load_path = load_path;
  rec.steps = r.steps;
  rec.time = r.time;
  // Queue: the rest of the TTFT (the steps' own queue, a micro-batch's wait for a busy pipeline
  // stage, is in it).
  rec.time.queue_s = 0;
  rec.time.queue_s = std::max(0.0, rec.ttft_s - rec.time.sum() - rec.front_end_s);
  if (r.load_bounds) {
    rec.load_bound_s = *r.load_bounds;
    rec.load_bound = load_bound_name(rec.load_bound_s.bound());
  } else {
    rec.load_bound_s = LoadBoundTimes();
    rec.load_bound.clear();
  }
  rec.meets_slo = false;
}

}  // namespace kappasim
