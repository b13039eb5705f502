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
namespace serving_tiers_test {
namespace {

using namespace kappasim::testing;

constexpr double kChunkTokens = 256;               // chunk_tokens
const double kChunkBytes = kChunkTokens * kBkv8b;  // 33,554,432 B (TP 1: the whole replica)

// Llama-3.1-8B on one H100 (TP 1) with one CXL expander and one NVMe drive given inline (the
// figures are this test's own, not a preset's: 15.75 GB/s PCIe 5 x4 drive, 13 GB/s sequential
// read, 2.5 M x 4 KiB IOPS = 10.24 GB/s, QD 256, 70 us), DRAM tier 4 chunks, CXL 8, NVMe 64.
std::string tiered_config(const std::string& tiers) {
  return std::string(
             "model: llama-3.1-8b\n"
             "system: {preset: h100,\n"
             "  cxl_devices: 1, cxl_lanes: 8, nvme_slots: 1,\n"
             "  cxl: {capacity: 256 GB, rate_per_lane: 32 GT/s, lanes: 8,\n"
             "    flit_bytes: 68 B, flit_data_bytes: 64 B, added_latency: 170 ns},\n"
             "  nvme_drives: 1, nvme: {capacity: 3.84 TB, rate_per_lane: 32 GT/s, lanes: 4,\n"
             "    seq_read_bandwidth: 13 GB/s, seq_write_bandwidth: 6.6 GB/s, read_iops: 2500000,\n"
             "    write_iops: 250000, queue_depth: 256, read_latency: 70 us}}\n"
             "trace: false\nworkload: {type: narrativeqa}\n"
             "serving: {" KAPPASIM_TEST_STACK
             "tp: 1, load_path: kernel, store: blocking,\n"
             "  tier_capacity: 134217728 B,\n"  // 4 chunks of 32 MiB
             "  tiers: {cxl_capacity: 268435456 B, nvme_capacity: 2147483648 B, ") +  // 8, 64
         tiers +
         "}}\n";
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
  EXPECT_DOUBLE_EQ(o.level.at("tiers_dram_stored_bytes"), 16 * kChunkBytes);
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

// NVMe only (DRAM tier 0: every store to it is dropped), write-through: request 1 writes its 16
// chunks to the drive; request 2 (1 s later, the drive's writes long done: 512 MiB at 6.6 GB/s
// = 81 ms) loads all 16 from it. The load is one DMA transfer (GPU 0 <- drive 0 through the host
// bounce buffer, one 32 MiB I/O per chunk), bound by the drive's sequential read (13 GB/s; the
// IOPS bound 2.5e6 x 32 MiB and Little's law 256 x 32 MiB / 70 us are far above it, the bounce
// costs DRAM 2 bytes per byte of 225 GB/s and the host link's DMA read ~52 GB/s).
//   load = retrieve fixed 0.5 ms + 16 x 0.1 ms (test stack) + 16 DMA calls x 2.36 us + 15 extra
//          latencies (dma_stream_fixed_s: each back-to-back copy after the first waits its path's
//          first byte, CopyEngine::start) + the first byte, each 70 us drive read latency + 1 us
//          DMA read round trip of the bounce buffer, + 16 x 32 MiB / 13 GB/s.
TEST(ServingTiers, NvmeChunksLoadAtTheDrivesSequentialReadAfterItsLatency) {
  std::string y = tiered_config("write: write_through, promote_on_hit: false");
  y.replace(y.find("tier_capacity: 134217728 B"), std::string("tier_capacity: 134217728 B").size(),
            "tier_capacity: 0 B");
  y.replace(y.find("cxl_capacity: 268435456 B, "),
            std::string("cxl_capacity: 268435456 B, ").size(), "");
  const RunSpec spec = run_spec(y);
  const Outcome o = serve(spec, {request(1, 0, 4096, 128, 7), request(2, 1.0, 4096, 128, 7)});
  ASSERT_EQ(o.level.at("tiers_nvme_hit_chunks"), 16);
  ASSERT_EQ(o.level.at("tiers_dram_hit_chunks"), 0);
  constexpr double kDmaOverhead = 2.36e-6;  // presets/gpus/h100-sxm5.yaml dma_copy_overhead
  const double bytes = 16 * kChunkBytes;
  const double first_byte = 70e-6 + kRtt;
  const double copy = 16 * kDmaOverhead + 16 * first_byte + bytes / 13e9;
  const double load = kRetrieveFixed + 16 * kRetrievePerChunk + copy;
  EXPECT_NEAR(o.rec(2).load_s, load, tol(load));
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_loaded_bytes"), bytes);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_load_time_share"), 1);
  // Achieved: the bytes over the transfer's span (first byte latency and DMA calls included).
  EXPECT_NEAR(o.level.at("tiers_nvme_load_bandwidth_per_gpu_Bps"), bytes / copy,
              1e-6 * bytes / copy);
}

// Prefetch: request 1 (document 1, 8192 new tokens to compute, nothing cached) holds the GPU;
// request 2 (document 7, 16 chunks in NVMe only) arrives while it runs and waits (max_num_seqs
// 1). With prefetch its chunks move up into DRAM while it waits, so its own load reads DRAM
// (kernel path, ~34 GB/s) and not the drive: shorter than the NVMe load of the test above
// (16 x (2.36 + 71) us + 512 MiB / 13 GB/s = 42.5 ms of copy) by more than 10 ms (from DRAM:
// 512 MiB / ~34 GB/s ~ 16 ms).
TEST(ServingTiers, PrefetchWhileQueuedLoadsFromDramInstead) {
  std::string y = tiered_config("write: write_through, promote_on_hit: false, prefetch: true");
  y.replace(y.find("tier_capacity: 134217728 B"), std::string("tier_capacity: 134217728 B").size(),
            "tier_capacity: 1 GB");
  y.replace(y.find("tp: 1,"), 6, "tp: 1, max_num_seqs: 1,");
  const RunSpec spec = run_spec(y);
  // Document 7 is written to every level by request 0 at t = 0; request 3 (document 9, 32
  // chunks) then evicts it from the 1 GB DRAM tier (29 chunks of 32 MiB fit) and from CXL (8),
  // leaving it in NVMe only.
  const Outcome o = serve(spec, {request(0, 0, 4096, 128, 7), request(3, 1.0, 8192, 128, 9),
                                 request(1, 2.0, 0, 8192, 1), request(2, 2.0001, 4096, 128, 7)});
  const double bytes = 16 * kChunkBytes;
  EXPECT_EQ(o.level.at("tiers_nvme_hit_chunks"), 16);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_prefetched_bytes"), bytes);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_loaded_bytes"), 0);  // nobody loaded from the drive
  EXPECT_DOUBLE_EQ(o.level.at("tiers_dram_loaded_bytes"), bytes);
  EXPECT_GT(o.rec(2).queue_s, 0);  // it did wait behind request 1
  const double nvme_copy = 16 * (2.36e-6 + 70e-6 + kRtt) + bytes / 13e9;
  const double nvme_load = kRetrieveFixed + 16 * kRetrievePerChunk + nvme_copy;
  EXPECT_LT(o.rec(2).load_s, nvme_load - 10e-3);
}

// admit_while_prefetching: request 2 (document 7, NVMe only, as above) arrives at an idle
// engine and is admitted at once; its load waits for its prefetch (16 x (2.36 + 71) us +
// 512 MiB / 13 GB/s from its arrival) less the step's 2 ms overhead, then reads DRAM.
TEST(ServingTiers, AdmittedWhilePrefetchingTheLoadWaitsForTheChunks) {
  std::string y = tiered_config(
      "write: write_through, promote_on_hit: false, prefetch: true, admit_while_prefetching: true");
  y.replace(y.find("tier_capacity: 134217728 B"), std::string("tier_capacity: 134217728 B").size(),
            "tier_capacity: 1 GB");
  const RunSpec spec = run_spec(y);
  const Outcome o = serve(spec, {request(0, 0, 4096, 128, 7), request(3, 1.0, 8192, 128, 9),
                                 request(2, 3.0, 4096, 128, 7)});
  const double bytes = 16 * kChunkBytes;
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_prefetched_bytes"), bytes);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_loaded_bytes"), 0);
  EXPECT_NEAR(o.rec(2).queue_s, 0, 1e-9);  // admitted at once
  const double prefetch = 16 * (2.36e-6 + 70e-6 + kRtt) + bytes / 13e9;
  EXPECT_NEAR(o.rec(2).time.load_wait_s, prefetch - kStepOverhead, 1e-6);
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

// Issue 25, serving.kv_cache: hybrid with tiers below DRAM: gpt-oss-20b (12 full, 12 sliding
// layers of W = 128; 2 × 8 KV heads × 64 × 2 B = 2048 B per layer and token, so 24,576 B per token
// for each kind). A stored chunk of 256 tokens keeps 256 full-layer tokens and the sliding layers'
// last 128 (served_kv_store_per_gpu): (256 + 128) × 24,576 = 9,437,184 B, and every level holds
// such chunks: DRAM 134,217,728 / 9,437,184 → 14 chunks, CXL 28, NVMe 227. Request 1 (16 chunks,
// write-through) leaves chunks 2-15 in DRAM and all 16 in CXL; request 2 loads chunks 0-1 from
// CXL, the rest from DRAM. Its load of K = 4096 moves 4096 × 24,576 + 128 × 24,576 =
// 103,809,024 B, of which CXL's chunks [0, 512) hold 512 × 24,576 = 12,582,912 B (no window, no
// state: those sit in the last chunk), not 2/16 of the load.
TEST(ServingTiers, HybridKvLevelsHoldTheStoredChunkAndLoadTheirOwnBytes) {
  std::string y = tiered_config("write: write_through, promote_on_hit: false");
  y.replace(y.find("llama-3.1-8b"), std::string("llama-3.1-8b").size(), "gpt-oss-20b");
  y.replace(y.find("tp: 1,"), 6, "tp: 1, kv_cache: hybrid,");
  const RunSpec spec = run_spec(y);
  spec.validate("");
  const Outcome o = serve(spec, {request(1, 0, 4096, 128, 7), request(2, 1.0, 4096, 128, 7)});
  ASSERT_EQ(o.recs.size(), 2u);
  const double chunk = (256.0 + 128) * 24576;
  EXPECT_DOUBLE_EQ(chunk, 9437184.0);
  EXPECT_EQ(o.rec(2).cached_tokens, 4096);
  EXPECT_EQ(o.level.at("tiers_cxl_hit_chunks"), 2);
  EXPECT_EQ(o.level.at("tiers_dram_hit_chunks"), 14);
  const double load = (4096.0 + 128) * 24576, cxl = 512.0 * 24576;
  EXPECT_DOUBLE_EQ(o.rec(2).bytes_loaded, load);
  EXPECT_NEAR(o.level.at("tiers_cxl_loaded_bytes"), cxl, 1e-6 * cxl);
  EXPECT_NEAR(o.level.at("tiers_dram_loaded_bytes"), load - cxl, 1e-6 * load);
  // Request 1 wrote its 16 chunks to NVMe (which keeps all): 16 stored chunks' bytes.
  EXPECT_EQ(o.level.at("tiers_nvme_stored_chunks"), 16);
  EXPECT_DOUBLE_EQ(o.level.at("tiers_nvme_stored_bytes"), 16 * chunk);
}

TEST(ServingTiers, BadTierInputsNameTheKey) {
  // NVMe tier of 4 TB on one 3.84 TB drive.
  std::string y = tiered_config("nvme_capacity: 4 TB");
  y.replace(y.find("nvme_capacity: 2147483648 B, "),
            std::string("nvme_capacity: 2147483648 B, ").size(), "");
  EXPECT_NE(error_of(y).find("serving.tiers.nvme_capacity"), std::string::npos) << error_of(y);
  // A CXL tier on a system without expanders.
  const std::string none =
      "model: llama-3.1-8b\nsystem: h100\ntrace: false\nworkload: {type: narrativeqa}\n"
      "serving: {tp: 1, tiers: {cxl_capacity: 1 GB}}\n";
  EXPECT_NE(error_of(none).find("no CXL expander"), std::string::npos) << error_of(none);
  // The packet back end carries host DRAM only.
  const std::string packet = tiered_config("write: write_through");
  std::string p = packet;
  p.replace(p.find("tp: 1,"), 6, "tp: 1, link_fidelity: packet,");
  EXPECT_NE(error_of(p).find("serving.tiers"), std::string::npos) << error_of(p);
}

}  // namespace
}  // namespace serving_tiers_test
}  // namespace kappasim
