// κ_crit from independently probed rates, Eq. 6 and its extended closed form
// (analysis/eq6_honest.hpp), for one (model, system, load path, T): the probes run as child
// kappasim processes (`probe h2d`, `probe prefill`: one SystemC simulation per process).
// Used by `kappasim reproduce` (section 3) and `kappasim report`. docs/analysis.md.
#pragma once

#include <string>

#include "analysis/eq6_honest.hpp"

namespace kappasim::cli {

struct HonestKappa {
  analysis::HonestInputs in;
  double copy_bytes = 0;     // the probed copy size
  std::string copy_path;     // kernel | dma
  double eq6 = 0, extended = 0;
};

// `work_file` is a path prefix for the probes' captured output. InputError if a probe fails.
HonestKappa honest_kappa_crit(const std::string& model, const std::string& system,
                              const std::string& load_path, int tp, double T,
                              const std::string& work_file);

}  // namespace kappasim::cli
