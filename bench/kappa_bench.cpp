// Micro-benchmarks of the analytic layer (Google Benchmark). Numbers and the command that
// produced them: docs/benchmarks.md. Benchmarks measure; tests assert.
#include <benchmark/benchmark.h>

#include "core/config.hpp"
#include "models/analytic/kappa.hpp"

namespace kappasim {
namespace {

void BM_ParseQuantity(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(parse_quantity("3.35 TB/s"));
}
BENCHMARK(BM_ParseQuantity);

void BM_FormatQuantity(benchmark::State& state) {
  double v = 63015384615.384613;
  for (auto _ : state) benchmark::DoNotOptimize(format_quantity(v, dim::bandwidth));
}
BENCHMARK(BM_FormatQuantity);

void BM_LoadSystemPreset(benchmark::State& state) {
  ConfigNode ref = ConfigNode::make_scalar("paper-testbed");
  for (auto _ : state)
    benchmark::DoNotOptimize(read_preset_config<SystemSpec>(ref, "system", "system"));
}
BENCHMARK(BM_LoadSystemPreset);

// One analytic κ point (B_kv, F_pf, κ_M, κ_HW, κ_crit, attention at K, TTFT parts).
void BM_EvaluateKappaPoint(benchmark::State& state) {
  ModelSpec m =
      read_preset_config<ModelSpec>(ConfigNode::make_scalar("qwen3-235b-a22b"), "model", "model");
  SystemSpec s =
      read_preset_config<SystemSpec>(ConfigNode::make_scalar("h100"), "system", "system");
  KappaQuery q;
  q.context_k = 65536;
  q.new_tokens_t = 256;
  for (auto _ : state) benchmark::DoNotOptimize(evaluate_kappa(m, s, q));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EvaluateKappaPoint);

}  // namespace
}  // namespace kappasim

BENCHMARK_MAIN();
