// Issue 12 (items 1, 4, 10): the simulated time base's reach, and where the time went — the
// per-request and per-run time breakdown (serving/time_breakdown.hpp) and the active bound of
// every load. Expected values are built from preset literals and the documented cost formulas
// (tests/sim/serving_test_util.hpp); batch_step_time() is the one model call. One simulation per
// TEST (ctest runs each TEST in its own process).
#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/sim_runner.hpp"
#include "interconnects/flow_network.hpp"
#include "serving/engine.hpp"
#include "tests/sim/serving_test_util.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {
namespace serving_accounting_test {
namespace {

using namespace kappasim::testing;

struct Outcome {
  std::vector<RequestRecord> recs;
  SummaryBuilder::Totals totals;
};

Outcome serve(const RunSpec& spec, std::vector<Request> rs, SummaryBuilder* summary = nullptr) {
  VectorSource src(std::move(rs));
  Outcome out;
  EngineSinks sinks;
  sinks.summary = summary;
  sinks.on_finish = [&](const RequestRecord& r) { out.recs.push_back(r); };
  out.totals = run_serving(spec, src, sinks);
  return out;
}

// ---- item 1: the time base
// -----------------------------------------------------------------------

// 200 ShareGPT requests at 1e-6 per second: the 9th arrives past the 100-day limit (2^63 ps is
// 106.75 days). Before, the run was served with negative TTFTs and exit 0; now the workload is
// rejected before anything is simulated, naming the limit in days and the key to change.
TEST(TimeBase, GeneratedArrivalPastTheLimitIsRejectedUpFront) {
  const RunSpec spec = run_spec(
      "model: llama-3.1-8b\nsystem: h100\ntrace: false\nserving: {tp: 1}\n"
      "workload: {type: sharegpt, requests: 200, rate: 1e-6, seed: 1}\n");
  try {
    make_source(spec.workload, 1, "");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("100 days"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("workload.rate"), std::string::npos) << e.what();
  }
  // Within the limit the same workload is fine (200 requests at 1e-4/s: ~2e6 s).
  const RunSpec ok = run_spec(
      "model: llama-3.1-8b\nsystem: h100\ntrace: false\nserving: {tp: 1}\n"
      "workload: {type: sharegpt, requests: 200, rate: 1e-4, seed: 1}\n");
  EXPECT_NO_THROW(make_source(ok.workload, 1, ""));
}

// A process still waiting past the limit (here: 8 waits of 1.5e6 s = 1.2e7 s, each far below
// 2^63 ps) stops the run there with an InputError naming the limit; before, time ran on past
// 2^63 ps and the run ended "fine".
struct Sleeper : sc_core::sc_module {
  SC_HAS_PROCESS(Sleeper);
  explicit Sleeper(const sc_core::sc_module_name& n) : sc_core::sc_module(n) { SC_THREAD(run); }
  void run() {
    for (int i = 0; i < 8; ++i) sc_core::wait(sc_core::sc_time(1.5e6, sc_core::SC_SEC));
    done = true;
  }
  bool done = false;
};

TEST(TimeBase, RunStillGoingAtTheLimitIsAnInputError) {
  std::unique_ptr<Sleeper> s;
  try {
    run_simulation([&] { s = std::make_unique<Sleeper>("sleeper"); });
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("100 days"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(s->done);
  EXPECT_LE(sim_now_s(), kSimTimeLimitS);
}

// Just inside the limit (8.6e6 s = 99.5 days) a request's TTFT is the same as at time 0: one step
// overhead plus its compute (within the double's resolution at 8.6e6 s, ~2 ns).
TEST(TimeBase, RequestNearTheLimitHasItsIsolatedTtft) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {" KAPPASIM_TEST_STACK
                                                            "tp: 1, store: none}\n");
  const Outcome o = serve(spec, {request(1, 0, 0, 100), request(2, 8.6e6, 0, 100)});
  ASSERT_EQ(o.recs.size(), 2u);
  const double ttft = kStepOverhead + step_compute(spec, {{100.0, 0.0, true}});
  EXPECT_NEAR(o.recs[0].ttft_s, ttft, tol(ttft));
  EXPECT_NEAR(o.recs[1].ttft_s, ttft, 1e-8);
  EXPECT_GE(o.totals.simulated_time_s, 8.6e6);
}

// ---- items 4 and 10: the time breakdown and the active bound ---------------------------------

// Σ of a record's categories (serving/time_breakdown.hpp) is its TTFT.
double parts(const RequestRecord& r) { return r.time.sum(); }

// One request alone on one H100 over PCIe 5 (kernel path, the tier warm, no store), by hand:
// queue 0; load software = retrieve fixed + 16 chunks × per chunk; the copies = 16 blocks × the
// copy kernel's block overhead + one round trip + bytes at the link's SM-read rate (the link's
// down direction binds: 46.77 GB/s < 49.15 GB/s of read tags < 225 GB/s of DRAM, as
// ServingEngine.KernelPathIsolatedRequestIsRetrieveKernelRoundTripAndBytes shows); nothing waits
// for DRAM; compute = the step's batch_step_time; one step overhead; the bound is the link.
TEST(TimeBreakdown, LoneGpuKernelLoadIsSoftwareThenLinkBound) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) +
                                "serving: {" KAPPASIM_TEST_STACK
                                "tp: 1, warm_tier: true, store: none, load_path: kernel}\n");
  const std::int64_t K = 4096, T = 128;
  SummaryBuilder summary;
  const Outcome o = serve(spec, {request(1, 0, K, T)}, &summary);
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];
  const double chunks = K / 256.0;
  const double sm_read_cost = 1 + 20.0 / 64 + 2.0 / 64;  // wire bytes per payload byte (64 B reads)
  const double rate = kWire / sm_read_cost;
  const double software = kRetrieveFixed + chunks * kRetrievePerChunk;
  const double copies = chunks * kBlockOverhead + kRtt + K * kBkv8b / rate;
  const double compute = step_compute(spec, {{double(T), double(K), true}});
  EXPECT_NEAR(r.time.queue_s, 0, 1e-12);
  EXPECT_EQ(r.time.sched_software_s, 0);
  EXPECT_NEAR(r.time.load_software_s, software, tol(software));
  EXPECT_NEAR(r.time.load_link_s, copies, tol(copies));
  EXPECT_NEAR(r.time.load_wait_s, 0, 1e-12);
  EXPECT_NEAR(r.time.compute_s, compute, tol(compute));
  EXPECT_EQ(r.time.store_s, 0);
  EXPECT_NEAR(r.time.step_overhead_s, kStepOverhead, tol(kStepOverhead));
  EXPECT_NEAR(parts(r), r.ttft_s, tol(r.ttft_s));
  EXPECT_EQ(r.load_bound, "link");  // copies (11.5 ms) outweigh the software (2.1 ms)
  // The run: the step fills the simulated time; load time per bound = software and link.
  const SummaryBuilder::Totals& t = o.totals;
  EXPECT_NEAR(t.time.sum(), t.simulated_time_s, tol(t.simulated_time_s));
  EXPECT_NEAR(t.time.idle_s, 0, 1e-12);
  EXPECT_NEAR(t.load_bounds[LoadBound::Software], software, tol(software));
  EXPECT_NEAR(t.load_bounds[LoadBound::Link], copies, tol(copies));
  double shares = 0, fractions = 0;
  for (const auto& [k, v] : summary.figures(t)) {
    if (k.rfind("load_bound_share_", 0) == 0) shares += v;
    if (k.rfind("time_fraction_", 0) == 0) fractions += v;
    if (k == "load_bound_share_link") {
      EXPECT_NEAR(v, copies / (software + copies), 1e-9);
    }
    if (k == "ttft_mean_load_link_s") {
      EXPECT_NEAR(v, copies, tol(copies));
    }
  }
  EXPECT_NEAR(shares, 1, 1e-12);
  EXPECT_NEAR(fractions, 1, 1e-12);
}

// DGX H100 with PCIe 6 links, TP 8, block_dma (cudaMemcpy, 512 B reads: 393 GB/s of read tags):
// each socket's DDR5-4400 (8 ch × 4400 MT/s × 8 B × 0.8 = 225.28 GB/s) feeds its 4 GPUs, 56.32
// GB/s each, below a PCIe 6 x16 link (~120 GB/s of DMA payload): host DRAM binds. The time the
// copies ran at DRAM's share is K · B_kv per GPU / 56.32 GB/s, and it is the load's wait.
TEST(TimeBreakdown, DgxPcie6DmaLoadIsHostDramBound) {
  const RunSpec spec = run_spec(
      "model: llama-3.1-70b\nsystem: {preset: dgx-h100, host_link: pcie6}\ntrace: false\n"
      "workload: {type: narrativeqa}\n"
      "serving: {" KAPPASIM_TEST_NATIVE_STACK
      "tp: 8, warm_tier: true, store: none, load_path: block_dma}\n");
  const std::int64_t K = 16384, T = 128;
  SummaryBuilder summary;
  const Outcome o = serve(spec, {request(1, 0, K, T)}, &summary);
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];
  // Llama-3.1-70B: 80 layers, 8 KV heads over TP 8 = 1 per GPU, head_dim 128, BF16, K and V.
  const double bkv_gpu = 2.0 * 80 * 1 * 128 * 2;
  const double dram_per_gpu = 8 * 4400e6 * 8 * 0.8 / 4;
  const double at_dram = K * bkv_gpu / dram_per_gpu;  // 11.92 ms
  EXPECT_EQ(r.load_bound, "host_dram");
  EXPECT_NEAR(r.time.load_wait_s, at_dram, 1e-6 * at_dram);
  EXPECT_NEAR(r.time.load_software_s, 0.1e-3, 1e-12);  // native_request_fixed (per block 0)
  EXPECT_GT(r.time.load_link_s, 0);  // per-copy costs and the first byte's latency
  EXPECT_LT(r.time.load_link_s, at_dram);
  EXPECT_NEAR(parts(r), r.ttft_s, tol(r.ttft_s));
  for (const auto& [k, v] : summary.figures(o.totals)) {
    if (k == "load_bound_share_host_dram") {
      EXPECT_NEAR(v, at_dram / r.time.load_s(), 1e-6);
    }
  }
}

// Items 4 and 10 at saturation: the GPUs' time is accounted for. Before, gpu_utilization +
// link_busy_fraction ≈ 0.5 and nothing said where the rest went; now the run's fractions sum to 1,
// compute's fraction is gpu_utilization, the kernel path's copies are link_busy_fraction, and
// every request's categories sum to its TTFT.
TEST(TimeBreakdown, SaturatedRunFractionsSumToOne) {
  const RunSpec spec = run_spec(
      "model: llama-3.1-8b\nsystem: h100\ntrace: false\n"
      "serving: {" KAPPASIM_TEST_STACK
      "tp: 1, warm_tier: true, store: blocking, load_path: kernel}\n"
      "workload: {type: narrativeqa, requests: 60, rate: 100, seed: 3}\n");
  auto source = make_source(spec.workload, 3, "");
  SummaryBuilder summary;
  std::vector<RequestRecord> recs;
  EngineSinks sinks;
  sinks.summary = &summary;
  sinks.on_finish = [&](const RequestRecord& r) { recs.push_back(r); };
  const SummaryBuilder::Totals t = run_serving(spec, *source, sinks);
  ASSERT_EQ(recs.size(), 60u);
  for (const RequestRecord& r : recs) {
    EXPECT_NEAR(parts(r), r.ttft_s, 1e-9) << "request " << r.id;
    EXPECT_GE(r.time.queue_s, 0);
  }
  std::map<std::string, double> f;
  for (const auto& [k, v] : summary.figures(t)) f[k] = v;
  double fractions = 0, ttft_parts = 0;
  for (const auto& [k, v] : f) {
    if (k.rfind("time_fraction_", 0) == 0) fractions += v;
    if (k.rfind("ttft_mean_", 0) == 0 && k != "ttft_mean_s") ttft_parts += v;
  }
  EXPECT_NEAR(fractions, 1, 1e-9);
  EXPECT_NEAR(ttft_parts, f["ttft_mean_s"], 1e-9 * f["ttft_mean_s"]);
  EXPECT_NEAR(f["time_fraction_compute"], f["gpu_utilization"], 1e-9);
  EXPECT_NEAR(f["time_fraction_load_link"] + f["time_fraction_load_wait"], f["link_busy_fraction"],
              1e-9);
  // Saturated: the utilisations leave a remainder, and the breakdown names it: with blocking
  // stores and LMCache's synchronous retrieve, nearly all of it is store and load software.
  const double remainder = 1 - f["gpu_utilization"] - f["link_busy_fraction"];
  EXPECT_GT(remainder, 0.05);
  EXPECT_GT(f["time_fraction_store"] + f["time_fraction_load_software"], 0.9 * remainder);
  EXPECT_LT(f["time_fraction_idle"], 0.01);
}

// Layer-wise loads overlap compute: a step's time is its compute plus the load it did not hide,
// and the categories still sum to the TTFT.
TEST(TimeBreakdown, LayerwiseCountsOnlyTheExposedLoad) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) +
                                "serving: {" KAPPASIM_TEST_STACK
                                "tp: 1, warm_tier: true, store: none, load_path: layerwise}\n");
  const std::int64_t K = 4096, T = 128;
  const Outcome o = serve(spec, {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];
  const double compute = step_compute(spec, {{double(T), double(K), true}});
  // The compute is an HBM flow (issue 13) beside the load's DMA, which leaves it its whole
  // demand (HBM is far from full): its end is re-rounded to 1 ps at each of the fabric's rate
  // changes (the DMA's start and end), so a few ps more than one wait's rounding.
  EXPECT_NEAR(r.time.compute_s, compute, tol(compute) + 10e-12);
  EXPECT_NEAR(parts(r), r.ttft_s, tol(r.ttft_s));
  // The load the engine reports (software + all copies) is more than what the step exposed.
  EXPECT_LT(r.time.load_s(), r.load_s);
  EXPECT_NEAR(r.time.load_s(), r.ttft_s - kStepOverhead - compute, tol(r.ttft_s));
  EXPECT_FALSE(r.load_bound.empty());
}

// What held a layer-wise load back is what ended each layer's load (its critical path). Llama-3.1-
// 8B alone on one H100 over PCIe 5, K = 4096: each of the 32 layers copies 4096 tokens x 4 KiB =
// 16.8 MB, about 0.33 ms at the DMA's ~51 GB/s, while the rank's Python issues the layer's 16
// (layer, chunk) objects at layerwise_per_object each. At 100 us an object the issue takes 1.6 ms
// a layer, five times the copies, which run under it: the whole load is software's, link 0 (a
// faster link would not end it sooner; the shares once gave the link the copies' in-flight time).
// At 1 us an object (16 us a layer) the copies end each layer: the link holds most of the load.
// Either way the bound times add up to the load's time. (One simulation per process: two tests.)
RequestRecord lone_layerwise_load(const char* per_object) {
  const RunSpec spec =
      run_spec(std::string(kLlama8bH100) +
               "serving: {stack: {family: lmcache, store: blocking, retrieve_fixed: 0.5 ms, "
               "retrieve_hash_per_chunk: 0.1 ms, store_fixed: 1.8 ms, layerwise_per_object: " +
               per_object +
               ", layerwise_log_per_object: 0 s}, tp: 1, warm_tier: true, store: none, "
               "load_path: layerwise}\n");
  const Outcome o = serve(spec, {request(1, 0, 4096, 128)});
  EXPECT_EQ(o.recs.size(), 1u);
  return o.recs.at(0);
}
TEST(TimeBreakdown, LayerwiseLoadUnderASlowerIssueIsSoftwareBound) {
  const RequestRecord r = lone_layerwise_load("100 us");
  EXPECT_EQ(r.load_bound, "software");
  EXPECT_NEAR(r.load_bound_s[LoadBound::Software], r.load_s, tol(r.load_s));
  EXPECT_EQ(r.load_bound_s[LoadBound::Link], 0);
  EXPECT_EQ(r.load_bound_s[LoadBound::HostDram], 0);
  // 32 layers x 1.6 ms of issue, besides the retrieve's 0.5 + 16 x 0.1 ms before it.
  EXPECT_GT(r.load_s, 32 * 1.6e-3);
}
TEST(TimeBreakdown, LayerwiseLoadUnderAFasterIssueIsLinkBound) {
  const RequestRecord r = lone_layerwise_load("1 us");
  EXPECT_EQ(r.load_bound, "link");
  EXPECT_NEAR(r.load_bound_s.total(), r.load_s, tol(r.load_s));
  EXPECT_GT(r.load_bound_s[LoadBound::Link], 0.5 * r.load_s);
  // 32 layers of ~0.33 ms of copies: well under the slow issue's 51 ms.
  EXPECT_LT(r.load_s, 32 * 1.6e-3);
}

// The fluid model names each flow's bottleneck and how long it held it (pure FlowNetwork, by
// hand): A = 10 B/s shared by two flows, flow 2 also crosses B = 2 B/s. Max-min: flow 2 is
// frozen by B at 2 B/s, flow 1 takes A's remaining 8 B/s. Flow 1 (16 B) and flow 2 (4 B) both
// finish at t = 2 s, each with its bottleneck for all 2 s. Flow 3 alone on A with a 4 B/s cap:
// its cap binds (-1) for 12 B / 4 B/s = 3 s.
TEST(TimeBreakdown, FlowNetworkReportsEachFlowsBottleneckTime) {
  FlowNetwork net(0);
  const auto A = net.add_resource("A", 10), B = net.add_resource("B", 2);
  const auto f1 = net.start(0, {{A, 1}}, 16);
  const auto f2 = net.start(0, {{A, 1}, {B, 1}}, 4);
  EXPECT_EQ(net.bottleneck(f1), A);
  EXPECT_EQ(net.bottleneck(f2), B);
  EXPECT_DOUBLE_EQ(net.next_finish(), 2);
  const auto done = net.finish_due(2);
  ASSERT_EQ(done.size(), 2u);
  const auto t1 = net.take_bottleneck_times(f1), t2 = net.take_bottleneck_times(f2);
  ASSERT_EQ(t1.size(), 1u);
  ASSERT_EQ(t2.size(), 1u);
  EXPECT_EQ(t1[0].first, A);
  EXPECT_NEAR(t1[0].second, 2, 1e-12);
  EXPECT_EQ(t2[0].first, B);
  EXPECT_NEAR(t2[0].second, 2, 1e-12);
  EXPECT_TRUE(net.take_bottleneck_times(f1).empty());  // handed over once
  const auto f3 = net.start(2, {{A, 1}}, 12, 4);
  EXPECT_EQ(net.bottleneck(f3), -1);
  net.finish_due(5);
  const auto t3 = net.take_bottleneck_times(f3);
  ASSERT_EQ(t3.size(), 1u);
  EXPECT_EQ(t3[0].first, -1);
  EXPECT_NEAR(t3[0].second, 3, 1e-12);
}

}  // namespace
}  // namespace serving_accounting_test
}  // namespace kappasim
