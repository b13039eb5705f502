// The P/D hand-off between two KV layouts through `kappasim run` (docs/disaggregation.md, "The
// re-shard"): a cluster whose prefill node runs Llama-3.1-70B at TP 8 and whose decode node runs
// it at TP 4 x PP 2 runs and exits 0, and its mean hand-off time lies between bounds worked by
// hand from the descriptors each decode GPU posts.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_util.hpp"

namespace kappasim {
namespace pd_reshard_cli_test {
namespace {

using test::CliScratch;
using test::slurp;
using test::summary_value;

}  // namespace

// A request handing off t tokens moves t x 327,680 B (Llama-3.1-70B's KV per token, BF16); each
// decode GPU holds 2 heads of 40 layers and reads them as two pieces, one head from each of two
// prefill GPUs: 2 x ceil(t / 16) blocks x 40 layers x 2 (K, V) = 160 ceil(t / 16) descriptors,
// posted serially at 6.7 ms / 1,785 (nixl-vllm). Each GPU's 40,960 t B at 50 GB/s take far less
// than that posting, so a pull lasts 0.4 ms + 160 ceil(t / 16) x post: over the requests, the mean
// lies between 0.4 ms + 10 x post x mean(t) and that plus 160 x post (the last, partial block).
// mean(t) = handoff_bytes_mean / 327,680. One decode rank pulls one request at a time, so no two
// pulls share a port.
TEST(PdReshardCli, PrefillTp8ToDecodeTp4Pp2RunsWithinHandBounds) {
  const CliScratch s("pd-reshard");
  const std::string cfg =
      s.write("pd.yaml",
              "cluster:\n"
              "  router: round_robin\n"
              "  nodes:\n"
              "    - {name: p, role: prefill, system: dgx-h100, serving: {tp: 8}}\n"
              "    - {name: d, role: decode, system: dgx-h100,\n"
              "       serving: {tp: 4, parallelism: {pp: 2}}}\n"
              "model: llama-3.1-70b\n"
              "workload: {type: sharegpt, requests: 12, rate: 0.5, seed: 2}\n"
              "check: true\n");
  const auto r = s.run("run " + cfg + " -q --out " + (s.dir() / "out").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string j = slurp(s.dir() / "out" / "summary.json");
  const double handoffs = summary_value(j, "handoffs");
  ASSERT_GT(handoffs, 0);
  const double post = 6.7e-3 / 1785;
  const double tokens = summary_value(j, "handoff_bytes_mean") / 327680.0;
  ASSERT_GT(tokens, 16);
  const double lo = 0.4e-3 + 10 * post * tokens;
  const double hi = lo + 160 * post;
  const double t = summary_value(j, "handoff_transfer_mean_s");
  EXPECT_GE(t, lo);
  EXPECT_LE(t, hi * 1.01);  // the copies' issue latency and the NIC latency: microseconds
  // Posting binds: 37.5 us per token against the NIC's 40,960 B / 50 GB/s = 0.82 us per token.
  EXPECT_GT(t - 0.4e-3, 10 * tokens * 40960.0 / 50e9);
}

}  // namespace pd_reshard_cli_test
}  // namespace kappasim
