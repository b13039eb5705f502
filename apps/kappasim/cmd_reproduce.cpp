// kappasim reproduce --out DIR [--quick] [-j N]: the κ paper's analysis end to end, on the
// analytic model and on the simulator, plus the architecture studies, into DIR/report.md with
// tables and figures (gnuplot scripts next to their CSV data in DIR/figures/).
//
// This file is the command line only: options, the output folder's claim, and the two runners
// the report needs (each sweep through the sweep runner, each Eq. 6 probe as a child kappasim).
// The report itself, one file per section with explicit inputs and outputs, is the report/
// library (report/reproduce.hpp; docs/report.md lists the sections).
#include <filesystem>
#include <iostream>

#include "apps/kappasim/analysis_eval.hpp"
#include "apps/kappasim/cli.hpp"
#include "core/output.hpp"
#include "report/reproduce.hpp"
#include "sweeps/runner/runner.hpp"

#ifndef KAPPASIM_SOURCE_DIR
#define KAPPASIM_SOURCE_DIR "."
#endif

namespace kappasim::cli {

namespace fs = std::filesystem;

int cmd_reproduce(const std::vector<std::string>& args) {
  report::ReproduceOptions R;
  R.experiments = (fs::path(KAPPASIM_SOURCE_DIR) / "experiments").string();
  int jobs = 0;
  bool force = false;
  po::options_description desc(
      "kappasim reproduce: the κ paper's analysis end to end on the analytic model and the\n"
      "simulator, plus the architecture studies -> DIR/report.md (tables, figures, data).\n"
      "Sweeps run resumably into DIR/sweeps/; rerunning continues where a killed run stopped.\n"
      "Usage: kappasim reproduce --out DIR [--quick] [-j N]\nOptions");
  desc.add_options()("out,o", po::value(&R.out),
                     "output folder (kept between runs: sweeps resume)")(
      "quick", po::bool_switch(&R.quick),
      "small sweeps (CI): every section, fewer points and requests")(
      "force", po::bool_switch(&force),
      "write into DIR even if it holds files kappasim did not write")(
      "quiet,q", po::bool_switch(&R.quiet), "print nothing on success (errors still go to stderr)")(
      "jobs,j", po::value(&jobs), "points run at once (default: the number of cores)")(
      "experiments", po::value(&R.experiments),
      "folder holding reproduce/ and studies/ sweep specs")("help,h", "this help");
  auto vm = parse("reproduce", args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (R.out.empty()) throw InputError("kappasim reproduce: --out DIR is required");
  if (vm.count("jobs")) sweep::checked_jobs(jobs);
  R.jobs = jobs;
  if (!fs::is_directory(fs::path(R.experiments) / "reproduce"))
    throw InputError("--experiments: " + R.experiments +
                     " has no reproduce/ folder of sweep specs");
  claim_output_dir(R.out, force);  // refuses a user's non-empty folder (core/output)

  // Each sweep resumably, with this command's -j, --quick and --quiet.
  const report::SweepRunner run_sweep = [&](const std::string& spec, const std::string& out_dir) {
    sweep::SweepOptions o;
    o.spec_path = spec;
    o.out_dir = out_dir;
    o.jobs = jobs;
    o.quick = R.quick;
    o.quiet = R.quiet;
    o.fork_points = true;  // points in forked children of this warm process (no simulation here)
    return sweep::run_sweep(o);
  };
  // The sweeps of experiments/ first, through one pool (sweep::run_sweeps), with the same options.
  const report::SweepPoolRunner pool =
      [&](const std::vector<std::pair<std::string, std::string>>& specs_and_dirs) {
        std::vector<sweep::SweepOptions> all;
        for (const auto& [spec, out_dir] : specs_and_dirs) {
          sweep::SweepOptions o;
          o.spec_path = spec;
          o.out_dir = out_dir;
          o.jobs = jobs;
          o.quick = R.quick;
          o.quiet = R.quiet;
          o.fork_points = true;
          all.push_back(o);
        }
        std::vector<report::PooledSweep> out;
        for (const sweep::SweepRun& r : sweep::run_sweeps(all))
          out.push_back({r.code, r.cpu_s, r.first_start_s, r.last_end_s});
        return out;
      };
  // Each Eq. 6 probe as a child `kappasim probe ...` (apps/kappasim/analysis_eval).
  const report::ProbeRunner probe = [](const std::vector<std::string>& a,
                                       const std::string& pointer, const std::string& work_file,
                                       const std::string& what) {
    return run_command_value(a, {}, pointer, work_file, what);
  };
  const std::string report = report::write_reproduce_report(R, run_sweep, probe, pool);
  if (!R.quiet) std::cout << "report: " << report << "\n";
  return 0;
}

}  // namespace kappasim::cli
