// End-to-end tests of the kappasim binary: output fields and values, exit codes, error
// messages naming file/line/key, and that failed runs write nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_util.hpp"

namespace cli_test {
namespace {
namespace fs = std::filesystem;

using kappasim::test::Result;

using kappasim::test::slurp;

fs::path scratch() {
  static const fs::path d = kappasim::test::fresh_dir("cli");
  return d;
}

// Runs kappasim with a shell-quoted argument string.
Result run(const std::string& args) {
  return kappasim::test::run_shell(KAPPASIM_BIN, args, scratch() / "stderr.txt");
}

fs::path write(const std::string& name, const std::string& text) {
  fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Pulls a number out of a one-row JSON array: "key": value
double json_number(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::stod(json.substr(at + key.size() + 4));
}

TEST(Cli, KappaJsonHasTheDocumentedFieldsAndHandValues) {
  Result r =
      run("kappa --model llama-3.1-70b --system h100 --compute '2000 TFLOP/s' "
          "--bandwidth '64 GB/s' --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"model", "system", "b_kv_bytes", "f_pf_flops", "kappa_m", "kappa_hw",
                        "kappa_crit", "compute_flops", "bandwidth_bytes_per_s"})
    EXPECT_TRUE(has(r.out, std::string("\"") + f + "\"")) << f;
  // Llama-3.1-70B: N = 80·(2·8192² + 2·8192·1024 + 3·8192·28672 + 2·8192) + 2·128256·8192 + 8192
  const double n = 80.0 * (2 * 8192.0 * 8192 + 2 * 8192.0 * 1024 + 3 * 8192.0 * 28672 + 2 * 8192) +
                   2 * 128256.0 * 8192 + 8192;
  const double b = 2.0 * 80 * 8 * 128 * 2;  // 327,680 B/token
  EXPECT_DOUBLE_EQ(json_number(r.out, "b_kv_bytes"), b);
  EXPECT_NEAR(json_number(r.out, "kappa_crit"), 2 * n / b * 64e9 / 2000e12, 1e-9);
  EXPECT_DOUBLE_EQ(json_number(r.out, "bandwidth_bytes_per_s"), 64e9);
}

TEST(Cli, PeakBandwidthIsDerivedFromTheLink) {
  Result r = run("kappa -m llama-3.1-8b -s h100 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_DOUBLE_EQ(json_number(r.out, "bandwidth_bytes_per_s"), 16 * 32e9 * 128 / 130 / 8);
  EXPECT_DOUBLE_EQ(json_number(r.out, "compute_flops"), 989e12);
  r = run("kappa -m llama-3.1-8b -s h100 --set system.host_link.lanes=8 --format json");
  EXPECT_DOUBLE_EQ(json_number(r.out, "bandwidth_bytes_per_s"), 8 * 32e9 * 128 / 130 / 8);
  r = run("kappa -m llama-3.1-8b -s h100 --precision fp8 --format json");
  EXPECT_DOUBLE_EQ(json_number(r.out, "compute_flops"), 1979e12);
}

TEST(Cli, MatrixHasOneRowPerModelAndSystem) {
  Result r = run("kappa -m llama-3.1-8b llama-3.1-70b deepseek-v3 -s h100 b200 --format csv");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 3 * 2);
}

TEST(Cli, TtftDecompositionAtKAndT) {
  Result r =
      run("kappa -m llama-3.1-70b -s h100 --bandwidth '64 GB/s' --compute '2000 TFLOP/s' "
          "--context 65536 --t 256 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const double b = 327680, bw = 64e9;
  EXPECT_NEAR(json_number(r.out, "t_transfer_s"), 65536 * b / bw, 1e-12);
  const double p_oh = json_number(r.out, "p_oh");
  EXPECT_NEAR(json_number(r.out, "utilization"), 1 / (1 + p_oh), 1e-12);
  EXPECT_NEAR(json_number(r.out, "kappa_ratio"), 256, 1e-12);
}

TEST(Cli, RooflineCsv) {
  Result r = run("roofline -m qwen3-235b-a22b -s h100 --points 5 --kappa-min 1 --kappa-max 10000");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 6);
  EXPECT_TRUE(has(r.out, "kappa_ratio,attainable_flops_overlap"));
}

struct BadCase {
  std::string args;
  const char* expect;  // a part of the message
};

TEST(Cli, BadInputExitsTwoWithAClearMessage) {
  const fs::path typo =
      write("typo.yaml", "preset: h100\ngpu:\n  preset: h100-sxm5\n  hbm_bandwith: 4 TB/s\n");
  const fs::path nogpu = write("nogpu.yaml", "host_link: pcie5\nhost_memory: dgx-h100-host\n");
  const fs::path syntax = write("syntax.yaml", "gpu: [h100\n");
  const std::vector<BadCase> cases = {
      {"kappa -m llama-3.1-8b -s " + typo.string(), ":4:3: unknown key 'hbm_bandwith'"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_bandwidth='80 GB'",
       "expected a bandwidth"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_bandwidth='-1 TB/s'",
       "must be greater than zero"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_capacity='0 GB'",
       "must be greater than zero"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_bandwidth='nan TB/s'",
       "not a finite number"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_bandwidth='3 TB/q'", "unknown unit"},
      {"kappa -m llama-3.1-8b -s h10", "did you mean 'h100'"},
      {"kappa -m lama-3.1-8b -s h100", "unknown model preset 'lama-3.1-8b'"},
      {"kappa -m llama-3.1-8b -s " + nogpu.string(), "missing required key 'gpu'"},
      {"kappa -m llama-3.1-8b -s " + syntax.string(), "YAML syntax error"},
      {"kappa -m llama-3.1-8b -s /nonexistent/x.yaml", "cannot read config file"},
      {"kappa -m llama-3.1-8b -s h100 --set model.attention.num_kv_heads=128", "cannot exceed"},
      {"kappa -m llama-3.1-8b -s h100 --set system.host_link.lanes=3",
       "1, 2, 4, 8, 12, 16 or 32 lanes"},
      // issue 12.11/12.12 (sweeps helper): x24 is no PCIe width; scale factors; a missing preset
      // file
      {"kappa -m llama-3.1-8b -s h100 --set system.host_link.lanes=24",
       "1, 2, 4, 8, 12, 16 or 32 lanes, got 24"},
      {"kappa -m llama-3.1-8b -s a100 --set 'system.gpu.scale.flops_by_dtype={fp8: 2}'",
       "system.gpu.scale.flops_by_dtype.fp8: GPU 'a100-sxm4-80gb' has no fp8 peak to scale"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.scale.flops=0",
       "system.gpu.scale.flops: must be greater than zero"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu=/nonexistent/gpu.yaml",
       "cannot read gpu preset file '/nonexistent/gpu.yaml'"},
      {"kappa -m llama-3.1-8b -s a100 --precision fp8", "no peak rate for precision 'fp8'"},
      {"kappa -m llama-3.1-8b -s h100 --bandwidth '64 GB'", "--bandwidth: expected a bandwidth"},
      {"kappa -m llama-3.1-8b -s h100 --compute 0", "--compute"},
      {"kappa -m llama-3.1-8b -s h100 --tp 3", "tensor parallelism 3"},
      {"kappa -m llama-3.1-8b -s h100 --context -5", "--context"},
      {"kappa -m llama-3.1-8b -s h100 --format xml", "--format"},
      {"kappa -m llama-3.1-8b -s h100 --frobnicate", "unrecognised option"},
      {"kappa -m llama-3.1-8b -s h100 --kv-dtype fp9", "did you mean 'fp8'"},
      {"frobnicate", "unknown command"},
  };
  for (const BadCase& c : cases) {
    Result r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_TRUE(has(r.err, c.expect)) << c.args << "\nstderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << "\nstdout: " << r.out;  // nothing half-printed
  }
}

TEST(Cli, DumpConfigIsTheEffectiveConfigAndLoadsBack) {
  Result r =
      run("kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_capacity='80 GiB' --dump-config");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "hbm_capacity: 85.89934592 GB")) << r.out;
  EXPECT_TRUE(has(r.out, "lanes: {value: 16")) << r.out;  // defaults and provenance
  EXPECT_TRUE(has(r.out, "rate_per_lane: {value: 32 GT/s")) << r.out;
  // The dumped system section, fed back as a system file, gives the same κ.
  std::string sys = r.out.substr(r.out.find("system:\n") + 8);
  sys = sys.substr(0, sys.find("---"));
  std::string unindented;
  std::istringstream in(sys);
  for (std::string line; std::getline(in, line);)
    unindented += line.substr(std::min<std::size_t>(2, line.size())) + "\n";
  const fs::path f = write("dumped-system.yaml", unindented);
  Result a = run("kappa -m llama-3.1-8b -s " + f.string() + " --format csv");
  Result b =
      run("kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_capacity='80 GiB' --format csv");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out.substr(a.out.find('\n')), b.out.substr(b.out.find('\n')));
}

TEST(Cli, PresetsCheckPassesAndShowResolves) {
  Result r = run("presets check");
  EXPECT_EQ(r.code, 0) << r.err;
  r = run("presets show system/gb200");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "gpus_sharing_host_link: {value: 1, assumption:")) << r.out;
  r = run("presets show system/nope");
  EXPECT_EQ(r.code, 2);
}

TEST(Cli, UnsourcedUserPresetIsReported) {
  fs::path dir = scratch() / "user-presets";
  fs::create_directories(dir / "gpus");
  std::ofstream(dir / "gpus" / "mygpu.yaml")
      << "name: mygpu\nhbm_capacity: 1 GB\nhbm_bandwidth: {value: 1 TB/s, spec: \"x\"}\n"
         "peak_flops: {bf16: {value: 1 PFLOP/s, spec: \"x\"}}\nsm_count: {value: 1, spec: \"x\"}\n"
         "l2_cache: {value: 1 MB, spec: \"x\"}\ntdp: {value: 1 W, spec: \"x\"}\n";
  Result r = run("presets check --preset-dir " + dir.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "mygpu.yaml:2:15: hbm_capacity = 1 GB")) << r.err;
}

TEST(Cli, ReportWritesAllFilesOrNothing) {
  const fs::path out = scratch() / "report";
  Result r = run("report --quiet --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"report.md", "kappa_matrix.csv", "tp8.csv", "kappa_vs_context.csv",
                        "workloads.csv", "roofline.csv"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  EXPECT_TRUE(has(slurp(out / "report.md"), "κ_crit"));
  // Same inputs, same bytes.
  const fs::path out2 = scratch() / "report2";
  run("report --quiet --out " + out2.string());
  EXPECT_EQ(slurp(out / "report.md"), slurp(out2 / "report.md"));
  EXPECT_EQ(slurp(out / "roofline.csv"), slurp(out2 / "roofline.csv"));
  // A failing run leaves no folder behind.
  const fs::path bad = scratch() / "bad-report";
  r = run("report --out " + bad.string() + " --preset-dir /nonexistent");
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(fs::exists(bad));
  for (const auto& e : fs::directory_iterator(scratch()))
    EXPECT_FALSE(has(e.path().filename().string(), ".partial")) << e.path();
}

// ---- kappasim run ---------------------------------------------------------------------------

// A JSON syntax check (RFC 8259 grammar; escapes skipped, not decoded). True when `s` is exactly
// one JSON value plus white space.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& s) : m_s(s) {}
  bool valid() {
    ws();
    if (!value(0)) return false;
    ws();
    return m_i == m_s.size();
  }

 private:
  bool value(int depth) {
    if (depth > 64 || m_i >= m_s.size()) return false;
    const char c = m_s[m_i];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return string();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    return literal("true") || literal("false") || literal("null");
  }
  bool object(int depth) {
    ++m_i;
    ws();
    if (eat('}')) return true;
    for (;;) {
      ws();
      if (!string()) return false;
      ws();
      if (!eat(':')) return false;
      ws();
      if (!value(depth + 1)) return false;
      ws();
      if (eat('}')) return true;
      if (!eat(',')) return false;
    }
  }
  bool array(int depth) {
    ++m_i;
    ws();
    if (eat(']')) return true;
    for (;;) {
      ws();
      if (!value(depth + 1)) return false;
      ws();
      if (eat(']')) return true;
      if (!eat(',')) return false;
    }
  }
  bool string() {
    if (!peek('"')) return false;
    for (++m_i; m_i < m_s.size(); ++m_i) {
      const char c = m_s[m_i];
      if (c == '"') {
        ++m_i;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') ++m_i;
    }
    return false;
  }
  bool number() {  // -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?
    const auto digits = [&] {
      const std::size_t start = m_i;
      while (m_i < m_s.size() && m_s[m_i] >= '0' && m_s[m_i] <= '9') ++m_i;
      return m_i > start;
    };
    if (peek('-')) ++m_i;
    if (peek('0')) {
      ++m_i;
    } else if (!digits()) {
      return false;
    }
    if (peek('.')) {
      ++m_i;
      if (!digits()) return false;
    }
    if (peek('e') || peek('E')) {
      ++m_i;
      if (peek('+') || peek('-')) ++m_i;
      if (!digits()) return false;
    }
    return true;
  }
  bool literal(const char* w) {
    const std::string word(w);
    if (m_s.compare(m_i, word.size(), word) != 0) return false;
    m_i += word.size();
    return true;
  }
  bool peek(char c) const { return m_i < m_s.size() && m_s[m_i] == c; }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++m_i;
    return true;
  }
  void ws() {
    while (m_i < m_s.size() &&
           (m_s[m_i] == ' ' || m_s[m_i] == '\n' || m_s[m_i] == '\r' || m_s[m_i] == '\t'))
      ++m_i;
  }
  const std::string& m_s;
  std::size_t m_i = 0;
};

bool valid_json(const std::string& s) { return JsonChecker(s).valid(); }

TEST(Cli, JsonCheckerAcceptsJsonAndRejectsNearMisses) {
  EXPECT_TRUE(valid_json(R"({"a": [1, -2.5e3, "x\"y", true, null, {}], "b": {"c": []}})"));
  for (const char* bad : {"{", "[1,]", "{\"a\" 1}", "{'a': 1}", "[01]", "[1.]", "[nan]", "\"abc",
                          "[1] x", "{\"a\": 1,}", "[\"a\nb\"]"})
    EXPECT_FALSE(valid_json(bad)) << bad;
}

// The small run of the issue: NarrativeQA-like, 50 requests, one H100, warm tier. The tier is
// sized explicitly: the default stack's pinned pool (LMCache's 5 GB per rank) cannot hold even
// one ~50k-token document of Llama-3.1-8B (131,072 B per token: ~6.5 GB), so nothing would load.
const char* kRunConfig =
    "model: llama-3.1-8b\n"
    "system: h100\n"
    "serving:\n"
    "  tp: 1\n"
    "  warm_tier: true\n"
    "  tier_capacity: 1 TB\n"
    "workload:\n"
    "  type: narrativeqa\n"
    "  requests: 50\n";

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The value of "key" in summary.json ("key": value per line); NaN when absent or null.
double summary_value(const std::string& json, const std::string& key) {
  const std::string tag = "\"" + key + "\": ";
  const auto at = json.find(tag);
  if (at == std::string::npos || json.compare(at + tag.size(), 4, "null") == 0) return NAN;
  return std::stod(json.substr(at + tag.size()));
}

TEST(Cli, RunWritesRequestsSummaryTraceAndConfig) {
  const fs::path cfg = write("run.yaml", kRunConfig);
  const fs::path out = scratch() / "run-out";
  Result r = run("run " + cfg.string() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "requests completed: ")) << r.out;
  for (const char* f : {"requests.csv", "summary.json", "trace.json", "config.yaml"})
    ASSERT_TRUE(fs::exists(out / f)) << f;

  const std::string summary = slurp(out / "summary.json");
  EXPECT_TRUE(valid_json(summary)) << summary;
  for (const char* f : {"ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "throughput_rps", "p_oh_mean",
                        "transfer_time_fraction", "scheduled_tokens_per_iter", "budget_utilization",
                        "vram_utilization", "h2d_effective_bytes_per_s", "link_utilization",
                        "gpu_power_w", "gpu_power_tdp_fraction", "energy_per_request_j",
                        "requests_completed", "simulated_time_s", "wall_time_s"}) {
    EXPECT_TRUE(has(summary, std::string("\"") + f + "\": ")) << f;
    EXPECT_TRUE(std::isfinite(summary_value(summary, f))) << f << " is not a number";
  }
  const double completed = summary_value(summary, "requests_completed");
  EXPECT_EQ(completed + summary_value(summary, "requests_rejected"), 50);
  EXPECT_GT(completed, 0);
  // Orderings every run satisfies.
  EXPECT_LE(summary_value(summary, "ttft_p50_s"), summary_value(summary, "ttft_p90_s"));
  EXPECT_LE(summary_value(summary, "ttft_p90_s"), summary_value(summary, "ttft_p99_s"));
  for (const char* f : {"transfer_time_fraction", "budget_utilization", "vram_utilization",
                        "link_utilization", "gpu_power_tdp_fraction"}) {
    EXPECT_GE(summary_value(summary, f), 0) << f;
    EXPECT_LE(summary_value(summary, f), 1) << f;
  }
  EXPECT_LE(summary_value(summary, "scheduled_tokens_per_iter"), 4096);
  // The effective H2D rate cannot beat one PCIe 5 x16 direction's SM-read payload rate.
  const double wire = 32e9 * 16 / 8 * 128.0 / 130.0 * (370.0 * 16) / (370.0 * 16 + 16);
  EXPECT_LE(summary_value(summary, "h2d_effective_bytes_per_s"), wire / (1 + 22.0 / 64));
  EXPECT_NEAR(summary_value(summary, "throughput_rps"),
              completed / summary_value(summary, "simulated_time_s"), 1e-9);

  // requests.csv: the header and one row of 25 fields per completed request (the last nine: the
  // time breakdown and the load's bound, issue 12 item 10; front_end_s and tier_request_s are 0
  // with the engine TTFT).
  const std::vector<std::string> csv = lines(slurp(out / "requests.csv"));
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv[0],
            "id,workload,arrival_s,queue_s,load_s,compute_s,ttft_s,front_end_s,tier_request_s,"
            "cached_tokens,computed_tokens,kappa_ratio,bytes_loaded,bytes_stored,load_path,steps,t_"
            "queue_s,t_sched_software_s,"
            "t_load_software_s,t_load_link_s,t_load_wait_s,t_compute_s,t_store_s,"
            "t_step_overhead_s,load_bound");
  EXPECT_EQ(static_cast<double>(csv.size() - 1), completed);
  for (std::size_t i = 1; i < csv.size(); ++i) {
    EXPECT_EQ(std::count(csv[i].begin(), csv[i].end(), ','), 24) << csv[i];
    EXPECT_TRUE(has(csv[i], ",0,0,")) << csv[i];  // front_end_s, tier_request_s
    EXPECT_TRUE(has(csv[i], ",narrativeqa,")) << csv[i];
    EXPECT_TRUE(has(csv[i], ",kernel,")) << csv[i];
  }

  const std::string trace = slurp(out / "trace.json");
  EXPECT_TRUE(valid_json(trace));
  EXPECT_TRUE(has(trace, "\"traceEvents\"")) << trace.substr(0, 200);
  EXPECT_TRUE(has(trace, "\"ph\":\"X\""));  // spans

  const std::string config = slurp(out / "config.yaml");
  EXPECT_TRUE(has(config, "warm_tier: true")) << config;
  EXPECT_TRUE(has(config, "name: llama-3.1-8b")) << config;
  // The effective config runs again, to the same requests.
  const fs::path again = scratch() / "run-again";
  r = run("run " + (out / "config.yaml").string() + " --quiet --out " + again.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(slurp(again / "requests.csv"), slurp(out / "requests.csv"));
}

std::string without_wall_time(const std::string& summary) {
  std::string out;
  for (const std::string& line : lines(summary))
    if (!has(line, "\"wall_time_s\"")) out += line + "\n";
  return out;
}

TEST(Cli, RunTwiceGivesIdenticalFiles) {
  const fs::path cfg = write("run-det.yaml", kRunConfig);
  const fs::path a = scratch() / "det-a", b = scratch() / "det-b";
  Result ra = run("run " + cfg.string() + " -q --out " + a.string());
  Result rb = run("run " + cfg.string() + " -q --out " + b.string());
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  EXPECT_EQ(slurp(a / "requests.csv"), slurp(b / "requests.csv"));
  EXPECT_EQ(slurp(a / "trace.json"), slurp(b / "trace.json"));
  EXPECT_EQ(slurp(a / "config.yaml"), slurp(b / "config.yaml"));
  const std::string sa = slurp(a / "summary.json"), sb = slurp(b / "summary.json");
  EXPECT_EQ(without_wall_time(sa), without_wall_time(sb));
  EXPECT_EQ(lines(sa).size(), lines(without_wall_time(sa)).size() + 1);  // one line removed
  // Rerunning into an existing folder replaces it whole.
  Result rc = run("run " + cfg.string() + " -q --out " + a.string());
  ASSERT_EQ(rc.code, 0) << rc.err;
  EXPECT_EQ(slurp(a / "requests.csv"), slurp(b / "requests.csv"));
}

// Issue 12 item 3: a tier smaller than the working set thrashes; the run says so (a warning and
// summary fields), and warm means "what the request stream leaves in the tier", so the hit count
// is bounded by what fits instead of every prefix magically present.
TEST(Cli, RunWarnsWhenTheTierWorkingSetDoesNotFit) {
  const fs::path cfg = write("run-thrash.yaml", kRunConfig);
  const fs::path fit = scratch() / "tier-fit", small = scratch() / "tier-small";
  Result a = run("run " + cfg.string() + " -q --set trace=false --out " + fit.string());
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_FALSE(has(a.err, "warning")) << a.err;
  const std::string fa = slurp(fit / "summary.json");
  EXPECT_EQ(summary_value(fa, "tier_working_set_fits"), 1);
  EXPECT_EQ(summary_value(fa, "tier_restored_chunks"), 0);
  // 20 GB holds about three 50k-token Llama-3.1-8B documents (131,072 B per token): the
  // 50-request working set does not fit.
  Result b = run("run " + cfg.string() +
                 " -q --set trace=false --set serving.tier_capacity=20GB "
                 "--out " +
                 small.string());
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_TRUE(has(b.err, "warning: the KV tier's working set")) << b.err;
  const std::string fb = slurp(small / "summary.json");
  EXPECT_EQ(summary_value(fb, "tier_working_set_fits"), 0);
  EXPECT_DOUBLE_EQ(summary_value(fb, "tier_capacity_bytes"), 20e9);
  EXPECT_GT(summary_value(fb, "tier_working_set_bytes"), 20e9);
  EXPECT_GT(summary_value(fb, "tier_evicted_chunks"), 0);
  // Fewer hits than with the tier that holds everything.
  EXPECT_LT(summary_value(fb, "tier_hit_chunks"), summary_value(fa, "tier_hit_chunks"));
}

TEST(Cli, RunBadInputExitsTwoAndWritesNothing) {
  const fs::path good = write("run-good.yaml", kRunConfig);
  const fs::path typo = write("run-typo.yaml",
                              "model: llama-3.1-8b\nsystem: h100\nserving:\n  tp: 1\n"
                              "  warm_teir: true\nworkload:\n  type: narrativeqa\n");
  const auto trace_config = [](const std::string& name, const std::string& rows) {
    write(name + ".jsonl", rows);
    return write(name + ".yaml",
                 "model: llama-3.1-8b\nsystem: h100\nserving: {tp: 1}\n"
                 "workload:\n  type: trace\n  trace: {path: " +
                     name + ".jsonl}\n");
  };
  const fs::path malformed =
      trace_config("malformed",
                   "{\"arrival_s\": 0, \"prefix_tokens\": 1024, \"new_tokens\": 10}\n"
                   "{\"arrival_s\": 1, \"prefix_tokens\": 1024, \"new_tokens\": }\n");
  const fs::path backwards =
      trace_config("backwards",
                   "{\"arrival_s\": 0, \"prefix_tokens\": 1024, \"new_tokens\": 10}\n"
                   "{\"arrival_s\": 2, \"prefix_tokens\": 1024, \"new_tokens\": 10}\n"
                   "{\"arrival_s\": 1, \"prefix_tokens\": 1024, \"new_tokens\": 10}\n");
  const fs::path negative = trace_config(
      "negative", "{\"arrival_s\": -1, \"prefix_tokens\": 1024, \"new_tokens\": 10}\n");
  const fs::path type =
      write("run-type.yaml", "model: llama-3.1-8b\nsystem: h100\nworkload:\n  type: narativeqa\n");
  const fs::path tp = write("run-tp.yaml",
                            "model: llama-3.1-8b\nsystem: h100\nserving: {tp: 16}\n"
                            "workload: {type: narrativeqa}\n");
  // Issue 20 item 5: sizes beyond what the hardware holds, each read from the config file.
  // gb200's Grace has 480 GB of DRAM, less stack ideal's 0.25 reserve = 360 GB < 1.5 TB.
  const fs::path dram_tier = write("run-dram-tier.yaml",
                                   "model: llama-3.1-8b\nsystem: gb200\n"
                                   "serving: {tp: 2, stack: ideal, tier_capacity: 1.5 TB}\n"
                                   "workload: {type: narrativeqa}\n");
  // dgx-h100-256gb-cxl: x8 expanders on cxl_lanes 160 hold at most 20; dgx-h100-256gb-nvme: 8
  // drive bays.
  const fs::path cxl = write("run-cxl.yaml",
                             "model: llama-3.1-8b\n"
                             "system: {preset: dgx-h100-256gb-cxl, cxl_devices: 1000}\n"
                             "serving: {tp: 8}\nworkload: {type: narrativeqa}\n");
  const fs::path nvme = write("run-nvme.yaml",
                              "model: llama-3.1-8b\n"
                              "system: {preset: dgx-h100-256gb-nvme, nvme_drives: 100000}\n"
                              "serving: {tp: 8}\nworkload: {type: narrativeqa}\n");
  const fs::path blocker = write("a-file", "not a folder\n");
  struct Case {
    std::string args;
    std::vector<std::string> expect;  // parts of the message
    fs::path out;
  };
  int n = 0;
  const auto out_dir = [&n] { return scratch() / ("bad-run-" + std::to_string(++n)); };
  std::vector<Case> cases = {
      {typo.string(),
       {"run-typo.yaml:5:3: unknown key 'warm_teir'", "did you mean 'warm_tier'"},
       {}},
      {malformed.string(), {"malformed.jsonl:2:", "not valid JSON"}, {}},
      {backwards.string(), {"backwards.jsonl:3:", "earlier than the previous row"}, {}},
      {negative.string(), {"negative.jsonl:1:", "\"arrival_s\" is -1"}, {}},
      {type.string(), {"run-type.yaml:4:9:", "workload.type", "did you mean \"narrativeqa\""}, {}},
      {tp.string(), {"tensor parallelism 16 exceeds the 8 GPUs"}, {}},
      {good.string() + " --set serving.tp=9", {"tensor parallelism 9 exceeds the 8 GPUs"}, {}},
      {good.string() + " --set workload.requests=0", {"workload.requests: must be at least 1"}, {}},
      {good.string() + " --set serving.policy=lifo",
       {"serving.policy: expected one of fair, fifo, shortest_load, utilization",
        "did you mean \"fifo\""},
       {}},
      // serving stacks (docs/serving-stacks.md): an unknown name lists the valid ones; a stack
      // that cannot run the load path says which it supports.
      {good.string() + " --set serving.stack=lmcache-0.3",
       {"serving.stack: unknown stack preset 'lmcache-0.3'", "did you mean 'lmcache-0.3.5'",
        "ideal, lmcache-0.3.5, lmcache-0.3.7, tensorrt-llm-0.5, vllm-native-0.11, "
        "vllm-native-0.12"},
       {}},
      {good.string() + " --set serving.stack=vllm-native-0.12",
       {"serving.load_path: kernel is not a load path of stack 'vllm-native-0.12'",
        "supports: block_dma"},
       {}},
      {(scratch() / "missing.yaml").string(), {"cannot read config file"}, {}},
      // Issue 20 item 5: a DRAM KV tier beyond the host's DRAM, an HBM KV buffer larger than the
      // HBM the weights leave (H100 80 GB), CXL expanders beyond the host's lanes, NVMe drives
      // beyond its bays: each names its key.
      {dram_tier.string(),
       {"serving.tier_capacity: 1.5 TB exceeds what system 'gb200' can hold", "= 360 GB"},
       {}},
      {good.string() + " --set serving.kv_buffer.capacity=80GB --set serving.kv_buffer.kind=hbm",
       {"serving.kv_buffer.capacity: 80 GB of kind hbm leaves no paged-KV pool"},
       {}},
      {cxl.string(),
       {"system.cxl_devices: 1000 x8 CXL expanders need 8000 lanes", "(system.cxl_lanes)"},
       {}},
      {nvme.string(),
       {"system.nvme_drives: 100000 drives exceed the host's 8 drive bays", "(system.nvme_slots)"},
       {}},
  };
  for (Case& c : cases) c.out = out_dir();
  // An output folder that cannot be created: its parent is a regular file.
  cases.push_back({good.string(), {"--out", "cannot create"}, blocker / "sub"});
  for (const Case& c : cases) {
    Result r = run("run " + c.args + " --out " + c.out.string());
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    for (const std::string& part : c.expect)
      EXPECT_TRUE(has(r.err, part)) << c.args << "\nexpected: " << part << "\nstderr: " << r.err;
    EXPECT_TRUE(has(r.err, "kappasim: error: ")) << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << "\nstdout: " << r.out;
    EXPECT_FALSE(fs::exists(c.out)) << c.args;
  }
  EXPECT_TRUE(fs::is_regular_file(blocker));
  EXPECT_EQ(slurp(blocker), "not a folder\n");
  // No run without --out, nothing staged anywhere.
  Result r = run("run " + good.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--out")) << r.err;
  for (const auto& e : fs::directory_iterator(scratch()))
    EXPECT_FALSE(has(e.path().filename().string(), ".partial")) << e.path();
}

// ---- kappasim measure -----------------------------------------------------------------------

TEST(Cli, MeasurePohIsLoadOverCompute) {
  // Llama-3.1-70B needs 141 GB of BF16 weights: one 80 GB H100 cannot hold it.
  Result r =
      run("measure poh --model llama-3.1-70b --system h100 --tp 1 --k 4096 --t 128 "
          "--format json");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "does not fit")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;

  r = run("measure poh --model llama-3.1-70b --system h100 --tp 4 --k 4096 --t 128 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(valid_json(r.out)) << r.out;
  for (const char* f :
       {"p_oh", "load_time_s", "compute_time_s", "ttft_s", "cached_tokens", "computed_tokens"})
    EXPECT_TRUE(has(r.out, std::string("\"") + f + "\": ")) << f;
  const double load = json_number(r.out, "load_time_s");
  const double compute = json_number(r.out, "compute_time_s");
  const double ttft = json_number(r.out, "ttft_s");
  EXPECT_NEAR(json_number(r.out, "p_oh"), load / compute, 1e-12);
  EXPECT_DOUBLE_EQ(json_number(r.out, "cached_tokens"), 4096);
  EXPECT_DOUBLE_EQ(json_number(r.out, "computed_tokens"), 128);
  // TTFT = the 2 ms step overhead + the default stack's scheduler path + load + compute (one
  // isolated step, no store). presets/stacks/lmcache-0.3.5.yaml: the lookup re-hashes the
  // prompt's 16 full chunks (4224 / 256) at 27 µs = 0.432 ms; build_connector_meta converts the
  // 4224 prompt tokens at 110 ns = 0.46464 ms.
  EXPECT_NEAR(ttft, 2e-3 + 16 * 27e-6 + 4224 * 110e-9 + load + compute, 1e-9 * ttft);
  // Load by hand: LMCache retrieve 0.5 ms + 16 chunks × 28 µs re-hash, the copy kernel's
  // 16 × 0.24 µs, then 4096 tokens × 81,920 B (B_kv 327,680 B / 4 GPUs) at the copy kernel's
  // link-bound rate: the stack's kernel (lmcache-0.3.5 copy_kernel: one-warp blocks of 8 B
  // loads, 32 resident per SM) keeps 132 × 32 × 32 × 8 B = 1.08 MB in flight (1,081 GB/s per
  // 1 µs round trip); the read tags allow 768 × 64 B / 1 µs = 49.15 GB/s; the PCIe 5 x16 SM-read
  // wire rate, 62.85 GB/s / (1 + 20/64 + 2/64) = 46.77 GB/s, binds (4 GPUs on one socket's DRAM:
  // 225 / 4 = 56 GB/s each, not binding), after one 1 µs round trip; plus 16 GPU idle gaps of
  // 25 µs; the per-chunk Python (16 × 74 µs = 1.2 ms) hides under the 7.2 ms of copies.
  const double wire = 32e9 * 16 / 8 * 128.0 / 130.0 * (370.0 * 16) / (370.0 * 16 + 16);
  const double rate = wire / (1 + 20.0 / 64 + 2.0 / 64);
  const double expect =
      0.5e-3 + 16 * 28e-6 + 16 * 0.24e-6 + 1e-6 + 4096 * 81920.0 / rate + 16 * 25e-6;
  EXPECT_NEAR(load, expect, 1e-9 * expect);
}

TEST(Cli, MeasureKappaCritAgainstTheAnalyticModel) {
  Result r =
      run("measure kappa-crit --model llama-3.1-70b --system h100 --tp 1 --points 21 "
          "--format json");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "does not fit")) << r.err;

  r = run(
      "measure kappa-crit --model llama-3.1-70b --system h100 --tp 4 --points 21 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(valid_json(r.out)) << r.out;
  for (const char* f : {"kappa_crit_simulated", "kappa_crit_analytic_peak",
                        "kappa_crit_analytic_effective", "h2d_load_bytes_per_s"})
    EXPECT_TRUE(has(r.out, std::string("\"") + f + "\": ")) << f;
  const double sim = json_number(r.out, "kappa_crit_simulated");
  const double peak = json_number(r.out, "kappa_crit_analytic_peak");
  const double eff = json_number(r.out, "kappa_crit_analytic_effective");
  const double bw = json_number(r.out, "h2d_load_bytes_per_s");
  EXPECT_TRUE(std::isfinite(sim) && sim > 1) << r.out;
  // κ_crit is proportional to the bandwidth; the measured effective rate (tier software costs,
  // copy-kernel overheads and PCIe framing included) is below the link's encoded peak, so the
  // effective analytic κ_crit is below the peak one, by exactly the bandwidth ratio.
  const double peak_bw = 16 * 32e9 * 128 / 130 / 8;
  EXPECT_DOUBLE_EQ(json_number(r.out, "h2d_peak_bytes_per_s"), peak_bw);
  EXPECT_LT(bw, peak_bw / (1 + 22.0 / 64));
  EXPECT_LT(eff, peak);
  EXPECT_NEAR(eff, peak * bw / peak_bw, 1e-9 * peak);

  const std::vector<BadCase> bad = {
      {"measure kappa-crit --model llama-3.1-70b --system h100 --tp 4 --points 2",
       "--points: expected 3 to 2000"},
      {"measure kappa-crit --model llama-3.1-70b --system h100 --tp 4 --t 0",
       "--t: must be at least 1"},
      {"measure kappa-crit --model llama-3.1-70b --system h100 --tp 3",
       "tensor parallelism 3 does not divide"},
      {"measure kappa-crit --model llama-3.1-70b --system h100 --tp 4 --load-path dma",
       "--load-path: expected kernel, layerwise or block_dma"},
      {"measure kappa-crit --model llama-3.1-70b --system h100 --tp 4 --format xml", "--format"},
      {"measure kappa-crit --system h100", "'--model' is required"},
      {"measure poh --model llama-3.1-70b --system h100 --tp 4 --k -1 --t 128",
       "--k: expected a whole number"},
      {"measure poh --model llama-3.1-70b --system h100 --tp 4 --k 4096", "'--t' is required"},
      {"measure poh --model llama-3.1-70b --system h100 --tp 4 --k 4096 --t 128 --frobnicate",
       "unrecognised option"},
      {"measure kappa", "expected kappa-crit, poh, break-even or capacity"},
  };
  for (const BadCase& c : bad) {
    Result b = run(c.args);
    EXPECT_EQ(b.code, 2) << c.args << "\n" << b.err;
    EXPECT_TRUE(has(b.err, c.expect)) << c.args << "\nstderr: " << b.err;
    EXPECT_TRUE(b.out.empty()) << c.args << "\nstdout: " << b.out;
  }
}

// ---- bad inputs (docs/bad-inputs.md): the rows no test above covers end to end ----------------

TEST(Cli, SetWithoutEqualsAndTraceTokensOutOfRangeExitTwo) {
  const fs::path good = write("bad-inputs-good.yaml", kRunConfig);
  const auto trace_config = [](const std::string& name, const std::string& rows) {
    write(name + ".jsonl", rows);
    return write(name + ".yaml",
                 "model: llama-3.1-8b\nsystem: h100\nserving: {tp: 1}\n"
                 "workload:\n  type: trace\n  trace: {path: " +
                     name + ".jsonl}\n");
  };
  const fs::path t_zero =
      trace_config("t-zero", "{\"arrival_s\": 0, \"prefix_tokens\": 1024, \"new_tokens\": 0}\n");
  const fs::path k_large = trace_config(
      "k-large", "{\"arrival_s\": 0, \"prefix_tokens\": 10000001, \"new_tokens\": 1}\n");
  const fs::path overflow =
      trace_config("overflow", "{\"arrival_s\": 1e400, \"prefix_tokens\": 0, \"new_tokens\": 1}\n");
  struct Case {
    std::string args;
    std::string expect;
  };
  const fs::path out = scratch() / "bad-inputs-out";
  const std::vector<Case> cases = {
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_bandwidth",
       "--set expects KEY.PATH=VALUE"},
      {"run " + good.string() + " --set serving.tp --out " + out.string(),
       "--set expects KEY.PATH=VALUE"},
      {"run " + t_zero.string() + " --out " + out.string(),
       "t-zero.jsonl:1: new tokens 0 out of range; expected 1 to 10000000"},
      {"run " + k_large.string() + " --out " + out.string(),
       "k-large.jsonl:1: \"prefix_tokens\" is 10000001; expected at most 10000000"},
      {"run " + overflow.string() + " --out " + out.string(),
       "overflow.jsonl:1: not valid JSON (number overflow"},
  };
  for (const Case& c : cases) {
    Result r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_TRUE(has(r.err, c.expect)) << c.args << "\nstderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << "\nstdout: " << r.out;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
}

// Writing the results fails part way (a full disk): exit code 4, the message names the file, and
// neither the output folder nor its staging folder is left. A full disk is stood in for by a
// file size limit (`ulimit -f`, SIGXFSZ ignored so write(2) fails with EFBIG as it would with
// ENOSPC): the tests run as root, for whom a read-only folder is writable.
TEST(Cli, RunWhoseResultsCannotBeWrittenExitsFourAndLeavesNoFolder) {
  const fs::path cfg = write("full-disk.yaml", kRunConfig);
  const fs::path parent = scratch() / "full-disk";
  fs::create_directories(parent);
  const fs::path out = parent / "results";
  const fs::path err = scratch() / "full-disk-stderr.txt";
  // 2 blocks (1 KiB in dash, 2 KiB in bash): requests.csv's 50 rows are about 6 KB.
  const std::string cmd = "(trap '' XFSZ; ulimit -f 2; exec " + std::string(KAPPASIM_BIN) +
                          " run " + cfg.string() + " -q --out " + out.string() + ") 2>" +
                          err.string();
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << status;
  const std::string msg = slurp(err);
  EXPECT_EQ(WEXITSTATUS(status), 4) << msg;  // an I/O error, not bad input (issue 12, item 6)
  EXPECT_TRUE(
      has(msg, "kappasim: error: cannot write requests file '" + out.string() + ".partial/"))
      << msg;
  EXPECT_TRUE(has(msg, ": File too large")) << msg;  // the system's reason (strerror(EFBIG))
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::is_empty(parent)) << "a staging folder was left in " << parent;
  // Without the limit the same command succeeds.
  Result r = run("run " + cfg.string() + " -q --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out / "summary.json"));
}

// Issue 12.12 (sweeps helper): the scale factor and the x32 width reach the simulator too. The
// flow model's wire rate is lanes × rate per lane, so x32 and x16 at twice the rate are the same
// link (identical probe lines); a 64 MiB DMA copy, dominated by bytes / bandwidth, then takes
// between 1/2 and 0.55 of the x16 time (a fixed per-copy cost does not halve).
TEST(Cli, ScaledAndX32LinksReachTheSimulator) {
  const std::string base = "probe h2d --system h100 --path dma --sizes '64 MiB' --format csv";
  Result x16 = run(base), scaled = run(base + " --set system.host_link.scale.bandwidth=2"),
         x32 = run(base + " --set system.host_link.lanes=32");
  ASSERT_EQ(x16.code, 0) << x16.err;
  ASSERT_EQ(scaled.code, 0) << scaled.err;
  ASSERT_EQ(x32.code, 0) << x32.err;
  EXPECT_EQ(scaled.out, x32.out);
  auto time_s = [](const std::string& csv) {
    const std::string row = csv.substr(csv.find('\n') + 1);
    const std::size_t a = row.find(',') + 1;
    return std::stod(row.substr(a, row.find(',', a) - a));
  };
  const double ratio = time_s(x32.out) / time_s(x16.out);
  EXPECT_GE(ratio, 0.5);
  EXPECT_LE(ratio, 0.55);
}

// Issue 20: the copy kernel's launch shape is a probe input. One one-warp block of 8 B loads per
// SM keeps 132 × 256 B = 33,792 B in flight on an H100 (Little's law, 1 µs round trip:
// 33.792 GB/s, below the 46.8 GB/s SmRead wire rate, so no separate first round trip): 10
// blocks of 16 MiB take 10 × 0.24 µs + 167,772,160 B / 33.792 GB/s = 4.967272 ms. Bad shapes
// exit 2.
TEST(Cli, ProbeKernelShapeOptions) {
  Result r =
      run("probe h2d --system h100 --path kernel --sizes '16 MiB' --blocks 10 --load-width '8 B' "
          "--threads-per-block 32 --blocks-per-sm 1 --format csv");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string row = r.out.substr(r.out.find('\n') + 1);
  const std::size_t a = row.find(',') + 1;
  const double t = std::stod(row.substr(a, row.find(',', a) - a));
  const double want = 10 * 0.24e-6 + 10 * 16 * 1048576.0 / (132 * 32 * 8 / 1e-6);
  EXPECT_NEAR(t / want, 1.0, 1e-6) << r.out;
  r = run("probe h2d --system h100 --load-width '16 B'");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "kernel options need --path kernel")) << r.err;
  r =
      run("probe h2d --system h100 --path kernel --load-width '12 B' --threads-per-block 32 "
          "--blocks-per-sm 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "a thread loads 1, 2, 4, 8 or 16 bytes per instruction, got 12 B"))
      << r.err;
  r = run("probe h2d --system h100 --path kernel --load-width '8 B'");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "needs load_width, threads_per_block and blocks_per_sm together"))
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

// ---- issue 12 item 1: the simulated time base's reach ------------------------------------------

// 200 ShareGPT requests at 1e-6 per second arrive over ~2e8 s, far past 2^63 ps (106.75 days):
// before, the run exited 0 with ttft_p50_s = -999592. A trace row at 9.3e6 s (107.6 days) did
// the same. Now both are rejected with the limit in days, exit 2, and nothing written.
TEST(Cli, RunPastTheTimeBaseIsRejected) {
  const fs::path base = write("time-base.yaml",
                              "model: llama-3.1-8b\nsystem: h100\nserving: {tp: 1}\n"
                              "workload: {type: sharegpt, requests: 200, rate: 10, seed: 1}\n");
  write("time-far.jsonl",
        "{\"arrival_s\": 0, \"prefix_tokens\": 0, \"new_tokens\": 100}\n"
        "{\"arrival_s\": 9300000, \"prefix_tokens\": 0, \"new_tokens\": 100}\n");
  const fs::path far = write("time-far.yaml",
                             "model: llama-3.1-8b\nsystem: h100\n"
                             "workload: {type: trace, trace: {path: time-far.jsonl}}\n");
  struct Case {
    std::string args;
    std::vector<std::string> expect;
  };
  const std::vector<Case> cases = {
      {base.string() + " --set workload.rate=1e-6 --set trace=false --check",
       {"workload: request", "100 days", "workload.rate"}},
      {far.string() + " --check", {"time-far.jsonl:2:", "9300000 s (107.6 days)", "100 days"}},
  };
  int n = 0;
  for (const Case& c : cases) {
    const fs::path out = scratch() / ("time-base-" + std::to_string(++n));
    Result r = run("run " + c.args + " --out " + out.string());
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    for (const std::string& part : c.expect)
      EXPECT_TRUE(has(r.err, part)) << c.args << "\nexpected: " << part << "\nstderr: " << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
}

// ---- issue 13: an input error found inside the simulation ----------------------------------

// Chunked prefill off and a budget smaller than a request's prefill: the scheduler's InputError
// was thrown inside the engine's arrivals SC_THREAD, so the run exited with SystemC's
// "internal error: (E549) uncaught exception" (exit 1). Now it reaches the user as itself
// (sim_fail): exit 2, the message names both keys and the request, nothing written. With a cold
// tier a NarrativeQA prompt (tens of thousands of tokens) is all prefill, over a 1024 budget.
TEST(Cli, UnchunkedRequestOverTheBudgetIsAnInputError) {
  const fs::path cfg = write("unchunked.yaml", kRunConfig);
  const fs::path out = scratch() / "unchunked-out";
  Result r = run("run " + cfg.string() +
                 " -q --set serving.warm_tier=false --set serving.chunked_prefill=false"
                 " --set serving.max_num_batched_tokens=1024"
                 " --out " +
                 out.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_FALSE(has(r.err, "E549")) << r.err;
  EXPECT_FALSE(has(r.err, "internal error")) << r.err;
  EXPECT_TRUE(has(r.err, "serving.max_num_batched_tokens is 1024")) << r.err;
  EXPECT_TRUE(has(r.err, "serving.chunked_prefill is false")) << r.err;
  EXPECT_TRUE(has(r.err, "request ")) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

// ---- issue 12: output-folder safety, limits, help (items 5-9, 14, 16) -------------------------

// `run proj/cfg.yaml --out proj` used to leave only kappasim's files in proj: a non-empty folder
// without kappasim's marker is refused (exit 2, nothing touched) unless --force; a folder
// kappasim wrote is replaced as before.
TEST(Cli, RunRefusesAUsersNonEmptyFolderUnlessForce) {
  const fs::path proj = scratch() / "proj";
  fs::create_directories(proj);
  std::ofstream(proj / "cfg.yaml") << kRunConfig;
  std::ofstream(proj / "notes.txt") << "mine";
  Result r =
      run("run " + (proj / "cfg.yaml").string() + " -q --set trace=false --out " + proj.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(
      has(r.err, "--out: '" + proj.string() + "' is not empty and was not written by kappasim"))
      << r.err;
  EXPECT_TRUE(has(r.err, "--force")) << r.err;
  EXPECT_EQ(slurp(proj / "notes.txt"), "mine");
  EXPECT_TRUE(fs::exists(proj / "cfg.yaml"));
  // An empty folder, then the folder kappasim wrote: both fine, no --force needed.
  const fs::path out = scratch() / "proj-out";
  fs::create_directories(out);
  ASSERT_EQ(
      run("run " + (proj / "cfg.yaml").string() + " -q --set trace=false --out " + out.string())
          .code,
      0);
  EXPECT_TRUE(fs::exists(out / ".kappasim-output"));
  ASSERT_EQ(
      run("run " + (proj / "cfg.yaml").string() + " -q --set trace=false --out " + out.string())
          .code,
      0);
  // report takes --out too (core/output is the one place).
  r = run("report -q --out " + proj.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "is not empty and was not written by kappasim")) << r.err;
  EXPECT_EQ(slurp(proj / "notes.txt"), "mine");
  // reproduce refuses before running anything.
  r = run("reproduce --quick -q --out " + proj.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_FALSE(fs::exists(proj / "sweeps"));
  // --force: the user asked for it.
  const fs::path forced = scratch() / "forced";
  fs::create_directories(forced);
  std::ofstream(forced / "old.txt") << "x";
  r = run("run " + (proj / "cfg.yaml").string() + " -q --set trace=false --force --out " +
          forced.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(forced / "summary.json"));
}

// A killed run leaves OUT.partial/PID; the next run into OUT removes it once that process is
// gone. A look-alike folder without kappasim's staging marker, or of a live process, stays.
TEST(Cli, StaleStagingFoldersOfDeadRunsAreRemoved) {
  const fs::path parent = scratch() / "stale";
  fs::create_directories(parent);
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int st = 0;
  ::waitpid(child, &st, 0);  // `child` is now a pid with no process
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const fs::path dead = parent / "out.partial" / std::to_string(child);
  fs::create_directories(dead);
  std::ofstream(dead / ".kappasim-staging") << host << " " << child << "\n";
  std::ofstream(dead / "requests.csv") << "id\n";
  // A previous folder moved aside by a run killed while it replaced it: holds the output marker.
  const fs::path aside = parent / "out.partial" / ("old-" + std::to_string(child));
  fs::create_directories(aside);
  std::ofstream(aside / ".kappasim-output") << "kappasim output folder\n";
  const fs::path foreign = parent / "out.partial" / std::to_string(child + 1000000);
  fs::create_directories(foreign);  // not kappasim's: no staging marker
  const fs::path live = parent / "out.partial" / std::to_string(::getpid());
  fs::create_directories(live);
  std::ofstream(live / ".kappasim-staging") << host << " " << ::getpid() << "\n";
  const fs::path cfg = write("stale.yaml", kRunConfig);
  Result r =
      run("run " + cfg.string() + " -q --set trace=false --out " + (parent / "out").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(aside));
  EXPECT_TRUE(fs::exists(foreign));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_FALSE(fs::exists(parent / "out" / ".kappasim-staging"));  // only while staging
  // Once nothing is left in it, the staging folder goes too.
  fs::remove_all(foreign);
  fs::remove_all(live);
  r = run("run " + cfg.string() + " -q --set trace=false --out " + (parent / "out").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(parent / "out.partial"));
  EXPECT_EQ(std::distance(fs::directory_iterator(parent), fs::directory_iterator{}), 1);
}

// High or degenerate arrival rates: a bounded warm-up (fast) or a clear rejection, never a hang
// (before: rate 1e300 and gamma cv 1e6 never ended). No timing is asserted: the test would
// hang, not fail, before the fix, which the suite's timeout turns into a failure.
TEST(Cli, ArrivalParametersThatCannotDescribeAProcessAreRejected) {
  const fs::path cfg = write("rates.yaml", kRunConfig);
  const std::string base =
      "run " + cfg.string() + " -q --set trace=false --out " + (scratch() / "rates").string();
  Result r = run(base + " --set workload.rate=1e300");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "workload.rate: the request rate must be at most 1000000000 per second"))
      << r.err;
  r = run(base + " --set workload.arrival=gamma --set workload.cv=1e6");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "(workload.cv) must be > 0 and at most 10, got 1000000")) << r.err;
  // A high but representable rate runs (the warm-up is bounded by the requests asked for).
  r = run(base + " --set workload.rate=1e5");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(scratch() / "rates" / "trace.json"));
}

// Probes whose simulated time the time base cannot hold are rejected up front (before: 1 PB ×
// 1000 blocks hung; T = 1e11 exited 0 with sim_time_s disagreeing with compute_time_s).
TEST(Cli, ProbesBeyondTheTimeBaseAreRejected) {
  Result r = run("probe h2d --sizes '1 PB' --blocks 1000");
  EXPECT_EQ(r.code, 2) << r.err;
  // 1e15 B × 1000 at H100's DMA path on PCIe 5 x16, 54.17 GB/s (256 B read completions over
  // 63.0 GB/s of wire: docs/pcie-model.md): 1e18 / 54.17e9 = 1.85e7 s > 86400 s, printed to the
  // 3 digits an estimate carries.
  EXPECT_TRUE(has(r.err,
                  "--sizes × --blocks × --gpus: 1 EB in all would take 1.85e+07 s of "
                  "simulated time at the DMA path's rate (54.17 GB/s)"))
      << r.err;
  EXPECT_TRUE(r.out.empty());
  r = run("probe prefill --model llama-3.1-8b --system h100 --t 100000000000 --coarse");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--t / --k: prefilling 100000000000 new tokens")) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// Issue 20: probe prefill says which stack's launches it models; an unknown stack exits 2.
TEST(Cli, ProbePrefillNamesItsStackAndGraphMode) {
  Result r = run("probe prefill --model llama-3.1-8b --system h100 --t 128 --format csv");
  EXPECT_EQ(r.code, 0) << r.err;
  // The default stack (LMCache 0.3.5 on vLLM v1) replays piecewise graphs up to 512 tokens.
  EXPECT_TRUE(has(r.out, ",lmcache-0.3.5,piecewise,yes,")) << r.out;
  r = run("probe prefill --model llama-3.1-8b --system h100 --t 1024 --format csv");
  EXPECT_TRUE(has(r.out, ",lmcache-0.3.5,piecewise,no,")) << r.out;
  r =
      run("probe prefill --model llama-3.1-8b --system h100 --t 128 --stack tensorrt-llm-0.5 "
          "--format csv");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, ",tensorrt-llm-0.5,none,no,")) << r.out;
  r = run("probe prefill --model llama-3.1-8b --system h100 --t 128 --stack trtllm");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--stack: ")) << r.err;
  EXPECT_TRUE(has(r.err, "trtllm")) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// Issue 20 item 3: --ttft end_to_end adds the stack's front end to the prefill: 1 ms HTTP +
// (128 + 0) tokens × 1.1 µs + 0.1 ms hop + 0.15 ms for the first token = 1.3908 ms
// (presets/stacks/lmcache-0.3.5.yaml); tensorrt-llm-0.5's benchmark has none. It also adds the
// engine's step, as the serving engine charges a request alone: serving.step_overhead's default
// 2 ms, or --step-overhead. The default output has none of these columns.
TEST(Cli, ProbePrefillEndToEndTtftAddsTheFrontEnd) {
  Result r = run("probe prefill --model llama-3.1-8b --system h100 --t 128 --format json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(has(r.out, "front_end_s")) << r.out;
  EXPECT_FALSE(has(r.out, "ttft_s")) << r.out;
  r =
      run("probe prefill --model llama-3.1-8b --system h100 --t 128 --ttft end_to_end "
          "--format json");
  EXPECT_EQ(r.code, 0) << r.err;
  // One JSON object per row: a field's number follows its quoted name.
  const auto field = [](const std::string& out, const std::string& name) {
    const std::size_t at = out.find("\"" + name + "\": ");
    return at == std::string::npos ? -1.0 : std::stod(out.substr(at + name.size() + 4));
  };
  EXPECT_NEAR(field(r.out, "front_end_s"), 1.3908e-3, 1e-15) << r.out;
  EXPECT_DOUBLE_EQ(field(r.out, "step_overhead_s"), 2e-3) << r.out;
  EXPECT_NEAR(field(r.out, "ttft_s"), field(r.out, "compute_time_s") + 1.3908e-3 + 2e-3, 1e-15);
  r =
      run("probe prefill --model llama-3.1-8b --system h100 --t 128 --ttft end_to_end "
          "--stack tensorrt-llm-0.5 --step-overhead '0.5 ms' --format json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_DOUBLE_EQ(field(r.out, "front_end_s"), 0) << r.out;
  EXPECT_NEAR(field(r.out, "ttft_s"), field(r.out, "compute_time_s") + 0.5e-3, 1e-15) << r.out;
  r = run("probe prefill --model llama-3.1-8b --system h100 --t 128 --step-overhead '1 ms'");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--step-overhead: only with --ttft end_to_end")) << r.err;
  EXPECT_TRUE(r.out.empty());
  r =
      run("probe prefill --model llama-3.1-8b --system h100 --t 128 --ttft end_to_end "
          "--step-overhead '1 GB'");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--step-overhead: ")) << r.err;
  EXPECT_TRUE(r.out.empty());
  r = run("probe prefill --model llama-3.1-8b --system h100 --t 128 --ttft e2e");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--ttft: expected one of engine, end_to_end, got \"e2e\"")) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// Issue 20: measure poh --ttft end_to_end is serving.ttft: end_to_end (the engine's front end and
// tier lookup costs), the option read as probe prefill reads it.
TEST(Cli, MeasurePohEndToEndTtftAddsTheFrontEnd) {
  const std::string base =
      "measure poh --model llama-3.1-8b --system h100 --tp 1 --stack vllm-native-0.12 "
      "--load-path block_dma --k 1008 --t 16 --format json";
  const auto field = [](const std::string& out, const std::string& name) {
    const std::size_t at = out.find("\"" + name + "\": ");
    return at == std::string::npos ? -1.0 : std::stod(out.substr(at + name.size() + 4));
  };
  Result engine = run(base);
  EXPECT_EQ(engine.code, 0) << engine.err;
  EXPECT_FALSE(has(engine.out, "front_end_s")) << engine.out;
  Result e2e = run(base + " --ttft end_to_end");
  EXPECT_EQ(e2e.code, 0) << e2e.err;
  // vllm-native-0.12's front end (its preset): 1 ms HTTP + 1024 prompt tokens x 1.1 us +
  // 0.1 ms to the engine core, then 0.15 ms for the first token's way back; no tier RPC.
  const double fe = 1e-3 + 1024 * 1.1e-6 + 0.1e-3 + 0.15e-3;
  EXPECT_NEAR(field(e2e.out, "front_end_s"), fe, 1e-12) << e2e.out;
  EXPECT_DOUBLE_EQ(field(e2e.out, "tier_request_s"), 0);
  // One request alone: the front end adds to its TTFT and changes nothing else.
  EXPECT_NEAR(field(e2e.out, "ttft_s"), field(engine.out, "ttft_s") + fe, 1e-9);
  EXPECT_DOUBLE_EQ(field(e2e.out, "load_time_s"), field(engine.out, "load_time_s"));
  Result bad = run(base + " --ttft e2e");
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_TRUE(has(bad.err, "--ttft: expected one of engine, end_to_end, got \"e2e\"")) << bad.err;
  EXPECT_TRUE(bad.out.empty());
}

// Config and trace inputs are bounded: no device, no giant file, no endless line, and an
// error quotes a short excerpt, never the file.
TEST(Cli, InputSizeLimitsAndShortExcerpts) {
  const fs::path out = scratch() / "limits";
  Result r = run("run /dev/zero --out " + out.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "cannot read config file '/dev/zero': not a regular file")) << r.err;
  // 5 MiB of comments: over the 4 MiB limit.
  const fs::path big = scratch() / "big.yaml";
  {
    std::ofstream f(big);
    f << kRunConfig;
    const std::string comment = "# " + std::string(1022, 'x') + "\n";
    for (int i = 0; i < 5 * 1024; ++i) f << comment;
  }
  r = run("run " + big.string() + " --out " + out.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "is larger than 4 MiB")) << r.err;
  // A long file given as a system: the message quotes at most a short excerpt.
  const fs::path lines_file = scratch() / "many-lines.yaml";
  {
    std::ofstream f(lines_file);
    for (int i = 0; i < 200; ++i) f << "line" << i << ":x:0:0:some user:/home/u:/bin/sh\n";
  }
  r = run("kappa -m llama-3.1-8b -s " + lines_file.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_LT(r.err.size(), 600u) << r.err;
  EXPECT_FALSE(has(r.err, "line199")) << r.err;
  // A trace that is a device, and one row longer than 1 MiB.
  r = run("run " +
          write("trace-dev.yaml",
                "model: llama-3.1-8b\nsystem: h100\nserving: {tp: 1}\n"
                "workload: {type: trace, trace: {path: /dev/zero, format: jsonl}}\n")
              .string() +
          " --out " + out.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "workload.trace.path: '/dev/zero' is not a regular file")) << r.err;
  {
    std::ofstream f(scratch() / "long-row.jsonl");
    f << "{\"arrival_s\": 0, \"prefix_tokens\": 0, \"new_tokens\": 5, \"pad\": \""
      << std::string(1100000, 'y') << "\"}\n";
  }
  r = run("run " +
          write("trace-long.yaml",
                "model: llama-3.1-8b\nsystem: h100\nserving: {tp: 1}\n"
                "workload: {type: trace, trace: {path: long-row.jsonl, format: jsonl}}\n")
              .string() +
          " --out " + out.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "long-row.jsonl:1: a trace row is longer than 1024 KiB")) << r.err;
  EXPECT_LT(r.err.size(), 600u);
  EXPECT_FALSE(fs::exists(out));
}

// Help and suggestions (issue 12, item 14).
TEST(Cli, HelpForEveryCommandAndDidYouMean) {
  for (const char* c : {"probe --help", "measure --help", "bench --help", "help run",
                        "help probe h2d", "probe -h"}) {
    Result r = run(c);
    EXPECT_EQ(r.code, 0) << c << "\n" << r.err;
    EXPECT_TRUE(has(r.out, "Usage: kappasim")) << c << "\n" << r.out;
  }
  EXPECT_TRUE(has(run("help run").out, "kappasim run CONFIG --out DIR"));
  Result r = run("rnu base.yaml");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "unknown command 'rnu'; did you mean 'run'?")) << r.err;
  r = run("probe h2e");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "got 'h2e'; did you mean 'h2d'?")) << r.err;
  r = run("presets shwo system/h100");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "unknown verb 'shwo'; did you mean 'show'?")) << r.err;
  r = run("sweep colect out");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "'colect' is neither a spec file nor a verb; did you mean 'collect'?"))
      << r.err;
  r = run("kappa -m llama-3.1-8b --sytem h100");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "did you mean '--system'?")) << r.err;
  // Nothing on stdout before a failure.
  r = run("presets show system/h10");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(has(r.err, "did you mean 'h100'")) << r.err;
  // --tp named when the heads do not split.
  r = run("kappa -m llama-3.1-8b -s h100 --tp 3");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--tp 3: tensor parallelism 3 does not divide the 32 query heads"))
      << r.err;
  r = run("measure poh -m llama-3.1-8b -s h100 --tp 3 --k 100 --t 10");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--tp 3: tensor parallelism 3")) << r.err;
  // `--set key=` is an error, not a deletion of the key.
  const fs::path cfg = write("set-empty.yaml", kRunConfig);
  r = run("run " + cfg.string() + " --dump-config --set workload.requests=");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.err, "--set workload.requests=: no value after '='")) << r.err;
}

// Request spans in trace.json never overlap on one lane (before: lane = id % 16).
TEST(Cli, TraceRequestLanesNeverOverlap) {
  const fs::path cfg = write("lanes.yaml", kRunConfig);
  const fs::path out = scratch() / "lanes";
  // 50 NarrativeQA requests at 20/s on one GPU: many in flight at once.
  Result r = run("run " + cfg.string() + " -q --set workload.rate=20 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string trace = slurp(out / "trace.json");
  // tid of each lane track, then each request span's tid, ts and dur.
  std::map<int, std::vector<std::pair<double, double>>> spans;
  std::size_t at = 0;
  int n = 0;
  while ((at = trace.find("{\"name\":\"request ", at)) != std::string::npos) {
    const std::size_t end = trace.find('}', at);
    const std::string ev = trace.substr(at, end - at);
    auto num = [&](const std::string& key) {
      const auto k = ev.find("\"" + key + "\":");
      return std::stod(ev.substr(k + key.size() + 3));
    };
    const double ts = num("ts"), dur = num("dur");
    spans[static_cast<int>(num("tid"))].push_back({ts, ts + dur});
    ++n;
    at = end;
  }
  EXPECT_EQ(n, 50);
  int overlaps = 0;
  for (auto& [tid, v] : spans) {
    std::sort(v.begin(), v.end());
    for (std::size_t i = 1; i < v.size(); ++i)
      overlaps += v[i].first < v[i - 1].second - 1e-6;  // 1 ps
  }
  EXPECT_EQ(overlaps, 0);
}

}  // namespace
}  // namespace cli_test

// ---- issue 14 (h-studies): `bench serving --case` ----------------------------------------------
namespace cli_test {
namespace {
// An unknown case is a bad option: exit 2 naming --case and the cases it takes, nothing run.
TEST(Cli, BenchServingUnknownCaseIsAnInputError) {
  Result r = run("bench serving --requests 1 --case tiers4");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--case: expected single, tiers3, dp-ep or chat-decode, got 'tiers4'"))
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}
}  // namespace
}  // namespace cli_test

namespace cli_test {
namespace {

// Issue 21: `kappasim metrics` lists the declared statistics, prints docs/metrics.md's tables and
// regenerates a doc's marked tables; bad input exits 2 naming what was wrong.
TEST(Cli, MetricsListsTheDeclaredStatisticsAndRegeneratesDocTables) {
  Result all = run("metrics --format csv");
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_TRUE(has(all.out, "file,key,unit,aggregation,present,definition\n")) << all.out;
  EXPECT_TRUE(has(all.out, "requests.csv,ttft_s,s,value,always,")) << all.out;
  EXPECT_TRUE(has(all.out, "summary.json,ttft_p99_s,s,quantile,always,")) << all.out;
  EXPECT_TRUE(has(all.out, "summary.json,dp_ranks,ranks,setting,layouts beyond TP,")) << all.out;
  Result keys = run("metrics summary --keys --format csv");
  ASSERT_EQ(keys.code, 0) << keys.err;
  EXPECT_TRUE(has(keys.out, "summary.json,tiers_nvme_hit_chunks,chunks,count,with serving.tiers,"))
      << keys.out;
  EXPECT_TRUE(has(keys.out, "summary.json,time_fraction_idle,1,ratio,always,")) << keys.out;
  EXPECT_FALSE(has(keys.out, "requests.csv,")) << keys.out;
  // --markdown prints the table docs/metrics.md holds between its markers.
  Result md = run("metrics summary --markdown");
  ASSERT_EQ(md.code, 0) << md.err;
  const std::string doc = slurp(fs::path(KAPPASIM_SOURCE_DIR) / "docs" / "metrics.md");
  EXPECT_TRUE(has(doc, "kappasim metrics summary --markdown`; edit serving/stat_catalog.cpp -->\n" +
                           md.out + "<!-- end generated -->"));
  // The measuring sweep kinds declare their results.csv columns (PointKind::columns); the doc's
  // table of them is the generated one.
  Result kinds = run("metrics kinds --format csv");
  ASSERT_EQ(kinds.code, 0) << kinds.err;
  EXPECT_TRUE(has(kinds.out, "kind,column,unit,definition\n")) << kinds.out;
  EXPECT_TRUE(has(kinds.out, "kappa-crit,kappa_crit_simulated,1,")) << kinds.out;
  EXPECT_TRUE(has(kinds.out, "isolated,h2d_load_bytes_per_s,B/s,")) << kinds.out;
  EXPECT_TRUE(has(kinds.out, "break-even,break_even_k_simulated,tokens,")) << kinds.out;
  Result kinds_md = run("metrics kinds --markdown");
  ASSERT_EQ(kinds_md.code, 0) << kinds_md.err;
  EXPECT_TRUE(has(doc,
                  "kappasim metrics kinds --markdown`; edit the kind's declaration "
                  "(PointKind::columns) -->\n" +
                      kinds_md.out + "<!-- end generated -->"))
      << "docs/metrics.md's kinds table is stale: run `kappasim metrics --update docs/metrics.md`";
  // --update rewrites a stale table in place and leaves the rest of the file alone.
  const fs::path f = write("m.md",
                           "# mine\n<!-- generated by `kappasim metrics requests --markdown`; edit "
                           "serving/stat_catalog.cpp -->\n| old |\n<!-- end generated -->\nkept\n");
  Result up = run("metrics --update " + f.string());
  ASSERT_EQ(up.code, 0) << up.err;
  EXPECT_TRUE(has(up.out, "tables regenerated")) << up.out;
  const std::string after = slurp(f);
  EXPECT_FALSE(has(after, "| old |"));
  EXPECT_TRUE(has(after, "| `load_bound` | text |"));
  EXPECT_TRUE(has(after, "<!-- end generated -->\nkept\n"));
  Result again = run("metrics --update " + f.string());
  EXPECT_TRUE(has(again.out, "tables up to date")) << again.out;
  // Bad input: exit 2, naming it.
  Result bad = run("metrics bogus");
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(has(bad.err, "unknown statistics table 'bogus'")) << bad.err;
  Result no_table = run("metrics --markdown");
  EXPECT_EQ(no_table.code, 2);
  EXPECT_TRUE(has(no_table.err, "name the TABLE")) << no_table.err;
  Result missing = run("metrics --update " + (scratch() / "nope.md").string());
  EXPECT_EQ(missing.code, 2) << missing.err;
  EXPECT_TRUE(has(missing.err, "nope.md")) << missing.err;
}

}  // namespace
}  // namespace cli_test
