// The sweeps a report reads (experiments/reproduce/*.yaml, experiments/studies/*.yaml, and the
// specs the rebalancing section generates): run resumably into DIR/sweeps/<name>[-quick] by the
// caller's sweep runner, read back as tables, and the ones with points that did not complete
// listed for the report's closing section.
#pragma once

#include <functional>
#include <string>
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
};

// Runs a sweep spec resumably into out_dir (in kappasim: sweep::run_sweep with the command's
// -j, --quick and --quiet). Returns its exit code: 0 every point ok, 3 some points invalid or
// failed (the report goes on and lists them); anything else stops the report.
using SweepRunner = std::function<int(const std::string& spec_path, const std::string& out_dir)>;

class SweepSource {
 public:
  // `out`: the reproduce folder; `experiments`: the folder holding reproduce/ and studies/.
  SweepSource(std::string out, std::string experiments, bool quick, bool quiet, SweepRunner run);
  // DIR/sweeps/<name> (<name>-quick with --quick).
  std::string sweep_dir(const std::string& name) const;
  // Runs `spec` (relative to experiments/, or an absolute path) and reads its results.
  // InputError when the spec does not exist; runtime_error when the runner fails.
  SweepData run(const std::string& spec);
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
  std::vector<std::string> m_problems;
  std::vector<SweepTiming> m_timings;
};

}  // namespace kappasim::report
