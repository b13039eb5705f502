// kappasim solve CONFIG --vary KEY --range LO:HI --target "METRIC OP VALUE": the value of KEY at
// which the target starts to hold (analysis/solve: bisection, or a bracketed scan then
// bisection), each probe a simulation (a sweep point of --kind, default run) or the analytic
// model (--analytic). docs/analysis.md.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include "analysis/solve.hpp"
#include "apps/kappasim/analysis_cmds.hpp"
#include "apps/kappasim/analysis_eval.hpp"
#include "apps/kappasim/cli.hpp"
#include "core/output.hpp"
#include "core/table.hpp"
#include "core/units.hpp"

namespace kappasim::cli {

int cmd_solve(const std::vector<std::string>& args) {
  std::string config, vary, range, target_text, out, kind = "run", format = "table";
  std::vector<std::string> sets, preset_dirs;
  bool analytic = false, log_scale = false;
  int jobs = 0;
  double tol = 1e-3;
  po::options_description desc(
      "kappasim solve: the value of one config key at which a target on a metric is met\n"
      "Usage: kappasim solve CONFIG --vary KEY --range LO:HI --target \"METRIC OP VALUE\" "
      "[options]\n"
      "Bisection when the target holds at one end of the range only, else a scan of the range for\n"
      "the first change, then bisection. Each probe is a simulation (a sweep point of --kind) or,\n"
      "with --analytic, the analytic model (metrics of `kappasim sweep kinds`: kappa)");
  desc.add_options()("config", po::value(&config), "run config (YAML)")(
      "vary", po::value(&vary), "config key to vary, e.g. system.host_link.rate_per_lane")(
      "range", po::value(&range), "LO:HI, values of KEY's dimension, e.g. '8 GT/s:64 GT/s'")(
      "target", po::value(&target_text), "\"METRIC OP VALUE\", OP one of < <= > >=")(
      "analytic", po::bool_switch(&analytic),
      "the analytic model (kind kappa) instead of simulations")(
      "kind", po::value(&kind), "sweep point kind of each probe (default run)")(
      "log", po::bool_switch(&log_scale), "bisect in log space (ranges over decades)")(
      "tol", po::value(&tol),
      "stop when the bracket is below this fraction of the range (default 1e-3)")(
      "set", po::value(&sets)->composing(), "override a config key")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "out", po::value(&out), "folder for solve.json, probes.csv and the runs (optional)")(
      "jobs,j", po::value(&jobs), "parallel processes for the scan (default: cores)")(
      "format", po::value(&format), "table or json (stdout)")("help,h", "this help");
  po::positional_options_description pos;
  pos.add("config", 1);
  auto vm = parse("solve", args, desc, &pos);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  add_preset_dirs(preset_dirs);
  if (config.empty()) throw InputError("kappasim solve: CONFIG is required");
  if (vary.empty()) throw InputError("kappasim solve: --vary KEY is required");
  if (range.empty()) throw InputError("kappasim solve: --range LO:HI is required");
  if (target_text.empty())
    throw InputError("kappasim solve: --target \"METRIC OP VALUE\" is required");
  if (format != "table" && format != "json")
    throw InputError("--format '" + format + "': expected table or json");
  if (!(tol > 0 && tol < 0.5)) throw InputError("--tol: expected a fraction between 0 and 0.5");
  const analysis::Target target = analysis::parse_target(target_text);

  std::optional<OutputDir> dir;
  if (!out.empty()) dir.emplace(out);
  WorkDir work(dir ? dir->staging_path("runs") : "");
  ConfigEvaluator ev(config, sets, kind, analytic, work.path(), jobs);
  const KeyInfo key = check_key(effective_config(ev.base(), ev.kind()), ev.base(), vary, "--vary");
  const std::size_t colon = range.find(':');
  if (colon == std::string::npos) throw InputError("--range '" + range + "': expected LO:HI");
  auto bound = [&](const std::string& t) {
    try {
      Quantity q = parse_quantity(t);
      if (!(q.dim == key.dim))
        throw InputError("--range '" + range + "': '" + t + "' is a " + dimension_name(q.dim) +
                         " but " + vary + " is a " + dimension_name(key.dim) + " (e.g. " +
                         example_literal(key.dim) + ")");
      return q.value;
    } catch (const UnitError& e) {
      throw InputError("--range '" + range + "': " + e.what());
    }
  };
  const double lo = bound(range.substr(0, colon)), hi = bound(range.substr(colon + 1));
  if (!(lo < hi))
    throw InputError("--range '" + range + "': empty or inverted (LO must be below HI)");
  if (log_scale && !(lo > 0)) throw InputError("--log needs a range above zero");

  std::vector<std::string> metric_names;
  auto metric = [&](double x) {
    const auto r = ev.evaluate({{{vary, value_literal(x, key.dim, key.integer)}}});
    if (!r[0].ok)
      throw InputError("kappasim solve: the run at " + vary + " = " +
                       value_literal(x, key.dim, key.integer) + " failed: " + r[0].error);
    auto it = r[0].metrics.find(target.metric);
    if (it == r[0].metrics.end()) {
      std::vector<std::string> names;
      for (const auto& kv : r[0].metrics) names.push_back(kv.first);
      std::string all;
      for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
      const std::string near = nearest(target.metric, names);
      throw InputError("--target: unknown metric '" + target.metric + "' for kind " + ev.kind() +
                       (near.empty() ? "" : "; did you mean '" + near + "'?") +
                       " (metrics: " + all + ")");
    }
    return it->second;
  };
  analysis::SolveOptions so;
  so.geometric = log_scale;
  so.integer = key.integer;
  so.rel_tol = tol;
  const analysis::SolveResult r = analysis::solve_threshold(metric, lo, hi, target, so);
  auto lit = [&](double x) { return value_literal(x, key.dim, key.integer); };
  if (r.status != analysis::SolveResult::Status::Found) {
    const double m0 = r.probes.front().metric, m1 = r.probes[1].metric;
    if (r.status == analysis::SolveResult::Status::NeverMet)
      throw InputError("kappasim solve: target '" + target.text + "' is never met for " + vary +
                       " in [" + lit(lo) + ", " + lit(hi) + "] (" + target.metric + " = " +
                       format_number(m0) + " at LO, " + format_number(m1) + " at HI, " +
                       std::to_string(r.probes.size()) +
                       " probes); widen --range or change the target");
    throw InputError("kappasim solve: target '" + target.text + "' already holds over all of [" +
                     lit(lo) + ", " + lit(hi) + "] (" + target.metric + " = " + format_number(m0) +
                     " at LO, " + format_number(m1) +
                     " at HI): the threshold lies outside the range; widen --range");
  }
  Table t({"probe", vary, target.metric, "met"});
  int i = 0;
  for (const auto& p : r.probes) t.add_row({std::int64_t{++i}, lit(p.x), p.metric, p.met});
  double m_at = 0;
  for (const auto& p : r.probes)
    if (p.x == r.x) m_at = p.metric;
  std::string json = "{\"key\": \"" + json_escape(vary) + "\", \"value\": \"" + lit(r.x) +
                     "\", \"value_si\": " + format_number(r.x) + ", \"other_side\": \"" +
                     lit(r.other) + "\", \"target\": \"" + json_escape(target.text) +
                     "\", \"metric_at_value\": " + format_number(m_at) + ", \"method\": \"" +
                     r.method + "\", \"runs\": " + std::to_string(r.probes.size()) +
                     ", \"mode\": \"" + (analytic ? "analytic" : "simulated:" + ev.kind()) +
                     "\", \"probes\": " + t.json() + "}\n";
  if (format == "json") {
    std::cout << json;
  } else {
    char mbuf[32];
    std::snprintf(mbuf, sizeof mbuf, "%.6g", m_at);
    std::cout << vary << " = " << lit(r.x) << "  (" << target.metric << " = " << mbuf << "; target "
              << target.text << " met there, not at " << lit(r.other) << ")\n"
              << r.probes.size() << " "
              << (analytic ? "analytic evaluations" : ev.kind() + " simulations") << ", "
              << r.method << "\n\n"
              << t.text(6);
  }
  if (dir) {
    dir->write("solve.json", json);
    dir->write("probes.csv", t.csv());
    dir->commit();
  }
  return 0;
}

}  // namespace kappasim::cli
