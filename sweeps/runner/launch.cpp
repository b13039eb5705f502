// Launching a sweep elsewhere (sweeps/runner/runner.hpp): which shard this invocation runs (from
// --shard, a Slurm array's or a Kubernetes Indexed Job's variables, read through the caller's
// environment function), the sbatch array script, and the expansion listing. Moved out of
// apps/kappasim/cmd_sweep.cpp; messages unchanged.
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "sweeps/runner/runner.hpp"
#include "sweeps/runner/runner_internal.hpp"

namespace kappasim::sweep {

namespace {

int parse_int(const std::string& what, const std::string& text, long lo, long hi) {
  bool digits = !text.empty() && text.size() <= 9;
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  const long v = digits ? std::strtol(text.c_str(), nullptr, 10) : -1;
  if (!digits || v < lo || v > hi)
    throw InputError(what + ": expected a whole number from " + std::to_string(lo) + " to " +
                     std::to_string(hi) + ", got \"" + text + "\"");
  return static_cast<int>(v);
}

std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos)
    throw InputError("--shard: expected I/N (this shard's index and the number of shards), got \"" +
                     text + "\"");
  const int n = parse_int("--shard N", text.substr(slash + 1), 1, 1000000);
  const int i = parse_int("--shard I", text.substr(0, slash), 0, 1000000);
  if (i >= n) throw InputError("--shard: the index must be below the count, got \"" + text + "\"");
  return {i, n};
}

}  // namespace

// --shard, else Slurm array variables, else a Kubernetes Indexed Job's index.
std::optional<std::pair<int, int>> resolve_shard(const std::string& shard,
                                                 const std::string& shards, const EnvFn& get_env) {
  // Unset and empty are the same (as the CLI always treated them).
  auto env = [&get_env](const char* name) -> const char* {
    const char* v = get_env ? get_env(name) : nullptr;
    return v && *v ? v : nullptr;
  };
  if (!shard.empty()) {
    if (!shards.empty()) throw InputError("--shard and --shards: give one of them");
    return parse_shard(shard);
  }
  if (const char* id = env("SLURM_ARRAY_TASK_ID")) {
    const char* count = env("SLURM_ARRAY_TASK_COUNT");
    if (!count) throw InputError("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not");
    const int n = parse_int("SLURM_ARRAY_TASK_COUNT", count, 1, 1000000);
    const int task = parse_int("SLURM_ARRAY_TASK_ID", id, 0, 100000000);
    const int min =
        env("SLURM_ARRAY_TASK_MIN")
            ? parse_int("SLURM_ARRAY_TASK_MIN", env("SLURM_ARRAY_TASK_MIN"), 0, 100000000)
            : 0;
    const int step =
        env("SLURM_ARRAY_TASK_STEP")
            ? parse_int("SLURM_ARRAY_TASK_STEP", env("SLURM_ARRAY_TASK_STEP"), 1, 100000000)
            : 1;
    if (task < min || (task - min) % step != 0 || (task - min) / step >= n)
      throw InputError("SLURM_ARRAY_TASK_ID " + std::string(id) + " does not fit the array (min " +
                       std::to_string(min) + ", step " + std::to_string(step) + ", count " +
                       std::to_string(n) + ")");
    return std::make_pair((task - min) / step, n);
  }
  if (const char* idx = env("JOB_COMPLETION_INDEX")) {
    std::string count = shards;
    if (count.empty() && env("KAPPASIM_SHARDS")) count = env("KAPPASIM_SHARDS");
    if (count.empty())
      throw InputError(
          "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job): give the number of shards "
          "(the Job's completions) with --shards N or KAPPASIM_SHARDS");
    const int n = parse_int("--shards / KAPPASIM_SHARDS", count, 1, 1000000);
    const int i = parse_int("JOB_COMPLETION_INDEX", idx, 0, 100000000);
    if (i >= n)
      throw InputError("JOB_COMPLETION_INDEX " + std::to_string(i) +
                       " is not below the shard count " + std::to_string(n));
    return std::make_pair(i, n);
  }
  if (!shards.empty())
    throw InputError(
        "--shards N is for Kubernetes Indexed Jobs (with JOB_COMPLETION_INDEX); use --shard I/N");
  return std::nullopt;
}

namespace {

std::string sanitize_job_name(const std::string& s) {
  std::string out;
  for (char c : s)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (out.empty()) out = "kappasim-sweep";
  return out.substr(0, 128);
}

void check_chars(const std::string& option, const std::string& v, const std::string& allowed,
                 const char* what) {
  bool ok = !v.empty();
  for (char c : v)
    ok =
        ok && (std::isalnum(static_cast<unsigned char>(c)) || allowed.find(c) != std::string::npos);
  if (!ok) throw InputError(option + ": expected " + what + ", got \"" + v + "\"");
}

}  // namespace

std::string slurm_script(const SlurmOptions& o) {
  if (o.spec_path.empty()) throw InputError("kappasim sweep emit slurm: a SPEC file is required");
  if (o.out_dir.empty()) throw InputError("kappasim sweep emit slurm: --out DIR is required");
  std::string preset_args;
  for (const auto& pd : o.preset_dirs) {
    PresetRegistry::instance().add_directory(pd);
    preset_args += " --preset-dir " + shell_quote(absolute_path(pd));
  }
  const SweepSpec spec = load_sweep_spec(o.spec_path, o.quick, known_kind);
  const std::size_t n = spec.point_count();
  if (o.tasks && (*o.tasks < 1 || *o.tasks > 100000))
    throw InputError("--tasks: expected 1 to 100000, got " + std::to_string(*o.tasks));
  const int tasks =
      o.tasks ? *o.tasks
              : static_cast<int>(std::min<std::size_t>(std::max<std::size_t>(n, 1), 1000));
  const int cpus = o.cpus_per_task;
  if (cpus < 1 || cpus > 4096)
    throw InputError("--cpus-per-task: expected 1 to 4096, got " + std::to_string(cpus));
  if (!o.time_limit.empty())
    check_chars("--time", o.time_limit, ":-", "a Slurm time such as 01:00:00 or 2-00:00:00");
  if (!o.partition.empty())
    check_chars("--partition", o.partition, "._,-", "a partition name [A-Za-z0-9._,-]");
  std::string s = "#!/bin/bash\n";
  s += "# kappasim sweep " + std::to_string(n) +
       " points as a Slurm array: each task runs the points with\n";
  s += "# index % SLURM_ARRAY_TASK_COUNT == task; the last task to finish merges the results\n";
  s += "# (or run: kappasim sweep collect DIR). Generated by kappasim sweep emit slurm.\n";
  s +=
      "#SBATCH --job-name=" + sanitize_job_name(o.job_name.empty() ? spec.name : o.job_name) + "\n";
  s += "#SBATCH --array=0-" + std::to_string(tasks - 1) + "\n";
  s += "#SBATCH --cpus-per-task=" + std::to_string(cpus) + "\n";
  s += "#SBATCH --ntasks=1\n";
  if (!o.time_limit.empty()) s += "#SBATCH --time=" + o.time_limit + "\n";
  if (!o.partition.empty()) s += "#SBATCH --partition=" + o.partition + "\n";
  s += "set -euo pipefail\n";
  s += "exec " + shell_quote(o.exe.empty() ? self_exe() : o.exe) + " sweep " +
       shell_quote(absolute_path(o.spec_path)) + " --out " + shell_quote(absolute_path(o.out_dir)) +
       (o.quick ? " --quick" : "") + preset_args + " -j \"${SLURM_CPUS_PER_TASK:-1}\"\n";
  return s;
}

std::string points_csv(const SweepSpec& spec, const std::vector<Point>& points) {
  std::string out = "point,folder";
  for (const auto& l : spec.axis_labels()) out += "," + csv_field(l);
  if (spec.replicates > 1) out += ",replicate";
  out += ",seed\n";
  for (const auto& p : points) {
    out += std::to_string(p.index) + "," + point_name(p.index, points.size());
    for (const auto& l : p.labels) out += "," + csv_field(l);
    if (spec.replicates > 1) out += "," + std::to_string(p.replicate);
    out += "," + std::to_string(p.seed) + "\n";
  }
  return out;
}

}  // namespace kappasim::sweep
