// The serving engine's KV tiers below host DRAM (issue 14; serving/engine_tiers.cpp): hits by
// level when DRAM is too small, write-through vs write-back stored bytes, per-level summary
// figures, prefetch, bad inputs. Hand numbers in the comments; one simulation per test process.
#include <gtest/gtest.h>

#include <systemc>

#include <map>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "serving/engine.hpp"
#include "tests/sim/serving_test_util.hpp"

namespace kappasim {
namespace {

using namespace kappasim::testing;

constexpr double kChunkTokens = 256;                 // chunk_tokens
const double kChunkBytes = kChunkTokens * kBkv8b;  // 33,554,432 B (TP 1: the whole replica)

// Llama-3.1-8B on one H100 (TP 1) with one CXL expander and one NVMe drive given inline (the
// figures are this test's own, not a preset's: 15.75 GB/s PCIe 5 x4 drive, 13 GB/s sequential
// read, 2.5 M x 4 KiB IOPS = 10.24 GB/s, QD 256, 70 us), DRAM tier 4 chunks, CXL 8, NVMe 64.
std::string tiered_config(const std::string& tiers) {
  return std::string(
             "model: llama-3.1-8b\n"
             "system: {preset: h100, gpu: {preset: h100-sxm5, copy_kernel_load_width: 16 B},\n"
             "  cxl_devices: 1, cxl: {capacity: 256 GB, rate_per_lane: 32 GT/s, lanes: 8,\n"
             "    flit_bytes: 68 B, flit_data_bytes: 64 B, added_latency: 170 ns},\n"
             "  nvme_drives: 1, nvme: {capacity: 3.84 TB, rate_per_lane: 32 GT/s, lanes: 4,\n"
             "    seq_read_bandwidth: 13 GB/s, seq_write_bandwidth: 6.6 GB/s, read_iops: 2500000,\n"
             "    write_iops: 250000, queue_depth: 256, read_latency: 70 us}}\n"
             "trace: false\nworkload: {type: narrativeqa}\n"
             "serving: {" KAPPASIM_TEST_STACK "tp: 1, load_path: kernel, store: blocking,\n"
             "  tier_capacity: 134217728 B,\n"  // 4 chunks of 32 MiB
             "  tiers: {cxl_capacity: 268435456 B, nvme_capacity: 2147483648 B, ") +  // 8, 64
         tiers + "}}\n";
}

struct Outcome {
  std::vector<RequestRecord> recs;
  SummaryBuilder::Totals totals;
  std::map<std::string, double> level;  // the per-level summary figures
  const RequestRecord& rec(std::uint64_t id) const {
    for (const auto& r : recs)
      if (r.id == id) return r;
    throw std::logic_error("no record for request " + std::to_string(id));
  }
};

Outcome serve(const RunSpec& spec, std::vector<Request> rs) {
  VectorSource src(std::move(rs));
  Outcome out;
  EngineSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r) { out.recs.push_back(r); };
  out.totals = run_serving(spec, src, sinks);
  for (const auto& [k, v] : out.totals.tier_levels) out.level[k] = v;
  return out;
}

TEST(ServingTiers, WriteThroughHitsComeFromTheLevelThatStillHoldsEachChunk) {
  const RunSpec spec = run_spec(tiered_config("write: write_through, promote_on_hit: false"));
  // Request 1 (document 7): 4096 prefix + 128 new tokens = 16 full chunks, nothing cached; its
  // store puts all 16 in every level: DRAM keeps the last 4 (12-15), CXL the last 8 (8-15),
  // NVMe all 16. Request 2 (same document, after 1 finished) finds 0-7 in NVMe, 8-11 in CXL,
  // 12-15 in DRAM: 16 hit chunks, 8 + 4 + 4.
  const Outcome o = serve(spec, {request(1, 0, 4096, 128, 7), request(2, 1.0, 4096, 128, 7)});
  ASSERT_EQ(o.recs.size(), 2u);
  EXPECT_EQ(o.rec(2).cached_tokens, 4096);
  EXPECT_EQ(o.level.at("tiers_dram_hit_chunks"), 4);
  EXPECT_EQ(o.level.at("tiers_cxl_hit_chunks"), 4);
  EXPECT_EQ(o.level.at("tiers_nvme_hit_chunks"), 8);
  // Bytes loaded by level: 4, 4 and 8 chunks of 32 MiB.
  EXPECT_DOUBLE_EQ(o.level.at("tiers_dram_loaded_bytes"), 4 * kChunkBytes);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_cxl_loaded_bytes"), 4 * kChunkBytes);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_loaded_bytes"), 8 * kChunkBytes);
  EXPECT_DOUBLE_EQ(o.rec(2).bytes_loaded, 16 * kChunkBytes);
  // Write-through: request 1 stored 16 chunks in every level. Request 2's store walks 0-15
  // again: DRAM (4) and CXL (8) lost 0-11 / 0-7, and re-inserting those in order evicts the
  // rest before it is reached (an LRU scan longer than the level), so both store all 16 again;
  // NVMe holds all 16 and stores none. DRAM 32, CXL 32, NVMe 16.
  EXPECT_EQ(o.level.at("tiers_nvme_stored_chunks"), 16);
  EXPECT_EQ(o.level.at("tiers_cxl_stored_chunks"), 32);
  EXPECT_EQ(o.level.at("tiers_dram_stored_chunks"), 32);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_stored_bytes"), 16 * kChunkBytes);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_cxl_stored_bytes"), 32 * kChunkBytes);
  EXPECT_EQ(o.level.at("tiers_cxl_demoted_in_chunks"), 0);
  // The load time shares are of one load group: each level's span within it.
  EXPECT_GT(o.level.at("tiers_nvme_load_time_share"), 0);
  EXPECT_LE(o.level.at("tiers_nvme_load_time_share"), 1);
}

TEST(ServingTiers, WriteBackStoresDramOnlyAndDemotesItsEvictions) {
  const RunSpec spec = run_spec(tiered_config("write: write_back, promote_on_hit: false"));
  // One request of 16 chunks: DRAM (4) stores all 16, evicting 0-11 one by one into CXL (8),
  // which evicts 0-3 into NVMe. Stored: DRAM 16; demoted: CXL 12 (384 MiB), NVMe 4 (128 MiB).
  // Write-through would have written 16 chunks into each lower level (2 x 512 MiB).
  const Outcome o = serve(spec, {request(1, 0, 4096, 128, 7)});
  EXPECT_EQ(o.level.at("tiers_dram_stored_chunks"), 16);
  EXPECT_EQ(o.level.at("tiers_cxl_stored_chunks"), 0);
  EXPECT_EQ(o.level.at("tiers_nvme_stored_chunks"), 0);
  EXPECT_EQ(o.level.at("tiers_dram_demoted_out_chunks"), 12);
  EXPECT_EQ(o.level.at("tiers_cxl_demoted_in_chunks"), 12);
  EXPECT_EQ(o.level.at("tiers_cxl_demoted_out_chunks"), 4);
  EXPECT_EQ(o.level.at("tiers_nvme_demoted_in_chunks"), 4);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_cxl_demoted_bytes"), 12 * kChunkBytes);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_demoted_bytes"), 4 * kChunkBytes);
  EXPECT_DOUBLE_EQ(o.rec(1).bytes_stored, 16 * kChunkBytes);  // the D2H to DRAM only
}

TEST(ServingTiers, WriteThroughWritesEveryChunkToEveryLevel) {
  const RunSpec spec = run_spec(tiered_config("write: write_through"));
  const Outcome o = serve(spec, {request(1, 0, 4096, 128, 7)});
  for (const char* l : {"dram", "cxl", "nvme"})
    EXPECT_EQ(o.level.at(std::string("tiers_") + l + "_stored_chunks"), 16) << l;
  EXPECT_DOUBLE_EQ(o.level.at("tiers_cxl_stored_bytes"), 16 * kChunkBytes);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_stored_bytes"), 16 * kChunkBytes);
  EXPECT_EQ(o.level.at("tiers_cxl_demoted_in_chunks"), 0);
}

TEST(ServingTiers, PromotionOnHitCopiesLowerHitsIntoDram) {
  const RunSpec spec = run_spec(tiered_config("write: write_through, promote_on_hit: true"));
  // As the first test: request 2 hits 8 NVMe, 4 CXL, 4 DRAM chunks; the 12 lower hits are
  // promoted (counted at their level), the NVMe ones through the bounce buffer (no extra copy).
  const Outcome o = serve(spec, {request(1, 0, 4096, 128, 7), request(2, 1.0, 4096, 128, 7)});
  EXPECT_EQ(o.level.at("tiers_nvme_promoted_out_chunks"), 8);
  EXPECT_EQ(o.level.at("tiers_cxl_promoted_out_chunks"), 4);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_promoted_bytes"), 8 * kChunkBytes);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_cxl_promoted_bytes"), 4 * kChunkBytes);
}

std::string error_of(const std::string& yaml) {
  try {
    const RunSpec spec = run_spec(yaml);
    spec.validate("");
    serve(spec, {request(1, 0, 1024, 128)});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ServingTiers, BadTierInputsNameTheKey) {
  // NVMe tier of 4 TB on one 3.84 TB drive.
  std::string y = tiered_config("nvme_capacity: 4 TB");
  y.replace(y.find("nvme_capacity: 2147483648 B, "), std::string("nvme_capacity: 2147483648 B, ").size(), "");
  EXPECT_NE(error_of(y).find("serving.tiers.nvme_capacity"), std::string::npos) << error_of(y);
  // A CXL tier on a system without expanders.
  const std::string none =
      "model: llama-3.1-8b\nsystem: h100\ntrace: false\nworkload: {type: narrativeqa}\n"
      "serving: {tp: 1, tiers: {cxl_capacity: 1 GB}}\n";
  EXPECT_NE(error_of(none).find("no CXL expander"), std::string::npos) << error_of(none);
  // The packet back end carries host DRAM only.
  const std::string packet = tiered_config("write: write_through") ;
  std::string p = packet;
  p.replace(p.find("tp: 1,"), 6, "tp: 1, link_fidelity: packet,");
  EXPECT_NE(error_of(p).find("serving.tiers"), std::string::npos) << error_of(p);
}

}  // namespace
}  // namespace kappasim
