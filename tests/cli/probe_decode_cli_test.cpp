// kappasim probe decode (issue 23 part 6): one decode step's time against bounds computed here
// from the model's published shapes and the GPU's datasheet, the batch economy of decode, and
// bad input exiting 2 naming the flag.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace probe_decode_cli_test {
namespace {

using kappasim::test::Result;

std::filesystem::path scratch() {
  static const std::filesystem::path d = kappasim::test::fresh_dir("probe-decode");
  return d;
}

Result run(const std::string& args) {
  return kappasim::test::run_shell(KAPPASIM_BIN, args, scratch() / "stderr.txt");
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

constexpr auto field = kappasim::test::json_field;

// H100 SXM5 HBM3: 3.35 TB/s (NVIDIA H100 datasheet).
constexpr double kH100Hbm = 3.35e12;
// Llama-3.1-8B: 8,030,261,248 parameters (model card "8.03B"; sum of the config.json shapes),
// of which the input embedding is 128,256 × 4,096 (a gather: a decode step reads one row of it)
// and the 65 RMSNorm vectors 65 × 4,096. BF16: 2 bytes each.
constexpr double kLlama8bParams = 8030261248.0;
constexpr double kLlama8bEmbedding = 128256.0 * 4096;
// KV per token: 32 layers × 8 KV heads × 128 dims × (K and V) × 2 bytes (BF16).
constexpr double kLlama8bKvPerToken = 32.0 * 8 * 128 * 2 * 2;

TEST(ProbeDecode, OneSequenceIsWeightReadBoundOnH100) {
  const Result r = run("probe decode --model llama-3.1-8b --system h100 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(field(r.out, "batch"), 1);
  EXPECT_EQ(field(r.out, "context"), 1024);  // the defaults
  const double step = field(r.out, "step_time_s");
  // The floor: all 8.03e9 BF16 parameters once at the HBM peak = 4.79 ms. A decode step cannot
  // beat it (the embedding row is all it skips, 6.5% of the bytes, and the HBM never runs at
  // peak). Above it: HBM at 0.92 of peak (×1.09), the 0.3 ms per-forward host cost and ~320
  // kernels at 2 µs each (≈ 0.65 ms) make ≈ 1.25×; no more than 1.4× is allowed.
  const double floor = kLlama8bParams * 2 / kH100Hbm;
  EXPECT_GE(step, floor) << r.out;
  EXPECT_LE(step, 1.4 * floor) << r.out;
  EXPECT_NEAR(field(r.out, "tokens_per_s"), 1 / step, 1e-9 / step);
  // The weights a decode step reads: everything but the embedding table and the norms.
  const double weights = (kLlama8bParams - kLlama8bEmbedding - 65 * 4096.0) * 2;
  EXPECT_NEAR(field(r.out, "weight_bytes"), weights, 1e-6 * weights) << r.out;
  EXPECT_NEAR(field(r.out, "weight_read_bound_s"), weights / kH100Hbm, 1e-6 * weights / kH100Hbm);
  // One sequence's KV: 1024 tokens × 128 KiB.
  EXPECT_NEAR(field(r.out, "kv_bytes"), 1024 * kLlama8bKvPerToken, 1.0) << r.out;
  EXPECT_GT(field(r.out, "hbm_bytes"), weights) << r.out;
  // FLOPs: ≈ 2 per active weight for one token (plus attention over 1024 tokens).
  EXPECT_GT(field(r.out, "flops"), 2 * (kLlama8bParams - kLlama8bEmbedding) * 0.99) << r.out;
  EXPECT_LT(field(r.out, "flops"), 2 * kLlama8bParams * 1.05) << r.out;
}

// Decode's batch economy: the weights are read once for every sequence of the step, so 32
// sequences give far more tokens per second than one while the step grows by their KV reads.
TEST(ProbeDecode, BatchingMultipliesTokensPerSecondNotStepTime) {
  const Result one = run("probe decode --model llama-3.1-8b --system h100 --format json");
  const Result many =
      run("probe decode --model llama-3.1-8b --system h100 --batch 32 --format json");
  ASSERT_EQ(one.code, 0) << one.err;
  ASSERT_EQ(many.code, 0) << many.err;
  const double s1 = field(one.out, "step_time_s"), s32 = field(many.out, "step_time_s");
  // By hand: 15.0 GB of weights + 32 × 1024 × 128 KiB = 4.3 GB of KV ⇒ the step reads ≈ 1.29×
  // the bytes of a one-sequence step; it can take no less than those bytes at the HBM peak.
  const double weights = (kLlama8bParams - kLlama8bEmbedding - 65 * 4096.0) * 2;
  EXPECT_GE(s32, (weights + 32 * 1024 * kLlama8bKvPerToken) / kH100Hbm) << many.out;
  EXPECT_GT(s32, s1);
  EXPECT_LT(s32, 2 * s1) << "32 sequences should cost far less than 32 steps";
  EXPECT_GT(field(many.out, "tokens_per_s"), 16 * field(one.out, "tokens_per_s"));
  EXPECT_NEAR(field(many.out, "kv_bytes"), 32 * 1024 * kLlama8bKvPerToken, 1.0);
}

// MoE: one token reads its top-8 experts of 128 per layer, not all of them. Qwen3-30B-A3B
// (config.json): 48 layers, hidden 2048, 32 q / 4 KV heads of 128, expert SwiGLU 768 wide,
// vocabulary 151,936 untied. Per layer: attention 2048×4096 + 2×2048×512 + 4096×2048, q/k norms
// 2×128, router 2048×128, 8 experts × 3×2048×768; plus the LM head 151,936×2048.
TEST(ProbeDecode, MoeReadsOnlyTheExpertsItsTokensTouch) {
  const Result r = run("probe decode --model qwen3-30b-a3b --system a100 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const double per_layer = 2048.0 * 4096 + 2 * 2048.0 * 512 + 4096.0 * 2048 + 2 * 128.0 +
                           2048.0 * 128 + 8 * 3 * 2048.0 * 768;
  const double weights = (48 * per_layer + 151936.0 * 2048) * 2;  // ≈ 6.1 GB, not 61 GB
  EXPECT_NEAR(field(r.out, "weight_bytes"), weights, 1e-6 * weights) << r.out;
}

TEST(ProbeDecode, BadInputExitsTwoNamingTheFlag) {
  const std::string base = "probe decode --model llama-3.1-8b --system h100 ";
  for (const char* bad : {"0", "-3", "1.5", "many", "2000000"}) {
    const Result r = run(base + "--batch " + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_TRUE(has(r.err, "--batch")) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  Result r = run(base + "--context -1");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--context")) << r.err;
  r = run(base + "--batches 4");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "batches")) << r.err;
  EXPECT_TRUE(has(r.err, "did you mean '--batch'")) << r.err;
  r = run(base + "--kv-dtype fp6");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--kv-dtype")) << r.err;
  r = run(base + "--tp 3");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--tp")) << r.err;
  r = run("probe decode --system h100");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--model: required")) << r.err;
}

TEST(ProbeDecode, ListedInProbeHelp) {
  const Result r = run("probe --help");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "decode")) << r.out;
  const Result h = run("probe decode --help");
  EXPECT_EQ(h.code, 0) << h.err;
  EXPECT_TRUE(has(h.out, "Not charged")) << h.out;
  EXPECT_TRUE(has(h.out, "serving.step_overhead")) << h.out;
}

}  // namespace
}  // namespace probe_decode_cli_test
