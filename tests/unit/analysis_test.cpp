// The analysis layer (analysis/): the bounded optimiser on textbook functions, the threshold
// solver on closed forms, target parsing, tagged parameters and their ranges, the tornado
// ranking, and a calibration that recovers known parameters from synthetic measurements.
// Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/calibration.hpp"
#include "analysis/eq6_honest.hpp"
#include "analysis/optimize.hpp"
#include "analysis/parameters.hpp"
#include "analysis/solve.hpp"
#include "analysis/tornado.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "serving/run_spec.hpp"

namespace kappasim::analysis {
namespace analysis_test {
namespace {

// Rosenbrock f = (1-x)² + 100 (y-x²)²: minimum 0 at (1, 1) (Rosenbrock 1960). Start at the
// classic (-1.2, 1), box [-2, 2] × [-1, 3].
TEST(Optimize, RosenbrockWithinBounds) {
  auto f = [](const std::vector<double>& p) {
    return (1 - p[0]) * (1 - p[0]) + 100 * (p[1] - p[0] * p[0]) * (p[1] - p[0] * p[0]);
  };
  OptimizeOptions o;
  o.max_evaluations = 5000;
  o.f_tol = 1e-14;
  o.x_tol = 1e-10;
  const OptimizeResult r = minimize_bounded(f, {{-2, 2}, {-1, 3}}, {-1.2, 1}, o);
  EXPECT_NEAR(r.x[0], 1, 1e-3);
  EXPECT_NEAR(r.x[1], 1, 2e-3);
  EXPECT_LT(r.f, 1e-6);
  EXPECT_TRUE(r.converged);
}

// The unconstrained minimum (3, -1) of (x-3)² + (y+1)² lies outside [0, 2] × [0, 5]: the bounded
// one is the corner (2, 0); every evaluated point stays inside the box.
TEST(Optimize, MinimumOnTheBoundAndNeverOutside) {
  bool outside = false;
  auto f = [&](const std::vector<double>& p) {
    outside = outside || p[0] < 0 || p[0] > 2 || p[1] < 0 || p[1] > 5;
    return (p[0] - 3) * (p[0] - 3) + (p[1] + 1) * (p[1] + 1);
  };
  const OptimizeResult r = minimize_bounded(f, {{0, 2}, {0, 5}}, {1, 2});
  EXPECT_NEAR(r.x[0], 2, 1e-3);
  EXPECT_NEAR(r.x[1], 0, 1e-3);
  EXPECT_FALSE(outside);
}

TEST(Optimize, RejectsEmptyBoundsAndOutsideStart) {
  auto f = [](const std::vector<double>& p) { return p[0]; };
  EXPECT_THROW(minimize_bounded(f, {{1, 1}}, {1}), std::invalid_argument);
  EXPECT_THROW(minimize_bounded(f, {{0, 1}}, {2}), std::invalid_argument);
}

TEST(Solve, ParsesTargets) {
  Target t = parse_target("ttft_p99_s < 1 s");
  EXPECT_EQ(t.metric, "ttft_p99_s");
  EXPECT_EQ(t.op, CompareOp::Lt);
  EXPECT_DOUBLE_EQ(t.value, 1);
  t = parse_target("kappa_crit>=11.5");
  EXPECT_EQ(t.op, CompareOp::Ge);
  EXPECT_DOUBLE_EQ(t.value, 11.5);
  t = parse_target("bw <= 64 GB/s");
  EXPECT_EQ(t.op, CompareOp::Le);
  EXPECT_DOUBLE_EQ(t.value, 64e9);
  for (const char* bad :
       {"kappa_crit", "< 3", "kappa_crit = 3", "kappa_crit < ", "a b < 3", "x < 3 zz"})
    EXPECT_THROW(parse_target(bad), InputError) << bad;
}

// Eq. 6 with everything but the bandwidth fixed: κ_crit = (F_pf / B_kv) · B / C. For Llama-3.1-70B
// (F_pf = 2 · 70,553,706,496 FLOP, B_kv = 327,680 B) on C = 989 TFLOP/s, κ_crit >= 10 needs
// B >= 10 · 989e12 · 327680 / (2 · 70553706496) = 3.240755e21 / 1.411074e11 = 22.96658 GB/s.
TEST(Solve, BisectionFindsTheEq6BandwidthThreshold) {
  const double fpf = 2 * 70553706496.0, bkv = 327680, c = 989e12;
  auto kappa = [&](double bw) { return fpf / bkv * bw / c; };
  SolveOptions o;
  o.rel_tol = 1e-7;
  const SolveResult r = solve_threshold(kappa, 1e9, 100e9, parse_target("kappa_crit >= 10"), o);
  ASSERT_EQ(r.status, SolveResult::Status::Found);
  EXPECT_EQ(r.method, "bisection");
  EXPECT_NEAR(r.x, 22.96658e9, 0.00002e9);  // bracket 1e-7 · 99 GB/s = 9.9 kB/s
  EXPECT_GE(kappa(r.x), 10);                // the reported end meets the target
  EXPECT_LT(kappa(r.other), 10);
  // log2(99e9 / (1e-7 · 99e9)) = 23.3 halvings + the two ends.
  EXPECT_LE(r.probes.size(), 27u);
}

// Not monotone: f = (x - 5)² is below 1 only on (4, 6). Both ends (0 and 10: 25) miss the target,
// so the scan brackets the first change, and bisection finds x = 4.
TEST(Solve, BracketedScanForANonMonotoneMetric) {
  auto f = [](double x) { return (x - 5) * (x - 5); };
  SolveOptions o;
  o.rel_tol = 1e-6;
  const SolveResult r = solve_threshold(f, 0, 10, parse_target("m < 1"), o);
  ASSERT_EQ(r.status, SolveResult::Status::Found);
  EXPECT_EQ(r.method, "bracketed scan + bisection");
  EXPECT_NEAR(r.x, 4, 1e-4);
  EXPECT_LT(f(r.x), 1);
}

TEST(Solve, NeverMetAndMetEverywhere) {
  auto f = [](double x) { return x; };
  EXPECT_EQ(solve_threshold(f, 0, 1, parse_target("m > 2")).status, SolveResult::Status::NeverMet);
  EXPECT_EQ(solve_threshold(f, 0, 1, parse_target("m > -1")).status,
            SolveResult::Status::MetEverywhere);
}

// A count: whole-number probes, stops at adjacent integers. x >= 7 is the threshold.
TEST(Solve, IntegerKeys) {
  std::vector<double> seen;
  auto f = [&](double x) {
    seen.push_back(x);
    return x;
  };
  SolveOptions o;
  o.integer = true;
  const SolveResult r = solve_threshold(f, 1, 64, parse_target("m >= 7"), o);
  ASSERT_EQ(r.status, SolveResult::Status::Found);
  EXPECT_EQ(r.x, 7);
  EXPECT_EQ(r.other, 6);
  for (double x : seen) EXPECT_EQ(x, std::round(x));
}

// Issue 26 item 8: whole numbers up to 2^64 - 1 searched as integers: m(i) = i >= 2^63 first
// holds at candidate 2^63; every probe a candidate, HI exactly 2^64 - 1.
TEST(Solve, DiscreteSearchOverSixtyFourBits) {
  std::vector<std::uint64_t> seen;
  auto m = [&](std::uint64_t i) {
    seen.push_back(i);
    return i >= (std::uint64_t{1} << 63) ? 1.0 : 0.0;
  };
  auto v = [](std::uint64_t i) { return static_cast<double>(i); };
  SolveOptions o;
  o.rel_tol = 1e-12;
  o.max_probes = 200;
  const SolveResult r = solve_discrete(m, v, UINT64_MAX, parse_target("m >= 1"), o);
  ASSERT_EQ(r.status, SolveResult::Status::Found);
  EXPECT_EQ(seen[1], UINT64_MAX);
  // rel_tol 1e-12 of 2^64: a bracket of at most 18,446,744 candidates.
  EXPECT_GE(r.x_index, std::uint64_t{1} << 63);
  EXPECT_LT(r.other_index, std::uint64_t{1} << 63);
  EXPECT_LE(r.x_index - r.other_index, 18446744u);
}

// Issue 26 item 9: valid values only (PCIe widths 1, 2, 4, 8, 12, 16, 32): m = width >= 11
// first holds at 12, after 8; no other value is probed.
TEST(Solve, DiscreteSearchProbesOnlyValidValues) {
  const std::vector<double> widths = {1, 2, 4, 8, 12, 16, 32};
  std::vector<double> seen;
  auto m = [&](std::uint64_t i) {
    seen.push_back(widths[i]);
    return widths[i];
  };
  auto v = [&](std::uint64_t i) { return widths[i]; };
  for (bool geo : {false, true}) {
    SolveOptions o;
    o.geometric = geo;
    const SolveResult r = solve_discrete(m, v, widths.size() - 1, parse_target("w >= 11"), o);
    ASSERT_EQ(r.status, SolveResult::Status::Found);
    EXPECT_EQ(r.x, 12);
    EXPECT_EQ(r.other, 8);
  }
  for (double x : seen) EXPECT_NE(std::find(widths.begin(), widths.end(), x), widths.end()) << x;
}

// Issue 26 item 9: a target's unit must be its metric's dimension (from the name's suffix).
TEST(Solve, TargetUnitMatchesTheMetric) {
  EXPECT_NO_THROW(check_target_dimension(parse_target("ttft_p99_s < 1 s")));
  EXPECT_NO_THROW(check_target_dimension(parse_target("ttft_p99_s < 1")));
  EXPECT_NO_THROW(check_target_dimension(parse_target("link_capacity_Bps >= 64 GB/s")));
  EXPECT_THROW(check_target_dimension(parse_target("kappa_crit >= 10 GB/s")), InputError);
  EXPECT_THROW(check_target_dimension(parse_target("ttft_p99_s < 1 GB")), InputError);
  EXPECT_TRUE(metric_dimension("h2d_effective_bytes_per_s") == dim::bandwidth);
  EXPECT_TRUE(metric_dimension("energy_per_request_j") == dim::energy);
  EXPECT_TRUE(metric_dimension("kappa_crit") == dim::none);
}

// Issue 26 item 7: the chi-squared p-value against printed tables (the 5% critical values
// 3.841 for 1 dof, 5.991 for 2, 18.307 for 10; 1% for 1 dof at 6.635) and closed forms
// (dof 2: Q = exp(-chi2/2), so chi2 = 2 gives e^-1 = 0.367879).
TEST(Calibration, ChiSquaredPValue) {
  EXPECT_NEAR(chi2_p_value(3.841459, 1), 0.05, 1e-6);
  EXPECT_NEAR(chi2_p_value(6.634897, 1), 0.01, 1e-6);
  EXPECT_NEAR(chi2_p_value(5.991465, 2), 0.05, 1e-6);
  EXPECT_NEAR(chi2_p_value(18.307038, 10), 0.05, 1e-6);
  EXPECT_NEAR(chi2_p_value(2, 2), std::exp(-1.0), 1e-12);
  EXPECT_LT(chi2_p_value(37813, 1), 1e-300);
  EXPECT_EQ(chi2_p_value(5, 0), 1);
}

ConfigNode tree(const std::string& yaml) { return parse_yaml(yaml, "test.yaml"); }

// Assumption/derived numbers count, and others only with a declared range; a declared range is used
// as given; the default is base · (1 ± 0.5), a fraction capped at 1, a whole number rounded and
// never equal to the base.
TEST(Parameters, TaggedParametersAndTheirRanges) {
  const ConfigNode t = tree(
      "gpu:\n"
      "  a: {value: 2 us, assumption: \"x\", low: 1 us, high: 8 us}\n"
      "  b: {value: 100 GB/s, spec: \"datasheet\"}\n"
      "  c: {value: 0.8, derived: \"y\"}\n"
      "  d: {value: 3, assumption: \"z\"}\n"
      "  e: {value: 1, assumption: \"z\"}\n"
      "  f: {value: 4 ns, measured: \"m\"}\n"
      "  h: {value: 0.8, measured: \"spread\", low: 0.75, high: 0.85}\n"
      "  g: {value: kernel, assumption: \"a name, not a number\"}\n");
  const auto ps = tagged_parameters(t);
  ASSERT_EQ(ps.size(), 5u);  // a, c, d, e, and h (measured, but with a declared range)
  EXPECT_EQ(ps[0].key, "gpu.a");
  EXPECT_TRUE(ps[0].declared);
  EXPECT_DOUBLE_EQ(ps[0].low, 1e-6);
  EXPECT_DOUBLE_EQ(ps[0].high, 8e-6);
  EXPECT_EQ(ps[0].range, "declared");
  EXPECT_EQ(ps[1].key, "gpu.c");
  EXPECT_DOUBLE_EQ(ps[1].low, 0.4);   // 0.8 · 0.5
  EXPECT_DOUBLE_EQ(ps[1].high, 1.0);  // 0.8 · 1.5 = 1.2, capped
  EXPECT_EQ(ps[2].key, "gpu.d");
  EXPECT_DOUBLE_EQ(ps[2].low, 2);   // round(1.5) = 2
  EXPECT_DOUBLE_EQ(ps[2].high, 5);  // round(4.5) = 5 (half away from zero)
  EXPECT_EQ(ps[3].key, "gpu.e");
  EXPECT_DOUBLE_EQ(ps[3].low, 1);   // a count of 1 only goes up
  EXPECT_DOUBLE_EQ(ps[3].high, 2);  // round(1.5) = 2
  EXPECT_EQ(ps[4].key, "gpu.h");
  EXPECT_EQ(ps[4].kind, "measured");
  EXPECT_DOUBLE_EQ(ps[4].low, 0.75);
  EXPECT_DOUBLE_EQ(ps[4].high, 0.85);
  // Emitted with its range and read back the same.
  const std::string again = emit_yaml(t);
  EXPECT_NE(again.find("low: 1 us"), std::string::npos) << again;
  EXPECT_EQ(tagged_parameters(tree(again))[0].high, 8e-6);
}

TEST(Parameters, BadDeclaredRanges) {
  EXPECT_THROW(
      tagged_parameters(tree("a: {value: 2 us, assumption: \"x\", low: 1 GB, high: 3 us}\n")),
      InputError);
  EXPECT_THROW(
      tagged_parameters(tree("a: {value: 2 us, assumption: \"x\", low: 5 us, high: 3 us}\n")),
      InputError);
}

TEST(Parameters, ServingTagsAttachWhereNoProvenance) {
  ConfigNode t = tree(
      "serving:\n  step_overhead: 2 ms\n  lmcache_retrieve_fixed: {value: 1 ms, measured: "
      "\"mine\"}\n");
  tag_serving_defaults(t);
  const auto ps = tagged_parameters(t);
  ASSERT_EQ(ps.size(), 1u);  // the measured one stays measured
  EXPECT_EQ(ps[0].key, "serving.step_overhead");
  EXPECT_EQ(ps[0].kind, "assumption");
  EXPECT_TRUE(ps[0].declared);
}

// Issue 20 item 3: with serving.ttft: end_to_end the effective run config (as `kappasim
// sensitivity` reads it: apps/kappasim/analysis_eval.cpp, kind run) holds the stack's front-end and
// tier_request costs with the ranges presets/stacks/*.yaml declare; the measured
// lookup_per_token (one source, no range) and the native stack's spec zeros are not varied. With
// an engine TTFT none of them is in the config, so none is varied.
TEST(Parameters, EndToEndStackCostsAreVariedOverThePresetRanges) {
  const auto params = [](const std::string& stack, const std::string& ttft) {
    ProvenanceTable prov;
    const RunSpec spec = read_config<RunSpec>(
        tree("model: llama-3.1-8b\nsystem: h100\nserving: {tp: 1, stack: " + stack +
             ", load_path: " + (stack.rfind("vllm-native", 0) == 0 ? "block_dma" : "kernel") +
             ", ttft: " + ttft + "}\nworkload: {type: sharegpt}\n"),
        "", &prov);
    ConfigNode eff = write_config(spec, "", &prov);
    tag_serving_defaults(eff);
    std::map<std::string, TaggedParameter> by_key;
    for (auto& p : tagged_parameters(eff))
      if (p.key.rfind("serving.stack.", 0) == 0) by_key[p.key] = p;
    return by_key;
  };
  struct Want {
    const char* key;
    const char* kind;
    double base, low, high;  // SI, from the preset lines
  };
  const std::vector<Want> lmcache = {
      {"serving.stack.front_end.http", "assumption", 1e-3, 0.3e-3, 3e-3},
      {"serving.stack.front_end.tokenize_per_token", "measured", 1.1e-6, 1.1e-6, 1.4e-6},
      {"serving.stack.front_end.ipc", "assumption", 0.1e-3, 0.05e-3, 0.5e-3},
      {"serving.stack.front_end.first_token", "assumption", 0.15e-3, 0.1e-3, 1e-3},
      {"serving.stack.tier_request.lookup_rpc", "assumption", 50e-6, 26e-6, 200e-6}};
  for (const char* stack :
       {"lmcache-0.3.5", "lmcache-0.3.7", "vllm-native-0.11", "vllm-native-0.12"}) {
    const auto ps = params(stack, "end_to_end");
    const bool native = std::string(stack).rfind("vllm-native", 0) == 0;
    for (const Want& w : lmcache) {
      const bool rpc = std::string(w.key).find("lookup_rpc") != std::string::npos;
      const auto it = ps.find(w.key);
      if (native && rpc) {  // 0 s, spec: in-process lookup
        EXPECT_EQ(it, ps.end()) << stack << " " << w.key;
        continue;
      }
      ASSERT_NE(it, ps.end()) << stack << " " << w.key;
      const TaggedParameter& p = it->second;
      EXPECT_EQ(p.kind, w.kind) << stack << " " << w.key;
      EXPECT_TRUE(p.declared) << stack << " " << w.key;
      EXPECT_EQ(p.range, "declared") << stack << " " << w.key;
      EXPECT_NEAR(p.base, w.base, 1e-15) << stack << " " << w.key;
      EXPECT_NEAR(p.low, w.low, 1e-15) << stack << " " << w.key;
      EXPECT_NEAR(p.high, w.high, 1e-15) << stack << " " << w.key;
    }
    EXPECT_EQ(ps.count("serving.stack.tier_request.lookup_per_token"), 0u) << stack;
    // Engine TTFT: the front end is not charged and not written, so not varied.
    for (const auto& [k, p] : params(stack, "engine")) {
      EXPECT_EQ(k.find(".front_end."), std::string::npos) << stack << " " << k;
      EXPECT_EQ(k.find(".tier_request."), std::string::npos) << stack << " " << k;
    }
  }
}

// One parameter moves the metric from 1 to 9, the others by 0.5 (exact in binary): it ranks
// first; equal swings rank by key; a row with a failed run ranks last.
TEST(Tornado, DominantParameterRanksFirst) {
  std::vector<TornadoRow> rows = {
      {"b.small", "assumption", "1", "0", "2", "declared", 4.5, 5.0, ""},
      {"a.big", "derived", "1", "0", "2", "declared", 1.0, 9.0, ""},
      {"c.broken", "assumption", "1", "0", "2", "declared", 4.0, std::nullopt, "high: invalid"},
      {"a.tie", "assumption", "1", "0", "2", "declared", 5.0, 5.5, ""},
      {"c.tie", "assumption", "1", "0", "2", "declared", 5.5, 5.0, ""},
  };
  const auto r = rank_tornado(rows);
  EXPECT_EQ(r[0].key, "a.big");
  EXPECT_DOUBLE_EQ(r[0].swing(), 8);
  EXPECT_EQ(r[1].key, "a.tie");
  EXPECT_EQ(r[2].key, "b.small");
  EXPECT_EQ(r[3].key, "c.tie");
  EXPECT_EQ(r[4].key, "c.broken");
  EXPECT_LT(r[4].swing(), 0);
  EXPECT_NE(tornado_csv(r, 5).find("1,a.big,derived"), std::string::npos);
}

// Synthetic measurements from a known model y_i = a · s_i + b (a = 2.5, b = 0.7 at s = 1..5,
// uncertainty 0.1): the fit recovers a and b, chi² ~ 0, and leaving any point out predicts it.
TEST(Calibration, RecoversKnownParametersFromSyntheticMeasurements) {
  CalibrationSpec s;
  s.params = {{"a", {0, 10}, 5, dim::none, false}, {"b", {-5, 5}, 0, dim::none, false}};
  for (int i = 1; i <= 5; ++i) {
    Measurement m;
    m.id = "p" + std::to_string(i);
    m.measured = 2.5 * i + 0.7;
    m.sigma = 0.1;
    s.measurements.push_back(m);
  }
  s.measurements[2].fit = false;  // held out: predicted only
  s.options.f_tol = 1e-14;
  s.options.x_tol = 1e-10;
  s.options.max_evaluations = 2000;
  int calls = 0;
  Simulate sim = [&](const std::vector<double>& x, const std::vector<std::size_t>& which) {
    ++calls;
    std::vector<double> v;
    for (std::size_t i : which) v.push_back(x[0] * static_cast<double>(i + 1) + x[1]);
    return v;
  };
  const CalibrationResult r = calibrate(s, sim);
  EXPECT_NEAR(r.x[0], 2.5, 1e-4);
  EXPECT_NEAR(r.x[1], 0.7, 1e-3);
  EXPECT_LT(r.chi2, 1e-4);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_NEAR(r.loo[i], s.measurements[i].measured, 2e-3) << i;
  // Over its range a moves y_1 by (10 - 0) · 1 and b by 5 - (-5) = 10; both / 0.1 = 100 σ:
  // identifiable.
  EXPECT_NEAR(r.sensitivity[0][0], 1 * 10 / 0.1, 1e-6);
  EXPECT_NEAR(r.sensitivity[0][1], 10 / 0.1, 1e-6);
  EXPECT_GT(calls, 0);
}

TEST(Calibration, FileErrors) {
  auto parse = [](const std::string& y) { return parse_calibration(tree(y), ""); };
  const std::string m =
      "measurements:\n  - {id: a, command: [kappa], value: /0/x, measured: 1, uncertainty: 0.1}\n";
  EXPECT_NO_THROW(parse("parameters:\n  - {key: x.y, lo: 1 us, hi: 2 us}\n" + m));
  try {
    parse("parameters:\n  - {key: x.y, lo: 2 us, hi: 1 us}\n" + m);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("empty or inverted"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse("parameters:\n  - {key: x.y, lo: 1 us, hi: 2 GB}\n" + m), InputError);
  EXPECT_THROW(parse("parameters:\n  - {key: x.y, lo: 1 us, hi: 2 us, start: 3 us}\n" + m),
               InputError);
  EXPECT_THROW(parse("parameters:\n  - {key: x.y, lo: 1 us, hi: 2 us, strat: 1 us}\n" + m),
               InputError);
  EXPECT_THROW(parse("parameters:\n  - {key: x.y, lo: 1 us, hi: 2 us}\n"
                     "measurements:\n  - {id: a, command: [kappa], value: /0/x, measured: 1, "
                     "uncertainty: 0}\n"),
               InputError);
  EXPECT_THROW(
      parse("parameters:\n  - {key: x.y, lo: 1 us, hi: 2 us}\n  - {key: x.z, lo: 1, hi: 2}\n" + m),
      InputError);  // 2 parameters, 1 measurement
}

// Issue 26 item 7: a measurement of another dimension than its metric, or a negative physical
// value, is refused naming the file and key (the metric's dimension from its name's suffix).
TEST(Calibration, MeasurementDimensionAndSign) {
  auto parse = [](const std::string& meas) {
    return parse_calibration(tree("parameters:\n  - {key: x.y, lo: 1 us, hi: 2 us}\n"
                                  "measurements:\n  - " +
                                  meas + "\n"),
                             "");
  };
  auto message = [&](const std::string& meas) {
    try {
      parse(meas);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string run = "{id: a, run: r.yaml, metric: h2d_effective_bytes_per_s, ";
  EXPECT_NO_THROW(parse(run + "measured: 12.5 GB/s, uncertainty: 1 GB/s}"));
  const std::string wrong = message(run + "measured: 12.5 GB, uncertainty: 1 GB}");
  EXPECT_NE(wrong.find("test.yaml:4:"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("measured of 'a': 12.5 GB is a data size but h2d_effective_bytes_per_s "
                       "is a bandwidth"),
            std::string::npos)
      << wrong;
  const std::string neg = message(run + "measured: -12.5 GB/s, uncertainty: 1 GB/s}");
  EXPECT_NE(neg.find("cannot be negative"), std::string::npos) << neg;
  // A command's pointer whose last component names a unit is checked; others cannot be.
  EXPECT_THROW(parse("{id: a, command: [probe], value: /0/bandwidth_bytes_per_s, measured: 3 s, "
                     "uncertainty: 1 s}"),
               InputError);
  EXPECT_NO_THROW(
      parse("{id: a, command: [probe], value: /0/bw, measured: 3 GB/s, "
            "uncertainty: 1 GB/s}"));
  // A dimensionless metric with a unit.
  EXPECT_THROW(parse("{id: a, run: r.yaml, metric: kappa_crit, measured: 3 s, uncertainty: 1 s}"),
               InputError);
}

}  // namespace
}  // namespace analysis_test
}  // namespace kappasim::analysis

namespace kappasim::analysis {
namespace analysis_test {
namespace {

// The extended closed form on round numbers: T = 100 new tokens, 1 GFLOP per token per GPU at
// 1 TFLOP/s = 0.1 s (above the 0.05 s floor); 100 kB per token at 10 GB/s = 10 us, 0.1 ms per
// 100-token chunk = 1 us per token, attention 1 ns per cached × new token (· T = 0.1 us);
// 1 ms per request. K* = (0.1 − 0.001) / (10 + 1 − 0.1) us = 9082.57, κ = 90.8257.
// Eq. 6 with Eq. 6's B_kv = 50 kB (no replication): (1e9 / 5e4) · (1e10 / 1e12) = 200.
TEST(Eq6Honest, ClosedFormsOnRoundNumbers) {
  HonestInputs in;
  in.T = 100;
  in.f_gpu = 1e9;
  in.compute = 1e12;
  in.floor_s = 0.05;
  in.b_kv_eq6 = 5e4;
  in.b_kv_gpu = 1e5;
  in.link_Bps = 1e10;
  in.t_chunk_s = 1e-4;
  in.chunk_tokens = 100;
  in.attn_s_per_kt = 1e-9;
  in.t_request_s = 1e-3;
  EXPECT_NEAR(kappa_crit_eq6_probed(in), 200, 1e-9);
  const double k = kappa_crit_extended(in);
  EXPECT_NEAR(k, 0.099 / 10.9e-6 / 100, 1e-9);
  EXPECT_NEAR(k, 90.8257, 1e-4);
  // At K* = κ·T the load and the compute take the same time.
  const double K = k * in.T;
  const double load =
      in.t_request_s + K / in.chunk_tokens * in.t_chunk_s + K * in.b_kv_gpu / in.link_Bps;
  const double compute = 0.1 + in.attn_s_per_kt * K * in.T;
  EXPECT_NEAR(load, compute, 1e-12);
  // The floor takes over at small T: 0.2 s floor → K* = 0.199 / 10.9 us.
  in.floor_s = 0.2;
  EXPECT_NEAR(kappa_crit_extended(in), 0.199 / 10.9e-6 / 100, 1e-9);
  // Attention over K that grows faster than the load: the load never catches up.
  in.attn_s_per_kt = 1e-7;  // a · T = 10 us, still below the 11 us of load per token
  EXPECT_TRUE(std::isfinite(kappa_crit_extended(in)));
  in.attn_s_per_kt = 2e-7;
  EXPECT_TRUE(std::isinf(kappa_crit_extended(in)));
}

}  // namespace
}  // namespace analysis_test
}  // namespace kappasim::analysis

namespace kappasim::analysis {
namespace analysis_test {
namespace {

// The shipped example stays a valid calibration file: the vLLM-blog copy-kernel row (7 sizes,
// reference-data.md), the 256 KiB point held out, three bounded parameters.
TEST(Calibration, ShippedExampleParses) {
  const std::string dir = std::string(KAPPASIM_SOURCE_DIR) + "/experiments/calibration";
  const CalibrationSpec s = parse_calibration(load_yaml_file(dir + "/h100-copy-kernel.yaml"), dir);
  ASSERT_EQ(s.params.size(), 3u);
  ASSERT_EQ(s.measurements.size(), 7u);
  EXPECT_DOUBLE_EQ(s.measurements[0].measured, 12.5e9);
  EXPECT_DOUBLE_EQ(s.measurements[6].measured, 47.8e9);
  EXPECT_FALSE(s.measurements[3].fit);
  EXPECT_EQ(s.overlay_name, "h100-calibrated");
}

}  // namespace
}  // namespace analysis_test
}  // namespace kappasim::analysis
