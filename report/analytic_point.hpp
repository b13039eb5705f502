// The analytic κ model (models/analytic) on a model and a system preset, for the report
// sections that draw it beside the simulation (sections 1, 2, 4) and for `kappasim report`. Each
// preset is read once per process (the P_OH grid asks 475 times).
#pragma once

#include <optional>
#include <string>

#include "models/analytic/kappa.hpp"

namespace kappasim::report {

// evaluate_kappa of `model` on `system` (preset names) at TP `tp` (0: every GPU of the system),
// context K and new tokens T when given, compute dtype `dtype`. InputError as the presets give
// it (e.g. a GPU without a peak for the dtype).
// A model or system preset by name, read once per process.
const ModelSpec& preset_model(const std::string& name);
const SystemSpec& preset_system(const std::string& name);
// evaluate_kappa of a model preset on a system preset for any query.
KappaPoint evaluate_presets(const std::string& model, const std::string& system,
                            const KappaQuery& q);

KappaPoint analytic_point(const std::string& model, const std::string& system, int tp,
                          std::optional<double> K = std::nullopt,
                          std::optional<double> T = std::nullopt,
                          const std::string& dtype = "bf16");

}  // namespace kappasim::report
