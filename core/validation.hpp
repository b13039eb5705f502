// Validation rows: every published measurement the simulator is checked against, each with the
// kappasim command that reproduces its setup, and the band its simulated/measured ratio must stay
// in (experiments/validation/*.yaml, docs/validation.md, `kappasim validate`).
//
// A row (YAML map; the schema is fixed, unknown keys are refused):
//   id: h100-sm-h2d-512mib   area: link | compute | serving   source: "..."   setup: "..."
//   measured: 35.2   unit: GB/s   command: [probe, h2d, ..., --format, json]
//   value: /rows/0/bandwidth_Bps   (RFC 6901 JSON pointer into the command's JSON, SI units)
//   band: [0.85, 1.15]   band_why: "..."   gap: "..."   known_gap: true (optional; expected
//   outside the band because the mechanism named in gap is not modelled; --check is strict both
//   ways)   baseline: [run, ..., --format, json] (optional: a ratio row; the simulated value is
//   the command's value / the baseline command's value at the same pointer, unit 1, e.g. TTFT
//   with KV offload / TTFT without)   seeds: [1, 2, 3] (optional, `run` commands: the value is the
//   mean over one run per workload seed, each command and baseline alike; a served figure is one
//   draw of its workload, and a queueing-bound one moves with the draw)
// The simulated value is the pointed-to number converted from SI to `unit`; ratio =
// simulated / measured. How commands run is the caller's (CommandRunner): the CLI forks the
// kappasim binary once per row (one SystemC simulation per process), in the folder of the row's
// file; tests pass a fake.
// Ignores: nothing is cached between rows; rows run in file order, files in name order.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace kappasim {

struct ValidationRow {
  std::string id;
  std::string area;
  std::string source;
  std::string setup;
  double measured = 0;
  std::string unit;
  std::vector<std::string> command;   // kappasim argv, without the program name
  std::vector<std::string> baseline;  // optional: a ratio row's denominator command (unit 1)
  // optional: workload seeds; the value is the mean over runs with `--set workload.seed=S`
  std::vector<unsigned long long> seeds;
  std::string value;  // JSON pointer
  double band_lo = 0, band_hi = 0;
  std::string band_why;
  std::string gap;
  bool known_gap = false;  // expected outside the band: the mechanism in `gap` is not modelled
  SourceLoc loc;           // where the row starts (file:line)
};

// Reads one rows file (a YAML list of rows). InputError with file:line on a missing or unknown
// field, a bad id, area, unit, pointer or band.
std::vector<ValidationRow> read_validation_rows(const std::string& path);
// Every *.yaml under `dir`, in file-name order; ids must be unique across files.
std::vector<ValidationRow> read_validation_dir(const std::string& dir);

struct CommandOutput {
  int exit_code = 0;  // -1: did not run / killed by a signal
  std::string out;    // stdout
  std::string err;    // stderr (for the message when it fails)
};
// Runs kappasim with `argv` in the folder `cwd` (the folder of the row's file, so a row may
// name a model or system YAML beside it, e.g. --model models/llama-2-7b.yaml).
using CommandRunner =
    std::function<CommandOutput(const std::vector<std::string>& argv, const std::string& cwd)>;

struct ValidationResult {
  ValidationRow row;
  double simulated = 0;  // in row.unit
  double ratio = 0;      // simulated / measured
  bool in_band = false;
};

// Runs the row's command and reads its value. InputError naming the row's file:line when the
// command fails, its output is not JSON, or the pointer does not lead to a number.
ValidationResult evaluate_row(const ValidationRow& row, const CommandRunner& run);
// The kappasim argvs evaluate_row runs for `row`, in its order (the command, then the baseline;
// each once per seed), and the folder it runs them in (the row file's).
std::vector<std::vector<std::string>> row_commands(const ValidationRow& row);
std::string row_folder(const ValidationRow& row);

// The docs/validation.md text: a summary per area, the table (source, setup, measured,
// simulated, ratio, band, in/out) and each row's band justification and residual gap.
// Deterministic: no dates, fixed number formats.
std::string validation_markdown(const std::vector<ValidationResult>& results,
                                const std::string& regenerate_command);

}  // namespace kappasim
