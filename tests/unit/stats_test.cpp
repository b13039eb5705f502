// Replicate statistics (core/stats) and the sweep aggregation (sweeps/aggregate): Student t
// quantiles against printed tables, a textbook interval by hand, and an aggregate of a small
// table whose numbers are worked out in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "report/results.hpp"
#include "sweeps/aggregate.hpp"

namespace stats_test {
namespace {

using namespace kappasim;

TEST(Stats, StudentTQuantileMatchesTables) {
  // Two-sided 95% critical values, e.g. NIST/SEMATECH e-Handbook §1.3.6.7.2 (t table), to the
  // table's three decimals.
  struct Row {
    double p, df, t;
  };
  const std::vector<Row> rows = {{0.975, 1, 12.706}, {0.975, 2, 4.303},   {0.975, 3, 3.182},
                                 {0.975, 4, 2.776},  {0.975, 9, 2.262},   {0.975, 10, 2.228},
                                 {0.975, 30, 2.042}, {0.975, 100, 1.984}, {0.95, 5, 2.015},
                                 {0.995, 10, 3.169}, {0.90, 20, 1.325}};
  for (const auto& r : rows)
    EXPECT_NEAR(stats::student_t_quantile(r.p, r.df), r.t, 5.1e-4) << "p " << r.p << " df " << r.df;
  // df = 1 is the Cauchy distribution: quantile tan(π (p − 1/2)), exact.
  EXPECT_NEAR(stats::student_t_quantile(0.975, 1), std::tan(M_PI * 0.475), 1e-9);
  // Symmetry, the median, and the CDF at its own quantile.
  EXPECT_NEAR(stats::student_t_quantile(0.025, 9), -stats::student_t_quantile(0.975, 9), 1e-12);
  EXPECT_EQ(stats::student_t_quantile(0.5, 7), 0.0);
  EXPECT_NEAR(stats::student_t_cdf(0, 3), 0.5, 1e-15);
  EXPECT_NEAR(stats::student_t_cdf(stats::student_t_quantile(0.975, 4), 4), 0.975, 1e-10);
  // df = 2 has a closed-form CDF: 1/2 + t / (2 √(t² + 2)); at t = 1: 1/2 + 1/(2√3).
  EXPECT_NEAR(stats::student_t_cdf(1, 2), 0.5 + 1 / (2 * std::sqrt(3.0)), 1e-12);
  EXPECT_THROW(stats::student_t_quantile(1, 3), std::invalid_argument);
  EXPECT_THROW(stats::student_t_quantile(0.5, 0), std::invalid_argument);
}

TEST(Stats, TextbookInterval) {
  // {2, 4, 6}: mean 4, s² = (4 + 0 + 4) / 2 = 4 → s = 2; half-width t(0.975, 2) · 2 / √3
  // = 4.302653 · 1.154701 = 4.968275.
  const stats::Interval iv = stats::mean_interval({2, 4, 6});
  EXPECT_EQ(iv.n, 3u);
  EXPECT_DOUBLE_EQ(iv.mean, 4);
  EXPECT_DOUBLE_EQ(iv.sd, 2);
  EXPECT_NEAR(iv.half_width, 4.968275, 1e-5);
  EXPECT_NEAR(iv.lo, 4 - 4.968275, 1e-5);
  EXPECT_NEAR(iv.hi, 4 + 4.968275, 1e-5);
  // NaN is not a sample; one sample has a mean and no spread.
  const stats::Interval one = stats::mean_interval({5, NAN});
  EXPECT_EQ(one.n, 1u);
  EXPECT_DOUBLE_EQ(one.mean, 5);
  EXPECT_TRUE(std::isnan(one.sd));
  EXPECT_TRUE(std::isnan(one.half_width));
  EXPECT_EQ(stats::mean_interval({}).n, 0u);
}

TEST(Stats, PairedDifferenceOverCommonSeeds) {
  // Student's (1908) sleep data as in R's `t.test(extra ~ group, data = sleep, paired = TRUE)`:
  // extra hours of sleep of 10 patients under drug 2 and drug 1. Differences (2 − 1):
  // 1.2, 2.4, 1.3, 1.3, 0.0, 1.0, 1.8, 0.8, 4.6, 1.4 → mean 15.8 / 10 = 1.58, s = 1.229995,
  // half-width t(0.975, 9) · s / √10 = 2.262157 · 0.388959 = 0.879886 → [0.700114, 2.459886]
  // (R prints the interval −2.4598858 −0.7001142 for 1 − 2, t = −4.0621).
  const std::vector<double> drug1 = {0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0};
  const std::vector<double> drug2 = {1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4};
  const stats::Interval d = stats::paired_difference(drug2, drug1);
  EXPECT_EQ(d.n, 10u);
  EXPECT_NEAR(d.mean, 1.58, 1e-12);
  EXPECT_NEAR(d.sd, 1.229995, 1e-6);
  EXPECT_NEAR(d.lo, 0.7001142, 1e-6);
  EXPECT_NEAR(d.hi, 2.4598858, 1e-6);
  EXPECT_EQ(stats::interval_sign(d), 1);
  EXPECT_EQ(stats::interval_sign(stats::paired_difference(drug1, drug2)), -1);
  // The unpaired intervals of the two groups overlap (drug 1: 0.75 ± 1.28, drug 2: 2.33 ±
  // 1.43), the paired one excludes 0: the common per-patient spread cancels.
  EXPECT_LT(stats::mean_interval(drug2).lo, stats::mean_interval(drug1).hi);
  // By hand, three seeds: a = {10, 20, 30}, b = {9, 18.5, 28.5}: differences {1, 1.5, 1.5},
  // mean 4/3, s² = (1/9 + 1/36 + 1/36) / 2 = 1/12, half-width 4.302653 · √(1/12) / √3
  // = 4.302653 / 6 = 0.717109: [0.616224, 2.050442], A > B.
  const stats::Interval h = stats::paired_difference({10, 20, 30}, {9, 18.5, 28.5});
  EXPECT_NEAR(h.mean, 4.0 / 3, 1e-12);
  EXPECT_NEAR(h.half_width, 0.717109, 1e-6);
  EXPECT_EQ(stats::interval_sign(h), 1);
  // Differences {1, −1, 0.5}: the interval contains 0 → within the spread. A pair with a NaN
  // is skipped; one pair has no interval (sign 0); unequal sizes are an error.
  EXPECT_EQ(stats::interval_sign(stats::paired_difference({2, 0, 1.5}, {1, 1, 1})), 0);
  const stats::Interval one = stats::paired_difference({2, NAN}, {1, 1});
  EXPECT_EQ(one.n, 1u);
  EXPECT_EQ(stats::interval_sign(one), 0);
  EXPECT_THROW(stats::paired_difference({1, 2}, {1}), std::invalid_argument);
}

TEST(Stats, FormatInterval) {
  EXPECT_EQ(stats::format_interval(stats::mean_interval({2, 4, 6})), "4.0 ± 5.0 (n=3)");
  // {1.18, 1.23, 1.28}: mean 1.23, s = 0.05, half-width 4.3027 · 0.05 / √3 = 0.1242.
  EXPECT_EQ(stats::format_interval(stats::mean_interval({1.18, 1.23, 1.28}), 1), "1.2 ± 0.1 (n=3)");
  EXPECT_EQ(stats::format_interval(stats::mean_interval({1.18, 1.23, 1.28})), "1.23 ± 0.12 (n=3)");
  EXPECT_EQ(stats::format_interval(stats::mean_interval({7})), "7 (n=1)");
  EXPECT_EQ(stats::format_interval(stats::mean_interval({})), "");
}

TEST(Stats, EqualReplicatesHaveNoSpread) {
  // Three equal samples: their mean is the value and their spread none, although the rounded
  // sum 0.1 + 0.1 + 0.1 = 0.30000000000000004 divided by 3 is not 0.1.
  const stats::Interval iv = stats::mean_interval({0.1, 0.1, 0.1});
  EXPECT_EQ(iv.mean, 0.1);
  EXPECT_EQ(iv.sd, 0.0);
  EXPECT_EQ(iv.half_width, 0.0);
  EXPECT_EQ(iv.lo, 0.1);
  EXPECT_EQ(iv.hi, 0.1);
  EXPECT_EQ(stats::format_interval(iv), "0.1 ± 0 (n=3)");
  // A NaN replicate is not a sample: the other two still agree.
  EXPECT_EQ(stats::format_interval(stats::mean_interval({0.0109, NAN, 0.0109})),
            "0.0109 ± 0 (n=2)");
  // Samples that differ beyond the sixth significant digit: s = 1e-12, half-width
  // 4.3027 · 1e-12 / √3 ≈ 2.5e-12, far below the 5e-8 that would round 0.0109431 (mean
  // 0.010943056584487) at its sixth digit, so no spread is printed; 1e-6 apart is.
  EXPECT_EQ(stats::format_interval(
                stats::mean_interval({0.010943056584487, 0.010943056585487, 0.010943056583487})),
            "0.0109431 ± 0 (n=3)");
  EXPECT_EQ(stats::format_interval(stats::mean_interval({0.010942, 0.010943, 0.010944})),
            "0.0109430 ± 0.0000025 (n=3)");
  // Equal differences (2 and 2): a deterministic effect, its sign certain.
  const stats::Interval d = stats::paired_difference({3, 5}, {1, 3});
  EXPECT_EQ(d.half_width, 0.0);
  EXPECT_EQ(stats::interval_sign(d), 1);
}

TEST(Aggregate, PerConfigurationMeanSdAndInterval) {
  sweep::SweepTable t;
  t.columns = {"point", "bw", "bw_Bps", "replicate", "seed", "status", "error", "ttft_s", "name"};
  t.rows = {
      {"0", "64 GB/s", "64000000000", "0", "11", "ok", "", "2", "a"},
      {"1", "64 GB/s", "64000000000", "1", "12", "ok", "", "4", "b"},
      {"2", "64 GB/s", "64000000000", "2", "13", "ok", "", "6", "c"},
      {"3", "128 GB/s", "128000000000", "0", "11", "ok", "", "1", "d"},
      {"4", "128 GB/s", "128000000000", "1", "12", "failed", "boom", "", "e"},
      {"5", "128 GB/s", "128000000000", "2", "13", "ok", "", "3", "f"},
  };
  const sweep::Aggregated a = sweep::aggregate_table(
      t, {"bw", "bw_Bps"}, {"point", "replicate", "seed", "status", "error"});
  // 64 GB/s: {2, 4, 6} → mean 4, sd 2, half 4.968275 (above). 128 GB/s: {1, 3} (the failed row is
  // no sample) → mean 2, s = √2, half t(0.975, 1) · √2 / √2 = 12.7062. "name" is not numeric.
  const std::string header =
      "bw,bw_Bps,rows,ok,ttft_s_mean,ttft_s_sd,ttft_s_ci95_lo,ttft_s_ci95_hi,ttft_s_ci95_half,ttft_"
      "s_n\n";
  ASSERT_EQ(a.csv.substr(0, header.size()), header);
  std::vector<std::string> lines;
  for (std::size_t at = 0, nl; (nl = a.csv.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(a.csv.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 3u);
  auto field = [](const std::string& line, int i) {
    std::size_t at = 0;
    for (int k = 0; k < i; ++k) at = line.find(',', at) + 1;
    return line.substr(at, line.find(',', at) - at);
  };
  EXPECT_EQ(field(lines[1], 0), "64 GB/s");
  EXPECT_EQ(field(lines[1], 3), "3");
  EXPECT_DOUBLE_EQ(std::stod(field(lines[1], 4)), 4);
  EXPECT_DOUBLE_EQ(std::stod(field(lines[1], 5)), 2);
  EXPECT_NEAR(std::stod(field(lines[1], 8)), 4.968275, 1e-5);
  EXPECT_EQ(field(lines[2], 2), "3");  // rows
  EXPECT_EQ(field(lines[2], 3), "2");  // ok
  EXPECT_DOUBLE_EQ(std::stod(field(lines[2], 4)), 2);
  EXPECT_NEAR(std::stod(field(lines[2], 5)), std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(std::stod(field(lines[2], 8)), 12.7062, 1e-3);
  EXPECT_EQ(field(lines[2], 9), "2");
  EXPECT_NE(a.json.find("\"config\": {\"bw\": \"128 GB/s\", \"bw_Bps\": 128000000000}"),
            std::string::npos)
      << a.json;
  // The same table gives the same bytes (the merge is in point order, whatever -j ran it).
  EXPECT_EQ(a.csv, sweep::aggregate_table(t, {"bw", "bw_Bps"},
                                          {"point", "replicate", "seed", "status", "error"})
                       .csv);
}

TEST(Stats, ReportIntervalCell) {
  report::ResultsTable t;
  t.columns = {"point", "tp", "status", "ttft_s"};
  t.rows = {{"0", "1", "ok", "1.18"}, {"1", "1", "ok", "1.23"}, {"2", "1", "ok", "1.28"},
            {"3", "8", "ok", "0.5"},  {"4", "8", "failed", ""}, {"5", "8", "failed", "9"}};
  // tp 1: {1.18, 1.23, 1.28} → 1.23 ± 0.12 (n=3) (FormatInterval above); tp 8: one ok sample.
  EXPECT_EQ(report::interval_cell(t, t.where({{"tp", "1"}}), "ttft_s"), "1.23 ± 0.12 (n=3)");
  EXPECT_EQ(report::interval_cell(t, t.where({{"tp", "8"}}), "ttft_s"), "0.5");
  EXPECT_EQ(report::interval_cell(t, t.where({{"tp", "2"}}), "ttft_s"), "—");
}

// Issue 26 item 20: `sweep collect --baseline`: per replicate, configuration minus baseline.
// Three replicates (common random numbers): policy fifo ttft {10, 20, 30}, fair {9, 18.5, 28.5}
// → fair − fifo = {−1, −1.5, −1.5}: mean −4/3, half-width 0.717109 (the hand computation in
// PairedDifferenceOverCommonSeeds) → [−2.050442, −0.616224]: lower. policy lifo {11, 19, 30}:
// {1, −1, 0} contains 0: within.
TEST(Aggregate, PairedDifferenceAgainstABaseline) {
  sweep::SweepTable t;
  t.columns = {"point", "policy", "replicate", "seed", "status", "error", "ttft_s"};
  t.rows = {
      {"0", "fifo", "0", "11", "ok", "", "10"},   {"1", "fifo", "1", "12", "ok", "", "20"},
      {"2", "fifo", "2", "13", "ok", "", "30"},   {"3", "fair", "0", "11", "ok", "", "9"},
      {"4", "fair", "1", "12", "ok", "", "18.5"}, {"5", "fair", "2", "13", "ok", "", "28.5"},
      {"6", "lifo", "0", "11", "ok", "", "11"},   {"7", "lifo", "1", "12", "ok", "", "19"},
      {"8", "lifo", "2", "13", "ok", "", "30"},
  };
  const std::vector<std::string> skip = {"point", "replicate", "seed", "status", "error"};
  const std::string csv =
      sweep::paired_table(t, {"policy"}, skip, sweep::parse_baseline("policy=fifo"));
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < csv.size()) {
    const std::size_t nl = csv.find('\n', at);
    lines.push_back(csv.substr(at, nl - at));
    at = nl + 1;
  }
  ASSERT_EQ(lines.size(), 3u) << csv;
  EXPECT_EQ(lines[0],
            "policy,ttft_s_diff_mean,ttft_s_diff_ci95_lo,ttft_s_diff_ci95_hi,ttft_s_diff_n,"
            "ttft_s_vs_baseline");
  EXPECT_EQ(lines[1].substr(0, 5), "fair,");
  EXPECT_NEAR(std::stod(lines[1].substr(5)), -4.0 / 3, 1e-9);
  const std::size_t c2 = lines[1].find(',', 5) + 1;
  EXPECT_NEAR(std::stod(lines[1].substr(c2)), -4.0 / 3 - 0.717109, 1e-6);
  EXPECT_EQ(lines[1].substr(lines[1].size() - 8), ",3,lower");
  EXPECT_EQ(lines[2].substr(lines[2].size() - 9), ",3,within");
  // A baseline that matches nothing, or a column that is not an axis: InputError.
  EXPECT_THROW(sweep::paired_table(t, {"policy"}, skip, sweep::parse_baseline("policy=lru")),
               InputError);
  EXPECT_THROW(sweep::paired_table(t, {"policy"}, skip, sweep::parse_baseline("ttft_s=10")),
               InputError);
  EXPECT_THROW(sweep::parse_baseline("policy"), InputError);
}

}  // namespace
}  // namespace stats_test
