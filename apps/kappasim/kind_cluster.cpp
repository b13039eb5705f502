// The `cluster` sweep kind: a routed pool of serving nodes (serving/cluster) for a cluster config
// ({cluster: {router, nodes}, model, workload, check?}); metrics = Cluster::figures() minus
// wall_time_s: the summary's figures over all requests and GPUs, then "<group>.<figure>" per
// node group (requests routed, mean κ_ratio routed, TTFT, GPU and budget utilisation). The
// point's seed replaces workload.seed (as the run kind does). docs/routing.md.
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "apps/kappasim/kinds.hpp"
#include "core/output.hpp"
#include "core/table.hpp"
#include "serving/cluster.hpp"
#include "workloads/trace_reader.hpp"

namespace kappasim::cli {

namespace {
sweep::PointResult cluster_kind(const ConfigNode& config, const sweep::PointContext& ctx) {
  sweep::PointResult r;
  r.metrics = cluster_point(config, ctx.seed, ctx.base_dir);
  return r;
}
}  // namespace

void register_cluster_kind(sweep::KindRegistry& r) {
  r.add({"cluster",
         "a routed pool of serving nodes (cluster: {router, nodes}, model, workload): summary "
         "figures plus <group>.<figure> per node group",
         cluster_kind});
}

}  // namespace kappasim::cli

// ---- kappasim run on a cluster config ----------------------------------------------------------
// Called by cmd_run when the config's root has `cluster:`. Writes DIR/requests.csv (every node's
// finished requests), DIR/routes.csv (one row per arrival: the node it was sent to),
// DIR/summary.json (Cluster::figures) and DIR/config.yaml; no Perfetto trace.
namespace kappasim::cli {

int run_cluster_command(const std::string& config, const std::vector<std::string>& sets,
                        const std::string& out, bool dump, bool quiet, bool force) {
  ConfigNode root = load_yaml_file(config);
  for (const auto& s : sets) apply_set(root, s);
  ProvenanceTable prov;
  const ClusterRunSpec spec = read_config<ClusterRunSpec>(root, "", &prov);
  const ConfigNode effective = write_cluster_config(spec, &prov);
  if (dump) {
    std::cout << emit_yaml(effective);
    return 0;
  }
  if (out.empty()) throw InputError("kappasim run: --out DIR is required");
  const std::string base = std::filesystem::path(config).parent_path().string();
  if (spec.workload.type == WorkloadType::Trace) validate_trace(spec.workload.trace, base);
  auto source = make_source(spec.workload, static_cast<std::uint64_t>(spec.workload.seed), base);

  check_output_dir(out, force);
  OutputDir dir(out, force);
  RequestsCsvWriter csv(dir.staging_path("requests.csv"));
  std::ofstream routes(dir.staging_path("routes.csv"), std::ios::binary);
  if (!routes) throw IoError("cannot write " + dir.staging_path("routes.csv") + ": " + std::strerror(errno));
  routes << "id,arrival_s,prefix_tokens,new_tokens,kappa_ratio,node\n";
  std::vector<std::string> names;
  for (const NodeGroupSpec& g : spec.nodes)
    for (int i = 0; i < g.count; ++i) names.push_back(g.name + "_" + std::to_string(i));
  ClusterSinks sinks;
  sinks.requests = &csv;
  sinks.on_route = [&](const Request& r, std::size_t node) {
    routes << r.id << ',' << format_number(r.arrival_s) << ',' << r.prefix_tokens << ','
           << r.new_tokens << ',' << format_number(r.kappa_ratio()) << ',' << names.at(node)
           << '\n';
  };
  const auto figures = run_cluster(spec, *source, sinks);
  csv.close();
  routes.close();
  if (!routes) throw IoError("cannot write " + dir.staging_path("routes.csv") + ": " + std::strerror(errno));
  std::string json = "{\n";
  for (std::size_t i = 0; i < figures.size(); ++i) {
    const double v = figures[i].second;
    json += "  " + json_escape(figures[i].first) + ": " +
            (std::isfinite(v) ? format_number(v) : std::string("null")) +
            (i + 1 < figures.size() ? ",\n" : "\n");
  }
  json += "}\n";
  dir.write("summary.json", json);
  dir.write("config.yaml", "# effective configuration of this run (kappasim run --dump-config)\n" +
                               emit_yaml(effective));
  dir.commit();
  if (!quiet) {
    std::cout << "cluster (" << router_name(spec.cluster.router) << ", " << spec.node_count()
              << " nodes)";
    for (const auto& [k, v] : figures) {
      if (k == "requests_completed" || k == "ttft_p50_s" || k == "ttft_p99_s" ||
          k == "throughput_rps" || k.find(".requests_routed") != std::string::npos ||
          k.find(".offered_kappa_mean") != std::string::npos ||
          k.find(".gpu_utilization") != std::string::npos)
        std::cout << "\n  " << k << ": " << format_number(v);
    }
    std::cout << "\nresults in " << out << "/ (requests.csv, routes.csv, summary.json, config.yaml)\n";
  }
  return 0;
}

}  // namespace kappasim::cli
