// The one serving engine on a dense model's DP-attention ranks (issue 21), through `kappasim
// run` (two simulations: one per process).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_util.hpp"

namespace kappasim {
namespace engine_layouts_cli_test {
namespace {

using test::csv_column;
using test::fresh_dir;
using test::run_shell;
using test::slurp;
using test::summary_value;

TEST(EngineLayoutsCli, ADenseModelsIdleDpRankRunsNoDummyBatches) {
  // vLLM runs a dense model's DP ranks as independent engine cores (lockstep with dummy
  // batches is for MoE only). Requests far apart all go to rank 0 (every rank idle: the
  // balancer's tie goes to the lowest index), so DP-2 serves them exactly as one TP-1 engine
  // would (same GPU, same host link): the same TTFTs and run length; rank 1 never computes, so
  // the GPUs' mean utilisation is half. The replica engine this replaced ran rank 1 in lockstep.
  const auto dir = fresh_dir("dense-dp");
  const std::string cfg = (dir / "run.yaml").string();
  {
    std::ofstream f(cfg);
    f << "model: llama-3.1-8b\nsystem: dgx-h100\nserving: {tp: 1}\ntrace: false\ncheck: true\n"
         "workload: {type: sharegpt, requests: 6, rate: 0.2, seed: 5}\n";
  }
  const std::string bin = KAPPASIM_BIN;
  const auto a = run_shell(bin, "run " + cfg + " -q --out " + (dir / "tp1").string(), dir / "e1");
  const auto b = run_shell(bin,
                           "run " + cfg + " -q --out " + (dir / "dp2").string() +
                               " --set serving.parallelism.dp_attention=2",
                           dir / "e2");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const auto t1 = csv_column(slurp(dir / "tp1" / "requests.csv"), "ttft_s");
  const auto t2 = csv_column(slurp(dir / "dp2" / "requests.csv"), "ttft_s");
  ASSERT_EQ(t1.size(), 6u);
  EXPECT_EQ(t2, t1);
  const std::string s1 = slurp(dir / "tp1" / "summary.json");
  const std::string s2 = slurp(dir / "dp2" / "summary.json");
  EXPECT_EQ(summary_value(s2, "gpus"), 2.0);
  EXPECT_EQ(summary_value(s2, "simulated_time_s"), summary_value(s1, "simulated_time_s"));
  const double u = summary_value(s1, "gpu_utilization");
  ASSERT_GT(u, 0.0);
  EXPECT_NEAR(summary_value(s2, "gpu_utilization"), u / 2, 1e-9 * u);
  EXPECT_EQ(summary_value(s2, "dp_dummy_rank_steps"), 0.0);
  // An unregistered DP router is bad input naming its key, with the nearest name; no folder.
  const auto bad = run_shell(bin,
                             "run " + cfg + " -q --out " + (dir / "bad").string() +
                                 " --set serving.parallelism.dp_attention=2"
                                 " --set serving.dp_router=dp_balanse",
                             dir / "e3");
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("serving.dp_router"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("dp_balance"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "bad"));
}

TEST(EngineLayoutsCli, CacheAwareDpRoutersKeepConversationsOnTheRankHoldingTheirHistory) {
  // Eight DP-attention ranks of a dense model, each with its own KV store (800 GB of DRAM tier
  // split eight ways: every conversation's history fits), serving ShareGPT-like chat with no
  // warm tier, so a turn finds its history only on the rank that served the turns before it.
  // vLLM's balancer routes by load alone, so a returning turn lands on that rank about once in
  // eight; the cache-aware routers (Dynamo's, llm-d's, SGLang's) send it back there, so their
  // hit rate is several times higher. The pooled rate lies between the ranks' lowest and highest.
  const auto dir = fresh_dir("dp-routers");
  const std::string cfg = (dir / "run.yaml").string();
  {
    std::ofstream f(cfg);
    f << "model: llama-3.1-8b\nsystem: dgx-h100\ntrace: false\ncheck: true\n"
         "serving: {tp: 1, tier_capacity: 800 GB, parallelism: {dp_attention: 8}}\n"
         "workload: {type: sharegpt, requests: 1500, rate: 40, seed: 3}\n";
  }
  const std::string bin = KAPPASIM_BIN;
  auto hit = [&](const std::string& router, const std::string& key) {
    const auto out = dir / router;
    const auto r = run_shell(
        bin, "run " + cfg + " -q --out " + out.string() + " --set serving.dp_router=" + router,
        dir / ("e-" + router));
    EXPECT_EQ(r.code, 0) << r.err;
    return summary_value(slurp(out / "summary.json"), key);
  };
  const double base = hit("dp_balance", "tier_hit_rate");
  ASSERT_GT(base, 0.0);
  for (const std::string router : {"kv_overlap", "prefix_scorer", "cache_aware"}) {
    const double rate = hit(router, "tier_hit_rate");
    EXPECT_GT(rate, 2 * base) << router;
    const std::string json = slurp(dir / router / "summary.json");
    EXPECT_LE(summary_value(json, "dp_rank_hit_rate_min"), rate) << router;
    EXPECT_GE(summary_value(json, "dp_rank_hit_rate_max"), rate) << router;
  }
}

}  // namespace
}  // namespace engine_layouts_cli_test
}  // namespace kappasim
