// A design point evaluated on a workload: the `design` sweep kind's config and its evaluation
// (docs/design-model.md).
//
//   design:
//     coefficients: h100-4n        # presets/design/ (default h100-4n), or a map with overrides
//     mode: area                   # area | power
//     compute_fraction: 0.95
//     link_fraction: 0.05          # sram_fraction: the rest, unless given
//   model: llama-3.1-70b
//   tp: 8
//   kv_dtype: bf16
//   fpf_convention: 2n-active
//   attention: true                # attention FLOPs over the cached context in t_compute
//   workload: {type: narrativeqa, requests: 2000}   # sharegpt | narrativeqa | docfinqa | mix
//   host: h100                     # a system preset whose host side feeds the link (default:
//                                  # the coefficients' host_system, DGX H100 for h100-4n), or
//                                  # `unlimited` (die-only view: the PHY is the load rate), or
//                                  # {system: ..., root_port_bandwidth: 315 GB/s}
//
// Evaluation: the area/power model gives peak C, link PHY bandwidth and SRAM bytes; the host
// bound (host_bound.hpp) turns the PHY into the effective load rate BW = min(PHY, the GPU's
// share of its host: socket DRAM x efficiency / GPUs loading from it, socket links, root ports);
// evaluate_kappa on the model with C and BW gives κ_crit and, per sampled request (K cached,
// T new tokens), the transfer and compute times; the SRAM serves a request's cached prefix when it
// is resident (popularity model below) and the link carries the rest. TTFT = max(load + compute /
// L, load / L + compute): transfers overlap compute layer by layer (serving/request_cost).
// Throughput = requests / max(total compute, total load): one TP instance with compute and link
// pipelined across requests. Deterministic for a seed.
//
// SRAM residency (each GPU of the TP group holds its KV shard, b_kv_gpu bytes per token):
//   document QA  a static buffer holding the most popular documents that fit, in popularity
//                order (zipf rank, or catalogue order when uniform), skipping any that do not
//                fit; a request hits when its document is resident.
//   chat         every conversation is its own prefix; the buffer is shared by the
//                conversations waiting for their next turn, rate x think_time of them (Little's
//                law); a request hits when its history fits in its equal share.
//   mix          each component keeps its own model above over a share of the SRAM equal to
//                its share of the requests [A]; a request is looked up in its component's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/analytic/kappa.hpp"
#include "models/design/area_power.hpp"
#include "models/design/host_bound.hpp"
#include "models/llm/architecture.hpp"
#include "systems/system_spec.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {

struct DesignSpec {
  DesignCoefficients coefficients;
  DesignSplit split;
  template <class V>
  void visit(V& v) {
    v.object("coefficients", coefficients,
             req("area/power coefficients and baseline die (a design preset)"), "design");
    split.visit(v);
  }
  void validate(const std::string& path) const { split.validate(path); }
};

// Where the link's far end is. Written as a map, or a scalar: `unlimited`, or a system preset.
struct DesignHostSpec {
  bool unlimited = false;
  SystemSpec system;  // read_design_eval fills it from the coefficients' host_system when absent
  std::optional<double> root_port_Bps;
  template <class V>
  void visit(V& v) {
    v.boolean("unlimited", unlimited,
              opt("die-only view: no host bound, the PHY bandwidth is the load rate"));
    v.object("system", system,
             opt("system preset whose host memory, sockets and KV-pool placement feed the GPU "
                 "(default: the coefficients' host_system)"),
             "system");
    v.quantity("root_port_bandwidth", root_port_Bps, dim::bandwidth,
               opt("PCIe root-port bandwidth per socket shared by its GPUs (lanes x lane rate); "
                   "none by default"));
  }
  void validate(const std::string&) const {}
};

struct DesignEvalSpec {
  DesignSpec design;
  ModelSpec model;
  int tp = 1;
  DType kv_dtype = DType::Bf16;
  FpfConvention convention = FpfConvention::TwoNActive;
  bool attention = true;
  WorkloadSpec workload;
  DesignHostSpec host;

  template <class V>
  void visit(V& v) {
    v.object("design", design, req("the design point: coefficients, mode, fractions"));
    v.object("model", model, req("the LLM"), "model");
    v.integer("tp", tp, opt("tensor parallelism (GPUs per instance)", Range::AtLeastOne));
    v.choice("kv_dtype", kv_dtype, dtype_names(), opt("KV cache dtype"));
    v.choice("fpf_convention", convention, fpf_convention_names(),
             opt("F_pf convention of the κ model"));
    v.boolean("attention", attention,
              opt("count attention FLOPs over the cached context in the compute time"));
    v.object("workload", workload,
             opt("the request sample: sharegpt | narrativeqa | docfinqa; requests = sample size"));
    v.object("host", host,
             opt("the host side of the link: a system preset, `unlimited`, or {system, unlimited, "
                 "root_port_bandwidth}"));
  }
  void validate(const std::string& path) const;
};

// Reads the `design` kind's config; `design.coefficients` defaults to the h100-4n preset and
// `host.system` to the coefficients' host_system (InputError when neither names one and the host
// is not unlimited).
DesignEvalSpec read_design_eval(const ConfigNode& config, ProvenanceTable* prov = nullptr);

struct DesignEvaluation {
  DesignPoint hw;
  HostBound link;    // PHY and effective (host-capped) load rate
  KappaPoint kappa;  // evaluate_kappa at the design's C and effective BW (no context)
  std::int64_t requests = 0;
  double kappa_ratio_p50 = 0;
  double sram_hit_fraction = 0;      // requests whose cached prefix came from the SRAM
  double frac_above_kappa_crit = 0;  // requests with K / T > κ_crit (the paper's criterion)
  double frac_link_bound = 0;        // requests whose load took longer than their compute
  double t_compute_mean_s = 0, t_load_mean_s = 0;
  double ttft_mean_s = 0, ttft_p50_s = 0, ttft_p90_s = 0, ttft_p99_s = 0;
  double throughput_rps = 0;       // one TP instance, compute and link pipelined
  double compute_utilization = 0;  // total compute / max(total compute, total load)
};

DesignEvaluation evaluate_design(const DesignEvalSpec& spec, std::uint64_t seed);

// The figures of an evaluation, in a fixed order (the sweep kind's metrics).
std::vector<std::pair<std::string, double>> design_metrics(const DesignEvaluation& e);

}  // namespace kappasim
