// Serving metrics: one record per finished request (streamed to requests.csv), one per
// scheduler step, and the run summary (summary.json). Memory is bounded: the CSV streams rows
// to disk as requests finish, and the summary keeps sums, counts, maxima and quantile sketches
// only (core/quantile), never per-request vectors. Pure C++, no SystemC: the engine fills the
// records and calls these. Definitions of every figure: docs/metrics.md.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/quantile.hpp"
#include "serving/time_breakdown.hpp"

namespace kappasim {

struct RequestRecord {
  std::uint64_t id = 0;
  std::string workload;
  double arrival_s = 0;
  double queue_s = 0;    // first scheduled − arrival
  double load_s = 0;     // time its cached KV took to arrive, tier software costs included
  double compute_s = 0;  // its prefill compute time
  double ttft_s = 0;     // finish − arrival
  std::int64_t cached_tokens = 0;    // K loaded (the recomputed leading tokens excluded)
  std::int64_t computed_tokens = 0;  // T prefilled (recomputed tokens included)
  double kappa_ratio = 0;
  double bytes_loaded = 0;  // whole TP group, over the host links
  // Studies (not in requests.csv): KV copied from the GPU-side buffer (whole TP group), the
  // cached tokens recomputed instead of loaded, and the κ ratio the link sees (cached tokens
  // that crossed the link / computed tokens).
  double bytes_from_buffer = 0;
  std::int64_t recomputed_tokens = 0;
  double kappa_link_ratio = 0;
  double bytes_stored = 0;  // whole TP group
  std::string load_path;
  int steps = 0;
  // Where its TTFT went (serving/time_breakdown.hpp; idle stays 0), and what bound its KV load
  // (load_bound_name(); empty when it loaded nothing).
  TimeBreakdown time;
  std::string load_bound;
  LoadBoundTimes load_bound_s;  // its step's load time per bound (not in requests.csv)
};

// Streams requests.csv: a fixed header, one RFC 4180 row per write(), doubles in shortest
// round-trip form (format_number), so the same run gives a byte-identical file.
class RequestsCsvWriter {
 public:
  // Opens (truncates) `path` and writes the header; InputError naming the path on failure.
  explicit RequestsCsvWriter(const std::string& path);
  ~RequestsCsvWriter();
  RequestsCsvWriter(const RequestsCsvWriter&) = delete;
  RequestsCsvWriter& operator=(const RequestsCsvWriter&) = delete;

  void write(const RequestRecord& r);  // std::logic_error after close()
  // Flushes and closes; InputError if the file could not be written. Idempotent.
  void close();

  static const char* header();                     // the header line, without the newline
  static std::string row(const RequestRecord& r);  // one row, without the newline
  std::uint64_t rows_written() const { return m_rows; }

 private:
  std::string m_path;
  std::unique_ptr<std::ofstream> m_out;
  std::uint64_t m_rows = 0;
};

struct StepRecord {
  double start_s = 0, end_s = 0;
  std::int64_t tokens = 0, budget = 0;  // tokens scheduled, token budget of the step
  int seqs = 0;
  double vram_used_fraction = 0;  // GPU KV cache (V_eff) in use, fraction
  double load_s = 0, compute_s = 0;
};

class SummaryBuilder {
 public:
  // Engine-level totals, set at the end of the run.
  struct Totals {
    double simulated_time_s = 0;
    double wall_time_s = 0;  // host wall-clock: the one non-deterministic figure
    int gpus = 0;
    double gpu_busy_s = 0;         // per GPU, average compute-busy time
    double h2d_bytes_per_gpu = 0;  // host-to-device KV bytes per GPU
    double link_capacity_Bps = 0;  // per GPU per direction payload peak
    double link_busy_s = 0;        // per GPU, average time its host link carried KV loads
    double gpu_energy_j = 0;       // all GPUs
    double tdp_w = 0;              // per GPU
    double tier_hit_chunks = 0, tier_miss_chunks = 0;
    std::uint64_t kernel_events = 0;
    std::uint64_t requests_rejected = 0;  // prompts longer than the GPUs' KV cache (never run)
    // Where the GPUs' time went: Σ over steps plus idle (queue unused); sums to
    // simulated_time_s. Load time per bound (CPU software and copies, hidden or not).
    TimeBreakdown time;
    LoadBoundTimes load_bounds;
    // ---- H2D rates three ways (docs/metrics.md) and the serving stack (serving/stack_profile)
    double h2d_model_bytes = 0;  // cached tokens over the link × B_kv of the model (no replicas)
    // Stack software time, by where it sits (run totals, per GPU; docs/serving-stacks.md).
    double stack_scheduler_s = 0, stack_step_cpu_s = 0, stack_gpu_gap_s = 0, stack_cpu_bound_s = 0,
           stack_store_s = 0;
    // ---- the KV tier's honest accounting (kv_tier.hpp)
    double tier_lookups = 0, tier_stored_chunks = 0, tier_evicted_chunks = 0,
           tier_restored_chunks = 0, tier_dropped_chunks = 0, tier_warm_chunks = 0;
    double tier_capacity_bytes = 0, tier_working_set_bytes = 0;
    // ---- engine-specific figures appended after all others, in this order (issue 14: the
    // replica engine's DP/EP/PP figures; empty for the single-group engine)
    std::vector<std::pair<std::string, double>> extra;
    // issue 14: per tier level figures (name, value), appended at the end of the summary; empty
    // without serving.tiers (outputs unchanged).
    std::vector<std::pair<std::string, double>> tier_levels;
  };

  explicit SummaryBuilder(double relative_accuracy = QuantileSketch::kDefaultRelativeAccuracy);

  void add_request(const RequestRecord& r);
  void add_step(const StepRecord& s);

  // Every summary figure in the fixed output order; NaN marks a figure that is undefined for
  // this run (no requests, no steps, a zero denominator) and becomes null in JSON.
  std::vector<std::pair<std::string, double>> figures(const Totals& t) const;
  // A JSON object, one "key": value per line in figures()' order, numbers via format_number,
  // undefined figures as null, a trailing newline.
  std::string to_json(const Totals& t) const;

  std::uint64_t requests() const { return m_requests; }
  std::uint64_t steps() const { return m_steps; }
  const QuantileSketch& ttft() const { return m_ttft; }
  const QuantileSketch& queue() const { return m_queue; }

 private:
  std::uint64_t m_requests = 0;
  QuantileSketch m_ttft;
  QuantileSketch m_queue;
  QuantileSketch m_kappa;
  QuantileSketch m_kappa_link;
  double m_max_wait_s = 0;
  double m_load_sum = 0, m_compute_sum = 0;
  double m_poh_sum = 0;
  std::uint64_t m_poh_n = 0;
  double m_slow_sum = 0, m_slow_sq = 0;  // slowdown = ttft / (load + compute), for Jain's index
  std::uint64_t m_slow_n = 0;
  double m_cached_tokens = 0, m_computed_tokens = 0;
  double m_bytes_loaded = 0, m_bytes_stored = 0;
  double m_bytes_buffer = 0, m_recomputed_tokens = 0;
  double m_last_finish_s = 0;
  TimeBreakdown m_time_sum;  // Σ over requests

  std::uint64_t m_steps = 0;
  double m_step_tokens = 0;
  double m_budget_frac_sum = 0;
  std::uint64_t m_budget_n = 0;
  double m_vram_sum = 0;
  double m_seqs_sum = 0;
  double m_step_time_sum = 0;
};

}  // namespace kappasim
