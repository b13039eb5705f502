// kappasim solve CONFIG --vary KEY --range LO:HI --target "METRIC OP VALUE": the value of KEY at
// which the target starts to hold (analysis/solve: bisection, or a bracketed scan then
// bisection), each probe a simulation (a sweep point of --kind, default run) or the analytic
// model (--analytic). docs/analysis.md.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

namespace {

// Issue 22 item 7: an analytic answer checked on the simulator. The analytic config's request (K
// cached, T new) as one isolated request on the simulator (sweep kind `isolated`, the default
// stack and load path) at the analytic answer's value of the key. Returns "" when the check does
// not apply (no K/T, or a metric the simulated kind does not report), else a note; sets
// `json` to the check's JSON object.
std::string simulated_check(const ConfigNode& analytic_base, const std::string& config_path,
                            const std::string& work, int jobs,
                            const std::vector<std::string>& preset_dirs, const std::string& vary,
                            const std::string& value, const analysis::Target& target,
                            double analytic_metric, std::string* json) {
  const ConfigNode* k = analytic_base.find("K");
  const ConfigNode* t = analytic_base.find("T");
  if (!k || !t || !k->is_scalar() || !t->is_scalar()) return "";
  ConfigNode sim = analytic_base;
  sim.erase("K");
  sim.erase("T");
  ConfigNode m = ConfigNode::make_map();
  m.set("k", ConfigNode::make_scalar(k->scalar));
  m.set("t", ConfigNode::make_scalar(t->scalar));
  sim.set("measure", m);
  const std::string dir = std::filesystem::absolute(config_path).parent_path().string();
  const std::string sim_work = (std::filesystem::path(work) / "simulated-check").string();
  std::filesystem::create_directories(sim_work);
  ConfigEvaluator sim_ev(sim, dir, "isolated", sim_work, jobs, preset_dirs);
  const auto r = sim_ev.evaluate({{{vary, value}}});
  if (!r[0].ok) return "";
  const auto it = r[0].metrics.find(target.metric);
  if (it == r[0].metrics.end()) return "";
  const double sim_metric = it->second;
  const bool met = analysis::target_met(target, sim_metric);
  const double ratio = sim_metric / analytic_metric;
  auto metric = [&](const std::string& name) {
    const auto x = r[0].metrics.find(name);
    return x == r[0].metrics.end() ? NAN : x->second;
  };
  // What bound the simulated load: the largest load_bound_share_* (serving/metrics).
  std::string bound;
  double share = 0;
  for (const auto& [name, v] : r[0].metrics)
    if (name.rfind("load_bound_share_", 0) == 0 && v > share) {
      share = v;
      bound = name.substr(17);
    }
  char buf[64];
  auto g3 = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", v);
    return std::string(b);
  };
  std::snprintf(buf, sizeof buf, "%.6g", sim_metric);
  *json = std::string("{\"kind\": \"isolated\", \"metric\": ") + format_number(sim_metric) +
          ", \"target_met\": " + (met ? "true" : "false") + "}";
  const bool differs = !met || !(ratio <= 2 && ratio >= 0.5);
  if (!differs) return "";
  std::string note =
      "\nOn the simulator (one isolated request, K and T as above, the default "
      "stack and load path, same presets), " +
      target.metric + " at " + vary + " = " + value + " is " + buf + " (" + g3(ratio) +
      "× the analytic " + g3(analytic_metric) + "); the target is " + (met ? "met" : "not met") +
      " there.";
  const double load = metric("h2d_load_bytes_per_s"), peak = metric("h2d_peak_bytes_per_s");
  const double cs = metric("compute_s"), ca = metric("analytic_compute_s");
  if (std::isfinite(load) && std::isfinite(peak) && peak > 0) {
    std::snprintf(buf, sizeof buf, "%.3g", 100 * load / peak);
    note += std::string(" Why: the simulated load moves ") + buf + "% of the link's peak";
    if (!bound.empty()) note += ", bound by " + bound;
    if (std::isfinite(cs) && std::isfinite(ca) && ca > 0)
      note += ", and the step computes in " + g3(cs / ca) + "× the analytic (peak-FLOP/s) time";
    note +=
        ": the analytic model has only the link and peak compute. Ask the simulator the same "
        "question with --kind isolated (a config with measure: {k, t}; docs/analysis.md).";
  }
  return note + "\n";
}

}  // namespace

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
  analysis::check_target_dimension(target);

  AnalysisOut dir(out);
  WorkDir work(dir.runs());
  ConfigEvaluator ev(config, sets, kind, analytic, work.path(), jobs, preset_dirs);
  KeyInfo key = check_key(effective_config(ev.base(), ev.kind()), ev.base(), vary, "--vary");
  const std::size_t colon = range.find(':');
  if (colon == std::string::npos) throw InputError("--range '" + range + "': expected LO:HI");
  const std::string lo_text = range.substr(0, colon), hi_text = range.substr(colon + 1);
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
  const double lo = bound(lo_text), hi = bound(hi_text);
  if (!(lo < hi))
    throw InputError("--range '" + range + "': empty or inverted (LO must be below HI)");
  if (log_scale && !(lo > 0)) throw InputError("--log needs a range above zero");

  // Whole-number keys (counts, seeds) are searched over whole numbers kept in 64-bit integers,
  // keys with a set of valid values (lanes) over those values only (issue 26 items 8, 9).
  // A key is taken as whole when its value is written as one ("rate: 8" too), so a range with a
  // fractional end (0.25:2) searches that key continuously; a seed is whole whatever the range.
  const bool seed_key =
      vary == "seed" || (vary.size() > 5 && vary.rfind(".seed") == vary.size() - 5);
  const bool whole_range = lo == std::floor(lo) && hi == std::floor(hi);
  const bool discrete = !key.allowed.empty() || (key.integer && (whole_range || seed_key));
  if (!discrete) key.integer = false;  // probes and literals are then real numbers
  std::uint64_t ilo = 0, ihi = 0;
  std::vector<std::uint64_t> cands;  // the allowed values in [LO, HI]
  if (discrete) {
    auto whole = [&](const std::string& t) -> std::uint64_t {
      std::string d = t;
      while (!d.empty() && d.front() == ' ') d.erase(d.begin());
      while (!d.empty() && d.back() == ' ') d.pop_back();
      if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos) {
        errno = 0;
        const unsigned long long v = std::strtoull(d.c_str(), nullptr, 10);
        if (errno == ERANGE)
          throw InputError("--range '" + range + "': '" + t + "' is above 2^64 - 1");
        return v;
      }
      const double v = bound(t);
      if (!(v >= 0 && v < 9007199254740992.0 && v == std::floor(v)))
        throw InputError("--range '" + range + "': " + vary +
                         " is a whole number; expected whole numbers from 0 (e.g. 1:64), got '" +
                         t + "'");
      return static_cast<std::uint64_t>(v);
    };
    ilo = whole(lo_text);
    ihi = whole(hi_text);
    if (!(ilo < ihi))
      throw InputError("--range '" + range + "': empty or inverted (LO must be below HI)");
    if (!key.allowed.empty()) {
      std::string all;
      for (double a : key.allowed) {
        all += (all.empty() ? "" : ", ") + format_number(a);
        const auto v = static_cast<std::uint64_t>(a);
        if (v >= ilo && v <= ihi) cands.push_back(v);
      }
      if (cands.size() < 2)
        throw InputError("--range '" + range + "': " + vary + " takes only the values " + all +
                         "; the range holds " + std::to_string(cands.size()) +
                         " of them (at least 2 needed)");
    }
  }
  const std::uint64_t last = cands.empty() ? ihi - ilo : cands.size() - 1;
  auto cand_literal = [&](std::uint64_t i) {
    return cands.empty() ? std::to_string(ilo + i) : std::to_string(cands[i]);
  };

  std::vector<std::string> metric_names;
  auto metric_at = [&](const std::string& literal) {
    const auto r = ev.evaluate({{{vary, literal}}});
    if (!r[0].ok)
      throw InputError("kappasim solve: the run at " + vary + " = " + literal +
                       " failed: " + r[0].error);
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
  analysis::SolveResult r;
  if (discrete) {
    r = analysis::solve_discrete([&](std::uint64_t i) { return metric_at(cand_literal(i)); },
                                 [&](std::uint64_t i) {
                                   return cands.empty() ? static_cast<double>(ilo + i)
                                                        : static_cast<double>(cands[i]);
                                 },
                                 last, target, so);
  } else {
    r = analysis::solve_threshold(
        [&](double x) { return metric_at(value_literal(x, key.dim, false)); }, lo, hi, target, so);
  }
  auto lit = [&](double x) { return value_literal(x, key.dim, key.integer); };
  // The literal of a probe: exact for whole numbers (a seed near 2^64 is not a double).
  auto probe_lit = [&](const analysis::Probe& p) {
    return discrete ? cand_literal(p.index) : lit(p.x);
  };
  Table t({"probe", vary, target.metric, "met"});
  int i = 0;
  for (const auto& p : r.probes) t.add_row({std::int64_t{++i}, probe_lit(p), p.metric, p.met});
  const std::string lo_lit = discrete ? cand_literal(0) : lit(lo);
  const std::string hi_lit = discrete ? cand_literal(last) : lit(hi);
  const std::string mode = analytic ? "analytic" : "simulated:" + ev.kind();
  if (r.status != analysis::SolveResult::Status::Found) {
    // No threshold in the range: the probes are still the curve the user asked about (issue 26
    // item 24): printed, and written with --out, before the error.
    const double m0 = r.probes.front().metric, m1 = r.probes[1].metric;
    const bool never = r.status == analysis::SolveResult::Status::NeverMet;
    if (dir.active()) {
      dir.write("solve.json", "{\"key\": " + json_escape(vary) + ", \"status\": \"" +
                                  (never ? "never_met" : "met_everywhere") +
                                  "\", \"target\": " + json_escape(target.text) +
                                  ", \"runs\": " + std::to_string(r.probes.size()) +
                                  ", \"mode\": \"" + mode + "\", \"probes\": " + t.json() + "}\n");
      dir.write("probes.csv", t.csv());
      dir.done();
    }
    if (format == "table") std::cout << t.text(6);
    const std::string where =
        dir.active() ? "; the probes are in " + out + "/probes.csv" : std::string();
    if (never)
      throw InputError("kappasim solve: target '" + target.text + "' is never met for " + vary +
                       " in [" + lo_lit + ", " + hi_lit + "] (" + target.metric + " = " +
                       format_number(m0) + " at LO, " + format_number(m1) + " at HI, " +
                       std::to_string(r.probes.size()) +
                       " probes); widen --range or change the target" + where);
    throw InputError("kappasim solve: target '" + target.text + "' already holds over all of [" +
                     lo_lit + ", " + hi_lit + "] (" + target.metric + " = " + format_number(m0) +
                     " at LO, " + format_number(m1) +
                     " at HI): the threshold lies outside the range; widen --range" + where);
  }
  double m_at = 0;
  std::string x_lit, other_lit;
  for (const auto& p : r.probes) {
    if (discrete ? p.index == r.x_index : p.x == r.x) {
      m_at = p.metric;
      x_lit = probe_lit(p);
    }
    if (discrete ? p.index == r.other_index : p.x == r.other) other_lit = probe_lit(p);
  }
  std::string json = "{\"key\": " + json_escape(vary) + ", \"status\": \"found\", \"value\": \"" +
                     x_lit + "\", \"value_si\": " + format_number(r.x) + ", \"other_side\": \"" +
                     other_lit + "\", \"target\": " + json_escape(target.text) +
                     ", \"metric_at_value\": " + format_number(m_at) + ", \"method\": \"" +
                     r.method + "\", \"runs\": " + std::to_string(r.probes.size()) +
                     ", \"mode\": \"" + mode + "\", \"probes\": " + t.json() + "}\n";
  // An analytic answer checked on the simulator at the same value (issue 22 item 7).
  std::string check_json, note;
  if (analytic)
    note = simulated_check(ev.base(), config, work.path(), jobs, preset_dirs, vary, x_lit, target,
                           m_at, &check_json);
  if (!check_json.empty()) json.insert(json.size() - 2, ", \"simulated_check\": " + check_json);
  if (format == "json") {
    std::cout << json;
  } else {
    char mbuf[32];
    std::snprintf(mbuf, sizeof mbuf, "%.6g", m_at);
    std::cout << vary << " = " << x_lit << "  (" << target.metric << " = " << mbuf << "; target "
              << target.text << " met there, not at " << other_lit << ")\n"
              << r.probes.size() << " "
              << (analytic ? "analytic evaluations" : ev.kind() + " simulations") << ", "
              << r.method << "\n\n"
              << t.text(6) << note;
  }
  if (dir.active()) {
    dir.write("solve.json", json);
    dir.write("probes.csv", t.csv());
    dir.done();
  }
  return 0;
}

}  // namespace kappasim::cli
