// Issue 26 (round 3 of trying kappasim as a new user, an adversary and an architect): the pure
// library's part of the fixes. Rerunning into a kappasim folder keeps the user's files (26.3);
// config keys cost O(n) (26.5); PCIe's register encodings bound MRRS/MPS and the sockets' root
// lanes bound the devices (26.11); a repeated layout key is an error and a tier's request size
// is the GPU's own chunk (26.12); YAML texts and range messages say what is wrong (26.17); the
// table's SI formatter stays readable for huge values (26.17).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "core/config.hpp"
#include "core/config_scan_count.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
#include "core/table.hpp"
#include "interconnects/link_spec.hpp"
#include "models/analytic/kappa.hpp"
#include "models/llm/parallelism.hpp"
#include "systems/system_spec.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {
namespace new_user_test {
namespace {
namespace fs = std::filesystem;

fs::path fresh(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("kappasim-newuser-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// ---- 26.3: a rerun keeps what the user added ------------------------------------------------
TEST(NewUserOutput, RerunKeepsFilesTheUserAddedAndDropsOldResults) {
  const fs::path parent = fresh("rerun");
  const std::string dir = (parent / "o").string();
  {
    OutputDir o(dir);
    o.write("summary.json", "{\"run\": 1}\n");
    o.write("old-only.csv", "from run 1\n");
    o.write("figs/a.csv", "1\n");
    o.commit();
  }
  // The user adds a note, a file in a folder of their own, one inside kappasim's folder, and a
  // file with the name the next run will write.
  std::ofstream(parent / "o" / "analysis.md") << "my notes\n";
  fs::create_directories(parent / "o" / "mine");
  std::ofstream(parent / "o" / "mine" / "plot.gp") << "plot 1\n";
  std::ofstream(parent / "o" / "figs" / "b.csv") << "user\n";
  std::ofstream(parent / "o" / "new.csv") << "user's new.csv\n";
  {
    OutputDir o(dir);
    o.write("summary.json", "{\"run\": 2}\n");
    o.write("figs/a.csv", "2\n");
    o.write("new.csv", "kappasim's new.csv\n");
    o.commit();
    EXPECT_EQ(o.kept_user_files().size(), 4u);
    ASSERT_EQ(o.renamed_user_files().size(), 1u);
    EXPECT_EQ(o.renamed_user_files()[0], "new.csv");
  }
  EXPECT_EQ(slurp(parent / "o" / "summary.json"), "{\"run\": 2}\n");
  EXPECT_EQ(slurp(parent / "o" / "figs" / "a.csv"), "2\n");
  EXPECT_FALSE(fs::exists(parent / "o" / "old-only.csv"));  // kappasim's, not written again
  EXPECT_EQ(slurp(parent / "o" / "analysis.md"), "my notes\n");
  EXPECT_EQ(slurp(parent / "o" / "mine" / "plot.gp"), "plot 1\n");
  EXPECT_EQ(slurp(parent / "o" / "figs" / "b.csv"), "user\n");
  EXPECT_EQ(slurp(parent / "o" / "new.csv"), "kappasim's new.csv\n");
  EXPECT_EQ(slurp(parent / "o" / "new.csv.user-kept"), "user's new.csv\n");
  // A third run still knows which files are the user's (the kept ones are not in its list).
  {
    OutputDir o(dir);
    o.write("summary.json", "{\"run\": 3}\n");
    o.commit();
  }
  EXPECT_EQ(slurp(parent / "o" / "analysis.md"), "my notes\n");
  EXPECT_FALSE(fs::exists(parent / "o" / "new.csv"));
  EXPECT_TRUE(fs::exists(parent / "o" / "new.csv.user-kept"));
  fs::remove_all(parent);
}

// ---- 26.13: a staging folder whose process was still dying when the rerun began -------------
// SIGKILL of a process inside fsync takes effect only when the fsync returns, so a rerun started
// at once still sees the process and keeps its staging folder; the rerun's commit, when the
// process is gone, removes it (before: it survived until the next run).
TEST(NewUserOutput, StagingOfAProcessThatDiedDuringTheRerunIsRemovedAtCommit) {
  const fs::path parent = fresh("dying");
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const fs::path stale = parent / "o.partial" / std::to_string(child);
  fs::create_directories(stale);
  std::ofstream(stale / ".kappasim-staging") << host << " " << child << "\n";
  std::ofstream(stale / "requests.csv") << "id\n";
  {
    OutputDir o((parent / "o").string());
    EXPECT_TRUE(fs::exists(stale));  // its process is alive: not touched
    ::kill(child, SIGKILL);
    int st = 0;
    ::waitpid(child, &st, 0);
    o.write("summary.json", "{}\n");
    o.commit();
  }
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_FALSE(fs::exists(parent / "o.partial"));  // emptied, so removed
  EXPECT_TRUE(fs::exists(parent / "o" / "summary.json"));
  EXPECT_FALSE(fs::exists(parent / "o" / ".kappasim-staging"));
  fs::remove_all(parent);
}

// ---- 26.5: keys in linear time ---------------------------------------------------------------
// Parsing a map of n keys and reading it (a struct with an unknown key at the end) visits O(n)
// map entries: doubling n at most doubles the visits (plus the reader's fixed field lookups).
// Before: the parser looked each key up in the keys so far, n^2/2 visits (2000 keys: 2e6; 4000:
// 8e6, a ratio of 4).
std::uint64_t visits_for(int n) {
  std::string yaml = "type: sharegpt\n";
  for (int i = 0; i < n; ++i) yaml += "k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  const std::uint64_t before = config_key_visits();
  const ConfigNode root = parse_yaml(yaml, "keys.yaml");
  ConfigNode merged = ConfigNode::make_map();
  merge_into(merged, root);  // a --set / preset merge of the same map
  EXPECT_TRUE(has(error_of([&] { read_config<WorkloadSpec>(merged, "workload"); }),
                  "unknown key 'k0' in 'workload'"));
  return config_key_visits() - before;
}

TEST(NewUserConfig, KeysAreProcessedInLinearTime) {
  const std::uint64_t a = visits_for(2000), b = visits_for(4000);
  EXPECT_GT(a, 0u);
  // Linear: b ≈ 2a. Quadratic: b ≈ 4a. 2.5 separates them with room for fixed costs.
  EXPECT_LT(static_cast<double>(b), 2.5 * static_cast<double>(a)) << a << " " << b;
  // And absolutely: a few visits per key (each reader field scans once), not ~n/2 per key.
  EXPECT_LT(b, 4000u * 200u) << b;
}

TEST(NewUserConfig, DuplicateKeysStillNamedWithBothLines) {
  const std::string m = error_of([] { parse_yaml("a: 1\nb: 2\na: 3\n", "dup.yaml"); });
  EXPECT_TRUE(has(m, "dup.yaml:3:1: duplicate key 'a' (first at line 1)")) << m;
}

// ---- 26.17: YAML texts ------------------------------------------------------------------------
TEST(NewUserConfig, YamlTextsNameTheProblem) {
  // A list where a config (map) belongs: say so, not "got ''".
  std::string m =
      error_of([] { read_config<WorkloadSpec>(parse_yaml("- a\n- b\n", "l.yaml"), ""); });
  EXPECT_TRUE(has(m, "the config must be a map of keys, got a list of 2 item(s)")) << m;
  // A second document is an error, not silently dropped.
  m = error_of([] { parse_yaml("type: sharegpt\n---\ntype: narrativeqa\n", "two.yaml"); });
  EXPECT_TRUE(has(m, "two.yaml:3") && has(m, "a second YAML document")) << m;
  // A NUL byte is named with its line and column (line 2, after "ab").
  static const char raw[] = "x: 1\nab\0cd: 2\n";
  m = error_of([] { parse_yaml(std::string(raw, sizeof raw - 1), "nul.yaml"); });
  EXPECT_TRUE(has(m, "nul.yaml:2:3: a NUL byte")) << m;
  // Flow nesting past yaml-cpp's own depth guard: said as such (was "bad file").
  m = error_of([] {
    parse_yaml("a: " + std::string(5000, '[') + std::string(5000, ']') + "\n", "deep.yaml");
  });
  EXPECT_TRUE(has(m, "deep.yaml:1:") && has(m, "nested too deeply")) << m;
  EXPECT_FALSE(has(m, "bad file")) << m;
  // A whole number past what a double holds exactly: the range is the problem.
  m = error_of([] {
    read_config<DocQaSpec>(parse_yaml("documents: 1e16\n", "w.yaml"), "workload.narrativeqa");
  });
  EXPECT_TRUE(has(m, "workload.narrativeqa.documents: \"1e16\" is out of range")) << m;
  EXPECT_FALSE(has(m, "not a whole number")) << m;
}

// ---- 26.11: PCIe register encodings and root-port lanes --------------------------------------
LinkSpec link_with(const std::string& extra) {
  return read_preset_config<LinkSpec>(parse_yaml("preset: pcie5\n" + extra, "link.yaml"), "link",
                                      "link");
}

TEST(NewUserHardware, ReadRequestAndPayloadSizesArePcieEncodings) {
  // PCIe Base Spec, Device Control register: 128 B (000b) to 4096 B (101b), powers of two.
  for (const char* ok : {"128 B", "512 B", "4096 B"})
    EXPECT_NO_THROW(link_with(std::string("max_read_request_size: ") + ok + "\n")) << ok;
  for (const char* bad : {"1 B", "768 B", "1 MB", "8192 B", "64 B"}) {
    const std::string m =
        error_of([&] { link_with(std::string("max_read_request_size: ") + bad + "\n"); });
    EXPECT_TRUE(has(m, "link.max_read_request_size: PCIe allows 128, 256, 512, 1024, 2048 or 4096"))
        << bad << ": " << m;
  }
  EXPECT_TRUE(has(error_of([] { link_with("max_payload_size: 100 B\n"); }),
                  "link.max_payload_size: PCIe allows"));
}

SystemSpec system_with(const std::string& yaml) {
  return read_preset_config<SystemSpec>(parse_yaml(yaml, "sys.yaml"), "system", "system");
}

TEST(NewUserHardware, DevicesMustFitTheSocketsRootLanes) {
  // The shipped systems fit: 8 x8 CXL + 8 x4 NVMe = 96 lanes of 2 x 128.
  EXPECT_NO_THROW(system_with("preset: dgx-h100-256gb-cxl-nvme\n"));
  // The host's own declared budget (system.cxl_lanes 160 on DGX H100, nvme_slots 8) binds first:
  // 33 x8 = 264 > 160.
  std::string m = error_of([] { system_with("preset: dgx-h100-256gb-cxl\ncxl_devices: 33\n"); });
  EXPECT_TRUE(has(m, "(system.cxl_lanes)")) << m;
  // A declared budget above what any host has is still held to the sockets' root lanes:
  // 2 sockets x 128 lanes = 256: 32 x8 CXL devices fit exactly, 33 do not.
  const std::string big = "cxl_lanes: 100000\nnvme_slots: 1000000\n";
  EXPECT_NO_THROW(system_with("preset: dgx-h100-256gb-cxl\n" + big + "cxl_devices: 32\n"));
  m = error_of([&] { system_with("preset: dgx-h100-256gb-cxl\n" + big + "cxl_devices: 33\n"); });
  EXPECT_TRUE(has(m, "system.cxl_devices: 33 CXL device(s) x8 + 0 NVMe drive(s)")) << m;
  EXPECT_TRUE(has(m, "need 264 PCIe lanes, more than the 256 a 2-socket host can have")) << m;
  m = error_of([&] { system_with("preset: dgx-h100-256gb-cxl\n" + big + "cxl_devices: 1000\n"); });
  EXPECT_TRUE(has(m, "need 8000 PCIe lanes")) << m;
  m = error_of(
      [&] { system_with("preset: dgx-h100-256gb-nvme\n" + big + "nvme_drives: 100000\n"); });
  EXPECT_TRUE(has(m, "system.nvme_drives:") && has(m, "need 400000 PCIe lanes")) << m;
}

// ---- 26.12: layouts ---------------------------------------------------------------------------
TEST(NewUserLayout, RepeatedKeyIsAnError) {
  const std::string m = error_of([] { parse_layout("tp=8,tp=4", "--layout"); });
  EXPECT_TRUE(has(m, "--layout: layout key 'tp' is given twice")) << m;
  EXPECT_NO_THROW(parse_layout("tp=8,pp=2", "--layout"));
}

TEST(NewUserLayout, TierRequestIsTheGpusOwnChunkUnderDpAttention) {
  const ModelSpec model =
      read_preset_config<ModelSpec>(ConfigNode::make_scalar("deepseek-v3"), "model", "model");
  const SystemSpec sys = read_preset_config<SystemSpec>(
      ConfigNode::make_scalar("dgx-h100-256gb-cxl-nvme"), "system", "system");
  KappaQuery q;
  q.compute_dtype = "fp8";
  q.kv_dtype = DType::Fp8;
  q.layout = parse_layout("dp_attention=8,ep=8", "--layout");
  const KappaPoint p = evaluate_kappa(model, sys, q);
  ASSERT_FALSE(p.tiers.empty());
  // DeepSeek-V3 MLA: (kv_lora_rank 512 + rope 64) x 61 layers x 1 B (FP8) = 35,136 B per token,
  // held whole by each DP rank (attention is data parallel). A 256-token chunk of the GPU's own
  // KV is 256 x 35,136 = 8,994,816 B; the per-replica-token share (1/8 of that) is the κ
  // denominator, not a request size.
  EXPECT_DOUBLE_EQ(p.b_kv_gpu, 35136.0);
  EXPECT_DOUBLE_EQ(p.tier_io_bytes, 256.0 * 35136.0);
  EXPECT_DOUBLE_EQ(p.b_kv_share, 35136.0 / 8);
}

// ---- 26.17: the table's number formatter ---------------------------------------------------
TEST(NewUserFormat, HugeValuesAreScientificNotAPrefixedExponent) {
  Table t({"flop", "time_s", "small"});
  t.add_row({2e35, 2.593e20, 141.1e9});
  const std::string s = t.text();
  EXPECT_TRUE(has(s, "2e+35")) << s;
  EXPECT_TRUE(has(s, "2.593e+20")) << s;
  EXPECT_TRUE(has(s, "141.1G")) << s;
  EXPECT_FALSE(has(s, "E")) << s;  // neither "2e+17E" nor "259.3E"
}

TEST(NewUserFormat, ATextColumnAlignsLeftWhateverTheNumberOfRows) {
  // The alignment is the column's (its first row's cell), not decided by comparing the column's
  // index with the number of rows: one row, a text column third.
  Table t({"a", "b", "name"});
  t.add_row({1.0, 2.0, std::string("x")});
  EXPECT_EQ(t.text(), "a  b  name\n1  2  x\n");
}

}  // namespace
}  // namespace new_user_test
}  // namespace kappasim
