// P/D disaggregation (serving/cluster, serving/handoff; docs/disaggregation.md) on the SystemC
// engines: one request's hand-off time worked by hand from the descriptors the decode GPUs post
// and the NIC they pull through, the request's stages in order, and a loaded P/D cluster where
// every request finishes once and every held block is released (check: true runs
// Cluster::check_end and every engine's). One simulation per TEST.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "serving/cluster.hpp"
#include "tests/sim/serving_test_util.hpp"

namespace kappasim {
namespace disaggregation_test {
namespace {

// `decode`: the decode group's keys after its system (its serving settings).
ClusterRunSpec pd_spec(const std::string& handoff, int decode_nodes = 1,
                       const std::string& decode = "serving: {" KAPPASIM_TEST_STACK
                                                   "tp: 8, store: none}") {
  return read_config<ClusterRunSpec>(
      parse_yaml(
          "cluster:\n"
          "  router: round_robin\n" +
              handoff +
              "  nodes:\n"
              "    - {name: p, role: prefill, system: dgx-h100, serving: {" KAPPASIM_TEST_STACK
              "tp: 8, store: none}}\n"
              "    - {name: d, role: decode, count: " +
              std::to_string(decode_nodes) + ", system: dgx-h100, " + decode +
              "}\n"
              "model: llama-3.1-70b\n"
              "workload: {type: sharegpt}\n"
              "check: true\n",
          "<test>"),
      "");
}

// A prefill node and a decode node with their own `serving:` extras (layouts).
ClusterRunSpec reshard_spec(const std::string& prefill, const std::string& decode,
                            const std::string& model = "llama-3.1-70b") {
  return read_config<ClusterRunSpec>(
      parse_yaml(
          "cluster:\n"
          "  router: round_robin\n"
          "  nodes:\n"
          "    - {name: p, role: prefill, system: dgx-h100, serving: {" KAPPASIM_TEST_STACK
          "store: none, " +
              prefill +
              "}}\n"
              "    - {name: d, role: decode, system: dgx-h100, serving: {" KAPPASIM_TEST_STACK
              "store: none, " +
              decode +
              "}}\n"
              "model: " +
              model +
              "\n"
              "workload: {type: sharegpt}\n"
              "check: true\n",
          "<test>"),
      "");
}

Request request(std::uint64_t id, double at, std::int64_t T, std::int64_t out) {
  Request r;
  r.id = id;
  r.arrival_s = at;
  r.new_tokens = T;
  r.output_tokens = out;
  r.workload = "test";
  return r;
}

double figure(const std::vector<std::pair<std::string, double>>& f, const std::string& k) {
  for (const auto& [key, v] : f)
    if (key == k) return v;
  ADD_FAILURE() << "no figure " << k;
  return 0;
}

// One 2,049-token request with 4 output tokens through the cluster: its finished records and the
// run's figures.
std::pair<std::vector<RequestRecord>, std::vector<std::pair<std::string, double>>> run_one(
    const ClusterRunSpec& spec) {
  VectorSource src({request(1, 0, 2049, 4)});
  std::vector<RequestRecord> done;
  ClusterSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r, std::size_t) { done.push_back(r); };
  auto f = run_cluster(spec, src, sinks);
  return {std::move(done), std::move(f)};
}

// Hand: Llama-3.1-70B in BF16 at TP 8 keeps 80 layers x 1 KV head x 128 x 2 (K, V) x 2 B =
// 40,960 B per token per GPU. A 2,049-token prompt hands off its first 2,048 tokens (the decode
// node recomputes the last, as vLLM's NixlConnector does): 83,886,080 B per GPU in
// 2,048 / 16 = 128 blocks x 80 layers x 2 (K, V) = 20,480 descriptors. Posted at 6.7 ms / 1,785
// = 3.754 us each they take 76.9 ms, so each GPU pulls at 83,886,080 B / 76.9 ms = 1.09 GB/s, below
// its 50 GB/s ConnectX-7 port: transfer = 0.4 ms fixed + 76.9 ms.
TEST(Disaggregation, HandoffIsPostingBoundAtNixlsMeasuredCostPerDescriptor) {
  const ClusterRunSpec spec = pd_spec("");
  const auto [done, f] = run_one(spec);
  const double transfer = 0.4e-3 + 20480 * (6.7e-3 / 1785);
  EXPECT_EQ(figure(f, "handoffs"), 1);
  EXPECT_NEAR(figure(f, "handoff_bytes_mean"), 8 * 2048 * 40960.0, 1);
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), transfer, 1e-3 * transfer);
  // An idle decode node admits the hand-off at once: no wait.
  EXPECT_NEAR(figure(f, "handoff_wait_mean_s"), 0, 1e-9);
  ASSERT_EQ(done.size(), 1u);  // one record per request: the decode node's, with the prefill's
  EXPECT_EQ(done[0].output_tokens, 4);
  EXPECT_EQ(done[0].computed_tokens, 2049);  // the prefill node's prompt
  // TTFT: the prefill, then the hand-off, then the decode node's step recomputing the last token.
  EXPECT_GT(done[0].ttft_s, transfer);
  EXPECT_EQ(figure(f, "p.requests_routed"), 1);
  EXPECT_EQ(figure(f, "d.requests_routed"), 1);
  // No decode tier: its figures are absent (the summary is as before the key existed).
  for (const auto& kv : f) EXPECT_EQ(kv.first.rfind("decode_tier_", 0), std::string::npos);
}

// With nothing to post (post_per_descriptor 0) the pull is the NIC's: 83,886,080 B per GPU over
// its 50 GB/s port = 1.678 ms, plus the 0.4 ms fixed cost (the copy's own issue latency and the
// NIC latency add a few microseconds).
TEST(Disaggregation, WithoutPostingCostsThePullRunsAtTheNicPort) {
  const ClusterRunSpec spec = pd_spec("  handoff: {post_per_descriptor: 0 s}\n");
  VectorSource src({request(1, 0, 2049, 2)});
  const auto f = run_cluster(spec, src, ClusterSinks{});
  const double transfer = 0.4e-3 + 2048 * 40960.0 / 50e9;
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), transfer, 0.01 * transfer);
}

// The mooncake-te profile: each of the 160 (layer, K/V) entries of a GPU's 83,886,080 B is
// 524,288 B, 8 slices of 64 KiB: 1,280 work requests at 3.40 us = 4.352 ms, so each GPU moves
// 83,886,080 B / 4.352 ms = 19.3 GB/s, below its 50 GB/s port: transfer = 0.295 ms + 4.352 ms
// (the copy's own issue latency and the NIC latency add a few microseconds).
TEST(Disaggregation, MooncakeProfilePostsOneWorkRequestPerSlice) {
  const ClusterRunSpec spec = pd_spec("  handoff: mooncake-te\n");
  VectorSource src({request(1, 0, 2049, 2)});
  const auto f = run_cluster(spec, src, ClusterSinks{});
  const double transfer = 0.295e-3 + 1280 * 3.40e-6;
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), transfer, 0.01 * transfer);
}

// The lmcache-pd profile: one descriptor per 256-token chunk, 8 for 2,048 tokens (30 us of
// posting for 83.9 MB): the NIC port binds, 83,886,080 B / 50 GB/s = 1.678 ms, plus 0.40 ms.
TEST(Disaggregation, LmcacheProfileIsNicBoundWithOneDescriptorPerChunk) {
  const ClusterRunSpec spec = pd_spec("  handoff: lmcache-pd\n");
  VectorSource src({request(1, 0, 2049, 2)});
  const auto f = run_cluster(spec, src, ClusterSinks{});
  const double transfer = 0.40e-3 + 2048 * 40960.0 / 50e9;
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), transfer, 0.01 * transfer);
}

// The prefill node's NIC is the pulls' too: two 513-token requests prefilled in one step on the
// one prefill node are pulled at once by two decode nodes (round robin); with nothing to post,
// each GPU's 512 x 40,960 = 20,971,520 B share of each pull leaves through the same 50 GB/s port
// out, 25 GB/s each: transfer = 0.4 ms + 2 x 20,971,520 B / 50 GB/s = 1.239 ms (0.419 ms more
// than one pull alone).
TEST(Disaggregation, PullsFromOnePrefillNodeShareItsNicPort) {
  const ClusterRunSpec spec = pd_spec("  handoff: {post_per_descriptor: 0 s}\n", 2);
  VectorSource src({request(1, 0, 513, 2), request(2, 0, 513, 2)});
  const auto f = run_cluster(spec, src, ClusterSinks{});
  const double transfer = 0.4e-3 + 2 * 512 * 40960.0 / 50e9;
  EXPECT_EQ(figure(f, "handoffs"), 2);
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), transfer, 0.01 * transfer);
}

// The re-shard (docs/disaggregation.md): prefill TP 8 to decode TP 4 x PP 2 on one DGX H100.
// Each decode GPU holds 2 KV heads of 40 layers: 40 x 2 x 128 x 2 (K, V) x 2 B = 40,960 B per
// token, 83,886,080 B of the 2,048 tokens handed off, read as two pieces (one head from each of
// two prefill GPUs), each 128 blocks x 40 layers x 2 = 10,240 descriptors: 20,480 per GPU, posted
// at 6.7 ms / 1,785 each = 76.9 ms (1.09 GB/s, below the 50 GB/s port): transfer = 0.4 ms +
// 76.9 ms. The same TP 4 x PP 2 layout on both sides reads one piece of 10,240: 0.4 + 38.4 ms
// (next test).
TEST(Disaggregation, AReshardPostsOneDescriptorPerPieceOfEachDecodeBlock) {
  const double post = 6.7e-3 / 1785;
  const std::string tp4pp2 = "tp: 4, parallelism: {pp: 2}";
  VectorSource src({request(1, 0, 2049, 2)});
  const auto f = run_cluster(reshard_spec("tp: 8", tp4pp2), src, ClusterSinks{});
  const double reshard = 0.4e-3 + 20480 * post;
  EXPECT_EQ(figure(f, "handoffs"), 1);
  EXPECT_NEAR(figure(f, "handoff_bytes_mean"), 8 * 2048 * 40960.0, 1);
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), reshard, 1e-3 * reshard);
}
TEST(Disaggregation, TheSameLayoutOnBothSidesReadsOnePiecePerBlock) {
  const std::string tp4pp2 = "tp: 4, parallelism: {pp: 2}";
  VectorSource src({request(1, 0, 2049, 2)});
  const auto f = run_cluster(reshard_spec(tp4pp2, tp4pp2), src, ClusterSinks{});
  const double same = 0.4e-3 + 10240 * (6.7e-3 / 1785);
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), same, 1e-3 * same);
}

// DeepSeek-V3 (61 MLA layers, 576 values of 2 B per token and layer) from prefill TP 8 x PP 2 to
// decode DP-16 (EP 16), each two DGX H100 nodes: the request lives on one decode DP rank, one
// GPU, which pulls the whole latent of all 61 layers, 2,048 x 70,272 = 143,917,056 B, reading
// layers 0-30 from prefill GPU 0 and 31-60 from prefill GPU 8: 128 blocks x (31 + 30) layers x 1
// region = 7,808 descriptors at 6.7 ms / 1,785 = 29.3 ms (4.9 GB/s, below the 50 GB/s port):
// transfer = 0.4 ms + 29.3 ms.
TEST(Disaggregation, AnMlaReshardToDpAttentionPullsTheWholeLatentIntoOneGpu) {
  VectorSource src({request(1, 0, 2049, 2)});
  const auto f = run_cluster(
      reshard_spec("tp: 8, compute_dtype: fp8, parallelism: {pp: 2, nodes: 2}",
                   "tp: 1, compute_dtype: fp8, parallelism: {dp_attention: 16, ep: 16, nodes: 2}",
                   "deepseek-v3"),
      src, ClusterSinks{});
  const double transfer = 0.4e-3 + 7808 * (6.7e-3 / 1785);
  EXPECT_EQ(figure(f, "handoffs"), 1);
  EXPECT_NEAR(figure(f, "handoff_bytes_mean"), 2048 * 70272.0, 1);
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), transfer, 1e-3 * transfer);
}

// A prompt whose one output token is the prefill's needs no decode stage; the others are handed
// off. Under load every request finishes once, and every block a prefill node held for a
// hand-off is released (check_end: no KV block left in any pool).
TEST(Disaggregation, EveryRequestFinishesOnceAndEveryHeldBlockIsReleased) {
  const ClusterRunSpec spec = pd_spec("");
  std::vector<Request> rs;
  for (std::uint64_t i = 1; i <= 40; ++i)
    rs.push_back(request(i, 0.002 * static_cast<double>(i), 300 + 97 * static_cast<std::int64_t>(i),
                         i % 5 == 0 ? 1 : 2 + static_cast<std::int64_t>(i % 7)));
  VectorSource src(rs);
  std::vector<std::uint64_t> ids;
  std::int64_t out = 0;
  ClusterSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r, std::size_t) {
    ids.push_back(r.id);
    out += r.output_tokens;
  };
  const auto f = run_cluster(spec, src, sinks);
  EXPECT_EQ(ids.size(), 40u);
  std::int64_t want = 0;
  for (const Request& r : rs) want += r.output_tokens;
  EXPECT_EQ(out, want);
  EXPECT_EQ(figure(f, "handoffs"), 32);  // 8 of the 40 ask for one token
  EXPECT_EQ(figure(f, "requests_completed"), 40);
}

// P/D on one node (docs/disaggregation.md, "Prefill and decode on one node"): one DGX H100 split
// into prefill TP 4 (GPUs 0-3) and decode TP 4 (GPUs 4-7), `host: dgx` on both groups.
ClusterRunSpec one_node_spec(const std::string& handoff) {
  return read_config<ClusterRunSpec>(
      parse_yaml("cluster:\n"
                 "  router: round_robin\n" +
                     handoff +
                     "  nodes:\n"
                     "    - {name: p, role: prefill, host: dgx, system: dgx-h100, serving: "
                     "{" KAPPASIM_TEST_STACK "tp: 4, store: none}}\n"
                     "    - {name: d, role: decode, host: dgx, system: dgx-h100, serving: "
                     "{" KAPPASIM_TEST_STACK "tp: 4, store: none}}\n"
                     "model: llama-3.1-70b\n"
                     "workload: {type: sharegpt}\n"
                     "check: true\n",
                 "<test>"),
      "");
}

// Hand: Llama-3.1-70B in BF16 at TP 4 keeps 80 layers x 2 KV heads x 128 x 2 (K, V) x 2 B =
// 81,920 B per token per GPU; a 2,049-token prompt hands off 2,048 tokens: 167,772,160 B per GPU.
// With nothing to post, each decode GPU reads its share from the prefill GPU at the same TP
// position over NVLink (H100 SXM5: 450 GB/s per direction, presets/gpus): 0.3728 ms, plus the
// profile's 0.40 ms fixed and one NVLink latency (2.8 us, the preset's): 0.7756 ms. The same
// bytes over the 50 GB/s ConnectX-7 port take 3.355 ms (+ 0.40 ms).
TEST(Disaggregation, OnOneNodeThePullRunsAtTheNvlinkPort) {
  const ClusterRunSpec spec = one_node_spec("  handoff: {post_per_descriptor: 0 s}\n");
  VectorSource src({request(1, 0, 2049, 2)});
  const auto f = run_cluster(spec, src, ClusterSinks{});
  const double transfer = 0.40e-3 + 2.8e-6 + 2048 * 81920.0 / 450e9;
  EXPECT_EQ(figure(f, "handoffs"), 1);
  EXPECT_EQ(figure(f, "handoffs_nvlink"), 1);
  EXPECT_NEAR(figure(f, "handoff_bytes_mean"), 4 * 2048 * 81920.0, 1);
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), transfer, 0.01 * transfer);
}

// At NIXL's measured posting cost NVLink does not help: each GPU posts 128 blocks x 80 layers x
// 2 (K, V) = 20,480 descriptors at 6.7 ms / 1,785 = 76.9 ms (2.18 GB/s, far below the 450 GB/s
// port): transfer = 0.40 ms + 76.9 ms, as over the NIC.
TEST(Disaggregation, OnOneNodeTheMeasuredPostingCostStillBindsThePull) {
  const ClusterRunSpec spec = one_node_spec("");
  VectorSource src({request(1, 0, 2049, 2)});
  const auto f = run_cluster(spec, src, ClusterSinks{});
  const double transfer = 0.40e-3 + 20480 * (6.7e-3 / 1785);
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), transfer, 1e-3 * transfer);
  EXPECT_EQ(figure(f, "handoffs_nvlink"), 1);
}

// Cross-node P/D reports no NVLink figure (its summary is as before the host key existed).
TEST(Disaggregation, AcrossNodesThereIsNoNvlinkFigure) {
  const ClusterRunSpec spec = pd_spec("  handoff: {post_per_descriptor: 0 s}\n");
  VectorSource src({request(1, 0, 513, 2)});
  const auto f = run_cluster(spec, src, ClusterSinks{});
  for (const auto& kv : f) EXPECT_NE(kv.first, "handoffs_nvlink");
}

// Hybrid KV (serving.kv_cache: hybrid) through P/D: the decode node pulls what the prefill's
// hybrid cache keeps. Hand: gpt-oss-120b (presets/models) has 36 layers alternating sliding
// (window 128) and full, 8 KV heads of 64; at TP 4 a GPU holds 2 heads: 2 (K, V) x 2 x 64 x 2 B
// = 512 B per token per layer, 18 x 512 = 9,216 B per token in the full layers and as much in
// the sliding ones, which keep the last 128 tokens. A 2,049-token prompt hands off 2,048 tokens:
// (2,048 + 128) x 9,216 = 20,054,016 B per GPU, over NVLink on one node with nothing to post:
// 0.40 ms + 2.8 us + 20,054,016 B / 450 GB/s.
TEST(Disaggregation, AHybridCachePullsTheFullLayersAndTheSlidingWindow) {
  const ClusterRunSpec spec = read_config<ClusterRunSpec>(
      parse_yaml("cluster:\n"
                 "  router: round_robin\n"
                 "  handoff: {post_per_descriptor: 0 s}\n"
                 "  nodes:\n"
                 "    - {name: p, role: prefill, host: dgx, system: dgx-h100, serving: "
                 "{" KAPPASIM_TEST_STACK "tp: 4, store: none, kv_cache: hybrid}}\n"
                 "    - {name: d, role: decode, host: dgx, system: dgx-h100, serving: "
                 "{" KAPPASIM_TEST_STACK "tp: 4, store: none, kv_cache: hybrid}}\n"
                 "model: gpt-oss-120b\n"
                 "workload: {type: sharegpt}\n"
                 "check: true\n",
                 "<test>"),
      "");
  VectorSource src({request(1, 0, 2049, 2)});
  const auto f = run_cluster(spec, src, ClusterSinks{});
  const double per_gpu = (2048.0 + 128) * 9216;
  EXPECT_EQ(figure(f, "handoffs"), 1);
  EXPECT_NEAR(figure(f, "handoff_bytes_mean"), 4 * per_gpu, 1);
  const double transfer = 0.40e-3 + 2.8e-6 + per_gpu / 450e9;
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), transfer, 0.01 * transfer);
}

// ---- the layer-wise push (cluster.handoff.send: push_layer) ---------------------------------
// Hand: one 2,049-token prompt of Llama-3.1-70B at TP 8 (BF16): a layer holds 1 KV head x 128 x 2
// (K, V) x 2 B = 512 B per token per GPU, so each layer's send moves 2,049 x 512 = 1,049,088 B per
// GPU (P2pNcclConnector sends the whole prompt), out of the prefill GPU's ConnectX-7 port and into
// the decode GPU's, 50 GB/s each: 20.98 us, after the profile's fixed cost per send, the DMA
// copy's issue (2.36 us) and the NIC's latency (3 us). The prompt is one chunk, so its 80 layers
// are computed in one step, layer l ending at (l + 1) c from the compute's start (c: the step's
// compute over 80 layers).
constexpr double kLayerBytes = 2049 * 512.0;
constexpr double kNic = 50e9;          // presets/systems/dgx-h100.yaml: nic_bandwidth per GPU
constexpr double kNicLatency = 3e-6;   // presets/systems/dgx-h100.yaml: nic_latency
constexpr double kDmaIssue = 2.36e-6;  // presets/gpus/h100-sxm5.yaml: dma_copy_overhead
constexpr double kMove = kDmaIssue + kNicLatency + kLayerBytes / kNic;  // one layer's bytes

// The prompt's TTFT less its prefill: the hand-off's tail (handoff_p50_s: prefill end -> last
// layer's arrival) and the decode node's first step.
double after_prefill(const RequestRecord& r) { return r.time.queue_s; }

// A send (50 us + 26.34 us) faster than a layer's compute: each layer's send is done before the
// next layer's compute ends, so only the last layer's send is left after the prefill:
// TTFT = prefill + 76.34 us + the decode node's first step.
TEST(Disaggregation, APushFasterThanTheComputeLeavesOneLayersSendAfterThePrefill) {
  const ClusterRunSpec spec = pd_spec("  handoff: p2p-nccl\n");
  const auto [done, f] = run_one(spec);
  ASSERT_EQ(done.size(), 1u);
  const double send = 0.05e-3 + kMove;
  const double c = done[0].time.compute_s / 80;  // the prefill step's compute per layer
  ASSERT_LT(send, c);
  EXPECT_EQ(figure(f, "handoffs"), 1);
  EXPECT_NEAR(figure(f, "handoff_bytes_mean"), 80 * 8 * kLayerBytes, 1);
  EXPECT_NEAR(figure(f, "handoff_wait_mean_s"), 0, 1e-9);  // an idle decode node admits it
  // The tail: the last layer's send.
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), send, 1e-9);
  // Then the decode node's first step, recomputing the last token (a 70B step at TP 8: well
  // under 30 ms; its weights alone take 141 GB / 8 / 3.35 TB/s = 5.3 ms).
  const double step = after_prefill(done[0]) - figure(f, "handoff_transfer_mean_s");
  EXPECT_GT(step, 5e-3);
  EXPECT_LT(step, 30e-3);
  EXPECT_EQ(figure(f, "p.requests_routed"), 1);
  EXPECT_EQ(figure(f, "d.requests_routed"), 1);
}

// A send (5 ms fixed + 26.34 us) slower than a layer's compute c: the sends queue on the GPUs'
// send threads. Layer 0's starts at c and each next one when the previous ends, so the last ends
// at c + 80 S, the prefill at 80 c: the tail is 80 S - 79 c.
TEST(Disaggregation, APushSlowerThanTheComputeQueuesTheLayersSends) {
  const ClusterRunSpec spec = pd_spec("  handoff: {preset: p2p-nccl, fixed: 5 ms}\n");
  const auto [done, f] = run_one(spec);
  ASSERT_EQ(done.size(), 1u);
  const double send = 5e-3 + kMove;
  const double c = done[0].time.compute_s / 80;
  ASSERT_GT(send, c);
  const double tail = 80 * send - 79 * c;
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), tail, 1e-9);
  const double step = after_prefill(done[0]) - tail;
  EXPECT_GT(step, 5e-3);
  EXPECT_LT(step, 30e-3);
}

// ---- the pull's hand-off at step granularity (docs/disaggregation.md, step 5) -----------------
// vLLM's NixlConnector parks the request (WAITING_FOR_REMOTE_KVS); on an idle decode node the
// engine core runs steps that schedule no token, each costing the stack's empty_step E: the first
// one's start_load_kv posts the reads (the pull starts at prefill end + E), every one's
// get_finished polls them, and the request computes in the step after the first poll that sees
// its pull done. Hand: the pull X = 0.4 ms + 20,480 descriptors x 3.754 us = 77.28 ms (the first
// test); with E = 10 ms it starts at +10 ms, ends at +87.28 ms and is seen at the end of the
// ninth empty step, +90 ms = E (1 + ceil(X / E)). So TTFT = prefill + 90 ms + the first decode
// step (the decode node's first token: its step overhead and the 70B step at TP 8, well under
// 30 ms, above its weights' 141 GB / 8 / 3.35 TB/s = 5.3 ms).
TEST(Disaggregation, APulledRequestRunsInTheStepAfterTheEmptyStepThatSeesItsPullDone) {
  const ClusterRunSpec spec = read_config<ClusterRunSpec>(
      parse_yaml("cluster:\n"
                 "  router: round_robin\n"
                 "  nodes:\n"
                 "    - {name: p, role: prefill, system: dgx-h100, serving: {" KAPPASIM_TEST_STACK
                 "tp: 8, store: none}}\n"
                 "    - {name: d, role: decode, system: dgx-h100, serving: {stack: {family: "
                 "lmcache, store: blocking, empty_step: 10 ms}, tp: 8, store: none}}\n"
                 "model: llama-3.1-70b\n"
                 "workload: {type: sharegpt}\n"
                 "check: true\n",
                 "<test>"),
      "");
  const auto [done, f] = run_one(spec);
  ASSERT_EQ(done.size(), 1u);
  const double E = 10e-3;
  const double X = 0.4e-3 + 20480 * (6.7e-3 / 1785);
  EXPECT_NEAR(figure(f, "handoff_transfer_mean_s"), X, 1e-3 * X);
  // The reads start with the first empty step's start_load_kv.
  EXPECT_NEAR(figure(f, "handoff_wait_mean_s"), E, 1e-9);
  const double seen = E * (1 + std::ceil(figure(f, "handoff_transfer_mean_s") / E));
  EXPECT_NEAR(seen, 90e-3, 1e-12);
  const double step = after_prefill(done[0]) - seen;  // the decode node's first step
  // That step: serving.step_overhead (2 ms, the default) and the decode node's compute (the
  // record's compute less the prefill's), nothing else: no wait between the poll and the step.
  // (Handed over at the pull's end, +87.28 ms, the step would appear 2.72 ms longer.)
  const double decode_compute = done[0].compute_s - done[0].time.compute_s;
  EXPECT_NEAR(step, 2e-3 + decode_compute, 1e-9);
  EXPECT_GT(decode_compute, 5e-3);
  EXPECT_LT(decode_compute, 30e-3);
}

// ---- a decode node's own KV tier (cluster.nodes[].decode_tier) -------------------------------
// docs/disaggregation.md, "A decode node's KV tier". A 2,000-token prompt decoding 300 tokens:
// after its last decode step the decode node's KV covers 2,000 + 299 = 2,299 tokens.
Request chat_turn(std::uint64_t id, double at, std::int64_t prefix, std::int64_t T,
                  std::int64_t out) {
  Request r = request(id, at, T, out);
  r.sequence_id = 7;  // one conversation: turn k + 1's prompt repeats turn k's prompt and answer
  r.prefix_tokens = prefix;
  r.extends_sequence = true;
  return r;
}

// A prefill node and a decode node with its tier; `decode` the decode group's serving extras.
ClusterRunSpec decode_tier_spec(const std::string& handoff, const std::string& decode) {
  return pd_spec(handoff, 1, "decode_tier: true, serving: {tp: 8, " + decode + "}");
}

// vLLM's native connector in the step, storing the blocks decode fills (OffloadingConnector's
// _get_reqs_to_store: presets/stacks/vllm-native-0.12.yaml store_decode).
#define KAPPASIM_TEST_NATIVE_DECODE_STACK                                                       \
  "stack: {family: vllm_native, store: blocking, retrieve_fixed: 0.1 ms, store_fixed: 0.1 ms, " \
  "store_decode: true}, "

// The cluster's tier capacity counts the tiers that exist: the prefill node's 100 GB
// (serving.tier_capacity), and the decode node's 50 GB only where it has its tier.
double tier_capacity(bool decode_tier) {
  const ClusterRunSpec spec = read_config<ClusterRunSpec>(
      parse_yaml(std::string("cluster:\n"
                             "  router: round_robin\n"
                             "  nodes:\n"
                             "    - {name: p, role: prefill, system: dgx-h100, serving: {"
                             "tp: 8, tier_capacity: 100 GB, " KAPPASIM_TEST_STACK "store: stack}}\n"
                             "    - {name: d, role: decode, system: dgx-h100, decode_tier: ") +
                     (decode_tier ? "true" : "false") +
                     ", serving: {tp: 8, tier_capacity: 50 GB, " KAPPASIM_TEST_STACK
                     "store: stack}}\n"
                     "model: llama-3.1-70b\n"
                     "workload: {type: sharegpt}\n"
                     "check: true\n",
                 "<test>"),
      "");
  return figure(run_one(spec).second, "tier_capacity_bytes");
}
TEST(Disaggregation, TheClusterTierCapacityCountsADecodeNodesOnlyWithItsTier) {
  EXPECT_EQ(tier_capacity(false), 100e9);
}
TEST(Disaggregation, TheClusterTierCapacityCountsADecodeTier) {
  EXPECT_EQ(tier_capacity(true), 150e9);
}

// vLLM's native connector beside NIXL (MultiConnector): its tier holds 16-token blocks, stores
// the pulled prompt's full blocks when the request first runs (2,000 / 16 = 125) and each block
// decode fills (store_decode): every full block of the 2,299 tokens, floor(2,299 / 16) = 143.
TEST(Disaggregation, ANativeDecodeTierStoresThePulledPromptAndEveryBlockDecodeFills) {
  const auto spec =
      decode_tier_spec("", KAPPASIM_TEST_NATIVE_DECODE_STACK "load_path: block_dma, store: stack");
  VectorSource src({chat_turn(1, 0, 0, 2000, 300)});
  const auto f = run_cluster(spec, src, ClusterSinks{});
  EXPECT_EQ(figure(f, "decode_tier_stored_chunks"), 143);
  EXPECT_EQ(figure(f, "decode_tier_relookups"), 0);
  EXPECT_EQ(figure(f, "decode_tier_reloaded_tokens"), 0);
}

// LMCache's connector (kv_both) beside NIXL stores the pulled prompt's full 256-token chunks,
// floor(2,000 / 256) = 7, and no decode chunk (save_decode_cache off: store_decode false).
TEST(Disaggregation, AnLmcacheDecodeTierBesideNixlStoresThePulledPromptOnly) {
  const auto spec = decode_tier_spec("", KAPPASIM_TEST_STACK "store: stack");
  VectorSource src({chat_turn(1, 0, 0, 2000, 300)});
  const auto f = run_cluster(spec, src, ClusterSinks{});
  EXPECT_EQ(figure(f, "decode_tier_stored_chunks"), 7);
}

// LMCache's own P/D receiver (cluster.handoff: lmcache-pd) counts the retrieved prompt as saved;
// with save_decode_cache (store_decode: true, LMCache PR #2509's decoder config) it stores the
// chunks decode fills: of the 2,299 tokens' floor(2,299 / 256) = 8 full chunks, the one past the
// prompt's 7, [1,792, 2,048), filled when the KV reaches 2,048 tokens. And a shared CXL pool
// carries it to the prefill node: the next turn (2,300 tokens of conversation + 100 new, 9 full
// chunks) finds chunks 0-6 in the prefill node's DRAM (its own store) and chunk 7 in the pool,
// 8 x 256 = 2,048 tokens, where without the decode tier it finds 7 x 256 = 1,792.
TEST(Disaggregation, AnLmcacheDecodeTierStoresTheAnswersChunkWhichTheNextTurnFindsInASharedPool) {
  const std::string pool =
      "system: dgx-h100-256gb-cxl-pool, serving: {tp: 8, tiers: {cxl_capacity: 1 TB}, ";
  const ClusterRunSpec spec = read_config<ClusterRunSpec>(
      parse_yaml("cluster:\n"
                 "  router: round_robin\n"
                 "  handoff: lmcache-pd\n"
                 "  nodes:\n"
                 "    - {name: p, role: prefill, " +
                     pool + KAPPASIM_TEST_STACK +
                     "store: stack}}\n"
                     "    - {name: d, role: decode, decode_tier: true, " +
                     pool +
                     "stack: {family: lmcache, store: blocking, retrieve_fixed: 0.5 ms, "
                     "retrieve_hash_per_chunk: 0.1 ms, store_fixed: 1.8 ms, store_decode: "
                     "true}}}\n"
                     "model: llama-3.1-70b\n"
                     "workload: {type: sharegpt}\n"
                     "check: true\n",
                 "<test>"),
      "");
  VectorSource src({chat_turn(1, 0, 0, 2000, 300), chat_turn(2, 30, 2300, 100, 2)});
  std::vector<RequestRecord> done;
  ClusterSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r, std::size_t) { done.push_back(r); };
  const auto f = run_cluster(spec, src, sinks);
  EXPECT_EQ(figure(f, "decode_tier_stored_chunks"), 1);  // turn 2's 2,401 tokens fill none
  ASSERT_EQ(done.size(), 2u);
  ASSERT_EQ(done[1].id, 2u);
  EXPECT_LT(done[0].e2e_s, 30);  // turn 1 had finished when turn 2 arrived
  EXPECT_EQ(done[1].cached_tokens, 8 * 256);
}

// Engine level: a P/D decode engine with its tier (EngineSinks) of Llama-3.1-8B on one H100
// (131,072 B of KV per token, 2 MiB per 16-token block) with vLLM's native connector in the step
// (0.1 ms per request, one DMA per 16-token block, decode blocks stored). Its pool is 111
// blocks: HBM 80 GB less the weights (16,060,522,496 B) and an activation reserve of
// 63,705,645,056 B leaves 111.5 blocks. A (160-token prompt, 200 outputs) and B (1,600 tokens,
// 40 outputs) arrive together and are admitted with their prompts' 10 + 100 blocks; A's first
// decode step takes the 111th. B's (its KV reaching 1,601 tokens) finds none: B, admitted last,
// is preempted with its KV covering 1,600 tokens (preempted_kv_tokens). Its 100 prompt chunks
// were stored when it first ran; it needs 101 blocks again, which A's blocks leave free only
// once A has finished; then it looks up its 1,601 tokens' 100 full chunks, finds all 100 and
// loads 1,600 tokens (computing the last one) instead of prefilling 1,601:
//   load = 0.1 ms + 100 DMAs x 2.36 us + 99 round trips between them + the first's 1 us
//          + 1,600 x 131,072 B at the link's DMA read rate (kWire / the read's wire cost).
// Stores: A's full blocks of its 359 tokens, floor(359 / 16) = 22, and B's of 1,639, 102.
// The engine run above, with or without the decode tier: its finished records and engine.
struct DecodeEngineRun {
  std::vector<RequestRecord> done;
  std::unique_ptr<VectorSource> src;  // the engine reads it
  std::unique_ptr<ServingEngine> e;
  const RequestRecord& rec(std::uint64_t id) const { return done.at(done[0].id == id ? 0 : 1); }
};
void run_preempting_decode_engine(DecodeEngineRun& run, bool tier) {
  const RunSpec spec = testing::run_spec(
      "model: llama-3.1-8b\n"
      "system: {preset: h100, nic_bandwidth: 50 GB/s}\n"
      "trace: false\nworkload: {type: sharegpt}\ncheck: true\n"
      "serving: {" KAPPASIM_TEST_NATIVE_DECODE_STACK
      "tp: 1, decode: true, load_path: block_dma, gpu_memory_utilization: 1, "
      "activation_reserve: 63705645056 B}\n");
  run.src = std::make_unique<VectorSource>(
      std::vector<Request>{request(1, 0, 160, 200), request(2, 0, 1600, 40)});
  EngineSinks sinks;
  sinks.role = EngineRole::Decode;
  sinks.decode_tier = sinks.decode_tier_prompt = tier;
  sinks.on_finish = [&run](const RequestRecord& r) { run.done.push_back(r); };
  run_simulation([&] { run.e = std::make_unique<ServingEngine>("engine", spec, *run.src, sinks); });
  run.e->check_end();
}

TEST(Disaggregation, APreemptedRequestOnADecodeTierReloadsItsKvInsteadOfRecomputingIt) {
  DecodeEngineRun run;
  run_preempting_decode_engine(run, true);
  const std::vector<RequestRecord>& done = run.done;
  const std::unique_ptr<ServingEngine>& e = run.e;
  ASSERT_EQ(e->gpu_kv().total_blocks(), 111);
  ASSERT_EQ(done.size(), 2u);
  const RequestRecord& a = run.rec(1);
  const RequestRecord& b = run.rec(2);
  EXPECT_EQ(a.preemptions, 0);
  EXPECT_EQ(b.preemptions, 1);
  EXPECT_EQ(b.preempted_kv_tokens, 1600);
  EXPECT_EQ(e->relookups(), 1u);
  EXPECT_EQ(e->reloaded_tokens(), 1600);
  EXPECT_EQ(b.output_tokens, 40);
  EXPECT_GT(b.e2e_s, a.e2e_s);  // reloaded after A finished
  // A DMA read of 512 B requests: 1 + 4 x 20 / 512 + 2 / 512 wire bytes per payload byte
  // (presets/links/pcie5.yaml); dma_copy_overhead 2.36 us (presets/gpus/h100-sxm5.yaml).
  const double rate = testing::kWire / (1 + 4 * 20.0 / 512 + 2.0 / 512);
  const double load =
      0.1e-3 + 100 * 2.36e-6 + 99 * testing::kRtt + testing::kRtt + 1600 * testing::kBkv8b / rate;
  EXPECT_NEAR(b.load_s, load, testing::tol(load));
  const SummaryBuilder::Totals t = e->totals(0);
  EXPECT_EQ(t.tier_stored_chunks, 22 + 102);
}

// Without its tier the same decode engine stores nothing: not A's pulled prompt or its decode
// blocks, and not B's, which its preemption made prefill its 1,601 tokens again in the steps and
// then decode to 1,639 (filling blocks 101 and 102, which a mixed engine would store).
TEST(Disaggregation, ADecodeEngineWithoutItsTierStoresNothingAfterAPreemption) {
  DecodeEngineRun run;
  run_preempting_decode_engine(run, false);
  ASSERT_EQ(run.done.size(), 2u);
  EXPECT_EQ(run.rec(2).preemptions, 1);
  EXPECT_EQ(run.rec(2).output_tokens, 40);
  EXPECT_EQ(run.e->relookups(), 0u);
  EXPECT_EQ(run.e->totals(0).tier_stored_chunks, 0);
}

}  // namespace
}  // namespace disaggregation_test
}  // namespace kappasim
