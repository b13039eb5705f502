// The serving engine (SystemC) against hand formulas: isolated requests on each load path, the
// chunk rounding of cached tokens, TP-8 KV-head replication and host-DRAM contention, the
// invariants of a small NarrativeQA-like run, and FIFO head-of-line blocking against the
// utilisation-aware policy. Every expected time is built here from preset literals (quoted next
// to each constant) and the documented cost formulas; batch_step_time() is the one model call
// (the compute of a step is defined as that function). One simulation per TEST (ctest runs each
// TEST in its own process).
#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "interconnects/pcie_protocol.hpp"
#include "models/gpu/copy_engine.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "serving/engine.hpp"
#include "serving/load_paths/registry.hpp"
#include "tests/sim/serving_test_util.hpp"

namespace kappasim {
namespace serving_engine_test {
namespace {

using namespace kappasim::testing;

// ---- hand numbers ----------------------------------------------------------------------------
// ServingSpec defaults (serving/serving_spec.hpp).
constexpr double kNativeFixed = 0.1e-3;  // native_request_fixed (native_per_block 0)
constexpr double kChunk = 256;           // chunk_tokens
// presets/gpus/h100-sxm5.yaml
constexpr double kDmaOverhead = 2.36e-6;  // dma_copy_overhead
// presets/links/pcie5.yaml
// Wire bytes per payload byte of a read: completions of 128 B (RCB) with 20 B (3-DW) framing,
// plus an 8 B ACK DLLP per 4 TLPs for the request.
//   SM read, 64 B requests: 1 + 20/64 + 2/64;  DMA read, 512 B requests: 1 + 4·20/512 + 2/512.
const double kSmReadCost = 1 + 20.0 / 64 + 2.0 / 64;
const double kDmaReadCost = 1 + 4 * 20.0 / 512 + 2.0 / 512;
// Little's law on 768 read tags held one 1 µs round trip each.
const double kSmTags = 768 * 64 / kRtt;    // 49.152 GB/s
const double kDmaTags = 768 * 512 / kRtt;  // 393 GB/s
// presets/host-memory: 8 channels × MT/s × 8 B × dram_efficiency 0.8, per socket.
const double kDramDgxH100 = 8 * 4400e6 * 8 * 0.8;  // DDR5-4400: 225.28 GB/s
const double kDramEpyc = 8 * 3200e6 * 8 * 0.8;     // DDR4-3200: 163.84 GB/s
// B_kv per token = 2 (K and V) × layers × KV heads × head_dim × 2 B (BF16).
constexpr double kBkvQwenGpuTp8 = 2.0 * 94 * 1 * 128 * 2;  // Qwen3-235B-A22B, 4 KV heads
                                                           // replicated to 1 per GPU at TP 8

// The payload rate of one H2D copy alone on the DGX H100 (local pool): the tightest of DRAM,
// the link's down (data) and up (requests, ACKs) directions, HBM and the read tags.
double solo_rate(double data_cost, double reverse_cost, double tags) {
  const double hbm = 3.35e12 * 0.92;
  return std::min({kDramDgxH100, kWire / data_cost, kWire / reverse_cost, hbm, tags});
}
const double kSmReadReverse = 24.0 / 64 + 2.0 / 64;  // MRd (4-DW) + ACK per completion
const double kDmaReadReverse = 24.0 / 512 + 4 * 2.0 / 512;

// ---- helpers ---------------------------------------------------------------------------------

struct Outcome {
  std::vector<RequestRecord> recs;
  SummaryBuilder::Totals totals;
  const RequestRecord& rec(std::uint64_t id) const {
    for (const auto& r : recs)
      if (r.id == id) return r;
    throw std::logic_error("no record for request " + std::to_string(id));
  }
};

Outcome serve(const RunSpec& spec, std::vector<Request> rs) {
  VectorSource src(std::move(rs));
  Outcome out;
  EngineSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r) { out.recs.push_back(r); };
  out.totals = run_serving(spec, src, sinks);
  return out;
}

// ---- isolated requests -------------------------------------------------------------------------

TEST(ServingEngine, KernelPathIsolatedRequestIsRetrieveKernelRoundTripAndBytes) {
  // The h100 preset with the test stack and a copy kernel of one one-warp block of 8 B loads
  // per SM (a kernel with few warps resident: its loads in flight bind, the bound sm_inflight).
  const RunSpec spec = run_spec(
      "model: llama-3.1-8b\nsystem: h100\ntrace: false\nworkload: {type: narrativeqa}\n"
      "serving: {stack: {family: lmcache, store: blocking, retrieve_fixed: 0.5 ms, "
      "retrieve_hash_per_chunk: 0.1 ms, store_fixed: 1.8 ms, copy_kernel: {load_width: 8 B, "
      "threads_per_block: 32, blocks_per_sm: 1}}, "
      "tp: 1, warm_tier: true, store: none, load_path: kernel}\n");
  const std::int64_t K = 4096, T = 128;  // 16 chunks of 256
  const Outcome o = serve(spec, {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];

  // Which resource binds an SM read alone: the link's down direction (46.77 GB/s) is below the
  // read-tag limit (49.15 GB/s) and far below DRAM (225 GB/s) and the up direction (155 GB/s);
  // but the kernel's own loads in flight bind first (links, Little's law): 132 SMs × 1 resident
  // warp × 1 load × 32 threads × 8 B per 1 µs round trip = 33.792 GB/s, and a load-bound read
  // pays its round trips inside that rate (no separate first one).
  const double link = kWire / kSmReadCost;
  ASSERT_LT(link, kSmTags);
  ASSERT_LT(link, kDramDgxH100);
  ASSERT_EQ(solo_rate(kSmReadCost, kSmReadReverse, kSmTags), link);
  const double rate = 132.0 * 1 * 32 * 8 / kRtt;
  ASSERT_LT(rate, link);
  // The protocol module agrees with the hand rate.
  const PcieProtocol p = PcieProtocol::from(spec.system.host_link, "l");
  EXPECT_NEAR(payload_bandwidth(p, PcieOp::SmRead), link, 1e-6 * link);
  EXPECT_NEAR(read_tag_limit_Bps(p, PcieOp::SmRead), kSmTags, 1e-3);

  const double chunks = K / kChunk;
  const double bytes = K * kBkv8b;
  const double load =
      kRetrieveFixed + chunks * kRetrievePerChunk + chunks * kBlockOverhead + bytes / rate;
  EXPECT_NEAR(copy_kernel_fixed_s(spec.system.gpu, 16), chunks * kBlockOverhead, 1e-18);
  const double compute = step_compute(spec, {{double(T), double(K), true}});
  EXPECT_NEAR(r.load_s, load, tol(load));
  EXPECT_NEAR(r.compute_s, compute, 1e-15);
  EXPECT_NEAR(r.ttft_s, kStepOverhead + load + compute, tol(kStepOverhead + load + compute));
  EXPECT_NEAR(r.queue_s, 0, 1e-12);
  EXPECT_EQ(r.cached_tokens, K);
  EXPECT_EQ(r.computed_tokens, T);
  EXPECT_DOUBLE_EQ(r.kappa_ratio, 32);
  EXPECT_DOUBLE_EQ(r.bytes_loaded, bytes);
  EXPECT_DOUBLE_EQ(r.bytes_stored, 0);
  EXPECT_EQ(r.steps, 1);
  EXPECT_EQ(r.load_path, "kernel");
  // The copies at the kernel's own Little's-law rate (15.9 ms) outweigh the software (~2.1 ms):
  // the bound is the kernel's loads in flight, named apart from the read tags.
  EXPECT_EQ(r.load_bound, "sm_inflight");
  // Totals: the link carried the bytes from the copy kernel's start to its last byte.
  EXPECT_DOUBLE_EQ(o.totals.h2d_bytes_per_gpu, bytes);
  const double link_time = chunks * kBlockOverhead + bytes / rate;
  EXPECT_NEAR(o.totals.link_busy_s, link_time, tol(link_time));
  // The run's link capacity is the link's (wire and read tags: 46.77 GB/s), not the kernel's
  // own loads in flight (a property of the kernel, reported as the bound sm_inflight).
  EXPECT_NEAR(o.totals.link_capacity_Bps, link, 1e-6 * link);
  EXPECT_NEAR(o.totals.simulated_time_s, r.ttft_s, 1e-12);
  EXPECT_EQ(o.totals.requests_rejected, 0u);
}

TEST(ServingEngine, BlockDmaIsolatedRequestPaysOneCopyPer16TokenBlock) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) +
                                "serving: {" KAPPASIM_TEST_NATIVE_STACK
                                "tp: 1, warm_tier: true, store: none, load_path: block_dma}\n");
  const std::int64_t K = 4096, T = 128;
  const Outcome o = serve(spec, {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];

  // DMA reads alone: the link's down direction (54.2 GB/s) binds; read tags allow 393 GB/s.
  const double rate = solo_rate(kDmaReadCost, kDmaReadReverse, kDmaTags);
  ASSERT_EQ(rate, kWire / kDmaReadCost);
  const double copies = std::ceil(K / 16.0);  // 256
  // copies × dma_copy_overhead + (copies − 1) × RTT between copies + the first copy's RTT.
  const double fixed = copies * kDmaOverhead + (copies - 1) * kRtt;
  EXPECT_NEAR(dma_stream_fixed_s(spec.system.gpu, 256, kRtt), fixed, 1e-15);
  const double bytes = K * kBkv8b;
  const double load = kNativeFixed + fixed + kRtt + bytes / rate;
  const double compute = step_compute(spec, {{double(T), double(K), true}});
  EXPECT_NEAR(r.load_s, load, tol(load));
  EXPECT_NEAR(r.ttft_s, kStepOverhead + load + compute, tol(kStepOverhead + load + compute));
  EXPECT_EQ(r.cached_tokens, K);
  EXPECT_EQ(r.computed_tokens, T);
  EXPECT_EQ(r.load_path, "block_dma");
}

// serving.stack.load: async (vLLM's OffloadingConnector): the same isolated request's load runs
// before the step that computes it instead of inside it, so its TTFT is the same hardware sum
// (this stack gives no empty_step: an idle engine hands the request over as its load ends).
const char* const kAsyncNativeStack =
    "stack: {family: vllm_native, store: blocking, load: async, retrieve_fixed: 0.1 ms, "
    "store_fixed: 0.1 ms}, ";

TEST(ServingEngine, AnAsyncLoadRunsBeforeTheStepThatComputes) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {" + kAsyncNativeStack +
                                "tp: 1, warm_tier: true, store: none, load_path: block_dma}\n");
  const std::int64_t K = 4096, T = 128;
  const Outcome o = serve(spec, {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  const double rate = solo_rate(kDmaReadCost, kDmaReadReverse, kDmaTags);
  const double fixed = 256 * kDmaOverhead + 255 * kRtt;  // 256 copies of 16-token blocks
  const double load = kNativeFixed + fixed + kRtt + K * kBkv8b / rate;
  const double compute = step_compute(spec, {{double(T), double(K), true}});
  EXPECT_NEAR(o.recs[0].load_s, load, tol(load));
  EXPECT_NEAR(o.recs[0].ttft_s, load + kStepOverhead + compute,
              tol(load + kStepOverhead + compute));
}

// An async load's request stores its prompt's newly computed blocks when its prefill ends, as
// vLLM's OffloadingConnector does (its store starts at _next_stored_block_idx, past the blocks it
// loaded): A (document 1, 4,096 warm prefix tokens + 130 new) loads 256 16-token blocks and
// stores the full blocks of its 4,226 tokens past them, floor(4,226 / 16) - 256 = 8. B (document
// 1 again, a second later, 4,096 + 8) loads the same 256 blocks and has no new full block
// (floor(4,104 / 16) = 256): nothing new is stored, the loaded blocks not again. 8 in all.
TEST(ServingEngine, AnAsyncLoadsRequestStoresOnlyItsNewFullBlocks) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {" + kAsyncNativeStack +
                                "tp: 1, warm_tier: true, store: stack, load_path: block_dma}\n");
  const Outcome o = serve(spec, {request(1, 0, 4096, 130, 1), request(2, 1, 4096, 8, 1)});
  ASSERT_EQ(o.recs.size(), 2u);
  EXPECT_EQ(o.rec(1).cached_tokens, 4096);
  EXPECT_EQ(o.rec(2).cached_tokens, 4096);
  EXPECT_EQ(o.totals.tier_stored_chunks, 8);
}

// vLLM's native connector: the store's fixed software cost is paid by each request that stores a
// new full block, not by one whose blocks the tier already holds (_get_reqs_to_store yields no
// job for it). Two requests on one 1,024-token document, each with 8 tokens of its own
// (nothing cached yet: both computed), arrive together and finish in the same step: the first
// stores the document's 1,024 / 16 = 64 blocks, the second none (the same keys, placed a moment
// before; its own 8 tokens fill no block). One request's store_fixed, 0.1 ms, not two.
TEST(ServingEngine, ANativeRequestWithNoNewBlockPaysNoStoreFixedCost) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {" + kAsyncNativeStack +
                                "tp: 1, store: stack, load_path: block_dma}\n");
  const Outcome o = serve(spec, {request(1, 0, 1024, 8, 7), request(2, 0, 1024, 8, 7)});
  ASSERT_EQ(o.recs.size(), 2u);
  EXPECT_EQ(o.rec(1).ttft_s, o.rec(2).ttft_s);  // one step
  EXPECT_EQ(o.totals.tier_stored_chunks, 64);
  EXPECT_NEAR(o.totals.stack_store_s, 0.1e-3, 1e-12);
}

// What an async load buys: it overlaps other requests' steps. A (6,000 new tokens) takes two
// steps of the 4,096-token budget; B (K = 4,096 cached, T = 128) arrives 1 ms into A's first
// step, is admitted as A's second step starts (its blocks; no budget), loads during it (the load
// above, ~10 ms, against a ~50 ms step) and computes in the third step. A's steps hold A's tokens
// only and no load: A's TTFT is its two steps alone; B's ends with the third step.
TEST(ServingEngine, AnAsyncLoadOverlapsAnotherRequestsStep) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {" + kAsyncNativeStack +
                                "tp: 1, warm_tier: true, store: none, load_path: block_dma}\n");
  const std::int64_t K = 4096, T = 128;
  const Outcome o = serve(spec, {request(1, 0, 0, 6000), request(2, 1e-3, K, T)});
  ASSERT_EQ(o.recs.size(), 2u);
  const RequestRecord& a = o.recs[0].id == 1 ? o.recs[0] : o.recs[1];
  const RequestRecord& b = o.recs[0].id == 1 ? o.recs[1] : o.recs[0];
  const double s1 = kStepOverhead + step_compute(spec, {{4096.0, 0.0, false}});
  const double s2 = kStepOverhead + step_compute(spec, {{1904.0, 4096.0, true}});
  const double rate = solo_rate(kDmaReadCost, kDmaReadReverse, kDmaTags);
  const double load = kNativeFixed + 256 * kDmaOverhead + 256 * kRtt + K * kBkv8b / rate;
  ASSERT_LT(load, s2);                               // it ends inside A's second step
  EXPECT_NEAR(a.ttft_s, s1 + s2, 1e-6 * (s1 + s2));  // the HBM the copies share: under 1 ppm
  EXPECT_NEAR(b.load_s, load, 1e-3 * load);          // its DMA shares HBM with A's step
  EXPECT_NEAR(b.queue_s, s1 - 1e-3, 1e-12);          // admitted as A's second step starts
  const double s3 = kStepOverhead + step_compute(spec, {{double(T), double(K), true}});
  EXPECT_NEAR(b.ttft_s, s1 + s2 + s3 - 1e-3, 1e-6 * (s1 + s2 + s3));
}

// Two async loads on one rank: the worker's thread issues one request at a time and the copies
// queue on one CUDA stream, so B's CPU work (the stack's 0.1 ms per request) runs while A's
// copies do, and B's copies start as A's end. Both arrive at t = 0 with K = 65,536 cached
// tokens (A's load ~160 ms, far longer than A's 16-token step): B's load ends at
// 2 x load - 0.1 ms, its load_s is its own (CPU + copies, not the wait for A's copies), and it
// computes at once in the next step.
TEST(ServingEngine, AsyncLoadsOnOneRankOverlapTheNextRequestsCpuWithTheCopies) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {" + kAsyncNativeStack +
                                "tp: 1, warm_tier: true, store: none, load_path: block_dma}\n");
  const std::int64_t K = 65536, T = 16;
  const Outcome o = serve(spec, {request(1, 0, K, T), request(2, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 2u);
  const RequestRecord& a = o.recs[0].id == 1 ? o.recs[0] : o.recs[1];
  const RequestRecord& b = o.recs[0].id == 1 ? o.recs[1] : o.recs[0];
  const double rate = solo_rate(kDmaReadCost, kDmaReadReverse, kDmaTags);
  const double n = K / 16.0;
  const double load = kNativeFixed + n * kDmaOverhead + n * kRtt + K * kBkv8b / rate;
  const double step = kStepOverhead + step_compute(spec, {{double(T), double(K), true}});
  ASSERT_LT(step, load - kNativeFixed);  // A's step ends before B's copies do
  EXPECT_NEAR(a.load_s, load, tol(load));
  EXPECT_NEAR(a.ttft_s, load + step, tol(load + step));
  EXPECT_NEAR(b.load_s, load, 1e-9 * load);
  const double b_end = 2 * load - kNativeFixed;
  EXPECT_NEAR(b.ttft_s, b_end + step, 1e-9 * b_end);
  // The link carried A's copies, then B's, back to back: 2 x (load - the 0.1 ms of CPU before
  // the copies) of busy time. B's wait for A's copies is A's link time, not counted again (it
  // was: an async run's link busy share passed 100%).
  const double copies = load - kNativeFixed;
  EXPECT_NEAR(o.totals.link_busy_s, 2 * copies, 1e-9 * copies);
  EXPECT_LE(o.totals.link_busy_s, o.totals.simulated_time_s);
}

// The hand-off at step granularity (vLLM v1; docs/serving-stacks.md "When an async load's
// request runs"), with an empty engine iteration of E = 1 ms (empty_step). An idle server: the
// request arrives at t = 0; the step that parks it schedules no token (an empty step: E, then
// its worker starts the copies, start_load_kv); empty steps follow back to back and the first
// whose get_finished runs after the copies end (at E + load) reports them; the next step
// computes the request: TTFT = E + E x ceil(load / E) + step overhead + compute.
const char* const kAsyncHandoffStack =
    "stack: {family: vllm_native, store: blocking, load: async, retrieve_fixed: 0.1 ms, "
    "store_fixed: 0.1 ms, empty_step: 1 ms}, ";

TEST(ServingEngine, AnAsyncLoadIsSeenAtTheEndOfAnEmptyStepOnAnIdleServer) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {" + kAsyncHandoffStack +
                                "tp: 1, warm_tier: true, store: none, load_path: block_dma}\n");
  const std::int64_t K = 4096, T = 128;
  const Outcome o = serve(spec, {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  const double E = 1e-3;
  const double rate = solo_rate(kDmaReadCost, kDmaReadReverse, kDmaTags);
  const double load = kNativeFixed + 256 * kDmaOverhead + 256 * kRtt + K * kBkv8b / rate;
  const double steps = std::ceil(load / E);
  ASSERT_GT(steps - load / E, 0.01);  // not at an empty step's end: the rounding is robust
  ASSERT_GT(load / E - (steps - 1), 0.01);
  const double compute = step_compute(spec, {{double(T), double(K), true}});
  const double ttft = E + E * steps + kStepOverhead + compute;
  EXPECT_NEAR(o.recs[0].load_s, load, tol(load));
  EXPECT_NEAR(o.recs[0].ttft_s, ttft, tol(ttft));
}

// Under load: A (4,000 new tokens, one output token) runs its prefill step from t = 0; B (K =
// 4,096 cached, T = 128) arrives 1 ms in. vLLM's scheduler sees B only at the next schedule(),
// after A's step: that step parks B and, A done, schedules no token (an empty step, E); B's
// copies start at its end, empty steps follow until the one after they end, then B's step:
// TTFT_B = s1 - 1 ms + E + E x ceil(load / E) + s2.
TEST(ServingEngine, AnAsyncLoadArrivingDuringAStepWaitsForItsEnd) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {" + kAsyncHandoffStack +
                                "tp: 1, warm_tier: true, store: none, load_path: block_dma}\n");
  const std::int64_t K = 4096, T = 128;
  const Outcome o = serve(spec, {request(1, 0, 0, 4000), request(2, 1e-3, K, T)});
  ASSERT_EQ(o.recs.size(), 2u);
  const RequestRecord& a = o.recs[0].id == 1 ? o.recs[0] : o.recs[1];
  const RequestRecord& b = o.recs[0].id == 1 ? o.recs[1] : o.recs[0];
  const double E = 1e-3;
  const double s1 = kStepOverhead + step_compute(spec, {{4000.0, 0.0, true}});
  ASSERT_GT(s1, 10e-3);  // a long step: B waits for most of it
  EXPECT_NEAR(a.ttft_s, s1, tol(s1));
  const double rate = solo_rate(kDmaReadCost, kDmaReadReverse, kDmaTags);
  const double load = kNativeFixed + 256 * kDmaOverhead + 256 * kRtt + K * kBkv8b / rate;
  const double steps = std::ceil(load / E);
  ASSERT_GT(steps - load / E, 0.01);
  ASSERT_GT(load / E - (steps - 1), 0.01);
  const double s2 = kStepOverhead + step_compute(spec, {{double(T), double(K), true}});
  const double ttft = s1 - 1e-3 + E + E * steps + s2;
  EXPECT_NEAR(b.load_s, load, tol(load));
  EXPECT_NEAR(b.queue_s, s1 - 1e-3, 1e-12);  // admitted (parked) as A's step ends
  EXPECT_NEAR(b.ttft_s, ttft, tol(ttft));
}

// An async load is the copy engines' DMA copies outside the steps: a copy kernel cannot run
// beside the steps it would take SMs from, so the kernel path with an async stack is refused,
// naming the key.
TEST(ServingEngine, AnAsyncLoadByACopyKernelIsRefused) {
  // An LMCache-family stack told to load asynchronously (the native family has no kernel path:
  // the config already refuses it there).
  const RunSpec spec = run_spec(std::string(kLlama8bH100) +
                                "serving: {stack: {family: lmcache, load: async}, tp: 1, "
                                "warm_tier: true, store: none, load_path: kernel}\n");
  VectorSource src({request(1, 0, 4096, 128)});
  try {
    run_serving(spec, src, EngineSinks{});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("serving.load_path: kernel"), std::string::npos)
        << e.what();
  }
}

// Async loads on DP-attention ranks: each rank's worker loads its own requests' KV over its own
// GPU's link. Two requests at t = 0 go to the two ranks (vLLM's DP balancer: the second sees one
// waiting on rank 0) and load at once, each in the lone request's time (two GPUs of one socket
// draw 2 x 54 GB/s of its 225 GB/s: nothing shared binds).
TEST(ServingEngine, AsyncLoadsOfDpRanksRunOnTheirOwnGpus) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {" + kAsyncNativeStack +
                                "tp: 1, warm_tier: true, store: none, load_path: block_dma, "
                                "parallelism: {dp_attention: 2}}\n");
  const std::int64_t K = 4096, T = 128;
  const Outcome o = serve(spec, {request(1, 0, K, T, 1), request(2, 0, K, T, 2)});
  ASSERT_EQ(o.recs.size(), 2u);
  const double rate = solo_rate(kDmaReadCost, kDmaReadReverse, kDmaTags);
  const double load = kNativeFixed + 256 * kDmaOverhead + 256 * kRtt + K * kBkv8b / rate;
  for (const RequestRecord& r : o.recs) EXPECT_NEAR(r.load_s, load, tol(load)) << r.id;
}

// Async loads under PP: every stage's GPU loads its own layers' share at once (stage workers
// start together), so a request's load moves half of Llama-3.1-8B's 32 layers per GPU (16 each)
// in as many block copies (each half as large).
TEST(ServingEngine, AnAsyncLoadUnderPipelineStagesLoadsEachStagesLayers) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {" + kAsyncNativeStack +
                                "tp: 1, warm_tier: true, store: none, load_path: block_dma, "
                                "parallelism: {pp: 2}}\n");
  const std::int64_t K = 4096, T = 128;
  const Outcome o = serve(spec, {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  const double rate = solo_rate(kDmaReadCost, kDmaReadReverse, kDmaTags);
  const double load = kNativeFixed + 256 * kDmaOverhead + 256 * kRtt + K * kBkv8b / 2 / rate;
  EXPECT_NEAR(o.recs[0].load_s, load, tol(load));
}

// Two isolated requests (100 s apart): one whose load outlasts its compute, one the other way
// round, so both arms of the pipeline's max() are checked.
TEST(ServingEngine, LayerwiseStepGranularityIsFillAndDrainOfThePipeline) {
  const RunSpec spec =
      run_spec(std::string(kLlama8bH100) +
               "serving: {" KAPPASIM_TEST_STACK
               "tp: 1, warm_tier: true, store: none, load_path: layerwise, granularity: step}\n");
  const std::int64_t K = 4096;
  const std::vector<std::int64_t> Ts = {128, 4096};
  const Outcome o = serve(spec, {request(1, 0, K, Ts[0]), request(2, 100, K, Ts[1])});
  ASSERT_EQ(o.recs.size(), 2u);
  const double L = 32, chunks = K / kChunk, bytes = K * kBkv8b;
  const double rate = solo_rate(kDmaReadCost, kDmaReadReverse, kDmaTags);
  const double retrieve = kRetrieveFixed + chunks * kRetrievePerChunk;
  // One DMA per layer per chunk on one stream, as one flow.
  const double copies = chunks * L;
  const double load_time = copies * kDmaOverhead + (copies - 1) * kRtt + kRtt + bytes / rate;
  bool load_bound_seen = false, compute_bound_seen = false;
  for (std::size_t i = 0; i < 2; ++i) {
    const RequestRecord& r = o.recs[i];
    ASSERT_EQ(r.id, i + 1);
    const StepTime st =
        batch_step_time(spec.model, spec.system.gpu, 1, {{double(Ts[i]), double(K), true}}, "bf16");
    const double compute = st.total.compute_time_s;
    const double drain = load_time + st.last_layer_s;  // last layer after the last load
    const double fill = load_time / L + compute;       // first layer's load, then compute
    (drain > fill ? load_bound_seen : compute_bound_seen) = true;
    const double ttft = kStepOverhead + retrieve + std::max(drain, fill);
    EXPECT_NEAR(r.ttft_s, ttft, tol(ttft)) << r.id;
    EXPECT_NEAR(r.load_s, retrieve + load_time, tol(retrieve + load_time)) << r.id;
    EXPECT_NEAR(r.compute_s, compute, 1e-15) << r.id;
    EXPECT_NEAR(r.queue_s, 0, 1e-12) << r.id;
  }
  EXPECT_TRUE(load_bound_seen);
  EXPECT_TRUE(compute_bound_seen);
  EXPECT_NEAR(o.totals.link_busy_s, 2 * load_time, tol(2 * load_time));
}

// Layer granularity: layer 0's load, then L − 1 rounds of max(per-layer load, per-layer compute),
// then the last layer's compute.
TEST(ServingEngine, LayerwiseLayerGranularityOverlapsEachLayerWithTheNextLoad) {
  const RunSpec spec =
      run_spec(std::string(kLlama8bH100) +
               "serving: {" KAPPASIM_TEST_STACK
               "tp: 1, warm_tier: true, store: none, load_path: layerwise, granularity: layer}\n");
  const std::int64_t K = 4096;
  const std::vector<std::int64_t> Ts = {128, 4096};
  const Outcome o = serve(spec, {request(1, 0, K, Ts[0]), request(2, 100, K, Ts[1])});
  ASSERT_EQ(o.recs.size(), 2u);
  const double L = 32, chunks = K / kChunk, bytes = K * kBkv8b;
  const double rate = solo_rate(kDmaReadCost, kDmaReadReverse, kDmaTags);
  const double retrieve = kRetrieveFixed + chunks * kRetrievePerChunk;
  const double a = chunks * kDmaOverhead + (chunks - 1) * kRtt + kRtt + bytes / L / rate;
  bool load_bound_seen = false, compute_bound_seen = false;
  for (std::size_t i = 0; i < 2; ++i) {
    const RequestRecord& r = o.recs[i];
    const double compute = step_compute(spec, {{double(Ts[i]), double(K), true}});
    const double c = compute / L;
    (a > c ? load_bound_seen : compute_bound_seen) = true;
    const double ttft = kStepOverhead + retrieve + a + (L - 1) * std::max(a, c) + c;
    // 2 rounded waits per layer: allow 1 ps each.
    EXPECT_NEAR(r.ttft_s, ttft, 2 * L * 1e-12 + 1e-9 * ttft) << r.id;
    // load_s: the CPU-side costs plus the time the links moved KV (L transfers of `a` each,
    // whether or not compute hid them).
    EXPECT_NEAR(r.load_s, retrieve + L * a, 2 * L * 1e-12 + 1e-9 * L * a) << r.id;
  }
  EXPECT_TRUE(load_bound_seen);
  EXPECT_TRUE(compute_bound_seen);
  EXPECT_NEAR(o.totals.link_busy_s, 2 * L * a, 4 * L * 1e-12 + 1e-9 * L * a);
}

// LMCache finds full chunks only: K = 1000 has 3 chunks (768 tokens) in the tier; the rest of the
// prompt is computed. A prefix shorter than a chunk gives no hit and no load at all.
TEST(ServingEngine, CachedTokensAreWholeChunks) {
  const RunSpec spec =
      run_spec(std::string(kLlama8bH100) + "serving: {" KAPPASIM_TEST_STACK
                                           "tp: 1, warm_tier: true, store: none}\n");
  const Outcome o =
      serve(spec, {request(1, 0, 1000, 24), request(2, 100, 255, 1), request(3, 200, 512, 1)});
  ASSERT_EQ(o.recs.size(), 3u);
  const RequestRecord& a = o.rec(1);
  EXPECT_EQ(a.cached_tokens, 768);                // floor(1000 / 256) · 256
  EXPECT_EQ(a.computed_tokens, 1000 + 24 - 768);  // 256
  EXPECT_DOUBLE_EQ(a.bytes_loaded, 768 * kBkv8b);
  const double rate = kWire / kSmReadCost;
  const double load =
      kRetrieveFixed + 3 * kRetrievePerChunk + 3 * kBlockOverhead + kRtt + 768 * kBkv8b / rate;
  EXPECT_NEAR(a.load_s, load, tol(load));
  const double ttft = kStepOverhead + load + step_compute(spec, {{256, 768, true}});
  EXPECT_NEAR(a.ttft_s, ttft, tol(ttft));

  const RequestRecord& b = o.rec(2);  // 255 cached tokens: no full chunk
  EXPECT_EQ(b.cached_tokens, 0);
  EXPECT_EQ(b.computed_tokens, 256);
  EXPECT_EQ(b.load_s, 0);
  EXPECT_DOUBLE_EQ(b.bytes_loaded, 0);
  const double ttft_b = kStepOverhead + step_compute(spec, {{256, 0, true}});
  EXPECT_NEAR(b.ttft_s, ttft_b, tol(ttft_b));

  const RequestRecord& c = o.rec(3);  // two full chunks, one new token
  EXPECT_EQ(c.cached_tokens, 512);
  EXPECT_EQ(c.computed_tokens, 1);
  EXPECT_DOUBLE_EQ(c.kappa_ratio, 512);
}

// Issue 25: a model with sliding-window layers is served on a unified KV cache (vLLM with a KV
// connector turns its hybrid KV cache manager off), so every layer's KV is loaded, sliding ones
// included: gpt-oss-20b, 24 layers × 2 (K, V) × 8 KV heads × 64 × 2 B = 49,152 B per token, twice
// the 12 full layers' bytes. K = 1000 loads 3 whole chunks (768 tokens) at the link-bound rate;
// the step's compute is batch_step_time's, whose sliding layers attend over their 128-token
// window only (tests/unit/layer_pattern_test.cpp).
TEST(ServingEngine, SlidingWindowModelLoadsEveryLayersKvOnAUnifiedCache) {
  const RunSpec spec = run_spec(
      "model: gpt-oss-20b\nsystem: h100\ntrace: false\nworkload: {type: narrativeqa}\n"
      "serving: {" KAPPASIM_TEST_STACK "tp: 1, warm_tier: true, store: none}\n");
  const Outcome o = serve(spec, {request(1, 0, 1000, 24)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& a = o.rec(1);
  const double bkv = 24.0 * 2 * 8 * 64 * 2;
  EXPECT_EQ(a.cached_tokens, 768);
  EXPECT_EQ(a.computed_tokens, 256);
  EXPECT_DOUBLE_EQ(a.bytes_loaded, 768 * bkv);
  const double rate = kWire / kSmReadCost;
  const double load =
      kRetrieveFixed + 3 * kRetrievePerChunk + 3 * kBlockOverhead + kRtt + 768 * bkv / rate;
  EXPECT_NEAR(a.load_s, load, tol(load));
  const double ttft = kStepOverhead + load + step_compute(spec, {{256, 768, true}});
  EXPECT_NEAR(a.ttft_s, ttft, tol(ttft));
}

// Issue 25, serving.kv_cache: hybrid (a hybrid-aware connector): the same request loads only
// what the prefix leaves: 12 full layers × 768 tokens + 12 sliding layers × their 128-token
// window, × 2048 B per layer and token = (9216 + 1536) × 2048 = 22,020,096 B, against the
// unified cache's 24 × 768 × 2048 = 37,748,736 B above. The copy kernel's chunk count (3) and
// its fixed costs are the same; only the bytes over the link change.
TEST(ServingEngine, HybridKvCacheLoadsTheSlidingLayersWindowOnly) {
  const RunSpec spec = run_spec(
      "model: gpt-oss-20b\nsystem: h100\ntrace: false\nworkload: {type: narrativeqa}\n"
      "serving: {" KAPPASIM_TEST_STACK "tp: 1, warm_tier: true, store: none, kv_cache: hybrid}\n");
  const Outcome o = serve(spec, {request(1, 0, 1000, 24)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& a = o.rec(1);
  const double bytes = (12.0 * 768 + 12.0 * 128) * 2 * 8 * 64 * 2;
  EXPECT_DOUBLE_EQ(bytes, 22020096.0);
  EXPECT_EQ(a.cached_tokens, 768);
  EXPECT_DOUBLE_EQ(a.bytes_loaded, bytes);
  EXPECT_DOUBLE_EQ(o.totals.h2d_bytes_per_gpu, bytes);
  const double rate = kWire / kSmReadCost;
  const double load =
      kRetrieveFixed + 3 * kRetrievePerChunk + 3 * kBlockOverhead + kRtt + bytes / rate;
  EXPECT_NEAR(a.load_s, load, tol(load));
  const double ttft = kStepOverhead + load + step_compute(spec, {{256, 768, true}});
  EXPECT_NEAR(a.ttft_s, ttft, tol(ttft));
}

// A linear-attention model is served under serving.kv_cache: hybrid. Qwen3-Next-80B-A3B at TP 4
// on the H100 node: each GPU holds 1 of the 2 KV heads (replicated) of 256, 2 × 256 × 2 B =
// 1024 B per full layer and token, 12 full layers → 12,288 B per token; and a quarter of each of
// the 36 Gated DeltaNet states (1,097,728 / 4 = 274,432 B), 9,879,552 B, loaded once. K = 768
// (3 whole chunks of 256): per GPU 768 × 12,288 + 9,879,552 = 19,316,736 B; over the 4 GPUs'
// links 77,266,944 B. The same model without the setting is refused naming
// model.layer_pattern (tests/unit/layer_pattern_test.cpp).
TEST(ServingEngine, HybridKvCacheServesQwen3NextLoadingItsStateOnce) {
  const RunSpec spec = run_spec(
      "model: qwen3-next-80b-a3b\nsystem: h100\ntrace: false\nworkload: {type: narrativeqa}\n"
      "serving: {" KAPPASIM_TEST_STACK "tp: 4, warm_tier: true, store: none, kv_cache: hybrid}\n");
  const Outcome o = serve(spec, {request(1, 0, 1000, 24)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& a = o.rec(1);
  EXPECT_EQ(a.cached_tokens, 768);
  const double per_gpu = 768.0 * 12 * 2 * 256 * 2 + 36.0 * 1097728 / 4;
  EXPECT_DOUBLE_EQ(per_gpu, 19316736.0);
  EXPECT_DOUBLE_EQ(a.bytes_loaded, 4 * per_gpu);
  EXPECT_DOUBLE_EQ(o.totals.h2d_bytes_per_gpu, per_gpu);
  EXPECT_GT(a.compute_s, 0);
}

// TP 8: every GPU loads its shard (one KV head of Qwen3's 4, replicated), and all eight read the
// interleaved pool of the 2-socket EPYC host at once, so host DRAM binds below the link.
TEST(ServingEngine, Tp8LoadsReplicatedKvHeadsAndHostDramBinds) {
  const RunSpec spec = run_spec(
      "model: qwen3-235b-a22b\ntrace: false\nworkload: {type: narrativeqa}\n"
      // The test stack gives no kernel shape (no loads-in-flight bound of its own), so DRAM
      // binds here.
      "system: paper-testbed\n"
      "serving: {" KAPPASIM_TEST_STACK "tp: 8, warm_tier: true, store: none, load_path: kernel}\n");
  const std::int64_t K = 8192, T = 128;  // 32 chunks
  const Outcome o = serve(spec, {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];
  EXPECT_EQ(kBkvQwenGpuTp8, 48128);
  EXPECT_DOUBLE_EQ(r.bytes_loaded, K * 48128.0 * 8);
  EXPECT_DOUBLE_EQ(o.totals.h2d_bytes_per_gpu, K * 48128.0);

  // Interleaved pool: each GPU's flow reads half its bytes from each socket's DRAM. Eight flows
  // at rate x put 8 · x/2 = 4x on each socket: x <= 163.84 / 4 = 40.96 GB/s. The socket links
  // carry the remote halves of 4 GPUs: 2x <= 144 GB/s. The GPU's own link allows 46.77 GB/s and
  // its read tags 49.15 GB/s. Alone, one GPU would get min(2 · 163.84, 46.77, ...) = 46.77.
  const double per_gpu = kDramEpyc / 4;
  const double alone = std::min({2 * kDramEpyc, kWire / kSmReadCost, kSmTags});
  ASSERT_LT(per_gpu, kWire / kSmReadCost);
  ASSERT_LT(per_gpu, 144e9 / 2);
  ASSERT_LT(per_gpu, alone);  // the direction: eight at once are slower per GPU
  const double chunks = K / kChunk;
  const double transfer = chunks * kBlockOverhead + kRtt + K * kBkvQwenGpuTp8 / per_gpu;
  const double load = kRetrieveFixed + chunks * kRetrievePerChunk + transfer;
  EXPECT_NEAR(r.load_s, load, tol(load));
  const double alone_transfer = chunks * kBlockOverhead + kRtt + K * kBkvQwenGpuTp8 / alone;
  EXPECT_GT(transfer, alone_transfer);
  const double ttft = kStepOverhead + load + step_compute(spec, {{double(T), double(K), true}});
  EXPECT_NEAR(r.ttft_s, ttft, tol(ttft));
}

// ---- invariants of a small generated run ---------------------------------------------------

class RecordingSource : public WorkloadSource {
 public:
  explicit RecordingSource(WorkloadSource& in) : m_in(in) {}
  bool next(Request& out) override {
    if (!m_in.next(out)) return false;
    seen.emplace(out.id, out);
    order.push_back(out.id);
    return true;
  }
  std::string describe() const override { return m_in.describe(); }
  std::map<std::uint64_t, Request> seen;
  std::vector<std::uint64_t> order;

 private:
  WorkloadSource& m_in;
};

TEST(ServingEngine, NarrativeQaRunInvariants) {
  // Cold tier, blocking stores: later questions on a document hit the chunks the first stored.
  const RunSpec spec = run_spec(
      "model: llama-3.1-8b\nsystem: h100\ntrace: false\n"
      "serving: {" KAPPASIM_TEST_STACK
      "tp: 1, store: blocking}\n"
      "workload: {type: narrativeqa, requests: 200, rate: 2, seed: 7}\n");
  auto gen = make_source(spec.workload, static_cast<std::uint64_t>(spec.workload.seed));
  RecordingSource src(*gen);
  std::vector<RequestRecord> recs;
  std::vector<double> finish_clock;
  SummaryBuilder summary;
  EngineSinks sinks;
  sinks.summary = &summary;
  sinks.on_finish = [&](const RequestRecord& r) {
    recs.push_back(r);
    finish_clock.push_back(sc_core::sc_time_stamp().to_seconds());
  };
  std::unique_ptr<ServingEngine> engine;
  run_simulation([&] { engine = std::make_unique<ServingEngine>("engine", spec, src, sinks); });
  const SummaryBuilder::Totals totals = engine->totals(0);

  // V_eff = 80 GB × 0.9 − 2 B × 8,030,261,248 parameters − 4.84 GiB; blocks of 16 × 131,072 B.
  const double params =
      32.0 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336 + 2 * 4096) +
      2 * 128256.0 * 4096 + 4096;
  const double v_eff = 80e9 * 0.9 - 2 * params - 4.84 * 1073741824.0;
  const std::int64_t blocks = static_cast<std::int64_t>(std::floor(v_eff / (16 * kBkv8b)));
  EXPECT_EQ(engine->gpu_kv().total_blocks(), blocks);  // 24,195
  EXPECT_EQ(engine->gpu_kv().used_blocks(), 0);        // everything released at the end
  EXPECT_LE(engine->tier().used_bytes(), engine->tier().capacity_bytes());

  // Every arrival finishes once or is rejected.
  ASSERT_EQ(src.seen.size(), 200u);
  EXPECT_EQ(engine->stats().arrived, 200u);
  EXPECT_EQ(engine->stats().finished + engine->stats().rejected, engine->stats().arrived);
  EXPECT_EQ(recs.size(), engine->stats().finished);
  EXPECT_EQ(summary.requests(), engine->stats().finished);
  std::set<std::uint64_t> ids;
  for (const auto& r : recs) EXPECT_TRUE(ids.insert(r.id).second) << "request " << r.id << " twice";
  std::int64_t rejected_expected = 0;
  for (const auto& [id, q] : src.seen) {
    const bool too_big = (q.prompt_tokens() + 15) / 16 > blocks;
    rejected_expected += too_big;
    if (!too_big) {
      EXPECT_TRUE(ids.count(id)) << "request " << id << " never finished";
    }
  }
  EXPECT_EQ(static_cast<std::int64_t>(engine->stats().rejected), rejected_expected);

  double cached_sum = 0, loaded_sum = 0, prev_finish = -1;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const RequestRecord& r = recs[i];
    const Request& q = src.seen.at(r.id);
    EXPECT_EQ(r.arrival_s, q.arrival_s);
    EXPECT_EQ(r.cached_tokens + r.computed_tokens, q.prompt_tokens()) << r.id;
    EXPECT_EQ(r.cached_tokens % 256, 0) << r.id;
    EXPECT_LE(r.cached_tokens, q.prefix_tokens) << r.id;  // question chunks are never shared
    EXPECT_GE(r.computed_tokens, 1);
    EXPECT_GE(r.steps, (r.computed_tokens + 4095) / 4096) << r.id;  // token budget 4096
    // Times: queue and load non-negative (to the 1 ps clock), TTFT covers queue + load + compute
    // (the kernel path loads before the first step's compute).
    EXPECT_GE(r.queue_s, -1e-12) << r.id;
    EXPECT_GE(r.load_s, 0) << r.id;
    EXPECT_GE(r.ttft_s + 1e-9, r.queue_s + r.compute_s) << r.id;
    EXPECT_GE(r.ttft_s + 1e-9, r.queue_s + r.load_s + r.compute_s) << r.id;
    EXPECT_EQ(r.load_s > 0, r.cached_tokens > 0) << r.id;
    // Finish records come in time order, each at the simulated time it is reported.
    const double fin = r.arrival_s + r.ttft_s;
    EXPECT_NEAR(fin, finish_clock[i], 1e-9) << r.id;
    EXPECT_GE(finish_clock[i], prev_finish) << r.id;
    prev_finish = finish_clock[i];
    EXPECT_DOUBLE_EQ(r.bytes_loaded, r.cached_tokens * kBkv8b);
    cached_sum += static_cast<double>(r.cached_tokens);
    loaded_sum += r.bytes_loaded;
  }
  // The run is not trivial: some requests hit the tier and some queued behind others.
  EXPECT_GT(cached_sum, 0);
  EXPECT_TRUE(std::any_of(recs.begin(), recs.end(),
                          [](const RequestRecord& r) { return r.queue_s > 0.01; }));
  EXPECT_NEAR(totals.h2d_bytes_per_gpu, cached_sum * kBkv8b, 1e-9 * totals.h2d_bytes_per_gpu);
  EXPECT_NEAR(totals.h2d_bytes_per_gpu, loaded_sum, 1e-9 * totals.h2d_bytes_per_gpu);  // tp 1
  EXPECT_LE(cached_sum, totals.tier_hit_chunks * 256);
  EXPECT_NEAR(totals.simulated_time_s, prev_finish, 1e-9);
  EXPECT_EQ(totals.requests_rejected, engine->stats().rejected);
}

// A prompt longer than the whole GPU KV pool is rejected, also when it is the last thing the
// engine sees (nothing runs after it).
TEST(ServingEngine, RejectedRequestIsCountedEvenAtTheEndOfTheRun) {
  const RunSpec spec =
      run_spec(std::string(kLlama8bH100) + "serving: {" KAPPASIM_TEST_STACK
                                           "tp: 1, warm_tier: true, store: none}\n");
  const Outcome o = serve(spec, {request(1, 0, 4096, 128), request(2, 100, 500000, 128)});
  ASSERT_EQ(o.recs.size(), 1u);
  EXPECT_EQ(o.recs[0].id, 1u);
  EXPECT_EQ(o.totals.requests_rejected, 1u);
}

// ---- policies --------------------------------------------------------------------------------
// Three requests at t = 0, in this order: R1 and R2 each hold 12,296 of the 24,195 KV blocks
// (196,608 cached + 128 new tokens), so they cannot run together; R3 is small (1,024 + 128).
// FIFO admits R1, then stops at R2 (head-of-line blocking), so R3 runs with R2 in step 2.
// Utilisation-aware admission skips R2 and runs R3 with R1 in step 1.
struct PolicyCase {
  RunSpec spec;
  std::int64_t K1 = 196608, K3 = 1024, T = 128;
  double rate = kWire / kSmReadCost;
  explicit PolicyCase(const char* policy)
      : spec(run_spec(std::string(kLlama8bH100) +
                      "serving: {" KAPPASIM_TEST_STACK
                      "tp: 1, warm_tier: true, store: none, policy: " +
                      policy + "}\n")) {}
  std::vector<Request> requests() const {
    return {request(1, 0, K1, T), request(2, 0, K1, T), request(3, 0, K3, T)};
  }
  // One step that loads the given first-step requests and computes the batch.
  double step(const std::vector<std::int64_t>& loads, const std::vector<SeqSlice>& batch) const {
    double chunks = 0, tokens = 0;
    for (std::int64_t k : loads) {
      chunks += static_cast<double>(k) / kChunk;
      tokens += static_cast<double>(k);
    }
    return kStepOverhead + static_cast<double>(loads.size()) * kRetrieveFixed +
           chunks * kRetrievePerChunk + chunks * kBlockOverhead + kRtt + tokens * kBkv8b / rate +
           step_compute(spec, batch);
  }
  double fifo_r3() const {
    return step({K1}, {{double(T), double(K1), true}}) +
           step({K1, K3}, {{double(T), double(K1), true}, {double(T), double(K3), true}});
  }
  double utilization_r3() const {
    return step({K1, K3}, {{double(T), double(K1), true}, {double(T), double(K3), true}});
  }
  void check_premise() const {
    const std::int64_t blocks = 24195;  // see NarrativeQaRunInvariants
    const std::int64_t big = (K1 + T + 15) / 16, small = (K3 + T + 15) / 16;
    ASSERT_GT(2 * big, blocks);
    ASSERT_LE(big + small, blocks);
  }
};

TEST(ServingEngine, FifoHeadOfLineBlocksTheSmallRequest) {
  const PolicyCase pc("fifo");
  pc.check_premise();
  const Outcome o = serve(pc.spec, pc.requests());
  ASSERT_EQ(o.recs.size(), 3u);
  const double step1 = pc.step({pc.K1}, {{double(pc.T), double(pc.K1), true}});
  EXPECT_NEAR(o.rec(1).ttft_s, step1, tol(step1));
  EXPECT_NEAR(o.rec(3).queue_s, step1, tol(step1));  // waited for R1's whole step
  EXPECT_NEAR(o.rec(3).ttft_s, pc.fifo_r3(), tol(pc.fifo_r3()));
  EXPECT_NEAR(o.rec(2).ttft_s, pc.fifo_r3(), tol(pc.fifo_r3()));
  EXPECT_GT(pc.fifo_r3(), pc.utilization_r3());
}

TEST(ServingEngine, UtilizationPolicyAdmitsTheSmallRequestPastTheBigOne) {
  const PolicyCase pc("utilization");
  pc.check_premise();
  const Outcome o = serve(pc.spec, pc.requests());
  ASSERT_EQ(o.recs.size(), 3u);
  EXPECT_NEAR(o.rec(3).queue_s, 0, 1e-12);
  EXPECT_NEAR(o.rec(3).ttft_s, pc.utilization_r3(), tol(pc.utilization_r3()));
  EXPECT_NEAR(o.rec(1).ttft_s, pc.utilization_r3(), tol(pc.utilization_r3()));
  // R2 waits for step 1 and then runs alone.
  const double r2 = pc.utilization_r3() + pc.step({pc.K1}, {{double(pc.T), double(pc.K1), true}});
  EXPECT_NEAR(o.rec(2).ttft_s, r2, tol(r2));
  EXPECT_LT(o.rec(3).ttft_s, pc.fifo_r3());
}

// ---- issue 13 items 1-2: compute as an HBM flow ----------------------------------------------

// Unified-HBM tier (B200; the tier's 8 TB/s is above the HBM roof C = 8 TB/s × 0.92), layer-wise
// step granularity: the step's one DMA flow and its compute (one Local flow of h bytes at its
// own demand a = h / t, t its time alone) start together (DMA fixed cost set to 0) on gpu0.hbm.
// A short query over a long cached document is memory-bound: a > C / 2 (checked below). Both
// want more than C / 2, so max-min gives each C / 2 while both run. The copy (X bytes) ends
// first at tx = 2X / C; the compute has moved C/2 · tx = X bytes and moves its other h − X alone
// at a: compute ends at 2X / C + (h − X) / a = t + X (2 / C − 1 / a), longer than t. The
// request's compute time (the breakdown's) is that stretched time; its recorded compute_s (the
// step alone) is t. Before issue 13 the compute was a timed wait of t.
TEST(ServingEngine, UnifiedTierLoadSharesHbmWithTheOverlappingCompute) {
  const RunSpec spec = run_spec(
      "model: llama-3.1-8b\n"
      "system: {preset: unified-hbm, gpu: {preset: b200, dma_copy_overhead: 0 s}}\n"
      "trace: false\nworkload: {type: narrativeqa}\n"
      "serving: {" KAPPASIM_TEST_STACK
      "tp: 1, warm_tier: true, store: none, load_path: layerwise, granularity: step}\n");
  const std::int64_t K = 65536, T = 16;
  const Outcome o = serve(spec, {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  const StepTime st =
      batch_step_time(spec.model, spec.system.gpu, 1, {{double(T), double(K), true}}, "bf16");
  const double t = st.total.compute_time_s, h = st.total.hbm_bytes;
  const double C = 8e12 * 0.92, a = h / t, X = K * kBkv8b;
  ASSERT_GT(a, C / 2);              // memory-bound enough to lose HBM to the copy
  ASSERT_LT(2 * X / C, 2 * h / C);  // the copy ends first
  const double stretched = 2 * X / C + (h - X) / a;
  EXPECT_GT(stretched, 1.01 * t);
  const RequestRecord& r = o.rec(1);
  EXPECT_NEAR(r.time.compute_s, stretched, tol(stretched));
  EXPECT_NEAR(r.compute_s, t, 1e-15);
}

// The kernel path is the only one with copy kernels, and LMCache's retrieve blocks the step:
// every kernel has returned its SMs before the step's compute starts, so no compute step ever
// runs on fewer SMs (the mechanism, CopyStart.ACopyKernelHoldingHalfTheSmsStretchesA
// ComputeBoundStepTwofold, has no effect on today's paths). Eight requests 1 ms apart queue
// behind each other on TP 2 with async stores, so loads, stores and compute follow closely.
TEST(ServingEngine, CopyKernelsHaveReturnedTheirSmsWhenAStepComputes) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) +
                                "serving: {" KAPPASIM_TEST_STACK
                                "tp: 2, warm_tier: true, store: async, load_path: kernel}\n");
  std::vector<Request> rs;
  for (std::uint64_t i = 1; i <= 8; ++i) rs.push_back(request(i, 1e-3 * double(i), 4096, 512));
  VectorSource src(std::move(rs));
  std::unique_ptr<ServingEngine> e;
  run_simulation([&] { e = std::make_unique<ServingEngine>("engine", spec, src, EngineSinks{}); });
  e->check_end();
  EXPECT_EQ(e->stats().finished, 8u);
  // One kernel per GPU per loading step (requests admitted together load in one step).
  EXPECT_GE(e->copy_kernels_started(), 2u);
  EXPECT_EQ(e->copy_kernels_started() % 2, 0u);
  EXPECT_EQ(e->compute_steps_on_fewer_sms(), 0u);
}

// The layer-wise path copies by the mechanism its registration declares (LoadPathCosts::copy),
// as the kernel and block_dma paths do. Declared with the copy kernel, one request's load at
// layer granularity (TP 1) is one copy kernel per layer of Llama-3.1-8B (32), and every layer
// but the last computes while the next layer's kernel holds the GPU's SMs: 31 compute starts on
// fewer SMs.
// Llama-3.1-8B on one H100, layer granularity, the layer-wise path registered (once per
// process) as copying by the copy kernel.
RunSpec layerwise_by_copy_kernel() {
  static const bool registered = [] {
    LoadPathCosts costs = load_path_costs(LoadPath::Layerwise);
    costs.copy = CopyPath::Kernel;
    register_load_path(
        "test_layerwise_kernel", [] { return make_layerwise_load_path(CopyPath::Kernel); }, costs);
    return true;
  }();
  (void)registered;
  return run_spec(std::string(kLlama8bH100) +
                  "serving: {stack: ideal, tp: 1, warm_tier: true, granularity: layer, "
                  "load_path: test_layerwise_kernel}\n");
}

TEST(ServingEngine, LayerwiseCopiesByItsDeclaredCopyKernelWhichHoldsSms) {
  const RunSpec spec = layerwise_by_copy_kernel();
  VectorSource src({request(1, 0, 4096, 512)});
  std::unique_ptr<ServingEngine> e;
  run_simulation([&] { e = std::make_unique<ServingEngine>("engine", spec, src, EngineSinks{}); });
  e->check_end();
  EXPECT_EQ(e->stats().finished, 1u);
  EXPECT_EQ(e->copy_kernels_started(), 32u);
  EXPECT_EQ(e->compute_steps_on_fewer_sms(), 31u);
}

// A layer's compute beside the next layer's copy kernel runs at the free SM fraction only while
// that kernel holds the SMs, then at every SM: the request's TTFT is at most its loads and its
// compute in series (each layer's copy, then each layer's compute) plus the step's overhead. The
// slow-down used to be fixed at the compute's start for its whole length: with LMCache's copy
// kernel holding 131 of 132 SMs a layer's compute-bound kernels ran ~100x slower after a copy
// of a fraction of a millisecond (and a pipeline stage beside another micro-batch's load took
// 4 s for 0.1 s of compute).
TEST(ServingEngine, ComputeBesideACopyKernelIsSlowedOnlyWhileItHoldsTheSms) {
  const RunSpec spec = layerwise_by_copy_kernel();
  const std::int64_t K = 4096, T = 512;
  const Outcome o = serve(spec, {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];
  // The step's compute at every SM, by hand (kernel_timing), and the KV bytes over the link at
  // the copy kernel's link-bound rate (the SmRead wire, 46.77 GB/s: its 32 resident warps per SM
  // keep far more in flight than the wire needs).
  const double compute = step_compute(spec, {{double(T), double(K), true}});
  const double link = kWire / kSmReadCost;
  const double copies = double(K) * kBkv8b / link;
  // Each of the 32 copy kernels pays its fixed cost and round trip; 1 ms covers them with room.
  const double serial = kStepOverhead + copies + compute + 1e-3;
  EXPECT_LT(r.ttft_s, serial) << "copies " << copies << " s, compute " << compute << " s";
  // And no faster than the copies alone, or the compute alone.
  EXPECT_GT(r.ttft_s, copies);
  EXPECT_GT(r.ttft_s, compute);
}

}  // namespace
}  // namespace serving_engine_test
}  // namespace kappasim
