// End-to-end tests of `kappasim solve`, `sensitivity` and `calibrate` (docs/analysis.md) on the
// analytic model, where every expectation is Eq. 6 worked by hand:
//   Llama-3.1-70B: N = 70,553,706,496, F_pf = 2N, B_kv = 2·80·8·128·2 = 327,680 B/token, so
//   F_pf / B_kv = 430,625.65; H100 PCIe 5.0 x16: B = 32e9·16·(128/130)/8 = 63.0154 GB/s;
//   κ_crit = 430,625.65 · B / C.
// And the bad inputs of docs/bad-inputs.md: exit code 2, a message naming the option or key, and
// no output folder.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace {
namespace fs = std::filesystem;
using kappasim::test::Result;
using kappasim::test::slurp;

fs::path scratch() {
  static const fs::path d = kappasim::test::fresh_dir("analysis-cli");
  return d;
}

Result run(const std::string& args) {
  return kappasim::test::run_shell(KAPPASIM_BIN, args, scratch() / "stderr.txt");
}

std::string write(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p.string();
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
  expect_bad(base +
                 "--vary system.host_link.rate_per_lane --range '4 GT/s:64 GT/s' --target "
                 "'kappa_crit >= 1000'" +
                 o,
             "is never met", out);
  expect_bad(base +
                 "--vary system.host_link.rate_per_lane --range '4 GT/s:64 GT/s' --target "
                 "'kappa_crit >= 0.1'" +
                 o,
             "already holds", out);
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

}  // namespace
