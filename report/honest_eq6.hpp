// κ_crit from independently probed rates, Eq. 6 and its extended closed form
// (analysis/eq6_honest.hpp), for one (model, system, load path, T). The probes are kappasim
// commands (`probe h2d`, `probe prefill`: one SystemC simulation each) run by the caller's
// ProbeRunner; in kappasim each runs as a child process. Used by `kappasim reproduce` (section
// 3b) and `kappasim report` (section 6). docs/analysis.md.
//
// Here rather than in analysis/: it builds the probes' command lines and reads the serving
// layer (the run spec a probe would use, the stack's retrieve costs), which sit above analysis/;
// analysis/eq6_honest keeps the closed forms themselves.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analysis/eq6_honest.hpp"
#include "report/probe_runner.hpp"

namespace kappasim::report {

struct HonestKappa {
  analysis::HonestInputs in;
  double copy_bytes = 0;  // the probed copy size
  std::string copy_path;  // kernel | dma
  double eq6 = 0, extended = 0;
};

HonestKappa honest_kappa_crit(const std::string& model, const std::string& system,
                              const std::string& load_path, int tp, double T,
                              const ProbeRunner& probe, const std::string& work_file);

}  // namespace kappasim::report
