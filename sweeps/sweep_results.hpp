// Per-point result files and the merged tables of a sweep (docs/sweeps.md). Pure text in and
// out plus plain file reads; the runner (apps/kappasim/cmd_sweep.cpp) writes them atomically.
//
//   points/pNNNNNN/result.json  {"status": "ok", "metrics": {name: number|null, ...}}
//   points/pNNNNNN/error.json   {"status": "invalid"|"failed", "message": ..., "exit_code": N |
//                                "signal": "SIGSEGV", "stderr_tail": [...]}
//   results.csv / results.jsonl  one row per point in point order (merge()).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sweeps/point_kind.hpp"
#include "sweeps/sweep_spec.hpp"

namespace kappasim::sweep {

// result.json of a finished point (numbers via format_number; NaN and infinities as null).
std::string result_json(const PointResult& r);

// error.json. `exit_code` >= 0 or `signal_name` non-empty says how the process ended.
struct PointError {
  std::string status;   // invalid | failed
  std::string message;  // one line, deterministic (merged into results)
  int exit_code = -1;
  std::string signal_name;
  std::vector<std::string> stderr_tail;  // not merged (may hold pids, addresses)
};
std::string error_json(const PointError& e);

// What a point folder holds: result.json (ok), else error.json (invalid/failed), else nothing.
struct PointRecord {
  std::string status;  // ok | invalid | failed
  std::string error;
  std::vector<std::pair<std::string, std::optional<double>>> metrics;
  bool damaged = false;  // result.json exists but is not what result_json writes: run it again
};
std::optional<PointRecord> read_point_record(const std::string& point_dir);

struct MergedResults {
  std::string csv;
  std::string jsonl;
  std::vector<std::size_t> not_ok;  // point indices whose status is invalid or failed
};
// `records[i]` belongs to `points[i]`. Columns: point, one per axis (its label), replicate (only
// with replicates > 1), seed, status, error, then the metrics (spec's `metrics:`, else the union
// in first-seen order; a metric named like an earlier column becomes "metric.<name>").
MergedResults merge_results(const SweepSpec& s, const std::vector<Point>& points,
                            const std::vector<PointRecord>& records);

// One CSV field quoted when it holds a comma, quote, newline or edge space (RFC 4180).
std::string csv_field(const std::string& s);

// A merged table read back (for `kappasim reproduce` and tests).
struct SweepTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};
SweepTable parse_csv(const std::string& text, const std::string& name);
// Reads DIR/results.csv; InputError when it is missing or malformed.
SweepTable read_results_csv(const std::string& dir);

}  // namespace kappasim::sweep
