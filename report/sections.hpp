// The sections of `kappasim reproduce`'s report.md, one file each (report/section_*.cpp), each a
// function of what it reads (sweep results, the analytic model on presets, values an earlier
// section computed) that returns its Markdown and writes its figures' CSV data and gnuplot
// scripts into the figures folder. report/reproduce.cpp runs them in order and assembles the
// report; docs/report.md lists them with their inputs and outputs.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "report/conclusions.hpp"
#include "report/figure.hpp"
#include "report/probe_runner.hpp"
#include "report/sweeps.hpp"

namespace kappasim::report {

// The simulated κ_crit the later sections mark (sections 1, 8.2, 8.4): Qwen3-235B-A22B on
// paper-testbed, kernel load path, T = 128, from section 3's sweep, with the achieved / peak
// link and compute of the same measurement.
struct ReferenceCrossing {
  double kappa_crit_sim = NAN;  // NaN when the row is absent or failed, or never crossed
  bool measured = false;        // the row completed: the two fractions below are its own
  double link_fraction = NAN, compute_fraction = NAN;
};

// 1. Workload κ_ratio distributions: requests from the three built-in generators (seed 1;
// 20,000 each, 2,000 with `quick`) against the analytic κ_crit and `ref`. Writes
// kappa-ratio-<workload>.csv and the figure kappa-ratio-cdf. Also returns each workload's
// generated κ_ratio median (section 8.1 compares κ_crit with them).
struct WorkloadsSection {
  std::string markdown;
  std::map<std::string, double> medians;  // workload name -> median κ_ratio
};
WorkloadsSection section_workloads(bool quick, const ReferenceCrossing& ref,
                                   const FigureFolder& fig);

// 2. Rooflines of three (model, dtype) cases on A100 / H100 / B200: the analytic roof and the
// simulated points (sweep rooflines), analytic and simulated κ_crit (sweep kappa-crit-systems).
// Writes roofline-<model>-<dtype>-<system>-{analytic,sim}.csv and one figure per case.
std::string section_rooflines(const SweepData& rooflines, const SweepData& crit_systems,
                              const FigureFolder& fig);

// 3. Analytic vs simulated κ_crit on paper-testbed (sweep kappa-crit-testbed). Returns the
// table and its reading, and the reference crossing.
struct TestbedSection {
  std::string markdown;
  ReferenceCrossing reference;
};
TestbedSection section_kappa_testbed(const SweepData& testbed);

// 3b. Eq. 6 and its extended closed form from independently probed rates, for every completed
// row of the kappa-crit-testbed sweep; the probes run through `probe` with their captured
// output under `work_dir` (created).
std::string section_eq6_probed(const SweepData& testbed, const ProbeRunner& probe,
                               const std::string& work_dir);

// 4. P_OH over K and T: the analytic grid (computed here) and the simulated points (sweep
// poh). Writes poh-analytic.csv, poh-sim.csv and the figure poh-heatmap.
std::string section_poh(const SweepData& poh, const FigureFolder& fig);

// 5. ShareGPT-like vs NarrativeQA-like at 70 RPS (sweep paper-70rps; TTFT CDFs from each
// point's requests.csv). Writes ttft-70rps-*.csv and two figures.
std::string section_70rps(const SweepData& runs, const FigureFolder& fig);

// 5b. Which serving stack reproduces the paper's testbed (sweeps stacks-kappa-crit,
// stacks-poh, stacks-70rps). Tables only.
std::string section_stacks(const SweepData& kappa, const SweepData& poh, const SweepData& runs,
                           ConclusionLog* log = nullptr);
// 5b's subsection on loads in the step vs asynchronous (issue 23 item 3; sweeps
// stacks-async-kappa-crit, stacks-async-serving): the TTFT-level κ_crit of each load mode beside
// its serving-level crossing, the κ at which the saturated engine's link is busier than its GPU
// computes (interpolated in log κ). Tables and text only.
std::string section_stacks_async(const SweepData& crit, const SweepData& serving,
                                 ConclusionLog* log = nullptr);
// 5b's subsection on the break-even prefix (issue 20 part 3; sweep stacks-break-even): the
// cached prefix from which loading it beats recomputing it, per stack × load path, simulated
// beside analytic. Tables and text only.
std::string section_stacks_break_even(const SweepData& be, ConclusionLog* log = nullptr);

// 6. NVLink-C2C and the unified HBM tier vs PCIe (sweeps c2c, c2c-serving). Writes
// ttft-c2c-*.csv and two figures.
std::string section_c2c(const SweepData& kappa, const SweepData& serving, const FigureFolder& fig,
                        ConclusionLog* log = nullptr);

// 7. Scheduling policies (sweep policies). Writes ttft-policies-*.csv and two figures.
std::string section_policies(const SweepData& runs, const FigureFolder& fig,
                             ConclusionLog* log = nullptr);

// 8.1 Interconnect study (sweep studies/interconnect); `workload_medians` from section 1;
// `reads` (sweep studies/interconnect-reads, may be null): the PCIe 5 -> 6 gain with each
// outstanding-read assumption at the ends of its range (issue 20 part 1).
std::string section_interconnect(const SweepData& study,
                                 const std::map<std::string, double>& workload_medians,
                                 ConclusionLog* log = nullptr, const SweepData* reads = nullptr);

// 8.2 GPU-side KV buffer study (sweep studies/kv-buffer); `kappa_crit_sim` is section 3's
// reference crossing. Writes kv-buffer-*.csv and the figure kv-buffer.
std::string section_kv_buffer(const SweepData& study, double kappa_crit_sim,
                              const FigureFolder& fig, ConclusionLog* log = nullptr);

// 8.3 FLOP / link / SRAM rebalancing: the analytic search (sweep studies/rebalance), then its
// best splits emitted as presets into DIR/rebalance-sim/*.yaml and simulated through `sweeps`
// (three generated sweeps). Writes rebalance-*.csv and the figure rebalance.
std::string section_rebalancing(const SweepData& search, SweepSource& sweeps,
                                const FigureFolder& fig, ConclusionLog* log = nullptr);

// 8.4 KV compression and partial recompute (sweep studies/kv-compression); `kappa_crit_sim` as
// in 8.2 (the kernel path's), `kappa_crit_layerwise` the layer-wise path's (section 5b:
// LMCache 0.3.5's layer-wise κ_crit at T = 128 on paper-testbed; NaN: not stated).
std::string section_kv_compression(const SweepData& study, double kappa_crit_sim,
                                   double kappa_crit_layerwise, ConclusionLog* log = nullptr);

// 8.5 κ-aware routing across a mixed pool (sweep studies/routing).
// `layerwise` (sweep studies/routing-layerwise, may be null): the same pool on the layer-wise
// baseline, at loads that bracket its own capacity.
std::string section_routing(const SweepData& study, ConclusionLog* log = nullptr,
                            const SweepData* layerwise = nullptr);

// 8.9 P/D disaggregation under KV offloading (sweeps studies/pd-disagg and, may be null,
// studies/pd-disagg-layerwise): co-located against prefill/decode pools. `handoff` (sweep
// studies/pd-disagg-handoff, may be null): the pools under each transfer-engine profile (column
// `handoff`: a profile, or "profile/variant" for one of its assumptions at its other end).
// `node` (sweep studies/pd-disagg-node, may be null): the same pools on one node (hand-off over
// NVLink) and on two (over the NICs), per profile (columns `link`, `handoff`). `decode_tier`
// (sweep studies/pd-decode-tier, may be null): one prefill and one decode node on a shared CXL
// pool, the decode node without its own KV tier or storing decode chunks there (columns
// `decode_tier`: none / pool, `rate`).
std::string section_disagg(const SweepData& kernel, const SweepData* layerwise = nullptr,
                           ConclusionLog* log = nullptr, const SweepData* handoff = nullptr,
                           const SweepData* node = nullptr, const SweepData* decode_tier = nullptr);

}  // namespace kappasim::report

// ---- issue 14 studies (h-studies): memory tiers (8.6) and parallelism layouts (8.7) ----
#include "report/tier_cost.hpp"
namespace kappasim::report {

// One configuration of the memory-tier study: its capacities (installed DRAM from its label,
// CXL / NVMe from the cxl_capacity / nvme_capacity columns) and mean throughput.
struct MemoryTierRow {
  std::string workload, memory, error;
  bool ok = false;
  TierCapacities capacities;
  double throughput_rps = NAN;
};
MemoryTierRow memory_tier_row(const ResultsTable& t, const std::vector<std::size_t>& rows);
// Tables with the union of their columns, rows in order (blank where a table lacks a column).
ResultsTable combine_tables(const std::vector<const ResultsTable*>& tables);
// 8.6 Memory tiers (sweeps studies/memory-tiers-dram and studies/memory-tiers-lower). A null
// sweep is absent: with `lower` null, its rows say "not simulated: <lower_missing>".
// `capacity` (sweep studies/memory-tiers-capacity, may be null): each configuration's capacity at
// a TTFT SLO and its cost per request there, with intervals (issue 22 item 4).
std::string section_memory_tiers(const SweepData* dram, const SweepData* lower,
                                 const std::string& lower_missing,
                                 const SweepData* capacity = nullptr, ConclusionLog* log = nullptr);

// 8.7 analytic side: κ_crit and weights per layout of the study on `system` (compute `dtype`).
struct LayoutKappa {
  std::string model, layout;
  int gpus = 0;
  double b_kv_share = 0, kv_replication = 0, kappa_crit = 0, kappa_crit_comm = 0;
  double weight_bytes_gpu = 0;
  bool fits = false;
  // Issue 23 item 5, the same layout with replicated KV loaded once (KappaQuery::
  // shard_replicated_kv: 1/r over the host link, an NVLink ring all-gather in series): κ_crit
  // and κ_crit with communication (equal to the above where nothing is replicated), and the
  // κ_crit a connector overlapping the all-gather with the host loads would reach (the host
  // link's b / r alone, when the gather hides behind it).
  double kappa_crit_shard = 0, kappa_crit_comm_shard = 0, kappa_crit_shard_overlap = 0;
  double nvlink_Bps = 0;  // the all-gather's rate (the GPU preset's NVLink per direction)
};
std::vector<LayoutKappa> parallelism_kappa(const std::string& system, const std::string& dtype);
// 8.7 Parallelism layouts: the analytic rows and the serving sweep studies/parallelism (null:
// its rows say "not simulated: <serving_missing>").
std::string section_parallelism(const std::vector<LayoutKappa>& kappa, const SweepData* serving,
                                const std::string& serving_missing, ConclusionLog* log = nullptr);

// 8.8 κ across generations (issue 25, report/section_generations.cpp): the analytic κ per GPU
// (TP 1) of every generation's system preset for a fixed set of model columns, at one
// precision (compute and KV: "bf16", "fp8", or "fp4" = FP4 compute with NVFP4 KV).
struct GenerationRow {
  std::string system, line, gpu, link;
  std::string error;  // the part cannot be evaluated at this precision (no such peak)
  double compute = 0, bandwidth = 0, kappa_hw = 0;  // per GPU
  std::vector<double> kappa_m, kappa_crit;          // one per column
};
struct GenerationsKappa {
  std::string dtype;
  std::vector<std::string> columns;  // model labels
  std::vector<GenerationRow> rows;
  // Sliding-window models: κ_crit with the window left (K → ∞) over κ_crit on the unified cache
  // (B_kv,unified / B_kv,window, the same on every part), by model preset name.
  std::vector<std::pair<std::string, double>> window_gain;
  // Issue 25: models across attention variants on one part (kVariantSystem), per GPU at TP 1:
  // B_kv and κ_crit on the unified cache (NaN where a unified cache cannot hold the model) and
  // with a hybrid-aware connector (what the prefix leaves, KV(K) / K) at each of kVariantK.
  struct Variant {
    std::string model, label, kinds;  // kinds: the layer counts by kind ("18 F + 18 S")
    double b_kv_unified = 0, kappa_crit_unified = 0;
    std::vector<double> b_kv_hybrid, kappa_crit_hybrid;  // one per kVariantK, then K → ∞
    std::string unified_note, hybrid_note;  // why a column is empty, what the row hinges on
  };
  std::vector<Variant> variants;
};
// The part and the cached-token counts of GenerationsKappa::variants.
inline constexpr const char* kVariantSystem = "b200";
inline constexpr double kVariantK[] = {8192, 100000};
GenerationsKappa generations_kappa(const std::string& dtype);
// The host-link bandwidth per GPU that keeps a request of `kappa_ratio` compute-bound on the
// row's part for column `column` (Eq. 6: κ_ratio · C / κ_M); NaN without that column.
double bandwidth_needed(const GenerationRow& row, std::size_t column, double kappa_ratio);
// `sim`: the sweep studies/generations (simulated κ_crit per part; null: the section is analytic
// only). `variants_sim`: the sweep studies/attention-variants (simulated κ_crit per attention
// variant, unified and hybrid-aware KV; null: not shown).
std::string section_generations(const GenerationsKappa& bf16, const GenerationsKappa& fp8,
                                const GenerationsKappa& fp4, const SweepData* sim,
                                const std::map<std::string, double>& workload_medians,
                                ConclusionLog* log = nullptr,
                                const SweepData* variants_sim = nullptr);

}  // namespace kappasim::report
