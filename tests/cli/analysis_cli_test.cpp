// End-to-end tests of `kappasim solve`, `sensitivity` and `calibrate` (docs/analysis.md) on the
// analytic model, where every expectation is Eq. 6 worked by hand:
//   Llama-3.1-70B: N = 70,553,706,496, F_pf = 2N, B_kv = 2·80·8·128·2 = 327,680 B/token, so
//   F_pf / B_kv = 430,625.65; H100 PCIe 5.0 x16: B = 32e9·16·(128/130)/8 = 63.0154 GB/s;
//   κ_crit = 430,625.65 · B / C.
// And the bad inputs of docs/bad-inputs.md: exit code 2, a message naming the option or key, and
// no output folder.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <cmath>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace analysis_cli_test {
namespace {
namespace fs = std::filesystem;
using kappasim::test::Result;
using kappasim::test::slurp;

const kappasim::test::CliScratch& cli() {
  static const kappasim::test::CliScratch s("analysis-cli");
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

double json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::stod(json.substr(at + key.size() + 4));
}

const double kFpfOverBkv = 2 * 70553706496.0 / 327680;  // 430,625.65
const double kGen5 = 32e9 * 16 * 128 / 130 / 8;         // 63.0154 GB/s

std::string case_config() { return write("l70.yaml", "model: llama-3.1-70b\nsystem: h100\n"); }

// κ_crit >= 10 on C = 989 TFLOP/s needs B = 10 · 989e12 / 430,625.65 = 22.9666 GB/s, i.e. a
// lane rate of B · 8 · 130 / (16 · 128) = 11.6627 GT/s.
TEST(AnalysisCli, SolveFindsTheEq6LaneRate) {
  const fs::path out = scratch() / "solve";
  Result r =
      run("solve " + case_config() +
          " --analytic --vary system.host_link.rate_per_lane "
          "--range '4 GT/s:64 GT/s' --target 'kappa_crit >= 10' --tol 1e-7 --format json --out " +
          out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const double rate = 10 * 989e12 / kFpfOverBkv * 8 * 130 / (16 * 128);
  EXPECT_NEAR(json_number(r.out, "value_si"), rate, 1e-5 * rate) << r.out;
  EXPECT_GE(json_number(r.out, "metric_at_value"), 10);
  EXPECT_TRUE(has(r.out, "\"method\": \"bisection\""));
  EXPECT_TRUE(fs::exists(out / "solve.json"));
  EXPECT_TRUE(fs::exists(out / "probes.csv"));
}

// Issue 22 item 7: an analytic answer is checked on the simulator at the same value. The median
// NarrativeQA request (K 45,940, T 9.2) of Llama-3.1-70B on 8 H100s: analytically P_OH <= 1 needs
// B >= K/T · B_kv · C / F_pf ≈ 11.5 TB/s per GPU. On the simulator the load cannot beat the host:
// DGX H100's DDR5 feeds 4 GPUs per socket (≈ 56 GB/s each), so loading 45,940 × 327,680 / 8 B
// takes >= 33 ms per GPU, while the 9-token step is bound by reading 141 GB / 8 of weights at
// 3.35 TB/s (≈ 5 ms) plus its fixed costs: P_OH stays well above 1, and the output says so.
TEST(AnalysisCli, SolveChecksAnAnalyticAnswerOnTheSimulator) {
  const std::string cfg = write("nq-median.yaml",
                                "model: llama-3.1-70b\nsystem: h100\nserving: {tp: 8}\n"
                                "K: 45940\nT: 9.2\n");
  Result r = run("solve " + cfg +
                 " --analytic --log --vary system.host_link.rate_per_lane "
                 "--range '1 GT/s:100000 GT/s' --target 'p_oh <= 1'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "On the simulator (one isolated request")) << r.out;
  EXPECT_TRUE(has(r.out, "the target is not met there. Why: the simulated load moves")) << r.out;
  Result j = run("solve " + cfg +
                 " --analytic --log --vary system.host_link.rate_per_lane "
                 "--range '1 GT/s:100000 GT/s' --target 'p_oh <= 1' --format json");
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_TRUE(has(j.out, "\"simulated_check\": {\"kind\": \"isolated\"")) << j.out;
  EXPECT_TRUE(has(j.out, "\"target_met\": false")) << j.out;
  EXPECT_GT(json_number(j.out, "metric"), 2);  // the simulated P_OH at the analytic answer
}

// The tornado on a case where one parameter dominates: only peak_flops.bf16 enters κ_crit among
// the tagged ones (the copy overheads and efficiencies do not enter Eq. 6). Its declared range
// 500-1000 TFLOP/s swings κ_crit by 430,625.65 · B · (1/500e12 - 1/1000e12) = 27.136.
TEST(AnalysisCli, SensitivityRanksTheDominantParameterFirst) {
  const std::string cfg = write("sens.yaml",
                                "model: llama-3.1-70b\n"
                                "system:\n"
                                "  preset: h100\n"
                                "  gpu:\n"
                                "    preset: h100-sxm5\n"
                                "    peak_flops:\n"
                                "      bf16: {value: 989 TFLOP/s, derived: \"test\", low: 500 "
                                "TFLOP/s, high: 1000 TFLOP/s}\n");
  const fs::path out = scratch() / "sens";
  Result r = run("sensitivity " + cfg + " --analytic --metric kappa_crit --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = slurp(out / "tornado.csv");
  ASSERT_TRUE(has(csv, "\n1,system.gpu.peak_flops.bf16,derived,declared,")) << csv;
  const auto line = csv.substr(csv.find("\n1,") + 1);
  // swing is the 11th column.
  std::size_t at = 0;
  for (int i = 0; i < 10; ++i) at = line.find(',', at) + 1;
  EXPECT_NEAR(std::stod(line.substr(at)), kFpfOverBkv * kGen5 * (1 / 500e12 - 1 / 1000e12), 1e-9);
  EXPECT_TRUE(fs::exists(out / "tornado.gp"));
  EXPECT_TRUE(has(r.out, "default ±50%"));  // the rule for the undeclared ones is stated
}

// Synthetic measurement: κ_crit of Llama-3.1-70B on an H100 whose BF16 peak were 800 TFLOP/s,
// 430,625.65 · 63.0154e9 / 800e12 = 33.9200512. Calibrating the peak from a 1000 TFLOP/s start
// recovers 800 TFLOP/s.
TEST(AnalysisCli, CalibrateRecoversAKnownParameter) {
  const std::string f = write("cal.yaml",
                              "name: synthetic\n"
                              "overlay: {system: h100, name: h100-fitted}\n"
                              "parameters:\n"
                              "  - {key: system.gpu.peak_flops.bf16, lo: 400 TFLOP/s, hi: 1600 "
                              "TFLOP/s, start: 1000 TFLOP/s}\n"
                              "measurements:\n"
                              "  - id: kappa\n"
                              "    command: [kappa, -m, llama-3.1-70b, -s, h100, --format, json]\n"
                              "    value: /0/kappa_crit\n"
                              "    measured: 33.9200512\n"
                              "    uncertainty: 0.01\n");
  const fs::path out = scratch() / "cal";
  Result r = run("calibrate " + f + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string json = slurp(out / "fit.json");
  EXPECT_NEAR(json_number(json, "value_si"), 800e12, 0.001 * 800e12) << json;
  // The overlay is a system preset that the other commands accept.
  ASSERT_TRUE(fs::exists(out / "presets/systems/h100-fitted.yaml"));
  Result k = run("kappa -m llama-3.1-70b -s h100-fitted --preset-dir " +
                 (out / "presets").string() + " --format json");
  ASSERT_EQ(k.code, 0) << k.err;
  EXPECT_NEAR(json_number(k.out, "kappa_crit"), 33.9200512, 0.001 * 33.92);
}

// A measurement's command runs as a child kappasim (a fork of the calibrating process, or the
// executable started afresh: analysis/evaluate.hpp): a child that exits 2 is the calibration's
// input error, naming the measurement, the command line and the child's own message; a child
// whose output is not JSON is one too.
TEST(AnalysisCli, CalibrateReportsAFailingMeasurementCommand) {
  const std::string head =
      "name: synthetic\n"
      "parameters:\n"
      "  - {key: system.gpu.peak_flops.bf16, lo: 400 TFLOP/s, hi: 1600 TFLOP/s, start: 1000 "
      "TFLOP/s}\n"
      "measurements:\n"
      "  - id: kappa\n";
  const std::string tail = "    value: /0/kappa_crit\n    measured: 33.9\n    uncertainty: 0.01\n";
  const std::string bad_model =
      write("cal-bad-model.yaml",
            head + "    command: [kappa, -m, no-such-model, -s, h100, --format, json]\n" + tail);
  Result r = run("calibrate " + bad_model + " --out " + (scratch() / "cal-bad").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err,
                  "measurement 'kappa': `kappasim kappa -m no-such-model -s h100 --format "
                  "json --set 'system.gpu.peak_flops.bf16=1 PFLOP/s'` failed (exit 2): "
                  "kappasim: error: --model no-such-model: model: unknown model preset "
                  "'no-such-model'"))
      << r.err;
  EXPECT_FALSE(fs::exists(scratch() / "cal-bad"));
  const std::string table =
      write("cal-table.yaml",
            head + "    command: [kappa, -m, llama-3.1-70b, -s, h100, --format, table]\n" + tail);
  r = run("calibrate " + table + " --out " + (scratch() / "cal-table").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(
      has(r.err, "measurement 'kappa': the command's output is not JSON (add --format json)"))
      << r.err;
}

// One FLOP convention (docs/accounting.md): probe prefill's f_pf_flops is F_pf = 2 · N_active per
// new token per GPU, as kappa's: Llama-3.1-70B, T = 128, TP 8: 2 · 70,553,706,496 / 8 · 128 =
// 2,257,718,607,872; achieved_flops is that over the compute time; what the kernels execute is
// kernel_flops, named apart.
TEST(AnalysisCli, ProbePrefillCountsFlopsInTheOneConvention) {
  Result r = run("probe prefill -m llama-3.1-70b -s paper-testbed --tp 8 --t 128 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_DOUBLE_EQ(json_number(r.out, "f_pf_flops"), 2257718607872.0);
  EXPECT_NEAR(json_number(r.out, "achieved_flops"),
              2257718607872.0 / json_number(r.out, "compute_time_s"),
              1e-9 * json_number(r.out, "achieved_flops"));
  EXPECT_GT(json_number(r.out, "kernel_flops"), 0);
  Result k = run("kappa -m llama-3.1-70b -s paper-testbed --format json");
  ASSERT_EQ(k.code, 0) << k.err;
  EXPECT_DOUBLE_EQ(json_number(k.out, "f_pf_flops"), 2 * 70553706496.0);
}

// kappasim report §6 against a kappa-crit sweep's results (--simulated): the row's ratios are
// its predictions over the simulated value given (here a made-up 100), and a folder whose
// results lack the columns is a bad input.
TEST(AnalysisCli, ReportComparesProbedPredictionsWithASweep) {
  const fs::path sw = scratch() / "kc-sweep";
  fs::create_directories(sw);
  std::ofstream(sw / "results.csv")
      << "point,model,serving.load_path,measure.t,seed,status,error,kappa_crit_simulated\n"
         "p000000,llama-3.1-70b,kernel,128,1,ok,,100\n";
  const fs::path out = scratch() / "report";
  Result r = run("report -q --out " + out.string() + " --simulated " + sw.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = slurp(out / "probed.csv");
  ASSERT_TRUE(has(csv, "llama-3.1-70b,paper-testbed,kernel,128,")) << csv;
  EXPECT_TRUE(has(csv, ",100\n")) << csv;
  EXPECT_TRUE(has(slurp(out / "report.md"), "the simulated κ_crit; the extended closed form"));
  std::ofstream(sw / "results.csv")
      << "point,model,seed,status,error\np000000,llama-3.1-70b,1,ok,\n";
  const fs::path out2 = scratch() / "report2";
  Result bad = run("report -q --out " + out2.string() + " --simulated " + sw.string());
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_TRUE(has(bad.err, "no column 'serving.load_path'")) << bad.err;
  EXPECT_FALSE(fs::exists(out2));
}

// The simulated path: every evaluation a sweep point in its own process, here of the sweep
// machinery's own kind `selftest` ({x} -> {x, x2 = x²}). x² >= 49 first holds at x = 7 (x is a
// whole number, so the search is over whole numbers); the tornado of x over its declared range
// 1..4 swings x2 from 1 to 16 = 15. Each batch is a sweep under runs/.
TEST(AnalysisCli, SimulatedEvaluationsRunThroughTheSweepRunner) {
  const std::string cfg =
      write("selftest.yaml", "x: {value: 2, assumption: \"test\", low: 1, high: 4}\n");
  const fs::path out = scratch() / "solve-sim";
  Result r =
      run("solve " + cfg +
          " --kind selftest --vary x --range 0:10 --target 'x2 >= 49' --format json -j 2 --out " +
          out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "value_si"), 7) << r.out;
  EXPECT_EQ(json_number(r.out, "metric_at_value"), 49);
  EXPECT_TRUE(fs::exists(out / "runs" / "b0001" / "spec.yaml"));
  EXPECT_TRUE(fs::exists(out / "runs" / "b0001" / "sweep" / "points"));
  const fs::path sens = scratch() / "sens-sim";
  Result t = run("sensitivity " + cfg + " --kind selftest --metric x2 -j 2 --out " + sens.string());
  ASSERT_EQ(t.code, 0) << t.err;
  const std::string csv = slurp(sens / "tornado.csv");
  EXPECT_TRUE(has(csv, "1,x,assumption,declared,2,1,4,4,1,16,15,")) << csv;
  // One sweep of 3 points: base, low, high.
  EXPECT_TRUE(fs::exists(sens / "runs" / "b0001" / "sweep" / "points" / "p000002"));
  EXPECT_FALSE(fs::exists(sens / "runs" / "b0002"));
}

void expect_bad(const std::string& args, const std::string& message, const fs::path& out) {
  Result r = run(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_TRUE(has(r.err, message)) << r.err;
  EXPECT_FALSE(fs::exists(out)) << args;
}

TEST(AnalysisCli, BadInputsExit2AndWriteNothing) {
  const std::string cfg = case_config();
  const fs::path out = scratch() / "bad";
  const std::string o = " --out " + out.string();
  const std::string base = "solve " + cfg + " --analytic ";
  expect_bad(base +
                 "--vary system.host_link.rate_per_lan --range '4 GT/s:64 GT/s' --target "
                 "'kappa_crit >= 10'" +
                 o,
             "did you mean 'system.host_link.rate_per_lane'", out);
  expect_bad(base +
                 "--vary system.host_link.rate_per_lane --range '64 GT/s:4 GT/s' --target "
                 "'kappa_crit >= 10'" +
                 o,
             "empty or inverted", out);
  expect_bad(base +
                 "--vary system.host_link.rate_per_lane --range '4 GT/s:4 GT/s' --target "
                 "'kappa_crit >= 10'" +
                 o,
             "empty or inverted", out);
  expect_bad(
      base +
          "--vary system.host_link.rate_per_lane --range '4 GB:64 GB' --target 'kappa_crit >= 10'" +
          o,
      "transfer rate", out);
  // (never met / met everywhere: exit 2, and with --out the probes are written: NoThreshold...)
  expect_bad(base +
                 "--vary system.host_link.rate_per_lane --range '4 GT/s:64 GT/s' --target "
                 "'kapa_crit >= 10'" +
                 o,
             "did you mean 'kappa_crit'", out);
  expect_bad(base +
                 "--vary system.host_link.rate_per_lane --range '4 GT/s:64 GT/s' --target "
                 "'kappa_crit = 10'" +
                 o,
             "expected \"METRIC OP VALUE\"", out);
  expect_bad("sensitivity " + cfg + " --analytic --metric kapa_crit" + o,
             "unknown metric 'kapa_crit'", out);
  const std::string cal = write(
      "bad-cal.yaml",
      "parameters:\n  - {key: system.gpu.peak_flops.bf16, lo: 1600 TFLOP/s, hi: 400 TFLOP/s}\n"
      "measurements:\n  - {id: k, command: [kappa, -m, llama-3.1-70b, -s, h100, --format, json], "
      "value: /0/kappa_crit, measured: 30, uncertainty: 1}\n");
  expect_bad("calibrate " + cal + o, "bad-cal.yaml:2:", out);
  const std::string cal2 = write(
      "bad-cal2.yaml",
      "parameters:\n  - {key: system.gpu.peak_flop.bf16, lo: 400 TFLOP/s, hi: 1600 TFLOP/s}\n"
      "measurements:\n  - {id: k, command: [kappa, -m, llama-3.1-70b, -s, h100, --format, json], "
      "value: /0/kappa_crit, measured: 30, uncertainty: 1}\n");
  expect_bad("calibrate " + cal2 + o, "peak_flop", out);
}

// ---- issue 26 ------------------------------------------------------------------------------

// Runs kappasim in `dir` (a bare config file name must work there).
Result run_in(const fs::path& dir, const std::string& args) {
  return kappasim::test::run_shell("cd " + dir.string() + " && " + std::string(KAPPASIM_BIN), args,
                                   scratch() / "stderr.txt");
}

fs::path sub(const std::string& name) {
  const fs::path d = scratch() / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Item 1: `kappasim solve base.yaml ...` (a bare name: its folder is "") exited 1 with "cannot
// make absolute path". x2 = x·x (the selftest kind) >= 49 first holds at x = 7.
TEST(AnalysisCli, BareConfigFileNameInTheCurrentFolder) {
  const fs::path d = sub("bare");
  std::ofstream(d / "sel.yaml") << "x: {value: 2, assumption: \"test\", low: 1, high: 4}\n";
  Result r = run_in(d,
                    "solve sel.yaml --kind selftest --vary x --range 0:10 --target 'x2 >= 49' "
                    "--format json -j 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "value_si"), 7) << r.out;
  Result t = run_in(d, "sensitivity sel.yaml --kind selftest --metric x2 -j 1");
  ASSERT_EQ(t.code, 0) << t.err;
  // calibrate with a run: measurement whose config is a bare name beside a bare calibration
  // file: x2 = 16 measured, so x = 4.
  std::ofstream(d / "cal.yaml") << "parameters:\n  - {key: x, lo: 0, hi: 10, start: 2}\n"
                                   "measurements:\n  - {id: m, run: sel.yaml, kind: selftest, "
                                   "metric: x2, measured: 16, uncertainty: 0.01}\n";
  Result c = run_in(d, "calibrate cal.yaml --out cal-out");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NEAR(json_number(slurp(d / "cal-out" / "fit.json"), "value_si"), 4, 1e-3);
}

// A key written as a whole number ("x: 2", as "rate: 8" often is) with a fractional range end is
// searched continuously: x2 = x·x >= 50 first holds at x = sqrt(50) = 7.0711 (it was refused as
// "a whole number"); with a whole range it is searched over whole numbers: x = 8.
TEST(AnalysisCli, WholeLookingKeyWithFractionalRangeIsContinuous) {
  const fs::path d = sub("wholelooking");
  std::ofstream(d / "sel.yaml") << "x: 2\n";
  Result r = run_in(d,
                    "solve sel.yaml --kind selftest --vary x --range 0.5:10 --target 'x2 >= 50' "
                    "--format json -j 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NEAR(json_number(r.out, "value_si"), std::sqrt(50.0), 0.01) << r.out;
  Result w = run_in(d,
                    "solve sel.yaml --kind selftest --vary x --range 0:10 --target 'x2 >= 50' "
                    "--format json -j 1");
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_EQ(json_number(w.out, "value_si"), 8) << w.out;
}

// Item 8: a seed range up to 2^64 - 1 is searched in 64-bit integers: every probe is a whole
// number in the range, HI is probed as 18446744073709551615 (not 2^64 = ...616, as a double
// gave), and the point's seed is the probe's (point_seed_hi = seed >> 32 >= 2^31 holds from
// 2^63 = 9223372036854775808 on).
TEST(AnalysisCli, SolveSearchesSeedsInIntegers) {
  const fs::path d = sub("seed");
  std::ofstream(d / "sel.yaml") << "x: 1\nworkload: {seed: 1}\n";
  Result r = run_in(d,
                    "solve sel.yaml --kind selftest --vary workload.seed "
                    "--range 0:18446744073709551615 --target 'point_seed_hi >= 2147483648' "
                    "--format json -j 1 --out o");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = slurp(d / "o" / "probes.csv");
  EXPECT_TRUE(has(csv, "\n2,18446744073709551615,4294967295,true")) << csv;
  EXPECT_FALSE(has(csv, "18446744073709551616")) << csv;
  const auto v = r.out.find("\"value\": \"");
  ASSERT_NE(v, std::string::npos) << r.out;
  const std::string value = r.out.substr(v + 10, r.out.find('"', v + 10) - v - 10);
  const auto o = r.out.find("\"other_side\": \"");
  const std::string other = r.out.substr(o + 15, r.out.find('"', o + 15) - o - 15);
  const unsigned long long two63 = 9223372036854775808ULL;
  EXPECT_GE(std::stoull(value), two63) << r.out;
  EXPECT_LT(std::stoull(other), two63) << r.out;
  // The bracket is below --tol (1e-3) of the range: (2^64 - 1) · 1e-3 = 1.8e16.
  EXPECT_LE(std::stoull(value) - std::stoull(other), 18446744073709552ULL) << r.out;
}

// Item 8: a sweep axis on workload.seed sets each point's seed (it was overridden by the
// sweep's derived seed: three seeds gave identical results).
TEST(AnalysisCli, SweepAxisOnTheSeedIsHonoured) {
  const fs::path d = sub("seed-axis");
  std::ofstream(d / "spec.yaml") << "name: seeds\nkind: selftest\nconfig: {x: 1, workload: {seed: "
                                    "1}}\naxes:\n  - {key: workload.seed, values: [5, 7, "
                                    "18446744073709551615]}\n";
  Result r = run_in(d, "sweep spec.yaml --out o -j 1 --quiet");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = slurp(d / "o" / "results.csv");
  // seed column = the axis value; point_seed_hi/lo its halves (2^64 - 1: 4294967295 each).
  EXPECT_TRUE(has(csv, ",5,ok,,1,1,0,5\n")) << csv;
  EXPECT_TRUE(has(csv, ",7,ok,,1,1,0,7\n")) << csv;
  EXPECT_TRUE(has(csv, ",18446744073709551615,ok,,1,1,4294967295,4294967295\n")) << csv;
}

// Item 9: solve's messages and whole-number keys.
TEST(AnalysisCli, SolveMessagesAndValidValues) {
  const std::string cfg = case_config();
  // A unit on a dimensionless target.
  Result u = run("solve " + cfg +
                 " --analytic --vary system.host_link.rate_per_lane --range '4 GT/s:64 GT/s' "
                 "--target 'kappa_crit >= 10 GB/s'");
  EXPECT_EQ(u.code, 2);
  EXPECT_TRUE(has(u.err, "kappa_crit is dimensionless")) << u.err;
  // A section: never "did you mean 'model'?".
  Result m =
      run("solve " + cfg + " --analytic --vary model --range 1:2 --target 'kappa_crit >= 10'");
  EXPECT_EQ(m.code, 2);
  EXPECT_FALSE(has(m.err, "did you mean 'model'")) << m.err;
  EXPECT_TRUE(has(m.err, "--vary 'model'")) << m.err;
  // Lanes: only PCIe widths are probed. κ_crit = 430,625.65 · B / 989e12 with B = lanes · 32e9 ·
  // (128/130) / 8 = lanes · 3.9385 GB/s, i.e. κ_crit = 1.7149 · lanes: >= 20 needs 11.66 lanes,
  // so x12 (x8 gives 13.7).
  Result l = run("solve " + cfg +
                 " --analytic --vary system.host_link.lanes --range 1:32 --target 'kappa_crit >= "
                 "20' --format json");
  ASSERT_EQ(l.code, 0) << l.err;
  EXPECT_TRUE(has(l.out, "\"value\": \"12\"")) << l.out;
  EXPECT_TRUE(has(l.out, "\"other_side\": \"8\"")) << l.out;
  for (const char* bad : {"\"3\"", "\"5\"", "\"11\"", "\"17\"", "\"24\""})
    EXPECT_FALSE(has(l.out, std::string("system.host_link.lanes\": ") + bad)) << l.out;
  EXPECT_FALSE(has(l.err + l.out, "<input>"));
}

// Item 24: no threshold in the range still writes the probes (exit 2, the message names them).
TEST(AnalysisCli, NoThresholdStillWritesTheProbes) {
  const std::string cfg = case_config();
  for (const char* target : {"kappa_crit >= 1000", "kappa_crit >= 0.1"}) {
    const fs::path out = scratch() / "never";
    fs::remove_all(out);
    Result r = run("solve " + cfg +
                   " --analytic --vary system.host_link.rate_per_lane --range '4 GT/s:64 GT/s' "
                   "--target '" +
                   target + "' --out " + out.string());
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_TRUE(has(r.err, std::string(target[14] == '1' ? "is never met" : "already holds")))
        << r.err;
    EXPECT_TRUE(has(r.err, "probes.csv")) << r.err;
    const std::string csv = slurp(out / "probes.csv");
    // LO, HI and the 8 scan points.
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 11) << csv;
    EXPECT_TRUE(has(slurp(out / "solve.json"), "\"status\": \"")) << csv;
  }
}

// Items 10, 21, 25: sensitivity's recorded commands name its real folder, its base runs at the
// config's seed (as `kappasim run`) and at the next seeds, a parameter with base 0 and no range
// is skipped with a note, and a rerun after an interruption resumes the runs.
// The selftest kind's point_seed_lo is the point's seed (below 2^32): the base at seeds 3, 4, 5
// gives 3, 4, 5 (spread 2); x moves it by 0, within the seed spread.
TEST(AnalysisCli, SensitivitySeedsFoldersAndResume) {
  const fs::path d = sub("sens-seeds");
  std::ofstream(d / "sel.yaml") << "x: {value: 2, assumption: \"test\", low: 1, high: 4}\n"
                                   "sleep: {value: 0 s, assumption: \"test\"}\n"
                                   "workload: {seed: 3}\n";
  Result r = run_in(d, "sensitivity sel.yaml --kind selftest --metric point_seed_lo -j 1 --out o");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "metric point_seed_lo at base: 3\n")) << r.out;
  EXPECT_TRUE(has(r.out, "3 seeds 3..5: 3 to 5 (seed spread 2)")) << r.out;
  EXPECT_TRUE(has(r.out, "skipped (base 0")) << r.out;
  EXPECT_TRUE(has(r.out, "): sleep\n")) << r.out;
  EXPECT_TRUE(has(r.out, "(within seed spread)")) << r.out;
  const std::string csv = slurp(d / "o" / "tornado.csv");
  EXPECT_TRUE(has(csv, "1,x,assumption,declared,2,1,4,3,3,3,0,,true\n")) << csv;
  // No recorded file names a staging folder; the command lines name o/runs.
  int commands = 0;
  for (const auto& e : fs::recursive_directory_iterator(d / "o")) {
    if (!e.is_regular_file()) continue;
    const std::string text = slurp(e.path());
    EXPECT_FALSE(has(text, ".partial")) << e.path();
    if (e.path().filename() == "command.txt") {
      ++commands;
      EXPECT_TRUE(has(text, (d / "o" / "runs").string())) << text;
    }
  }
  EXPECT_EQ(commands, 5);  // base, x low, x high, seeds 4 and 5
  // An interrupted run: one point without a result, no tornado. The rerun resumes: the done
  // points are kept (same file, untouched), the missing one is run, the tornado written.
  const fs::path points = d / "o" / "runs" / "b0001" / "sweep" / "points";
  const auto kept = fs::last_write_time(points / "p000000" / "result.json");
  fs::remove(points / "p000002" / "result.json");
  fs::remove(d / "o" / "tornado.csv");
  Result again =
      run_in(d, "sensitivity sel.yaml --kind selftest --metric point_seed_lo -j 1 --out o");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(fs::last_write_time(points / "p000000" / "result.json"), kept);
  EXPECT_TRUE(fs::exists(points / "p000002" / "result.json"));
  EXPECT_EQ(slurp(d / "o" / "tornado.csv"), csv);
}

// Items 20, 26: `sweep collect --baseline` (paired differences, replicate by replicate) and
// `sweep plot` (the report's CSV + gnuplot trio). The selftest kind: x2 = x·x at every seed, so
// against x = 1: x = 2 differs by 3 and x = 3 by 8 in all 3 replicates (sd 0: the interval is
// the point, above 0: "higher"). The plot's CSV holds the mean over the 3 replicates per x.
TEST(AnalysisCli, SweepPlotAndPairedBaseline) {
  const fs::path d = sub("plot");
  std::ofstream(d / "spec.yaml") << "name: p\nkind: selftest\nconfig: {x: 0}\nreplicates: 3\n"
                                    "axes:\n  - {key: x, values: [1, 2, 3]}\n";
  ASSERT_EQ(run_in(d, "sweep spec.yaml --out o -j 1 --quiet").code, 0);
  Result c = run_in(d, "sweep collect o --quiet --baseline x=1");
  ASSERT_EQ(c.code, 0) << c.err;
  const std::string paired = slurp(d / "o" / "paired.csv");
  // Columns: x, then metric.x (the metric x, renamed beside the axis x) and x2, each as
  // diff_mean, lo, hi, n, vs_baseline.
  EXPECT_TRUE(has(paired, "\n2,1,1,1,3,higher,3,3,3,3,higher\n")) << paired;
  EXPECT_TRUE(has(paired, "\n3,2,2,2,3,higher,8,8,8,3,higher\n")) << paired;
  Result bad = run_in(d, "sweep collect o --quiet --baseline x=7");
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(has(bad.err, "matches 0 configurations")) << bad.err;
  Result p = run_in(d, "sweep plot o --x x --y x2");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(slurp(d / "o" / "plots" / "x2-vs-x.csv"),
            "x,x2_mean,x2_ci95_lo,x2_ci95_hi,n\n1,1,1,1,3\n2,4,4,4,3\n3,9,9,9,3\n");
  EXPECT_TRUE(has(slurp(d / "o" / "plots" / "x2-vs-x.gp"), "'x2-vs-x.csv' using 1:2:3:4"));
  Result q = run_in(d, "sweep plot o --x x --y x3 --out q");
  EXPECT_EQ(q.code, 2);
  EXPECT_TRUE(has(q.err, "--y 'x3': no such column")) << q.err;
  EXPECT_FALSE(fs::exists(d / "q"));
}

// Item 23: the analytic model takes any token count (a median request's T = 9.2), as the kappa
// kind's T: does; simulations take whole tokens. κ_ratio = K / T = 45,940 / 9.2 = 4993.478261;
// t_compute = T · F_pf / C = 9.2 · 141,107,412,992 / 989e12 = 1.312615e-3 s.
TEST(AnalysisCli, AnalyticTokenCountsMayBeFractional) {
  Result k = run("kappa -m llama-3.1-70b -s h100 --context 45940 --t 9.2 --format json");
  ASSERT_EQ(k.code, 0) << k.err;
  EXPECT_NEAR(json_number(k.out, "kappa_ratio"), 45940 / 9.2, 1e-6);
  EXPECT_NEAR(json_number(k.out, "t_compute_s"), 9.2 * 141107412992.0 / 989e12, 1e-12);
  Result m = run("measure poh -m llama-3.1-8b -s h100 --k 4096 --t 9.2");
  EXPECT_EQ(m.code, 2);
  EXPECT_TRUE(has(m.err, "whole number of tokens")) << m.err;
}

// Item 22: --tp and a TP degree in the config are one value; a layout beyond one node is
// measured with the replica engine's per-rank pool (it was sized at TP alone: DeepSeek-V3 in
// FP8 at tp 8 holds 671e9 B / 8 = 84 GB per GPU > 72 GB usable, so "does not fit", although
// pp 2 over 2 nodes halves it to 42 GB).
TEST(AnalysisCli, MeasureTpAndLayouts) {
  Result c =
      run("measure kappa-crit -m llama-3.1-8b -s h100 --tp 1 --set serving.parallelism.tp=2");
  EXPECT_EQ(c.code, 2);
  EXPECT_TRUE(has(c.err, "--tp 1 conflicts with serving.parallelism.tp 2")) << c.err;
  Result d =
      run("measure kappa-crit -m deepseek-v3 -s dgx-h100 --set serving.tp=8 --set "
          "serving.parallelism.pp=2 --set serving.parallelism.nodes=2 --set "
          "serving.compute_dtype=fp8 --format json");
  EXPECT_EQ(d.code, 0) << d.err;
  EXPECT_FALSE(has(d.err, "does not fit")) << d.err;
}

// Item 18: simulated solve and sensitivity pass --preset-dir to every point (each its own
// process): a system preset only in that folder was "unknown". The solve's JSON is valid: its
// key and target are quoted once (they were written ""workload.rate"").
TEST(AnalysisCli, PresetDirReachesSimulatedPoints) {
  const fs::path d = sub("preset-dir");
  fs::create_directories(d / "pd" / "systems");
  std::ofstream(d / "pd" / "systems" / "mysys.yaml") << "name: mysys\npreset: h100\n";
  std::ofstream(d / "my.yaml") << "model: llama-3.1-8b\nsystem: mysys\nserving: {tp: 1}\n"
                                  "workload: {type: sharegpt, requests: 20, rate: 10, seed: 1}\n";
  Result r = run_in(d,
                    "solve my.yaml --preset-dir pd --vary workload.rate --range 1:100 "
                    "--target 'ttft_p99_s < 1000' --format json -j 2");
  // TTFT p99 of 20 requests is far below 1000 s at every rate: the threshold is outside.
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "already holds")) << r.err;
  EXPECT_FALSE(has(r.err, "unknown")) << r.err;
  Result t = run_in(d,
                    "sensitivity my.yaml --preset-dir pd --metric ttft_mean_s "
                    "--only serving.step_overhead --seeds 1 -j 2");
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_TRUE(has(t.out, "serving.step_overhead")) << t.out;
  Result f = run("solve " + case_config() +
                 " --analytic --vary system.host_link.rate_per_lane --range '4 GT/s:64 GT/s' "
                 "--target 'kappa_crit >= 10' --format json");
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_TRUE(has(f.out, "{\"key\": \"system.host_link.rate_per_lane\", ")) << f.out;
  EXPECT_TRUE(has(f.out, "\"target\": \"kappa_crit >= 10\", ")) << f.out;
}

// Issue 20 item 3: with serving.ttft: end_to_end the stack's front-end costs are swept over the
// preset's declared range. One request alone: its TTFT holds `http` once, so moving it from
// 0.3 ms to 3 ms (presets/stacks/lmcache-0.3.5.yaml) moves ttft_mean_s by exactly 2.7 ms.
TEST(AnalysisCli, SensitivitySweepsTheFrontEndOverItsPresetRange) {
  const fs::path d = sub("front-end");
  std::ofstream(d / "e2e.yaml")
      << "model: llama-3.1-8b\nsystem: h100\n"
         "serving: {tp: 1, stack: lmcache-0.3.5, load_path: kernel, ttft: end_to_end}\n"
         "workload: {type: sharegpt, requests: 1, rate: 10, seed: 1}\n";
  Result r = run_in(d,
                    "sensitivity e2e.yaml --metric ttft_mean_s --only serving.stack.front_end.http "
                    "--seeds 1 -j 2 --out o");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = slurp(d / "o" / "tornado.csv");
  // rank, key, kind, range, base, low, high, metric_base, metric_low, metric_high, swing
  const std::string row = "\n1,serving.stack.front_end.http,assumption,declared,1 ms,0.3 ms,3 ms,";
  ASSERT_TRUE(has(csv, row)) << csv;
  const std::string line = csv.substr(csv.find(row) + 1);
  std::size_t at = 0;
  for (int i = 0; i < 10; ++i) at = line.find(',', at) + 1;
  EXPECT_NEAR(std::stod(line.substr(at)), 2.7e-3, 1e-9) << line;
}

}  // namespace
}  // namespace analysis_cli_test
