// serving.prefix_caching through `kappasim run` (issue 23): the prefix cache's column and figures
// appear only when it is on, a workload that repeats documents finds them in HBM, and a hybrid
// KV cache with it hits whole blocks (issue 25).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_util.hpp"

namespace kappasim {
namespace prefix_cache_cli_test {
namespace {

using test::fresh_dir;
using test::run_shell;
using test::slurp;
using test::summary_value;

std::string header(const std::string& csv) { return csv.substr(0, csv.find('\n')); }

std::vector<std::string> split_csv_line(const std::string& line) {  // no quoted cells here
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) out.push_back(cell);
  return out;
}

TEST(PrefixCacheCli, TheColumnAndFiguresAppearOnlyWithPrefixCachingAndRepeatedDocumentsHit) {
  // 40 questions over 2 documents of ~8k tokens on an 8B model: from the third request on, a
  // question finds its document's blocks in HBM (the pool holds both documents many times over).
  const auto dir = fresh_dir("prefix-cache");
  const std::string base =
      "model: llama-3.1-8b\nsystem: h100\ntrace: false\ncheck: true\n"
      "workload: {type: narrativeqa, requests: 40, rate: 2, seed: 1, "
      "narrativeqa: {documents: 2}}\n";
  const std::string on = (dir / "on.yaml").string(), off = (dir / "off.yaml").string();
  std::ofstream(on) << base << "serving: {tp: 1, store: none, prefix_caching: true}\n";
  std::ofstream(off) << base << "serving: {tp: 1, store: none}\n";
  const std::string bin = KAPPASIM_BIN;
  const auto a = run_shell(bin, "run " + on + " -q --out " + (dir / "a").string(), dir / "e1");
  const auto b = run_shell(bin, "run " + off + " -q --out " + (dir / "b").string(), dir / "e2");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(header(slurp(dir / "a" / "requests.csv")).find(",hbm_hit_tokens,"), std::string::npos);
  EXPECT_EQ(header(slurp(dir / "b" / "requests.csv")).find("hbm_hit"), std::string::npos);
  const std::string sa = slurp(dir / "a" / "summary.json"), sb = slurp(dir / "b" / "summary.json");
  EXPECT_EQ(sb.find("hbm_hit"), std::string::npos);
  // At most 2 first uses miss; the 38 others find their whole document (nothing left the pool):
  // well above half the prompt tokens.
  EXPECT_GT(summary_value(sa, "hbm_hit_fraction"), 0.5);
  EXPECT_EQ(summary_value(sa, "prefix_cache_evicted_blocks"), 0);
  // Computing less, the same requests finish sooner.
  EXPECT_LT(summary_value(sa, "ttft_mean_s"), summary_value(sb, "ttft_mean_s"));
}

// Issue 25: a linear-attention model with serving.kv_cache: hybrid and prefix caching is served
// (vLLM's "align" mode, serving/paged_kv): its prefix-cache hits end where a state is cached,
// on a block boundary, so every request's hbm_hit is a whole number of 16-token blocks.
TEST(PrefixCacheCli, HybridKvWithPrefixCachingHitsWholeBlocks) {
  const auto dir = fresh_dir("prefix-cache-hybrid");
  const std::string bin = KAPPASIM_BIN;
  const std::string cfg = (dir / "run.yaml").string();
  std::ofstream(cfg) << "model: qwen3-next-80b-a3b\nsystem: h100\ntrace: false\n"
                        "serving: {tp: 4, kv_cache: hybrid, prefix_caching: true}\n"
                        "workload: {type: narrativeqa, requests: 40}\n";
  const auto r = run_shell(bin, "run " + cfg + " --out " + (dir / "out").string(), dir / "e");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string s = slurp(dir / "out" / "summary.json");
  EXPECT_GT(summary_value(s, "hbm_hit_tokens_total"), 0);
  const std::string csv = slurp(dir / "out" / "requests.csv");
  const std::vector<std::string> cols = split_csv_line(csv.substr(0, csv.find('\n')));
  const auto col = std::find(cols.begin(), cols.end(), "hbm_hit_tokens");
  ASSERT_NE(col, cols.end());
  std::istringstream rows(csv.substr(csv.find('\n') + 1));
  std::string line;
  int n = 0;
  while (std::getline(rows, line)) {
    if (line.empty()) continue;
    const double hit =
        std::stod(split_csv_line(line).at(static_cast<std::size_t>(col - cols.begin())));
    EXPECT_EQ(std::fmod(hit, 16.0), 0.0) << line;
    ++n;
  }
  EXPECT_EQ(n, 40);
}

}  // namespace
}  // namespace prefix_cache_cli_test
}  // namespace kappasim
