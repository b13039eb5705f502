// The sweep runner as a library call (for `kappasim reproduce` and `kappasim sweep`), see
// docs/sweeps.md. Each point runs in its own process: run_sweep fork+execs /proc/self/exe as
// `kappasim sweep point ...`, so the calling program must dispatch `sweep` to cmd_sweep()
// (apps/kappasim/main.cpp does) and must have called register_builtin_kinds().
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sweeps/sweep_results.hpp"  // SweepTable, read_results_csv

namespace kappasim::sweep {

struct SweepOptions {
  std::string spec_path, out_dir;
  int jobs = 0;        // parallel point processes; 0 = std::thread::hardware_concurrency()
  bool quick = false;  // apply the spec's quick: section
  bool quiet = false;  // no progress or summary on stderr
  // Rerun points recorded as invalid (an input error: deterministic for the same spec, so a
  // resume skips them unless a preset or file they read was fixed since).
  bool retry_invalid = false;
  // Write into an --out folder that is not empty and not kappasim's (core/output).
  bool force = false;
  // Run only points with index % N == I. run_sweep never reads the environment: the CLI turns
  // --shard / SLURM_ARRAY_* / JOB_COMPLETION_INDEX into this.
  std::optional<std::pair<int, int>> shard;
  // --preset-dir folders (issue 12.11): added to the registry here and passed to every point
  // (and so recorded in its command.txt).
  std::vector<std::string> preset_dirs;
};

// Runs (or resumes) the sweep into out_dir and merges results.csv / results.jsonl when every
// point has a result or error file. Returns 0 when every point it is responsible for is ok, 3
// when some are invalid or failed (the rest still ran and were merged). Bad spec or options
// throw InputError (the CLI's exit code 2), before any point runs.
int run_sweep(const SweepOptions& opts);

// The -j/--jobs value given on a command line (sweep, reproduce): 1 to 4096, one message for
// every out-of-range value (issue 12, item 14). InputError otherwise.
int checked_jobs(int jobs);

// Fills the registry with run, kappa, selftest (and, once wired, cluster and design).
// apps/kappasim/sweep_kinds.cpp. Idempotent.
void register_builtin_kinds();

}  // namespace kappasim::sweep

namespace kappasim::cli {
// kappasim sweep ... (apps/kappasim/cmd_sweep.cpp)
int cmd_sweep(const std::vector<std::string>& args);
}  // namespace kappasim::cli
