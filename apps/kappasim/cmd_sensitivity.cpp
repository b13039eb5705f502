// kappasim sensitivity CONFIG --metric M [--out DIR]: every parameter of the effective config
// tagged `assumption:` or `derived:` (presets, and the serving spec's [A]/[D] defaults via
// analysis/parameters serving_tags) set to its low and to its high value, one at a time, each a
// simulation (a sweep point of --kind, all in one sweep, -j at once) or the analytic model
// (--analytic); the metric's swings ranked as a tornado table, CSV and gnuplot figure.
// docs/analysis.md.
#include <cctype>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>

#include "analysis/parameters.hpp"
#include "analysis/tornado.hpp"
#include "apps/kappasim/analysis_cmds.hpp"
#include "apps/kappasim/analysis_eval.hpp"
#include "apps/kappasim/cli.hpp"
#include "core/output.hpp"
#include "core/table.hpp"
#include "core/units.hpp"
#include "report/figure.hpp"

namespace kappasim::cli {

int cmd_sensitivity(const std::vector<std::string>& args) {
  std::string config, metric, out, kind = "run", only;
  std::vector<std::string> sets, preset_dirs;
  bool analytic = false;
  int jobs = 0, seeds = 3;
  double rel = 0.5;
  po::options_description desc(
      "kappasim sensitivity: how far a metric moves when each assumed or derived parameter moves\n"
      "Usage: kappasim sensitivity CONFIG --metric M [--out DIR] [options]\n"
      "Each parameter tagged assumption: or derived: in the effective config (kappasim run CONFIG\n"
      "--dump-config) goes to its declared low/high ({value: X, assumption: \"...\", low: L, high: "
      "H})\n"
      "or, without one, to base x (1 -/+ --rel), one at a time; the swings are ranked (tornado)");
  desc.add_options()("config", po::value(&config), "run config (YAML)")(
      "metric", po::value(&metric), "metric of the kind (run: summary figures such as ttft_p50_s)")(
      "out", po::value(&out),
      "folder for tornado.csv, tornado.txt, tornado.gp/.png/.svg and the runs")(
      "analytic", po::bool_switch(&analytic),
      "the analytic model (kind kappa) instead of simulations")(
      "kind", po::value(&kind), "sweep point kind of each run (default run)")(
      "rel", po::value(&rel),
      "default relative range for parameters without low/high (default 0.5)")(
      "only", po::value(&only), "vary only keys starting with this prefix (e.g. serving.)")(
      "seeds", po::value(&seeds),
      "run the base at this many workload seeds (the config's and the next ones) to show the "
      "seed spread beside the swings (default 3; 1: the config's seed only)")(
      "set", po::value(&sets)->composing(), "override a config key")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "jobs,j", po::value(&jobs), "parallel simulations (default: cores)")("help,h", "this help");
  po::positional_options_description pos;
  pos.add("config", 1);
  auto vm = parse("sensitivity", args, desc, &pos);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  add_preset_dirs(preset_dirs);
  if (config.empty()) throw InputError("kappasim sensitivity: CONFIG is required");
  if (metric.empty()) throw InputError("kappasim sensitivity: --metric M is required");
  if (!(rel > 0 && rel < 1)) throw InputError("--rel: expected a fraction between 0 and 1");
  if (seeds < 1 || seeds > 100) throw InputError("--seeds: expected 1 to 100");

  AnalysisOut dir(out);
  WorkDir work(dir.runs());
  ConfigEvaluator ev(config, sets, kind, analytic, work.path(), jobs, preset_dirs);
  std::vector<analysis::TaggedParameter> params;
  // A parameter whose base is 0 and that declares no range has nothing to vary (0 x (1 -/+ rel)
  // is 0): skipped with a note (issue 26 item 10).
  std::vector<std::string> skipped;
  for (auto& p : analysis::tagged_parameters(effective_config(ev.base(), ev.kind()), rel)) {
    if (!only.empty() && p.key.rfind(only, 0) != 0) continue;
    if (!p.declared && p.low == p.high)
      skipped.push_back(p.key);
    else
      params.push_back(std::move(p));
  }
  if (params.empty())
    throw InputError(
        "kappasim sensitivity: no parameter tagged assumption: or derived: " +
        (only.empty() ? std::string("in the effective config") : "under '" + only + "'") +
        (skipped.empty() ? std::string() : " with a range to vary"));
  // Point 0 = base, then low and high of each parameter, then the base at the next seeds (a
  // config with a workload; issue 26 items 10, 21: the seed spread beside the swings).
  std::vector<Overrides> points{{}};
  for (const auto& p : params) {
    points.push_back({{p.key, p.low_text}});
    points.push_back({{p.key, p.high_text}});
  }
  const ConfigNode* wl = ev.base().find("workload");
  const bool seeded = !analytic && wl && wl->is_map() && seeds > 1;
  std::uint64_t seed0 = 1;
  if (wl && wl->is_map())
    if (const ConfigNode* sn = wl->find("seed"); sn && sn->is_scalar())
      if (sn->scalar.find_first_not_of("0123456789") == std::string::npos && sn->scalar.size() < 20)
        seed0 = std::stoull(sn->scalar);
  const std::size_t first_seed_point = points.size();
  if (seeded)
    for (int k = 1; k < seeds; ++k)
      points.push_back({{"workload.seed", std::to_string(seed0 + static_cast<std::uint64_t>(k))}});
  const std::vector<EvalResult> r = ev.evaluate(points);
  if (!r[0].ok) throw InputError("kappasim sensitivity: the base run failed: " + r[0].error);
  auto it = r[0].metrics.find(metric);
  if (it == r[0].metrics.end()) {
    std::vector<std::string> names;
    std::string all;
    for (const auto& kv : r[0].metrics) {
      names.push_back(kv.first);
      all += (all.empty() ? "" : ", ") + kv.first;
    }
    const std::string near = nearest(metric, names);
    throw InputError("--metric: unknown metric '" + metric + "' for kind " + ev.kind() +
                     (near.empty() ? "" : "; did you mean '" + near + "'?") + " (metrics: " + all +
                     ")");
  }
  const double base = it->second;
  // The base at its seeds: min, max and spread (max - min) of the metric.
  std::optional<double> spread;
  std::string seed_line;
  if (seeded) {
    double mn = base, mx = base;
    int n = 1;
    for (std::size_t i = first_seed_point; i < r.size(); ++i)
      if (r[i].ok && r[i].metrics.count(metric)) {
        mn = std::min(mn, r[i].metrics.at(metric));
        mx = std::max(mx, r[i].metrics.at(metric));
        ++n;
      }
    spread = mx - mn;
    seed_line =
        "base at workload.seed " + std::to_string(seed0) + " (as kappasim run CONFIG); at " +
        std::to_string(n) + " seeds " + std::to_string(seed0) + ".." +
        std::to_string(seed0 + static_cast<std::uint64_t>(seeds) - 1) + ": " + format_number(mn) +
        " to " + format_number(mx) + " (seed spread " + format_number(*spread) +
        "); a swing below the seed spread is within the noise of one seed\n";
  }
  std::vector<analysis::TornadoRow> rows;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    analysis::TornadoRow row{p.key,   p.kind, p.base_text, p.low_text, p.high_text,
                             p.range, {},     {},          ""};
    const EvalResult& lo = r[1 + 2 * i];
    const EvalResult& hi = r[2 + 2 * i];
    if (lo.ok && lo.metrics.count(metric)) row.metric_low = lo.metrics.at(metric);
    if (hi.ok && hi.metrics.count(metric)) row.metric_high = hi.metrics.at(metric);
    if (!lo.ok) row.error = "low: " + lo.error;
    if (!hi.ok) row.error += (row.error.empty() ? "" : "; ") + std::string("high: ") + hi.error;
    rows.push_back(row);
  }
  const auto ranked = analysis::rank_tornado(rows);
  const std::string mode =
      analytic ? "evaluations of the analytic model (kind kappa)" : ev.kind() + " simulations";
  char relpct[32];
  std::snprintf(relpct, sizeof relpct, "%g%%", rel * 100);
  std::string head = "kappasim sensitivity " + config + ": " + std::to_string(params.size()) +
                     " parameters, " + std::to_string(ev.runs()) + " " + mode +
                     "; ranges declared in the provenance where given, else base x (1 -/+ " +
                     relpct + ")\n" + seed_line;
  // issue 26 item 21: a base (or base seed) that warned (a tier that overflows) is said, not
  // used silently; the swings then measure a thrashing tier.
  {
    std::string warned;
    int n_warned = 0;
    auto note = [&](const EvalResult& e, const std::string& which) {
      if (e.warnings.empty()) return;
      ++n_warned;
      if (warned.empty()) warned = which + ": " + e.warnings.front();
    };
    note(r[0], "the base");
    if (seeded)
      for (std::size_t i = first_seed_point; i < r.size(); ++i)
        note(r[i],
             "the base at workload.seed " +
                 std::to_string(seed0 + static_cast<std::uint64_t>(i - first_seed_point + 1)));
    if (n_warned > 0)
      head += "warning: " + std::to_string(n_warned) + " base run" + (n_warned > 1 ? "s" : "") +
              " warned; " + warned + "\n";
  }
  if (!skipped.empty()) {
    std::string keys;
    for (const auto& k : skipped) keys += (keys.empty() ? "" : ", ") + k;
    head += "skipped (base 0 and no declared low/high, so base x (1 -/+ " + std::string(relpct) +
            ") is 0 to 0): " + keys + "\n";
  }
  // The run kind's quantiles (…_p50_s, …_p99_s) come from a quantile sketch of relative accuracy
  // 0.5% (core/quantile: buckets 1% wide): a smaller effect can read as a swing of exactly 0.
  const auto q = metric.find("_p");
  if (!analytic && q != std::string::npos && q + 2 < metric.size() &&
      std::isdigit(static_cast<unsigned char>(metric[q + 2])))
    head += "note: " + metric +
            " is a quantile from a sketch with buckets 1% wide (relative accuracy 0.5%): an effect "
            "under about 1% of the base can read as a swing of 0; a mean (e.g. ttft_mean_s) is "
            "exact\n";
  const std::string table = analysis::tornado_table(ranked, metric, base, spread);
  std::cout << head << table;
  if (dir.active()) {
    dir.write("tornado.txt", head + table);
    dir.write("tornado.csv", analysis::tornado_csv(ranked, base, spread));
    report::Figure f;
    f.name = "tornado";
    f.title = "kappasim sensitivity: tornado of " + metric;
    f.body = analysis::tornado_gnuplot(ranked, metric, base, "tornado.csv");
    int n = 0;
    for (const auto& row : ranked) n += row.swing() >= 0 ? 1 : 0;
    f.height = 160 + 24 * std::min(std::max(n, 1), 20);
    report::render_figure(dir.dir(), f);
    dir.done();
    std::cout << "results in " << out << "/ (tornado.txt, tornado.csv, tornado.gp"
              << (report::have_gnuplot() ? ", .png, .svg" : "") << ", runs/)\n";
  }
  return 0;
}

}  // namespace kappasim::cli
