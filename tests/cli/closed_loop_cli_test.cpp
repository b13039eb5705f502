// Closed-loop clients through `kappasim run` (workload.concurrency): the same config and seed give
// byte-identical outputs, the summary says the concurrency and no rate, and every meaningless
// combination exits 2 naming its key, writing nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace kappasim {
namespace closed_loop_cli_test {
namespace {

using test::fresh_dir;
using test::run_shell;
using test::slurp;
using test::summary_value;

// summary.json without its one host-dependent line (wall_time_s).
std::string without_wall_time(const std::string& json) {
  std::string out;
  std::size_t at = 0;
  while (at < json.size()) {
    const std::size_t end = json.find('\n', at);
    const std::string line = json.substr(at, end == std::string::npos ? end : end - at + 1);
    if (line.find("\"wall_time_s\"") == std::string::npos) out += line;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

TEST(ClosedLoopCli, SameInputsGiveIdenticalOutputsAndTheSummarySaysTheConcurrency) {
  const auto dir = fresh_dir("closed-loop");
  const std::string cfg = (dir / "run.yaml").string();
  std::ofstream(cfg) << "model: llama-3.1-8b\nsystem: h100\ntrace: false\ncheck: true\n"
                        "serving: {tp: 1, decode: true}\n"
                        "workload: {type: sharegpt, requests: 24, seed: 3, concurrency: 4, "
                        "think_time: 100 ms}\n";
  const std::string bin = KAPPASIM_BIN;
  const auto a = run_shell(bin, "run " + cfg + " --out " + (dir / "a").string(), dir / "e1");
  const auto b = run_shell(bin, "run " + cfg + " -q --out " + (dir / "b").string(), dir / "e2");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const std::string ra = slurp(dir / "a" / "requests.csv");
  EXPECT_FALSE(ra.empty());
  EXPECT_EQ(ra, slurp(dir / "b" / "requests.csv"));
  const std::string sa = slurp(dir / "a" / "summary.json");
  EXPECT_EQ(without_wall_time(sa), without_wall_time(slurp(dir / "b" / "summary.json")));
  EXPECT_EQ(summary_value(sa, "concurrency"), 4);
  EXPECT_EQ(summary_value(sa, "think_time_s"), 0.1);
  EXPECT_EQ(summary_value(sa, "requests_completed"), 24);
  EXPECT_NE(a.out.find("concurrency: 4"), std::string::npos) << a.out;
  // An open-loop run has neither figure.
  const std::string open = (dir / "open.yaml").string();
  std::ofstream(open) << "model: llama-3.1-8b\nsystem: h100\ntrace: false\nserving: {tp: 1}\n"
                         "workload: {type: sharegpt, requests: 4, rate: 2}\n";
  const auto c = run_shell(bin, "run " + open + " -q --out " + (dir / "c").string(), dir / "e3");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(summary_value(slurp(dir / "c" / "summary.json"), "concurrency"), -1);  // absent
}

TEST(ClosedLoopCli, MeaninglessCombinationsExitTwoNamingTheKey) {
  const auto dir = fresh_dir("closed-loop-bad");
  const std::string bin = KAPPASIM_BIN;
  std::ofstream(dir / "t.csv") << "arrival_s,prefix_tokens,new_tokens\n0,0,100\n";
  const std::string head = "model: llama-3.1-8b\nsystem: h100\ntrace: false\nserving: {tp: 1}\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{type: sharegpt, concurrency: 0}", "workload.concurrency"},
      {"{type: sharegpt, concurrency: -3}", "workload.concurrency"},
      {"{type: sharegpt, concurrency: 4, rate: 5}", "workload.rate"},
      {"{type: sharegpt, concurrency: 4, arrival: gamma}", "workload.arrival"},
      {"{type: sharegpt, concurrency: 4, cv: 2}", "workload.cv"},
      {"{type: sharegpt, concurrency: 4, think_time: -1 s}", "workload.think_time"},
      {"{type: sharegpt, think_time: 1 s}", "workload.think_time"},
      {"{type: trace, concurrency: 4, trace: {path: t.csv, format: csv}}", "workload.concurrency"},
  };
  int k = 0;
  for (const auto& [workload, key] : cases) {
    const std::string cfg = (dir / ("c" + std::to_string(k) + ".yaml")).string();
    std::ofstream(cfg) << head << "workload: " << workload << "\n";
    const auto out = dir / ("o" + std::to_string(k));
    const auto r =
        run_shell(bin, "run " + cfg + " -q --out " + out.string(), dir / ("e" + std::to_string(k)));
    EXPECT_EQ(r.code, 2) << workload << ": " << r.err;
    EXPECT_NE(r.err.find(key), std::string::npos) << workload << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << workload;
    ++k;
  }
  // --set on the command line conflicts the same way.
  const std::string cfg = (dir / "ok.yaml").string();
  std::ofstream(cfg) << head << "workload: {type: sharegpt, requests: 4, concurrency: 2}\n";
  const auto r =
      run_shell(bin, "run " + cfg + " -q --set workload.rate=3 --out " + (dir / "o-set").string(),
                dir / "es");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("workload.rate"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace closed_loop_cli_test
}  // namespace kappasim
