// The config of `kappasim run` (and of the measure and bench commands): model, system, serving
// settings, workload, outputs. No SystemC here: the config layer and the fuzzers read it without
// linking the simulator.
#pragma once

#include <type_traits>

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
void refuse_unservable_model(const ModelSpec& m, const std::string& prefix);

// The GPU-side KV buffer as GPU hardware (issue 12.12): when `serving.kv_buffer` is off and the
// GPU describes a buffer (capacity > 0), the serving spec takes it. Returns whether it did. A
// `serving.kv_buffer.capacity` written as 0 keeps it off (issue 26 item 22).
bool adopt_gpu_kv_buffer(ServingSpec& serving, const GpuSpec& gpu);

}  // namespace kappasim
