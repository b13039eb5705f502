// Replicated KV loaded once (issue 23 item 5; models/llm/parallelism, models/analytic/kappa,
// serving.replicated_kv; docs/parallelism.md "Replicated KV loaded once"). The copies r of a
// token's KV inside a TP group, the sharded load's bytes, the ring all-gather's time, the analytic
// κ with the option, and the config's errors. Values by hand from the models' config.json numbers
// (presets/models):
//   DeepSeek-V3: 61 layers, MLA latent 512 + rope 64 = 576 values per token per layer, BF16:
//     B_kv = 61 × 576 × 2 = 70,272 B, whole on every TP rank.
//   Qwen3-235B-A22B: 94 layers, 4 KV heads of 128, BF16: B_kv = 94 × 2 × 4 × 128 × 2 = 192,512 B;
//     at TP 8 one head per GPU (each on 2 GPUs): 94 × 2 × 128 × 2 = 48,128 B per GPU.
#include <gtest/gtest.h>

#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/analytic/kappa.hpp"
#include "models/llm/parallelism.hpp"
#include "serving/run_spec.hpp"
#include "systems/system_spec.hpp"
#include "tests/unit/preset_util.hpp"

namespace kappasim {
namespace replicated_kv_test {
namespace {

ModelSpec model(const std::string& name) { return test::model_preset(name); }
SystemSpec sys(const std::string& name) { return test::system_preset(name); }
using test::error_of;
using test::has;

TEST(ReplicatedKv, CopiesPerTpGroup) {
  // Qwen3: tp 8 over 4 KV heads: 8 × 48,128 / 192,512 = 2 copies; tp 4: one head each, 1 copy.
  const ModelSpec q = model("qwen3-235b-a22b");
  EXPECT_EQ(kv_replication_factor(q, DType::Bf16, 8), 2);
  EXPECT_EQ(kv_replication_factor(q, DType::Bf16, 4), 1);
  EXPECT_EQ(kv_replication_factor(q, DType::Bf16, 1), 1);
  // DeepSeek-V3: the latent on every TP rank: tp copies.
  const ModelSpec d = model("deepseek-v3");
  EXPECT_EQ(kv_replication_factor(d, DType::Bf16, 8), 8);
  EXPECT_EQ(kv_replication_factor(d, DType::Bf16, 1), 1);
  // Llama-3.1-8B (8 KV heads) at tp 8: nothing replicated.
  EXPECT_EQ(kv_replication_factor(model("llama-3.1-8b"), DType::Bf16, 8), 1);
}

TEST(ReplicatedKv, ShardBytesHalveForQwen3AndAreAnEighthForTheLatent) {
  // Qwen3 TP 8, a 10,000-token prefix: 481,280,000 B per GPU; sharded over r = 2: 240,640,000 B
  // over each host link, and the ring sends (2 − 1)/2 × 481,280,000 = 240,640,000 B over NVLink.
  const ShardedKvLoad q = shard_replicated_kv(10000 * 48128.0, 2);
  EXPECT_EQ(q.r, 2);
  EXPECT_DOUBLE_EQ(q.host_bytes, 240640000.0);
  EXPECT_DOUBLE_EQ(q.gather_bytes, 240640000.0);
  // DeepSeek-V3 TP 8: 702,720,000 B per GPU; 1/8 = 87,840,000 B over the host link, 7/8 =
  // 614,880,000 B over NVLink.
  const ShardedKvLoad d = shard_replicated_kv(10000 * 70272.0, 8);
  EXPECT_DOUBLE_EQ(d.host_bytes, 87840000.0);
  EXPECT_DOUBLE_EQ(d.gather_bytes, 614880000.0);
  // r = 1: everything over the host link, nothing to gather.
  const ShardedKvLoad one = shard_replicated_kv(1000.0, 1);
  EXPECT_DOUBLE_EQ(one.host_bytes, 1000.0);
  EXPECT_DOUBLE_EQ(one.gather_bytes, 0.0);
}

TEST(ReplicatedKv, RingAllGatherTime) {
  // DeepSeek-V3's 702,720,000 B over 8 GPUs on NVLink 4 (450 GB/s per direction, 2.8 µs per ring
  // step: presets/gpus/h100-sxm5.yaml): 7 × 2.8 µs + 614,880,000 / 450e9 = 19.6 µs + 1,366.4 µs
  // = 1,386.0 µs.
  EXPECT_NEAR(ring_allgather_s(702720000.0, 8, 450e9, 2.8e-6), 1386.0e-6, 1e-12);
  // Qwen3's 481,280,000 B over 2 GPUs: 2.8 µs + 240,640,000 / 450e9 = 2.8 + 534.7556 µs.
  EXPECT_NEAR(ring_allgather_s(481280000.0, 2, 450e9, 2.8e-6), 2.8e-6 + 240640000.0 / 450e9, 1e-15);
  EXPECT_DOUBLE_EQ(ring_allgather_s(1e9, 1, 450e9, 2.8e-6), 0.0);  // nothing replicated
}

TEST(ReplicatedKv, AnalyticKappaTakesHostBytesOverRPlusTheAllGather) {
  // h100 (DGX H100: PCIe 5 x16, BW = p.bandwidth; NVLink 450 GB/s). DeepSeek-V3 at layout tp=8:
  // each_rank loads 70,272 B per cached token per GPU; shard_allgather 8,784 B over the host link
  // and 61,488 B over NVLink, which take the host link's time of 61,488 × BW / 450e9 B
  // (≈ 8,608 B at 63.0 GB/s): the denominator 8,784 + 8,608 ≈ 17,392 B, κ_crit ≈ 4.04× each_rank.
  const SystemSpec s = sys("h100");
  const ModelSpec m = model("deepseek-v3");
  KappaQuery q;
  q.layout = parse_layout("tp=8", "test");
  const KappaPoint each = evaluate_kappa(m, s, q);
  q.shard_replicated_kv = true;
  const KappaPoint shard = evaluate_kappa(m, s, q);
  ASSERT_TRUE(shard.sharded_kv.has_value());
  const KappaShardedKv& k = *shard.sharded_kv;
  EXPECT_EQ(k.r, 8);
  EXPECT_DOUBLE_EQ(k.host_bytes, 8784.0);
  EXPECT_DOUBLE_EQ(k.gather_bytes, 61488.0);
  EXPECT_NEAR(k.gather_s, 61488.0 / 450e9, 1e-22);
  const double equiv = 8784.0 + 61488.0 / 450e9 * each.bandwidth;
  EXPECT_NEAR(shard.b_kv_share, equiv, 1e-9);
  EXPECT_NEAR(shard.kappa_crit / each.kappa_crit, 70272.0 / equiv, 1e-12);
  EXPECT_GT(shard.kappa_crit / each.kappa_crit, 4.0);  // ≈ 4.04 at 63 GB/s
  EXPECT_LT(shard.kappa_crit / each.kappa_crit, 4.1);
  // Qwen3 at tp=8: 24,064 B host + 24,064 B NVLink (≈ 3,369 B of host-link time): ≈ 1.75×.
  const ModelSpec qw = model("qwen3-235b-a22b");
  KappaQuery qq;
  qq.layout = parse_layout("tp=8", "test");
  const KappaPoint qe = evaluate_kappa(qw, s, qq);
  qq.shard_replicated_kv = true;
  const KappaPoint qs = evaluate_kappa(qw, s, qq);
  const double qeq = 24064.0 + 24064.0 / 450e9 * qe.bandwidth;
  EXPECT_EQ(qs.sharded_kv->r, 2);
  EXPECT_NEAR(qs.kappa_crit / qe.kappa_crit, 48128.0 / qeq, 1e-12);
  // DP-attention: nothing replicated, the option changes nothing.
  qq.layout = parse_layout("dp_attention=8,ep=8", "test");
  qq.shard_replicated_kv = false;
  const KappaPoint de = evaluate_kappa(qw, s, qq);
  qq.shard_replicated_kv = true;
  const KappaPoint ds = evaluate_kappa(qw, s, qq);
  EXPECT_EQ(ds.sharded_kv->r, 1);
  EXPECT_DOUBLE_EQ(ds.kappa_crit, de.kappa_crit);
}

const char* const kQwenTp8 =
    "model: qwen3-235b-a22b\nsystem: dgx-h100\ntrace: false\nworkload: {type: narrativeqa}\n";

TEST(ReplicatedKv, ConfigNamesAndDidYouMean) {
  const RunSpec ok = read_config<RunSpec>(
      parse_yaml(std::string(kQwenTp8) + "serving: {tp: 8, replicated_kv: shard_allgather}\n",
                 "run.yaml"),
      "");
  EXPECT_EQ(ok.serving.replicated_kv, ReplicatedKv::ShardAllgather);
  const RunSpec def = read_config<RunSpec>(
      parse_yaml(std::string(kQwenTp8) + "serving: {tp: 8}\n", "run.yaml"), "");
  EXPECT_EQ(def.serving.replicated_kv, ReplicatedKv::EachRank);
  const std::string e = error_of([] {
    read_config<RunSpec>(
        parse_yaml(std::string(kQwenTp8) + "serving: {tp: 8, replicated_kv: shard_allgathr}\n",
                   "run.yaml"),
        "");
  });
  EXPECT_TRUE(has(e, "replicated_kv")) << e;
  EXPECT_TRUE(has(e, "shard_allgather")) << e;
}

TEST(ReplicatedKv, NoNvlinkIsRefusedNamingTheKey) {
  // Qwen3-235B at tp 8 (KV heads on 2 GPUs each) on a PCIe-only GPU (L40S: no GPU-GPU link)
  // cannot all-gather: the error names serving.replicated_kv before the all-reduce check does.
  const std::string e = error_of([] {
    read_config<RunSpec>(
        parse_yaml("model: qwen3-235b-a22b\nsystem: l40s\ntrace: false\n"
                   "workload: {type: narrativeqa}\nserving: {tp: 8, replicated_kv: "
                   "shard_allgather}\n",
                   "run.yaml"),
        "");
  });
  EXPECT_TRUE(has(e, "serving.replicated_kv")) << e;
  EXPECT_TRUE(has(e, "NVLink")) << e;
  // The same at tp 1 (nothing replicated: no all-gather to refuse) reads.
  EXPECT_EQ(error_of([] {
              read_config<RunSpec>(
                  parse_yaml("model: llama-3.1-8b\nsystem: l40s\ntrace: false\n"
                             "workload: {type: narrativeqa}\nserving: {tp: 1, replicated_kv: "
                             "shard_allgather}\n",
                             "run.yaml"),
                  "");
            }),
            "");
}

}  // namespace
}  // namespace replicated_kv_test
}  // namespace kappasim
