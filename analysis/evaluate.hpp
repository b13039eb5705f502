// How `kappasim sensitivity`, `calibrate` and `solve` get a metric for a configuration with
// some keys overridden (docs/analysis.md). Two ways:
//   * ConfigEvaluator: a run config (or any config of a sweep point kind) plus overrides. The
//     simulated kinds go through the sweep runner (sweeps/runner/runner.hpp): every batch of
//     points is one sweep in WORK/bNNNN/ whose single zip axis sets each touched top-level key
//     (system, serving, ...) to its subtree with that point's overrides applied; so every
//     point is its own process, -j of them at once, with the sweep's records as evidence.
//     With `analytic`, the kind is `kappa`, run in process (no SystemC): the run config is
//     reduced to {model, system, serving: {tp, kv_dtype}, precision, K, T}.
//   * run_command_value: a kappasim command line (probe, measure, kappa ... --format json) run
//     in a child process with `--set KEY=VALUE` appended, its stdout read at a JSON pointer.
// Moved from apps/kappasim/analysis_eval (issue 13 item 5); effective_config, which reads the
// serving spec (a layer above this one), stays there. Pure (no SystemC).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"

namespace kappasim::analysis {

using Overrides = std::vector<std::pair<std::string, std::string>>;  // key, value literal

struct EvalResult {
  bool ok = false;
  std::map<std::string, double> metrics;
  std::string error;                  // why not ok (the point's message)
  std::vector<std::string> warnings;  // the point's (a tier that overflows; issue 26 item 21)
};

class ConfigEvaluator {
 public:
  // `config_path` is read with the user's --set overrides applied. `work_dir` must exist (a
  // folder inside the command's staging output). jobs: parallel point processes (0 = cores).
  // `preset_dirs`: the command's --preset-dir folders, passed to every simulated point (issue 26
  // item 18: they are process-local, and each point is its own process).
  ConfigEvaluator(const std::string& config_path, const std::vector<std::string>& sets,
                  std::string kind, bool analytic, std::string work_dir, int jobs,
                  std::vector<std::string> preset_dirs = {});
  // The same from a config already read (`base`, --set applied), its relative paths taken from
  // `base_dir` (an absolute folder): a sweep point kind that evaluates configs itself (capacity).
  ConfigEvaluator(ConfigNode base, std::string base_dir, std::string kind, std::string work_dir,
                  int jobs, std::vector<std::string> preset_dirs = {});
  std::vector<EvalResult> evaluate(const std::vector<Overrides>& points);
  // The config after --set (run form; or the reduced kappa config with --analytic).
  const ConfigNode& base() const { return m_base; }
  const std::string& kind() const { return m_kind; }
  int runs() const { return m_runs; }

 private:
  void init_base(const std::string& base_dir);
  ConfigNode m_base;
  std::string m_kind, m_work, m_base_dir;
  std::vector<std::string> m_preset_dirs;
  bool m_analytic;
  int m_jobs, m_runs = 0, m_batches = 0;
  std::uint64_t m_seed = 1;
};

// A numeric key of the effective config (or of `base`, e.g. K and T of a kappa config): its
// dimension and value. InputError naming `option` and the nearest existing key otherwise.
struct KeyInfo {
  Dimension dim;
  bool integer = false;  // a dimensionless whole number (a count)
  double value = 0;
  // The only values the key may take, ascending (a `lanes` key: the PCIe link widths); empty:
  // any value of its dimension (whole numbers when `integer`).
  std::vector<double> allowed;
};
KeyInfo check_key(const ConfigNode& effective, const ConfigNode& base, const std::string& key,
                  const std::string& option);
// A literal for a value of that dimension ("64 GB/s", "0.8", "16").
std::string value_literal(double v, const Dimension& d, bool integer);
// Where the work files go: DIR/runs inside the command's staging output, or a private temporary
// folder removed when this object goes (no --out).
class WorkDir {
 public:
  explicit WorkDir(const std::string& staging_runs);  // "" = temporary
  ~WorkDir();
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
  bool m_temp = false;
};

// Runs `kappasim ARGS --set K=V ...` (this binary) and returns the number at `pointer` in its
// JSON stdout. Exit code 2 from the child → InputError with its message (prefixed by `what`);
// any other failure or a missing/non-numeric value → InputError too (the measurement cannot be
// simulated as written).
// The child is this process forked, running the command in place, when the executable has
// said how (set_command_runner) and that this process may (no SystemC simulation elaborated in
// it, one thread); otherwise /proc/self/exe started afresh. The same command line, files and
// exit code either way; a fork skips the process start and the presets' parse (issue 24: the
// analytic report's 35 probes were most of its time, and ≈ 0.2 s each under ASan).
double run_command_value(const std::vector<std::string>& args, const Overrides& sets,
                         const std::string& pointer, const std::string& work_file,
                         const std::string& what);

// How the kappasim executable runs a command line (args without the program name) in this
// process, returning main()'s exit code, and whether this process may fork to do so now.
struct CommandRunner {
  int (*run)(std::vector<std::string> args) = nullptr;
  bool (*may_fork)() = nullptr;
};
void set_command_runner(CommandRunner runner);

}  // namespace kappasim::analysis
