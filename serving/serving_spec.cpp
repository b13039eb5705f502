#include "serving/serving_spec.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/units.hpp"
#include "models/gpu/gpu_spec.hpp"

namespace kappasim {

const std::vector<std::pair<const char*, KvBufferKind>>& kv_buffer_kind_names() {
  static const std::vector<std::pair<const char*, KvBufferKind>> n = {{"hbm", KvBufferKind::Hbm},
                                                                      {"sram", KvBufferKind::Sram}};
  return n;
}
const std::vector<std::pair<const char*, KvAllocation>>& kv_allocation_names() {
  static const std::vector<std::pair<const char*, KvAllocation>> n = {
      {"prompt", KvAllocation::Prompt}, {"chunk", KvAllocation::Chunk}};
  return n;
}

const std::vector<std::pair<const char*, KvCacheMode>>& kv_cache_mode_names() {
  static const std::vector<std::pair<const char*, KvCacheMode>> n = {
      {"unified", KvCacheMode::Unified}, {"hybrid", KvCacheMode::Hybrid}};
  return n;
}
const std::vector<std::pair<const char*, RecomputeMode>>& recompute_mode_names() {
  static const std::vector<std::pair<const char*, RecomputeMode>> n = {
      {"none", RecomputeMode::None},
      {"fixed", RecomputeMode::Fixed},
      {"auto", RecomputeMode::Auto}};
  return n;
}

void KvBufferSpec::validate(const std::string& path) const {
  const std::string p = path.empty() ? "" : path + ".";
  if (!(capacity_bytes >= 0) || !std::isfinite(capacity_bytes))
    throw InputError(p + "capacity: must be a finite size >= 0");
  if (bandwidth_Bps && !(*bandwidth_Bps > 0 && std::isfinite(*bandwidth_Bps)))
    throw InputError(p + "bandwidth: must be a finite bandwidth > 0");
  if (enabled() && kind == KvBufferKind::Sram && !bandwidth_Bps)
    throw InputError(p +
                     "bandwidth: required for kind sram (no default: give the store's "
                     "copy bandwidth and its source)");
}

void RecomputeSpec::validate(const std::string& path) const {
  const std::string p = path.empty() ? "" : path + ".";
  if (!(fraction >= 0 && fraction <= 1)) throw InputError(p + "fraction: must be in [0, 1]");
  if (mode != RecomputeMode::Fixed && fraction != 0)
    throw InputError(p + "fraction: only used with mode fixed (got mode " +
                     (mode == RecomputeMode::Auto ? "auto" : "none") + ")");
}

const std::vector<std::pair<const char*, StoreMode>>& store_mode_names() {
  static const std::vector<std::pair<const char*, StoreMode>> n = {
      {"blocking", StoreMode::Blocking},
      {"async", StoreMode::Async},
      {"none", StoreMode::None},
      {"stack", StoreMode::Stack}};
  return n;
}
const std::vector<std::pair<const char*, Granularity>>& granularity_names() {
  static const std::vector<std::pair<const char*, Granularity>> n = {{"step", Granularity::Step},
                                                                     {"layer", Granularity::Layer}};
  return n;
}

void ServingSpec::validate(const std::string& path) const {
  const std::string p = path.empty() ? "" : path + ".";
  const auto& dtypes = GpuSpec::compute_dtypes();
  if (std::find(dtypes.begin(), dtypes.end(), compute_dtype) == dtypes.end()) {
    std::string all;
    for (const auto& d : dtypes) all += (all.empty() ? "" : ", ") + d;
    throw InputError(p + "compute_dtype: expected one of " + all + ", got \"" + compute_dtype +
                     "\"");
  }
  if (tp < 1) throw InputError(p + "tp: must be at least 1");
  // One range, one wording, wherever it is checked (issue 26.14; serving/paged_kv.cpp).
  if (!(gpu_memory_utilization > 0 && gpu_memory_utilization <= 1))
    throw InputError(p +
                     "gpu_memory_utilization: must be a fraction in (0, 1] (the share of HBM "
                     "vLLM may use), got " +
                     format_number(gpu_memory_utilization));
  if (max_num_batched_tokens < 1) throw InputError(p + "max_num_batched_tokens: must be >= 1");
  if (max_num_seqs < 1) throw InputError(p + "max_num_seqs: must be >= 1");
  if (chunk_tokens < 1) throw InputError(p + "chunk_tokens: must be >= 1");
  if (block_tokens < 1) throw InputError(p + "block_tokens: must be >= 1");
  if (!(gpu_memory_utilization > 0 && gpu_memory_utilization <= 1))
    throw InputError(p + "gpu_memory_utilization: must be in (0, 1]");
  if (tier_capacity_bytes && !(*tier_capacity_bytes >= 0 && std::isfinite(*tier_capacity_bytes)))
    throw InputError(p + "tier_capacity: must be a finite size >= 0");
  if (!stack_supports(stack, load_path)) {
    const char* lp = "?";
    for (const auto& [n, v] : load_path_names())
      if (v == load_path) lp = n;
    throw InputError(p + "load_path: " + lp + " is not a load path of stack '" + stack.name +
                     "' (it supports: " + stack_load_paths(stack) + ")");
  }
  if (!(activation_reserve_bytes >= 0))
    throw InputError(p + "activation_reserve: must not be negative");
  if (!(fairness_max_wait_s >= 0)) throw InputError(p + "fairness_max_wait: must not be negative");
  kv_buffer.validate(p + "kv_buffer");
  tiers.validate(p + "tiers");  // issue 14
  recompute.validate(p + "recompute");
  slo.validate(p + "slo");
  // ---- parallelism layout (issue 14): checked against the model and system in
  // RunSpec::validate; layouts beyond plain TP: the engine's ranks ----
  parallelism.validate(p + "parallelism");
  if (parallelism.tp != 0 && parallelism.tp != tp)
    throw InputError(
        p + "parallelism.tp: " + std::to_string(parallelism.tp) + " differs from " + p + "tp " +
        std::to_string(tp) +
        " (the engine runs serving.tp; give the same value or leave parallelism.tp out)");
}

void SloSpec::validate(const std::string& path) const {
  for (const auto& [key, v] :
       {std::pair<const char*, const std::optional<double>&>{"ttft", ttft_s}, {"tpot", tpot_s}})
    if (v && !(*v > 0 && std::isfinite(*v)))
      throw InputError(path + "." + key + ": expected a time > 0 (e.g. \"2 s\"), got " +
                       format_number(*v));
}

// ---- KV tier hierarchy (issue 14) ----
const std::vector<std::pair<const char*, TtftMode>>& ttft_mode_names() {
  static const std::vector<std::pair<const char*, TtftMode>> n = {
      {"engine", TtftMode::Engine}, {"end_to_end", TtftMode::EndToEnd}};
  return n;
}

const std::vector<std::pair<const char*, TierWritePolicy>>& tier_write_policy_names() {
  static const std::vector<std::pair<const char*, TierWritePolicy>> n = {
      {"write_through", TierWritePolicy::WriteThrough}, {"write_back", TierWritePolicy::WriteBack}};
  return n;
}

void TiersSpec::validate(const std::string& path) const {
  const std::string p = path.empty() ? "" : path + ".";
  const std::pair<const char*, double> caps[] = {{"cxl_capacity", cxl_capacity_bytes},
                                                 {"nvme_capacity", nvme_capacity_bytes},
                                                 {"remote_capacity", remote_capacity_bytes}};
  for (const auto& [key, v] : caps)
    if (!(v >= 0) || !std::isfinite(v)) throw InputError(p + key + ": must be a finite size >= 0");
}

void TiersSpec::validate_against(const SystemSpec& system, const std::string& path) const {
  const std::string p = path.empty() ? "" : path + ".";
  validate(path);
  // One check per device tier: the tier needs the device, and fits in what the devices hold.
  const auto fits = [&](const char* key, double capacity, const char* tier, int count,
                        const char* count_key, double device_bytes, const char* device_key,
                        const char* memory, const char* device) {
    if (!(capacity > 0)) return;
    if (count < 1)
      throw InputError(p + key + ": " + format_quantity(capacity, dim::bytes) + " of " + tier +
                       " tier on system '" + system.name + "', which has no " + device +
                       " (system." + count_key + " is 0)");
    if (capacity > count * device_bytes * (1 + 1e-12))
      throw InputError(p + key + ": " + format_quantity(capacity, dim::bytes) +
                       " exceeds the system's " + memory + " (system." + count_key + " " +
                       std::to_string(count) + " x system." + device_key + " " +
                       format_quantity(device_bytes, dim::bytes) + ")");
  };
  if (system.has_cxl_pool()) {  // issue 25: the pooled tier holds what the pool's devices hold
    fits("cxl_capacity", cxl_capacity_bytes, "CXL", system.cxl_pool.devices, "cxl_pool.devices",
         system.cxl_pool.device.capacity_bytes, "cxl_pool.device.capacity", "CXL pool's memory",
         "CXL pool");
  } else {
    fits("cxl_capacity", cxl_capacity_bytes, "CXL", system.cxl_devices, "cxl_devices",
         system.cxl.capacity_bytes, "cxl.capacity", "CXL memory", "CXL expander");
  }
  fits("nvme_capacity", nvme_capacity_bytes, "NVMe", system.nvme_drives, "nvme_drives",
       system.nvme.capacity_bytes, "nvme.capacity", "NVMe capacity", "NVMe drive");
  if (remote_capacity_bytes > 0 && !system.nic_Bps)
    throw InputError(p +
                     "remote_capacity: a remote tier needs system.nic_bandwidth (the NIC "
                     "bandwidth per GPU that carries it); system '" +
                     system.name + "' gives none");
}

SchedulerConfig ServingSpec::scheduler_config() const {
  SchedulerConfig c;
  c.max_num_batched_tokens = max_num_batched_tokens;
  c.max_num_seqs = max_num_seqs;
  c.chunked_prefill = chunked_prefill;
  c.kv_allocation = kv_allocation;
  c.policy = policy;
  c.fairness_max_wait_s = fairness_max_wait_s;
  return c;
}

int ServingSpec::tier_chunk_tokens() const {
  return load_path_costs(load_path).block_granular ? block_tokens : chunk_tokens;
}
double ServingSpec::retrieve_fixed_s() const { return stack.retrieve_fixed_s; }
StoreMode ServingSpec::effective_store() const {
  if (store != StoreMode::Stack) return store;
  return stack.store == StackStore::Blocking ? StoreMode::Blocking : StoreMode::Async;
}

void ServingSpec::resolve(const SystemSpec& system,
                          std::vector<std::pair<std::string, Provenance>>* notes) {
  if (store == StoreMode::Stack) {
    store = effective_store();
    if (notes)
      notes->emplace_back(
          "store",
          Provenance{"spec", "stack " + stack.name + "'s own store (" +
                                 (store == StoreMode::Blocking ? "blocking" : "async") + ")"});
  }
  if (!tier_capacity_bytes) {
    const TierCapacity c = default_tier_capacity(stack, system, tp);
    tier_capacity_bytes = c.bytes;
    if (notes) notes->emplace_back("tier_capacity", Provenance{"derived", c.why});
  }
}

double kv_buffer_bandwidth(const KvBufferSpec& b, const GpuSpec& gpu) {
  if (!gpu.hbm_efficiency)
    throw InputError("system.gpu.hbm_efficiency: required by serving.kv_buffer");
  const double hbm = gpu.hbm_bandwidth_Bps * *gpu.hbm_efficiency;  // achievable HBM rate
  if (b.kind == KvBufferKind::Hbm) return b.bandwidth_Bps ? *b.bandwidth_Bps : hbm / 2;
  if (!b.bandwidth_Bps) throw InputError("serving.kv_buffer.bandwidth: required for kind sram");
  return std::min(*b.bandwidth_Bps, hbm);  // the copy writes the KV pages in HBM
}

}  // namespace kappasim
