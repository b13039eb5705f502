// End-to-end tests of the kappasim binary: output fields and values, exit codes, error
// messages naming file/line/key, and that failed runs write nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {
namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path scratch() {
  static fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("kappasim-cli-" + std::to_string(::getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
  }();
  return d;
}

// Runs kappasim with a shell-quoted argument string.
Result run(const std::string& args) {
  const fs::path err = scratch() / "stderr.txt";
  const std::string cmd = std::string(KAPPASIM_BIN) + " " + args + " 2>" + err.string();
  Result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(err);
  return r;
}

fs::path write(const std::string& name, const std::string& text) {
  fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Pulls a number out of a one-row JSON array: "key": value
double json_number(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::stod(json.substr(at + key.size() + 4));
}

TEST(Cli, KappaJsonHasTheDocumentedFieldsAndHandValues) {
  Result r = run("kappa --model llama-3.1-70b --system h100 --compute '2000 TFLOP/s' "
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
  Result r = run("kappa -m llama-3.1-70b -s h100 --bandwidth '64 GB/s' --compute '2000 TFLOP/s' "
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
  const fs::path typo = write("typo.yaml", "preset: h100\ngpu:\n  preset: h100-sxm5\n  hbm_bandwith: 4 TB/s\n");
  const fs::path nogpu = write("nogpu.yaml", "host_link: pcie5\nhost_memory: dgx-h100-host\n");
  const fs::path syntax = write("syntax.yaml", "gpu: [h100\n");
  const std::vector<BadCase> cases = {
      {"kappa -m llama-3.1-8b -s " + typo.string(), ":4:3: unknown key 'hbm_bandwith'"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_bandwidth='80 GB'", "expected a bandwidth"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_bandwidth='-1 TB/s'", "must be greater than zero"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_capacity='0 GB'", "must be greater than zero"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_bandwidth='nan TB/s'", "not a finite number"},
      {"kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_bandwidth='3 TB/q'", "unknown unit"},
      {"kappa -m llama-3.1-8b -s h10", "did you mean 'h100'"},
      {"kappa -m lama-3.1-8b -s h100", "unknown model preset 'lama-3.1-8b'"},
      {"kappa -m llama-3.1-8b -s " + nogpu.string(), "missing required key 'gpu'"},
      {"kappa -m llama-3.1-8b -s " + syntax.string(), "YAML syntax error"},
      {"kappa -m llama-3.1-8b -s /nonexistent/x.yaml", "cannot read config file"},
      {"kappa -m llama-3.1-8b -s h100 --set model.attention.num_kv_heads=128", "cannot exceed"},
      {"kappa -m llama-3.1-8b -s h100 --set system.host_link.lanes=3", "1, 2, 4, 8 or 16 lanes"},
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
  Result r = run("kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_capacity='80 GiB' --dump-config");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "hbm_capacity: 85.89934592 GB")) << r.out;
  EXPECT_TRUE(has(r.out, "lanes: {value: 16")) << r.out;          // defaults and provenance
  EXPECT_TRUE(has(r.out, "rate_per_lane: {value: 32 GT/s")) << r.out;
  // The dumped system section, fed back as a system file, gives the same κ.
  std::string sys = r.out.substr(r.out.find("system:\n") + 8);
  sys = sys.substr(0, sys.find("---"));
  std::string unindented;
  std::istringstream in(sys);
  for (std::string line; std::getline(in, line);) unindented += line.substr(std::min<std::size_t>(2, line.size())) + "\n";
  const fs::path f = write("dumped-system.yaml", unindented);
  Result a = run("kappa -m llama-3.1-8b -s " + f.string() + " --format csv");
  Result b = run("kappa -m llama-3.1-8b -s h100 --set system.gpu.hbm_capacity='80 GiB' --format csv");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out.substr(a.out.find('\n')), b.out.substr(b.out.find('\n')));
}

TEST(Cli, PresetsCheckPassesAndShowResolves) {
  Result r = run("presets check");
  EXPECT_EQ(r.code, 0) << r.err;
  r = run("presets show system/gb200");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "gpus_sharing_host_link: {value: 2, assumption:")) << r.out;
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
    EXPECT_FALSE(has(e.path().filename().string(), ".partial-")) << e.path();
}

}  // namespace
