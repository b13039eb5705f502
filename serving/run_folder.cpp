#include "serving/run_folder.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/output.hpp"
#include "core/table.hpp"
#include "core/trace_writer.hpp"
#include "serving/cluster.hpp"
#include "serving/kv_hierarchy.hpp"
#include "workloads/read_ahead.hpp"
#include "workloads/trace_reader.hpp"

namespace kappasim {

namespace {

std::string in_dir(const std::string& dir, const char* name) {
  return (std::filesystem::path(dir) / name).string();
}

}  // namespace

SummaryBuilder::Totals run_workload(const RunSpec& spec, const std::string& base_dir,
                                    EngineSinks sinks) {
  // A trace is read, once, on a second thread as the run goes (issue 24: it was read whole to
  // check it, then again to run it); its errors are the run's first, as that check made them.
  ReadAheadTrace* trace = nullptr;
  std::unique_ptr<WorkloadSource> source;
  if (spec.workload.type == WorkloadType::Trace) {
    auto rows = std::make_unique<ReadAheadTrace>(spec.workload.trace, base_dir);
    trace = rows.get();
    source = std::move(rows);
  } else {
    source = make_source(spec.workload, static_cast<std::uint64_t>(spec.workload.seed), base_dir);
  }
  // warm_tier: the tier starts as the same request stream would leave it (a second copy: the
  // kept requests again when make_source kept them).
  sinks.warm_source = [&spec, base_dir, first = source.get()] {
    if (auto again = replay_again(*first)) return again;
    return make_source_again(spec.workload, static_cast<std::uint64_t>(spec.workload.seed),
                             base_dir);
  };
  if (!trace) return run_serving(spec, *source, sinks);
  SummaryBuilder::Totals totals;
  try {
    totals = run_serving(spec, *source, sinks);
  } catch (...) {
    trace->finish();  // a bad row anywhere in the trace is the error reported
    throw;
  }
  trace->finish();  // the rows the run did not take are checked too
  return totals;
}

std::string tier_overflow_warning(const RunSpec& spec, const SummaryBuilder::Totals& totals) {
  // issue 26 item 16: lower tiers that hold the whole working set are no reason to warn.
  const double held = hierarchy_capacity_bytes(spec.serving.tiers, totals.tier_capacity_bytes);
  if (!(totals.tier_working_set_bytes > held)) return "";
  // Too small, but nothing came of it: no evicted chunk was stored again and none was dropped,
  // so every prefix the tier lost was never asked for again (a stream without reuse, such as
  // the Vidur comparison's unique prompts). The summary's tier_working_set_fits still says 0.
  if (totals.tier_restored_chunks == 0 && totals.tier_dropped_chunks == 0) return "";
  const bool lower = held > totals.tier_capacity_bytes;
  // For reading: 3 significant digits ("6.9 TB", not "6.90432770048 TB"), more only where the
  // two sizes would otherwise print alike (a working set just over its capacity).
  int digits = 3;
  while (digits < 17 && format_quantity_approx(totals.tier_working_set_bytes, dim::bytes, digits) ==
                            format_quantity_approx(held, dim::bytes, digits))
    ++digits;
  return "the KV tier's working set (" +
         format_quantity_approx(totals.tier_working_set_bytes, dim::bytes, digits) +
         ") does not fit its capacity (" + format_quantity_approx(held, dim::bytes, digits) +
         (lower ? ", DRAM and the tiers below it" : "") +
         "): prefixes are evicted and stored again (summary.json: tier_working_set_fits = 0, "
         "tier_restored_chunks; set serving.tier_capacity" +
         (lower ? " or serving.tiers" : "") + ")";
}

std::vector<std::string> run_folder_files(const RunSpec& spec, bool requests_csv) {
  std::vector<std::string> files;
  if (requests_csv) files.push_back("requests.csv");
  files.push_back("summary.json");
  if (spec.trace) files.push_back("trace.json");
  return files;
}

RunFolderResult run_into_folder(const RunSpec& spec, const std::string& base_dir,
                                const std::string& dir, bool requests_csv) {
  std::optional<RequestsCsvWriter> csv;
  if (requests_csv)
    csv.emplace(in_dir(dir, "requests.csv"), spec.serving.decode, spec.serving.prefix_caching);
  TraceWriter trace = spec.trace ? TraceWriter(in_dir(dir, "trace.json")) : TraceWriter();
  SummaryBuilder summary;
  EngineSinks sinks;
  sinks.requests = csv ? &*csv : nullptr;
  sinks.trace = spec.trace ? &trace : nullptr;
  sinks.summary = &summary;
  RunFolderResult r;
  r.totals = run_workload(spec, base_dir, sinks);
  if (csv) csv->close();
  trace.close();
  write_file_atomic(in_dir(dir, "summary.json"), summary.to_json(r.totals));
  r.requests = summary.requests();
  r.figures = summary.figures(r.totals);
  return r;
}

std::vector<std::string> cluster_folder_files() {
  return {"requests.csv", "routes.csv", "summary.json"};
}

std::vector<std::pair<std::string, double>> run_cluster_into_folder(const ClusterRunSpec& spec,
                                                                    const std::string& base_dir,
                                                                    const std::string& dir) {
  if (spec.workload.type == WorkloadType::Trace) validate_trace(spec.workload.trace, base_dir);
  auto source =
      make_source(spec.workload, static_cast<std::uint64_t>(spec.workload.seed), base_dir);
  // Any node group decoding: the decode columns (empty for the others); any caching prefixes in
  // HBM: the prefix cache's (0 for the others).
  bool decode = false, apc = false;
  for (const NodeGroupSpec& g : spec.nodes) {
    decode = decode || g.serving.decode;
    apc = apc || g.serving.prefix_caching;
  }
  RequestsCsvWriter csv(in_dir(dir, "requests.csv"), decode, apc);
  const std::string routes_path = in_dir(dir, "routes.csv");
  std::ofstream routes(routes_path, std::ios::binary);
  if (!routes) throw IoError("cannot write " + routes_path + ": " + std::strerror(errno));
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
  if (!routes) throw IoError("cannot write " + routes_path + ": " + std::strerror(errno));
  write_file_atomic(in_dir(dir, "summary.json"), summary_json(figures));
  return figures;
}

std::vector<std::pair<std::string, double>> run_summary(const RunSpec& spec,
                                                        const std::string& base_dir) {
  SummaryBuilder summary;
  EngineSinks sinks;
  sinks.summary = &summary;
  RunSpec quiet = spec;
  quiet.trace = false;  // no file to write it into
  const SummaryBuilder::Totals totals = run_workload(quiet, base_dir, sinks);
  return summary.figures(totals);
}

std::vector<std::pair<std::string, double>> run_cluster_summary(const ClusterRunSpec& spec,
                                                                const std::string& base_dir) {
  if (spec.workload.type == WorkloadType::Trace) validate_trace(spec.workload.trace, base_dir);
  auto source =
      make_source(spec.workload, static_cast<std::uint64_t>(spec.workload.seed), base_dir);
  return run_cluster(spec, *source, ClusterSinks{});
}

}  // namespace kappasim
