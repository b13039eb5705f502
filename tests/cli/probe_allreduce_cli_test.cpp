// kappasim probe allreduce (issue 20): nccl-tests' algbw and busbw from the TP all-reduce model,
// against values computed here from the H100 preset's sourced numbers (NVLS: 25 us + S / 274.3
// GB/s; vLLM's custom kernel: 2 us launch + 2 x 1.5 us barriers + NVLink ingress / 370 GB/s),
// and bad input exiting 2 naming the flag.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace probe_allreduce_cli_test {
namespace {

using kappasim::test::Result;

std::filesystem::path scratch() {
  static const std::filesystem::path d = kappasim::test::fresh_dir("probe-allreduce");
  return d;
}

Result run(const std::string& args) {
  return kappasim::test::run_shell(KAPPASIM_BIN, args, scratch() / "stderr.txt");
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

constexpr auto field = kappasim::test::json_field;

TEST(ProbeAllReduce, NcclBusbwAtOneGibOnEightH100s) {
  const Result r = run("probe allreduce --system h100 --tp 8 --sizes \"1 GiB\" --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const double S = 1073741824, t = 25e-6 + S / 274.3e9;
  EXPECT_NEAR(field(r.out, "time_s"), t, 1e-12) << r.out;
  EXPECT_NEAR(field(r.out, "algbw_Bps"), S / t, 1e-3 * S / t) << r.out;
  EXPECT_NEAR(field(r.out, "busbw_Bps"), S / t * 14 / 8, 1e-3 * S / t) << r.out;
  EXPECT_TRUE(has(r.out, "\"algorithm\": \"nvls\"")) << r.out;
}

TEST(ProbeAllReduce, AVllmStackRunsItsCustomKernel) {
  const Result r =
      run("probe allreduce --system h100 --tp 8 --sizes \"128 KiB\" --stack lmcache-0.3.5 --format "
          "json");
  ASSERT_EQ(r.code, 0) << r.err;
  // One-shot below 256 KiB on 8 GPUs: each GPU reads 7 peers' 128 KiB.
  EXPECT_NEAR(field(r.out, "time_s"), 5e-6 + 7 * 131072 / 370e9, 1e-12) << r.out;
  EXPECT_TRUE(has(r.out, "\"library\": \"vllm_custom\"")) << r.out;
  EXPECT_TRUE(has(r.out, "\"algorithm\": \"one_shot\"")) << r.out;
}

TEST(ProbeAllReduce, BadInputExitsTwoNamingTheFlag) {
  Result r = run("probe allreduce --system h100 --tp 1");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--tp")) << r.err;
  r = run("probe allreduce --system h100 --tp 16");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "exceeds the 8 GPUs")) << r.err;
  r = run("probe allreduce --system h100 --sizes 0B");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--sizes")) << r.err;
  r = run("probe allreduce --tp 8");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--system: required")) << r.err;
  r = run("probe allreduce --system l40s --tp 2");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "nvlink_bandwidth")) << r.err;
  EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace probe_allreduce_cli_test
