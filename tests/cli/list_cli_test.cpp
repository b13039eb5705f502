// kappasim list [KIND] (issue 21): one command lists every registered kind with its config key
// and one-line docs, from the registries the binary links; an unknown kind, or an unknown name
// in a config, is exit 2 with the nearest name suggested and the key named.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_util.hpp"

namespace list_cli_test {
namespace {

using kappasim::test::fresh_dir;
using kappasim::test::run_shell;

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Rows as their whitespace-separated first three fields (kind, key, name).
std::vector<std::vector<std::string>> rows_of(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::vector<std::string> r(3);
    f >> r[0] >> r[1] >> r[2];
    rows.push_back(r);
  }
  return rows;
}
bool has_row(const std::vector<std::vector<std::string>>& rows, const std::string& kind,
             const std::string& key, const std::string& name) {
  for (const auto& r : rows)
    if (r[0] == kind && r[1] == key && r[2] == name) return true;
  return false;
}

TEST(ListCli, NamesEveryKindWithItsKeyAndEveryBuiltInName) {
  const auto dir = fresh_dir("list");
  const auto r = run_shell(KAPPASIM_BIN, "list", dir / "err.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = rows_of(r.out);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0], (std::vector<std::string>{"kind", "key", "name"}));
  // Issue 21's six kinds, each with names this binary must link (a registration the linker
  // dropped would be missing).
  for (const char* n : {"fifo", "utilization", "fair", "shortest_load"})
    EXPECT_TRUE(has_row(rows, "policy", "serving.policy", n)) << n << "\n" << r.out;
  for (const char* n : {"round_robin", "least_loaded", "kappa_aware"})
    EXPECT_TRUE(has_row(rows, "router", "cluster.router", n)) << n;
  for (const char* n : {"kernel", "layerwise", "block_dma"})
    EXPECT_TRUE(has_row(rows, "load-path", "serving.load_path", n)) << n;
  for (const char* n : {"flow", "packet"})
    EXPECT_TRUE(has_row(rows, "link-backend", "serving.link_fidelity", n)) << n;
  for (const char* n : {"run", "cluster", "isolated", "kappa-crit", "kappa", "design", "selftest"})
    EXPECT_TRUE(has_row(rows, "sweep-kind", "kind", n)) << n;
  for (const char* n : {"lmcache-0.3.5", "vllm-native-0.12", "ideal"})
    EXPECT_TRUE(has_row(rows, "stack", "serving.stack", n)) << n;
  // Every row has a summary after its name.
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string a, b, c, rest;
    f >> a >> b >> c;
    std::getline(f, rest);
    EXPECT_NE(rest.find_first_not_of(' '), std::string::npos) << line;
  }
  // One kind.
  const auto lp = run_shell(KAPPASIM_BIN, "list load-path", dir / "err.txt");
  ASSERT_EQ(lp.code, 0) << lp.err;
  EXPECT_EQ(rows_of(lp.out).size(), 4u) << lp.out;  // header + kernel, layerwise, block_dma
}

TEST(ListCli, UnknownKindOrNameIsExitTwoWithTheNearestAndTheKey) {
  const auto dir = fresh_dir("list-bad");
  const auto k = run_shell(KAPPASIM_BIN, "list load-paths", dir / "err.txt");
  EXPECT_EQ(k.code, 2);
  EXPECT_TRUE(has(k.err, "unknown kind 'load-paths'; did you mean 'load-path'?")) << k.err;
  const std::string cfg =
      std::string(KAPPASIM_SOURCE_DIR) + "/experiments/paper/narrativeqa-70rps.yaml";
  const auto lp =
      run_shell(KAPPASIM_BIN, "run " + cfg + " --dump-config --set serving.load_path=kernal",
                dir / "err.txt");
  EXPECT_EQ(lp.code, 2);
  EXPECT_TRUE(has(lp.err, "serving.load_path")) << lp.err;
  EXPECT_TRUE(has(lp.err, "did you mean \"kernel\"")) << lp.err;
  const auto lf =
      run_shell(KAPPASIM_BIN, "run " + cfg + " --dump-config --set serving.link_fidelity=packets",
                dir / "err.txt");
  EXPECT_EQ(lf.code, 2);
  EXPECT_TRUE(has(lf.err, "serving.link_fidelity")) << lf.err;
  EXPECT_TRUE(has(lf.err, "did you mean \"packet\"")) << lf.err;
}

}  // namespace
}  // namespace list_cli_test
