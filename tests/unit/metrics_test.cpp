// Metrics, traces, quantile sketch and the GPU power model: bounded-memory quantiles against
// exact order statistics, requests.csv and summary.json content and determinism, the Perfetto
// trace parsed back by a small strict JSON parser, and the power model by hand.
#include <gtest/gtest.h>

#include <unistd.h>
#include <map>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/quantile.hpp"
#include "core/trace_writer.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "models/gpu/power.hpp"
#include "serving/copy_split.hpp"
#include "serving/metrics.hpp"

namespace kappasim {
namespace metrics_test {
namespace {
namespace fs = std::filesystem;

// ---- helpers ---------------------------------------------------------------------------------

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path fresh_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("kappasim-metrics-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A strict JSON parser (RFC 8259 grammar), enough to validate what we write and read it back.
struct JVal {
  enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<JVal> arr;
  std::vector<std::pair<std::string, JVal>> obj;
  const JVal* get(const std::string& k) const {
    for (const auto& [key, v] : obj)
      if (key == k) return &v;
    return nullptr;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : m_s(s) {}
  JVal parse() {
    JVal v = value();
    ws();
    if (m_i != m_s.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("JSON error at " + std::to_string(m_i) + ": " + what);
  }
  void ws() {
    while (m_i < m_s.size() &&
           (m_s[m_i] == ' ' || m_s[m_i] == '\n' || m_s[m_i] == '\r' || m_s[m_i] == '\t'))
      ++m_i;
  }
  char peek() { return m_i < m_s.size() ? m_s[m_i] : '\0'; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++m_i;
  }
  bool literal(const char* word) {
    std::size_t n = std::char_traits<char>::length(word);
    if (m_s.compare(m_i, n, word) != 0) return false;
    m_i += n;
    return true;
  }
  JVal value() {
    ws();
    JVal v;
    char c = peek();
    if (c == '{') {
      v.kind = JVal::Obj;
      ++m_i;
      ws();
      if (peek() == '}') {
        ++m_i;
        return v;
      }
      for (;;) {
        ws();
        std::string k = string();
        ws();
        expect(':');
        v.obj.emplace_back(k, value());
        ws();
        if (peek() == ',') {
          ++m_i;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = JVal::Arr;
      ++m_i;
      ws();
      if (peek() == ']') {
        ++m_i;
        return v;
      }
      for (;;) {
        v.arr.push_back(value());
        ws();
        if (peek() == ',') {
          ++m_i;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = JVal::Str;
      v.str = string();
      return v;
    }
    if (literal("true")) {
      v.kind = JVal::Bool;
      v.b = true;
      return v;
    }
    if (literal("false")) {
      v.kind = JVal::Bool;
      return v;
    }
    if (literal("null")) return v;
    v.kind = JVal::Num;
    v.num = number();
    return v;
  }
  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (m_i >= m_s.size()) fail("unterminated string");
      auto c = static_cast<unsigned char>(m_s[m_i++]);
      if (c == '"') return out;
      if (c < 0x20) fail("control character in string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      char e = m_s[m_i++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (m_i + 4 > m_s.size()) fail("short \\u escape");
          unsigned code = std::stoul(m_s.substr(m_i, 4), nullptr, 16);
          m_i += 4;
          if (code >= 0x80) fail("non-ASCII \\u escape not expected here");
          out += static_cast<char>(code);
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }
  double number() {
    std::size_t start = m_i;
    auto digits = [&] {
      std::size_t d = m_i;
      while (m_i < m_s.size() && m_s[m_i] >= '0' && m_s[m_i] <= '9') ++m_i;
      return m_i - d;
    };
    if (peek() == '-') ++m_i;
    if (peek() == '0') {
      ++m_i;
    } else if (digits() == 0) {
      fail("bad number");
    }
    if (peek() == '.') {
      ++m_i;
      if (digits() == 0) fail("bad fraction");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++m_i;
      if (peek() == '+' || peek() == '-') ++m_i;
      if (digits() == 0) fail("bad exponent");
    }
    return std::stod(m_s.substr(start, m_i - start));
  }
  const std::string& m_s;
  std::size_t m_i = 0;
};

JVal parse_json(const std::string& s) { return JsonParser(s).parse(); }

TEST(Metrics, JsonParserIsStrict) {
  EXPECT_NO_THROW(parse_json(R"({"a":[1,-0.5,2e-05,true,null,"x\"y"]})"));
  EXPECT_THROW(parse_json(R"({"a":1,})"), std::runtime_error);
  EXPECT_THROW(parse_json(R"({"a":01})"), std::runtime_error);
  EXPECT_THROW(parse_json(R"({"a":nan})"), std::runtime_error);
  EXPECT_THROW(parse_json(R"({"a":1})"
                          "x"),
               std::runtime_error);
}

// ---- quantile sketch -------------------------------------------------------------------------

// Deterministic samples: log-uniform over [lo, hi] from raw mt19937_64 bits (the standard
// distributions are not specified bit-for-bit across libraries; the engine is).
std::vector<double> log_uniform(std::size_t n, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(n);
  for (auto& x : v) {
    double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    x = lo * std::exp(u * std::log(hi / lo));
  }
  return v;
}

double exact_quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(std::floor(q * static_cast<double>(v.size() - 1)))];
}

TEST(Sketch, QuantilesWithinRelativeAccuracyOfExact) {
  const double alpha = QuantileSketch::kDefaultRelativeAccuracy;
  // TTFT-like: 10 µs .. 1000 s, plus a heavy cluster (a mode) near 0.25 s.
  std::vector<double> xs = log_uniform(200000, 1e-5, 1e3, 42);
  std::vector<double> mode = log_uniform(50000, 0.24, 0.26, 7);
  xs.insert(xs.end(), mode.begin(), mode.end());
  QuantileSketch s;
  double sum = 0;
  for (double x : xs) {
    s.add(x);
    sum += x;
  }
  EXPECT_EQ(s.count(), xs.size());
  EXPECT_DOUBLE_EQ(s.sum(), sum);
  EXPECT_DOUBLE_EQ(s.mean(), sum / static_cast<double>(xs.size()));
  EXPECT_EQ(s.min(), *std::min_element(xs.begin(), xs.end()));
  EXPECT_EQ(s.max(), *std::max_element(xs.begin(), xs.end()));
  std::vector<double> sorted = xs;
  std::sort(sorted.begin(), sorted.end());
  for (double q : {0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999}) {
    double exact = sorted[static_cast<std::size_t>(std::floor(q * (sorted.size() - 1)))];
    double est = s.quantile(q);
    EXPECT_LE(std::fabs(est - exact), alpha * exact * (1 + 1e-9)) << "q=" << q;
  }
  EXPECT_EQ(s.quantile(0), s.min());
  EXPECT_EQ(s.quantile(1), s.max());
}

TEST(Sketch, SmallSampleByHand) {
  // 1..100 ms: p50 is the sample of rank floor(0.5·99) = 49, i.e. 50 ms; p99 rank 98 = 99 ms.
  QuantileSketch s;
  for (int i = 1; i <= 100; ++i) s.add(i * 1e-3);
  EXPECT_NEAR(s.quantile(0.5), 0.050, 0.005 * 0.050);
  EXPECT_NEAR(s.quantile(0.99), 0.099, 0.005 * 0.099);
  EXPECT_NEAR(s.quantile(0.9),
              exact_quantile(
                  [] {
                    std::vector<double> v;
                    for (int i = 1; i <= 100; ++i) v.push_back(i * 1e-3);
                    return v;
                  }(),
                  0.9),
              0.005 * 0.090);
}

TEST(Sketch, BucketsAndRepresentatives) {
  QuantileSketch s(0.01);
  const double g = s.gamma();
  EXPECT_DOUBLE_EQ(g, 1.01 / 0.99);
  for (double x : {1e-9, 3.7e-6, 0.001, 0.5, 1.0, 1.2345, 77.0, 9.99e5}) {
    int i = s.bucket_index(x);
    EXPECT_LT(std::pow(g, i - 1), x * (1 + 1e-12)) << x;
    EXPECT_GE(std::pow(g, i), x * (1 - 1e-12)) << x;
    EXPECT_LE(std::fabs(s.bucket_value(i) - x), 0.01 * x * (1 + 1e-9)) << x;
  }
}

TEST(Sketch, RunsOfEqualSamplesAndMirroredMagnitudesCountInTheirOwnBuckets) {
  // add() remembers the last magnitude's bucket: a run of equal samples, the same magnitude
  // negated, and a return to an earlier value must each still land in their own bucket.
  QuantileSketch s;
  for (double x : {1.0, 1.0, 1.0, -1.0, -1.0, -1.0, 2.0, 2.0, 1.0}) s.add(x);
  // Sorted: -1 -1 -1 1 1 1 1 2 2; rank floor(q·8).
  EXPECT_NEAR(s.quantile(0.25), -1.0, 0.005);  // rank 2
  EXPECT_NEAR(s.quantile(0.375), 1.0, 0.005);  // rank 3
  EXPECT_NEAR(s.quantile(0.75), 1.0, 0.005);   // rank 6
  EXPECT_NEAR(s.quantile(0.875), 2.0, 0.01);   // rank 7
}

TEST(Sketch, ZerosNegativesAndRangeEnds) {
  QuantileSketch s;
  for (double x : {-2.0, -1.0, 0.0, 0.0, 1e-12, 1.0, 2.0, 3.0, 5e6}) s.add(x);
  EXPECT_EQ(s.count(), 9u);
  EXPECT_EQ(s.min(), -2.0);
  EXPECT_EQ(s.max(), 5e6);
  // Sorted: -2 -1 0 0 1e-12 1 2 3 5e6; rank floor(q·8).
  EXPECT_NEAR(s.quantile(0.125), -1.0, 0.005);  // rank 1
  EXPECT_EQ(s.quantile(0.25), 0.0);             // rank 2: zero bucket
  EXPECT_EQ(s.quantile(0.5), 0.0);              // rank 4: 1e-12 counts as zero (< 1 ns)
  EXPECT_NEAR(s.quantile(0.75), 2.0, 0.01);     // rank 6
  EXPECT_NEAR(s.quantile(0.875), 3.0, 0.015);   // rank 7
  // Beyond 1e6 s: the top bucket, whose representative is clamped into [min, max].
  QuantileSketch big;
  big.add(5e6);
  big.add(7e6);
  EXPECT_EQ(big.quantile(0.5), 5e6);
  EXPECT_THROW(s.add(std::nan("")), std::invalid_argument);
  QuantileSketch e;
  EXPECT_TRUE(std::isnan(e.quantile(0.5)));
  EXPECT_TRUE(std::isnan(e.mean()));
  EXPECT_THROW(QuantileSketch(0.0), std::invalid_argument);
}

TEST(Sketch, MemoryIsBoundedAndMergeIsExact) {
  QuantileSketch a, b, all;
  // 1 ns .. 1e6 s at 0.5%: gamma = 1.005 / 0.995, ln gamma = 0.0100003; buckets
  // ceil(ln 1e-9 / ln gamma) = -2072 .. ceil(ln 1e6 / ln gamma) = 1382: 3,455 of them.
  EXPECT_EQ(a.max_counters(), 3455u);
  EXPECT_EQ(a.counters(), 0u);  // none until a sample needs them
  std::vector<double> xs = log_uniform(1000000, 1e-6, 1e4, 3);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    (i % 2 ? a : b).add(xs[i]);
    all.add(xs[i]);
  }
  // 1e-6 .. 1e4 s reach buckets -1381 .. 922 (2,304), held in blocks of 64: at most 63 more on
  // each side, and never more than the whole range.
  EXPECT_GE(a.counters(), 2304u);
  EXPECT_LE(a.counters(), 2304u + 126u);
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  for (double q : {0.1, 0.5, 0.99}) EXPECT_EQ(a.quantile(q), all.quantile(q));
  EXPECT_THROW(a.merge(QuantileSketch(0.01)), std::invalid_argument);
}

// ---- requests.csv and summary.json ---------------------------------------------------------

RequestRecord record(std::uint64_t id, double arrival, double queue, double load, double compute,
                     double ttft) {
  RequestRecord r;
  r.id = id;
  r.workload = "narrativeqa";
  r.arrival_s = arrival;
  r.queue_s = queue;
  r.load_s = load;
  r.compute_s = compute;
  r.ttft_s = ttft;
  r.cached_tokens = 50000;
  r.computed_tokens = 10;
  r.kappa_ratio = 5000;
  r.bytes_loaded = 16384e6;
  r.bytes_stored = 3.2768e6;
  r.load_path = "kernel";
  r.steps = 2;
  return r;
}

TEST(Metrics, RequestsCsvStreamsDeterministicRows) {
  fs::path d = fresh_dir("csv");
  auto write = [&](const fs::path& p) {
    RequestsCsvWriter w(p.string());
    RequestRecord r = record(7, 0.1, 0.25, 0.3, 0.01, 0.56);
    // Its TTFT by category (0.25 + 0.05 + 0.25 + 0.01 = 0.56) and its load's bound.
    r.time.queue_s = 0.25;
    r.time.load_software_s = 0.05;
    r.time.load_link_s = 0.25;
    r.time.compute_s = 0.01;
    r.load_bound = "link";
    w.write(r);
    r.id = 8;
    r.workload = "trace:a,b \"x\".jsonl";
    r.kappa_ratio = 1.0 / 3.0;
    w.write(r);
    EXPECT_EQ(w.rows_written(), 2u);
    w.close();
    w.close();  // idempotent
    EXPECT_THROW(w.write(r), std::logic_error);
  };
  write(d / "a.csv");
  write(d / "b.csv");
  std::string a = slurp(d / "a.csv");
  EXPECT_EQ(a, slurp(d / "b.csv"));
  EXPECT_EQ(
      a,
      "id,workload,arrival_s,queue_s,load_s,compute_s,ttft_s,front_end_s,tier_request_s,"
      "cached_tokens,computed_tokens,"
      "kappa_ratio,bytes_loaded,bytes_stored,load_path,steps,t_queue_s,t_sched_software_s,"
      "t_load_software_s,t_load_link_s,t_load_wait_s,t_compute_s,t_store_s,"
      "t_step_overhead_s,load_bound\n"
      "7,narrativeqa,0.1,0.25,0.3,0.01,0.56,0,0,50000,10,5000,16384000000,3276800,kernel,2,"
      "0.25,0,0.05,0.25,0,0.01,0,0,link\n"
      "8,\"trace:a,b \"\"x\"\".jsonl\",0.1,0.25,0.3,0.01,0.56,0,0,50000,10,0.3333333333333333,"
      "16384000000,3276800,kernel,2,0.25,0,0.05,0.25,0,0.01,0,0,link\n");
  try {  // a path into a missing folder: bad input, exit code 2
    RequestsCsvWriter bad((d / "missing" / "x.csv").string());
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(e.exit_code(), 2) << e.what();
  }
  fs::remove_all(d);
}

// Past RequestsCsvWriter::kFormatterAfter rows a second thread formats and writes them (issue 24):
// the file must be the header and each record's row() (the one-row formatter, no thread and no
// number cache) in order, whether it is closed or only destroyed.
TEST(Metrics, RequestsCsvPastTheFormatterThresholdIsTheRowsInOrder) {
  fs::path d = fresh_dir("csv-thread");
  const std::size_t n =
      RequestsCsvWriter::kFormatterAfter + 3 * RequestsCsvWriter::kFormatterBatch + 17;
  std::vector<RequestRecord> rs;
  for (std::size_t i = 0; i < n; ++i) {
    RequestRecord r = record(i + 1, 0.001 * static_cast<double>(i), 1.0 / (1.0 + i), 0.3, 0.01,
                             0.56 + static_cast<double>(i % 7) / 3.0);
    r.workload = i % 5 == 0 ? "trace:a,b \"x\".jsonl" : "trace:a-long-file-name.jsonl";
    r.load_bound = i % 3 == 0 ? "link" : "";
    r.time.queue_s = (i % 11) * 0.1;  // repeats: the number cache's hits
    rs.push_back(r);
  }
  std::string want = std::string(RequestsCsvWriter::header()) + "\n";
  for (const RequestRecord& r : rs) want += RequestsCsvWriter::row(r) + "\n";
  {
    RequestsCsvWriter w((d / "closed.csv").string());
    for (const RequestRecord& r : rs) w.write(r);
    EXPECT_EQ(w.rows_written(), n);
    w.close();
    EXPECT_THROW(w.write(rs.front()), std::logic_error);
  }
  {
    RequestsCsvWriter w((d / "destroyed.csv").string());
    for (const RequestRecord& r : rs) w.write(r);
  }
  EXPECT_EQ(slurp(d / "closed.csv"), want);
  EXPECT_EQ(slurp(d / "destroyed.csv"), want);
  fs::remove_all(d);
}

// A full disk (/dev/full: every write fails with ENOSPC). The streams buffer, so the error shows
// at close(), which must raise an InputError naming the file (the CLI: exit code 2, the output
// folder never appears).
TEST(Metrics, RequestsCsvAndTraceOnAFullDiskAreIoErrorsNamingThePathAndReason) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  RequestsCsvWriter csv("/dev/full");
  // Past the formatter thread's threshold: its writes fail too, and close() says so.
  for (std::uint64_t i = 0; i < RequestsCsvWriter::kFormatterAfter + 1000; ++i)
    csv.write(record(i, 0.1, 0.25, 0.3, 0.01, 0.56));
  try {
    csv.close();
    ADD_FAILURE() << "no IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "cannot write requests file '/dev/full': No space left on device"),
              std::string::npos)
        << e.what();
  }
  TraceWriter trace("/dev/full");
  const int t = trace.track("engine", "steps");
  for (int i = 0; i < 1000; ++i) trace.span(t, "step", i, i + 0.5);
  try {
    trace.close();
    ADD_FAILURE() << "no IoError";
  } catch (const IoError& e) {
    EXPECT_NE(
        std::string(e.what()).find("cannot write trace file '/dev/full': No space left on device"),
        std::string::npos)
        << e.what();
  }
}

TEST(Metrics, SummaryFiguresByHand) {
  SummaryBuilder b;
  // Four requests: load/compute/ttft chosen so every figure is easy to check.
  b.add_request(record(1, 0.0, 0.0, 0.3, 0.1, 0.4));  // slowdown 1, P_OH 3
  b.add_request(record(2, 0.1, 0.2, 0.3, 0.1, 0.6));  // slowdown 1.5, P_OH 3
  b.add_request(record(3, 0.2, 0.4, 0.1, 0.1, 0.8));  // slowdown 4, P_OH 1
  b.add_request(record(4, 0.3, 0.6, 0.2, 0.0, 1.0));  // slowdown 5, no compute: no P_OH
  StepRecord s1{0.0, 0.5, 2048, 4096, 2, 0.9, 0.3, 0.1};
  StepRecord s2{0.5, 1.3, 1024, 4096, 1, 0.5, 0.2, 0.1};
  b.add_step(s1);
  b.add_step(s2);
  SummaryBuilder::Totals t;
  t.simulated_time_s = 2.0;
  t.wall_time_s = 0.125;
  t.gpus = 8;
  t.gpu_busy_s = 0.2;
  t.h2d_bytes_per_gpu = 40e9;
  t.link_capacity_Bps = 50e9;
  t.link_busy_s = 1.0;
  t.gpu_energy_j = 8 * 2.0 * 196;  // 196 W per GPU for 2 s
  t.tdp_w = 700;
  t.tier_hit_chunks = 30;
  t.tier_miss_chunks = 10;
  t.kernel_events = 1000;
  std::map<std::string, double> f;
  for (const auto& [k, v] : b.figures(t)) f[k] = v;
  const double a = 0.005 * (1 + 1e-9);
  EXPECT_EQ(f["requests_completed"], 4);
  EXPECT_DOUBLE_EQ(f["throughput_rps"], 2.0);
  EXPECT_NEAR(f["ttft_p50_s"], 0.6, a * 0.6);  // rank floor(0.5·3) = 1
  EXPECT_NEAR(f["ttft_p99_s"], 0.8, a * 0.8);  // rank floor(0.99·3) = 2
  EXPECT_DOUBLE_EQ(f["ttft_max_s"], 1.0);
  EXPECT_DOUBLE_EQ(f["ttft_mean_s"], 0.7);
  EXPECT_DOUBLE_EQ(f["max_wait_s"], 0.6);
  EXPECT_NEAR(f["queue_p99_s"], 0.4, a * 0.4);
  EXPECT_DOUBLE_EQ(f["p_oh_mean"], (3.0 + 3.0 + 1.0) / 3);
  EXPECT_DOUBLE_EQ(f["transfer_time_fraction"], 0.9 / (0.9 + 0.3));
  // Issue 20 part 4: the ratio of sums Σ load / Σ compute = 0.9 / 0.3 = 3 (the per-request mean
  // above skips the request without compute), and Σ load / Σ TTFT = 0.9 / (4 × 0.7 s).
  EXPECT_NEAR(f["p_oh_ratio_of_sums"], 0.9 / 0.3, 1e-12);
  EXPECT_NEAR(f["load_ttft_fraction"], 0.9 / 2.8, 1e-12);
  // Jain over slowdowns 1, 1.5, 4, 5: (Σx)² / (n·Σx²) = 11.5² / (4·44.25).
  EXPECT_DOUBLE_EQ(f["jain_index"], 11.5 * 11.5 / (4 * 44.25));
  EXPECT_DOUBLE_EQ(f["slowdown_mean"], 11.5 / 4);
  EXPECT_DOUBLE_EQ(f["scheduled_tokens_per_iter"], 1536);
  EXPECT_DOUBLE_EQ(f["budget_utilization"], 0.375);
  EXPECT_DOUBLE_EQ(f["vram_utilization"], 0.7);
  EXPECT_DOUBLE_EQ(f["seqs_per_iter"], 1.5);
  EXPECT_DOUBLE_EQ(f["step_time_mean_s"], 0.65);
  EXPECT_DOUBLE_EQ(f["gpu_utilization"], 0.1);
  EXPECT_DOUBLE_EQ(f["h2d_effective_bytes_per_s"], 40e9);
  EXPECT_DOUBLE_EQ(f["link_utilization"], 0.4);
  EXPECT_DOUBLE_EQ(f["link_busy_fraction"], 0.5);
  EXPECT_DOUBLE_EQ(f["gpu_power_w"], 196);
  EXPECT_DOUBLE_EQ(f["gpu_power_tdp_fraction"], 0.28);
  EXPECT_DOUBLE_EQ(f["energy_per_request_j"], 8 * 2.0 * 196 / 4);
  EXPECT_DOUBLE_EQ(f["tier_hit_rate"], 0.75);
  EXPECT_DOUBLE_EQ(f["kernel_events_per_request"], 250);
  EXPECT_DOUBLE_EQ(f["last_finish_s"], 1.3);
  EXPECT_DOUBLE_EQ(f["bytes_loaded_total"], 4 * 16384e6);

  // JSON: valid, keys in the fixed order, every required key present, deterministic.
  std::string js = b.to_json(t);
  EXPECT_EQ(js, b.to_json(t));
  JVal j = parse_json(js);
  ASSERT_EQ(j.kind, JVal::Obj);
  const auto figs = b.figures(t);
  ASSERT_EQ(j.obj.size(), figs.size());
  for (std::size_t i = 0; i < figs.size(); ++i) EXPECT_EQ(j.obj[i].first, figs[i].first);
  for (const char* k : {"ttft_p50_s",
                        "ttft_p90_s",
                        "ttft_p99_s",
                        "throughput_rps",
                        "p_oh_mean",
                        "transfer_time_fraction",
                        "scheduled_tokens_per_iter",
                        "budget_utilization",
                        "vram_utilization",
                        "h2d_effective_bytes_per_s",
                        "link_utilization",
                        "gpu_power_w",
                        "gpu_power_tdp_fraction",
                        "energy_per_request_j",
                        "requests_completed",
                        "simulated_time_s",
                        "wall_time_s",
                        "queue_p99_s",
                        "max_wait_s",
                        "jain_index",
                        "tier_hit_rate",
                        "kernel_events_per_request"}) {
    const JVal* v = j.get(k);
    ASSERT_NE(v, nullptr) << k;
    EXPECT_EQ(v->kind, JVal::Num) << k;
  }
  EXPECT_DOUBLE_EQ(j.get("gpu_power_tdp_fraction")->num, 0.28);
}

// Issue 12 item 10, by hand: a request's categories sum to its TTFT; the run's categories are
// fractions of the simulated time (steps: overhead 0.5, software 0.5, copies 1, DRAM wait 1,
// compute 4, store 1; idle 2; 10 s in all) and sum to 1; load bound shares are the loads' time
// per bound over their total (software 0.5, link 1, host DRAM 1 => 0.2, 0.4, 0.4).
TEST(Metrics, TimeBreakdownFractionsAndBoundSharesByHand) {
  TimeBreakdown a;
  a.queue_s = 1;
  a.load_link_s = 0.5;
  a.compute_s = 0.25;
  TimeBreakdown b = a;
  b += a;
  EXPECT_DOUBLE_EQ(a.sum(), 1.75);
  EXPECT_DOUBLE_EQ(b.sum(), 3.5);
  EXPECT_DOUBLE_EQ(b.load_s(), 1.0);
  EXPECT_EQ(TimeBreakdown::categories().size(), 9u);
  SummaryBuilder sb;
  RequestRecord r;
  r.ttft_s = 1.75;
  r.time = a;
  sb.add_request(r);
  SummaryBuilder::Totals t;
  t.simulated_time_s = 10;
  t.gpus = 1;
  t.time.step_overhead_s = 0.5;
  t.time.load_software_s = 0.5;
  t.time.load_link_s = 1;
  t.time.load_wait_s = 1;
  t.time.compute_s = 4;
  t.time.store_s = 1;
  t.time.idle_s = 2;
  t.load_bounds[LoadBound::Software] = 0.5;
  t.load_bounds[LoadBound::Link] = 1;
  t.load_bounds[LoadBound::HostDram] = 1;
  EXPECT_EQ(t.load_bounds.bound(), LoadBound::Link);  // tie with host DRAM: the earlier
  std::map<std::string, double> f;
  for (const auto& [k, v] : sb.figures(t)) f[k] = v;
  EXPECT_DOUBLE_EQ(f.at("ttft_mean_queue_s"), 1);
  EXPECT_DOUBLE_EQ(f.at("ttft_mean_load_link_s"), 0.5);
  EXPECT_DOUBLE_EQ(f.at("ttft_mean_compute_s"), 0.25);
  EXPECT_EQ(f.count("ttft_mean_idle_s"), 0u);
  EXPECT_EQ(f.count("time_fraction_queue"), 0u);
  EXPECT_DOUBLE_EQ(f.at("time_fraction_compute"), 0.4);
  EXPECT_DOUBLE_EQ(f.at("time_fraction_idle"), 0.2);
  EXPECT_DOUBLE_EQ(f.at("time_fraction_load_wait"), 0.1);
  double fractions = 0;
  for (const auto& [k, v] : f)
    if (k.rfind("time_fraction_", 0) == 0) fractions += v;
  EXPECT_NEAR(fractions, 1, 1e-15);
  EXPECT_DOUBLE_EQ(f.at("load_bound_share_software"), 0.2);
  EXPECT_DOUBLE_EQ(f.at("load_bound_share_link"), 0.4);
  EXPECT_DOUBLE_EQ(f.at("load_bound_share_host_dram"), 0.4);
  EXPECT_DOUBLE_EQ(f.at("load_bound_share_read_tags"), 0);
  EXPECT_DOUBLE_EQ(f.at("load_bound_share_sm_inflight"), 0);
  // Resource names of the topology map to bounds.
  EXPECT_EQ(load_bound_of_resource("socket1.dram"), LoadBound::HostDram);
  EXPECT_EQ(load_bound_of_resource("socket-link.0to1"), LoadBound::SocketLink);
  EXPECT_EQ(load_bound_of_resource("gpu3.read-tags"), LoadBound::ReadTags);
  EXPECT_EQ(load_bound_of_resource("gpu3.hbm"), LoadBound::Hbm);
  EXPECT_EQ(load_bound_of_resource("hostlink2.down"), LoadBound::Link);
  EXPECT_EQ(load_bound_of_resource("gpu3.link.up"), LoadBound::Link);
}

TEST(Metrics, EmptySummaryHasNullsNotNaN) {
  SummaryBuilder b;
  SummaryBuilder::Totals t;
  JVal j = parse_json(b.to_json(t));  // would throw on "nan" or "inf"
  EXPECT_EQ(j.get("requests_completed")->num, 0);
  EXPECT_EQ(j.get("ttft_p50_s")->kind, JVal::Null);
  EXPECT_EQ(j.get("throughput_rps")->kind, JVal::Null);
  EXPECT_EQ(j.get("jain_index")->kind, JVal::Null);
}

TEST(Metrics, SummaryMemoryIsIndependentOfRequests) {
  // Bounded memory by construction: sketches and sums. 200k requests change no container size.
  SummaryBuilder b;
  const auto add = [&b](std::uint64_t from, std::uint64_t to) {
    for (std::uint64_t i = from; i < to; ++i)
      b.add_request(
          record(i, i * 1e-3, 1e-3 * (i % 97), 0.2, 0.01 * (1 + i % 5), 0.3 + 1e-4 * (i % 1000)));
  };
  // The first 1,000 reach the smallest and largest TTFT (0.3 .. 0.3999) and queue (0 .. 0.096):
  // a sketch's counters span the buckets between, so no later sample widens them.
  add(0, 1000);
  const std::size_t before = b.ttft().counters() + b.queue().counters();
  EXPECT_GT(before, 0u);
  add(1000, 200000);
  EXPECT_EQ(b.ttft().counters() + b.queue().counters(), before);
  EXPECT_EQ(b.requests(), 200000u);
}

// ---- trace -----------------------------------------------------------------------------------

// Issue 12, item 16: lanes by interval. Spans in finish order (as the engine writes them):
// [0,10] lane 0; [2,5] overlaps it: lane 1; [5,12] starts where lane 1's span ends: lane 1;
// [11,13] lane 0 (ended at 10); [1,20] overlaps both: lane 2.
TEST(TraceWriter, LaneAssignerNeverOverlapsAndReusesTheLowestFreeLane) {
  LaneAssigner lanes;
  EXPECT_EQ(lanes.place(0, 10), 0);
  EXPECT_EQ(lanes.place(2, 5), 1);
  EXPECT_EQ(lanes.place(5, 12), 1);
  EXPECT_EQ(lanes.place(11, 13), 0);
  EXPECT_EQ(lanes.place(1, 20), 2);
  EXPECT_EQ(lanes.lanes(), 3);
  // Out of order: a span ending before a lane's latest start still never shares it.
  EXPECT_EQ(lanes.place(0, 1), 3);
}

TEST(TraceWriter, WritesValidChromeTraceJson) {
  fs::path d = fresh_dir("trace");
  auto write = [&](const fs::path& p) {
    TraceWriter w(p.string());
    EXPECT_TRUE(w.enabled());
    int g0 = w.track("GPU 0", "compute");
    int l0 = w.track("GPU 0", "H2D link");
    int s = w.track("scheduler", "steps");
    EXPECT_EQ(w.track("GPU 0", "compute"), g0);  // stable id
    EXPECT_NE(g0, l0);
    w.span(g0, "layer 3 \"attn\"", 1.5e-3, 2.25e-3, {{"tokens", "4096"}, {"req", "a\\b"}});
    w.span(l0, "load chunk", 0.001, 0.001);  // zero length is fine
    w.counter("GPU 0", "vram_used", 0.002, 0.75);
    w.instant(s, "admit r7", 3e-3);
    EXPECT_THROW(w.span(g0, "bad", 2.0, 1.0), std::invalid_argument);
    EXPECT_THROW(w.instant(99, "bad", 1.0), std::invalid_argument);
    // Before close the file is not valid JSON (a killed run leaves a broken file only in the
    // staging folder).
    w.close();
    w.span(g0, "ignored after close", 0, 1);
    return w.events_written();
  };
  std::uint64_t n = write(d / "a.json");
  write(d / "b.json");
  std::string text = slurp(d / "a.json");
  EXPECT_EQ(text, slurp(d / "b.json"));  // deterministic
  JVal j = parse_json(text);
  ASSERT_EQ(j.kind, JVal::Obj);
  ASSERT_NE(j.get("displayTimeUnit"), nullptr);
  EXPECT_EQ(j.get("displayTimeUnit")->str, "ns");
  const JVal* ev = j.get("traceEvents");
  ASSERT_NE(ev, nullptr);
  ASSERT_EQ(ev->kind, JVal::Arr);
  EXPECT_EQ(ev->arr.size(), n);
  int meta = 0, spans = 0, counters = 0, instants = 0;
  for (const JVal& e : ev->arr) {
    const std::string ph = e.get("ph")->str;
    if (ph == "M") ++meta;
    if (ph == "X") {
      ++spans;
      if (e.get("name")->str == "layer 3 \"attn\"") {
        EXPECT_DOUBLE_EQ(e.get("ts")->num, 1500);
        EXPECT_DOUBLE_EQ(e.get("dur")->num, 750);
        EXPECT_EQ(e.get("pid")->num, 1);
        EXPECT_EQ(e.get("tid")->num, 1);
        EXPECT_EQ(e.get("args")->get("tokens")->str, "4096");
        EXPECT_EQ(e.get("args")->get("req")->str, "a\\b");
      }
    }
    if (ph == "C") {
      ++counters;
      EXPECT_DOUBLE_EQ(e.get("args")->get("vram_used")->num, 0.75);
      EXPECT_DOUBLE_EQ(e.get("ts")->num, 2000);
    }
    if (ph == "i") {
      ++instants;
      EXPECT_EQ(e.get("pid")->num, 2);  // "scheduler" is the second process used
      EXPECT_EQ(e.get("tid")->num, 3);
    }
  }
  // 2 processes × (name + sort index) + 3 threads × (name + sort index).
  EXPECT_EQ(meta, 10);
  EXPECT_EQ(spans, 2);
  EXPECT_EQ(counters, 1);
  EXPECT_EQ(instants, 1);
  EXPECT_NE(text.find("\"process_name\""), std::string::npos);
  EXPECT_NE(text.find("\"thread_sort_index\""), std::string::npos);
  fs::remove_all(d);
}

TEST(TraceWriter, UnclosedTraceIsInvalidAndNullModeWritesNothing) {
  fs::path d = fresh_dir("trace2");
  {
    TraceWriter w((d / "killed.json").string());
    w.span(w.track("p", "t"), "x", 0, 1);
  }  // destroyed without close(), as when a run fails
  EXPECT_THROW(parse_json(slurp(d / "killed.json")), std::runtime_error);

  TraceWriter off;
  EXPECT_FALSE(off.enabled());
  int t = off.track("p", "t");
  off.span(t, "x", 0, 1);
  off.span(12345, "unknown track is fine when disabled", 0, 1);
  off.counter("p", "c", 0, 1);
  off.instant(t, "i", 0);
  off.close();
  EXPECT_EQ(off.events_written(), 0u);
  try {  // a path into a missing folder: bad input, exit code 2
    TraceWriter bad((d / "no" / "x.json").string());
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(e.exit_code(), 2) << e.what();
  }
  fs::remove_all(d);
}

// ---- power -----------------------------------------------------------------------------------

GpuSpec gpu_preset(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<GpuSpec>(ref, "gpu", "gpu");
}

TEST(Power, EveryGpuPresetHasPowerParameters) {
  // The shipped files (other tests register extra GPUs in the registry of this process).
  std::vector<std::string> names;
  for (const auto& f : fs::directory_iterator(fs::path(KAPPASIM_SOURCE_DIR) / "presets" / "gpus"))
    if (f.path().extension() == ".yaml") names.push_back(f.path().stem().string());
  std::sort(names.begin(), names.end());
  EXPECT_GE(names.size(), 6u);
  for (const auto& name : names) {
    GpuSpec g = gpu_preset(name);
    PowerParams p = power_params(g);
    EXPECT_GT(p.idle_w, 0) << name;
    EXPECT_LT(p.idle_w, 0.3 * g.tdp_w) << name;
    // A sustained GEMM at gemm_efficiency of the BF16 peak stays at or under the limit.
    double gemm_w = p.idle_w + p.energy_per_flop_J * *g.gemm_efficiency * g.peak("bf16");
    EXPECT_LE(gemm_w, g.tdp_w * (1 + 1e-9)) << name;
  }
  GpuSpec bare = gpu_preset("h100-sxm5");
  bare.idle_power_w.reset();
  bare.energy_per_hbm_byte_J.reset();
  try {
    power_params(bare);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("idle_power, energy_per_hbm_bit"), std::string::npos);
  }
}

TEST(Power, H100PresetValuesAsSourced) {
  GpuSpec g = gpu_preset("h100-sxm5");
  EXPECT_DOUBLE_EQ(*g.idle_power_w, 140);
  EXPECT_NEAR(*g.energy_per_flop_J, 0.7259e-12, 1e-18);
  EXPECT_NEAR(*g.energy_per_hbm_byte_J, 8 * 16.3e-12, 1e-18);  // pJ/bit read as J per byte
  // The derivation in the preset: (700 − 140) W / (0.78 × 989 TFLOP/s).
  EXPECT_NEAR(*g.energy_per_flop_J, 560 / (0.78 * 989e12), 0.0001e-12);
}

TEST(Power, IdleOnlyEnergy) {
  GpuSpec g = gpu_preset("h100-sxm5");
  PowerActivity a;
  a.duration_s = 10;
  EnergyBreakdown e = gpu_energy_breakdown(g, a);
  EXPECT_DOUBLE_EQ(e.total_j, 1400);  // 140 W × 10 s
  EXPECT_DOUBLE_EQ(e.idle_j, 1400);
  EXPECT_FALSE(e.capped());
  EXPECT_DOUBLE_EQ(gpu_power_w(g, a), 140);
  EXPECT_EQ(gpu_power_w(g, PowerActivity{}), 0);
}

TEST(Power, BusyGemmLandsAtTdp) {
  // 1 s of a large BF16 GEMM at gemm_efficiency (0.78) of peak, with the HBM traffic of an
  // 8192³ GEMM (3 × 128 MiB per 1.1 TFLOP ≈ 0.27 TB/s at 771 TFLOP/s).
  GpuSpec g = gpu_preset("h100-sxm5");
  PowerActivity a;
  a.duration_s = 1;
  a.compute_busy_s = 1;
  a.flops = 0.78 * 989e12;
  a.hbm_bytes = a.flops / (2.0 * 8192 * 8192 * 8192) * 3 * 8192.0 * 8192 * 2;
  EnergyBreakdown e = gpu_energy_breakdown(g, a);
  EXPECT_NEAR(e.idle_j + e.compute_j, 700, 1);  // by construction of energy_per_flop
  EXPECT_TRUE(e.capped());                      // + HBM ≈ 35 W: the limit binds
  EXPECT_DOUBLE_EQ(gpu_power_w(g, a), 700);
  // Tensor cores running above the calibrated rate (at peak) cannot exceed the limit either.
  a.flops = 989e12;
  EXPECT_DOUBLE_EQ(gpu_power_w(g, a), 700);
  // Half the interval busy: mean ≈ half-way between idle and TDP.
  a.flops = 0.5 * 0.78 * 989e12;
  a.compute_busy_s = 0.5;
  a.hbm_bytes = 0;
  EXPECT_NEAR(gpu_power_w(g, a), 420, 1);
}

TEST(Power, H200MemoryStreamingMatchesRrze) {
  // RRZE: a memory-streaming kernel on H200 drew 572-675 W at 3.6-3.8 TB/s.
  GpuSpec g = gpu_preset("h200-sxm");
  for (double bw : {3.6e12, 3.7e12, 3.8e12}) {
    PowerActivity a;
    a.duration_s = 1;
    a.compute_busy_s = 1;
    a.hbm_bytes = bw;
    double p = gpu_power_w(g, a);
    EXPECT_GE(p, 572) << bw;
    EXPECT_LE(p, 675) << bw;
  }
}

TEST(Power, OffloadedServingComesOutNearTwentyEightPercentOfTdp) {
  // The paper's regime: the GPU mostly waits on KV transfers. Assumed duty cycle over 1 s on
  // one H100 of the TP-8 Llama-3.1-70B group: compute kernels run 5% of the time at the
  // calibrated GEMM rate (P_OH = 19, i.e. 95% of TTFT in transfers; the paper saw up to 99%);
  // the PCIe 5 link streams KV the whole second at 45 GB/s (LMCache measured 41 GB/s, vLLM
  // 51 GB/s); those bytes land in HBM, and the 5% of compute reads this GPU's weight share
  // (70.6e9 × 2 B / 8 = 17.65 GB per forward of ≈ 94 ms at 4096 tokens ⇒ ≈ 0.19 TB/s).
  GpuSpec g = gpu_preset("h100-sxm5");
  const double pcie5_J_per_byte = 32.5e-12 * 8;  // presets/links/pcie5.yaml
  PowerActivity a;
  a.duration_s = 1;
  a.compute_busy_s = 0.05;
  a.flops = 0.05 * 0.78 * 989e12;
  a.link_bytes = 45e9;
  a.link_energy_per_byte_J = pcie5_J_per_byte;
  a.hbm_bytes = 45e9 + 0.05 * 0.19e12;
  EnergyBreakdown e = gpu_energy_breakdown(g, a);
  EXPECT_FALSE(e.capped());
  double frac = e.total_j / a.duration_s / g.tdp_w;
  // 140 + 28 + 7.1 + 11.7 ≈ 187 W ≈ 0.27 of TDP; the paper measured 0.28.
  EXPECT_NEAR(frac, 0.28, 0.03);
  // Idle power alone is 20% of TDP: most of the 28% is the price of being ready.
  EXPECT_GT(e.idle_j / e.total_j, 0.7);
}

// Issue 20 part 4's "every summary figure is documented" lives on as issue 21's declarations:
// tests/unit/stat_catalog_test.cpp (docs/metrics.md's tables are generated from them).

}  // namespace
// A copy's own rate cap (FlowNetwork resource -1) is named by what set it: a copy kernel's loads
// in flight (sm_inflight), apart from the GPU's PCIe read tags (a resource, read_tags).
TEST(LoadBounds, KernelLoadsInFlightAndReadTagsAreSeparateBounds) {
  TransferRequest k;
  k.dir = Direction::H2D;
  k.path = CopyPath::Kernel;
  k.pinned = true;
  k.sm_inflight_bytes = 33792;
  k.end_s = 10e-3;
  // 4 ms at its own cap, 3 ms held by resource 0 (the read tags), 1 ms by resource 1 (the link):
  // the slowest (only) copy's 10 ms split 4 sm_inflight + 3 read_tags + the rest (3) link.
  k.bottleneck_s = {{-1, 4e-3}, {0, 3e-3}, {1, 1e-3}};
  const std::vector<LoadBound> res = {LoadBound::ReadTags, LoadBound::Link};
  const CopySplit c = split_copy_times({k}, 0, 10e-3, res);
  EXPECT_DOUBLE_EQ(c.bounds[LoadBound::SmInflight], 4e-3);
  EXPECT_DOUBLE_EQ(c.bounds[LoadBound::ReadTags], 3e-3);
  EXPECT_NEAR(c.bounds[LoadBound::Link], 3e-3, 1e-18);
  EXPECT_EQ(c.bounds.bound(), LoadBound::SmInflight);
  EXPECT_STREQ(load_bound_name(LoadBound::SmInflight), "sm_inflight");
  EXPECT_STREQ(load_bound_name(LoadBound::ReadTags), "read_tags");
  EXPECT_EQ(rate_cap_bound(k), LoadBound::SmInflight);
  // A kernel of no given shape has no cap of its own; a pageable copy's cap is its staging
  // thread; another pinned cap (an NVMe queue depth) is an outstanding-request limit.
  TransferRequest noshape = k;
  noshape.sm_inflight_bytes = 0;
  EXPECT_EQ(rate_cap_bound(noshape), LoadBound::ReadTags);
  TransferRequest pageable = k;
  pageable.path = CopyPath::Dma;
  pageable.pinned = false;
  EXPECT_EQ(rate_cap_bound(pageable), LoadBound::Software);
}

// add_like (issue 24) counts as add does: a sketch fed by add_like after another's add holds the
// same buckets as one fed by add, equal samples, differing ones, zeros and negatives alike.
TEST(Sketch, AddLikeEqualsAdd) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-2, 30);
  QuantileSketch lead, like, plain;
  for (int i = 0; i < 5000; ++i) {
    const double x = i % 7 == 0 ? 0.0 : u(rng);
    const double y = i % 3 == 0 ? u(rng) : x;
    lead.add(x);
    like.add_like(y, lead);
    plain.add(y);
  }
  for (double q : {0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0})
    EXPECT_EQ(like.quantile(q), plain.quantile(q)) << q;
  EXPECT_EQ(like.sum(), plain.sum());
  EXPECT_EQ(like.count(), plain.count());
}

}  // namespace metrics_test
}  // namespace kappasim
