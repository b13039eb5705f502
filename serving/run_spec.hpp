// The config of `kappasim run` (and of the measure and bench commands): model, system, serving
// settings, workload, outputs. No SystemC here: the config layer and the fuzzers read it without
// linking the simulator.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "models/llm/architecture.hpp"
#include "serving/serving_spec.hpp"
#include "systems/system_spec.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {

// Invariant checks are on by default in debug builds (RunSpec::check, ClusterRunSpec::check).
#ifdef NDEBUG
inline constexpr bool kCheckInvariantsByDefault = false;
#else
inline constexpr bool kCheckInvariantsByDefault = true;
#endif

// The config of `kappasim run`: what runs on what, how it is served, and what load it sees.
struct RunSpec {
  ModelSpec model;
  SystemSpec system;
  ServingSpec serving;
  WorkloadSpec workload;
  bool trace = true;  // write trace.json (Perfetto)
  // Invariant checks (always on in debug builds): bytes sent == bytes received on every link,
  // KV in HBM within capacity, simulated time never going back, every request finishing once.
  bool check = kCheckInvariantsByDefault;

  template <class V>
  void visit(V& v) {
    v.object("model", model, req("the LLM"), "model");
    v.object("system", system, req("the hardware system"), "system");
    v.object("serving", serving, opt("how requests are served (vLLM + LMCache settings)"));
    v.object("workload", workload, req("the requests"));
    v.boolean("trace", trace, opt("write a Perfetto trace (trace.json)"));
    v.boolean("check", check,
              opt("check the simulator's invariants as it runs (on in debug builds)"));
    // ---- the GPU-side KV buffer as GPU hardware (issue 12.12) ----
    // serving.kv_buffer, when on, wins whole; else the GPU preset's kv_buffer applies.
    if constexpr (std::is_same_v<V, ConfigReader>) adopt_gpu_kv_buffer(v);
    // Serving defaults that depend on the system (tier capacity, the stack's store mode),
    // filled here so the effective config shows them with where they came from.
    if constexpr (std::is_same_v<V, ConfigReader>) {
      std::vector<std::pair<std::string, Provenance>> notes;
      serving.resolve(system, &notes);
      for (const auto& [key, p] : notes) v.note(("serving." + key).c_str(), p);
    }
  }
  void adopt_gpu_kv_buffer(ConfigReader& r);
  void validate(const std::string& path) const;
};

// Issue 25: the serving engine models the KV cache as vLLM lays it out when a KV connector is
// configured: unified, every attention layer keeping every token (kv_bytes_per_token_unified,
// models/llm), sliding-window layers attending over their window only. A model with
// linear-attention layers cannot be unified that way (vLLM raises ValueError) and is refused
// (InputError naming `<prefix>model.layer_pattern`); the analytic `kappasim kappa` handles it.
// With serving.kv_cache: hybrid (`hybrid_kv`) a linear-attention model is served: a hybrid-aware
// connector keeps its layers' state per request.
void refuse_unservable_model(const ModelSpec& m, const std::string& prefix, bool hybrid_kv = false);
// The engine's KV bytes per token on one GPU of a TP group of `tp`: unified, every attention
// layer's (kv_bytes_per_token_unified_per_gpu); hybrid, the full layers' (HybridKv::full_Bpt):
// the unit of the paged pool's blocks and of a load's token count, which under hybrid counts the
// load's bytes in full-layer tokens (serving/step_plan split_loads).
double served_kv_unit_per_gpu(const ModelSpec& m, const ServingSpec& sv, int tp);
// The KV bytes per token a stored chunk holds on one GPU (the tier's entries, stores): unified,
// the same as served_kv_unit_per_gpu; hybrid, a chunk of c = tier_chunk_tokens keeps
// c·(full + chunked) + min(W, c)·sliding + the state at its end, over c [A: the tier keeps a
// state at every chunk end, as LMCache's multi-process mode with vLLM --mamba-cache-mode align
// does; docs/accounting.md].
double served_kv_store_per_gpu(const ModelSpec& m, const ServingSpec& sv, int tp);
// What the serving engine keeps per token on one GPU of a TP group of `tp`, in one value: the
// unit of loads and of the paged pool (served_kv_unit_per_gpu), a stored chunk's per token
// (served_kv_store_per_gpu), the hybrid layout (serving.kv_cache: hybrid, issue 25) and the
// copies r of each token's KV in the TP group whose host loads are sharded and all-gathered
// (serving.replicated_kv: shard_allgather, kv_replication_factor; 1: each rank loads its own).
// Hybrid with pipeline stages (serving.parallelism.pp > 1; issue 25, docs/parallelism.md
// "Hybrid KV on layouts"): `stages`, what one GPU of each stage holds (stage_hybrid_kv_per_gpu:
// the layer kinds of its range; they add up to `hybrid`); `stage_share`, each stage's share of
// a stored chunk's bytes (GpuUnit::kv_share); `pool`, the paged pool's HybridKv: `hybrid`
// without stages, else each kind's largest stage share [A: one block table for every stage,
// sized by a stage that holds every kind's largest share; exact when the stages hold the same
// mix]. Its full_Bpt is LayoutCost::kv_bytes_rank (layout_cost with hybrid).
struct ServedKv {
  double unit_per_gpu = 0;
  double store_per_gpu = 0;
  std::optional<HybridKv> hybrid;
  int replication = 1;
  std::optional<HybridKv> pool;
  std::vector<HybridKv> stages;
  std::vector<double> stage_share;
};
ServedKv served_kv(const ModelSpec& m, const ServingSpec& sv, int tp);
// Issue 25: of a hybrid load's bytes by layer kind (`parts`, StepPlan's LoadSplit::link_parts:
// full, sliding, chunked, state, in any common unit, of the whole model's layers), the share one
// GPU of a stage holds that `stage` of `whole` (one GPU's, same tp) describes: each kind's bytes
// times the stage's share of that kind. 0 when the parts are 0.
double hybrid_stage_share(const HybridKv& whole, const HybridKv& stage,
                          const std::array<double, 4>& parts);
// The whole model's KV a prefix of K cached tokens moves (the model-level H2D figure): unified,
// K·kv_bytes_per_token_unified; hybrid, kv_bytes_for_prefix.
double served_kv_model_bytes(const ModelSpec& m, const ServingSpec& sv, double K);
// serving.kv_cache: hybrid with a tp (or a layout's attention tp) the linear heads do not divide:
// InputError naming `<path>serving.kv_cache`. Layouts beyond TP, partial recompute and sharded
// replicated loads are modelled with it (issue 25; docs/accounting.md).
void refuse_hybrid_kv_settings(const ModelSpec& m, const ServingSpec& sv, int system_gpus,
                               const std::string& path);

// The GPU-side KV buffer as GPU hardware (issue 12.12): when `serving.kv_buffer` is off and the
// GPU describes a buffer (capacity > 0), the serving spec takes it. Returns whether it did. A
// `serving.kv_buffer.capacity` written as 0 keeps it off (issue 26 item 22).
bool adopt_gpu_kv_buffer(ServingSpec& serving, const GpuSpec& gpu);

}  // namespace kappasim
