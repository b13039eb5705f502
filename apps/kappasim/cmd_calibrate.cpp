// kappasim calibrate MEASUREMENTS.yaml --out DIR: fits the file's free parameters (any numeric
// config key, with bounds) to its measurements by bounded Nelder–Mead on chi² (analysis/
// calibration), every evaluation a kappasim command (probe, measure ... --format json, with
// --set KEY=VALUE) or a sweep point of a run config. Writes DIR/fit.txt and fit.json (fitted
// values, chi², identifiability), measurements.csv (residuals, leave-one-out predictions),
// fitted.set (--set lines) and, with `overlay:`, presets/systems/NAME.yaml (a preset that
// refines the named system: `--preset-dir DIR/presets --system NAME`). docs/analysis.md.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "analysis/calibration.hpp"
#include "apps/kappasim/analysis_cmds.hpp"
#include "apps/kappasim/analysis_eval.hpp"
#include "apps/kappasim/cli.hpp"
#include "core/output.hpp"
#include "core/table.hpp"
#include "core/units.hpp"
#include "sweeps/sweep_spec.hpp"

namespace kappasim::cli {

int cmd_calibrate(const std::vector<std::string>& args) {
  std::string file, out;
  std::vector<std::string> preset_dirs;
  bool no_loo = false;
  int jobs = 1;
  po::options_description desc(
      "kappasim calibrate: fit config parameters to measurements (bounded Nelder-Mead on chi^2)\n"
      "Usage: kappasim calibrate MEASUREMENTS.yaml --out DIR [options]   (format: "
      "docs/analysis.md)");
  desc.add_options()("measurements", po::value(&file), "calibration file (YAML)")(
      "out", po::value(&out), "output folder")("no-loo", po::bool_switch(&no_loo),
                                               "skip the leave-one-out refits")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "jobs,j", po::value(&jobs), "parallel processes for run: measurements (default 1)")(
      "help,h", "this help");
  po::positional_options_description pos;
  pos.add("measurements", 1);
  auto vm = parse("calibrate", args, desc, &pos);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  add_preset_dirs(preset_dirs);
  if (file.empty()) throw InputError("kappasim calibrate: MEASUREMENTS.yaml is required");
  if (out.empty()) throw InputError("kappasim calibrate: --out DIR is required");
  const std::string base_dir = std::filesystem::path(file).parent_path().string();
  const analysis::CalibrationSpec spec =
      analysis::parse_calibration(load_yaml_file(file), base_dir);

  OutputDir dir(out);
  WorkDir work(dir.staging_path("runs"));
  // Child commands must see the same extra presets.
  std::vector<std::string> preset_args;
  for (const auto& d : preset_dirs) {
    preset_args.push_back("--preset-dir");
    preset_args.push_back(std::filesystem::absolute(d).string());
  }
  std::map<std::string, std::unique_ptr<ConfigEvaluator>> evaluators;
  std::map<std::string, double> cache;  // "i|x0|x1..." -> value
  int sims = 0;
  auto overrides = [&](const std::vector<double>& x) {
    Overrides o;
    for (std::size_t p = 0; p < spec.params.size(); ++p)
      o.emplace_back(spec.params[p].key, spec.params[p].text(x[p]));
    return o;
  };
  analysis::Simulate simulate = [&](const std::vector<double>& x,
                                    const std::vector<std::size_t>& which) {
    const Overrides o = overrides(x);
    std::string xs;
    for (const auto& kv : o) xs += "|" + kv.second;
    std::vector<double> v;
    for (std::size_t i : which) {
      const std::string key = std::to_string(i) + xs;
      if (auto c = cache.find(key); c != cache.end()) {
        v.push_back(c->second);
        continue;
      }
      const analysis::Measurement& m = spec.measurements[i];
      double value;
      ++sims;
      if (!m.command.empty()) {
        std::vector<std::string> a = m.command;
        a.insert(a.end(), preset_args.begin(), preset_args.end());
        value = run_command_value(a, o, m.pointer, work.path() + "/cmd",
                                  file + ": measurement '" + m.id + "'");
      } else {
        auto& ev = evaluators[m.run_config + "|" + m.kind];
        if (!ev) {
          const std::string w = work.path() + "/" + m.id;
          std::filesystem::create_directories(w);
          ev = std::make_unique<ConfigEvaluator>(m.run_config, std::vector<std::string>{}, m.kind,
                                                 m.kind == "kappa", w, jobs, preset_dirs);
        }
        const EvalResult r = ev->evaluate({o})[0];
        if (!r.ok)
          throw InputError(file + ": measurement '" + m.id + "': the run failed: " + r.error);
        auto it = r.metrics.find(m.metric);
        if (it == r.metrics.end())
          throw InputError(file + ": measurement '" + m.id + "': unknown metric '" + m.metric +
                           "' for kind " + m.kind);
        value = it->second;
      }
      cache[key] = value;
      v.push_back(value);
    }
    return v;
  };
  const analysis::CalibrationResult r = analysis::calibrate(spec, simulate, !no_loo);

  // Tables show 5 significant digits; fit.json, fitted.set and the overlay keep every digit.
  auto sig = [](double v) {
    char b[40];
    std::snprintf(b, sizeof b, "%.5g", v);
    return std::strtod(b, nullptr);
  };
  auto lit = [&](double v, const Dimension& d) {
    return d == dim::none ? format_number(sig(v)) : format_quantity(sig(v), d);
  };
  // Fitted values.
  std::string txt = "kappasim calibrate " + file + " (" + spec.name +
                    "): " + std::to_string(spec.params.size()) + " free parameters, " +
                    std::to_string(spec.measurements.size()) + " measurements, " +
                    std::to_string(sims) + " simulations\n";
  std::size_t n_fit = 0;
  for (const auto& m : spec.measurements) n_fit += m.fit ? 1 : 0;
  const int dof = static_cast<int>(n_fit) - static_cast<int>(spec.params.size());
  const double p_value = analysis::chi2_p_value(r.chi2, dof);
  txt += "chi2 = " + format_number(sig(r.chi2)) + " over " + std::to_string(n_fit) +
         " fitted measurements (" + std::to_string(dof) + " degrees of freedom" +
         (dof > 0 ? ", p = " + format_number(sig(p_value)) : std::string()) + ")" +
         (r.converged ? "" : "; NOT CONVERGED (max_evaluations reached)") + "\n";
  // A poor fit (issue 26 item 7: chi2 37,813 on 1 dof passed without a word): the model cannot
  // reproduce the measurements within their uncertainties at any parameter values in the bounds.
  std::string warnings;
  if (dof > 0 && p_value < 0.001)
    warnings += "warning: the fit is poor: chi2 = " + format_number(sig(r.chi2)) + " on " +
                std::to_string(dof) + " degrees of freedom has p = " + format_number(sig(p_value)) +
                " (< 0.001): the model does not reproduce these measurements within their "
                "uncertainties (uncertainties too small, a bound too tight, or a mechanism the "
                "model lacks); the fitted values are not a calibration\n";
  if (dof <= 0)
    warnings += "note: " + std::to_string(dof) +
                " degrees of freedom: chi2 tests nothing (as many parameters as measurements)\n";
  bool any_held_out = false;
  for (bool h : r.held_out) any_held_out = any_held_out || h;
  if (!any_held_out)
    warnings += std::string("note: no held-out test happened (") +
                (no_loo ? "--no-loo"
                        : std::to_string(n_fit) + " fitted measurement(s) for " +
                              std::to_string(spec.params.size()) +
                              " parameter(s): a refit without one would have too few") +
                "); loo_predicted is empty\n";
  std::cerr << warnings;
  txt += warnings + "\n";
  Table pt({"parameter", "fitted", "lo", "hi", "start", "identifiable"});
  std::vector<bool> identifiable;
  std::string json = "{\"name\": " + json_escape(spec.name) +
                     ", \"chi2\": " + format_number(r.chi2) + ", \"dof\": " + std::to_string(dof) +
                     ", \"p_value\": " + format_number(p_value) +
                     ", \"converged\": " + (r.converged ? "true" : "false") +
                     ", \"simulations\": " + std::to_string(sims) + ", \"parameters\": [";
  for (std::size_t p = 0; p < spec.params.size(); ++p) {
    const auto& fp = spec.params[p];
    double s = 0;
    for (const auto& row : r.sensitivity) s = std::max(s, std::fabs(row[p]));
    // A parameter whose whole range moves no fitted measurement by its uncertainty.
    const bool ident = s >= 1;
    identifiable.push_back(ident);
    pt.add_row({fp.key, lit(r.x[p], fp.dim), fp.text(fp.bound.lo), fp.text(fp.bound.hi),
                fp.text(fp.start),
                std::string(ident ? "yes" : "no: the data do not constrain it")});
    json += std::string(p ? ", " : "") + "{\"key\": " + json_escape(fp.key) + ", \"value\": \"" +
            fp.text(r.x[p]) + "\", \"value_si\": " + format_number(r.x[p]) +
            ", \"identifiable\": " + (ident ? "true" : "false") + "}";
  }
  json += "], \"measurements\": ";
  txt += pt.text(6) + "\n";
  Table mt({"id", "fit", "measured", "uncertainty", "simulated", "residual_sigma", "loo_predicted",
            "loo_error_rel"});
  for (std::size_t i = 0; i < spec.measurements.size(); ++i) {
    const auto& m = spec.measurements[i];
    // No held-out prediction (--no-loo, or too few measurements): empty, never the fit itself.
    const bool h = r.held_out[i];
    mt.add_row({m.id, m.fit, lit(m.measured, m.dim), lit(m.sigma, m.dim), lit(r.at_fit[i], m.dim),
                sig((r.at_fit[i] - m.measured) / m.sigma), h ? Cell(lit(r.loo[i], m.dim)) : Cell{},
                h ? Cell(sig((r.loo[i] - m.measured) / m.measured)) : Cell{}});
  }
  json += mt.json() + "}\n";
  txt += mt.text(4);
  txt +=
      "\nresidual_sigma = (simulated - measured) / uncertainty at the fit; loo_predicted = the "
      "measurement\n"
      "predicted by a fit without it (held-out rows, fit = false: predicted by the full fit).\n";
  std::cout << txt;
  dir.write("fit.txt", txt);
  dir.write("fit.json", json);
  dir.write("measurements.csv", mt.csv());
  std::string setlines =
      "# kappasim calibrate " + file + ": pass each line to run/sweep/measure/probe\n";
  for (std::size_t p = 0; p < spec.params.size(); ++p)
    setlines += std::string(identifiable[p] ? "" : "# not identifiable from these measurements: ") +
                "--set '" + spec.params[p].key + "=" + spec.params[p].text(r.x[p]) + "'\n";
  dir.write("fitted.set", setlines);
  if (!spec.overlay_system.empty()) {
    // A system preset refining the named one with the fitted system.* values.
    ConfigNode ov = ConfigNode::make_map();
    ov.set("name", ConfigNode::make_scalar(spec.overlay_name));
    ov.set("preset", ConfigNode::make_scalar(spec.overlay_system));
    for (std::size_t p = 0; p < spec.params.size(); ++p) {
      const std::string& k = spec.params[p].key;
      if (k.rfind("system.", 0) != 0 || !identifiable[p])
        continue;  // unconstrained: keep the preset's
      ConfigNode v = ConfigNode::make_scalar(spec.params[p].text(r.x[p]));
      v.provenance =
          Provenance{"derived",
                     "kappasim calibrate " + std::filesystem::path(file).filename().string() +
                         " (" + spec.name + "): chi2 " + format_number(r.chi2) + " over " +
                         std::to_string(n_fit) + " measurements",
                     "", ""};
      sweep::set_path(ov, k.substr(7), v);
    }
    std::filesystem::create_directories(dir.staging_path("presets/systems"));
    dir.write("presets/systems/" + spec.overlay_name + ".yaml",
              "# written by kappasim calibrate " + file + ": --preset-dir " + out +
                  "/presets --system " + spec.overlay_name + "\n" + emit_yaml(ov));
  }
  dir.commit();
  std::cout << "results in " << out << "/ (fit.txt, fit.json, measurements.csv, fitted.set"
            << (spec.overlay_system.empty() ? ""
                                            : ", presets/systems/" + spec.overlay_name + ".yaml")
            << ", runs/)\n";
  return 0;
}

}  // namespace kappasim::cli
