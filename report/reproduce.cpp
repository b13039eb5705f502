// Runs the report's sections in order and assembles report.md. The order is the data's: section
// 3 runs first because sections 1, 8.2 and 8.4 mark its simulated κ_crit, and section 1 before
// 8.1, which compares κ_crit with its workload medians; report.md still reads 1, 2, 3, 4, ...
// The sweeps of experiments/ start first, in the background, through one pool of workers (issue
// 24), in the order the sections read them, and each section waits for its own; the sweeps the
// rebalancing section generates run where it needs them.
#include "report/reproduce.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/output.hpp"
#include "report/figure.hpp"
#include "report/sections.hpp"

namespace kappasim::report {

namespace fs = std::filesystem;

#ifndef KAPPASIM_BUILD_TYPE
#define KAPPASIM_BUILD_TYPE "unknown"
#endif

namespace {

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
}

// The CPU's model name as Linux reports it ("" where /proc/cpuinfo has none).
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto first = line.find_first_not_of(" \t", colon + 1);
    return first == std::string::npos ? std::string() : line.substr(first);
  }
  return {};
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// DIR/timing.md: how long this run took and on what (issue 24). Not part of report.md, whose
// bytes must not depend on the machine or the load.
std::string timing_markdown(const ReproduceOptions& o, const std::vector<SweepTiming>& sweeps,
                            double pool_wall_s, double wall_s, const rusage& self0,
                            const rusage& children0) {
  rusage self{}, children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  const double user = seconds(self.ru_utime) - seconds(self0.ru_utime) +
                      seconds(children.ru_utime) - seconds(children0.ru_utime);
  const double sys = seconds(self.ru_stime) - seconds(self0.ru_stime) + seconds(children.ru_stime) -
                     seconds(children0.ru_stime);
  char when[32] = "";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (::gmtime_r(&now, &utc) != nullptr)
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &utc);
  const std::string model = cpu_model();
  std::ostringstream md;
  md << "# How long `kappasim reproduce` took, and on what\n\n"
     << "Written by the run that wrote report.md beside it; kept out of report.md, whose bytes do "
     << "not depend on the machine or its load. The times are this run's: a sweep that a killed "
     << "run had finished is only read back when the run resumes (about 0 s).\n\n"
     << "- command: `kappasim reproduce --out " << o.out << (o.quick ? " --quick" : "")
     << (o.jobs > 0 ? " -j " + std::to_string(o.jobs) : std::string()) << "` ("
     << (o.jobs > 0 ? o.jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency())))
     << " points at once)\n"
     << "- finished: " << when << "\n"
     << "- wall time: " << fixed(wall_s, 1) << " s; CPU: " << fixed(user, 1) << " s user + "
     << fixed(sys, 1) << " s system (this process and every process it ran)\n"
     << "- machine: " << std::thread::hardware_concurrency() << " logical CPUs"
     << (model.empty() ? "" : ", " + model) << "; build type " << KAPPASIM_BUILD_TYPE << "\n\n"
     << "| sweep | points | wall s | CPU s in its points |\n|---|---:|---:|---:|\n";
  double own_wall = 0;
  std::size_t pooled = 0;
  for (const SweepTiming& t : sweeps) {
    md << "| " << t.name << " | " << t.points << " | " << fixed(t.wall_s, 2)
       << (t.pooled ? " *" : "") << " | " << fixed(t.cpu_s, 2) << " |\n";
    if (t.pooled)
      ++pooled;
    else
      own_wall += t.wall_s;
  }
  if (pooled == 0) {
    md << "\nThe sweeps took " << fixed(own_wall, 1) << " s of the " << fixed(wall_s, 1)
       << " s; the rest is the analytic sections, the Eq. 6 probes and the figures.\n";
  } else {
    md << "\n\\* The " << pooled << " sweeps with a * ran in one pool of workers, in a process of "
       << "its own started first, which took " << fixed(pool_wall_s, 1) << " s: a worker went "
       << "from one sweep's points to the next's without waiting for a sweep's last point, and "
       << "the pool ran on while this process wrote the sections and ran the other sweeps (with "
       << "workers of their own, " << fixed(own_wall, 1) << " s in all). Their wall times are "
       << "not separable: each one's is the span from its first point's start to its last "
       << "point's end, and these spans overlap. Their CPU times are their points' own "
       << "(wait4).\n";
  }
  return md.str();
}

}  // namespace

std::string write_reproduce_report(const ReproduceOptions& o, const SweepRunner& run_sweep,
                                   const ProbeRunner& probe, const SweepPoolRunner& pool) {
  const auto t0 = std::chrono::steady_clock::now();
  rusage self0{}, children0{};
  ::getrusage(RUSAGE_SELF, &self0);
  ::getrusage(RUSAGE_CHILDREN, &children0);
  const std::string figures = (fs::path(o.out) / "figures").string();
  std::error_code ec;
  fs::create_directories(figures, ec);
  if (ec) throw IoError("--out: cannot create " + figures + ": " + ec.message());
  const FigureFolder fig(figures);
  SweepSource sweeps(o.out, o.experiments, o.quick, o.quiet, run_sweep, pool);
  // Every sweep whose spec is in experiments/ (all but the rebalancing study's generated ones,
  // which depend on its results) starts at once, in the background, through one pool of workers
  // (issue 24: no worker idles at the end of a sweep, and the pool runs on while this process
  // writes the sections and runs the generated sweeps); each section below waits for its
  // sweeps. The pool runs them in the order the sections read them; the points are independent
  // processes, so the results do not depend on the order.
  sweeps.prefetch({"reproduce/kappa-crit-testbed.yaml",
                   "reproduce/rooflines.yaml",
                   "reproduce/kappa-crit-systems.yaml",
                   "reproduce/poh.yaml",
                   "reproduce/paper-70rps.yaml",
                   "reproduce/stacks-kappa-crit.yaml",
                   "reproduce/stacks-poh.yaml",
                   "reproduce/stacks-70rps.yaml",
                   "reproduce/stacks-async-kappa-crit.yaml",
                   "reproduce/stacks-async-serving.yaml",
                   "reproduce/stacks-break-even.yaml",
                   "reproduce/c2c.yaml",
                   "reproduce/c2c-serving.yaml",
                   "reproduce/policies.yaml",
                   "studies/interconnect.yaml",
                   "studies/interconnect-reads.yaml",
                   "studies/kv-buffer.yaml",
                   "studies/rebalance.yaml",
                   "studies/kv-compression.yaml",
                   "studies/routing.yaml",
                   "studies/routing-layerwise.yaml",
                   "studies/memory-tiers-dram.yaml",
                   "studies/memory-tiers-lower.yaml",
                   "studies/memory-tiers-capacity.yaml",
                   "studies/parallelism.yaml",
                   "studies/generations.yaml",
                   "studies/attention-variants.yaml",
                   "studies/pd-disagg.yaml",
                   "studies/pd-disagg-layerwise.yaml",
                   "studies/pd-disagg-handoff.yaml",
                   "studies/pd-disagg-node.yaml",
                   "studies/pd-decode-tier.yaml"});

  // 3, 3b: the simulated crossing first (later sections mark it).
  const SweepData testbed = sweeps.run("reproduce/kappa-crit-testbed.yaml");
  const TestbedSection s3 = section_kappa_testbed(testbed);
  const std::string s3b =
      section_eq6_probed(testbed, probe, (fs::path(o.out) / "sweeps" / "eq6-probes").string());
  // 2.
  const SweepData roof = sweeps.run("reproduce/rooflines.yaml");
  const SweepData crit_systems = sweeps.run("reproduce/kappa-crit-systems.yaml");
  const std::string s2 = section_rooflines(roof, crit_systems, fig);
  // 1.
  const WorkloadsSection s1 = section_workloads(o.quick, s3.reference, fig);
  // The sections' verdicts also go to the conclusions table (issue 22 item 5).
  ConclusionLog conclusions;
  // 4 to 7.
  std::string rest = section_poh(sweeps.run("reproduce/poh.yaml"), fig);
  rest += section_70rps(sweeps.run("reproduce/paper-70rps.yaml"), fig);
  // The layer-wise baseline's κ_crit (LMCache 0.3.5, T = 128, paper-testbed), for 8.4.
  double crit_layerwise = NAN;
  {
    const SweepData k = sweeps.run("reproduce/stacks-kappa-crit.yaml");
    const auto lw = k.table.where({{"system", "paper-testbed"},
                                   {"model", "qwen3-235b-a22b"},
                                   {"stack", "lmcache-0.3.5"},
                                   {"load_path", "layerwise"},
                                   {"measure.t", "128"}});
    if (!lw.empty() && k.table.ok(lw[0]))
      crit_layerwise = k.table.num(lw[0], "kappa_crit_simulated");
    const SweepData p = sweeps.run("reproduce/stacks-poh.yaml");
    const SweepData s = sweeps.run("reproduce/stacks-70rps.yaml");
    rest += section_stacks(k, p, s, &conclusions);
    // Issue 23 item 3: in-step vs asynchronous loads (named first, so they run in this order).
    const SweepData ac = sweeps.run("reproduce/stacks-async-kappa-crit.yaml");
    const SweepData as = sweeps.run("reproduce/stacks-async-serving.yaml");
    rest += section_stacks_async(ac, as, &conclusions);
    // Issue 20 part 3: where loading beats recomputing.
    rest += section_stacks_break_even(sweeps.run("reproduce/stacks-break-even.yaml"), &conclusions);
  }
  {
    const SweepData k = sweeps.run("reproduce/c2c.yaml");
    const SweepData s = sweeps.run("reproduce/c2c-serving.yaml");
    rest += section_c2c(k, s, fig, &conclusions);
  }
  rest += section_policies(sweeps.run("reproduce/policies.yaml"), fig, &conclusions);
  // 8. architecture studies.
  rest += "## 8. Architecture studies\n\n";
  {
    const SweepData interconnect = sweeps.run("studies/interconnect.yaml");
    const SweepData reads = sweeps.run("studies/interconnect-reads.yaml");
    rest += section_interconnect(interconnect, s1.medians, &conclusions, &reads);
  }
  rest += section_kv_buffer(sweeps.run("studies/kv-buffer.yaml"), s3.reference.kappa_crit_sim, fig,
                            &conclusions);
  rest += section_rebalancing(sweeps.run("studies/rebalance.yaml"), sweeps, fig, &conclusions);
  rest += section_kv_compression(sweeps.run("studies/kv-compression.yaml"),
                                 s3.reference.kappa_crit_sim, crit_layerwise, &conclusions);
  {
    const SweepData kernel = sweeps.run("studies/routing.yaml");
    const SweepData layerwise = sweeps.run("studies/routing-layerwise.yaml");
    rest += section_routing(kernel, &conclusions, &layerwise);
  }
  // 8.6, 8.7 (issue 14): memory tiers, parallelism layouts.
  {
    const SweepData dram = sweeps.run("studies/memory-tiers-dram.yaml");
    const SweepData lower = sweeps.run("studies/memory-tiers-lower.yaml");
    const SweepData cap = sweeps.run("studies/memory-tiers-capacity.yaml");
    rest += section_memory_tiers(&dram, &lower, "", &cap, &conclusions);
    const SweepData par = sweeps.run("studies/parallelism.yaml");
    rest += section_parallelism(parallelism_kappa("dgx-h100", "fp8"), &par, "", &conclusions);
  }
  // 8.8 (issue 25): κ across generations, analytic from the presets and simulated.
  {
    const SweepData gen = sweeps.run("studies/generations.yaml");
    const SweepData variants = sweeps.run("studies/attention-variants.yaml");
    rest +=
        section_generations(generations_kappa("bf16"), generations_kappa("fp8"),
                            generations_kappa("fp4"), &gen, s1.medians, &conclusions, &variants);
  }

  // 8.9 (issue 23): P/D disaggregation under offloading, on both baselines, per
  // transfer-engine profile, and with a decode node's own KV tier.
  {
    const SweepData kernel = sweeps.run("studies/pd-disagg.yaml");
    const SweepData layerwise = sweeps.run("studies/pd-disagg-layerwise.yaml");
    const SweepData handoff = sweeps.run("studies/pd-disagg-handoff.yaml");
    const SweepData node = sweeps.run("studies/pd-disagg-node.yaml");
    const SweepData decode_tier = sweeps.run("studies/pd-decode-tier.yaml");
    rest += section_disagg(kernel, &layerwise, &conclusions, &handoff, &node, &decode_tier);
  }

  std::ostringstream report;
  report << "# kappasim: the κ paper reproduced on the simulator, and architecture studies\n\n"
         << "Generated by `kappasim reproduce --out " << o.out << (o.quick ? " --quick" : "") << "`"
         << (o.quick ? " (quick mode: fewer points and requests; numbers are indicative only)" : "")
         << ". Every simulated number comes from a sweep under `sweeps/` (its spec, per-point "
         << "configs and merged `results.csv`); every analytic number from the same model and "
         << "system presets. Figures: `figures/` (PNG, SVG, the gnuplot script and its CSV data). "
         << "How long the run took, per sweep, and on what machine: `timing.md` beside this "
         << "report.\n\n"
         << "Baselines: the paper's testbed is reproduced by LMCache 0.3.5 on its layer-wise load "
         << "path (section 5b: its rates, and how to confirm it on a server); the architecture "
         << "studies of section 8 run on both it and LMCache's default kernel path (8.8 is "
         << "analytic); sections 1-4, 6 and 7 run on the kernel path unless a section says "
         << "otherwise. "
         << "Each serving row states its regime (offered vs served, what bounds a step, how much "
         << "came from the tier).\n\n"
         << conclusions.markdown() << s1.markdown << s2 << s3.markdown << s3b << rest;
  if (!sweeps.problems().empty()) {
    report << "## Points that did not complete\n\n";
    for (const auto& p : sweeps.problems()) report << "- " << p << "\n";
    report << "\n";
  }
  const double pool_wall_s = sweeps.finish_pool();  // its processes' CPU counted from here
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_file_atomic((fs::path(o.out) / "timing.md").string(),
                    timing_markdown(o, sweeps.timings(), pool_wall_s, wall_s, self0, children0));
  const std::string path = (fs::path(o.out) / "report.md").string();
  write_file_atomic(path, report.str());
  return path;
}

}  // namespace kappasim::report
