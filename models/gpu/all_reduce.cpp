#include "models/gpu/all_reduce.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "models/gpu/gpu_spec.hpp"

namespace kappasim {

const std::vector<std::pair<const char*, AllReduceLibrary>>& all_reduce_library_names() {
  static const std::vector<std::pair<const char*, AllReduceLibrary>> n = {
      {"nccl", AllReduceLibrary::Nccl},
      {"vllm_custom", AllReduceLibrary::VllmCustom},
      {"fastest", AllReduceLibrary::Fastest}};
  return n;
}

namespace {

// An all-reduce's time and the names all_reduce_time reports, as literals (issue 24: the step
// model asks for the time alone, at every layer class it times; the names were two strings per
// call).
struct Choice {
  double time_s = 0;
  const char* algorithm = "";
  const char* protocol = "";
};

// NCCL's cheapest (algorithm, protocol) for the message.
Choice nccl_time(const AllReduceSpec& a, double p, double bytes) {
  const double steps = 2 * (p - 1);
  const double traffic = 2 * (p - 1) / p * bytes;  // what each GPU sends (= receives)
  Choice best;
  best.time_s = std::numeric_limits<double>::infinity();
  const std::pair<const char*, const AllReduceProtocol*> protos[] = {
      {"ll", &a.ll}, {"ll128", &a.ll128}, {"simple", &a.simple}};
  for (const auto& [name, pr] : protos) {
    double bus = *a.ring_bus_Bps * pr->bandwidth_fraction.value_or(1);
    if (pr->max_bus_Bps) bus = std::min(bus, *pr->max_bus_Bps);
    const double t = *pr->base_latency_s + steps * *pr->step_latency_s + traffic / bus;
    if (t < best.time_s) best = Choice{t, "ring", name};
  }
  if (a.nvls_alg_Bps) {
    const double t = *a.nvls_latency_s + bytes / *a.nvls_alg_Bps;
    if (t < best.time_s) best = Choice{t, "nvls", "simple"};
  }
  return best;
}

Choice choose(const GpuSpec& gpu, int ranks, double bytes, const AllReduceImpl& impl) {
  if (ranks <= 1) return Choice{0, "none", ""};
  if (!gpu.nvlink_Bps)
    throw InputError("system.gpu.nvlink_bandwidth: needed for tensor parallelism (GPU '" +
                     gpu.name + "')");
  gpu.require_sim("system.gpu");
  const double p = ranks;
  const double launch = *gpu.kernel_launch_overhead_s;
  const AllReduceSpec& a = gpu.all_reduce;
  if (!a.ring_bus_Bps) {
    const double t =
        2 * (p - 1) / p * bytes / *gpu.nvlink_Bps + 2 * (p - 1) * *gpu.nvlink_latency_s + launch;
    return Choice{t, "ring_line_rate", ""};
  }
  const bool custom_ranks = ranks == 2 || ranks == 4 || ranks == 6 || ranks == 8;
  // vLLM custom_all_reduce.cuh: one-shot on 2 GPUs, below 512 KiB on <= 4 and below 256 KiB on
  // <= 8 (a fully NVLink-connected group); two-shot otherwise. Two flag barriers each.
  auto custom = [&] {
    const bool one_shot =
        ranks == 2 || (ranks <= 4 && bytes < 512 * 1024.0) || (ranks <= 8 && bytes < 256 * 1024.0);
    const double ingress = one_shot ? (p - 1) * bytes : 2 * (p - 1) / p * bytes;
    const double t = launch + 2 * *a.barrier_latency_s + ingress / *a.ring_bus_Bps;
    return Choice{t, one_shot ? "one_shot" : "two_shot", ""};
  };
  if (impl.library == AllReduceLibrary::VllmCustom && custom_ranks && bytes < impl.custom_max_bytes)
    return custom();
  const Choice n = nccl_time(a, p, bytes);
  if (impl.library == AllReduceLibrary::Fastest && custom_ranks) {
    const Choice c = custom();
    if (c.time_s < n.time_s) return c;
  }
  return n;
}

}  // namespace

AllReduceTime all_reduce_time(const GpuSpec& gpu, int ranks, double bytes,
                              const AllReduceImpl& impl) {
  const Choice c = choose(gpu, ranks, bytes, impl);
  return AllReduceTime{c.time_s, c.algorithm, c.protocol};
}

double all_reduce_seconds(const GpuSpec& gpu, int ranks, double bytes, const AllReduceImpl& impl) {
  return choose(gpu, ranks, bytes, impl).time_s;
}

}  // namespace kappasim
