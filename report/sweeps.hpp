// The sweeps a report reads (experiments/reproduce/*.yaml, experiments/studies/*.yaml, and the
// specs the rebalancing section generates): run resumably into DIR/sweeps/<name>[-quick] by the
// caller's sweep runner, read back as tables, and the ones with points that did not complete
// listed for the report's closing section.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "report/results.hpp"

namespace kappasim::report {

// One sweep's results as a section reads them: its name, its folder (points/pNNNNNN/ hold each
// point's config and files) and its merged table.
struct SweepData {
  std::string name, dir;
  ResultsTable table;
};

// How long one sweep took in this run (issue 24: the report's run says how long it took, and on
// what; DIR/timing.md): its wall time and the CPU time of the processes it ran (its points and
// their own children, capacity probes), from getrusage(RUSAGE_CHILDREN). A sweep a killed run
// had finished takes about 0 s when it resumes: the times are this run's, not the results'.
struct SweepTiming {
  std::string name;
  std::size_t points = 0;  // rows of its results.csv
  double wall_s = 0, cpu_s = 0;
  // Run by SweepSource::prefetch's pool with other sweeps: wall_s is from its first point's
  // start to its last point's end, a span that overlaps the other pooled sweeps'.
  bool pooled = false;
};

// Runs a sweep spec resumably into out_dir (in kappasim: sweep::run_sweep with the command's
// -j, --quick and --quiet). Returns its exit code: 0 every point ok, 3 some points invalid or
// failed (the report goes on and lists them); anything else stops the report.
using SweepRunner = std::function<int(const std::string& spec_path, const std::string& out_dir)>;

// What a pool did with one of its sweeps (sweep::SweepRun in kappasim): the exit code as
// SweepRunner's, the CPU time of the processes that ran its points, and the seconds from the
// pool's start to its first point's start and to its last point's end (-1: none ran).
struct PooledSweep {
  int code = 0;
  double cpu_s = 0, first_start_s = -1, last_end_s = -1;
};
// Sweeps running in the background through one pool of workers (in kappasim: a child process
// running sweep::run_sweeps), while the report's sections go on.
class SweepPool {
 public:
  virtual ~SweepPool() = default;
  // Blocks until the pool's sweep `index` (in the list it was started with) is merged. Throws
  // when the pool ended without it (InputError, IoError: the pool's own error, printed by it).
  virtual PooledSweep wait(std::size_t index) = 0;
  // Blocks until the pool has ended (its processes waited for); its wall time in seconds.
  virtual double finish() = 0;
};
// Starts several sweep specs (spec path, out dir) resumably through one pool of workers, in
// that order.
using SweepPoolRunner = std::function<std::unique_ptr<SweepPool>(
    const std::vector<std::pair<std::string, std::string>>& specs_and_dirs)>;

class SweepSource {
 public:
  // `out`: the reproduce folder; `experiments`: the folder holding reproduce/ and studies/.
  SweepSource(std::string out, std::string experiments, bool quick, bool quiet, SweepRunner run,
              SweepPoolRunner pool = nullptr);
  // DIR/sweeps/<name> (<name>-quick with --quick).
  std::string sweep_dir(const std::string& name) const;
  // Runs `spec` (relative to experiments/, or an absolute path) and reads its results.
  // InputError when the spec does not exist; runtime_error when the runner fails.
  SweepData run(const std::string& spec);
  // Starts `specs` (as run() names them) through one pool in the background, before any section
  // asks for them (issue 24: the workers go from one sweep's points to the next's without
  // waiting for a sweep's last point, and they run while this process writes the sections and
  // runs the sweeps it generates), so that run() then waits for each and reads it back. The
  // same folders and results as run() one by one; a spec not in the pool runs in run() as
  // before. Without a pool runner: nothing.
  void prefetch(const std::vector<std::string>& specs);
  // Waits for the pool to end (the report waits for it before timing.md); its wall time (0
  // without one).
  double finish_pool();
  // "<spec>: N of M points did not complete ..." for every sweep run so far that had some.
  const std::vector<std::string>& problems() const { return m_problems; }
  // Every sweep run so far, in the order they ran.
  const std::vector<SweepTiming>& timings() const { return m_timings; }
  const std::string& out() const { return m_out; }
  bool quick() const { return m_quick; }

 private:
  std::string m_out, m_experiments;
  bool m_quick, m_quiet;
  SweepRunner m_run;
  SweepPoolRunner m_pool;
  std::unique_ptr<SweepPool> m_pool_run;
  std::map<std::string, std::size_t> m_pooled;  // by spec as named: its index in the pool
  double m_pool_wall_s = 0;
  std::vector<std::string> m_problems;
  std::vector<SweepTiming> m_timings;
};

}  // namespace kappasim::report
