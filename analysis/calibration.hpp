// Calibration (`kappasim calibrate MEASUREMENTS.yaml --out DIR`, docs/analysis.md): fit free
// config parameters so that simulated metrics match measurements, by bounded Nelder–Mead
// (analysis/optimize) on chi² = Σ ((simulated − measured) / uncertainty)². Pure: how a
// measurement is simulated is a callback (the CLI runs kappasim commands or sweep points).
//
// File format:
//   name: h100-copy-kernel
//   overlay: {system: h100, name: h100-calibrated}   # optional: write a system preset overlay
//   parameters:                 # free parameters: any numeric config key, with bounds
//     - {key: system.gpu.copy_kernel_block_overhead, lo: 0.05 us, hi: 2 us, start: 0.5 us}
//   measurements:
//     - id: kernel-4k           # [a-z0-9.-]
//       command: [probe, h2d, --system, h100, --path, kernel, --sizes, 4 KiB, --format, json]
//       value: /0/bandwidth_bytes_per_s     # RFC 6901 pointer into the command's JSON (SI)
//       measured: 12.5 GB/s
//       uncertainty: 1 GB/s
//       fit: false              # optional: held out of the fit, predicted only
//     - id: ttft
//       run: nqa.yaml           # or a run config (relative to this file) ...
//       kind: run               # ... evaluated as a sweep point of this kind (default run)
//       metric: ttft_p50_s
//       measured: 0.4 s
//       uncertainty: 0.05 s
// Each free parameter is passed as `--set KEY=VALUE` (command form) or set at KEY in the run
// config (run form).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analysis/optimize.hpp"
#include "core/config.hpp"

namespace kappasim::analysis {

struct FreeParameter {
  std::string key;
  Bound bound;
  double start = 0;
  Dimension dim;
  bool integer = false;              // not supported: calibrate continuous keys (InputError)
  std::string text(double v) const;  // a literal of the parameter's dimension
};

struct Measurement {
  std::string id;
  std::vector<std::string> command;  // command form: kappasim argv (no program name)
  std::string pointer;               // JSON pointer into its stdout
  std::string run_config;            // run form: path (resolved against the file's folder)
  std::string kind = "run";
  std::string metric;
  double measured = 0, sigma = 0;  // SI
  Dimension dim;
  bool fit = true;
  SourceLoc loc;
};

struct CalibrationSpec {
  std::string name;
  std::string overlay_system, overlay_name;  // empty: no preset overlay
  std::vector<FreeParameter> params;
  std::vector<Measurement> measurements;
  OptimizeOptions options;
};

// InputError with file:line:col on unknown keys, missing fields, bounds inverted or empty
// (lo >= hi), a start outside its bounds, units that do not match, a non-positive uncertainty,
// duplicate ids, no measurement to fit, or more free parameters than fitted measurements.
CalibrationSpec parse_calibration(const ConfigNode& root, const std::string& base_dir);

// Simulated values of the measurements `which` (indices) at parameter vector x, in SI; NaN
// when a run gave no value.
using Simulate = std::function<std::vector<double>(const std::vector<double>& x,
                                                   const std::vector<std::size_t>& which)>;

struct CalibrationResult {
  std::vector<double> x;  // fitted values
  double chi2 = 0;        // over the fitted measurements
  int evaluations = 0;
  bool converged = false;
  std::vector<double> at_fit;  // every measurement simulated at x
  // Leave-one-out: for a fitted measurement, refit without it and predict it; for a held-out
  // one, its prediction at x. loo_x[i] = the refit's parameters (x for held-out ones).
  std::vector<double> loo;
  std::vector<std::vector<double>> loo_x;
  // Whether loo[i] is a held-out prediction: a refit without a fitted measurement (leave-one-out
  // asked for, and more fitted measurements than parameters, so the refit has data), or a
  // measurement with fit: false. False: loo[i] is the fit itself, no held-out test (issue 26
  // item 7).
  std::vector<bool> held_out;
  // (simulated with the parameter at hi − at lo, the others at x) / uncertainty, per fitted
  // measurement (rows) and parameter (columns): a column below 1 everywhere = the parameter's
  // whole range moves no measurement by its uncertainty: not identifiable from these data.
  std::vector<std::vector<double>> sensitivity;
};

// P(X >= chi2) for X chi-squared with `dof` degrees of freedom (the regularised upper incomplete
// gamma Q(dof/2, chi2/2)): the probability of a fit this poor if the model and the uncertainties
// were right. 1 for dof <= 0.
double chi2_p_value(double chi2, int dof);

double chi2(const std::vector<double>& sim, const std::vector<Measurement>& m,
            const std::vector<std::size_t>& which);

CalibrationResult calibrate(const CalibrationSpec& spec, const Simulate& simulate,
                            bool leave_one_out = true);

}  // namespace kappasim::analysis
