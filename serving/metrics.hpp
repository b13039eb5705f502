// Serving metrics: one record per finished request (streamed to requests.csv), one per
// scheduler step, and the run summary (summary.json). Memory is bounded: the CSV streams rows
// to disk as requests finish, and the summary keeps sums, counts, maxima and quantile sketches
// only (core/quantile), never per-request vectors. Pure C++, no SystemC: the engine fills the
// records and calls these. Definitions of every figure: docs/metrics.md.
#pragma once

#include <cstddef>
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
  // End-to-end TTFT (serving.ttft): its time in the stack's front end, before the scheduler and
  // after its first token (in ttft_s; not in `time`, whose categories then sum to ttft_s less
  // this). 0 for an engine TTFT.
  double front_end_s = 0;
  // End-to-end TTFT: the tier's per-request lookup costs charged for it (StackProfile
  // tier_request: the lookup RPC and the prompt's conversion, on every lookup of it, repeats
  // included). They are on the scheduler's path, so inside its time breakdown
  // (t_sched_software_s), unlike front_end_s. 0 for an engine TTFT.
  double tier_request_s = 0;
  std::int64_t hbm_hit_tokens = 0;   // serving.prefix_caching: held in HBM at its admission
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
  // Decode (serving.decode): end-to-end latency (its last output token − arrival), output tokens
  // generated, TPOT ((e2e − ttft) / (output tokens − 1); NaN for one token), its preemptions and
  // the KV tokens they discarded, and whether it met serving.slo.
  double e2e_s = 0;
  std::int64_t output_tokens = 1;
  double tpot_s = 0;
  int preemptions = 0;
  std::int64_t preempted_kv_tokens = 0;
  bool meets_slo = false;
};

// A requests.csv cell: which field of the record it shows and how (issue 24: a description, not
// a callback, so a row is one loop writing into the file's buffer). Numbers: a whole number below
// 1e16 in full ("-0" for negative zero), any other finite number as its shortest round trip
// (std::to_chars), not finite empty; text as an RFC 4180 field. serving/stat_catalog declares
// every column's cell.
struct CsvCell {
  enum class Kind : unsigned char { None, Unsigned, Integer, Small, Number, Time, Text };
  CsvCell() = default;
  CsvCell(std::nullptr_t) {}  // no cell (a summary figure's key)
  CsvCell(std::uint64_t RequestRecord::*m) : kind(Kind::Unsigned), u(m) {}
  CsvCell(std::int64_t RequestRecord::*m) : kind(Kind::Integer), i(m) {}
  CsvCell(int RequestRecord::*m) : kind(Kind::Small), small(m) {}
  CsvCell(double RequestRecord::*m) : kind(Kind::Number), d(m) {}
  CsvCell(double TimeBreakdown::*m) : kind(Kind::Time), time(m) {}  // r.time.*m
  CsvCell(std::string RequestRecord::*m) : kind(Kind::Text), text(m) {}
  bool empty() const { return kind == Kind::None; }

  Kind kind = Kind::None;
  std::uint64_t RequestRecord::*u = nullptr;
  std::int64_t RequestRecord::*i = nullptr;
  int RequestRecord::*small = nullptr;
  double RequestRecord::*d = nullptr;
  double TimeBreakdown::*time = nullptr;
  std::string RequestRecord::*text = nullptr;
};

struct CsvNumberCache;  // serving/metrics.cpp

// Streams requests.csv: a fixed header, one RFC 4180 row per write() (serving/stat_catalog's
// columns, cells as CsvCell says), so the same run gives a byte-identical file.
class RequestsCsvWriter {
 public:
  // Opens (truncates) `path` and writes the header; InputError naming the path on failure.
  // `decode`: the decode columns too (serving.decode; StatWhen::Decode); `prefix_cache`: the
  // prefix cache's (serving.prefix_caching; StatWhen::PrefixCache).
  explicit RequestsCsvWriter(const std::string& path, bool decode = false,
                             bool prefix_cache = false);
  ~RequestsCsvWriter();
  RequestsCsvWriter(const RequestsCsvWriter&) = delete;
  RequestsCsvWriter& operator=(const RequestsCsvWriter&) = delete;

  void write(const RequestRecord& r);  // std::logic_error after close()
  // Flushes and closes; InputError if the file could not be written. Idempotent.
  void close();

  // The header line and one row, without the newline: serving/stat_catalog's columns.
  static const char* header(bool decode = false, bool prefix_cache = false);
  static std::string row(const RequestRecord& r, bool decode = false, bool prefix_cache = false);
  std::uint64_t rows_written() const { return m_rows; }

  // Past this many rows, rows are formatted and written on a second thread (issue 24: their
  // formatting was ~12% of a 100,000-request run's time), handed over kFormatterBatch at a time.
  // The same bytes in the same order; a short run never starts the thread. At 4,096 the rows
  // before it were a twentieth of a 10,000-request run's time on the simulation's thread, at 512
  // ≈ 1% (each row's numbers: ≈ 560 instructions a number in std::to_chars). It was 512 while a
  // second thread cost a short run glibc's malloc locks from then on; `kappasim run --out` has
  // one from its start now (OutputDir::write_ahead; a trace's run its reader too).
  static constexpr std::uint64_t kFormatterAfter = 64;
  static constexpr std::size_t kFormatterBatch = 256;

 private:
  void flush_rows();                    // m_buf's rows to the stream
  void format(const RequestRecord& r);  // one row into m_buf (flushing it first when full)
  struct Formatter;                     // the second thread and the batches it is handed
  void start_formatter(Formatter* f);   // its thread (std::system_error when none can start)

  std::string m_path;
  const std::vector<CsvCell>* m_cells;  // this file's columns (decode, prefix cache)
  // Rows are formatted straight into this buffer and handed to the stream 64 KiB at a time
  // (issue 24: one write call per ≈ 250 rows; no string per row or cell).
  std::vector<char> m_buf;
  std::size_t m_len = 0;
  std::unique_ptr<CsvNumberCache> m_numbers;  // numbers formatted lately, their text
  std::unique_ptr<std::ofstream> m_out;
  std::uint64_t m_rows = 0;
  // Once started, it alone formats and writes; m_buf, m_numbers and m_out are its until close().
  std::unique_ptr<Formatter> m_formatter;
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
    // ---- figures the engine computes itself, appended after all others (issue 14). Each is
    // declared in serving/stat_catalog.cpp; figures() checks names and order against it.
    // extra: the layout's figures (StatWhen::Replica), every one in declaration order
    // (replica_stat_names()), or none (a TP group).
    std::vector<std::pair<std::string, double>> extra;
    // tier_levels: with serving.tiers, per level in hierarchy order, "tiers_<level>_<field>" for
    // every field of tier_level_stat_fields() in order; empty without serving.tiers.
    std::vector<std::pair<std::string, double>> tier_levels;
    // decode: the run generated output tokens (serving.decode): the StatWhen::Decode figures are
    // present; slo_set: serving.slo gives a bound (else goodput is undefined).
    bool decode = false;
    bool slo_set = false;
    // end_to_end: the run's TTFT is end-to-end (serving.ttft): the StatWhen::EndToEnd figures.
    bool end_to_end = false;
    // kv_shard: serving.replicated_kv is shard_allgather: the StatWhen::ShardKv figures (the
    // copies r per TP group, NVLink all-gather bytes per GPU and time).
    bool kv_shard = false;
    double kv_replication = 1, kv_allgather_bytes_per_gpu = 0, kv_allgather_s = 0;
    // Closed-loop clients (workload.concurrency > 0): the StatWhen::ClosedLoop figures; 0: open
    // loop, none.
    double concurrency = 0;
    double think_time_s = 0;
    // prefix_cache: serving.prefix_caching: the StatWhen::PrefixCache figures.
    bool prefix_cache = false;
    double prefix_cache_evicted_blocks = 0;
  };

  explicit SummaryBuilder(double relative_accuracy = QuantileSketch::kDefaultRelativeAccuracy);

  void add_request(const RequestRecord& r);
  void add_step(const StepRecord& s);
  // One inter-token gap: an output token after a request's first, from the one before it.
  void add_itl(double gap_s);
  void merge_itl(const SummaryBuilder& other);  // `other`'s inter-token gaps, added

  // Every summary figure in the fixed output order, the declarations' (serving/stat_catalog):
  // the figures declared always present, then t.extra and t.tier_levels, each checked against
  // its declarations (std::logic_error naming an undeclared or missing one). NaN marks a figure
  // that is undefined for this run (no requests, no steps, a zero denominator): null in JSON.
  std::vector<std::pair<std::string, double>> figures(const Totals& t) const;
  // A JSON object, one "key": value per line in figures()' order, numbers via format_number,
  // undefined figures as null, a trailing newline.
  std::string to_json(const Totals& t) const;

  std::uint64_t requests() const { return m_a.requests; }
  std::uint64_t steps() const { return m_a.steps; }
  const QuantileSketch& ttft() const { return m_a.ttft; }
  const QuantileSketch& queue() const { return m_a.queue; }

  // The running sums, counts, maxima and sketches the figures are computed from (the formulas sit
  // with each figure's declaration, serving/stat_catalog.cpp).
  struct Accumulators {
    explicit Accumulators(double relative_accuracy)
        : ttft(relative_accuracy),
          queue(relative_accuracy),
          kappa(relative_accuracy),
          kappa_link(relative_accuracy),
          e2e(relative_accuracy),
          tpot(relative_accuracy),
          itl(relative_accuracy),
          arrivals(relative_accuracy),
          finishes(relative_accuracy) {}
    std::uint64_t requests = 0;
    QuantileSketch ttft;
    QuantileSketch queue;
    QuantileSketch kappa;
    QuantileSketch kappa_link;
    double max_wait_s = 0;
    double load_sum = 0, compute_sum = 0;
    double poh_sum = 0;
    std::uint64_t poh_n = 0;
    double slow_sum = 0, slow_sq = 0;  // slowdown = ttft / (load + compute), for Jain's index
    std::uint64_t slow_n = 0;
    double cached_tokens = 0, computed_tokens = 0, hbm_hit_tokens = 0;
    double bytes_loaded = 0, bytes_stored = 0;
    double bytes_buffer = 0, recomputed_tokens = 0;
    double last_finish_s = 0;
    double last_first_token_s = 0;  // the latest arrival + TTFT
    double last_arrival_s = 0;
    double front_end_sum = 0;     // Σ front_end_s (end-to-end TTFT)
    double tier_request_sum = 0;  // Σ tier_request_s (end-to-end TTFT)
    TimeBreakdown time_sum;       // Σ over requests

    std::uint64_t steps = 0;
    double step_tokens = 0;
    double budget_frac_sum = 0;
    std::uint64_t budget_n = 0;
    double vram_sum = 0;
    double seqs_sum = 0;
    double step_time_sum = 0;
    // decode (serving.decode)
    QuantileSketch e2e, tpot, itl;  // tpot: requests with two or more output tokens
    // Arrival and finish times (arrival + e2e), for the rates over the middle of the run
    // (mid_arrival_rps, mid_completion_rps): free of the run's start and its drain.
    QuantileSketch arrivals, finishes;
    double output_tokens = 0, preemptions = 0, preempted_kv_tokens = 0;
    std::uint64_t met_slo = 0;
  };
  const Accumulators& accumulators() const { return m_a; }

 private:
  Accumulators m_a;
};

// summary.json's text for figures in order: a JSON object, one "key": value per line, numbers via
// format_number, NaN as null, a trailing newline; std::logic_error on a key not declared in
// serving/stat_catalog (check_summary_declared). SummaryBuilder::to_json and a cluster's summary.
std::string summary_json(const std::vector<std::pair<std::string, double>>& figures);

}  // namespace kappasim
