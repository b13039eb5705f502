// The sweep runner (docs/sweeps.md): runs a sweep spec's points, each in its own process, into a
// resumable sweep folder, and merges their results. No argv and no environment: the command
// line (apps/kappasim/cmd_sweep.cpp) turns options and SLURM_ARRAY_* / JOB_COMPLETION_INDEX into
// the structs below (resolve_shard reads the environment only through the function it is given).
//
// The process protocol: run_sweep fork+execs `EXE sweep point --kind K --config P/point.yaml
// --base-dir B --seed S --out P [--preset-dir D]...` for every point, so EXE must dispatch
// `sweep point` to run_point() (the kappasim executable does). One SystemC simulation per
// process is why; it also isolates a point that crashes. The kinds come from the registry
// (sweeps/point_kind.hpp), filled by each domain's own file at static initialisation.
//
// Ignores: scheduling across machines (a Slurm array or Indexed Job runs one shard per task; the
// last shard to finish, or `sweep collect`, merges), wall-clock limits per point.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sweeps/point_kind.hpp"
#include "sweeps/sweep_results.hpp"  // SweepTable, read_results_csv
#include "sweeps/sweep_spec.hpp"

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
  // --shard / SLURM_ARRAY_* / JOB_COMPLETION_INDEX into this (resolve_shard).
  std::optional<std::pair<int, int>> shard;
  // --preset-dir folders (issue 12.11): added to the registry here and passed to every point
  // (and so recorded in its command.txt).
  std::vector<std::string> preset_dirs;
  // The executable each point re-execs as `EXE sweep point ...`; empty: this process's own
  // (/proc/self/exe).
  std::string exe;
  // Run each point in a forked child of this process, without exec (issue 24: no process start
  // and preset loading per point; the same files, the same command.txt). Only for a process that
  // has run no SystemC simulation itself (one per process) and that links the point kinds: the
  // kappasim command line sets it for `sweep` and `reproduce`; ignored when `exe` is given.
  bool fork_points = false;
  // With fork_points: a zygote, a child forked once before the first point, forks the points
  // instead of this process (sweeps/runner/runner.cpp, class Zygote; the same files and records).
  // false: this process forks each point itself (the tests compare the two).
  bool zygote = true;
};

// Runs (or resumes) the sweep into out_dir and merges results.csv / results.jsonl when every
// point has a result or error file. Returns 0 when every point it is responsible for is ok, 3
// when some are invalid or failed (the rest still ran and were merged). Bad spec or options
// throw InputError (the CLI's exit code 2), before any point runs.
int run_sweep(const SweepOptions& opts);

// One sweep of run_sweeps: its exit code (run_sweep's) and what its points cost in this run.
struct SweepRun {
  int code = 0;
  std::size_t points_run = 0;  // points this invocation ran (not those done before)
  // CPU time of the processes that ran its points (wait4: a point's own, and its children's,
  // such as capacity probes; a batch's child counts for the batch's sweep).
  double cpu_s = 0;
  // Seconds from the pool's start to its first point's start and to its last point's end (-1:
  // it ran none). In a pool of several sweeps these spans overlap.
  double first_start_s = -1, last_end_s = -1;
};
// Several sweeps through one pool of `jobs` workers (issue 24: no worker idles at the end of
// one sweep while the next waits): every sweep is opened first (spec read, folder claimed and
// locked, its points to run listed: a bad spec stops all before any point runs), then their
// points run in the sweeps' order, up to `jobs` at once whatever sweep they belong to, and each
// sweep is merged as soon as its last point ends. Each sweep's folder is what run_sweep would
// have written for it alone (the same files, the same resume after a kill). The options that
// shape the pool (jobs, exe, fork_points, zygote, quiet) must be the same for every sweep
// (std::invalid_argument otherwise). `ended`, if given, is called as each sweep is merged (its
// index in `sweeps` and its SweepRun), before the pool ends. The runner waits only for its own
// children: a caller's other children are left to it. run_sweep(o) is run_sweeps({o}).
using SweepEnded = std::function<void(std::size_t index, const SweepRun& run)>;
std::vector<SweepRun> run_sweeps(const std::vector<SweepOptions>& sweeps,
                                 const SweepEnded& ended = nullptr);

// The -j/--jobs value given on a command line (sweep, reproduce): 1 to 4096, one message for
// every out-of-range value (issue 12, item 14). InputError otherwise.
int checked_jobs(int jobs);

// ---- one point (`kappasim sweep point`, what run_sweep's children run) ------------------------
struct PointRunOptions {
  std::string kind;      // a registered kind (InputError listing the valid ones otherwise)
  std::string config;    // the point's config file (points/pNNNNNN/point.yaml)
  std::string base_dir;  // folder relative paths in the config resolve against
  std::string out;       // the point's folder: result.json, inputs.txt, files/
  std::uint64_t seed = 0;
  std::vector<std::string> preset_dirs;
};
// Runs the kind in this process and writes files/ (the kind's extra files, moved into place
// whole), inputs.txt and result.json (atomically, in that order). Bad input throws InputError.
void run_point(const PointRunOptions& o);

// ---- merging a (sharded) sweep folder
// ------------------------------------------------------------
struct CollectOptions {
  std::string dir;
  bool quiet = false;
  bool aggregate = false;  // also aggregate.csv / aggregate.json (sweeps/aggregate)
  // "KEY=VALUE[,...]": also paired.csv, each configuration minus this one per replicate
  // (sweeps/aggregate paired_table; issue 26 item 20). Empty: none.
  std::string baseline;
};
// 0 every point ok, 3 some invalid or failed, or some without a result yet (listed on stderr).
int collect_sweep(const CollectOptions& o);

// ---- shards: which part of a sweep this invocation runs
// -------------------------------------------- The environment as the caller provides it (null or
// "" = unset); std::getenv in the CLI.
using EnvFn = std::function<const char*(const char* name)>;
// `shard` ("I/N", --shard) first, else SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN (/ STEP) of
// SLURM_ARRAY_TASK_COUNT, else JOB_COMPLETION_INDEX of `shards` (--shards) or KAPPASIM_SHARDS.
// nullopt: the whole sweep. InputError for malformed or contradictory values.
std::optional<std::pair<int, int>> resolve_shard(const std::string& shard,
                                                 const std::string& shards, const EnvFn& env);

// ---- batch scripts and listings ----------------------------------------------------------------
struct SlurmOptions {
  std::string spec_path, out_dir;
  std::optional<int> tasks;  // array tasks; default one per point, at most 1000
  int cpus_per_task = 1;
  std::string time_limit, partition, job_name;
  bool quick = false;
  std::vector<std::string> preset_dirs;
  std::string exe;  // the kappasim the tasks run; empty: this process's own
};
// An sbatch array script whose tasks run their shard with a local pool (InputError for bad values).
std::string slurm_script(const SlurmOptions& o);

// `kappasim sweep points`: the expansion as CSV (point, folder, axis labels, [replicate,] seed).
std::string points_csv(const SweepSpec& spec, const std::vector<Point>& points);

// Whether a point kind is registered (for load_sweep_spec's check).
bool known_kind(const std::string& name);
// The registered kind `name`; InputError naming the valid kinds otherwise.
const PointKind& find_kind(const std::string& name);
// The registered kinds' names, comma-separated, in the registry's (sorted) order.
std::string kind_list();

// This process's executable (/proc/self/exe), resolved.
std::string self_exe();

// fork() for a child that must not outlive this process (every process the sweep runner forks:
// its zygote, the points, batches of points; reproduce's pool process): in the child,
// PR_SET_PDEATHSIG SIGKILL, and _exit(127) if this process has already gone (async-signal-safe:
// the child may exec). Returns fork()'s value: 0 in the child, -1 with errno when fork fails.
// Nothing is flushed: a caller whose child runs on (does not exec) flushes its stdio first.
pid_t fork_tied();
// fork_tied() with stdio flushed first (nothing buffered is written twice); throws
// std::runtime_error if fork fails.
int fork_tied_child();
// Flushes std::cout, std::cerr and every C stream: before a fork whose child runs on (nothing
// buffered is written twice) and before such a child ends.
void flush_stdio();
// How a forked child that ran on (no exec) ends: stdio flushed, then _exit(code), not exit():
// the parent's atexit handlers and statics are the parent's.
[[noreturn]] void exit_child(int code);

}  // namespace kappasim::sweep
