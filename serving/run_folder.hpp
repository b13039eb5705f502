// Running a serving config into a folder: the one place that turns a RunSpec (or a cluster
// config) into a workload source, engine sinks and the files a run leaves: requests.csv,
// trace.json, summary.json (and, for a cluster, routes.csv). Used by `kappasim run`, the sweep's
// `run` kind and `kappasim bench serving` (run_workload, no files). The folder is the caller's:
// an OutputDir's staging folder (kappasim run: the result appears whole or not at all) or a
// sweep point's staging folder. config.yaml (the effective config) stays with the caller, which
// knows its provenance. Ignores: printing (the CLI summarises from the returned figures).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "serving/cluster_spec.hpp"
#include "serving/engine.hpp"

namespace kappasim {

// Runs spec.workload through the engine with `sinks`: the trace (if any) is checked whole first,
// then read with relative paths against `base_dir`; warm_tier gets a second copy of the same
// stream. InputError on bad input before anything is simulated.
SummaryBuilder::Totals run_workload(const RunSpec& spec, const std::string& base_dir,
                                    EngineSinks sinks);

// The warning `kappasim run` prints, and a sweep's run point records (issue 26 item 21), when the
// KV tier's working set fits neither DRAM nor, with serving.tiers, the hierarchy below it (the
// tier thrashes: prefixes are evicted and stored again); "" when it fits, or when it does not
// but no evicted chunk was stored again and none was dropped (nothing was lost that was reused).
std::string tier_overflow_warning(const RunSpec& spec, const SummaryBuilder::Totals& totals);

struct RunFolderResult {
  SummaryBuilder::Totals totals;
  std::size_t requests = 0;                             // requests completed
  std::vector<std::pair<std::string, double>> figures;  // summary.json's figures, in order
};

// Runs `spec` writing into the existing folder `dir`: requests.csv (when `requests_csv`),
// trace.json (when spec.trace) and summary.json.
RunFolderResult run_into_folder(const RunSpec& spec, const std::string& base_dir,
                                const std::string& dir, bool requests_csv);
// The files run_into_folder writes, sorted (an output folder's manifest: core/output.hpp).
std::vector<std::string> run_folder_files(const RunSpec& spec, bool requests_csv);

// A routed cluster (serving/cluster) into `dir`: requests.csv (every node's finished requests),
// routes.csv (one row per arrival: the node it was sent to) and summary.json (Cluster::figures,
// NaN as null). No Perfetto trace. Returns the figures.
std::vector<std::pair<std::string, double>> run_cluster_into_folder(const ClusterRunSpec& spec,
                                                                    const std::string& base_dir,
                                                                    const std::string& dir);
// The files run_cluster_into_folder writes, sorted (an output folder's manifest).
std::vector<std::string> cluster_folder_files();

// The same runs writing no files (`kappasim run --format json` without --out, the validation
// rows' commands): summary.json's figures only (no Perfetto trace).
std::vector<std::pair<std::string, double>> run_summary(const RunSpec& spec,
                                                        const std::string& base_dir);
std::vector<std::pair<std::string, double>> run_cluster_summary(const ClusterRunSpec& spec,
                                                                const std::string& base_dir);

}  // namespace kappasim
