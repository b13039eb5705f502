// serving/run_folder: the one "run a config into a folder" (kappasim run, the sweep's run kind,
// bench). A small NarrativeQA-like run of the paper config: every arrival is either completed
// (one requests.csv row each) or rejected, summary.json holds the same count, and the files
// written follow the options (requests.csv on request, trace.json only with `trace`). Counts,
// not timings: the timing is the engine's, tested in serving_engine_test. One simulation per TEST.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/config.hpp"
#include "serving/run_folder.hpp"

namespace kappasim {
namespace run_folder_test {
namespace {

namespace fs = std::filesystem;

constexpr int kRequests = 12;

RunSpec small_run(bool trace) {
  ConfigNode root = load_yaml_file(std::string(KAPPASIM_SOURCE_DIR) +
                                   "/experiments/paper/narrativeqa-70rps.yaml");
  apply_set(root, "workload.requests=" + std::to_string(kRequests));
  apply_set(root, std::string("trace=") + (trace ? "true" : "false"));
  return read_config<RunSpec>(root, "");
}

std::string fresh_dir(const char* name) {
  const fs::path d = fs::temp_directory_path() / (std::string("kappasim-run-folder-") + name + "-" +
                                                  std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double figure(const RunFolderResult& r, const std::string& name) {
  for (const auto& [k, v] : r.figures)
    if (k == name) return v;
  ADD_FAILURE() << "no figure " << name;
  return -1;
}

TEST(RunFolder, EveryArrivalIsOneRowOrRejectedAndTheFilesFollowTheOptions) {
  const std::string dir = fresh_dir("csv");
  const RunFolderResult r = run_into_folder(small_run(true), "", dir, true);
  // Every arrival finishes exactly once or is rejected (the engine's invariant).
  EXPECT_EQ(r.requests + r.totals.requests_rejected, static_cast<std::size_t>(kRequests));
  EXPECT_EQ(figure(r, "requests_completed"), static_cast<double>(r.requests));
  // requests.csv: a header line, then one line per completed request.
  const std::string csv = slurp(dir + "/requests.csv");
  std::size_t lines = 0;
  for (char c : csv) lines += c == '\n';
  EXPECT_EQ(lines, r.requests + 1);
  EXPECT_TRUE(fs::exists(dir + "/trace.json"));
  EXPECT_NE(
      slurp(dir + "/summary.json").find("\"requests_completed\": " + std::to_string(r.requests)),
      std::string::npos);
  fs::remove_all(dir);
}

TEST(RunFolder, WithoutRequestsOrTraceOnlyTheSummaryIsWritten) {
  const std::string dir = fresh_dir("bare");
  const RunFolderResult r = run_into_folder(small_run(false), "", dir, false);
  EXPECT_EQ(r.requests + r.totals.requests_rejected, static_cast<std::size_t>(kRequests));
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "summary.json");
  }
  EXPECT_EQ(files, 1u);
  fs::remove_all(dir);
}

// The overflow warning is read, not parsed back: sizes at 3 significant digits, with more only
// where the two would print alike. Sizes by hand: 6,904,327,700,480 B is 6.9 TB at 3 digits; a
// working set 0.1% over a 40 GB tier needs 4 digits (40.04 GB against 40 GB) to show it is larger.
// A tier too small for a stream without reuse (no chunk stored again, none dropped) lost nothing.
TEST(RunFolder, TheTierOverflowWarningPrintsSizesToRead) {
  const RunSpec spec = small_run(false);
  SummaryBuilder::Totals t;
  t.tier_capacity_bytes = 40e9;
  t.tier_working_set_bytes = 30e9;
  EXPECT_EQ(tier_overflow_warning(spec, t), "");  // it fits: no warning
  t.tier_working_set_bytes = 6904327700480.0;
  EXPECT_EQ(tier_overflow_warning(spec, t), "");  // too small, but nothing was stored again
  t.tier_restored_chunks = 1;
  const std::string big = tier_overflow_warning(spec, t);
  EXPECT_NE(big.find("working set (6.9 TB) does not fit its capacity (40 GB)"), std::string::npos)
      << big;
  t.tier_working_set_bytes = 40.04e9;
  const std::string near = tier_overflow_warning(spec, t);
  EXPECT_NE(near.find("working set (40.04 GB) does not fit its capacity (40 GB)"),
            std::string::npos)
      << near;
}

}  // namespace
}  // namespace run_folder_test
}  // namespace kappasim
