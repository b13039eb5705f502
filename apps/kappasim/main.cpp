// kappasim: command-line entry point. Dispatches subcommands; turns InputError into exit code
// 2 with a one-line message on stderr, anything unexpected into exit code 1.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "apps/kappasim/cli.hpp"
#include "apps/kappasim/sweep_run.hpp"
#include "apps/kappasim/analysis_cmds.hpp"

namespace {

const char* kUsage =
    "kappasim: how GPU, memory and interconnect choices move κ_crit in LLM prefill with KV offloading\n"
    "\n"
    "Usage: kappasim COMMAND [options]   (kappasim COMMAND --help for its options)\n"
    "\n"
    "Commands:\n"
    "  report     the analytic κ report (κ_crit matrix, paper check, TP, κ_crit(K), workloads) -> DIR\n"
    "  kappa      B_kv, F_pf, κ_M, κ_HW, κ_crit (and TTFT, P_OH, U at K, T) per model x system\n"
    "  roofline   attainable FLOP/s vs κ_ratio, ridge at κ_crit, as CSV\n"
    "  presets    list / show / check the built-in models, GPUs, links, host memories, systems\n"
    "  probe      run the SystemC models: h2d | d2h | bidir copy curves, prefill and gemm timing\n"
    "  run        offloaded-prefill serving: CONFIG --out DIR -> requests.csv, summary.json, trace.json\n"
    "  measure    kappa-crit | poh: κ_crit and P_OH measured on the simulator, beside the analytic ones\n"
    "  bench      serving: simulated requests per wall second and peak memory\n"
    "  sweep      parameter sweeps: SPEC --out DIR (each point its own process; resumable, sharded);\n"
    "             point | collect DIR | emit slurm | kinds | points SPEC  (docs/sweeps.md)\n"
    "  reproduce  the κ paper's analysis and the architecture studies, simulated -> DIR/report.md\n"
    "  validate   every published measurement vs the simulator, ratio held to a band -> docs/validation.md\n"
    "  sensitivity  CONFIG --metric M: tornado of every assumed/derived parameter (docs/analysis.md)\n"
    "  calibrate  MEASUREMENTS.yaml --out DIR: fit config parameters to measurements\n"
    "  solve      CONFIG --vary KEY --range LO:HI --target \"M OP V\": the KEY where the target is met\n"
    "  design     emit: one compute / host-link / KV-SRAM split of the design model as presets\n"
    "\n"
    "Exit codes: 0 ok, 2 bad input (message names the file, key or option), 1 internal error,\n"
    "3 (sweep) some points invalid or failed.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::cout << "kappasim 0.1.0\n";
    return 0;
  }
  kappasim::sweep::register_builtin_kinds();
  const std::string cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "kappa") return kappasim::cli::cmd_kappa(args);
    if (cmd == "roofline") return kappasim::cli::cmd_roofline(args);
    if (cmd == "presets") return kappasim::cli::cmd_presets(args);
    if (cmd == "report") return kappasim::cli::cmd_report(args);
    if (cmd == "run") return kappasim::cli::cmd_run(args);
    if (cmd == "sweep") return kappasim::cli::cmd_sweep(args);
    if (cmd == "reproduce") return kappasim::cli::cmd_reproduce(args);
    if (cmd == "validate") return kappasim::cli::cmd_validate(args);
    // analysis commands (apps/kappasim/cmd_{sensitivity,calibrate,solve}.cpp)
    if (cmd == "sensitivity") return kappasim::cli::cmd_sensitivity(args);
    if (cmd == "calibrate") return kappasim::cli::cmd_calibrate(args);
    if (cmd == "solve") return kappasim::cli::cmd_solve(args);
    // kappasim design emit (apps/kappasim/cmd_design.cpp)
    if (cmd == "design") {
      const std::string verb = args.empty() ? "" : args[0];
      std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
      return kappasim::cli::cmd_design(verb, rest);
    }
    if (cmd == "measure" || cmd == "bench") {
      const std::string verb = args.empty() ? "" : args[0];
      std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
      return cmd == "measure" ? kappasim::cli::cmd_measure(verb, rest)
                              : kappasim::cli::cmd_bench(verb, rest);
    }
    if (cmd == "probe") {
      const std::string verb = args.empty() ? "" : args[0];
      std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
      if (verb == "h2d" || verb == "d2h" || verb == "bidir")
        return kappasim::cli::cmd_probe_link(verb, rest);
      if (verb == "prefill" || verb == "gemm") return kappasim::cli::cmd_probe_compute(verb, rest);
      std::cerr << "kappasim: error: kappasim probe: expected h2d, d2h, bidir, prefill or gemm"
                << (verb.empty() ? "" : ", got '" + verb + "'") << "\n";
      return 2;
    }
    std::cerr << "kappasim: error: unknown command '" << cmd << "'\n\n" << kUsage;
    return 2;
  } catch (const kappasim::InputError& e) {
    std::cerr << "kappasim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kappasim: internal error: " << e.what() << "\n";
    return 1;
  }
}
