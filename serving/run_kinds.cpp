// Serving simulations as sweep kinds (sweeps/point_kind.hpp), registered by the serving layer:
//   run      a serving simulation, as `kappasim run` does it (serving/run_folder); metrics = the
//            summary's figures minus wall_time_s; writes summary.json (and requests.csv with
//            keep_requests: true, trace.json with trace: true) into the point's files/
//   cluster  a routed pool of serving nodes (serving/cluster) for a cluster config ({cluster:
//            {router, nodes}, model, workload, check?}); metrics = Cluster::figures() minus
//            wall_time_s: the summary's figures over all requests and GPUs, then
//            "<group>.<figure>" per node group. docs/routing.md.
// The point's seed replaces workload.seed in both. Each reads its config with read_config, so
// unknown keys and bad values are InputErrors (the point is recorded as invalid).
#include "serving/cluster.hpp"
#include "serving/run_folder.hpp"
#include "sweeps/point_kind.hpp"

namespace kappasim {

namespace {

using sweep::PointContext;
using sweep::PointResult;

PointResult run_point(const ConfigNode& config, const PointContext& ctx) {
  ConfigNode node = config;
  bool keep_requests = false;
  if (const ConfigNode* k = node.find("keep_requests")) {
    if (!k->is_scalar() || (k->scalar != "true" && k->scalar != "false"))
      throw InputError(k->loc, "keep_requests: expected true or false");
    keep_requests = k->scalar == "true";
    node.erase("keep_requests");
  }
  const bool trace_given = node.is_map() && node.find("trace") != nullptr;
  RunSpec spec = read_config<RunSpec>(node, "");
  if (!trace_given) spec.trace = false;
  spec.workload.seed = ctx.seed;
  const RunFolderResult run = run_into_folder(spec, ctx.base_dir, ctx.out_dir, keep_requests);
  PointResult r;
  for (const auto& [k, v] : run.figures)
    if (k != "wall_time_s") r.metrics.emplace_back(k, v);
  // What `kappasim run` warns about, recorded with the point (issue 26 item 21).
  if (std::string w = tier_overflow_warning(spec, run.totals); !w.empty())
    r.warnings.push_back(std::move(w));
  return r;
}

PointResult cluster_kind(const ConfigNode& config, const PointContext& ctx) {
  PointResult r;
  r.metrics = cluster_point(config, ctx.seed, ctx.base_dir);
  return r;
}

const sweep::KindRegistration kRunKind{
    {"run", "a serving simulation (kappasim run): the summary's figures minus wall_time_s",
     run_point}};
const sweep::KindRegistration kClusterKind{
    {"cluster",
     "a routed pool of serving nodes (cluster: {router, nodes}, model, workload): summary "
     "figures plus <group>.<figure> per node group",
     cluster_kind}};

}  // namespace

}  // namespace kappasim
