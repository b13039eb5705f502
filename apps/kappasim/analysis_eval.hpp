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

}  // namespace kappasim::cli
