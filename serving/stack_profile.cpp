#include "serving/stack_profile.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/preset_listing.hpp"
#include "serving/serving_spec.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {

const std::vector<std::pair<const char*, StackFamily>>& stack_family_names() {
  static const std::vector<std::pair<const char*, StackFamily>> n = {
      {"lmcache", StackFamily::Lmcache},
      {"vllm_native", StackFamily::VllmNative},
      {"ideal", StackFamily::Ideal}};
  return n;
}
const std::vector<std::pair<const char*, NativeCopyUnit>>& native_copy_unit_names() {
  static const std::vector<std::pair<const char*, NativeCopyUnit>> n = {
      {"block", NativeCopyUnit::Block}, {"block_layer_kv", NativeCopyUnit::BlockLayerKv}};
  return n;
}
const std::vector<std::pair<const char*, StackLoad>>& stack_load_names() {
  static const std::vector<std::pair<const char*, StackLoad>> n = {{"in_step", StackLoad::InStep},
                                                                   {"async", StackLoad::Async}};
  return n;
}
const std::vector<std::pair<const char*, StackStore>>& stack_store_names() {
  static const std::vector<std::pair<const char*, StackStore>> n = {
      {"blocking", StackStore::Blocking}, {"async", StackStore::Async}};
  return n;
}

void StackProfile::validate(const std::string& path) const {
  const std::string p = path.empty() ? "" : path + ".";
  if (pool_per_rank_bytes && !(*pool_per_rank_bytes >= 0 && std::isfinite(*pool_per_rank_bytes)))
    throw InputError(p + "pool_per_rank: must be a finite size >= 0");
  if (!(host_reserve_fraction >= 0 && host_reserve_fraction < 1))
    throw InputError(p + "host_reserve_fraction: must be in [0, 1)");
  copy_kernel.validate(p + "copy_kernel");
}

namespace {
// Stack profiles are preset files (presets/stacks/, --preset-dir), not code: listed as
// `kappasim list stack` through the preset listing (core/preset_listing.hpp).
const PresetListing kStackProfiles("stack", "stack", "stack profile", "serving.stack");
}  // namespace

bool stack_supports(const StackProfile& p, LoadPath path) {
  if (p.family == StackFamily::Ideal) return true;
  const LoadPathCosts& c = load_path_costs(path);
  return c.has_family && c.family == p.family;
}

std::string stack_load_paths(const StackProfile& p) {
  std::string out;
  for (const auto& [name, path] : load_path_names())
    if (stack_supports(p, path)) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

double stack_lookup_s(const StackProfile& p, LoadPath path, std::int64_t prompt_chunks,
                      std::int64_t hit_chunks, int layers) {
  double t = p.lookup_fixed_s + static_cast<double>(prompt_chunks) * p.lookup_per_chunk_s;
  if (load_path_costs(path).lookup_per_layer_keys)
    t += static_cast<double>(hit_chunks) * layers * p.lookup_per_layer_key_s;
  return t;
}

double stack_lookup_request_s(const StackProfile& p, std::int64_t prompt_tokens) {
  return p.tier_request.lookup_rpc_s +
         static_cast<double>(prompt_tokens) * p.tier_request.lookup_per_token_s;
}

double front_end_in_s(const StackProfile& p, std::int64_t prompt_tokens) {
  const FrontEndSpec& f = p.front_end;
  return f.http_s + static_cast<double>(prompt_tokens) * f.tokenize_per_token_s + f.ipc_s;
}

double front_end_out_s(const StackProfile& p) { return p.front_end.first_token_s; }

double front_end_s(const StackProfile& p, std::int64_t prompt_tokens) {
  return front_end_in_s(p, prompt_tokens) + front_end_out_s(p);
}

double stack_step_meta_s(const StackProfile& p, std::int64_t prompt_tokens) {
  return static_cast<double>(prompt_tokens) * p.meta_per_token_s;
}

RetrieveCost stack_retrieve(const StackProfile& p, LoadPath path, std::int64_t requests,
                            std::int64_t chunks, std::int64_t blocks, int layers) {
  // The costs the path declares with its name (serving/load_path_kind.hpp); one that declares
  // none costs the stack's fixed CPU per request alone.
  if (const auto retrieve = load_path_costs(path).retrieve)
    return retrieve(p, requests, chunks, blocks, layers);
  RetrieveCost c;
  if (requests > 0) c.cpu_before_s = static_cast<double>(requests) * p.retrieve_fixed_s;
  return c;
}

double stack_store_s(const StackProfile& p, std::int64_t requests, std::int64_t chunks) {
  if (requests == 0) return 0;
  return static_cast<double>(requests) * p.store_fixed_s +
         static_cast<double>(chunks) * p.store_sync_per_chunk_s;
}

TierCapacity default_tier_capacity(const StackProfile& p, const SystemSpec& system, int tp) {
  if (system.host_link.type == LinkType::HbmTier && system.host_link.capacity_bytes)
    return tier_capacity_limit(p, system, tp);
  TierCapacity c;
  if (p.pool_per_rank_bytes) {
    c.bytes = *p.pool_per_rank_bytes * tp;
    c.why = "stack " + p.name + " pinned pool " +
            format_quantity(*p.pool_per_rank_bytes, dim::bytes) + " per TP rank x tp " +
            std::to_string(tp);
    return c;
  }
  return tier_capacity_limit(p, system, tp);
}

TierCapacity tier_capacity_limit(const StackProfile& p, const SystemSpec& system, int tp,
                                 int nodes) {
  TierCapacity c;
  if (system.host_link.type == LinkType::HbmTier && system.host_link.capacity_bytes) {
    c.bytes = *system.host_link.capacity_bytes * tp;
    c.why = "the on-package HBM tier's capacity (" +
            format_quantity(*system.host_link.capacity_bytes, dim::bytes) + " per GPU) x tp " +
            std::to_string(tp);
    return c;
  }
  c.bytes = system.host_memory.capacity_bytes * (1 - p.host_reserve_fraction) * nodes;
  c.why = "host DRAM " + format_quantity(system.host_memory.capacity_bytes, dim::bytes) +
          (nodes > 1 ? " x " + std::to_string(nodes) + " nodes" : std::string()) + " less stack " +
          p.name + "'s reserve of " + format_number(p.host_reserve_fraction) +
          " (OS and serving processes)";
  return c;
}

}  // namespace kappasim
