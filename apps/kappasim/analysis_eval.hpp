// The analysis commands' evaluation (analysis/evaluate.hpp), under the names the commands use,
// and effective_config, which reads the run and serving specs (a layer above analysis/).
#pragma once

#include <string>

#include "analysis/evaluate.hpp"
#include "core/config.hpp"

namespace kappasim::cli {

using analysis::check_key;
using analysis::ConfigEvaluator;
using analysis::EvalResult;
using analysis::KeyInfo;
using analysis::Overrides;
using analysis::run_command_value;
using analysis::value_literal;
using analysis::WorkDir;

// The effective config (every default filled, provenance kept, serving [A]/[D] tags attached)
// of the evaluator's base for its kind: the whole run config for `run`; model, system and (for
// simulated kinds) serving otherwise.
ConfigNode effective_config(const ConfigNode& base, const std::string& kind);

// The --out folder of `solve` and `sensitivity` (issue 26 items 10, 25). It is claimed in place
// (core/output's marker), not staged: the runs under OUT/runs/ are sweep folders that a rerun
// after a kill resumes, and the command lines and sweep.yaml they record name OUT itself, not a
// staging folder that is gone. The result files are each written atomically. A folder this
// command created is removed again when it ends without done() (bad input, an error).
class AnalysisOut {
 public:
  explicit AnalysisOut(std::string dir);  // "" = no --out
  ~AnalysisOut();
  AnalysisOut(const AnalysisOut&) = delete;
  AnalysisOut& operator=(const AnalysisOut&) = delete;
  bool active() const { return !m_dir.empty(); }
  const std::string& dir() const { return m_dir; }
  // OUT/runs, or "" without --out (WorkDir then makes a temporary folder).
  std::string runs() const { return active() ? m_dir + "/runs" : std::string(); }
  void write(const std::string& relative, const std::string& content) const;
  void done() { m_done = true; }

 private:
  std::string m_dir;
  bool m_created = false, m_done = false;
};

}  // namespace kappasim::cli
