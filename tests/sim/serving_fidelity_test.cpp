// serving.link_fidelity (issue 13 item 1): one serving workload on both link back ends, and the
// key's bad values. Hand reasoning in the comments.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/sim_runner.hpp"
#include "serving/engine.hpp"
#include "serving_test_util.hpp"

namespace kappasim {
namespace serving_fidelity_test {
namespace {

using namespace testing;

RunSpec spec_on(const std::string& fidelity, const std::string& path) {
  return run_spec(std::string(kLlama8bH100) +
                  "serving: {" KAPPASIM_TEST_STACK
                  "tp: 1, warm_tier: true, store: blocking, load_path: " +
                  path + ", link_fidelity: " + fidelity + "}\n");
}

// Both back ends charge the same latencies and read the same PcieProtocol; they agree within
// 2% on throughput for transfers of 64 KB and more (tests/sim/agreement_test.cpp). A TTFT here
// is CPU-side costs + a 67 MB load (> 64 KB) + compute + the store; only the load's and the
// store's time can differ, so the TTFTs agree within 2% (of the whole, a looser bound than 2% of
// the copies alone). One simulation per process: the four engines (two paths × two back ends)
// run side by side in one, each on its own GPU and link back end.
TEST(ServingFidelity, PacketAndFlowBackEndsServeTheSameWorkloadWithinTwoPercent) {
  const std::vector<std::string> paths = {"kernel", "layerwise"}, fids = {"flow", "packet"};
  std::vector<RunSpec> specs;
  std::vector<std::unique_ptr<VectorSource>> srcs;
  std::vector<std::vector<RequestRecord>> recs(4);
  std::vector<std::unique_ptr<ServingEngine>> engines;
  for (const std::string& p : paths)
    for (const std::string& f : fids) specs.push_back(spec_on(f, p));
  run_simulation([&] {
    for (std::size_t k = 0; k < specs.size(); ++k) {
      // Three requests, 512 cached tokens each (2 chunks, 67 MB of KV), 128 new; the third
      // arrives while the second is loading, so two loads and a store share the link.
      srcs.push_back(std::make_unique<VectorSource>(std::vector<Request>{
          request(1, 0, 512, 128), request(2, 0.1, 512, 128), request(3, 0.101, 512, 128)}));
      EngineSinks sinks;
      sinks.on_finish = [&recs, k](const RequestRecord& r) { recs[k].push_back(r); };
      engines.push_back(std::make_unique<ServingEngine>(("engine" + std::to_string(k)).c_str(),
                                                        specs[k], *srcs[k], sinks));
    }
  });
  for (std::size_t k = 0; k < specs.size(); ++k) {
    engines[k]->check_end();
    EXPECT_EQ(engines[k]->link().fidelity(), fids[k % 2]);
  }
  for (std::size_t p = 0; p < paths.size(); ++p) {
    const std::vector<RequestRecord>& flow = recs[2 * p];
    const std::vector<RequestRecord>& packet = recs[2 * p + 1];
    ASSERT_EQ(flow.size(), 3u);
    ASSERT_EQ(packet.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(flow[i].id, packet[i].id);
      EXPECT_NEAR(packet[i].ttft_s, flow[i].ttft_s, 0.02 * flow[i].ttft_s) << paths[p] << " " << i;
      EXPECT_EQ(packet[i].bytes_loaded, flow[i].bytes_loaded);
      EXPECT_GT(packet[i].load_s, 0);
    }
  }
}

TEST(ServingFidelity, UnknownFidelityIsAnInputErrorNamingTheKey) {
  try {
    run_spec(std::string(kLlama8bH100) + "serving: {tp: 1, link_fidelity: tlm}\n");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("link_fidelity"), std::string::npos) << m;
    EXPECT_NE(m.find("flow"), std::string::npos) << m;
    EXPECT_NE(m.find("packet"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace serving_fidelity_test
}  // namespace kappasim
