// The replica engine's pure parts (issue 14, serving/replica_step, RunSpec's weights-fit check):
// KV bytes per rank, the EP all-to-all bytes and time of a step, lockstep (the step waits for
// the slowest rank), NIC against NVLink, and the layouts a run refuses. Expected values by hand
// from the model presets' config.json numbers:
//   DeepSeek-V3: 61 layers (3 dense, 58 MoE), hidden 7168, MLA latent 512 + rope 64 = 576 values
//     per token per layer; 256 routed experts (moe_intermediate 2048), top-8, 8 groups of 32,
//     topk_group 4.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "serving/cluster_spec.hpp"
#include "serving/replica_step.hpp"
#include "serving/run_spec.hpp"
#include "tests/unit/preset_util.hpp"

namespace kappasim {
namespace replica_step_test {
namespace {

RunSpec run(const std::string& serving, const std::string& system = "dgx-h100",
            const std::string& gpu = "h200-sxm") {
  const std::string yaml = "model: deepseek-v3\nsystem: {preset: " + system + ", gpu: " + gpu +
                           "}\nserving: " + serving +
                           "\nworkload: {type: sharegpt, requests: 10}\n";
  return read_config<RunSpec>(parse_yaml(yaml, "run.yaml"), "");
}
using test::error_of;
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
// C(n − m, k) / C(n, k) as an explicit product.
double none_of(int n, int m, int k) {
  double p = 1;
  for (int i = 0; i < k; ++i) p *= double(n - m - i) / (n - i);
  return p;
}
const char* kDpEp8 = "{tp: 1, compute_dtype: fp8, parallelism: {dp_attention: 8, ep: 8}}";

TEST(ReplicaStep, DeepSeekV3DpEp8RankHoldsOnlyItsOwnLatent) {
  const ReplicaLayout L = make_replica_layout(run(kDpEp8));
  // 61 layers × 576 values × 2 B (BF16 KV) = 70,272 B per own token on the rank's one GPU.
  EXPECT_DOUBLE_EQ(L.cost.kv_bytes_rank, 70272.0);
  EXPECT_EQ(L.dp, 8);
  EXPECT_EQ(L.stage_gpus, 8);
  // Each rank holds one whole group of 32 experts; 4 of the 8 groups are chosen per token
  // (C(7,4)/C(8,4) = 1/2 that the rank's is not), and within the chosen 128 experts the top-8
  // miss the rank's 32 with C(96,8)/C(128,8).
  EXPECT_NEAR(L.p_gpu, 1 - (0.5 + 0.5 * none_of(128, 32, 8)), 1e-12);
}

TEST(ReplicaStep, AllToAllBytesAndTimeOfOneStepByHand) {
  const RunSpec spec = run(kDpEp8);
  const ReplicaLayout L = make_replica_layout(spec);
  std::vector<std::vector<SeqSlice>> b(8, std::vector<SeqSlice>{SeqSlice{1000, 0, true}});
  const ReplicaStepCost c = replica_step_cost(spec, L, b);
  const double p = 1 - (0.5 + 0.5 * none_of(128, 32, 8));  // ≈ 0.4536 (test above)
  // Dispatch in FP8 with one FP32 scale per 128 values: 1 + 4/128 = 1.03125 B per value; per
  // (sender, receiver) pair per MoE layer 1000 tokens × p × 7168 × 1.03125 = p × 7,392,000 B;
  // the step has 58 MoE layers.
  const double pair = 1000 * p * 7168 * 1.03125;
  ASSERT_EQ(c.pair_dispatch_bytes.size(), 64u);
  EXPECT_NEAR(c.pair_dispatch_bytes[0 * 8 + 1], 58 * pair, 1e-3);
  EXPECT_DOUBLE_EQ(c.pair_dispatch_bytes[3 * 8 + 3], 0.0);  // nothing to itself
  // Both phases (combine in BF16, 2 B per value), 8 senders × 7 receivers, all over NVLink.
  EXPECT_NEAR(c.a2a_nvlink_bytes, 58.0 * 56 * 1000 * p * 7168 * (1.03125 + 2), 1e-3);
  EXPECT_DOUBLE_EQ(c.a2a_nic_bytes, 0.0);
  // Each GPU sends 7 pairs' bytes per dispatch at H200 NVLink 450 GB/s, + 2.8 us latency.
  EXPECT_NEAR(c.dispatch_s, 58 * (7 * pair / 450e9 + 2.8e-6), 1e-12);
  EXPECT_NEAR(c.combine_s, 58 * (7 * 1000 * p * 7168 * 2.0 / 450e9 + 2.8e-6), 1e-12);
  EXPECT_NEAR(c.step_s, c.local_s + c.dispatch_s + c.expert_s + c.combine_s + c.pp_s, 1e-15);
}

TEST(ReplicaStep, LockstepStepLastsTheSlowestRankAndIdleRanksRunADummyBatch) {
  const RunSpec spec = run(kDpEp8);
  const ReplicaLayout L = make_replica_layout(spec);
  const std::vector<SeqSlice> big{SeqSlice{2048, 30000, true}};
  const std::vector<SeqSlice> small{SeqSlice{64, 0, true}};
  std::vector<std::vector<SeqSlice>> mixed(8, small);
  mixed[5] = big;
  mixed[6] = {};  // no work: a dummy batch
  const ReplicaStepCost c = replica_step_cost(spec, L, mixed);
  const ReplicaStepCost all_big =
      replica_step_cost(spec, L, std::vector<std::vector<SeqSlice>>(8, big));
  // The non-expert time is the slowest rank's: the same as if every rank had the big batch.
  EXPECT_NEAR(c.local_s, all_big.local_s, 1e-15);
  EXPECT_NEAR(c.local_s, c.rank_local_s[0][5], 1e-15);
  for (std::size_t r = 0; r < 8; ++r) EXPECT_LE(c.rank_local_s[0][r], c.local_s);
  EXPECT_DOUBLE_EQ(c.rank_tokens[6], 0.0);
  EXPECT_GT(c.rank_local_s[0][6], 0.0);  // the dummy batch still runs the layers
  // Mean wait of a rank for the slowest: (Σ (slowest − own)) / 8.
  double idle = 0;
  for (std::size_t r = 0; r < 8; ++r) idle += (c.local_s - c.rank_local_s[0][r]) / 8;
  EXPECT_NEAR(c.rank_idle_s, idle, 1e-15);
  EXPECT_GT(c.rank_idle_s, 0.0);
  EXPECT_NEAR(all_big.rank_idle_s, 0.0, 1e-15);
  // A rank's own non-expert time does not depend on the others' batches.
  std::vector<std::vector<SeqSlice>> other(8, big);
  EXPECT_NEAR(replica_step_cost(spec, L, other).rank_local_s[0][5], c.rank_local_s[0][5], 1e-15);
}

TEST(ReplicaStep, TwoNodeAllToAllGoesOverTheNicByTheHandComputedTime) {
  // DP-16 + EP-16: 16 experts per GPU (half a group). One node of 16 GPUs (a hypothetical
  // NVLink domain) against 2 nodes of 8 joined by ConnectX-7 NICs (400 Gb/s = 50 GB/s per
  // direction per GPU; the latency is the system's nic_latency, 0 when the preset has none).
  const char* sv = "{tp: 1, compute_dtype: fp8, parallelism: {dp_attention: 16, ep: 16, nodes: 2}}";
  const ReplicaLayout two = make_replica_layout(run(sv));
  const ModelSpec m = run(sv).model;
  const char* sv1 = "{tp: 1, compute_dtype: fp8, parallelism: {dp_attention: 16, ep: 16}}";
  const std::string yaml1 =
      "model: deepseek-v3\nsystem: {preset: dgx-h100, gpus: 16, gpus_per_socket: 8, gpu: "
      "h200-sxm}\nserving: " +
      std::string(sv1) + "\nworkload: {type: sharegpt, requests: 10}\n";
  const ReplicaLayout one = make_replica_layout(read_config<RunSpec>(parse_yaml(yaml1, "r"), ""));
  // P(a GPU's 16 experts get none of a token's 8): its group not chosen (1/2), or chosen and
  // none of the 8 picks (uniform over the 4 chosen groups' 128 experts) among its 16.
  const double p_gpu = 1 - (0.5 + 0.5 * none_of(128, 16, 8));
  // A node holds 4 groups: j of them among the 4 chosen with C(4,j)·C(4,4−j)/70, and then none
  // of the 8 picks among its 32·j experts of the chosen 128.
  const double p_node = 1 - (1.0 / 70 + 16.0 / 70 * none_of(128, 32, 8) +
                             36.0 / 70 * none_of(128, 64, 8) + 16.0 / 70 * none_of(128, 96, 8));
  EXPECT_NEAR(two.p_gpu, p_gpu, 1e-12);
  EXPECT_NEAR(one.p_gpu, p_gpu, 1e-12);
  EXPECT_NEAR(two.p_node, p_node, 1e-12);
  const std::vector<double> tokens(16, 1000.0);
  const double tok = 7168 * 2.0;  // BF16 combine bytes per token
  const A2aPhase a1 = a2a_phase(one, m, tokens, 2.0);
  const A2aPhase a2 = a2a_phase(two, m, tokens, 2.0);
  // One node: 15 peers over NVLink.
  EXPECT_NEAR(a1.time_s, 15 * 1000 * p_gpu * tok / 450e9 + 2.8e-6, 1e-12);
  // Two nodes: 7 node peers + 7 forwarded for the remote sender of the same local index over
  // NVLink (14 × ...), one RDMA copy to the other node: 1000 × p_node × 14,336 B at 50 GB/s.
  const double nvl = 14 * 1000 * p_gpu * tok / 450e9 + 2.8e-6;
  EXPECT_DOUBLE_EQ(two.nic_Bps, 50e9);
  const double nic = 1000 * p_node * tok / 50e9 + two.nic_latency_s;
  EXPECT_GT(nic, nvl);
  EXPECT_NEAR(a2.time_s, nic, 1e-12);
  EXPECT_NEAR(a2.nic_out[0], 1000 * p_node * tok, 1e-6);
  EXPECT_GT(a2.time_s, a1.time_s);
}

TEST(ReplicaStep, PipelineStagesRunInSeriesWithActivationsOverTheNic) {
  // TP-8 × PP-2 over 2 nodes: the stage boundary crosses nodes; each GPU sends its 1/8 of the
  // step's hidden states (BF16) to the next stage.
  const RunSpec spec = run("{tp: 8, compute_dtype: fp8, parallelism: {pp: 2, nodes: 2}}");
  const ReplicaLayout L = make_replica_layout(spec);
  const ReplicaStepCost c =
      replica_step_cost(spec, L, {std::vector<SeqSlice>{SeqSlice{4096, 0, true}}});
  EXPECT_NEAR(c.pp_s, 4096 * 7168 * 2.0 / 8 / 50e9 + L.nic_latency_s, 1e-12);
  ASSERT_EQ(c.stage_local_s.size(), 2u);
  // Stage 0 has layers 0-30 (3 dense + 28 MoE), stage 1 layers 31-60 plus the LM head.
  EXPECT_GT(c.stage_local_s[0], 0.0);
  EXPECT_NEAR(c.local_s, c.stage_local_s[0] + c.stage_local_s[1], 1e-15);
}

TEST(ReplicaWeights, DeepSeekV3Bf16OnOneOr2H100NodesIsRefusedFp8On2NodesFits) {
  // BF16 on 8 H100: 671e9 params × 2 B / 8 ≈ 168 GB per GPU > 0.9 × 80 GB = 72 GB.
  const std::string e1 = error_of(
      [] { run("{tp: 1, parallelism: {dp_attention: 8, ep: 8}}", "dgx-h100", "h100-sxm5"); });
  EXPECT_TRUE(has(e1, "serving.parallelism")) << e1;
  EXPECT_TRUE(has(e1, "72 GB")) << e1;
  // BF16 on 2 × 8 H100 (DP-16 + EP-16): the routed experts alone are 256 × 3 × 7168 × 2048 ×
  // 58 layers = 653.9e9 params, / 16 GPUs × 2 B = 81.7 GB > 72 GB: refused.
  const std::string e2 = error_of([] {
    run("{tp: 1, parallelism: {dp_attention: 16, ep: 16, nodes: 2}}", "dgx-h100", "h100-sxm5");
  });
  EXPECT_TRUE(has(e2, "serving.parallelism")) << e2;
  // FP8: experts 40.9 GB + attention (~11.4e9 params, copied on every rank) 11.4 GB + dense
  // MLPs 1.2 GB + shared experts 2.6 GB + embedding and LM head (tp 1) 1.9 GB ≈ 58 GB + 5.2 GB
  // activation reserve < 72 GB: accepted.
  EXPECT_EQ(error_of([] {
              run("{tp: 1, compute_dtype: fp8, parallelism: {dp_attention: 16, ep: 16, nodes: 2}}",
                  "dgx-h100", "h100-sxm5");
            }),
            "");
}

TEST(ReplicaWeights, BadLayoutsReachTheRun) {
  // EP above the expert count, and a layout whose attention TP does not divide the heads.
  const std::string ep = error_of([] {
    run("{tp: 1, compute_dtype: fp8, parallelism: {dp_attention: 512, ep: 512, nodes: 64}}");
  });
  EXPECT_TRUE(has(ep, "serving.parallelism")) << ep;
  const std::string heads = error_of([] {
    run("{tp: 3, compute_dtype: fp8, parallelism: {dp_attention: 2}}", "dgx-h100", "h200-sxm");
  });
  EXPECT_TRUE(has(heads, "serving.parallelism")) << heads;
}

TEST(ReplicaWeights, EveryFeatureIsAcceptedOnEveryLayout) {
  // Issue 21: one engine serves every layout, so nothing is refused for being on "the other
  // engine": DeepSeek-V3 FP8 as DP-8 + EP-8 takes a lower KV tier, a GPU-side buffer, partial
  // recompute and every load path (tests/sim/engine_layouts_test.cpp runs them).
  const std::string layout = "{tp: 1, compute_dtype: fp8, parallelism: {dp_attention: 8, ep: 8}";
  EXPECT_NO_THROW(run(layout + ", tiers: {cxl_capacity: 100 GB}}", "dgx-h100-256gb-cxl"));
  EXPECT_NO_THROW(run(layout + ", kv_buffer: {capacity: 1 GB}}"));
  EXPECT_NO_THROW(run(layout + ", recompute: {mode: fixed, fraction: 0.5}}"));
  EXPECT_NO_THROW(run(layout + ", load_path: layerwise}"));
  // A cluster node may be any layout too (on H200s, as above: DeepSeek-V3's FP8 weights at
  // EP 8, 98.9 GB a GPU, do not fit an H100's 80 GB, and a node group is checked as its run is).
  const std::string cluster =
      "cluster:\n  router: round_robin\n  nodes:\n    - {name: a, system: {preset: dgx-h100, "
      "gpu: GPU}, serving: {tp: 1, compute_dtype: fp8, parallelism: {dp_attention: 8, ep: "
      "8}}}\nmodel: deepseek-v3\nworkload: {requests: 4}\n";
  const auto node = [&](const std::string& gpu) {
    std::string y = cluster;
    y.replace(y.find("GPU"), 3, gpu);
    return read_config<ClusterRunSpec>(parse_yaml(y, "c.yaml"), "");
  };
  EXPECT_NO_THROW(node("h200-sxm"));
  try {
    node("h100-sxm5");
    ADD_FAILURE() << "DeepSeek-V3 FP8 at EP 8 on H100s was accepted";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "cluster.nodes.0.serving.parallelism")) << e.what();
    EXPECT_TRUE(has(e.what(), "leaves no KV cache")) << e.what();
  }
}

}  // namespace
}  // namespace replica_step_test
}  // namespace kappasim
