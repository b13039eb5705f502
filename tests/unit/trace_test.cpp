// Trace replay: the kappasim JSONL and CSV formats and Mooncake JSONL parse into the requests
// they describe; every class of malformed row is an InputError naming FILE:LINE; Mooncake block
// hashes carry prefix identity into chunk keys.
#include <gtest/gtest.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "serving/kv_tier.hpp"
#include "serving/scheduler.hpp"
#include "workloads/read_ahead.hpp"
#include "workloads/trace_reader.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {
namespace trace_test {
namespace {

namespace fs = std::filesystem;

class TraceReader : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() /
            ("kappasim_trace_test_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }

  // Writes `text` to a file in the test's folder and returns its path.
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = m_dir / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  static TraceSpec spec(const std::string& path, TraceFormat f) {
    TraceSpec s;
    s.path = path;
    s.format = f;
    return s;
  }
  static std::vector<Request> read_all(const TraceSpec& s, const std::string& base = "") {
    TraceSource src(s, base);
    std::vector<Request> out;
    Request r;
    while (src.next(r)) out.push_back(r);
    return out;
  }
  // The message of the InputError validate_trace throws (fails the test if none).
  static std::string error_of(const TraceSpec& s) {
    try {
      validate_trace(s);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no InputError for " << s.path;
    return {};
  }

  fs::path m_dir;
};

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST_F(TraceReader, KappasimJsonl) {
  const std::string f = write(
      "a.jsonl",
      "{\"arrival_s\": 0.5, \"prefix_tokens\": 1000, \"new_tokens\": 10}\n"
      "\n"
      "{\"arrival_s\": 0.5, \"prefix_tokens\": 0, \"new_tokens\": 7, "
      "\"sequence_id\": 42, \"extends_sequence\": true, \"output_tokens\": 3}\n"
      "{\"arrival_s\": 2, \"prefix_tokens\": 2048.0, \"new_tokens\": 1, \"sequence_id\": 42}\n");
  const auto r = read_all(spec(f, TraceFormat::Jsonl));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].id, 1u);
  EXPECT_DOUBLE_EQ(r[0].arrival_s, 0.5);
  EXPECT_EQ(r[0].prefix_tokens, 1000);
  EXPECT_EQ(r[0].new_tokens, 10);
  EXPECT_EQ(r[0].sequence_id, 0u);
  EXPECT_FALSE(r[0].extends_sequence);
  EXPECT_EQ(r[0].output_tokens, 1);
  EXPECT_EQ(r[0].workload, "trace:a.jsonl");
  EXPECT_EQ(r[1].id, 2u);
  EXPECT_EQ(r[1].sequence_id, 42u);
  EXPECT_TRUE(r[1].extends_sequence);
  EXPECT_EQ(r[1].output_tokens, 3);
  EXPECT_EQ(r[2].prefix_tokens, 2048);
  EXPECT_DOUBLE_EQ(r[2].arrival_s, 2.0);
  const TraceSummary sum = validate_trace(spec(f, TraceFormat::Jsonl));
  EXPECT_EQ(sum.requests, 3);
  EXPECT_EQ(sum.prefix_tokens, 3048);
  EXPECT_EQ(sum.new_tokens, 18);
  EXPECT_DOUBLE_EQ(sum.last_arrival_s, 2.0);
}

TEST_F(TraceReader, TimeScaleAndLimit) {
  const std::string f = write("a.jsonl",
                              "{\"arrival_s\": 1, \"prefix_tokens\": 0, \"new_tokens\": 1}\n"
                              "{\"arrival_s\": 3, \"prefix_tokens\": 0, \"new_tokens\": 1}\n"
                              "{\"arrival_s\": 4, \"prefix_tokens\": 0, \"new_tokens\": 1}\n");
  TraceSpec s = spec(f, TraceFormat::Jsonl);
  s.time_scale = 0.5;  // twice the rate
  s.limit = 2;
  const auto r = read_all(s);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0].arrival_s, 0.5);
  EXPECT_DOUBLE_EQ(r[1].arrival_s, 1.5);
}

TEST_F(TraceReader, KappasimCsv) {
  // Columns in any order; optional ones may be left empty.
  const std::string f = write("b.csv",
                              "new_tokens, arrival_s,prefix_tokens,sequence_id,extends_sequence\r\n"
                              "10,0.25,5000,3,false\r\n"
                              "20,1.5,0,,\r\n"
                              "30,1.5,600,9,true\r\n");
  const auto r = read_all(spec(f, TraceFormat::Csv));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].new_tokens, 10);
  EXPECT_DOUBLE_EQ(r[0].arrival_s, 0.25);
  EXPECT_EQ(r[0].prefix_tokens, 5000);
  EXPECT_EQ(r[0].sequence_id, 3u);
  EXPECT_FALSE(r[0].extends_sequence);
  EXPECT_EQ(r[1].sequence_id, 0u);
  EXPECT_EQ(r[1].output_tokens, 1);
  EXPECT_TRUE(r[2].extends_sequence);
  EXPECT_EQ(r[2].id, 3u);
  EXPECT_EQ(r[2].workload, "trace:b.csv");
}

TEST_F(TraceReader, MooncakeRowsAndPrefixIdentity) {
  // 1100 tokens = 3 blocks of 512 (ceil); 1024 = 2 blocks; 512 = 1 block.
  const std::string f = write("m.jsonl",
                              "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 20, "
                              "\"hash_ids\": [11, 12, 13]}\n"
                              "{\"timestamp\": 1500, \"input_length\": 1024, \"output_length\": 5, "
                              "\"hash_ids\": [11, 12]}\n"
                              "{\"timestamp\": 2500, \"input_length\": 1600, \"output_length\": 1, "
                              "\"hash_ids\": [11, 99, 100, 101]}\n");
  const auto r = read_all(spec(f, TraceFormat::Mooncake));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(r[0].arrival_s, 0.0);
  EXPECT_DOUBLE_EQ(r[1].arrival_s, 1.5);  // timestamp in ms
  EXPECT_EQ(r[0].prefix_tokens, 0);
  EXPECT_EQ(r[0].new_tokens, 1100);
  EXPECT_EQ(r[0].output_tokens, 20);
  EXPECT_EQ(r[0].block_tokens, 512);
  EXPECT_EQ(r[0].block_hashes, (std::vector<std::uint64_t>{11, 12, 13}));
  EXPECT_EQ(r[0].workload, "trace:m.jsonl");
  // Chunk keys at 256 tokens: two per block. Requests 1 and 2 share blocks 11, 12 => their
  // first 4 keys agree; request 3 shares only block 11 => 2 keys.
  const auto k1 = chunk_keys(r[0], 256), k2 = chunk_keys(r[1], 256), k3 = chunk_keys(r[2], 256);
  ASSERT_EQ(k1.size(), 4u);  // 1100 / 256 = 4 full chunks
  ASSERT_EQ(k2.size(), 4u);
  ASSERT_EQ(k3.size(), 6u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(k1[i], k2[i]) << "chunk " << i;
  EXPECT_EQ(k3[0], k1[0]);
  EXPECT_EQ(k3[1], k1[1]);
  EXPECT_NE(k3[2], k1[2]);
  EXPECT_NE(k3[3], k1[3]);
  EXPECT_NE(k1[0], k1[1]);  // two chunks of one block differ
}

// issue 12 item 2: a block's identity is its place in the chain, so a KV tier (a prefix cache)
// fed Mooncake rows finds only the leading blocks whose whole chain matches. Each request is
// looked up after the previous ones were stored, as the engine does; cached tokens =
// hit chunks × 256, less the one prompt token vLLM always computes (make_sequence).
TEST_F(TraceReader, MooncakeHashIdsArePositionalPrefixChains) {
  const std::string f = write("chain.jsonl",
                              // [1,2] then [2,1]: block 2 of the second row has no stored
                              // parent chain => 0 cached tokens (was 1023).
                              "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, "
                              "\"hash_ids\": [1, 2]}\n"
                              "{\"timestamp\": 1, \"input_length\": 1024, \"output_length\": 1, "
                              "\"hash_ids\": [2, 1]}\n"
                              // [3] stored, then [3,3,3]: only block 0's chain matches =>
                              // 512 cached tokens, 1024 computed (was 1535).
                              "{\"timestamp\": 2, \"input_length\": 512, \"output_length\": 1, "
                              "\"hash_ids\": [3]}\n"
                              "{\"timestamp\": 3, \"input_length\": 1536, \"output_length\": 1, "
                              "\"hash_ids\": [3, 3, 3]}\n"
                              // [1,2,7] after [1,2]: the stored prefix is found (1024 tokens).
                              "{\"timestamp\": 4, \"input_length\": 1536, \"output_length\": 1, "
                              "\"hash_ids\": [1, 2, 7]}\n");
  const auto r = read_all(spec(f, TraceFormat::Mooncake));
  ASSERT_EQ(r.size(), 5u);
  KvTier tier(256, 1e12, 1.0);
  std::vector<std::int64_t> cached;
  for (const Request& q : r) {
    const auto keys = chunk_keys(q, 256);
    const std::size_t hits = tier.lookup(keys);
    cached.push_back(make_sequence(q, static_cast<std::int64_t>(hits) * 256).cached_tokens);
    tier.insert(keys);
  }
  EXPECT_EQ(cached, (std::vector<std::int64_t>{0, 0, 0, 512, 1024}));
  // The same hash at different positions names different blocks.
  const auto k = chunk_keys(r[3], 256);
  ASSERT_EQ(k.size(), 6u);
  EXPECT_NE(k[0], k[2]);
  EXPECT_NE(k[2], k[4]);
}

// issue 12 item 1: a row the time base cannot reach (2^63 ps = 106.75 days; the limit is 100
// days, core/sim_runner.hpp) is rejected with FILE:LINE, also when time_scale pushes it there.
TEST_F(TraceReader, ArrivalBeyondTheTimeLimitNamesFileAndLine) {
  const std::string f =
      write("far.jsonl",
            "{\"arrival_s\": 0, \"prefix_tokens\": 0, \"new_tokens\": 5}\n"
            "{\"arrival_s\": 9300000, \"prefix_tokens\": 0, \"new_tokens\": 5}\n");
  try {
    validate_trace(spec(f, TraceFormat::Jsonl));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "far.jsonl:2:")) << e.what();
    EXPECT_TRUE(has(e.what(), "100 days")) << e.what();
  }
  // 8.6e6 s (99.5 days) is within; doubled by time_scale it is not.
  const std::string g =
      write("near.jsonl", "{\"arrival_s\": 8600000, \"prefix_tokens\": 0, \"new_tokens\": 5}\n");
  EXPECT_EQ(validate_trace(spec(g, TraceFormat::Jsonl)).requests, 1);
  TraceSpec scaled = spec(g, TraceFormat::Jsonl);
  scaled.time_scale = 2;
  EXPECT_THROW(validate_trace(scaled), InputError);
}

TEST_F(TraceReader, RelativePathsAreTakenFromTheConfigFolder) {
  write("rel.jsonl", "{\"arrival_s\": 0, \"prefix_tokens\": 0, \"new_tokens\": 5}\n");
  WorkloadSpec w;
  w.type = WorkloadType::Trace;
  w.trace.path = "rel.jsonl";
  auto src = make_source(w, 1, m_dir.string());
  Request r;
  ASSERT_TRUE(src->next(r));
  EXPECT_EQ(r.new_tokens, 5);
  EXPECT_FALSE(src->next(r));
  EXPECT_TRUE(has(src->describe(), "rel.jsonl"));
  EXPECT_EQ(validate_trace(w.trace, m_dir.string()).requests, 1);
  // Without the folder, the file is not found, and the message names the key.
  try {
    make_source(w, 1, "/nonexistent-folder");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "workload.trace.path")) << e.what();
    EXPECT_TRUE(has(e.what(), "/nonexistent-folder/rel.jsonl")) << e.what();
  }
}

TEST_F(TraceReader, EmptyTraceIsAnError) {
  const std::string f = write("e.jsonl", "\n\n");
  EXPECT_TRUE(has(error_of(spec(f, TraceFormat::Jsonl)), "no rows"));
}

struct BadRow {
  const char* what;
  TraceFormat format;
  std::string row;
  const char* message;  // part of the expected message
};

TEST_F(TraceReader, EveryMalformedRowNamesFileAndLine) {
  const std::string good_json = "{\"arrival_s\": 1, \"prefix_tokens\": 100, \"new_tokens\": 10}\n";
  const std::string good_moon =
      "{\"timestamp\": 1000, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2]}\n";
  const std::vector<BadRow> bad = {
      {"bad JSON", TraceFormat::Jsonl, "{\"arrival_s\": 1, \"prefix_tokens\": 5,",
       "not valid JSON"},
      {"not an object", TraceFormat::Jsonl, "[1, 2, 3]", "expected one JSON object"},
      {"missing field", TraceFormat::Jsonl, "{\"arrival_s\": 2, \"prefix_tokens\": 5}",
       "missing \"new_tokens\""},
      {"negative tokens", TraceFormat::Jsonl,
       "{\"arrival_s\": 2, \"prefix_tokens\": -5, \"new_tokens\": 1}", "negative"},
      {"wrong type", TraceFormat::Jsonl,
       "{\"arrival_s\": 2, \"prefix_tokens\": \"5\", \"new_tokens\": 1}", "a string"},
      {"wrong bool type", TraceFormat::Jsonl,
       "{\"arrival_s\": 2, \"prefix_tokens\": 5, \"new_tokens\": 1, \"extends_sequence\": 1}",
       "true or false"},
      {"non-integer tokens", TraceFormat::Jsonl,
       "{\"arrival_s\": 2, \"prefix_tokens\": 5, \"new_tokens\": 1.5}", "whole number"},
      {"arrival backwards", TraceFormat::Jsonl,
       "{\"arrival_s\": 0.5, \"prefix_tokens\": 5, \"new_tokens\": 1}", "non-decreasing"},
      {"negative arrival", TraceFormat::Jsonl,
       "{\"arrival_s\": -1, \"prefix_tokens\": 5, \"new_tokens\": 1}", ">= 0"},
      {"T zero", TraceFormat::Jsonl, "{\"arrival_s\": 2, \"prefix_tokens\": 5, \"new_tokens\": 0}",
       "expected 1 to 10000000"},
      {"T too large", TraceFormat::Jsonl,
       "{\"arrival_s\": 2, \"prefix_tokens\": 5, \"new_tokens\": 10000001}", "at most 10000000"},
      {"K too large", TraceFormat::Jsonl,
       "{\"arrival_s\": 2, \"prefix_tokens\": 20000000, \"new_tokens\": 1}", "at most 10000000"},
      {"unknown key", TraceFormat::Jsonl,
       "{\"arrival_s\": 2, \"prefix_token\": 5, \"new_tokens\": 1}",
       "did you mean \"prefix_tokens\""},
      {"negative sequence id", TraceFormat::Jsonl,
       "{\"arrival_s\": 2, \"prefix_tokens\": 5, \"new_tokens\": 1, \"sequence_id\": -3}",
       "negative"},
      {"mooncake hash count", TraceFormat::Mooncake,
       "{\"timestamp\": 2000, \"input_length\": 1025, \"output_length\": 1, \"hash_ids\": [1, 2]}",
       "ceil(1025 / 512) = 3"},
      {"mooncake missing hashes", TraceFormat::Mooncake,
       "{\"timestamp\": 2000, \"input_length\": 100, \"output_length\": 1}",
       "missing \"hash_ids\""},
      {"mooncake hash type", TraceFormat::Mooncake,
       "{\"timestamp\": 2000, \"input_length\": 100, \"output_length\": 1, \"hash_ids\": [\"a\"]}",
       "hash_ids[0]"},
      {"mooncake backwards", TraceFormat::Mooncake,
       "{\"timestamp\": 500, \"input_length\": 100, \"output_length\": 1, \"hash_ids\": [7]}",
       "non-decreasing"},
      {"mooncake zero input", TraceFormat::Mooncake,
       "{\"timestamp\": 2000, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}",
       "expected 1 to"},
      {"mooncake negative timestamp", TraceFormat::Mooncake,
       "{\"timestamp\": -2, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}",
       ">= 0"},
      {"csv cell count", TraceFormat::Csv, "2,5", "2 cells; expected 3"},
      {"csv not a number", TraceFormat::Csv, "2,five,1", "expected a number"},
      {"csv non-integer", TraceFormat::Csv, "2,5,1.5", "whole number"},
      {"csv negative", TraceFormat::Csv, "2,-5,1", "negative"},
      {"csv backwards", TraceFormat::Csv, "0.1,5,1", "non-decreasing"},
      {"csv T zero", TraceFormat::Csv, "2,5,0", "expected 1 to"},
      {"csv empty required", TraceFormat::Csv, "2,,1", "empty prefix_tokens"},
      // Issue 26.17: strtod read "0x10" as 16 s; YAML configs reject duplicate keys, and so do
      // JSON rows now (nlohmann kept the last one).
      {"csv hexadecimal", TraceFormat::Csv, "0x10,5,1", "expected a number in decimal digits"},
      {"csv infinity word", TraceFormat::Csv, "2,5,infinity", "expected a number in decimal"},
      {"jsonl duplicate key", TraceFormat::Jsonl,
       "{\"arrival_s\": 2, \"prefix_tokens\": 5, \"new_tokens\": 1, \"arrival_s\": 3}",
       "duplicate key \"arrival_s\""},
      {"mooncake duplicate key", TraceFormat::Mooncake,
       "{\"timestamp\": 2000, \"input_length\": 10, \"input_length\": 20, \"output_length\": 1, "
       "\"hash_ids\": [1]}",
       "duplicate key \"input_length\""},
  };
  for (const auto& b : bad) {
    // The bad row is line 3, after two good rows (JSONL, Mooncake) or after a header, a good row
    // and a blank line (CSV: blank lines count); a good row follows it.
    std::string text;
    if (b.format == TraceFormat::Csv)
      text = "arrival_s,prefix_tokens,new_tokens\n1,100,10\n\n";
    else if (b.format == TraceFormat::Mooncake)
      text = good_moon + good_moon;
    else
      text = good_json + good_json;
    text += b.row + "\n";
    text += b.format == TraceFormat::Csv        ? "9,1,1\n"
            : b.format == TraceFormat::Mooncake ? good_moon
                                                : good_json;
    const std::string f = write("bad.txt", text);
    const std::string msg = error_of(spec(f, b.format));
    const std::string line = b.format == TraceFormat::Csv ? ":4: " : ":3: ";
    EXPECT_TRUE(has(msg, f + line)) << b.what << ": " << msg;
    EXPECT_TRUE(has(msg, b.message)) << b.what << ": " << msg;
  }
}

// Issue 24: plain rows are read by a hand-written scanner, anything else by nlohmann::json; both
// must take the same rows to the same values. Each row below is valid JSON whose value is known
// by hand, in a spelling the scanner leaves to the full parser or must read as JSON does.
TEST_F(TraceReader, JsonlRowsInEverySpellingReadAsTheirJsonValues) {
  const std::string f = write(
      "spell.jsonl",
      // exponents, a whole float count and id, a null optional (its default: 1 output token)
      "{\"arrival_s\": 1e0, \"prefix_tokens\": 2.0e3, \"new_tokens\": 7, \"sequence_id\": 5.0, "
      "\"extends_sequence\": false, \"output_tokens\": null}\n"
      // no spaces, keys in another order, -0 tokens (zero), spaces and a tab around the row
      " \t{\"new_tokens\":3,\"arrival_s\":1.25,\"prefix_tokens\":-0}  \n"
      // an escaped key: \u005f is '_'
      "{\"arrival_s\": 2, \"prefix\\u005ftokens\": 4, \"new_tokens\": 1}\n"
      // 18 and 20 digits for a sequence id (both fit in 64 bits)
      "{\"arrival_s\": 2, \"prefix_tokens\": 0, \"new_tokens\": 1, \"sequence_id\": "
      "999999999999999999}\n"
      "{\"arrival_s\": 2, \"prefix_tokens\": 0, \"new_tokens\": 1, \"sequence_id\": "
      "18446744073709551615}\n"
      // a decimal fraction (the double nearest 2.3, as any correctly rounded reader gives) and E
      "{\"arrival_s\": 2.3, \"prefix_tokens\": 1E1, \"new_tokens\": 1, \"extends_sequence\": "
      "true}\n");
  const auto r = read_all(spec(f, TraceFormat::Jsonl));
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0].arrival_s, 1.0);
  EXPECT_EQ(r[0].prefix_tokens, 2000);
  EXPECT_EQ(r[0].new_tokens, 7);
  EXPECT_EQ(r[0].sequence_id, 5u);
  EXPECT_FALSE(r[0].extends_sequence);
  EXPECT_EQ(r[0].output_tokens, 1);
  EXPECT_EQ(r[1].arrival_s, 1.25);
  EXPECT_EQ(r[1].prefix_tokens, 0);
  EXPECT_EQ(r[1].new_tokens, 3);
  EXPECT_EQ(r[2].prefix_tokens, 4);
  EXPECT_EQ(r[3].sequence_id, 999999999999999999u);
  EXPECT_EQ(r[4].sequence_id, 18446744073709551615u);
  EXPECT_EQ(r[5].arrival_s, 2.3);
  EXPECT_EQ(r[5].prefix_tokens, 10);
  EXPECT_TRUE(r[5].extends_sequence);
}

TEST_F(TraceReader, JsonlRowsTheScannerLeavesAreStillRejected) {
  const std::string good = "{\"arrival_s\": 1, \"prefix_tokens\": 100, \"new_tokens\": 10}\n";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{\"arrival_s\": 3, \"prefix_tokens\": 0, \"new_tokens\": 1} x", "not valid JSON"},
      {"{\"arrival_s\": 3, \"prefix_tokens\": 01, \"new_tokens\": 1}", "not valid JSON"},
      {"{\"arrival_s\": 3, \"prefix_tokens\": 1., \"new_tokens\": 1}", "not valid JSON"},
      {"{\"arrival_s\": 3, \"prefix_tokens\": +1, \"new_tokens\": 1}", "not valid JSON"},
      {"{\"arrival_s\": 1e400, \"prefix_tokens\": 0, \"new_tokens\": 1}", "not valid JSON"},
      {"{\"arrival_s\": 3, \"prefix_tokens\": 0, \"new_tokens\": 1,}", "not valid JSON"},
      {"{\"arrival_s\": 3, \"prefix_tokens\": 0, \"new_tokens\": tru}", "not valid JSON"},
      {"{}", "missing \"arrival_s\""},
      {"{\"arrival_s\": null, \"prefix_tokens\": 0, \"new_tokens\": 1}", "missing \"arrival_s\""},
      // more digits than fit in 64 bits: a JSON number all the same, too large a count
      {"{\"arrival_s\": 3, \"prefix_tokens\": 0, \"new_tokens\": 123456789012345678901234567890}",
       "at most 10000000"},
      {"{\"arrival_s\": 3, \"prefix_tokens\": 0, \"new_tokens\": 1, \"sequence_id\": -0}",
       "negative"},
      {"{\"arrival_s\": 3, \"prefix_tokens\": 0, \"new_tokens\": 1, \"sequence_id\": 1.5}",
       "whole number"},
      {"{\"arrival_s\": 3, \"prefix_tokens\": 0, \"new_tokens\": 1, \"new_tokens\": 1}",
       "duplicate key \"new_tokens\""},
      {"{\"arrival_s\": 3, \"prefix_tokens\": 0, \"new_tokens\": 1, \"extends_sequence\": 0}",
       "true or false"},
  };
  for (const auto& [row, message] : bad) {
    const std::string f = write("bad.jsonl", good + good + row + "\n" + good);
    const std::string msg = error_of(spec(f, TraceFormat::Jsonl));
    EXPECT_TRUE(has(msg, f + ":3: ")) << row << ": " << msg;
    EXPECT_TRUE(has(msg, message)) << row << ": " << msg;
  }
}

TEST_F(TraceReader, RowsAcrossTheReadersBlocksAreWhole) {
  // The reader takes the file in 64 KiB blocks: 20,000 rows (~1.2 MB) cross many block edges.
  std::string text;
  std::int64_t tokens = 0;
  for (int i = 1; i <= 20000; ++i) {
    text += "{\"arrival_s\": " + std::to_string(i) +
            ", \"prefix_tokens\": 0, \"new_tokens\": " + std::to_string(i % 977 + 1) + "}\n";
    tokens += i % 977 + 1;
  }
  text.pop_back();  // the last row without its newline
  const TraceSummary s = validate_trace(spec(write("many.jsonl", text), TraceFormat::Jsonl));
  EXPECT_EQ(s.requests, 20000);
  EXPECT_EQ(s.new_tokens, tokens);
  EXPECT_EQ(s.last_arrival_s, 20000.0);
}

TEST_F(TraceReader, DecimalArrivalsAreReadAsStdFromCharsReadsThem) {
  // The reader takes a short decimal by division (digits / 10^k) and any other number through
  // std::from_chars: every row's arrival must be the double std::from_chars gives for its text.
  // Decimals of 1 to 24 places after 1 to 6 integer digits (both sides of 15 digits and of 22
  // places), some with trailing zeros or an exponent.
  std::mt19937_64 rng(7);
  std::vector<std::string> texts;
  std::string trace;
  for (int i = 0; i < 20000; ++i) {
    std::string t = std::to_string(i * 37);
    t += '.';
    const int places = 1 + static_cast<int>(rng() % 22);
    for (int k = 0; k < places; ++k) t += static_cast<char>('0' + rng() % 10);
    if (i % 7 == 0) t += "00";
    if (i % 11 == 0) t += "e0";
    texts.push_back(t);
    trace += "{\"arrival_s\": " + t + ", \"prefix_tokens\": 0, \"new_tokens\": 1}\n";
  }
  const std::vector<Request> rows = read_all(spec(write("d.jsonl", trace), TraceFormat::Jsonl));
  ASSERT_EQ(rows.size(), texts.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double want = -1;
    const auto res = std::from_chars(texts[i].data(), texts[i].data() + texts[i].size(), want);
    ASSERT_EQ(res.ec, std::errc());
    ASSERT_EQ(rows[i].arrival_s, want) << texts[i];
  }
}

TEST_F(TraceReader, LazyReaderYieldsGoodRowsBeforeTheBadOne) {
  // validate_trace is what stops a run before it starts; the reader itself streams.
  const std::string f = write("lazy.jsonl",
                              "{\"arrival_s\": 1, \"prefix_tokens\": 0, \"new_tokens\": 1}\n"
                              "{\"arrival_s\": 2, \"prefix_tokens\": 0, \"new_tokens\": 1}\n"
                              "oops\n");
  TraceSource src(spec(f, TraceFormat::Jsonl));
  Request r;
  EXPECT_TRUE(src.next(r));
  EXPECT_TRUE(src.next(r));
  EXPECT_THROW(src.next(r), InputError);
  // With a limit that stops before the bad row, the trace is valid.
  TraceSpec s = spec(f, TraceFormat::Jsonl);
  s.limit = 2;
  EXPECT_EQ(validate_trace(s).requests, 2);
}

// Issue 24: the run reads its trace on a second thread (ReadAheadTrace), once. It gives the rows
// TraceSource gives, in order, across many hand-over batches; a bad row's error where TraceSource
// throws it, after the rows before it; and, from finish(), the errors of rows the run never took
// and of an empty trace, as validate_trace did before the run.
TEST_F(TraceReader, ReadAheadGivesTheRowsTraceSourceGives) {
  // Many batches; and traces that end inside the constructor's first batch, at its last row, and
  // one row after it (the thread's first batch then holds one row).
  const std::size_t first = ReadAheadTrace::kFirstBatch;
  for (const std::size_t rows : {ReadAheadTrace::kBatch * (ReadAheadTrace::kBatches + 2) + 7,
                                 std::size_t{1}, std::size_t{5}, first, first + 1}) {
    std::string text;
    for (std::size_t i = 0; i < rows; ++i)
      text += "{\"arrival_s\": " + std::to_string(i) +
              ".25, \"prefix_tokens\": " + std::to_string(i % 7 * 100) +
              ", \"new_tokens\": " + std::to_string(1 + i % 13) +
              ", \"output_tokens\": " + std::to_string(1 + i % 3) + "}\n";
    const TraceSpec s = spec(write("many.jsonl", text), TraceFormat::Jsonl);
    const std::vector<Request> want = read_all(s);
    ASSERT_EQ(want.size(), rows);
    ReadAheadTrace ahead(s, "");
    EXPECT_EQ(ahead.describe(), TraceSource(s).describe());
    Request r;
    for (const Request& w : want) {
      ASSERT_TRUE(ahead.next(r)) << rows;
      EXPECT_EQ(r.id, w.id);
      EXPECT_EQ(r.arrival_s, w.arrival_s);
      EXPECT_EQ(r.prefix_tokens, w.prefix_tokens);
      EXPECT_EQ(r.new_tokens, w.new_tokens);
      EXPECT_EQ(r.output_tokens, w.output_tokens);
      EXPECT_EQ(r.workload, w.workload);
    }
    EXPECT_FALSE(ahead.next(r)) << rows;
    EXPECT_FALSE(ahead.next(r)) << rows;  // and stays at the end
    EXPECT_NO_THROW(ahead.finish()) << rows;
  }
}

TEST_F(TraceReader, ReadAheadReportsABadRowWhereverTheRunStopped) {
  std::string text;
  const std::size_t good = ReadAheadTrace::kBatch * 2 + 3;  // the bad row lies batches in
  for (std::size_t i = 0; i < good; ++i)
    text += "{\"arrival_s\": " + std::to_string(i) + ", \"prefix_tokens\": 0, \"new_tokens\": 1}\n";
  text += "oops\n{\"arrival_s\": 1e6, \"prefix_tokens\": 0, \"new_tokens\": 1}\n";
  const TraceSpec s = spec(write("bad.jsonl", text), TraceFormat::Jsonl);
  const std::string want = error_of(s);
  EXPECT_TRUE(has(want, ":" + std::to_string(good + 1))) << want;  // its line
  // A trace whose row after `good` ones is bad, error `want`: the run reads on (the good rows,
  // then the error, at next() and again at finish()), or stops early (finish() reads the rest).
  const auto reads_bad = [](const TraceSpec& t, std::size_t good, const std::string& want) {
    const auto expect_error = [&want](const auto& call, const char* forgot) {
      try {
        call();
        ADD_FAILURE() << forgot;
      } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()), want);
      }
    };
    {
      ReadAheadTrace ahead(t, "");
      Request r;
      for (std::size_t i = 0; i < good; ++i) ASSERT_TRUE(ahead.next(r));
      expect_error([&] { ahead.next(r); }, "no error at the bad row");
      expect_error([&] { ahead.finish(); }, "finish() forgot the error");
    }
    for (std::size_t taken : {std::size_t{0}, std::min(good, std::size_t{10})}) {
      ReadAheadTrace ahead(t, "");
      Request r;
      for (std::size_t i = 0; i < taken; ++i) ASSERT_TRUE(ahead.next(r));
      expect_error([&] { ahead.finish(); }, "finish() did not read the rest");
    }
  };
  reads_bad(s, good, want);
  // A bad row inside the first batch, which the constructor reads on the caller's thread.
  const TraceSpec early = spec(write("early.jsonl",
                                     "{\"arrival_s\": 0, \"prefix_tokens\": 0, \"new_tokens\": 1}\n"
                                     "{\"arrival_s\": 1, \"prefix_tokens\": 0, \"new_tokens\": 1}\n"
                                     "oops\n"),
                               TraceFormat::Jsonl);
  const std::string early_error = error_of(early);
  EXPECT_TRUE(has(early_error, ":3")) << early_error;
  reads_bad(early, 2, early_error);
  {  // an empty trace, as validate_trace says
    const TraceSpec e = spec(write("e.jsonl", "\n\n"), TraceFormat::Jsonl);
    ReadAheadTrace ahead(e, "");
    Request r;
    EXPECT_FALSE(ahead.next(r));
    try {
      ahead.finish();
      ADD_FAILURE() << "an empty trace passed";
    } catch (const InputError& x) {
      EXPECT_EQ(std::string(x.what()), error_of(e));
    }
  }
  {  // a limit before the bad row: valid, as validate_trace says
    TraceSpec lim = s;
    lim.limit = 5;
    ReadAheadTrace ahead(lim, "");
    Request r;
    int n = 0;
    while (ahead.next(r)) ++n;
    EXPECT_EQ(n, 5);
    EXPECT_NO_THROW(ahead.finish());
  }
  // A missing file is refused when it is opened, as TraceSource refuses it.
  EXPECT_THROW(ReadAheadTrace(spec((m_dir / "none.jsonl").string(), TraceFormat::Jsonl), ""),
               InputError);
}

TEST_F(TraceReader, CsvHeaderErrors) {
  const std::string a = write("h1.csv", "arrival_s,prefix_tokens,new_tokenz\n1,2,3\n");
  EXPECT_TRUE(has(error_of(spec(a, TraceFormat::Csv)), a + ":1: "));
  EXPECT_TRUE(has(error_of(spec(a, TraceFormat::Csv)), "did you mean \"new_tokens\""));
  const std::string b = write("h2.csv", "arrival_s,prefix_tokens\n1,2\n");
  EXPECT_TRUE(has(error_of(spec(b, TraceFormat::Csv)), "lacks the column \"new_tokens\""));
  const std::string c = write("h3.csv", "");
  EXPECT_TRUE(has(error_of(spec(c, TraceFormat::Csv)), "header"));
}

}  // namespace
}  // namespace trace_test
}  // namespace kappasim
