// kappasim: command-line entry point. Dispatches subcommands; turns InputError into exit code
// 2 with a one-line message on stderr, anything unexpected into exit code 1.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <systemc>
#include <vector>

#include "analysis/evaluate.hpp"
#include "apps/kappasim/analysis_cmds.hpp"
#include "apps/kappasim/cli.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/glibc_malloc.hpp"
#include "core/version.hpp"  // generated from project(VERSION) in CMakeLists.txt

namespace {

const char* kUsage =
    "kappasim: how GPU, memory and interconnect choices move κ_crit in LLM prefill with KV "
    "offloading\n"
    "\n"
    "Usage: kappasim COMMAND [options]   (kappasim COMMAND --help for its options)\n"
    "\n"
    "Commands:\n"
    "  report     the analytic κ report (κ_crit matrix, paper check, TP, κ_crit(K), workloads) -> "
    "DIR\n"
    "  kappa      B_kv, F_pf, κ_M, κ_HW, κ_crit (and TTFT, P_OH, U at K, T) per model x system\n"
    "  roofline   attainable FLOP/s vs κ_ratio, ridge at κ_crit, as CSV\n"
    "  presets    list / show / check the built-in models, GPUs, links, host memories, systems\n"
    "  list       every registered kind a config selects by name (policies, routers, load paths,\n"
    "             link back ends, sweep kinds, stacks) with one-line docs: list [KIND]\n"
    "  probe      run the SystemC models: h2d | d2h | bidir copy curves, prefill, decode and gemm "
    "timing\n"
    "  run        offloaded-prefill serving: CONFIG --out DIR -> requests.csv, summary.json, "
    "trace.json\n"
    "  measure    kappa-crit | poh: κ_crit and P_OH measured on the simulator, beside the analytic "
    "ones;\n"
    "             capacity CONFIG --slo-ttft T: the throughput served at a TTFT SLO\n"
    "  bench      serving: simulated requests per wall second and peak memory\n"
    "  sweep      parameter sweeps: SPEC --out DIR (each point its own process; resumable, "
    "sharded);\n"
    "             point | collect DIR | emit slurm | kinds | points SPEC  (docs/sweeps.md)\n"
    "  reproduce  the κ paper's analysis and the architecture studies, simulated -> DIR/report.md\n"
    "  validate   every published measurement vs the simulator, ratio held to a band -> "
    "docs/validation.md\n"
    "  sensitivity  CONFIG --metric M: tornado of every assumed/derived parameter "
    "(docs/analysis.md)\n"
    "  calibrate  MEASUREMENTS.yaml --out DIR: fit config parameters to measurements\n"
    "  solve      CONFIG --vary KEY --range LO:HI --target \"M OP V\": the KEY where the target is "
    "met\n"
    "  design     emit: one compute / host-link / KV-SRAM split of the design model as presets\n"
    "  metrics    the statistics runs and sweeps write (requests.csv, summary.json, the sweep\n"
    "             kinds' results.csv columns): unit, aggregation, definition\n"
    "\n"
    "Exit codes: 0 ok, 2 bad input (message names the file, key or option), 1 internal error,\n"
    "3 (sweep) some points invalid or failed, 4 a file could not be read or written (disk full,\n"
    "permission: the message carries the system's reason).\n";

// ---- help for the commands with verbs, and "did you mean" (issue 12, item 14) ---------------
const std::vector<std::string> kCommands = {
    "report",      "kappa",     "roofline", "presets",   "probe",   "run",
    "measure",     "bench",     "sweep",    "reproduce", "help",    "validate",
    "sensitivity", "calibrate", "solve",    "design",    "metrics", "list"};

struct VerbHelp {
  const char* command;
  std::vector<std::string> verbs;
  const char* usage;
};
const std::vector<VerbHelp> kVerbCommands = {
    {"probe",
     {"h2d", "d2h", "bidir", "prefill", "decode", "gemm", "allreduce"},
     "kappasim probe: run the SystemC models in isolation\n"
     "Usage: kappasim probe VERB [options]   (kappasim probe VERB --help for its options)\n"
     "  h2d | d2h | bidir   copy curves over the system's host link (bandwidth per size)\n"
     "  prefill             one prefill forward pass on the GPU model (per-kernel timing)\n"
     "  decode              one decode step of a batch on the GPU model (time, tokens/s, memory "
     "bound)\n"
     "  gemm                one GEMM on the GPU model\n"
     "  allreduce           one TP all-reduce per message size (time, algbw, busbw)\n"},
    {"measure",
     {"kappa-crit", "poh", "break-even", "capacity"},
     "kappasim measure: κ_crit, P_OH and the break-even prefix measured on the simulator beside "
     "the analytic ones\n"
     "Usage: kappasim measure VERB [options]   (kappasim measure VERB --help for its options)\n"
     "  kappa-crit   sweep κ_ratio at fixed T and find where transfer time equals compute time\n"
     "  poh          P_OH = KV load time / compute time on a K x T grid\n"
     "  break-even   the cached prefix K from which loading it beats recomputing it (TTFT)\n"
     "  capacity     CONFIG --slo-ttft T: the steady-state throughput served at a TTFT SLO\n"},
    {"design",
     {"emit"},
     "kappasim design: the area/power design model's splits as presets (docs/design-model.md)\n"
     "Usage: kappasim design emit [options]   (kappasim design emit --help for its options)\n"
     "  emit   one compute / host-link / KV-SRAM split as GPU + system presets and kv_buffer\n"},
    {"bench",
     {"serving"},
     "kappasim bench: how fast the simulator runs\n"
     "Usage: kappasim bench serving [options]   (kappasim bench serving --help for its options)\n"
     "  serving   simulated requests per wall second and peak memory\n"},
};

bool is_help(const std::string& a) { return a == "--help" || a == "-h" || a == "help"; }

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string near = kappasim::nearest(word, candidates);
  return near.empty() ? std::string() : "; did you mean '" + near + "'?";
}

// Help, or an error naming the valid verbs, for `probe`, `measure` and `bench` without a
// known verb. Returns -1 when the verb is known (the command runs).
int verb_gate(const VerbHelp& c, const std::string& verb) {
  if (is_help(verb)) {
    std::cout << c.usage;
    return 0;
  }
  for (const auto& v : c.verbs)
    if (v == verb) return -1;
  std::string list;
  for (std::size_t i = 0; i < c.verbs.size(); ++i)
    list += (i == 0 ? "" : i + 1 == c.verbs.size() ? " or " : ", ") + c.verbs[i];
  std::cerr << "kappasim: error: kappasim " << c.command << ": expected " << list
            << (verb.empty() ? std::string() : ", got '" + verb + "'" + did_you_mean(verb, c.verbs))
            << "\n\n"
            << c.usage;
  return 2;
}

// The whole command line (without the program name): what main() returns for it.
int run_cli(std::vector<std::string> args);

// Whether run_command_value (analysis/evaluate.hpp) may run a child command in a fork of this
// process: only while SystemC is untouched here (one simulation per process: still elaborating,
// nothing elaborated; libsystemc makes its context when it loads) and this process has one
// thread (a fork copies only the calling one, and any lock another held stays held).
bool may_fork_commands() {
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION ||
      sc_core::sc_start_of_simulation_invoked() || !sc_core::sc_get_top_level_objects().empty())
    return false;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::strtol(line.c_str() + 8, nullptr, 10) == 1;
  return false;
}

}  // namespace

// Issue 24: once a command has returned, its files are closed and committed, so the process ends
// without the destructors of its static objects (the preset, kind and stat registries, yaml-cpp's
// tables, libsystemc's context): freeing memory the exit gives back anyway, they were ≈ 1 ms of
// a short run on the project's VM, much of it page faults on destructor code never run before.
// The output streams are flushed first, as exit() would. Under a sanitizer the process exits
// normally, so its leak check still runs.
int main(int argc, char** argv) {
  kappasim::analysis::set_command_runner({&run_cli, &may_fork_commands});
  const int rc = run_cli(std::vector<std::string>(argv + 1, argv + argc));
#if !KAPPASIM_SANITIZER
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(rc);
#endif
  return rc;
}

namespace {

int run_cli(std::vector<std::string> args) {
  // `kappasim help CMD [VERB]` is `kappasim CMD [VERB] --help`.
  if (args.size() >= 2 && args[0] == "help" && !is_help(args[1])) {
    args.erase(args.begin());
    args.push_back("--help");
  }
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    if (args.empty()) {
      std::cerr << kUsage;  // a usage error: the usage goes with it to stderr
      return 2;
    }
    std::cout << kUsage;
    return 0;
  }
  if (args[0] == "--version") {
    std::cout << "kappasim " << kappasim::kVersion << "\n";
    return 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "kappa") return kappasim::cli::cmd_kappa(args);
    if (cmd == "roofline") return kappasim::cli::cmd_roofline(args);
    if (cmd == "presets") return kappasim::cli::cmd_presets(args);
    if (cmd == "list") return kappasim::cli::cmd_list(args);
    if (cmd == "report") return kappasim::cli::cmd_report(args);
    if (cmd == "run") return kappasim::cli::cmd_run(args);
    // `sweep emit --help`: emit has one target (slurm), whose help says it all (issue 26.14).
    if (cmd == "sweep" && args.size() >= 2 && args[0] == "emit" && is_help(args[1]))
      args = {"emit", "slurm", "--help"};
    if (cmd == "sweep") return kappasim::cli::cmd_sweep(args);
    if (cmd == "reproduce") return kappasim::cli::cmd_reproduce(args);
    for (const VerbHelp& c : kVerbCommands)
      if (cmd == c.command) {
        const int gate = verb_gate(c, args.empty() ? "" : args[0]);
        if (gate >= 0) return gate;
      }
    if (cmd == "validate") return kappasim::cli::cmd_validate(args);
    if (cmd == "metrics") return kappasim::cli::cmd_metrics(args);
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
      if (verb == "prefill" || verb == "decode" || verb == "gemm" || verb == "allreduce")
        return kappasim::cli::cmd_probe_compute(verb, rest);
      std::cerr << "kappasim: error: kappasim probe: expected h2d, d2h, bidir, prefill, decode, "
                   "gemm or allreduce"
                << (verb.empty() ? "" : ", got '" + verb + "'") << "\n";
      return 2;
    }
    // `kappasim version`, `-v`, `-V`: the version is an option (issue 26.14).
    const bool version_like = cmd == "version" || cmd == "-v" || cmd == "-V" || cmd == "--v";
    std::cerr << "kappasim: error: unknown command '" << cmd << "'"
              << (version_like ? std::string("; did you mean '--version'?")
                               : did_you_mean(cmd, kCommands))
              << "\n\n"
              << kUsage;
    return 2;
  } catch (const std::exception&) {
    return kappasim::report_current_exception();
  }
}

}  // namespace
