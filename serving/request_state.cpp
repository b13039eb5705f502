#include "serving/request_state.hpp"

#include <algorithm>
#include <limits>

namespace kappasim {

RequestRecord make_request_record(const RequestState& r, double now_s,
                                  double kv_bytes_per_token_gpu, int tp,
                                  const std::string& load_path, double store_bytes_per_token_gpu,
                                  int link_shards) {
  const Sequence& s = *r.seq;
  RequestRecord rec;
  rec.id = s.req.id;
  rec.workload = s.req.workload;
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
  rec.bytes_from_buffer = r.buffer_tokens * kv_bytes_per_token_gpu * tp;
  rec.recomputed_tokens = first.recompute;
  rec.kappa_link_ratio = first.compute > 0 ? r.link_tokens / static_cast<double>(first.compute) : 0;
  rec.bytes_stored =
      r.stored_tokens *
      (store_bytes_per_token_gpu < 0 ? kv_bytes_per_token_gpu : store_bytes_per_token_gpu) * tp;
  rec.load_path = load_path;
  rec.steps = r.steps;
  rec.time = r.time;
  rec.time.queue_s = std::max(0.0, rec.ttft_s - rec.time.sum() - rec.front_end_s);
  if (r.load_bounds) {
    rec.load_bound_s = *r.load_bounds;
    rec.load_bound = load_bound_name(rec.load_bound_s.bound());
  }
  return rec;
}

}  // namespace kappasim
