// Pure planning of one serving step (no SystemC): from the scheduler's plan, what the step
// computes (per sequence a recompute slice and a new-token slice, for kernel_timing's
// batch_step_time), which sequences load their cached KV, and where that KV comes from (over
// the host link, or from the GPU-side KV buffer), with the copy counts the fixed costs scale
// with; and the scheduler-side CPU time of the step (the stack's lookups and metadata).
// The engine (serving/engine) only times what these return.
//
// Ignores: nothing is planned per layer here (the load path strategies split by layer).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "models/gpu/kernel_timing.hpp"
#include "serving/kv_tier.hpp"
#include "serving/scheduler.hpp"
#include "serving/serving_spec.hpp"

namespace kappasim {

struct StepWork {
  std::vector<Sequence*> load;  // first scheduled with cached tokens: their KV loads this step
  std::vector<Sequence*> done;  // finish their first prefill this step (their KV is stored)
  // Decode this step: the chunks they fill may be stored (StackProfile::store_decode).
  std::vector<Sequence*> decoded;
  std::vector<SeqSlice> slices;  // what the step computes, in plan order
};
// A sequence's prompt tokens [0, h) are its prefix-cache hit (Sequence::hbm_hit_tokens: present,
// neither loaded nor computed), then R recomputed ones (Sequence::recompute_tokens), then its
// loaded ones, then the new ones. Recomputed tokens attend causally over the hit and themselves
// (context = h + tokens computed before them); the new tokens attend over the whole prefix (loaded
// + recomputed) and the new tokens before them, and the slice that ends the prompt computes its
// logits. A decode item is one token over the KV of its prompt and generated tokens, with its
// logits.
//
// What an engine stores of the items it steps (docs/disaggregation.md, "A decode node's KV tier").
// Any engine but a P/D decode engine stores a prompt's full chunks when its first prefill ends
// (also after a load outside the steps: vLLM's OffloadingConnector stores the blocks past those it
// loaded, _next_stored_block_idx; the loaded chunks are in the tier already and count as no new
// store) and offers every decoding sequence's filled chunks (the stack's store_decode decides). A
// P/D decode engine (`decode`) stores nothing without its tier (the prefill instance stored the
// prompt; its pulled KV, and what a preemption made it prefill again, are not stored there). With
// its tier (`tier`) it stores the prompt when it first runs there when `prompt`
// (decode_tier_stores_prompt) and offers every decoding sequence's filled chunks.
struct DecodeStores {
  bool decode = false;  // a P/D decode engine
  bool tier = false;    // with its own KV tier (cluster.nodes[].decode_tier)
  bool prompt = false;
};
StepWork plan_step_work(const StepPlan& plan, const DecodeStores& pd = {});
// The same into `w` (its vectors cleared first, their buffers kept: issue 24).
void plan_step_work(const StepPlan& plan, StepWork& w, const DecodeStores& pd = {});

// What a step's loads move. A sequence loads prompt tokens [L, L + cached_tokens), L =
// Sequence::load_start() (its prefix-cache hit and recomputed tokens come first).
struct LoadSplit {
  double link_tokens = 0, buffer_tokens = 0;
  std::int64_t chunks = 0;         // tier entries retrieved (CPU-side costs)
  std::int64_t link_chunks = 0;    // of them, over the link (copy-kernel blocks, DMAs)
  std::int64_t link_blocks16 = 0;  // block_dma copies (block_tokens each) over the link
  // Per loading sequence, in the order given: tokens over the link and from the buffer.
  std::vector<double> seq_link_tokens, seq_buffer_tokens;
  // Hybrid (issue 25): link_tokens by layer kind, in full-layer tokens as link_tokens: the full
  // layers', the sliding layers' (window), the chunked layers', the linear layers' state. They
  // add up to link_tokens. A pipeline stage's and a replicated shard's bytes follow from them
  // (StepGroup: a stage loads its layers' kinds; only attention KV is replicated).
  std::array<double, 4> link_parts{};
  std::vector<double> seq_link_state;  // hybrid: per loading sequence, link_parts[3]'s share
};
// `buffer` (the GPU-side KV buffer; null when off): a chunk whose key it holds is copied from
// it, every other over the link; the step's chunks are then inserted into it (LRU: hits are
// touched, the rest stored) after all sequences are split. Without a buffer all goes over the
// link. Chunk counts are the chunk_tokens-aligned entries the range [R, end) touches, blocks
// the block_tokens-aligned ones.
// `hybrid` (serving.kv_cache: hybrid; null when unified): the tokens counted are the load's
// bytes in full-layer tokens, HybridKv::bytes(lo, hi, end) / full_Bpt for each range [lo, hi) of
// a prefix that ends at `end` (the window of the sliding layers, the chunk of the chunked ones,
// the state once with the range that ends the prefix), so that tokens × the engine's bytes per
// token (the full layers') are the bytes moved. Chunk and block counts are the ranges' as ever.
LoadSplit split_loads(const std::vector<Sequence*>& load, int chunk_tokens, int block_tokens,
                      KvTier* buffer, const HybridKv* hybrid = nullptr);

// The scheduler's critical path before a step (serial): vLLM's per-step overhead, the stack's
// lookups (the requests scheduled for the first time, and the waiting queue's head when budget
// and sequence slots are left and the stack looks it up again every step: it is looked up,
// fails to allocate KV and stays waiting) and the stack's per-step metadata.
struct SchedulerCpu {
  double overhead_s = 0, lookup_s = 0, meta_s = 0;
  // End-to-end TTFT: the part of lookup_s that is each looked-up request's own tier_request
  // cost (stack_lookup_request_s), per lookup; empty for an engine TTFT or a stack without one.
  std::vector<std::pair<const Sequence*, double>> tier_request;
};
SchedulerCpu scheduler_cpu(const ServingSpec& sv, const StepPlan& plan, const Sequence* head,
                           std::size_t running, int layers);

}  // namespace kappasim
