// kappasim measure capacity CONFIG --slo-ttft T [--slo-percentile P]: the largest steady-state
// throughput the config serves with its TTFT at P within T, over replicates, with a t interval
// (analysis/capacity.hpp: bisection over workload.rate, each probe a capacity-probe sweep point
// in its own process). docs/analysis.md "Capacity at a TTFT SLO".
#include <filesystem>
#include <iostream>

#include "analysis/capacity.hpp"
#include "apps/kappasim/analysis_cmds.hpp"
#include "apps/kappasim/analysis_eval.hpp"
#include "apps/kappasim/cli.hpp"
#include "core/output.hpp"
#include "core/units.hpp"
#include "serving/run_spec.hpp"
#include "sweeps/runner/runner.hpp"

namespace kappasim::cli {

int cmd_measure_capacity(const std::vector<std::string>& args) {
  std::string config, slo_ttft, slo_tpot, range, out, format = "table";
  std::vector<std::string> sets, preset_dirs;
  double percentile = -1, tol = -1, warmup = -1, fraction = -1;
  int replicates = -1, jobs = 0;
  po::options_description desc(
      "kappasim measure capacity: the largest steady-state throughput (requests/s) a config\n"
      "serves while its TTFT at a percentile stays within a bound, per replicate (workload seeds\n"
      "seed, seed+1, ...) by bisection over workload.rate, with a t interval over replicates, and\n"
      "the TTFT quantiles at 0.8 x that capacity. Each probe is one simulation in its own "
      "process.\n"
      "Usage: kappasim measure capacity CONFIG --slo-ttft T [--slo-percentile P] [options]\n"
      "A `capacity:` section in CONFIG gives the same settings (the options win).\nOptions");
  desc.add_options()("config", po::value(&config), "run config (YAML; a generator workload)")(
      "slo-ttft", po::value(&slo_ttft), "the TTFT bound, e.g. 2s or '500 ms' (required)")(
      "slo-percentile", po::value(&percentile),
      "the percentile the bound applies to, 0 to 1 (default 0.99 = p99)")(
      "slo-tpot", po::value(&slo_tpot),
      "not applicable: kappasim simulates prefill only (no decode, so no time per output token)")(
      "replicates", po::value(&replicates), "replicates, one workload seed each (default 3)")(
      "rate-range", po::value(&range),
      "LO:HI offered load searched, requests/s (default workload.rate/64 : workload.rate x 4)")(
      "tol", po::value(&tol), "stop when HI/LO of the bracket <= 1 + tol (default 0.02)")(
      "warmup", po::value(&warmup),
      "fraction of the requests, by arrival, left out of the steady-state window (default 0.2)")(
      "fraction", po::value(&fraction),
      "report the TTFT quantiles at this fraction of the capacity (default 0.8)")(
      "set", po::value(&sets)->composing(), "override a config key")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "out", po::value(&out), "folder for capacity.json, capacity.txt, probes.csv and the runs")(
      "jobs,j", po::value(&jobs), "parallel probe processes (default: cores)")(
      "format", po::value(&format), "table (default) or json (stdout)")("help,h", "this help");
  po::positional_options_description pos;
  pos.add("config", 1);
  auto vm = parse("measure capacity", args, desc, &pos);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (!slo_tpot.empty())
    throw InputError(
        "--slo-tpot: not supported: the capacity search bounds TTFT only (use --slo-ttft); a "
        "decode run (serving.decode: true) reports TPOT and, with serving.slo, goodput_rps in "
        "its summary.json");
  add_preset_dirs(preset_dirs);
  if (config.empty()) throw InputError("kappasim measure capacity: CONFIG is required");
  if (format != "table" && format != "json")
    throw InputError("--format '" + format + "': expected table or json");
  if (jobs != 0) jobs = sweep::checked_jobs(jobs);

  ConfigNode base = load_yaml_file(config);
  if (!base.is_map()) throw InputError(base.loc, "expected a config map (model, system, ...)");
  for (const auto& s : sets) apply_set(base, s);
  // The settings: the config's capacity: section, then the options.
  ConfigNode cap = ConfigNode::make_map({"<measure capacity>", 0, 0});
  if (const ConfigNode* c = base.find("capacity")) {
    if (!c->is_map()) throw InputError(c->loc, "capacity: expected a map ({slo_ttft: 2 s, ...})");
    cap = *c;
    base.erase("capacity");
  }
  auto put = [&](const char* key, const std::string& v, const char* option) {
    cap.set(key, ConfigNode::make_scalar(v, SourceLoc{option, 0, 0}));
  };
  if (!slo_ttft.empty()) put("slo_ttft", slo_ttft, "--slo-ttft");
  if (!cap.find("slo_ttft"))
    throw InputError(
        "kappasim measure capacity: --slo-ttft is required (the TTFT bound, e.g. --slo-ttft 2s "
        "--slo-percentile 0.99)");
  if (vm.count("slo-percentile")) {
    if (!(percentile > 0 && percentile <= 1))
      throw InputError("--slo-percentile: expected a fraction in (0, 1] (0.99 = p99), got " +
                       format_number(percentile));
    put("percentile", format_number(percentile), "--slo-percentile");
  }
  if (vm.count("replicates")) {
    if (replicates < 1 || replicates > 1000)
      throw InputError("--replicates: expected 1 to 1000, got " + std::to_string(replicates));
    put("replicates", std::to_string(replicates), "--replicates");
  }
  if (vm.count("tol")) {
    if (!(tol > 0 && tol < 1)) throw InputError("--tol: expected a fraction in (0, 1), e.g. 0.02");
    put("tol", format_number(tol), "--tol");
  }
  if (vm.count("warmup")) {
    if (!(warmup >= 0 && warmup < 1)) throw InputError("--warmup: expected a fraction in [0, 1)");
    put("warmup", format_number(warmup), "--warmup");
  }
  if (vm.count("fraction")) {
    if (!(fraction > 0 && fraction <= 1))
      throw InputError("--fraction: expected a fraction in (0, 1], e.g. 0.8");
    put("fraction", format_number(fraction), "--fraction");
  }
  if (!range.empty()) {
    const std::size_t colon = range.find(':');
    if (colon == std::string::npos)
      throw InputError("--rate-range '" + range + "': expected LO:HI in requests/s, e.g. 0.5:50");
    double lo = 0, hi = 0;
    try {
      lo = parse_quantity_as(range.substr(0, colon), dim::none);
      hi = parse_quantity_as(range.substr(colon + 1), dim::none);
    } catch (const UnitError& e) {
      throw InputError("--rate-range '" + range + "': " + e.what());
    }
    if (!(lo > 0 && lo < hi))
      throw InputError("--rate-range '" + range + "': expected 0 < LO < HI (requests/s)");
    put("rate_lo", format_number(lo), "--rate-range");
    put("rate_hi", format_number(hi), "--rate-range");
  }
  analysis::CapacitySpec spec = read_config<analysis::CapacitySpec>(cap, "capacity", nullptr);
  if (spec.replicates < 1) throw InputError("capacity.replicates: expected at least 1");
  spec.jobs = jobs > 0 ? jobs : 0;  // 0: the sweep runner's default (cores)
  // The run config is checked here, before any probe runs: bad input names its file and key.
  const std::uint64_t seed0 = [&] {
    const RunSpec rs = read_config<RunSpec>(base, "");
    if (rs.workload.type == WorkloadType::Trace)
      throw InputError(
          "workload.type: a trace has no offered rate to vary; measure capacity needs a generator "
          "(sharegpt, narrativeqa, docfinqa, mix) with workload.rate");
    return rs.workload.seed;  // replicate i runs at seed0 + i
  }();
  const std::filesystem::path parent = std::filesystem::path(config).parent_path();
  const std::string base_dir =
      std::filesystem::absolute(parent.empty() ? std::filesystem::path(".") : parent)
          .lexically_normal()
          .string();
  AnalysisOut dir(out);
  WorkDir work(dir.runs());
  analysis::CapacitySpec used;
  const analysis::CapacityResult r =
      analysis::measure_capacity(base, base_dir, spec, work.path(), preset_dirs, &seed0, &used);
  const std::string text = analysis::capacity_text(r, used, seed0);
  const std::string json = analysis::capacity_json(r, used, seed0);
  std::cout << (format == "json" ? json : text);
  if (dir.active()) {
    dir.write("capacity.txt", text);
    dir.write("capacity.json", json);
    dir.write("probes.csv", analysis::capacity_probes_csv(r, seed0));
    dir.done();
    if (format == "table")
      std::cout << "results in " << out << "/ (capacity.txt, capacity.json, probes.csv, runs/)\n";
  }
  return 0;
}

}  // namespace kappasim::cli
