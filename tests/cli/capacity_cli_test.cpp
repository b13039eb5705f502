// `kappasim measure capacity` end to end (issue 26 item 19) on a tiny config (60 ShareGPT
// requests per probe, 2 replicates: a few seconds), the sweep's per-point warnings (item 21) and
// the bad inputs of docs/bad-inputs.md. The simulated capacity itself is not known in closed form
// (the search is tested on a closed-form oracle in tests/unit/capacity_test.cpp); here the
// checks are what the search guarantees independently of the simulator: the bracket lies on the
// log-bisection grid of the range and is within the tolerance, the SLO holds at its low end and
// fails at its high end, the 0.8 x capacity load is 0.8 x the mean, and the output does not
// depend on -j.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_util.hpp"

namespace capacity_cli_test {
namespace {
namespace fs = std::filesystem;
using kappasim::test::Result;
using kappasim::test::slurp;

const kappasim::test::CliScratch& cli() {
  static const kappasim::test::CliScratch s("capacity-cli");
  return s;
}
fs::path scratch() { return cli().dir(); }
Result run(const std::string& args) { return cli().run(args); }
std::string write(const std::string& name, const std::string& text) {
  return cli().write(name, text);
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string tiny() {
  return write("tiny.yaml",
               "model: llama-3.1-8b\nsystem: h100\nserving: {tp: 1, tier_capacity: 100 GB}\n"
               "workload: {type: sharegpt, requests: 60, rate: 10, seed: 1}\n");
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string f;
  while (std::getline(ss, f, ',')) out.push_back(f);
  return out;
}

// Range [1, 64] = 2^0..2^6: every probe is 2^(6 k / 2^j); tol 0.1: the bracket stops at
// hi / lo <= 1.1, i.e. after 6 / 2^j <= log2 1.1 = 0.1375, j = 6: width 6/64 = 0.09375 (a
// ratio of 1.0671).
TEST(CapacityCli, BracketOnTheLogGridSloAtItsEndsAndIndependentOfJobs) {
  const std::string cfg = tiny();
  const fs::path out = scratch() / "cap";
  const std::string args = "measure capacity " + cfg +
                           " --slo-ttft 1s --slo-percentile 0.99 --replicates 2 "
                           "--rate-range 1:64 --tol 0.1 --format json";
  Result a = run(args + " -j 1 --out " + out.string());
  ASSERT_EQ(a.code, 0) << a.err;
  Result b = run(args + " -j 2");
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);  // byte-identical whatever -j
  EXPECT_TRUE(has(a.out, "\"status\": \"found\"")) << a.out;
  EXPECT_TRUE(has(a.out, "\"slo\": {\"ttft_s\": 1, \"percentile\": 0.99, \"tpot\": null}"));
  ASSERT_TRUE(fs::exists(out / "capacity.json"));
  EXPECT_EQ(slurp(out / "capacity.json"), a.out);
  // probes.csv: round,replicate,seed,offered_rps,met,ttft_q_s,served_rps,...
  std::stringstream csv(slurp(out / "probes.csv"));
  std::string line;
  std::getline(csv, line);
  ASSERT_EQ(line.rfind("round,replicate,seed,offered_rps,met,ttft_q_s,served_rps", 0), 0u) << line;
  double lo[2] = {0, 0}, hi[2] = {1e9, 1e9};
  int n = 0, at = 0;
  std::vector<double> at_rates;
  while (std::getline(csv, line)) {
    const auto f = split(line);
    ASSERT_GE(f.size(), 7u);
    const int rep = std::stoi(f[1]);
    const double rate = std::stod(f[3]), q = std::stod(f[5]);
    const bool met = f[4] == "true";
    EXPECT_EQ(met, q <= 1.0) << line;  // met means TTFT p99 <= 1 s
    if (f[0] == "at_fraction") {
      ++at;
      at_rates.push_back(rate);
      continue;
    }
    ++n;
    // On the grid: log2(rate) * 64 / 6 is a whole number (9 significant digits in the literal).
    const double k = std::log2(rate) * 64 / 6;
    EXPECT_NEAR(k, std::round(k), 1e-6) << rate;
    if (met && rate > lo[rep]) lo[rep] = rate;
    if (!met && rate < hi[rep]) hi[rep] = rate;
  }
  EXPECT_EQ(at, 2);
  for (int r = 0; r < 2; ++r) {
    EXPECT_LT(lo[r], hi[r]);
    EXPECT_NEAR(hi[r] / lo[r], std::pow(2.0, 6.0 / 64), 1e-6) << r;  // the last bracket
  }
  // 2 ends + 6 bisections per replicate.
  EXPECT_EQ(n, 16);
  // The reported rate_met is each replicate's low end; at_fraction is 0.8 x the mean capacity.
  const std::string needle = "\"capacity_rps\": {\"n\": 2, \"mean\": ";
  const auto mean_at = a.out.find(needle);
  ASSERT_NE(mean_at, std::string::npos);
  const double mean = std::stod(a.out.substr(mean_at + needle.size()));
  ASSERT_EQ(at_rates.size(), 2u);
  EXPECT_NEAR(at_rates[0], 0.8 * mean, 1e-8 * mean);
}

TEST(CapacityCli, BadInputsAndNeverMet) {
  const std::string cfg = tiny();
  Result r = run("measure capacity " + cfg);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--slo-ttft is required")) << r.err;
  r = run("measure capacity " + cfg + " --slo-ttft 1s --replicates 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--replicates: expected 1 to 1000, got 0")) << r.err;
  r = run("measure capacity " + cfg + " --slo-ttft 1s --slo-tpot 50ms");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--slo-tpot: not supported")) << r.err;
  r = run("measure capacity " + cfg + " --slo-ttft 1s --slo-percentile 99");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--slo-percentile: expected a fraction in (0, 1]")) << r.err;
  r = run("measure capacity " + cfg + " --slo-ttft 1s --rate-range 5:1");
  EXPECT_EQ(r.code, 2);
  // Never met, even at LO (1 ms is below any prefill): a result that says so, exit 0.
  r = run("measure capacity " + cfg + " --slo-ttft 1ms --replicates 1 --rate-range 1:64");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "status: never_met: the SLO is not met even at the lowest offered load 1"))
      << r.out;
}

// issue 26 item 21: a run point whose DRAM tier overflows records the warning kappasim run
// prints, and the sweep's final output counts and names it. 20 NarrativeQA requests of
// Llama-3.1-8B re-read documents whose KV (about 170 GB) 20 GB cannot hold, so the warmed tier's
// documents are evicted and stored again; 1 TB holds them. (20 ShareGPT requests, used before,
// hold more than 1 GB but reuse nothing a small tier loses: no warning now.)
TEST(CapacityCli, SweepCountsAndNamesThePointsThatWarned) {
  const std::string spec = write("warn.yaml",
                                 "name: warn\nkind: run\n"
                                 "config:\n  model: llama-3.1-8b\n  system: h100\n"
                                 "  serving: {tp: 1, warm_tier: true}\n"
                                 "  workload: {type: narrativeqa, requests: 20, rate: 5}\n"
                                 "axes:\n  - key: serving.tier_capacity\n"
                                 "    values: [\"20 GB\", \"1 TB\"]\n");
  const fs::path out = scratch() / "warn";
  Result r = run("sweep " + spec + " --out " + out.string() + " -j 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "1 of 2 points warned")) << r.err;
  EXPECT_TRUE(has(r.err, "point 0 (p000000): the KV tier's working set")) << r.err;
  EXPECT_TRUE(has(slurp(out / "points/p000000/result.json"), "\"warnings\": [")) << r.err;
  EXPECT_FALSE(has(slurp(out / "points/p000001/result.json"), "warnings"));
  EXPECT_TRUE(has(slurp(out / "results.jsonl"), "\"warnings\": [\"the KV tier's working set"));
  // collect says it again.
  r = run("sweep collect " + out.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "1 of 2 points warned")) << r.err;
}

// The capacity sweep kind runs the same search as the command: with the point's seed set to the
// config's (an axis on workload.seed, docs/sweeps.md), its capacity_rps is the command's mean
// to the last digit (one replicate: the mean is that replicate's capacity).
TEST(CapacityCli, SweepKindAgreesWithTheCommand) {
  const std::string cfg = tiny();
  Result c = run("measure capacity " + cfg +
                 " --slo-ttft 1s --replicates 1 --rate-range 1:64 --tol 0.3 --format json -j 2");
  ASSERT_EQ(c.code, 0) << c.err;
  const std::string needle = "\"capacity_rps\": {\"n\": 1, \"mean\": ";
  const auto at = c.out.find(needle);
  ASSERT_NE(at, std::string::npos) << c.out;
  const std::size_t from = at + needle.size();
  const std::string mean = c.out.substr(from, c.out.find(',', from) - from);
  const std::string spec = write("capsweep.yaml",
                                 "name: capsweep\nkind: capacity\nconfig:\n"
                                 "  model: llama-3.1-8b\n  system: h100\n"
                                 "  serving: {tp: 1, tier_capacity: 100 GB}\n"
                                 "  workload: {type: sharegpt, requests: 60, rate: 10, seed: 1}\n"
                                 "  capacity: {slo_ttft: 1 s, replicates: 1, rate_lo: 1, "
                                 "rate_hi: 64, tol: 0.3, jobs: 2}\n"
                                 "axes:\n  - key: workload.seed\n    values: [1]\n");
  const fs::path out = scratch() / "capsweep";
  Result s = run("sweep " + spec + " --out " + out.string() + " -j 1");
  ASSERT_EQ(s.code, 0) << s.err;
  std::stringstream csv(slurp(out / "results.csv"));
  std::string head, row;
  std::getline(csv, head);
  std::getline(csv, row);
  const auto h = split(head), r = split(row);
  std::string got;
  for (std::size_t i = 0; i < h.size() && i < r.size(); ++i)
    if (h[i] == "capacity_rps") got = r[i];
  EXPECT_EQ(got, mean) << head << "\n" << row;
  EXPECT_TRUE(fs::exists(out / "points/p000000/files/probes/b0001/spec.yaml"));
}

// A capacity point's probes are processes of its own: the sweep's --preset-dir reaches them too
// (a system preset only in that folder was "unknown" to the probes).
TEST(CapacityCli, SweepPresetDirReachesTheCapacityProbes) {
  const fs::path pd = scratch() / "pd";
  fs::create_directories(pd / "systems");
  std::ofstream(pd / "systems" / "mycapsys.yaml") << "name: mycapsys\npreset: h100\n";
  const std::string spec = write("cappd.yaml",
                                 "name: cappd\nkind: capacity\nconfig:\n"
                                 "  model: llama-3.1-8b\n  system: mycapsys\n"
                                 "  serving: {tp: 1, tier_capacity: 100 GB}\n"
                                 "  workload: {type: sharegpt, requests: 40, rate: 10, seed: 1}\n"
                                 "  capacity: {slo_ttft: 1 s, replicates: 1, rate_lo: 1, "
                                 "rate_hi: 64, tol: 0.5}\n"
                                 "axes:\n  - key: workload.seed\n    values: [1]\n");
  const fs::path out = scratch() / "cappd";
  Result s = run("sweep " + spec + " --preset-dir " + pd.string() + " --out " + out.string());
  EXPECT_EQ(s.code, 0) << s.err;
  EXPECT_FALSE(has(slurp(out / "results.csv"), "unknown")) << slurp(out / "results.csv");
}

// issue 26 item 21: sensitivity names a base run (at any of its seeds) whose tier overflows
// (20 NarrativeQA requests' documents, warmed, thrash a 20 GB tier) instead of using it silently.
TEST(CapacityCli, SensitivitySaysWhenItsBaseWarned) {
  const std::string cfg = write("ov.yaml",
                                "model: llama-3.1-8b\nsystem: h100\n"
                                "serving: {tp: 1, warm_tier: true, tier_capacity: 20 GB}\n"
                                "workload: {type: narrativeqa, requests: 20, rate: 5, seed: 1}\n");
  Result r = run("sensitivity " + cfg +
                 " --metric ttft_mean_s --only serving.step_overhead --seeds 2 -j 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "warning: 2 base runs warned; the base: the KV tier's working set"))
      << r.out;
}

}  // namespace
}  // namespace capacity_cli_test
