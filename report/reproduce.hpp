// The driver of `kappasim reproduce`'s report (report/sections.hpp has the sections): runs the
// sections in order, each with the sweeps it reads and the values earlier sections computed,
// and assembles DIR/report.md. The command line (apps/kappasim/cmd_reproduce.cpp) parses the
// options, claims the folder and supplies the two runners.
#pragma once

#include <string>

#include "report/honest_eq6.hpp"
#include "report/sweeps.hpp"

namespace kappasim::report {

struct ReproduceOptions {
  std::string out;          // the reproduce folder (already claimed: core/output claim_output_dir)
  std::string experiments;  // the folder holding reproduce/ and studies/ sweep specs
  bool quick = false;       // small sweeps; the report says its numbers are indicative
  bool quiet = false;       // no progress lines on stderr
  int jobs = 0;             // points run at once (0: the number of cores), for DIR/timing.md
};

// Writes DIR/figures/*, DIR/timing.md (how long this run took, per sweep, and on what machine
// and build: kept out of report.md so that the report is byte-identical from run to run) and
// DIR/report.md (atomically, last), and returns report.md's path.
// `run_sweep` runs each sweep resumably (sweep::run_sweep in kappasim), `probe` the Eq. 6
// probes (section 3b). IoError when the figures folder cannot be made; the sections' errors
// pass through (InputError for a missing spec or a failed probe).
// `pool` (may be null: each sweep then runs alone) runs the sweeps whose specs are in
// experiments/ first, together (SweepSource::prefetch); the report's bytes do not depend on it.
std::string write_reproduce_report(const ReproduceOptions& o, const SweepRunner& run_sweep,
                                   const ProbeRunner& probe, const SweepPoolRunner& pool = nullptr);

}  // namespace kappasim::report
