// The issue 14 studies of the reproduce report (report/section_memory_tiers.cpp,
// report/section_parallelism.cpp, report/tier_cost.cpp): the cost arithmetic by hand, and both
// sections rendered from small in-memory sweep tables, including rows the engine refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "report/conclusions.hpp"
#include "report/sections.hpp"
#include "report/tier_cost.hpp"

namespace kappasim {
namespace report_studies_test {
namespace {

using report::ResultsTable;
using report::SweepData;

TEST(ReportStudies, TierCostArithmeticByHand) {
  // 256 GB DRAM + 1 TB CXL + 2 TB NVMe at $10, $8, $0.10 per GB:
  // 256 × 10 + 1000 × 8 + 2000 × 0.1 = 2560 + 8000 + 200 = $10,760.
  const report::TierCapacities c{256e9, 1e12, 2e12};
  const report::TierPrices p{"t", 10, 8, 0.1};
  EXPECT_NEAR(report::memory_capital_usd(c, p), 10760, 1e-9);
  // 4 years = 4 × 365.25 × 86400 = 126,230,400 s.
  EXPECT_DOUBLE_EQ(report::amortisation_seconds(4), 126230400.0);
  // 8 GPUs at $2.50 per GPU-hour = $20/h = 1/180 $/s.
  const report::CostAssumptions a{2.5, 8, 4};
  EXPECT_NEAR(report::gpu_usd_per_s(a), 1.0 / 180, 1e-15);
  // At 2 req/s: memory 10760 / 126230400 / 2 = 4.2620e-5 $ per request;
  // total (1/180 + 10760/126230400) / 2 = (0.0055556 + 0.0000852) / 2 = 0.0028204 $.
  EXPECT_NEAR(report::memory_cost_per_request_usd(c, p, a, 2), 10760.0 / 126230400 / 2, 1e-15);
  EXPECT_NEAR(report::cost_per_request_usd(c, p, a, 2), 0.0028204, 1e-7);
  // No throughput: no cost per request (not infinity).
  EXPECT_TRUE(std::isnan(report::cost_per_request_usd(c, p, a, 0)));
  EXPECT_TRUE(std::isnan(report::memory_cost_per_request_usd(c, p, a, NAN)));
  // The swept prices run low < mid < high for every tier, NVMe far below DRAM.
  const auto& s = report::tier_price_sweep();
  ASSERT_EQ(s.size(), 3u);
  for (std::size_t i = 1; i < s.size(); ++i) {
    EXPECT_LT(s[i - 1].dram_usd_per_gb, s[i].dram_usd_per_gb);
    EXPECT_LT(s[i - 1].cxl_usd_per_gb, s[i].cxl_usd_per_gb);
    EXPECT_LT(s[i - 1].nvme_usd_per_gb, s[i].nvme_usd_per_gb);
  }
  for (const auto& x : s) EXPECT_LT(x.nvme_usd_per_gb * 10, x.dram_usd_per_gb);
}

SweepData table(const std::string& name, const std::vector<std::string>& cols,
                const std::vector<std::vector<std::string>>& rows) {
  SweepData d;
  d.name = name;
  d.table.columns = cols;
  d.table.rows = rows;
  return d;
}

TEST(ReportStudies, MemoryTiersRendersRowsCostsAndRefusals) {
  const std::vector<std::string> cols = {
      "workload",       "memory",      "replicate",  "status",     "error",
      "throughput_rps", "ttft_mean_s", "ttft_p50_s", "ttft_p99_s", "bytes_loaded_total",
      "tier_hit_rate"};
  // The 2 TB node serves 2 req/s, the capped one 1 req/s, two replicates each.
  const SweepData dram =
      table("memory-tiers-dram", cols,
            {{"docfinqa", "dram-2TB", "0", "ok", "", "2", "1", "1", "2", "1e12", "1"},
             {"docfinqa", "dram-2TB", "1", "ok", "", "2", "1", "1", "2", "1e12", "1"},
             {"docfinqa", "dram-256GB", "0", "ok", "", "1", "9", "10", "20", "1e11", "0.5"},
             {"docfinqa", "dram-256GB", "1", "ok", "", "1", "11", "12", "20", "1e11", "0.5"}});
  // The lower tiers: CXL ok (1 TB, per-tier columns), NVMe refused by the engine.
  const SweepData lower =
      table("memory-tiers-lower",
            {"workload", "memory", "cxl_capacity", "nvme_capacity", "replicate", "status", "error",
             "throughput_rps", "ttft_mean_s", "ttft_p50_s", "ttft_p99_s", "bytes_loaded_total",
             "tiers_dram_hit_chunks", "tiers_cxl_hit_chunks", "tiers_cxl_loaded_bytes",
             "tiers_cxl_load_time_share"},
            {{"docfinqa", "dram-256GB+cxl", "1 TB", "0 B", "0", "ok", "", "2", "1", "1", "2",
              "1e12", "10", "40", "5e11", "0.5"},
             {"docfinqa", "dram-256GB+cxl", "1 TB", "0 B", "1", "ok", "", "2", "1", "1", "2",
              "1e12", "30", "60", "5e11", "0.3"},
             {"docfinqa", "dram-256GB+nvme", "0 B", "2 TB", "0", "invalid", "unknown key 'tiers'",
              "", "", "", "", "", "", "", "", ""}});
  const std::string md = report::section_memory_tiers(&dram, &lower, "");
  EXPECT_NE(md.find("### 8.6 Memory tiers"), std::string::npos);
  // Replicate means with intervals: throughput 2 (n=2, zero spread), TTFT p50 of the capped node
  // (10 + 12) / 2 = 11.
  EXPECT_NE(md.find("| docfinqa | dram-256GB | 1 ± 0 (n=2)"), std::string::npos) << md;
  EXPECT_NE(md.find("| 11 ± 13 (n=2) |"), std::string::npos)
      << md;  // t(0.975,1) 12.706 × sd √2 / √2
  EXPECT_NE(md.find("not simulated: unknown key 'tiers'"), std::string::npos) << md;
  // Per-level figures: DRAM hits (10 + 30) / 2 = 20; CXL hits (40 + 60) / 2 = 50, 5e11 B = 500
  // GB, load time share (0.5 + 0.3) / 2 = 40%.
  EXPECT_NE(md.find("dram 20 hits; cxl 50 hits, 500 GB (40% of load time)"), std::string::npos)
      << md;
  // Cost per 1k requests at the mid prices ($10/GB DRAM and CXL), $2.35 × 8 GPUs per hour, 4
  // years: 2 TB node at 2 req/s: (8 × 2.35 / 3600 + 2000 × 10 / 126230400) / 2 × 1000
  //   = (0.0052222 + 0.00015844) / 2 × 1000 = 2.690;
  // capped at 1 req/s: (0.0052222 + 2560 / 126230400) × 1000 = 5.242;
  // + CXL at 2 req/s: (0.0052222 + (2560 + 10000) / 126230400) / 2 × 1000 = 2.661.
  EXPECT_NE(md.find("| docfinqa | dram-2TB | 2 ± 0 (n=2) |"), std::string::npos) << md;
  // Each a mean over the two replicates with its interval (equal replicates here: ± 0).
  EXPECT_NE(md.find("| 2.69"), std::string::npos) << md;
  EXPECT_NE(md.find("| 5.24"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2.66"), std::string::npos) << md;
  EXPECT_NE(md.find("± 0 (n=2) |\n"), std::string::npos) << md;
  // Conclusions against the 2 TB node: the capped node at 0.5× its throughput, the CXL node 1×.
  EXPECT_NE(md.find("docfinqa, dram-256GB: throughput 1 req/s (0.5× the 2 TB node's)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("docfinqa, dram-256GB+cxl: throughput 2 req/s (1× the 2 TB node's)"),
            std::string::npos)
      << md;
  // The capped node's TTFT p50 is paired with the 2 TB node's: differences 9 and 11, mean 10,
  // half-width 12.706 × 1.414 / 1.414 = 12.7: the interval contains 0.
  EXPECT_NE(md.find("within the replicate spread of the 2 TB node's"), std::string::npos) << md;

  // Memory's largest share of a cost per request: the 2 TB node at the high prices, 2000 GB ×
  // $19 / 126,230,400 s = 3.0104e-4 $/s against 8 × 2.35 / 3600 = 5.2222e-3 $/s of GPU:
  // 3.0104e-4 / 5.5233e-3 = 5.45% (the CXL node: 256 × 19 + 1000 × 22 = $26,864 → 3.92%).
  EXPECT_NE(md.find("Memory is at most 5.45% of any configuration's cost"), std::string::npos)
      << md;
  // A lower-tier row that ran but reported no figures for its tier ran without it: refused.
  SweepData silent = lower;
  for (auto& row : silent.table.rows)
    for (int c : {silent.table.col("tiers_cxl_hit_chunks")}) row[static_cast<std::size_t>(c)] = "";
  const std::string md3 = report::section_memory_tiers(&dram, &silent, "");
  EXPECT_NE(md3.find("| docfinqa | dram-256GB+cxl | not simulated: the run reported no figures"),
            std::string::npos)
      << md3;

  // Without the lower sweep, its rows say why.
  const std::string md2 = report::section_memory_tiers(&dram, nullptr, "h-tiers not merged");
  EXPECT_NE(md2.find("| docfinqa | dram-256GB+nvme | not simulated: h-tiers not merged |"),
            std::string::npos)
      << md2;
}

// Issue 22 item 4: the memory tiers at saturation. Capacity at the SLO (kind capacity): the 2 TB
// node 4 req/s [3, 5], the CXL node 2 [1.5, 2.5] (apart: lower), the capped node never met
// (below the lowest load probed). Cost per 1k requests at the mid prices as in the test above:
// 2 TB node (0.0052222 + 0.00015844) / 4 × 1000 = 1.345, at the interval's ends / 5 = 1.076 and
// / 3 = 1.794; CXL node (1 TB) (0.0052222 + 12560 / 126230400) / 2 × 1000 = 2.661, so 1.98× the
// 2 TB node's.
TEST(ReportStudies, MemoryTiersAtSaturationComparesCapacitiesAndTheirCost) {
  const std::vector<std::string> cols = {"workload", "memory", "replicate",
                                         "status",   "error",  "throughput_rps"};
  const SweepData dram = table("memory-tiers-dram", cols,
                               {{"docfinqa", "dram-2TB", "0", "ok", "", "2"},
                                {"docfinqa", "dram-256GB", "0", "ok", "", "1"}});
  SweepData cap =
      table("memory-tiers-capacity",
            {"point", "workload", "memory", "cxl_capacity", "nvme_capacity", "status", "error",
             "capacity_rps", "capacity_rps_lo", "capacity_rps_hi", "capacity_lower_bound",
             "replicates_never_met", "at_capacity_tier_hit_rate"},
            {{"0", "docfinqa", "dram-2TB", "0 B", "0 B", "ok", "", "4", "3", "5", "0", "0", "1"},
             {"1", "docfinqa", "dram-256GB", "0 B", "0 B", "ok", "", "", "", "", "0", "3", ""},
             {"2", "docfinqa", "dram-256GB+cxl", "1 TB", "0 B", "ok", "", "2", "1.5", "2.5", "0",
              "0", "0.5"},
             // A t interval reaching below 0 (three widely spread seeds): shown from 0, marked.
             {"3", "docfinqa", "dram-256GB+nvme", "0 B", "1 TB", "ok", "", "0.1", "-0.03", "0.26",
              "0", "0", "0.4"}});
  cap.dir = "/nonexistent-sweep";  // no point configs: the SLO and lowest load read as unknown
  report::ConclusionLog log;
  const std::string md = report::section_memory_tiers(&dram, nullptr, "", &cap, &log);
  EXPECT_NE(md.find("| kernel | docfinqa | dram-2TB | 4 [3, 5] | 100% | 1.35 [1.08, 1.79] |"),
            std::string::npos)
      << md;
  EXPECT_NE(
      md.find("| kernel | docfinqa | dram-256GB | < — (SLO missed at the lowest load probed)"),
      std::string::npos)
      << md;
  // No per-seed capacities beside the points (files/replicates.csv): the unpaired test.
  EXPECT_NE(md.find("docfinqa, dram-256GB+cxl (kernel): capacity 0.5× the 2 TB node's (2 vs 4 "
                    "req/s, lower (the intervals do not overlap)); cost per request at capacity "
                    "1.98× the 2 TB node's"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| kernel | docfinqa | dram-256GB+nvme | 0.1 [0†, 0.26] |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("† The 95% t interval's low end falls below 0"), std::string::npos) << md;
  EXPECT_EQ(md.find("-0.03"), std::string::npos) << md;
  // The capped node, the CXL node and the NVMe node, against the 2 TB node.
  ASSERT_EQ(log.rows().size(), 3u);
  EXPECT_EQ(log.rows()[0].section, "8.6");
}

// Review M6: the capacity points run the same workload seeds, so 8.6 pairs them seed by seed
// (files/replicates.csv of each point). The 2 TB node's seeds give 10, 11, 15 req/s and the CXL
// node's 9, 10, 14: their intervals overlap (means 12 and 11, each ± 6.6), but every seed loses
// exactly 1 req/s, so the paired difference is −1 ± 0 (n=3): lower. An NVMe node equal to the
// 2 TB node in every seed reads "the same in every seed"; one seed that never met the SLO
// (empty capacity) is left out of the pairs.
TEST(ReportStudies, MemoryTiersAtSaturationPairsTheCapacitiesBySeed) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("kappasim-report-capacity-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto replicates = [&](int point, const std::vector<std::string>& caps) {
    const fs::path files = dir / "points" / ("p00000" + std::to_string(point)) / "files";
    fs::create_directories(files);
    std::ofstream f(files / "replicates.csv");
    f << "replicate,seed,status,capacity_rps\n";
    for (std::size_t i = 0; i < caps.size(); ++i)
      f << i << "," << 100 + i << "," << (caps[i].empty() ? "never_met" : "found") << "," << caps[i]
        << "\n";
  };
  replicates(0, {"10", "11", "15"});
  replicates(1, {"9", "10", "14"});
  replicates(2, {"10", "11", "15"});
  replicates(3, {"9", "", "14"});
  const std::vector<std::string> cols = {"workload", "memory", "replicate",
                                         "status",   "error",  "throughput_rps"};
  const SweepData dram =
      table("memory-tiers-dram", cols, {{"docfinqa", "dram-2TB", "0", "ok", "", "2"}});
  SweepData cap = table(
      "memory-tiers-capacity",
      {"point", "workload", "memory", "cxl_capacity", "nvme_capacity", "status", "error",
       "capacity_rps", "capacity_rps_lo", "capacity_rps_hi", "capacity_lower_bound",
       "replicates_never_met", "at_capacity_tier_hit_rate"},
      {{"0", "docfinqa", "dram-2TB", "0 B", "0 B", "ok", "", "12", "5.4", "18.6", "0", "0", "1"},
       {"1", "docfinqa", "dram-256GB+cxl", "1 TB", "0 B", "ok", "", "11", "4.4", "17.6", "0", "0",
        "1"},
       {"2", "docfinqa", "dram-256GB+nvme", "0 B", "1 TB", "ok", "", "12", "5.4", "18.6", "0", "0",
        "1"},
       {"3", "docfinqa", "dram-2TB+cxl", "1 TB", "0 B", "ok", "", "11.5", "-52", "75", "0", "1",
        "1"}});
  cap.dir = dir.string();
  const std::string md = report::section_memory_tiers(&dram, nullptr, "", &cap, nullptr);
  fs::remove_all(dir);
  EXPECT_NE(md.find("dram-256GB+cxl (kernel): capacity 0.917× the 2 TB node's (11 vs 12 req/s, "
                    "lower (paired difference in req/s: -1 ± 0 (n=3)))"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("dram-256GB+nvme (kernel): capacity 1× the 2 TB node's (12 vs 12 req/s, the "
                    "same in every seed (to 9 significant digits))"),
            std::string::npos)
      << md;
  // Seeds 100 and 102 pair (9 − 10, 14 − 15): −1 ± 0 (n=2).
  EXPECT_NE(md.find("(paired difference in req/s: -1 ± 0 (n=2))"), std::string::npos) << md;
  // A capacity that is not a number is an input error naming the file.
  replicates(1, {"9", "ten", "14"});
  try {
    report::section_memory_tiers(&dram, nullptr, "", &cap, nullptr);
    ADD_FAILURE() << "a malformed replicates.csv was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("p000001/files/replicates.csv: capacity_rps 'ten'"),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(ReportStudies, ParallelismKappaFollowsTheLatentReplication) {
  const auto k = report::parallelism_kappa("dgx-h100", "fp8");
  const report::LayoutKappa* ds_tp = nullptr;
  const report::LayoutKappa* ds_dp = nullptr;
  for (const auto& x : k) {
    if (x.model == "deepseek-v3" && x.layout == "tp=8") ds_tp = &x;
    if (x.model == "deepseek-v3" && x.layout == "tp=1,dp_attention=8,ep=8") ds_dp = &x;
  }
  ASSERT_TRUE(ds_tp && ds_dp);
  // DeepSeek-V3's latent: (512 + 64) × 2 B × 61 layers = 70,272 B per token (mission.md); TP-8
  // holds it whole on every rank (8 copies, 70,272 B per GPU), DP-8 one copy split over the
  // ranks' requests: 70,272 / 8 = 8,784 B per replica token per GPU.
  EXPECT_NEAR(ds_tp->b_kv_share, 70272, 1e-6);
  EXPECT_NEAR(ds_tp->kv_replication, 8, 1e-9);
  EXPECT_NEAR(ds_dp->b_kv_share, 8784, 1e-6);
  EXPECT_NEAR(ds_dp->kv_replication, 1, 1e-9);
  // Same F per GPU on 8 GPUs, 8× fewer bytes: κ_crit 8× higher.
  EXPECT_NEAR(ds_dp->kappa_crit / ds_tp->kappa_crit, 8, 1e-9);
  // 671 B parameters in FP8 over 8 GPUs ≈ 84 GB > 72 GB: TP-8 does not fit one node.
  EXPECT_FALSE(ds_tp->fits);

  // The section renders the analytic rows and a refused serving row with its reason.
  const SweepData serving =
      table("parallelism",
            {"workload", "model", "layout", "replicate", "status", "error", "throughput_rps",
             "ttft_mean_s", "ttft_p50_s", "ttft_p99_s", "gpu_utilization", "link_busy_fraction"},
            {{"sharegpt", "qwen3-235b-a22b", "tp=8", "0", "ok", "", "70", "0.1", "0.1", "0.2",
              "0.5", "0.1"},
             {"sharegpt", "qwen3-235b-a22b", "tp=1,dp_attention=8,ep=8", "0", "invalid",
              "serving.parallelism.dp_attention: 8 is not simulated yet", "", "", "", "", "", ""}});
  const std::string md = report::section_parallelism(k, &serving, "");
  EXPECT_NE(md.find("### 8.7 Parallelism"), std::string::npos);
  EXPECT_NE(md.find("| kernel | sharegpt | qwen3-235b-a22b | tp=8 | 70 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("not simulated: serving.parallelism.dp_attention: 8 is not simulated yet"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("κ_crit rises 8× to"), std::string::npos) << md;
  const std::string md2 = report::section_parallelism(k, nullptr, "h-dp not merged");
  EXPECT_NE(md2.find("not simulated: h-dp not merged"), std::string::npos) << md2;
}

// Issue 25, section 8.8: κ across generations. DGX A100 (presets/systems/a100.yaml): two A100s
// share one PCIe 4.0 x16 uplink: 16 GT/s × 16 lanes / 8 × 128/130 / 2 = 15.7538 GB/s per GPU;
// A100 dense BF16 peak 312 TFLOP/s (datasheet) → κ_HW = 15.7538e9 / 312e12. The A100 has no
// FP8 peak, so its FP8 row is an error naming the precision, not a number.
// Issue 25: the attention-variant rows of 8.8 (B200, BF16, TP 1). gpt-oss-120b: unified
// 36 layers × 2048 B = 73,728 B per token; hybrid at K = 100,000: 3,691,118,592 B / 100,000 =
// 36,911.18592 B (docs/accounting.md), so κ_crit doubles less a hair: 73,728 / 36,911.18592.
// Qwen3-Next has no unified value (NaN); at K → ∞ its B_kv is the 12 full layers' 24,576 B.
TEST(ReportStudies, AttentionVariantRowsCompareUnifiedAndHybridKv) {
  const report::GenerationsKappa g = report::generations_kappa("bf16");
  const auto find = [&](const std::string& m) -> const report::GenerationsKappa::Variant& {
    for (const auto& v : g.variants)
      if (v.model == m) return v;
    throw std::logic_error("no variant row " + m);
  };
  const auto& oss = find("gpt-oss-120b");
  EXPECT_EQ(oss.kinds, "18 F + 18 S");
  EXPECT_DOUBLE_EQ(oss.b_kv_unified, 73728.0);
  ASSERT_EQ(oss.b_kv_hybrid.size(), 3u);
  EXPECT_NEAR(oss.b_kv_hybrid[1], 36911.18592, 1e-6);
  EXPECT_NEAR(oss.kappa_crit_hybrid[1] / oss.kappa_crit_unified, 73728 / 36911.18592, 1e-9);
  const auto& next = find("qwen3-next-80b-a3b");
  EXPECT_TRUE(std::isnan(next.b_kv_unified));
  EXPECT_DOUBLE_EQ(next.b_kv_hybrid[2], 24576.0);
  EXPECT_NE(next.unified_note.find("linear-attention"), std::string::npos);
}

TEST(ReportStudies, GenerationsRowsComeFromThePresetsPerGpu) {
  const report::GenerationsKappa bf16 = report::generations_kappa("bf16");
  const report::GenerationsKappa fp8 = report::generations_kappa("fp8");
  ASSERT_FALSE(bf16.rows.empty());
  const report::GenerationRow& a100 = bf16.rows.front();
  ASSERT_EQ(a100.system, "a100");
  ASSERT_TRUE(a100.error.empty()) << a100.error;
  const double bw = 16e9 * 16 / 8 * 128.0 / 130.0 / 2;
  EXPECT_NEAR(a100.bandwidth, bw, 1e-6 * bw);
  EXPECT_DOUBLE_EQ(a100.compute, 312e12);
  EXPECT_NEAR(a100.kappa_hw, bw / 312e12, 1e-9 * bw / 312e12);
  ASSERT_EQ(a100.kappa_crit.size(), bf16.columns.size());
  // κ_crit = κ_M · κ_HW in every column.
  for (std::size_t c = 0; c < a100.kappa_crit.size(); ++c)
    EXPECT_NEAR(a100.kappa_crit[c], a100.kappa_m[c] * a100.kappa_hw, 1e-9 * a100.kappa_crit[c]);
  // gpt-oss-120b: the unified cache keeps all 36 layers' tokens, the window leaves the 18 full
  // layers' (K → ∞): half the B_kv, twice the κ_crit.
  EXPECT_NEAR(a100.kappa_crit[3], 2 * a100.kappa_crit[4], 1e-9 * a100.kappa_crit[3]);
  // Gemma-3-27B: 62 layers kept against its 10 global ones, 6.2× (docs/accounting.md).
  bool gemma = false;
  for (const auto& [m, gain] : bf16.window_gain)
    if (m == "gemma-3-27b") {
      gemma = true;
      EXPECT_NEAR(gain, 6.2, 1e-12);
    }
  EXPECT_TRUE(gemma);
  EXPECT_EQ(fp8.rows.front().system, "a100");
  EXPECT_NE(fp8.rows.front().error.find("fp8"), std::string::npos) << fp8.rows.front().error;
}

// The bandwidth a request needs (Eq. 6 solved for BW): κ_ratio · C / κ_M; κ_ratio 1000 on a
// 1 PFLOP/s part with κ_M 1e5 needs 1e13 B/s. The claim's verdicts follow the κ_HW ratios.
TEST(ReportStudies, GenerationsVerdictsFollowTheRatios) {
  report::GenerationRow a;
  a.system = "a100";
  a.gpu = "ga";
  a.link = "la";
  a.compute = 1e15;
  a.bandwidth = 1e11;
  a.kappa_hw = 1e-4;
  a.kappa_m = {1e5, 1e5, 1e5, 2e5, 1e5};
  a.kappa_crit = {10, 10, 10, 20, 10};
  EXPECT_DOUBLE_EQ(report::bandwidth_needed(a, 0, 1000), 1e13);
  EXPECT_TRUE(std::isnan(report::bandwidth_needed(a, 9, 1000)));
  // h100: compute 2×, link 4× → κ_HW 2× (breaks); b200: compute 2×, link 1× → 0.5× (holds).
  report::GenerationRow h = a, b = a;
  h.system = "h100";
  h.compute = 2e15;
  h.bandwidth = 4e11;
  h.kappa_hw = 2e-4;
  b.system = "b200";
  b.compute = 4e15;
  b.bandwidth = 4e11;
  b.kappa_hw = 1e-4;
  report::GenerationsKappa g;
  g.dtype = "bf16";
  g.columns = {"m0", "m1", "m2", "m3", "m4"};
  g.rows = {a, h, b};
  g.window_gain = {{"m3", 2.0}};
  const std::string md = report::section_generations(g, g, g, nullptr, {{"chat", 500}});
  EXPECT_NE(md.find("a100 → h100: compute 2×, link 4×, κ_HW 2×: **breaks**"), std::string::npos)
      << md;
  EXPECT_NE(md.find("h100 → b200: compute 2×, link 1×, κ_HW 0.5×: **holds**"), std::string::npos)
      << md;
  // a100 needs 500 · 1e15 / 1e5 = 5e12 B/s = 5000 GB/s against its 100.
  EXPECT_NE(md.find("| a100 | 100 | 5000 |"), std::string::npos) << md;
  // The window's gain on the unified cache, as given.
  EXPECT_NE(md.find("the window leaves m3 2× the κ_crit"), std::string::npos) << md;
}

// The simulated part of 8.8: each step's analytic and simulated κ_crit ratios side by side, a
// failed point with its reason, and the PCIe 6 line conditional on the outstanding-read limits
// when the achieved load rate grows much less than the link's peak (1.1× against 2×).
TEST(ReportStudies, GenerationsSimulatedStepsAndTheConditionalLink) {
  report::GenerationsKappa g;
  g.columns = {"m0", "m1", "m2", "m3", "m4"};
  const std::vector<std::string> cols = {"model",
                                         "system",
                                         "serving.tp",
                                         "status",
                                         "error",
                                         "kappa_crit_simulated",
                                         "kappa_crit_analytic_peak",
                                         "link_binds_from_start",
                                         "link_never_binds",
                                         "kappa_max",
                                         "h2d_load_bytes_per_s",
                                         "h2d_peak_bytes_per_s",
                                         "load_bound_share_read_tags"};
  const SweepData sim = table(
      "generations", cols,
      {{"llama-3.1-70b", "h100", "8", "ok", "", "120", "30", "0", "0", "1000", "30e9", "60e9"},
       {"llama-3.1-70b", "b200", "8", "ok", "", "90", "12", "0", "0", "1000", "30e9", "60e9"},
       {"llama-3.1-70b", "hgx-b300", "8", "ok", "", "90", "12", "0", "0", "1000", "30e9", "60e9"},
       {"llama-3.1-70b", "hgx-b300-gen6", "8", "ok", "", "99", "24", "0", "0", "1000", "33e9",
        "120e9", "0.8"},
       {"llama-3.1-70b", "gh200", "1", "invalid", "does not fit", "", "", "", "", "", "", ""},
       // Rubin against GB300, the two at different TP: the step's simulated ratio would mix
       // the TP change with the part's, so it is not given.
       {"llama-3.1-70b", "gb300", "1", "ok", "", "100", "40", "0", "0", "1000", "30e9", "60e9"},
       {"llama-3.1-70b", "vr200", "2", "ok", "", "80", "24", "0", "0", "1000", "30e9", "60e9"},
       // A part whose simulated κ_crit sits below its analytic one (76 / 331 = 0.23×).
       {"llama-3.1-70b", "mi300a", "4", "ok", "", "76", "331", "0", "0", "1000", "30e9", "60e9"}});
  const std::string md = report::section_generations(g, g, g, &sim, {});
  EXPECT_NE(md.find("gb300 → vr200 analytic 0.6×, simulated n/a (TP 1 vs TP 2)"), std::string::npos)
      << md;
  EXPECT_NE(md.find("so it sits above the analytic one except on mi300a (llama-3.1-70b, 0.23×) "
                    "(1 of 7 rows;"),
            std::string::npos)
      << md;
  // h100 → b200: analytic 12 / 30 = 0.4, simulated 90 / 120 = 0.75.
  EXPECT_NE(md.find("h100 → b200 analytic 0.4×, simulated 0.75×"), std::string::npos) << md;
  EXPECT_NE(md.find("| llama-3.1-70b | gh200 | 1 | — |"), std::string::npos) << md;
  EXPECT_NE(md.find("does not fit"), std::string::npos) << md;
  EXPECT_NE(md.find("the link's peak grows 2×, the achieved load rate 1.1×, simulated κ_crit 1.1×. "
                    "Conditional on the outstanding-read limits"),
            std::string::npos)
      << md;
}

}  // namespace
}  // namespace report_studies_test
}  // namespace kappasim
