// Parallelism layouts (issue 14, models/llm/parallelism, docs/parallelism.md): KV bytes per rank
// per layout, the EP all-to-all's expected reach and bytes, TP all-reduce and PP bytes, κ_crit
// per layout, and bad layouts. Expected values are computed here by hand from the models'
// config.json numbers (presets/models/deepseek-v3.yaml, qwen3-235b-a22b.yaml), written out:
//   DeepSeek-V3: 61 layers (3 dense), hidden 7168, 128 q heads, MLA latent 512 + rope 64 = 576
//     values per token per layer; 256 routed experts, top-8, n_group 8, topk_group 4.
//   Qwen3-235B-A22B: 94 layers (all MoE), hidden 4096, 64 q / 4 KV heads of 128; 128 experts,
//     top-8, no groups.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "../cli/cli_util.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "models/analytic/kappa.hpp"
#include "models/llm/parallelism.hpp"
#include "serving/serving_spec.hpp"
#include "systems/system_spec.hpp"
#include "tests/unit/preset_util.hpp"

namespace kappasim {
namespace parallelism_test {
namespace {

ModelSpec model(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<ModelSpec>(ref, "model", "model");
}
SystemSpec sys(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<SystemSpec>(ref, "system", "system");
}
ParallelismSpec L(const std::string& text) { return parse_layout(text, "test"); }

// The InputError message of f(), or "" when it does not throw one.
using test::error_of;
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// C(n − m, k) / C(n, k) as an explicit product, written independently of the library's.
double none_of(int n, int m, int k) {
  double p = 1;
  for (int i = 0; i < k; ++i) p *= double(n - m - i) / (n - i);
  return p;
}

// ---- KV bytes per rank per layout ---------------------------------------------------------

TEST(ParallelismKv, DeepSeekV3LatentReplicatedUnderTpNotUnderDpAttention) {
  const ModelSpec m = model("deepseek-v3");
  // One layer's latent: 576 values × 2 B = 1152 B; 61 layers: 70,272 B per token.
  // TP-8: every TP rank holds the whole latent (8 copies per token).
  LayoutCost c = layout_cost(m, DType::Bf16, "bf16", L("tp=8"), 8);
  EXPECT_DOUBLE_EQ(c.kv_bytes_rank, 70272);
  EXPECT_DOUBLE_EQ(c.kv_bytes_share, 70272);
  EXPECT_DOUBLE_EQ(c.kv_replication, 8);
  // DP-attention 8 + EP 8: a GPU holds the whole latent of its own requests only: per token
  // of the replica, 70,272 / 8 = 8,784 B; one copy per token.
  c = layout_cost(m, DType::Bf16, "bf16", L("dp_attention=8,ep=8"), 8);
  EXPECT_EQ(c.gpus, 8);
  EXPECT_DOUBLE_EQ(c.kv_bytes_rank, 70272);
  EXPECT_DOUBLE_EQ(c.kv_bytes_share, 8784);
  EXPECT_DOUBLE_EQ(c.kv_replication, 1);
  // Two nodes, attention TP 8 × DP 2, EP 16: 70,272 / 2 = 35,136 B; 8 copies.
  c = layout_cost(m, DType::Bf16, "bf16", L("tp=8,dp_attention=2,ep=16,nodes=2"), 8);
  EXPECT_EQ(c.gpus, 16);
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(c.kv_bytes_share, 35136);
  EXPECT_DOUBLE_EQ(c.kv_replication, 8);
  // Two nodes, DP-attention 16 + EP 16: 70,272 / 16 = 4,392 B.
  c = layout_cost(m, DType::Bf16, "bf16", L("dp_attention=16,ep=16,nodes=2"), 8);
  EXPECT_DOUBLE_EQ(c.kv_bytes_share, 4392);
  // TP 8 × PP 2 on two nodes: 61 layers split 31 + 30 (vLLM: the extra layer before the last
  // stage); the first stage holds 31 × 1152 = 35,712 B per token per GPU.
  c = layout_cost(m, DType::Bf16, "bf16", L("tp=8,pp=2,nodes=2"), 8);
  ASSERT_EQ(c.stages.size(), 2u);
  EXPECT_EQ(c.stages[0].layers, 31);
  EXPECT_EQ(c.stages[1].layers, 30);
  EXPECT_DOUBLE_EQ(c.kv_bytes_rank, 35712);
  EXPECT_DOUBLE_EQ(c.stages[1].kv_bytes_rank, 34560);
  EXPECT_DOUBLE_EQ(c.kv_replication, 8);
  // FP8 KV halves every figure: 576 B per layer.
  c = layout_cost(m, DType::Fp8, "bf16", L("dp_attention=8,ep=8"), 8);
  EXPECT_DOUBLE_EQ(c.kv_bytes_share, 61 * 576.0 / 8);
}

TEST(ParallelismKv, Qwen3GqaHeadsShardedByAttentionTp) {
  const ModelSpec m = model("qwen3-235b-a22b");
  // Full model: 2 (K, V) × 4 heads × 128 × 2 B = 2048 B per layer, × 94 = 192,512 B.
  // TP-8 > 4 KV heads: each GPU holds one head (each head on 2 GPUs):
  // 2 × 1 × 128 × 2 = 512 B per layer, × 94 = 48,128 B; twice the fair 24,064.
  LayoutCost c = layout_cost(m, DType::Bf16, "bf16", L("tp=8"), 8);
  EXPECT_DOUBLE_EQ(c.kv_bytes_rank, 48128);
  EXPECT_DOUBLE_EQ(c.kv_bytes_share, 48128);
  EXPECT_DOUBLE_EQ(c.kv_replication, 2);
  // DP-8 + EP-8: whole KV of own requests, 192,512 / 8 = 24,064 per replica token; no copies.
  c = layout_cost(m, DType::Bf16, "bf16", L("dp_attention=8,ep=8"), 8);
  EXPECT_DOUBLE_EQ(c.kv_bytes_rank, 192512);
  EXPECT_DOUBLE_EQ(c.kv_bytes_share, 24064);
  EXPECT_DOUBLE_EQ(c.kv_replication, 1);
  // TP 4 × DP 2 (EP 8): one head per GPU, no replication: 48,128 / 2 = 24,064.
  c = layout_cost(m, DType::Bf16, "bf16", L("tp=4,dp_attention=2,ep=8"), 8);
  EXPECT_DOUBLE_EQ(c.kv_bytes_rank, 48128);
  EXPECT_DOUBLE_EQ(c.kv_bytes_share, 24064);
  EXPECT_DOUBLE_EQ(c.kv_replication, 1);
  // Two nodes, TP 8 × DP 2, EP 16: 48,128 / 2 = 24,064, still 2 copies.
  c = layout_cost(m, DType::Bf16, "bf16", L("tp=8,dp_attention=2,ep=16,nodes=2"), 8);
  EXPECT_DOUBLE_EQ(c.kv_bytes_share, 24064);
  EXPECT_DOUBLE_EQ(c.kv_replication, 2);
  // TP 8 × PP 2: 47 layers per stage × 512 B = 24,064 B.
  c = layout_cost(m, DType::Bf16, "bf16", L("tp=8,pp=2,nodes=2"), 8);
  EXPECT_DOUBLE_EQ(c.kv_bytes_rank, 24064);
}

TEST(ParallelismKv, StageLayersFollowVllmDefaultPartition) {
  // vLLM get_pp_indices: L // pp each, the remainder one each on the stages before the last.
  EXPECT_EQ(stage_layer_counts(61, 2), (std::vector<int>{31, 30}));
  EXPECT_EQ(stage_layer_counts(61, 3), (std::vector<int>{20, 21, 20}));
  EXPECT_EQ(stage_layer_counts(94, 4), (std::vector<int>{23, 24, 24, 23}));
  EXPECT_EQ(stage_layer_counts(80, 4), (std::vector<int>{20, 20, 20, 20}));
}

// ---- EP all-to-all ------------------------------------------------------------------------

TEST(ParallelismEp, ReachOfATokensTopKWithAndWithoutGroups) {
  // Qwen3 EP 8: a rank holds 16 of 128 experts; P(none of top-8 there) = C(112,8)/C(128,8)
  // = 0.33258.
  EXPECT_NEAR(p_holder_not_selected(128, 16, 8, 1, 1), none_of(128, 16, 8), 1e-15);
  EXPECT_NEAR(none_of(128, 16, 8), 0.332580388, 1e-9);
  // DeepSeek-V3 EP 8: a rank holds one group of 32; the group is among the 4 of 8 chosen with
  // probability 1/2, and then misses all 8 picks from the 128 eligible with C(96,8)/C(128,8)
  // = 0.092747: P(not reached) = 0.5 + 0.5 × 0.092747 = 0.546374.
  EXPECT_NEAR(p_holder_not_selected(256, 32, 8, 8, 4), 0.5 + 0.5 * none_of(128, 32, 8), 1e-13);
  // EP 16: a rank holds half a group (16): 0.5 + 0.5 · C(112,8)/C(128,8) = 0.666290.
  EXPECT_NEAR(p_holder_not_selected(256, 16, 8, 8, 4), 0.666290194, 1e-9);
  // A node of 8 ranks (128 experts = 4 groups): c of its 4 groups among the 4 chosen, with
  // hypergeometric weights C(4,c)C(4,4−c)/C(8,4) = 1, 16, 36, 16, 1 over 70.
  const double node =
      (1 + 16 * none_of(128, 32, 8) + 36 * none_of(128, 64, 8) + 16 * none_of(128, 96, 8)) / 70;
  EXPECT_NEAR(p_holder_not_selected(256, 128, 8, 8, 4), node, 1e-14);
  EXPECT_NEAR(node, 0.0370789304, 1e-9);
}

TEST(ParallelismEp, AllToAllBytesPerTokenOverNvlinkAndNic) {
  {
    // Qwen3, DP-8 + EP-8 on one node, BF16: 7 other ranks × (1 − 0.33258) = 4.6719 copies of
    // 4096 × (2 + 2) B (dispatch + combine) per MoE layer, 94 layers, shared by the 8 GPUs:
    // 94 × 4.6719 × 16384 / 8 = 899,404 B per replica token per GPU; no NIC, no all-reduce.
    const LayoutCost c =
        layout_cost(model("qwen3-235b-a22b"), DType::Bf16, "bf16", L("dp_attention=8,ep=8"), 8);
    const double copies = 7 * (1 - none_of(128, 16, 8));
    EXPECT_NEAR(c.ep_ranks_reached, copies, 1e-12);
    EXPECT_NEAR(c.stages[0].ep_nvlink_bytes, 94 * copies * 16384 / 8, 1e-6);
    EXPECT_NEAR(c.stages[0].nvlink_bytes, 899404, 1);
    EXPECT_DOUBLE_EQ(c.stages[0].nic_bytes, 0);
    EXPECT_DOUBLE_EQ(c.stages[0].tp_allreduce_bytes, 0);
  }
  {
    // DeepSeek-V3 TP-8: two ring all-reduces per layer of 2·7/8 × 7168 × 2 B = 25,088 B,
    // 61 layers: 3,060,736 B over NVLink per token per GPU.
    const LayoutCost c = layout_cost(model("deepseek-v3"), DType::Bf16, "bf16", L("tp=8"), 8);
    EXPECT_DOUBLE_EQ(c.stages[0].tp_allreduce_bytes, 3060736);
    EXPECT_DOUBLE_EQ(c.stages[0].nvlink_bytes, 3060736);
  }
  {
    // DeepSeek-V3, TP 8 × DP 2, EP 16 on two nodes. Attention all-reduce per layer per
    // replica token: 25,088 / 2 (DP ranks) = 12,544 B, 61 layers + 3 dense MLPs = 64 of them:
    // 802,816 B. EP: 58 MoE layers; per token (n_e = 2 nodes of g = 8 ranks):
    //   NVLink copies 2 × 7 × (1 − 0.666290) = 4.6719, NIC copies 1 × (1 − 0.037079) = 0.96292,
    //   each 7168 × 4 B, shared by the 16 GPUs.
    const LayoutCost c = layout_cost(model("deepseek-v3"), DType::Bf16, "bf16",
                                     L("tp=8,dp_attention=2,ep=16,nodes=2"), 8);
    const double nvl = 2 * 7 * (1 - 0.666290194), nic = 1 - 0.0370789304;
    EXPECT_DOUBLE_EQ(c.stages[0].tp_allreduce_bytes, 802816);
    EXPECT_NEAR(c.stages[0].ep_nvlink_bytes, 58 * nvl * 28672 / 16, 0.01);
    EXPECT_NEAR(c.stages[0].ep_nic_bytes, 58 * nic * 28672 / 16, 0.01);
    EXPECT_NEAR(c.ep_nodes_reached, nic, 1e-9);
  }
  {
    // FP8 dispatch: 1 B + one FP32 scale per 128 values (1/32 B per value); combine BF16.
    const LayoutCost c =
        layout_cost(model("qwen3-235b-a22b"), DType::Bf16, "fp8", L("dp_attention=8,ep=8"), 8);
    EXPECT_DOUBLE_EQ(c.dispatch_bytes_per_value, 1.03125);
    const double copies = 7 * (1 - none_of(128, 16, 8));
    EXPECT_NEAR(c.stages[0].ep_nvlink_bytes, 94 * copies * 4096 * 3.03125 / 8, 1e-6);
  }
  {
    // PP across two nodes: 7168 × 2 B per token from stage 0, split over its 8 GPUs = 1792 B,
    // over the NIC (stage 1 starts on the second node); the last stage sends nothing.
    const LayoutCost c =
        layout_cost(model("deepseek-v3"), DType::Bf16, "bf16", L("tp=8,pp=2,nodes=2"), 8);
    EXPECT_DOUBLE_EQ(c.stages[0].pp_bytes, 1792);
    EXPECT_DOUBLE_EQ(c.stages[0].nic_bytes, 1792);
    EXPECT_DOUBLE_EQ(c.stages[1].pp_bytes, 0);
    EXPECT_DOUBLE_EQ(c.stages[1].nic_bytes, 0);
    EXPECT_NEAR(c.stages[0].flops_fraction + c.stages[1].flops_fraction, 1, 1e-12);
  }
}

TEST(ParallelismKv, WeightsPerGpuByLayout) {
  // Qwen3-235B, DP-8 + EP-8, BF16: every GPU holds all attention (tp 1), 1/8 of the experts,
  // the routers, norms, embedding and LM head. Per layer:
  //   attention 4096·64·128 + 2·4096·4·128 + 64·128·4096 + 2·128 (q/k norms) = 71,303,424
  //   experts 128 · 3·4096·1536 / 8 = 301,989,888; router 4096·128 = 524,288; norms 8,192
  //   = 373,825,792; × 94 = 35,139,624,448; + 2 · 151936·4096 + 4096 = 36,384,288,256 params
  //   × 2 B = 72,768,576,512 B (does not fit an 80 GB H100 at 0.9 utilisation with KV).
  EXPECT_DOUBLE_EQ(
      layout_weight_bytes_per_gpu(model("qwen3-235b-a22b"), L("dp_attention=8,ep=8"), 2),
      72768576512.0);
  // TP-8: attention (with its q/k norm weights) and experts over 8, routers and layer norms
  // on every GPU: 71,303,424 / 8 + 2,415,919,104 / 8 + 524,288 + 8,192 = 311,435,296 per
  // layer (× 94 = 29,274,917,824) + 1,244,659,712 / 8 + 4096 = 29,430,504,384 params × 2 B.
  EXPECT_DOUBLE_EQ(layout_weight_bytes_per_gpu(model("qwen3-235b-a22b"), L("tp=8"), 2),
                   2 * 29430504384.0);
}

// ---- κ_crit per layout ----------------------------------------------------------------------

TEST(ParallelismKappa, TpLayoutEqualsTpQueryAndDpAttentionRemovesReplication) {
  const SystemSpec s = sys("h100");
  for (const char* name : {"deepseek-v3", "qwen3-235b-a22b"}) {
    const ModelSpec m = model(name);
    KappaQuery q;
    q.tp = 8;
    const KappaPoint tp8 = evaluate_kappa(m, s, q);
    KappaQuery ql;
    ql.layout = L("tp=8");
    const KappaPoint lay = evaluate_kappa(m, s, ql);
    EXPECT_DOUBLE_EQ(lay.kappa_crit, tp8.kappa_crit) << name;
    EXPECT_DOUBLE_EQ(lay.b_kv_gpu, tp8.b_kv_gpu) << name;
    ql.layout = L("dp_attention=8,ep=8");
    const KappaPoint dp = evaluate_kappa(m, s, ql);
    // Same F_pf per GPU (F/8 either way); KV per replica token per GPU 8× smaller for the MLA
    // latent (replicated 8× under TP-8), 2× smaller for Qwen3 (KV heads replicated 2×).
    const double gain = std::string(name) == "deepseek-v3" ? 8 : 2;
    EXPECT_NEAR(dp.kappa_crit / tp8.kappa_crit, gain, 1e-12) << name;
    ASSERT_TRUE(dp.layout.has_value());
    // With communication serial with compute κ_crit rises (the step is longer).
    EXPECT_GT(dp.layout->kappa_crit_comm, dp.kappa_crit);
  }
}

TEST(ParallelismKappa, CommunicationTimeAtLinkPeaks) {
  // DeepSeek-V3 TP-8 on h100 (NVLink 450 GB/s per direction): 3,060,736 B / 450e9 B/s =
  // 6.8016 µs per token per GPU; κ_crit_comm = (F/8 / 989e12 + 6.8016e-6) × BW / 70,272.
  const SystemSpec s = sys("h100");
  KappaQuery q;
  q.layout = L("tp=8");
  const KappaPoint p = evaluate_kappa(model("deepseek-v3"), s, q);
  ASSERT_TRUE(p.layout.has_value());
  EXPECT_NEAR(p.layout->t_comm, 3060736 / 450e9, 1e-18);
  EXPECT_NEAR(p.layout->kappa_crit_comm,
              (p.f_pf / 8 / 989e12 + 3060736 / 450e9) * p.bandwidth / 70272, 1e-9);
  // Two nodes, TP 8 × PP 2: the boundary's 1792 B cross the 50 GB/s ConnectX-7 NIC.
  q.layout = L("tp=8,pp=2,nodes=2");
  const KappaPoint pp = evaluate_kappa(model("deepseek-v3"), s, q);
  const double nic_t = 1792 / 50e9;
  EXPECT_GE(pp.layout->t_comm, nic_t);
}

// ---- bad layouts ----------------------------------------------------------------------------

TEST(ParallelismBadInput, LayoutsThatDoNotFitTheModelOrTheNodes) {
  const ModelSpec ds = model("deepseek-v3"), qw = model("qwen3-235b-a22b"),
                  llama = model("llama-3.1-70b");
  auto check = [](const ModelSpec& m, const std::string& layout, int gpn) {
    return error_of([&] { validate_layout(L(layout), m, gpn, "--layout '" + layout + "'"); });
  };
  EXPECT_TRUE(has(check(ds, "tp=3", 8), "does not divide the 128 query heads"))
      << check(ds, "tp=3", 8);
  EXPECT_TRUE(has(check(ds, "tp=8,pp=62,nodes=62", 8), "62 stages exceed the 61 layers"));
  EXPECT_TRUE(
      has(check(ds, "dp_attention=512,ep=512,nodes=64", 8), "exceeds the 256 routed experts"));
  EXPECT_TRUE(has(check(qw, "dp_attention=3,ep=3", 8), "does not divide the 128 routed experts"));
  EXPECT_TRUE(has(check(qw, "dp_attention=8,ep=4", 8), "must be 1 (experts tensor-parallel) or"));
  EXPECT_TRUE(has(check(llama, "dp_attention=8,ep=8", 8), "needs a MoE model"));
  // GPU count: 16 GPUs on one node of 8; 16 over 3 nodes; a stage of 6 against nodes of 4.
  std::string e = check(ds, "tp=8,dp_attention=2", 8);
  EXPECT_TRUE(has(e, "16 GPUs") && has(e, "has 8 GPUs") && has(e, "raise nodes to 2")) << e;
  EXPECT_TRUE(has(check(ds, "tp=8,dp_attention=2,nodes=3", 8), "do not split evenly over 3 nodes"));
  EXPECT_TRUE(
      has(check(ds, "tp=2,dp_attention=3,pp=2,nodes=3", 8), "fill whole nodes or fit in one"));
  // Good layouts pass.
  EXPECT_EQ(check(ds, "dp_attention=8,ep=8", 8), "");
  EXPECT_EQ(check(qw, "tp=8,dp_attention=2,ep=16,nodes=2", 8), "");
  EXPECT_EQ(check(llama, "tp=8,pp=2,nodes=2", 8), "");
}

TEST(ParallelismBadInput, LayoutSyntax) {
  EXPECT_TRUE(
      has(error_of([] { parse_layout("tpp=8", "--layout 'tpp=8'"); }), "did you mean 'tp'"));
  EXPECT_TRUE(has(error_of([] { parse_layout("tp=x", "--layout"); }), "whole number"));
  EXPECT_TRUE(has(error_of([] { parse_layout("tp=0", "--layout"); }), "whole number"));
  EXPECT_TRUE(has(error_of([] { parse_layout("", "--layout"); }), "empty layout"));
  EXPECT_TRUE(has(error_of([] { parse_layout("ep", "--layout"); }), "needs a value"));
  EXPECT_TRUE(
      has(error_of([] { parse_layout("nic_bandwidth=5 GB", "--layout"); }), "nic_bandwidth"));
  const ParallelismSpec p = parse_layout("dp_attention=8, ep=8, nic_bandwidth=25 GB/s", "x");
  EXPECT_EQ(p.tp, 1);
  EXPECT_EQ(p.dp_attention, 8);
  EXPECT_DOUBLE_EQ(p.nic_bandwidth_Bps, 25e9);
  EXPECT_EQ(layout_name(p), "tp=1,dp_attention=8,ep=8,nic_bandwidth=25 GB/s");
}

TEST(ParallelismBadInput, ExpertGroupsMustDivideTheExperts) {
  ConfigNode n = parse_yaml(
      "type: moe\nnum_experts: 256\nexperts_per_token: 8\n"
      "moe_intermediate_size: 2048\nnum_expert_groups: 6\ntopk_groups: 4\n",
      "inline-mlp");
  EXPECT_TRUE(has(error_of([&] { read_config<MlpSpec>(n, "model.mlp"); }),
                  "model.mlp.num_expert_groups: 6 does not divide the 256 experts"));
  n = parse_yaml(
      "type: moe\nnum_experts: 256\nexperts_per_token: 8\n"
      "moe_intermediate_size: 2048\nnum_expert_groups: 8\ntopk_groups: 9\n",
      "inline-mlp");
  EXPECT_TRUE(has(error_of([&] { read_config<MlpSpec>(n, "model.mlp"); }), "topk_groups"));
}

// ---- serving.parallelism: the engine refuses what it cannot simulate ------------------------

TEST(ParallelismServing, ServingSpecReadsLayoutsBeyondTpAndChecksItsTp) {
  auto serving_error = [](const std::string& yaml) {
    ConfigNode n = parse_yaml(yaml, "inline-serving");
    return error_of([&] { read_config<ServingSpec>(n, "serving"); });
  };
  // Layouts beyond TP run in the replica engine (serving/replica_engine); they are checked
  // against the model and system in RunSpec::validate (tests/unit/replica_step_test.cpp).
  for (const char* key : {"dp_attention: 8", "ep: 8", "pp: 2", "nodes: 2"})
    EXPECT_EQ(serving_error(std::string("tp: 8\nparallelism: {") + key + "}\n"), "") << key;
  EXPECT_TRUE(has(serving_error("tp: 8\nparallelism: {tp: 4}\n"),
                  "serving.parallelism.tp: 4 differs from serving.tp 8"));
  EXPECT_TRUE(has(serving_error("parallelism: {pp: 0}\n"), "pp"));
  // Plain TP (or nothing) reads as before.
  EXPECT_EQ(serving_error("tp: 8\nparallelism: {tp: 8}\n"), "");
  EXPECT_EQ(serving_error("tp: 8\n"), "");
}

// ---- kappasim kappa --layout ----------------------------------------------------------------

test::Result kappasim(const std::string& args) {
  static const auto dir = test::fresh_dir("parallelism");
  return test::run_shell(KAPPASIM_BIN, args, dir / "stderr.txt");
}
double json_number(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::stod(json.substr(at + key.size() + 4));
}

TEST(ParallelismCli, KappaPerLayout) {
  test::Result tp = kappasim("kappa -m deepseek-v3 -s h100 --tp 8 --format json");
  test::Result dp =
      kappasim("kappa -m deepseek-v3 -s h100 --layout dp_attention=8,ep=8 --format json");
  ASSERT_EQ(tp.code, 0) << tp.err;
  ASSERT_EQ(dp.code, 0) << dp.err;
  EXPECT_DOUBLE_EQ(json_number(dp.out, "b_kv_gpu_share_bytes"), 8784);
  EXPECT_DOUBLE_EQ(json_number(dp.out, "kv_replication"), 1);
  EXPECT_NEAR(json_number(dp.out, "kappa_crit") / json_number(tp.out, "kappa_crit"), 8, 1e-9);
  EXPECT_TRUE(has(dp.out, "\"layout\": \"tp=1,dp_attention=8,ep=8\""));
  // Without --layout no layout column appears (today's output).
  EXPECT_FALSE(has(tp.out, "\"layout\""));
  // Two layouts: two rows.
  test::Result two = kappasim(
      "kappa -m qwen3-235b-a22b -s h100 --layout tp=8 --layout "
      "dp_attention=8,ep=8 --format csv");
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(std::count(two.out.begin(), two.out.end(), '\n'), 3);
}

TEST(ParallelismCli, BadLayoutsExitTwoNamingTheOption) {
  test::Result r = kappasim("kappa -m llama-3.1-70b -s h100 --layout dp_attention=8,ep=8");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--layout 'tp=1,dp_attention=8,ep=8'") && has(r.err, "needs a MoE model"))
      << r.err;
  EXPECT_TRUE(r.out.empty());
  r = kappasim("kappa -m deepseek-v3 -s h100 --layout tp=8,dp_attention=2");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "raise nodes to 2")) << r.err;
  r = kappasim("kappa -m deepseek-v3 -s h100 --tp 8 --layout tp=8");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--tp and --layout")) << r.err;
  r = kappasim("kappa -m deepseek-v3 -s h100 --layout 'tp=8,foo=2'");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "unknown layout key 'foo'")) << r.err;
}

}  // namespace
}  // namespace parallelism_test
}  // namespace kappasim
