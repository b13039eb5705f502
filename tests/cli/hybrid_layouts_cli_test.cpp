// Issue 25: serving.kv_cache: hybrid through `kappasim run` with the settings it was once refused
// with: a pipeline-parallel layout of a linear-attention model, partial recompute on a
// sliding-window model's pipeline stages, and sharded loads of replicated KV. Each exits 0 and
// serves every request (the bytes are worked by hand in tests/unit/hybrid_layout_test.cpp and
// tests/sim/replicated_kv_test.cpp).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace kappasim {
namespace hybrid_layouts_cli_test {
namespace {

using test::fresh_dir;
using test::run_shell;
using test::slurp;
using test::summary_value;

void serves(const std::string& name, const std::string& yaml, int requests) {
  const auto dir = fresh_dir(name);
  const std::string cfg = (dir / "run.yaml").string();
  std::ofstream(cfg) << yaml << "workload: {type: narrativeqa, requests: " << requests << "}\n";
  const auto r =
      run_shell(KAPPASIM_BIN, "run " + cfg + " --out " + (dir / "out").string(), dir / "e");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string s = slurp(dir / "out" / "summary.json");
  EXPECT_EQ(summary_value(s, "requests_completed"), requests) << s;
}

TEST(HybridLayoutsCli, Qwen3NextOnPipelineStagesWithDpAttention) {
  serves("hybrid-qwen3next-pp2",
         "model: qwen3-next-80b-a3b\nsystem: h100\ntrace: false\ncheck: true\n"
         "serving: {kv_cache: hybrid, warm_tier: true, tp: 2, parallelism: {pp: 2, dp_attention: "
         "2}}\n",
         12);
}

TEST(HybridLayoutsCli, GptOss120bPp4WithAutoRecompute) {
  serves("hybrid-gptoss-pp4-recompute",
         "model: gpt-oss-120b\nsystem: h100\ntrace: false\ncheck: true\n"
         "serving: {kv_cache: hybrid, warm_tier: true, parallelism: {tp: 1, pp: 4}, recompute: "
         "{mode: auto}}\n",
         12);
}

TEST(HybridLayoutsCli, Qwen3NextShardedReplicatedLoads) {
  serves("hybrid-qwen3next-shard",
         "model: qwen3-next-80b-a3b\nsystem: h100\ntrace: false\ncheck: true\n"
         "serving: {kv_cache: hybrid, warm_tier: true, tp: 4, replicated_kv: shard_allgather}\n",
         12);
}

}  // namespace
}  // namespace hybrid_layouts_cli_test
}  // namespace kappasim
