// `kappasim report`: the analytic κ report (report/analytic_report.cpp). The command line
// (apps/kappasim/cmd_report.cpp) checks the output folder and writes these files through
// OutputDir.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/table.hpp"
#include "report/honest_eq6.hpp"

namespace kappasim::report {

struct AnalyticReport {
  std::string markdown;                                  // report.md
  std::vector<std::pair<std::string, std::string>> csv;  // file name -> CSV, in write order
  std::string summary;  // the κ_crit matrix (models × systems) as aligned text for the terminal
};

// Every model preset on every system preset of the registry (add --preset-dir folders first).
// `simulated`: a kappa-crit sweep folder whose κ_crit section 6 compares against ("" = none);
// `probe` runs section 6's probes with their output under `probe_work_file`.
AnalyticReport build_analytic_report(const std::string& simulated, const ProbeRunner& probe,
                                     const std::string& probe_work_file);

}  // namespace kappasim::report
