// Per-point result files and the merged tables of a sweep (docs/sweeps.md). Pure text in and
// out plus plain file reads; the runner (sweeps/runner/) writes them atomically.
//
//   points/pNNNNNN/result.json  {"status": "ok", "metrics": {name: number|null, ...}
//                                [, "warnings": [text, ...]]}  (warnings only when there are any)
//   points/pNNNNNN/error.json   {"status": "invalid"|"failed", "message": ..., "exit_code": N |
//                                "signal": "SIGSEGV", "stderr_tail": [...]}
//   results.csv / results.jsonl  one row per point in point order (merge()).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/csv.hpp"  // csv_field
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
  std::vector<std::string> warnings{};  // result.json's "warnings" (issue 26 item 21)
  bool damaged = false;  // result.json exists but is not what result_json writes: run it again
};
std::optional<PointRecord> read_point_record(const std::string& point_dir);

struct MergedResults {
  std::string csv;
  std::string jsonl;
  std::vector<std::size_t> not_ok;  // point indices whose status is invalid or failed
  // Points whose result carries warnings (issue 26 item 21), in point order, with their first
  // warning; results.csv is unchanged (the warnings stay in each point's result.json).
  std::vector<std::pair<std::size_t, std::string>> warned;
};
// The lines a sweep's final output prints for the points that warned: "N of M points warned"
// then up to `max` "  point I (pNNNNNN): TEXT" lines; empty when none warned.
std::string warned_summary(const MergedResults& m, std::size_t total, std::size_t max = 20);
// `records[i]` belongs to `points[i]`. Columns: point, one per axis (its label, then its SI
// companion when it has one), replicate (only
// with replicates > 1), seed, status, error, then the metrics (spec's `metrics:`, else the union
// in first-seen order; a metric named like an earlier column becomes "metric.<name>").
MergedResults merge_results(const SweepSpec& s, const std::vector<Point>& points,
                            const std::vector<PointRecord>& records);

// ---- numeric SI companions of quantity axes (issue 12.13) ----
// An axis whose values are all quantities of one dimension ("64 GB/s", "32 GiB") gets a second
// column right after its own: the value in SI base units, named <label>_<unit> with the unit
// from si_column_unit ("system.host_link.bandwidth_Bps"), so an analysis tool reads numbers.
// Returns the suffix for a dimension: B, s, Bps, FLOP, FLOPps, J, W, JpB, Tps, Hz, m2, m; ""
// for dimensionless (plain numbers are already numeric) and for any other dimension.
std::string si_column_unit(const Dimension& d);
// The SI companion column of an axis key ("" when its values are not quantities of one
// dimension), and its values in SI base units.
std::string axis_si_column(const AxisKey& k, std::vector<double>* values = nullptr);
// Whether `column` is the SI companion of axis label `label` (label + "_" + a known suffix).
bool is_axis_si_column(const std::string& label, const std::string& column);

// A merged table read back (for `kappasim reproduce` and tests).
struct SweepTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};
SweepTable parse_csv(const std::string& text, const std::string& name);
// Reads DIR/results.csv; InputError when it is missing or malformed.
SweepTable read_results_csv(const std::string& dir);

}  // namespace kappasim::sweep
