// Decode through `kappasim run` (issue 23 part 1): a decode run writes the decode columns and
// figures and a prefill-only run of the same workload does not (and has the same prompts), and
// bad decode input exits 2 naming the key or the trace line, writing nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_util.hpp"

namespace kappasim {
namespace decode_cli_test {
namespace {

using test::fresh_dir;
using test::run_shell;
using test::slurp;
using test::summary_value;

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(DecodeCli, ADecodeRunAddsItsColumnsAndFiguresAndKeepsThePrompts) {
  const auto dir = fresh_dir("decode");
  const std::string cfg = (dir / "run.yaml").string();
  {
    std::ofstream f(cfg);
    f << "model: llama-3.1-8b\nsystem: h100\ntrace: false\ncheck: true\n"
         "serving: {tp: 1, slo: {ttft: 2 s, tpot: 50 ms}}\n"
         "workload: {type: sharegpt, requests: 12, rate: 2, seed: 7}\n";
  }
  const std::string bin = KAPPASIM_BIN;
  const auto a =
      run_shell(bin, "run " + cfg + " -q --out " + (dir / "prefill").string(), dir / "e1");
  const auto b = run_shell(
      bin, "run " + cfg + " -q --out " + (dir / "decode").string() + " --set serving.decode=true",
      dir / "e2");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const std::string ca = slurp(dir / "prefill" / "requests.csv");
  const std::string cb = slurp(dir / "decode" / "requests.csv");
  EXPECT_EQ(first_line(ca).find("tpot_s"), std::string::npos);
  EXPECT_NE(first_line(cb).find("e2e_s,output_tokens,tpot_s,preemptions"), std::string::npos);
  const std::string sa = slurp(dir / "prefill" / "summary.json");
  const std::string sb = slurp(dir / "decode" / "summary.json");
  EXPECT_EQ(summary_value(sa, "output_throughput_tps"), -1);  // absent
  // The same 12 requests (prompts) either way; with decode every one generates its reply
  // (ShareGPT: lognormal, median 300), so far more than one token each.
  EXPECT_EQ(summary_value(sb, "requests_completed"), 12);
  EXPECT_EQ(summary_value(sb, "computed_tokens_total") + summary_value(sb, "cached_tokens_total"),
            summary_value(sa, "computed_tokens_total") + summary_value(sa, "cached_tokens_total"));
  EXPECT_GT(summary_value(sb, "output_tokens_total"), 12 * 10);
  EXPECT_GT(summary_value(sb, "tpot_p50_s"), 0);
  EXPECT_GT(summary_value(sb, "e2e_p50_s"), summary_value(sb, "ttft_p50_s"));
  const double att = summary_value(sb, "slo_attainment");
  EXPECT_GE(att, 0);
  EXPECT_LE(att, 1);
}

TEST(DecodeCli, BadDecodeInputExitsTwoNamingTheKeyOrLine) {
  const auto dir = fresh_dir("decode-bad");
  const std::string bin = KAPPASIM_BIN;
  const std::string cfg = (dir / "run.yaml").string();
  {
    std::ofstream f(cfg);
    f << "model: llama-3.1-8b\nsystem: h100\ntrace: false\n"
         "serving: {tp: 1, decode: true, slo: {ttft: 2}}\n"
         "workload: {type: sharegpt, requests: 4, rate: 2}\n";
  }
  const auto r = run_shell(bin, "run " + cfg + " -q --out " + (dir / "o1").string(), dir / "e1");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("serving.slo.ttft"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "o1"));
  // An output length of 0 in a trace: the prefill itself produces one token.
  {
    std::ofstream t(dir / "t.csv");
    t << "arrival_s,prefix_tokens,new_tokens,sequence_id,extends_sequence,output_tokens\n"
         "0,0,100,1,false,5\n"
         "1,0,100,2,false,0\n";
    std::ofstream f(cfg);
    f << "model: llama-3.1-8b\nsystem: h100\ntrace: false\nserving: {tp: 1, decode: true}\n"
         "workload: {type: trace, trace: {path: t.csv, format: csv}}\n";
  }
  const auto z = run_shell(bin, "run " + cfg + " -q --out " + (dir / "o2").string(), dir / "e2");
  EXPECT_EQ(z.code, 2) << z.err;
  EXPECT_NE(z.err.find("t.csv"), std::string::npos) << z.err;
  EXPECT_NE(z.err.find("output tokens 0"), std::string::npos) << z.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "o2"));
}

// requests.csv's `column` for the request with id `id` (NaN when absent).
double request_value(const std::string& csv, const std::string& id, const std::string& column) {
  const auto ids = test::csv_column(csv, "id"), values = test::csv_column(csv, column);
  for (std::size_t i = 0; i < ids.size() && i < values.size(); ++i)
    if (ids[i] == id) return std::stod(values[i]);
  return std::nan("");
}

// Two turns of one conversation (docs/serving-engine.md "Decode blocks"). Turn 1: a 2,000-token
// prompt and 300 output tokens, so its KV ends at 2,000 + 299 tokens (the last token is never
// fed). Turn 2, 60 s later, repeats it and the reply (2,300 tokens) and adds 100.
// - vLLM's native connector (16-token blocks) stores the blocks decode fills: turn 1 leaves
//   floor(2,299 / 16) = 143 blocks = 2,288 tokens in the CPU tier, turn 2's hit.
// - LMCache (256-token chunks, save_decode_cache off) stores turn 1's prompt only:
//   floor(2,000 / 256) = 7 chunks = 1,792 tokens.
TEST(DecodeCli, TheNextChatTurnLoadsTheReplyWhereTheStackStoresDecodeBlocks) {
  const auto dir = fresh_dir("decode-blocks");
  {
    std::ofstream t(dir / "t.csv");
    t << "arrival_s,prefix_tokens,new_tokens,sequence_id,extends_sequence,output_tokens\n"
         "0,0,2000,1,true,300\n"
         "60,2300,100,1,true,1\n";
  }
  const std::string bin = KAPPASIM_BIN;
  double hit[2] = {0, 0};
  const char* stacks[2] = {"vllm-native-0.12, load_path: block_dma", "lmcache-0.3.5"};
  for (int i = 0; i < 2; ++i) {
    const std::string cfg = (dir / ("run" + std::to_string(i) + ".yaml")).string();
    {
      std::ofstream f(cfg);
      f << "model: llama-3.1-8b\nsystem: h100\ntrace: false\ncheck: true\n"
           "serving: {tp: 1, decode: true, stack: "
        << stacks[i] << "}\nworkload: {type: trace, trace: {path: t.csv, format: csv}}\n";
    }
    const std::string out = (dir / ("o" + std::to_string(i))).string();
    const auto r =
        run_shell(bin, "run " + cfg + " -q --out " + out, dir / ("e" + std::to_string(i)));
    ASSERT_EQ(r.code, 0) << r.err;
    hit[i] =
        request_value(slurp(std::filesystem::path(out) / "requests.csv"), "2", "cached_tokens");
  }
  EXPECT_EQ(hit[0], 2288);
  EXPECT_EQ(hit[1], 1792);
}

}  // namespace
}  // namespace decode_cli_test
}  // namespace kappasim
