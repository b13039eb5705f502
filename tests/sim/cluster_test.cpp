// The routed cluster (serving/cluster) on the SystemC engines: round-robin alternation, the
// κ-aware router sending a long-document request to the C2C node and a long fresh prompt to the
// PCIe node (hand-derived from the link bandwidths), every arrival finishing once, and a one-node
// cluster giving the same TTFTs as run_serving with that node alone (run in a forked child: one
// SystemC simulation per process). One simulation per TEST; each is tiny.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "serving/cluster.hpp"
#include "tests/sim/serving_test_util.hpp"

namespace kappasim {
namespace cluster_test {
namespace {

ClusterRunSpec cluster_spec(const std::string& yaml) {
  return read_config<ClusterRunSpec>(parse_yaml(yaml, "<test>"), "");
}

Request request(std::uint64_t id, double at, std::int64_t K, std::int64_t T) {
  Request r;
  r.id = id;
  r.arrival_s = at;
  r.sequence_id = K > 0 ? id : 0;  // a document of its own
  r.prefix_tokens = K;
  r.new_tokens = T;
  r.workload = "test";
  return r;
}

double figure(const std::vector<std::pair<std::string, double>>& f, const std::string& k) {
  for (const auto& [key, v] : f)
    if (key == k) return v;
  ADD_FAILURE() << "no figure " << k;
  return 0;
}

// Two identical Llama-3.1-8B nodes on one H100 each.
const char* kTwoH100 =
    "cluster:\n"
    "  router: round_robin\n"
    "  nodes:\n"
    "    - {name: a, count: 2, system: h100, serving: {" KAPPASIM_TEST_STACK
    "tp: 1, warm_tier: true, store: none}}\n"
    "model: llama-3.1-8b\n"
    "workload: {type: narrativeqa}\n";

TEST(Cluster, RoundRobinAlternatesWhateverTheLoad) {
  const ClusterRunSpec spec = cluster_spec(kTwoH100);
  // Five requests at the same instant and one later: 0, 1, 0, 1, 0, then 1.
  std::vector<Request> rs;
  for (std::uint64_t i = 1; i <= 5; ++i) rs.push_back(request(i, 0, 4096, 128));
  rs.push_back(request(6, 10, 0, 64));
  VectorSource src(rs);
  std::vector<std::size_t> to;
  std::vector<std::pair<std::uint64_t, std::size_t>> finished;
  ClusterSinks sinks;
  sinks.on_route = [&](const Request&, std::size_t node) { to.push_back(node); };
  sinks.on_finish = [&](const RequestRecord& r, std::size_t node) {
    finished.emplace_back(r.id, node);
  };
  const auto f = run_cluster(spec, src, sinks);
  EXPECT_EQ(to, (std::vector<std::size_t>{0, 1, 0, 1, 0, 1}));
  ASSERT_EQ(finished.size(), 6u);
  for (const auto& [id, node] : finished) EXPECT_EQ(node, (id - 1) % 2) << "request " << id;
  EXPECT_EQ(figure(f, "requests_completed"), 6);
  EXPECT_EQ(figure(f, "a.requests_routed"), 6);
  EXPECT_EQ(figure(f, "a.nodes"), 2);
  EXPECT_EQ(figure(f, "gpus"), 2);
}

// The mixed pool: a DGX B200 (8 B200s, PCIe 5 x16 per GPU, TP 8) and a GB200 superchip (2 B200s
// sharing one C2C, TP 2): the same GPU, so the PCIe node has 4x the compute and the C2C node the
// faster host link. Qwen3-235B-A22B in FP8 (the official FP8 checkpoint; 117.5 GB per GPU at
// TP 2 fits the GB200 B200's 186 GB).
const char* kMixed =
    "cluster:\n"
    "  router: kappa_aware\n"
    "  nodes:\n"
    "    - {name: pcie, system: b200, serving: {" KAPPASIM_TEST_STACK
    "tp: 8, compute_dtype: fp8, warm_tier: true,"
    " store: none, granularity: step}}\n"
    "    - {name: c2c, system: gb200, serving: {" KAPPASIM_TEST_STACK
    "tp: 2, compute_dtype: fp8, warm_tier: true,"
    " store: none, granularity: step}}\n"
    "model: qwen3-235b-a22b\n"
    "workload: {type: narrativeqa}\n";

TEST(Cluster, KappaAwareSendsLongDocumentsToC2cAndFreshPromptsToPcie) {
  const ClusterRunSpec spec = cluster_spec(kMixed);
  // Hand: the load of K = 65,536 cached tokens. PCIe node (DDR5-4400 sockets, 225 GB/s for
  // 4 GPUs, do not bind): 48,128 B per token per GPU (4 KV
  // heads replicated to 1 per GPU at TP 8) over the copy kernel's 46.77 GB/s (PCIe 5 x16 wire
  // 63.0 GB/s / SM-read wire cost 1.344) = 67.4 ms. C2C node: 96,256 B per token per GPU (2 heads
  // at TP 2) over 204.8 GB/s (one Grace's 512 GB/s LPDDR5X × 0.8, both GPUs loading) = 30.8 ms.
  const double wire = 32e9 * 16 / 8 * 128.0 / 130.0 * (370.0 * 16) / (370.0 * 16 + 16);
  const double load_pcie = 65536 * 48128.0 / (wire / (1 + 22.0 / 64));
  const double load_c2c = 65536 * 96256.0 / (512e9 * 0.8 / 2);
  ASSERT_GT(load_pcie - load_c2c, 0.035);
  VectorSource src({request(1, 0, 65536, 16), request(2, 100, 0, 8192)});
  std::vector<std::size_t> to;
  std::vector<RequestRecord> recs(3);
  ClusterSinks sinks;
  sinks.on_route = [&](const Request&, std::size_t node) { to.push_back(node); };
  sinks.on_finish = [&](const RequestRecord& r, std::size_t) { recs.at(r.id) = r; };
  std::unique_ptr<Cluster> c;
  run_simulation([&] { c = std::make_unique<Cluster>("cluster", spec, src, sinks); });
  c->check_end();
  // Isolated requests: the estimate's compute parts are batch_step_time of the request alone.
  const ServiceEstimate hp = estimate_service(c->node_model(0), 65536, 16);
  const ServiceEstimate hc = estimate_service(c->node_model(1), 65536, 16);
  // The C2C node's extra compute for 16 tokens is smaller than the load it saves.
  EXPECT_LT(hc.compute_s - hp.compute_s, load_pcie - load_c2c);
  EXPECT_LT(hc.total_s, hp.total_s);
  const ServiceEstimate lp = estimate_service(c->node_model(0), 0, 8192);
  const ServiceEstimate lc = estimate_service(c->node_model(1), 0, 8192);
  EXPECT_LT(lp.total_s, lc.total_s);
  ASSERT_EQ(to, (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(c->node_name(1), "c2c_0");
  EXPECT_EQ(c->routed(0), 1u);
  EXPECT_EQ(c->routed(1), 1u);
  // The simulated load: LMCache's CPU side (0.5 ms + 256 chunks × 0.1 ms), then the link time
  // by hand, plus the copy kernel's per-block costs and the first byte's latency (< 1 ms).
  const double retrieve = 0.5e-3 + 256 * 0.1e-3;
  EXPECT_GE(recs[1].load_s, retrieve + load_c2c);
  EXPECT_LE(recs[1].load_s, retrieve + load_c2c + 1e-3);
  EXPECT_EQ(recs[1].cached_tokens, 65536);
  EXPECT_EQ(recs[2].cached_tokens, 0);
}

TEST(Cluster, EveryArrivalFinishesOnceUnderLoad) {
  const ClusterRunSpec spec = cluster_spec(
      "cluster:\n"
      "  router: least_loaded\n"
      "  nodes:\n"
      "    - {name: pcie, count: 2, system: h100, serving: {" KAPPASIM_TEST_STACK
      "tp: 1, granularity: step}}\n"
      "    - {name: big, system: h100, serving: {" KAPPASIM_TEST_STACK
      "tp: 2, granularity: step}}\n"
      "model: llama-3.1-8b\n"
      "check: true\n"
      "workload: {type: sharegpt, requests: 60, rate: 40, seed: 3}\n");
  auto src = make_source(spec.workload, 3);
  std::uint64_t routed = 0;
  ClusterSinks sinks;
  sinks.on_route = [&](const Request&, std::size_t) { ++routed; };
  const auto f = run_cluster(spec, *src, sinks);  // check: true runs Cluster::check_end()
  EXPECT_EQ(routed, 60u);
  EXPECT_EQ(figure(f, "requests_completed") + figure(f, "requests_rejected"), 60);
  EXPECT_EQ(figure(f, "pcie.requests_routed") + figure(f, "big.requests_routed"), 60);
  EXPECT_EQ(figure(f, "pcie.requests_completed") + figure(f, "big.requests_completed"),
            figure(f, "requests_completed"));
  EXPECT_EQ(figure(f, "gpus"), 4);
  EXPECT_GT(figure(f, "steps"), 0);
}

TEST(Cluster, ANodeMayBeAnyLayout) {
  // Issue 21: a cluster node is the one serving engine, whatever its layout: a TP-1 node beside
  // a DP-2 node (two ranks of one GPU each, dense: they step independently) on dp_balance.
  const ClusterRunSpec spec = cluster_spec(
      "cluster:\n"
      "  router: least_loaded\n"
      "  nodes:\n"
      "    - {name: tp, system: dgx-h100, serving: {" KAPPASIM_TEST_STACK
      "tp: 1, granularity: step}}\n"
      "    - {name: dp, system: dgx-h100, serving: {" KAPPASIM_TEST_STACK
      "tp: 1, granularity: step, parallelism: {dp_attention: 2}}}\n"
      "model: llama-3.1-8b\n"
      "check: true\n"
      "workload: {type: sharegpt, requests: 40, rate: 40, seed: 4}\n");
  auto src = make_source(spec.workload, 4);
  const auto f = run_cluster(spec, *src, ClusterSinks{});  // check: true runs check_end()
  EXPECT_EQ(figure(f, "requests_completed") + figure(f, "requests_rejected"), 40);
  EXPECT_GT(figure(f, "dp.requests_routed"), 0);
  EXPECT_GT(figure(f, "tp.requests_routed"), 0);
  EXPECT_EQ(figure(f, "dp.gpus"), 2);
  EXPECT_EQ(figure(f, "gpus"), 3);
}

// A one-node cluster against run_serving with that node alone (in a forked child, since a
// process holds one simulation): the same requests get the same TTFTs.
TEST(Cluster, OneNodeClusterGivesTheTtftsOfThatNodeAlone) {
  const ClusterRunSpec spec = cluster_spec(
      "cluster:\n"
      "  router: kappa_aware\n"
      "  nodes:\n"
      "    - {name: solo, system: h100, serving: {" KAPPASIM_TEST_STACK
      "tp: 1, warm_tier: true}}\n"
      "model: llama-3.1-8b\n"
      "workload: {type: narrativeqa}\n");
  // Overlapping requests (queueing, batching, shared documents, loads and stores).
  std::vector<Request> rs;
  for (std::uint64_t i = 1; i <= 12; ++i) {
    Request r = request(i, 0.004 * static_cast<double>(i), 2048 * static_cast<std::int64_t>(i % 4),
                        100 + 37 * static_cast<std::int64_t>(i));
    r.sequence_id = i % 4 ? 1 + i % 3 : 0;
    rs.push_back(r);
  }
  int fd[2];
  ASSERT_EQ(pipe(fd), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // child: the node alone
    close(fd[0]);
    VectorSource src(rs);
    std::vector<double> ttft(rs.size() + 1, -1);
    EngineSinks sinks;
    sinks.on_finish = [&](const RequestRecord& r) { ttft.at(r.id) = r.ttft_s; };
    int rc = 0;
    try {
      run_serving(spec.node_run_spec(0), src, sinks);
    } catch (...) {
      rc = 1;
    }
    const auto n = static_cast<ssize_t>(ttft.size() * sizeof(double));
    if (write(fd[1], ttft.data(), ttft.size() * sizeof(double)) != n) rc = 2;
    close(fd[1]);
    _exit(rc);
  }
  close(fd[1]);
  std::vector<double> alone(rs.size() + 1, -2);
  std::size_t got = 0;
  char* buf = reinterpret_cast<char*>(alone.data());
  const std::size_t want = alone.size() * sizeof(double);
  while (got < want) {
    const ssize_t k = read(fd[0], buf + got, want - got);
    if (k <= 0) break;
    got += static_cast<std::size_t>(k);
  }
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_EQ(got, want);

  VectorSource src(rs);
  std::vector<double> ttft(rs.size() + 1, -1);
  ClusterSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r, std::size_t) { ttft.at(r.id) = r.ttft_s; };
  run_cluster(spec, src, sinks);
  for (std::size_t i = 1; i < ttft.size(); ++i) {
    ASSERT_GT(alone[i], 0) << "request " << i;
    EXPECT_NEAR(ttft[i], alone[i], 1e-11) << "request " << i;
  }
}

}  // namespace
}  // namespace cluster_test
}  // namespace kappasim
