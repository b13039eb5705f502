// serving/load_paths: the load path strategies and their registry. The strategies run here on a
// fake LoadContext (a plain clock, copies at a fixed rate, no SystemC time), so their
// choreography and accounting are checked by hand; the engine's own tests run them on the
// fabric. (In the sim test binary only because TransferGroup holds an sc_event.)
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "serving/load_paths/registry.hpp"
#include "serving/stack_profile.hpp"
#include "serving_test_util.hpp"

namespace kappasim {
namespace serving_load_paths_test {
namespace {

using namespace testing;

TEST(ServingLoadPaths, RegistryMakesEachPathByItsServingSpecName) {
  EXPECT_EQ(make_load_path("kernel")->name(), "kernel");
  EXPECT_EQ(make_load_path("kernel")->copy_path(), CopyPath::Kernel);
  EXPECT_EQ(make_load_path("block_dma")->copy_path(), CopyPath::Dma);
  EXPECT_EQ(make_load_path("layerwise")->copy_path(), CopyPath::Dma);
  // Every name ServingSpec accepts has a strategy.
  for (const auto& [name, path] : load_path_names()) EXPECT_EQ(make_load_path(name)->name(), name);
  try {
    make_load_path("nvme");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("serving.load_path: unknown load path 'nvme'"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("(expected one of block_dma, kernel, layerwise)"),
              std::string::npos)
        << e.what();
  }
  // A new path is one registration, and serving.load_path accepts its name (no enum to edit;
  // the `ideal` stack runs any path, the LMCache and vLLM stacks name theirs).
  register_load_path("test_kernel_again", make_kernel_load_path);
  EXPECT_EQ(make_load_path("test_kernel_again")->name(), "kernel");
  const ServingSpec s = read_config<ServingSpec>(
      parse_yaml("load_path: test_kernel_again\nstack: ideal\n", "s.yaml"), "serving");
  EXPECT_EQ(s.load_path, LoadPath{"test_kernel_again"});
  EXPECT_EQ(write_config(s).find("load_path")->scalar, "test_kernel_again");
}

// A path's own retrieve costs: 2 ms of CPU per request, one copy per chunk and per block.
RetrieveCost two_ms_per_request(const StackProfile&, std::int64_t requests, std::int64_t chunks,
                                std::int64_t blocks, int) {
  RetrieveCost c;
  c.cpu_before_s = 2e-3 * static_cast<double>(requests);
  c.copies = chunks + blocks;
  return c;
}

// A new path declares its costs with its registration: no built-in name in the cost model. The
// stacks of its family support it, the stack's retrieve costs are the ones it declares, and the
// tier holds blocks when it says so.
TEST(ServingLoadPaths, ANewPathCarriesItsOwnCosts) {
  LoadPathCosts costs;
  costs.has_family = true;
  costs.family = StackFamily::VllmNative;
  costs.block_granular = true;
  costs.retrieve = two_ms_per_request;
  register_load_path("test_own_costs", make_block_dma_load_path, costs);
  const LoadPath p{"test_own_costs"};
  const ServingSpec vllm = read_config<ServingSpec>(
      parse_yaml("load_path: test_own_costs\nstack: vllm-native-0.12\n", "s.yaml"), "serving");
  EXPECT_TRUE(stack_supports(vllm.stack, p));
  const ServingSpec lmcache = read_config<ServingSpec>(
      parse_yaml("load_path: kernel\nstack: lmcache-0.3.5\n", "s.yaml"), "serving");
  EXPECT_FALSE(stack_supports(lmcache.stack, p));
  const RetrieveCost c = stack_retrieve(vllm.stack, p, 3, 5, 7, 80);
  EXPECT_DOUBLE_EQ(c.cpu_before_s, 6e-3);
  EXPECT_EQ(c.copies, 5 + 7);
  EXPECT_EQ(vllm.tier_chunk_tokens(), vllm.block_tokens);
}

// Copies move at `rate` bytes/s per GPU from their start, nothing else on the link.
class FakeContext : public LoadContext {
 public:
  double t = 0, rate = 1e9, compute_waited = 0;
  int groups = 0;
  double now() const override { return t; }
  void wait(double s) override {
    if (s > 0) t += s;
  }
  void start_copies(CopyGroup& c, double bytes_per_gpu, std::int64_t, CopyPath path) override {
    c.rs.assign(1, TransferRequest{});
    c.rs[0].bytes = bytes_per_gpu;
    c.rs[0].path = path;
    c.rs[0].start_s = t;
    c.rs[0].end_s = t + bytes_per_gpu / rate;
    c.g.finished = false;
    c.g.end_s = c.rs[0].end_s;
    ++groups;
  }
  void wait_copies(CopyGroup& c) override {
    if (c.g.end_s > t) t = c.g.end_s;
    c.g.finished = true;
  }
  CopySplit split_copies(const CopyGroup& c, double t_start) const override {
    CopySplit s;
    s.link = c.g.end_s - t_start;
    s.bounds[LoadBound::Link] = s.link;
    return s;
  }
  void compute(const StepTime& st) override {
    const double s = st.total.compute_time_s;
    step_time->compute_s += s;
    compute_waited += s;
    t += s;
  }
  // Compute alone: it ends after compute_s (no HBM sharing here).
  void start_compute(CopyGroup& c, double compute_s, double) override {
    c.rs.assign(1, TransferRequest{});
    c.rs[0].start_s = t;
    c.rs[0].end_s = t + compute_s;
    c.g.finished = false;
    c.g.end_s = c.rs[0].end_s;
  }
  void trace_copies(const CopyGroup&, const std::string&) override {}
  void trace_load(const std::string&, double, double) override {}
  void trace_link(const std::string&, double, double) override {}
  void trace_compute(double, double) override {}
};

struct Fixture {
  RunSpec spec;
  EngineStats stats;
  TimeBreakdown time;
  LoadBoundTimes bounds;
  FakeContext ctx;
  explicit Fixture(const std::string& serving) {
    spec = run_spec(std::string(kLlama8bH100) + "serving: {" KAPPASIM_TEST_STACK + serving + "}\n");
    ctx.spec = &spec;
    ctx.kv_bytes_per_token_gpu = 1000;
    ctx.kv_bytes_per_token_link = 1000;
    ctx.stats = &stats;
    ctx.step_time = &time;
    ctx.step_bounds = &bounds;
  }
};

TEST(ServingLoadPaths, KernelPathIsRetrieveCpuThenCopiesThenCompute) {
  Fixture f("load_path: kernel");
  // One request, 2 chunks of 256 tokens over the link: 512 × 1,000 B = 512 kB at 1 GB/s =
  // 0.512 ms. The test stack: 0.5 ms per request + 0.1 ms per chunk before the copies = 0.7 ms.
  LoadSplit ls;
  ls.link_tokens = 512;
  ls.chunks = ls.link_chunks = 2;
  StepTime st;
  st.total.compute_time_s = 10e-3;
  const double load = make_load_path("kernel")->run(f.ctx, ls, 1, st);
  EXPECT_NEAR(load, 0.7e-3 + 0.512e-3, 1e-15);
  EXPECT_NEAR(f.ctx.t, 0.7e-3 + 0.512e-3 + 10e-3, 1e-15);  // compute after the load
  EXPECT_EQ(f.ctx.groups, 1);
  EXPECT_NEAR(f.time.load_software_s, 0.7e-3, 1e-15);
  EXPECT_NEAR(f.time.load_link_s, 0.512e-3, 1e-15);
  EXPECT_NEAR(f.time.compute_s, 10e-3, 1e-15);
  // Breakdown = the step's time; bounds: software (the CPU) and link.
  EXPECT_NEAR(f.time.sum(), f.ctx.t, 1e-15);
  EXPECT_NEAR(f.bounds[LoadBound::Software], 0.7e-3, 1e-15);
  EXPECT_NEAR(f.bounds[LoadBound::Link], 0.512e-3, 1e-15);
  EXPECT_EQ(f.stats.loaded_bytes_gpu, 512000);
  EXPECT_NEAR(f.stats.stack.step_cpu_s, 0.7e-3, 1e-15);
}

TEST(ServingLoadPaths, LayerwiseStepPipelineHidesTheLoadBehindCompute) {
  Fixture f("load_path: layerwise, granularity: step");
  // The same 512 kB load (0.512 ms after 0.7 ms of CPU) under 10 ms of compute over L = 32
  // layers, last layer 0.3 ms: end = t_pipe + max(0.512 + 0.3, 0.512 / 32 + 10) ms = t_pipe +
  // 10.016 ms. Exposed load: 0.016 ms (the first layer's), charged to the link; compute 10 ms.
  LoadSplit ls;
  ls.link_tokens = 512;
  ls.chunks = ls.link_chunks = 2;
  StepTime st;
  st.total.compute_time_s = 10e-3;
  st.last_layer_s = 0.3e-3;
  const double load = make_load_path("layerwise")->run(f.ctx, ls, 1, st);
  EXPECT_NEAR(load, 0.7e-3 + 0.512e-3, 1e-15);
  EXPECT_NEAR(f.ctx.t, 0.7e-3 + 0.512e-3 / 32 + 10e-3, 1e-15);
  EXPECT_NEAR(f.time.compute_s, 10e-3, 1e-15);
  EXPECT_NEAR(f.time.load_link_s, 0.512e-3 / 32, 1e-15);
  EXPECT_NEAR(f.time.sum(), f.ctx.t, 1e-15);
  EXPECT_NEAR(f.bounds[LoadBound::Link], 0.512e-3, 1e-15);  // the whole load, hidden or not
  EXPECT_EQ(f.ctx.compute_waited, 0);                       // the strategy overlaps compute itself
}

}  // namespace
}  // namespace serving_load_paths_test
}  // namespace kappasim
