// Issue 25 on the command line: a PCIe-only system named with --system and a TP query exits 2
// naming system.gpu.nvlink_bandwidth; with every built-in system (no --system) the PCIe-only
// ones are skipped with a note on stderr; a model name between two presets names both.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace kappasim {
namespace generations_cli_test {
namespace {

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

TEST(GenerationsCli, KappaNoLinkNamedRefusedImplicitSkipped) {
  const auto dir = test::fresh_dir("generations");
  auto kappasim = [&](const std::string& args) {
    return test::run_shell(KAPPASIM_BIN, args, dir / "stderr.txt");
  };
  // Named with -s: exit 2 naming the key, nothing on stdout.
  const test::Result named = kappasim("kappa -m llama-3.1-70b -s l40s --tp 2");
  EXPECT_EQ(named.code, 2);
  EXPECT_TRUE(has(named.err, "system.gpu.nvlink_bandwidth: tp 2 needs a GPU-GPU link"))
      << named.err;
  EXPECT_EQ(named.out, "");
  // Every built-in system (no -s): the PCIe-only ones are left out with a note, the rest run.
  const test::Result all = kappasim("kappa -m llama-3.1-70b --tp 8 --format csv");
  EXPECT_EQ(all.code, 0) << all.err;
  EXPECT_TRUE(has(all.err, "'l40s', 'rtx-pro-6000', 'rubin-cpx'")) << all.err;
  EXPECT_FALSE(has(all.out, ",l40s,")) << "a skipped system has no row";
  EXPECT_TRUE(has(all.out, ",h20,")) << "a system with NVLink keeps its row";
  // At TP 1 nothing is skipped and no note is written.
  const test::Result tp1 = kappasim("kappa -m llama-3.1-70b --format csv");
  EXPECT_EQ(tp1.code, 0);
  EXPECT_TRUE(has(tp1.out, ",l40s,"));
  EXPECT_FALSE(has(tp1.err, "skipped"));
  // A model name between two presets names both.
  const test::Result typo = kappasim("kappa -m llama-3.1-7b -s h100");
  EXPECT_EQ(typo.code, 2);
  EXPECT_TRUE(has(typo.err, "did you mean 'llama-3.1-70b' or 'llama-3.1-8b'?")) << typo.err;
}

// Issue 25's new inputs on the command line: an FP4 KV dtype on a GPU that cannot write FP4 and
// a linear-attention model given to the serving engine each exit 2 naming the key, with nothing
// on stdout and no output folder; a sliding-window model runs.
TEST(GenerationsCli, Fp4KvAndLinearAttentionRefusedSlidingWindowServed) {
  const test::CliScratch s("generations-bad");
  const test::Result kv = s.run("kappa -m llama-3.1-8b -s h100 --kv-dtype nvfp4");
  EXPECT_EQ(kv.code, 2);
  EXPECT_TRUE(has(kv.err, "kv_dtype: nvfp4 KV needs a GPU that writes FP4")) << kv.err;
  EXPECT_EQ(kv.out, "");
  const std::string fp4 =
      s.write("fp4.yaml",
              "model: llama-3.1-8b\nsystem: h100\ntrace: false\nserving: {tp: 1, kv_dtype: mxfp4}\n"
              "workload: {type: sharegpt, requests: 4, rate: 2}\n");
  const test::Result run_fp4 = s.run("run " + fp4 + " -q --out " + (s.dir() / "o1").string());
  EXPECT_EQ(run_fp4.code, 2);
  EXPECT_TRUE(has(run_fp4.err, "serving.kv_dtype: mxfp4 KV needs")) << run_fp4.err;
  EXPECT_FALSE(std::filesystem::exists(s.dir() / "o1"));
  const std::string linear =
      s.write("linear.yaml",
              "model: qwen3-next-80b-a3b\nsystem: h100\ntrace: false\nserving: {tp: 8}\n"
              "workload: {type: sharegpt, requests: 4, rate: 2}\n");
  const test::Result run_linear = s.run("run " + linear + " -q --out " + (s.dir() / "o2").string());
  EXPECT_EQ(run_linear.code, 2);
  EXPECT_TRUE(has(run_linear.err,
                  "model.layer_pattern: model 'qwen3-next-80b-a3b' has 36 "
                  "linear-attention layers"))
      << run_linear.err;
  EXPECT_FALSE(std::filesystem::exists(s.dir() / "o2"));
  const std::string sliding =
      s.write("sliding.yaml",
              "model: gpt-oss-20b\nsystem: h100\ntrace: false\nserving: {tp: 1}\n"
              "workload: {type: sharegpt, requests: 4, rate: 2}\n");
  const test::Result run_sliding =
      s.run("run " + sliding + " -q --out " + (s.dir() / "o3").string());
  EXPECT_EQ(run_sliding.code, 0) << run_sliding.err;
  EXPECT_TRUE(std::filesystem::exists(s.dir() / "o3" / "summary.json"));
}

// Issue 25 item 2 on the command line: Llama 4 (chunked local attention) is served on the
// unified cache; DeepSeek-V3.2-Exp's sparse attention is refused naming
// model.attention.index_topk; Maverick's interleaved MoE is refused under a layout beyond tensor
// parallelism naming model.mlp.moe_layer_step. Each refusal exits 2 with no output folder.
TEST(GenerationsCli, Llama4ServedSparseAttentionAndInterleavedLayoutRefused) {
  const test::CliScratch s("generations-variants");
  const std::string scout =
      s.write("scout.yaml",
              "model: llama-4-scout\nsystem: h100\ntrace: false\nserving: {tp: 4}\n"
              "workload: {type: sharegpt, requests: 4, rate: 2}\n");
  const test::Result run_scout = s.run("run " + scout + " -q --out " + (s.dir() / "o1").string());
  EXPECT_EQ(run_scout.code, 0) << run_scout.err;
  EXPECT_TRUE(std::filesystem::exists(s.dir() / "o1" / "summary.json"));
  const std::string dsa =
      s.write("dsa.yaml",
              "model: deepseek-v3.2-exp\nsystem: h100\ntrace: false\nserving: {tp: 8}\n"
              "workload: {type: sharegpt, requests: 4, rate: 2}\n");
  const test::Result run_dsa = s.run("run " + dsa + " -q --out " + (s.dir() / "o2").string());
  EXPECT_EQ(run_dsa.code, 2);
  EXPECT_TRUE(has(run_dsa.err, "model.attention.index_topk: model 'deepseek-v3.2-exp'"))
      << run_dsa.err;
  EXPECT_FALSE(std::filesystem::exists(s.dir() / "o2"));
  const std::string mav =
      s.write("mav.yaml",
              "model: llama-4-maverick\nsystem: h100\ntrace: false\n"
              "serving: {tp: 4, compute_dtype: fp8, parallelism: {ep: 8, dp_attention: 2}}\n"
              "workload: {type: sharegpt, requests: 4, rate: 2}\n");
  const test::Result run_mav = s.run("run " + mav + " -q --out " + (s.dir() / "o3").string());
  EXPECT_EQ(run_mav.code, 2);
  EXPECT_TRUE(has(run_mav.err, "model.mlp.moe_layer_step: model 'llama-4-maverick'"))
      << run_mav.err;
  EXPECT_FALSE(std::filesystem::exists(s.dir() / "o3"));
  // kappa at K: Scout's B_kv(100,000) = 5,165,285,376 / 100,000 B (docs/accounting.md).
  const test::Result k = s.run("kappa -m llama-4-scout -s h100 --context 100000 --format csv");
  EXPECT_EQ(k.code, 0) << k.err;
  EXPECT_TRUE(has(k.out, "51652.85376")) << k.out;
}

}  // namespace
}  // namespace generations_cli_test
}  // namespace kappasim
