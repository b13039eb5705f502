// kappasim measure break-even (issue 20 part 3): a fixed per-request cost shifts the hit's TTFT
// by exactly that cost, and the break-even prefix it causes lies where the roofline, worked out
// here from the model's shapes and the H100's datasheet, says it must; bad input exits 2.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace break_even_cli_test {
namespace {

using kappasim::test::Result;

const kappasim::test::CliScratch& scratch() {
  static const kappasim::test::CliScratch s("break-even");
  return s;
}

constexpr auto field = kappasim::test::json_field;

// Llama-3.1-8B on one H100 with the `ideal` stack (no software cost) and 16-token tier chunks.
const std::string kBase =
    "measure break-even --model llama-3.1-8b --system h100 --tp 1 --stack ideal "
    "--set serving.chunk_tokens=16 --t 16";

// Llama-3.1-8B: 8,030,261,248 parameters, of which the embedding and the LM head are
// 128,256 × 4,096 each: a prefill token's marginal GEMM work is 2 × (8.03e9 − 2 × 5.25e8)
// = 1.396e10 FLOP. H100 SXM dense BF16: 989 TFLOP/s (datasheet), HBM3 3.35 TB/s.
constexpr double kParams = 8030261248.0;
constexpr double kEmbedding = 128256.0 * 4096;
constexpr double kTokenFlops = 2 * (kParams - 2 * kEmbedding);
constexpr double kPeak = 989e12;

TEST(BreakEvenCli, AFixedRetrieveCostMovesTheHitByItselfAndTheBreakEvenWhereTheRooflineSays) {
  const Result r0 = scratch().run(kBase + " --points 24 --format json");
  ASSERT_EQ(r0.code, 0) << r0.err;
  const Result r =
      scratch().run(kBase + " --points 24 --format json --set serving.stack.retrieve_fixed=10ms");
  ASSERT_EQ(r.code, 0) << r.err;
  // The retrieve's fixed cost is paid once by the hit, in series: its TTFT moves by 10 ms
  // exactly; the miss loads nothing and does not move.
  EXPECT_NEAR(field(r.out, "ttft_hit_at_k_min_s") - field(r0.out, "ttft_hit_at_k_min_s"), 0.010,
              1e-9);
  EXPECT_NEAR(field(r.out, "ttft_miss_at_k_min_s"), field(r0.out, "ttft_miss_at_k_min_s"), 1e-12);
  EXPECT_EQ(field(r.out, "k_min"), 16);
  // Without it the ideal stack's hit is no slower from the first 16-token block: loading a block
  // costs less than computing it.
  EXPECT_EQ(field(r0.out, "break_even_from_start"), 1) << r0.out;
  // With it, the break-even K* is where recomputing K* more tokens costs the 10 ms (the step
  // overhead and the front end are in both TTFTs). The marginal cost of a token is at most the
  // GEMMs at 0.78 of peak with 20% more for attention and elementwise kernels, 21.7 us, so
  // K* >= 10 ms / 21.7 us = 461. It is at least the GEMMs at the peak, 14.1 us, once the miss
  // is past the weight-read floor, while the hit pays at most the 16-token step (its 16 GB of
  // weights at 3.35 TB/s × 0.92 = 5.2 ms + 1.3 ms of launches and per-forward work) and its
  // load unhidden (128 KiB a token at >= 40 GB/s, 3.3 us): (K + 16) × 14.1 us >= 10 ms +
  // 6.5 ms + 3.3 us × K gives K* <= 1,507.
  const double c_hi = kTokenFlops / (0.78 * kPeak) * 1.2, c_lo = kTokenFlops / kPeak;
  const double lo = 0.010 / c_hi, hi = (0.010 + 0.0065 - 16 * c_lo) / (c_lo - 3.3e-6);
  const double k = field(r.out, "break_even_k_simulated");
  EXPECT_EQ(field(r.out, "break_even_from_start"), 0) << r.out;
  EXPECT_EQ(field(r.out, "break_even_never"), 0) << r.out;
  EXPECT_GE(k, lo) << r.out;
  EXPECT_LE(k, hi) << r.out;
  // The analytic model has no per-request software: its break-even does not move.
  EXPECT_EQ(field(r.out, "break_even_analytic_from_start"), 1) << r.out;
}

TEST(BreakEvenCli, TheCurveGivesBothTtftsAtEveryK) {
  const Result r = scratch().run(kBase + " --points 5 --curve --format csv");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto k = kappasim::test::csv_column(r.out, "k");
  const auto hit = kappasim::test::csv_column(r.out, "ttft_hit_s");
  const auto miss = kappasim::test::csv_column(r.out, "ttft_miss_s");
  ASSERT_EQ(k.size(), 5u) << r.out;
  ASSERT_EQ(hit.size(), 5u);
  EXPECT_EQ(k.front(), "16");
  for (std::size_t i = 1; i < k.size(); ++i) {
    EXPECT_GT(std::stod(k[i]), std::stod(k[i - 1]));
    EXPECT_EQ(std::fmod(std::stod(k[i]), 16.0), 0.0) << k[i];  // whole 16-token chunks
    // A miss computes every token: the longer prompt never gets faster.
    EXPECT_GE(std::stod(miss[i]), std::stod(miss[i - 1]));
  }
}

// The sweep kind `break-even` takes the command's defaults when `measure:` leaves T out: T = 16
// (vLLM computes at least the prompt's last block), not the isolated kind's 128; so a point and
// the command with the same grid give the same break-even.
TEST(BreakEvenCli, TheSweepKindDefaultsToTheCommandsT) {
  const std::string cfg =
      scratch().write("be-point.yaml",
                      "model: llama-3.1-8b\nsystem: h100\nserving: {tp: 1, chunk_tokens: 16,\n"
                      "  stack: {preset: ideal, retrieve_fixed: 10 ms}}\nmeasure: {points: 6}\n");
  const std::string out = (scratch().dir() / "be-point").string();
  const Result p =
      scratch().run("sweep point --kind break-even --seed 1 --config " + cfg + " --out " + out);
  ASSERT_EQ(p.code, 0) << p.err;
  const std::string result = kappasim::test::slurp(out + "/result.json");
  EXPECT_EQ(field(result, "t"), 16) << result;
  const Result c = scratch().run(
      "measure break-even --model llama-3.1-8b --system h100 --tp 1 --stack ideal "
      "--set serving.chunk_tokens=16 --set serving.stack.retrieve_fixed=10ms "
      "--points 6 --format json");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(field(result, "break_even_k_simulated"), field(c.out, "break_even_k_simulated"))
      << result << c.out;
}

TEST(BreakEvenCli, BadInputExitsTwoNamingTheOption) {
  Result r = scratch().run(kBase + " --points 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--points"), std::string::npos) << r.err;
  r = scratch().run(kBase + " --t 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--t"), std::string::npos) << r.err;
  r = scratch().run(
      "measure break-even --model llama-3.1-8b --system h100 --tp 1 --t 100000000 --format json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no room for a cached prefix"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace break_even_cli_test
