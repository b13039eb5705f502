// Hand numbers and helpers shared by the serving-engine tests (tests/sim/serving_*_test.cpp).
// Every number is written from its source (a default in serving/serving_spec.hpp or a preset),
// never read from the program.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "serving/engine.hpp"
#include "serving/run_spec.hpp"
#include "workloads/request.hpp"

namespace kappasim::testing {

// ServingSpec defaults (serving/serving_spec.hpp).
inline constexpr double kStepOverhead = 2e-3;        // step_overhead
inline constexpr double kRetrieveFixed = 0.5e-3;     // lmcache_retrieve_fixed
inline constexpr double kRetrievePerChunk = 0.1e-3;  // lmcache_retrieve_per_chunk
// Engine-mechanics tests pin an explicit stack carrying exactly the per-request / per-chunk costs
// they were written with (the former ServingSpec constants: 0.5 ms per retrieve, 0.1 ms per
// retrieved chunk before the copies, 1.8 ms per store; vLLM native 0.1 ms per request), nothing on
// the scheduler path and no per-chunk gaps, so their hand numbers stay valid whatever the default
// stack. The stack profiles' own costs are tested in tests/unit/stack_profile_test.cpp and
// tests/sim/serving_stack_test.cpp.
#define KAPPASIM_TEST_STACK                                            \
  "stack: {family: lmcache, store: blocking, retrieve_fixed: 0.5 ms, " \
  "retrieve_hash_per_chunk: 0.1 ms, store_fixed: 1.8 ms}, "
#define KAPPASIM_TEST_NATIVE_STACK \
  "stack: {family: vllm_native, store: blocking, retrieve_fixed: 0.1 ms, store_fixed: 0.1 ms}, "
// presets/gpus/h100-sxm5.yaml
inline constexpr double kBlockOverhead = 0.24e-6;  // copy_kernel_block_overhead
// presets/links/pcie5.yaml
inline constexpr double kRtt = 1e-6;  // round_trip_latency
// One PCIe 5.0 x16 direction on the wire: 32 GT/s × 16 lanes / 8 × 128/130, less one 16 B SKP
// ordered set per 370 blocks of 16 B.
inline const double kWire = 32e9 * 16 / 8 * 128.0 / 130.0 * (370.0 * 16) / (370.0 * 16 + 16);
// Llama-3.1-8B: B_kv = 2 (K, V) × 32 layers × 8 KV heads × 128 × 2 B = 131,072 B per token.
inline constexpr double kBkv8b = 2.0 * 32 * 8 * 128 * 2;

// Llama-3.1-8B on one H100 node, no trace, a NarrativeQA-like workload (unused by tests that feed
// their own requests). KAPPASIM_TEST_STACK gives no copy-kernel shape, so the kernel path's reads
// have no loads-in-flight bound of their own and are link-bound at kWire / kSmReadCost as these
// tests compute; a shape-bound kernel (sm_inflight) is checked in
// ServingEngine.KernelPathIsolatedRequestIsRetrieveKernelRoundTripAndBytes and
// tests/sim/links_test.cpp.
inline const char* const kLlama8bH100 =
    "model: llama-3.1-8b\nsystem: h100\n"
    "trace: false\nworkload: {type: narrativeqa}\n";

// 1e-9 relative, at least a few picoseconds (each simulated wait rounds to the 1 ps resolution).
inline double tol(double expected) { return std::max(1e-9 * std::abs(expected), 5e-12); }

inline RunSpec run_spec(const std::string& yaml) {
  return read_config<RunSpec>(parse_yaml(yaml, "<test>"), "");
}

// The compute time of one step over `batch` (kernel_timing, the engine's own timing function).
inline double step_compute(const RunSpec& spec, const std::vector<SeqSlice>& batch) {
  return batch_step_time(spec.model, spec.system.gpu, spec.serving.tp, batch,
                         spec.serving.compute_dtype)
      .total.compute_time_s;
}

// One request of the "test" workload: K cached prefix tokens of `document` (same document =>
// same chunk keys), T new tokens, arriving at `at` seconds.
inline Request request(std::uint64_t id, double at, std::int64_t K, std::int64_t T,
                       std::uint64_t document) {
  Request r;
  r.id = id;
  r.arrival_s = at;
  r.sequence_id = document;
  r.prefix_tokens = K;
  r.new_tokens = T;
  r.workload = "test";
  return r;
}
// A document of its own.
inline Request request(std::uint64_t id, double at, std::int64_t K, std::int64_t T) {
  return request(id, at, K, T, id);
}

// One engine run of `rs` kept in memory: every finished request's record, the summary and the
// engine's totals (serve()).
struct Served {
  std::vector<RequestRecord> recs;
  SummaryBuilder summary;
  SummaryBuilder::Totals totals;
  const RequestRecord& rec(std::uint64_t id) const {
    for (const auto& r : recs)
      if (r.id == id) return r;
    throw std::logic_error("no record for request " + std::to_string(id));
  }
  double figure(const std::string& k) const {
    for (const auto& [name, v] : summary.figures(totals))
      if (name == k) return v;
    ADD_FAILURE() << "no figure " << k;
    return -1;
  }
};

inline void serve(const RunSpec& spec, std::vector<Request> rs, Served& out) {
  VectorSource src(std::move(rs));
  EngineSinks sinks;
  sinks.summary = &out.summary;
  sinks.on_finish = [&](const RequestRecord& r) { out.recs.push_back(r); };
  out.totals = run_serving(spec, src, sinks);
}

}  // namespace kappasim::testing
