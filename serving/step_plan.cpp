#include "serving/step_plan.hpp"

#include <algorithm>

#include "serving/stack_profile.hpp"

namespace kappasim {

StepWork plan_step_work(const StepPlan& plan, const DecodeStores& pd) {
  StepWork w;
  plan_step_work(plan, w, pd);
  return w;
}

void plan_step_work(const StepPlan& plan, StepWork& w, const DecodeStores& pd) {
  w.load.clear();
  w.done.clear();
  w.decoded.clear();
  w.slices.clear();
  for (const StepItem& it : plan.items) {
    if (it.decode) {
      // One token over the KV of the prompt and the tokens generated before it; its logits.
      w.slices.push_back({1.0, static_cast<double>(it.seq->decode_kv_tokens() - 1), true});
      if (!pd.decode || pd.tier) w.decoded.push_back(it.seq);
      continue;
    }
    if (it.first && it.seq->cached_tokens > 0) w.load.push_back(it.seq);
    // Its prompt's KV is stored once, when its first prefill ends (a prefill again after a
    // preemption stores nothing new; DecodeStores: what a P/D decode engine stores).
    const bool store_prompt = pd.decode ? pd.tier && pd.prompt : true;
    if (it.last && it.seq->generated == 0 && store_prompt) w.done.push_back(it.seq);
    const std::int64_t R = it.seq->recompute_tokens, h = it.seq->hbm_hit_tokens;
    std::int64_t tokens = it.tokens;
    if (it.seq->computed < R) {
      const std::int64_t rec = std::min(tokens, R - it.seq->computed);
      w.slices.push_back(
          {static_cast<double>(rec), static_cast<double>(h + it.seq->computed), false});
      tokens -= rec;
    }
    if (tokens > 0)
      w.slices.push_back(
          {static_cast<double>(tokens),
           static_cast<double>(h + it.seq->cached_tokens + it.seq->computed + (it.tokens - tokens)),
           it.last});
  }
}

LoadSplit split_loads(const std::vector<Sequence*>& load, int chunk_tokens, int block_tokens,
                      KvTier* buffer, const HybridKv* hybrid) {
  const std::int64_t c = chunk_tokens, b = block_tokens;
  LoadSplit ls;
  std::vector<std::uint64_t> insert;  // into the buffer once the whole step is split
  for (const Sequence* s : load) {
    const std::int64_t R = s->load_start();
    const std::int64_t end = R + s->cached_tokens;  // loaded: prompt tokens [R, end)
    double link = 0, buffered = 0;
    const double state_before = ls.link_parts[3];
    // Tokens of [lo, hi) as the load counts them (full-layer tokens of its bytes under hybrid).
    const auto count = [&](std::int64_t lo, std::int64_t hi) {
      if (!hybrid) return static_cast<double>(hi - lo);
      return hybrid->bytes(static_cast<double>(lo), static_cast<double>(hi),
                           static_cast<double>(end)) /
             hybrid->full_Bpt;
    };
    // Hybrid: [lo, hi)'s link tokens by layer kind (HybridKv::bytes, one kind at a time).
    const auto parts = [&](std::int64_t lo, std::int64_t hi) {
      if (!hybrid) return;
      const double l = static_cast<double>(lo), u = static_cast<double>(hi);
      const double K = static_cast<double>(end);
      HybridKv one;
      one.full_Bpt = hybrid->full_Bpt;
      ls.link_parts[0] += one.bytes(l, u, K) / hybrid->full_Bpt;
      one = HybridKv{};
      one.sliding_Bpt = hybrid->sliding_Bpt;
      one.window = hybrid->window;
      ls.link_parts[1] += one.bytes(l, u, K) / hybrid->full_Bpt;
      one = HybridKv{};
      one.chunked_Bpt = hybrid->chunked_Bpt;
      one.chunk = hybrid->chunk;
      ls.link_parts[2] += one.bytes(l, u, K) / hybrid->full_Bpt;
      one = HybridKv{};
      one.state_B = hybrid->state_B;
      ls.link_parts[3] += one.bytes(l, u, K) / hybrid->full_Bpt;
    };
    if (!buffer) {
      link = hybrid ? count(R, end) : static_cast<double>(s->cached_tokens);
      parts(R, end);
      const std::int64_t chunks = (end + c - 1) / c - R / c;
      ls.chunks += chunks;
      ls.link_chunks += chunks;
      ls.link_blocks16 += (end + b - 1) / b - R / b;
    } else {
      const std::vector<std::uint64_t> keys = chunk_keys(s->req, chunk_tokens);
      for (std::int64_t i = R / c; i * c < end; ++i) {
        const std::int64_t lo = std::max(i * c, R), hi = std::min((i + 1) * c, end);
        const bool keyed = static_cast<std::size_t>(i) < keys.size();
        const std::uint64_t key = keyed ? keys[static_cast<std::size_t>(i)] : 0;
        ++ls.chunks;
        if (keyed && buffer->contains(key)) {
          buffered += count(lo, hi);
        } else {
          link += count(lo, hi);
          parts(lo, hi);
          ++ls.link_chunks;
          ls.link_blocks16 += (hi + b - 1) / b - lo / b;
        }
        if (keyed) insert.push_back(key);
      }
    }
    ls.link_tokens += link;
    ls.buffer_tokens += buffered;
    ls.seq_link_tokens.push_back(link);
    if (hybrid) ls.seq_link_state.push_back(ls.link_parts[3] - state_before);
    ls.seq_buffer_tokens.push_back(buffered);
  }
  if (buffer) buffer->insert(insert);  // touches the hits, stores the rest (LRU)
  return ls;
}

SchedulerCpu scheduler_cpu(const ServingSpec& sv, const StepPlan& plan, const Sequence* head,
                           std::size_t running, int layers) {
  SchedulerCpu c;
  c.overhead_s = sv.step_overhead_s;
  const int chunk = sv.tier_chunk_tokens();
  std::int64_t prompt_tokens = 0;
  auto lookup = [&](const Sequence& q) {
    const double t = stack_lookup_s(sv.stack, sv.load_path, q.req.prompt_tokens() / chunk,
                                    q.cached_tokens / chunk, layers);
    if (!sv.end_to_end()) return t;
    // End-to-end TTFT: every lookup also pays its RPC and the prompt's conversion.
    const double req = stack_lookup_request_s(sv.stack, q.req.prompt_tokens());
    if (req > 0) c.tier_request.emplace_back(&q, req);
    return t + req;
  };
  for (const StepItem& it : plan.items) {
    if (it.first) c.lookup_s += lookup(*it.seq);
    // Per prefilling request (a decoding one saves nothing: LMCache's save_decode_cache is off
    // by default, docs/serving-engine.md "Decode").
    if (!it.decode) prompt_tokens += it.seq->req.prompt_tokens();
  }
  if (head && sv.stack.lookup_repeats_while_waiting && plan.tokens < sv.max_num_batched_tokens &&
      running < static_cast<std::size_t>(sv.max_num_seqs))
    c.lookup_s += lookup(*head);
  c.meta_s = stack_step_meta_s(sv.stack, prompt_tokens);
  return c;
}

}  // namespace kappasim
