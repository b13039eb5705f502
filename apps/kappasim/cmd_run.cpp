// kappasim run CONFIG --out DIR: a serving simulation -> DIR/requests.csv, summary.json,
// trace.json, config.yaml. The folder appears whole or not at all (core/output), and every
// input is checked (config, presets, the whole trace) before anything is simulated.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "apps/kappasim/cli.hpp"
#include "core/output.hpp"
#include "serving/cluster_spec.hpp"
#include "serving/kv_hierarchy.hpp"
#include "serving/run_folder.hpp"
#include "serving/run_spec.hpp"
#include "serving/stat_catalog.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim::cli {

namespace {

// `root`: the config file's tree (read once by cmd_run).
RunSpec load_run_spec(ConfigNode root, const std::vector<std::string>& sets,
                      ProvenanceTable* prov) {
  for (const auto& s : sets) apply_set(root, s);
  return read_config<RunSpec>(root, "", prov);
}

std::string config_dir(const std::string& config) {
  return std::filesystem::path(config).parent_path().string();
}

const char* kConfigHeader = "# effective configuration of this run (kappasim run --dump-config)\n";

// The effective config (`effective()`: the spec written back as YAML), and the folder's marker
// listing `files` (what the run writes) and it, made, written and made durable on a second thread
// while the run goes (issue 24: their fsyncs were waited for after it, and building and emitting
// the config was ≈ 2.7 M instructions before it). `effective` reads the run's spec and
// provenance, which stay unchanged while the run reads them, and which outlive `dir`.
template <class Effective>
void write_config_ahead(OutputDir& dir, std::vector<std::string> files, Effective effective) {
  files.push_back("config.yaml");
  std::sort(files.begin(), files.end());
  dir.write_ahead(
      [effective]() -> OutputDir::Files {
        return {{"config.yaml", kConfigHeader + emit_yaml(effective())}};
      },
      std::move(files));
}

// kappasim run on a cluster config (the root has `cluster:`): DIR/requests.csv (every node's
// finished requests), DIR/routes.csv, DIR/summary.json (Cluster::figures) and DIR/config.yaml;
// no Perfetto trace (serving/run_folder).
int run_cluster_command(const std::string& config, ConfigNode root,
                        const std::vector<std::string>& sets, const std::string& out, bool dump,
                        bool quiet, bool force, bool json) {
  for (const auto& s : sets) apply_set(root, s);
  ProvenanceTable prov;
  const ClusterRunSpec spec = read_config<ClusterRunSpec>(root, "", &prov);
  if (dump) {
    std::cout << emit_yaml(write_cluster_config(spec, &prov));
    return 0;
  }
  if (json && out.empty()) {  // the summary alone, no files
    std::cout << summary_json(run_cluster_summary(spec, config_dir(config)));
    return 0;
  }
  if (out.empty()) throw InputError("kappasim run: --out DIR is required");
  check_output_dir(out, force);
  OutputDir dir(out, force);
  write_config_ahead(dir, cluster_folder_files(),
                     [&spec, &prov] { return write_cluster_config(spec, &prov); });
  const auto figures = run_cluster_into_folder(spec, config_dir(config), dir.staging_path(""));
  dir.commit();
  for (const std::string& f : dir.renamed_user_files())
    std::cerr << "kappasim: kept your file " << out << "/" << f << " as " << f
              << ".user-kept (the results now hold a file of that name)\n";
  if (json) {
    std::cout << summary_json(figures);
  } else if (!quiet) {
    std::cout << "cluster (" << router_name(spec.cluster.router) << ", " << spec.node_count()
              << " nodes)";
    for (const auto& [k, v] : figures)  // the figures declared kShowCluster (serving/stat_catalog)
      if (stat_show(k) & kShowCluster) std::cout << "\n  " << k << ": " << format_number(v);
    std::cout << "\nresults in " << out
              << "/ (requests.csv, routes.csv, summary.json, config.yaml)\n";
  }
  return 0;
}

}  // namespace

// Issue 26.15: packet fidelity simulates every PCIe TLP, so a long-context workload takes far
// longer than with flow. Said up front with an estimate: the KV bytes of every request's cached
// prefix (an upper bound on what is loaded) in read completions of read_completion_size bytes,
// at the rate the packet model runs (kPacketTlpsPerWallSecond, measured).
static void warn_packet_cost(const RunSpec& spec, const std::string& config) {
  // Measured (issue 26): `kappasim run` of 3 ShareGPT requests of llama-3.1-8b on h100 with a
  // warm tier and link_fidelity=packet loaded 503 MB, 3.9 million 128 B completions, in 5.3 s of
  // CPU time (70 s of wall time on the 2-core build VM while other builds ran): about 0.7
  // million TLPs per second of an unshared core (an order of magnitude, not a promise).
  constexpr double kPacketTlpsPerWallSecond = 7e5;
  if (spec.system.host_link.type != LinkType::Pcie ||
      !spec.system.host_link.read_completion_size_bytes)
    return;
  auto source = make_source(spec.workload, static_cast<std::uint64_t>(spec.workload.seed),
                            config_dir(config));
  double prefix_tokens = 0;
  Request r;
  while (source->next(r)) prefix_tokens += static_cast<double>(r.prefix_tokens);
  const double bytes = prefix_tokens *
                       served_kv_unit_per_gpu(spec.model, spec.serving, spec.serving.tp) *
                       spec.serving.tp;
  const double tlps = bytes / *spec.system.host_link.read_completion_size_bytes;
  const double wall_s = tlps / kPacketTlpsPerWallSecond;
  if (wall_s < 10) return;
  std::cerr << "kappasim: note: serving.link_fidelity: packet simulates every PCIe TLP; this "
               "workload's cached prefixes hold up to "
            << format_quantity(bytes, dim::bytes) << " of KV, about " << format_number(tlps)
            << " TLPs: roughly " << format_number(std::round(wall_s))
            << " s of wall time or more (flow: seconds). Use fewer requests "
               "(workload.requests) or link_fidelity: flow for a long workload\n";
}

int cmd_run(const std::vector<std::string>& args) {
  std::string config, out;
  std::vector<std::string> sets, preset_dirs;
  bool dump = false, quiet = false, check = false, force = false;
  std::string format = "text";
  po::options_description desc(
      "kappasim run: offloaded-prefill serving on the SystemC models\n"
      "Usage: kappasim run CONFIG --out DIR [--set key=value ...] [--format json]\n"
      "Writes DIR/requests.csv, DIR/summary.json, DIR/trace.json (unless trace: false) and\n"
      "DIR/config.yaml (the effective config).\nOptions");
  desc.add_options()("config", po::value(&config),
                     "YAML run config (model, system, serving, workload)")(
      "out,o", po::value(&out), "output folder (replaced whole when the run succeeds)")(
      "force", po::bool_switch(&force),
      "write DIR even if it holds files kappasim did not write (they are lost)")(
      "set", po::value(&sets)->composing(), "override a config key, e.g. --set serving.tp=8")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "dump-config", po::bool_switch(&dump), "print the effective configuration and exit")(
      "quiet,q", po::bool_switch(&quiet), "print nothing on success")(
      "format", po::value(&format),
      "text (default) | json: print summary.json's figures (then --out is optional: without it "
      "no files are written)")(
      "check", po::bool_switch(&check),
      "check the simulator's invariants as it runs (same as --set check=true)")("help,h",
                                                                                "this help");
  po::positional_options_description pos;
  pos.add("config", 1);
  auto vm = parse("run", args, desc, &pos);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (config.empty())
    throw InputError("kappasim run: a CONFIG file is required (see kappasim run --help)");
  if (format != "text" && format != "json")
    throw InputError("--format: expected text or json, got \"" + format + "\"");
  const bool json = format == "json";
  add_preset_dirs(preset_dirs);
  ProvenanceTable prov;
  std::vector<std::string> all_sets = sets;
  if (check) all_sets.push_back("check=true");
  ConfigNode root = load_yaml_file(config);  // read and parsed once (issue 24)
  if (is_cluster_config(root))               // a routed pool of nodes (serving/cluster)
    return run_cluster_command(config, std::move(root), all_sets, out, dump, quiet, force, json);
  const RunSpec spec = load_run_spec(std::move(root), all_sets, &prov);
  if (dump) {
    std::cout << emit_yaml(write_config(spec, "", &prov));
    return 0;
  }
  if (json && out.empty()) {  // the summary alone, no files
    std::cout << summary_json(run_summary(spec, config_dir(config)));
    return 0;
  }
  if (out.empty()) throw InputError("kappasim run: --out DIR is required");
  check_output_dir(out, force);  // before the trace is read: a refused folder costs nothing
  if (spec.serving.link_fidelity == LinkFidelity::Packet && !quiet && !json)
    warn_packet_cost(spec, config);
  OutputDir dir(out, force);
  write_config_ahead(dir, run_folder_files(spec, true),
                     [&spec, &prov] { return write_config(spec, "", &prov); });
  const RunFolderResult run = run_into_folder(spec, config_dir(config), dir.staging_path(""), true);
  const SummaryBuilder::Totals& totals = run.totals;
  dir.commit();
  for (const std::string& f : dir.renamed_user_files())
    std::cerr << "kappasim: kept your file " << out << "/" << f << " as " << f
              << ".user-kept (the results now hold a file of that name)\n";
  // The tier thrashes when the working set fits neither DRAM nor, with serving.tiers, the
  // hierarchy below it (the same text a sweep's run point records; issue 26 item 21).
  if (const std::string w = tier_overflow_warning(spec, totals); !w.empty())
    std::cerr << "kappasim: warning: " << w << "\n";
  if (json) {
    std::cout << summary_json(run.figures);
  } else if (!quiet) {
    std::cout << "requests completed: " << run.requests;
    if (totals.requests_rejected > 0)
      std::cout << " (" << totals.requests_rejected
                << " rejected: prompt longer than the GPUs' KV cache)";
    std::cout << ", simulated " << format_number(totals.simulated_time_s) << " s in "
              << format_number(totals.wall_time_s) << " s wall\n";
    for (const auto& [k, v] : run.figures)  // the figures declared kShowRun (serving/stat_catalog)
      if (stat_show(k) & kShowRun) std::cout << "  " << k << ": " << format_number(v) << "\n";
    // Where the GPUs' time went (issue 12 items 4, 10): the run's fractions of at least 0.5%.
    std::string where;
    for (const auto& [k, v] : run.figures)
      if ((stat_show(k) & kShowGpuTime) && k.rfind("time_fraction_", 0) == 0 && std::isfinite(v) &&
          v >= 0.005) {
        char pct[32];
        std::snprintf(pct, sizeof pct, "%.1f%%", 100 * v);
        where += (where.empty() ? "" : ", ") + k.substr(14) + " " + pct;
      }
    if (!where.empty()) std::cout << "  GPU time: " << where << "\n";
    std::cout << "results in " << out << "/ (requests.csv, summary.json"
              << (spec.trace ? ", trace.json" : "") << ", config.yaml)\n";
  }
  return 0;
}

}  // namespace kappasim::cli
