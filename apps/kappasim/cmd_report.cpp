// kappasim report: the analytic κ report, the main job until the simulator exists. Writes
// DIR/report.md and the CSVs behind each table; the folder appears whole or not at all. The
// command line only: the report is report/analytic_report.
#include <algorithm>
#include <iostream>

#include "apps/kappasim/analysis_eval.hpp"
#include "apps/kappasim/cli.hpp"
#include "core/output.hpp"
#include "report/analytic_report.hpp"

namespace kappasim::cli {

int cmd_report(const std::vector<std::string>& args) {
  std::string out;
  std::vector<std::string> preset_dirs;
  std::string simulated;  // a kappa-crit sweep folder (section 6)
  bool quiet = false, force = false;
  po::options_description desc(
      "kappasim report: the analytic κ report -> DIR/report.md and CSVs\n"
      "Usage: kappasim report --out DIR\nOptions");
  desc.add_options()("out,o", po::value(&out)->required(), "output folder (replaced whole)")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "force", po::bool_switch(&force),
      "write DIR even if it holds files kappasim did not write (they are lost)")(
      "quiet,q", po::bool_switch(&quiet), "do not print the summary")(
      "simulated", po::value(&simulated),
      "a kappa-crit sweep folder (e.g. REPRODUCE/sweeps/kappa-crit-testbed) whose simulated κ_crit "
      "section 6 compares against")("help,h", "this help");
  std::vector<std::string> a = args;
  if (std::find(a.begin(), a.end(), "--help") != a.end() ||
      std::find(a.begin(), a.end(), "-h") != a.end()) {
    std::cout << desc << "\n";
    return 0;
  }
  parse("report", args, desc);
  check_output_dir(out, force);
  add_preset_dirs(preset_dirs);
  // Section 6's probes run as child kappasim processes, their output in a temporary folder.
  WorkDir work("");
  const report::AnalyticReport rep = report::build_analytic_report(
      simulated,
      [](const std::vector<std::string>& cmd, const std::string& pointer,
         const std::string& work_file,
         const std::string& what) { return run_command_value(cmd, {}, pointer, work_file, what); },
      work.path() + "/probe");
  OutputDir dir(out, force);
  dir.write("report.md", rep.markdown);
  for (const auto& [name, csv] : rep.csv) dir.write(name, csv);
  dir.commit();
  for (const std::string& f : dir.renamed_user_files())
    std::cerr << "kappasim: kept your file " << out << "/" << f << " as " << f
              << ".user-kept (the results now hold a file of that name)\n";
  if (!quiet) {
    std::cout << "κ_crit at peak (BF16 compute and KV, per GPU, F_pf = 2·N_active):\n\n"
              << rep.summary << "\nreport written to " << out << "/report.md\n";
  }
  return 0;
}

}  // namespace kappasim::cli
