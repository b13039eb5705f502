// Every output statistic of a serving run, declared once (issue 21 "Statistics declared once";
// the model is gem5's ADD_STAT and SST's ELI): its name, unit, how it is computed or summed
// (aggregation), when it is present, its definition, which CLI summary prints it, and how its
// value is obtained. Everything else reads these declarations:
//   - requests.csv's header and every row (RequestsCsvWriter, serving/metrics.cpp);
//   - summary.json's keys, their order and their values (SummaryBuilder::figures / to_json);
//     the figures an engine supplies itself (Totals::extra, Totals::tier_levels, a cluster's
//     per-group figures) are checked against their declarations, by name and order;
//   - the lines `kappasim run` prints (stat_show);
//   - docs/metrics.md's field tables (`kappasim metrics --markdown`, splice_generated_tables;
//     ctest checks the doc holds exactly the generated text).
// Adding a statistic: one declaration in stat_catalog.cpp at its place in the output order, then
// `kappasim metrics --update docs/metrics.md`. Pure C++, no SystemC.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "serving/metrics.hpp"

namespace kappasim {

// How a statistic is computed or summed (the "aggregation" column of docs/metrics.md).
enum class StatAgg {
  Value,     // one request's own value (requests.csv)
  Count,     // events counted over the run
  Sum,       // summed over the requests
  Mean,      // mean over the requests (or the steps, where said)
  Quantile,  // a percentile over the requests (QuantileSketch: within 0.5%)
  Max,       // largest over the requests (exact)
  Ratio,     // a ratio of other figures; null when its denominator is 0
  PerGpu,    // a run total per GPU, averaged over the GPUs
  Total,     // a run total over all GPUs (or the whole run)
  Setting,   // from the configuration (or the model's constants), not measured
  Flag,      // 1 when the condition holds, else 0
};
const char* stat_agg_name(StatAgg a);  // "value", "count", ...
const char* stat_agg_doc(StatAgg a);   // one line: what the aggregation means

// When a statistic is present. Summary figures present always come first, in declaration
// order; then the layout's (beyond TP), the tier levels', and a cluster's per-group figures.
enum class StatWhen {
  Always,
  Replica,   // only for layouts beyond TP (serving.parallelism): SummaryBuilder::Totals::extra
  Tiers,     // only with serving.tiers: SummaryBuilder::Totals::tier_levels, per level
  Decode,    // only when the run decodes (serving.decode): requests.csv columns, summary figures
  EndToEnd,  // only when the run's TTFT is end-to-end (serving.ttft: end_to_end): summary figures
  ShardKv,   // only with serving.replicated_kv: shard_allgather (issue 23 item 5): summary figures
  ClosedLoop,   // only with closed-loop clients (workload.concurrency): summary figures
  PrefixCache,  // only with serving.prefix_caching: requests.csv columns, summary figures
  Cluster,      // only in a cluster run's summary, per node group (serving/cluster)
  Disagg,       // only in a P/D-disaggregated cluster run's summary (serving/cluster), after groups
};
const char* stat_when_doc(StatWhen w);

// Which CLI summary prints a figure (bits).
enum StatShow : unsigned {
  kShowNone = 0,
  kShowRun = 1u,      // `kappasim run`: one line "  key: value"
  kShowCluster = 2u,  // `kappasim run` on a cluster config: one line "  key: value"
  kShowGpuTime = 4u,  // `kappasim run`'s "GPU time:" line (shares of at least 0.5%)
};

// What a summary figure's formula reads: the builder's accumulators and the engine's totals.
struct SummaryInputs {
  const SummaryBuilder::Accumulators& a;
  const SummaryBuilder::Totals& t;
};

// One output key (a family's declaration has one per member).
struct StatKey {
  std::string
      name;  // the key, e.g. "ttft_p50_s", "time_fraction_compute", "tiers_<level>_hit_chunks"
  unsigned show = kShowNone;
  // summary.json figure computed from the run (StatWhen::Always); empty for an engine's own.
  std::function<double(const SummaryInputs&)> value;
  // requests.csv cell: the record's field it shows (empty for a summary figure).
  CsvCell cell;
};

// One declaration: a row of docs/metrics.md. A family (name with a <placeholder>) declares one
// key per member, generated from the list it names (TimeBreakdown::categories(), LoadBound).
struct StatDecl {
  std::string name;  // key, or pattern: "ttft_mean_<category>_s", "tiers_<level>_capacity_bytes"
  std::string unit;  // s, B, B/s, J, W, 1 (dimensionless), req/s, or what is counted
  StatAgg agg = StatAgg::Value;
  StatWhen when = StatWhen::Always;
  std::string doc;  // the definition (Markdown)
  std::vector<StatKey> keys;
};

// requests.csv's columns and summary.json's figures, in output order.
const std::vector<StatDecl>& requests_csv_stats();
const std::vector<StatDecl>& summary_stats();

// The tier-level and cluster-group figures' expansions: "tiers_" + level + "_" + field, and
// group + "." + field. Fields in declaration order.
std::vector<std::string> tier_level_stat_fields();
std::vector<std::string> cluster_group_stat_fields();
// The layout figures (Totals::extra), in declaration order.
std::vector<std::string> replica_stat_names();
// The P/D hand-off figures (Cluster::figures), in declaration order.
std::vector<std::string> disagg_stat_names();

// True when `key` is a declared summary.json key (a tier level's or a cluster group's
// included: any level of kv_hierarchy, any group name before the last '.').
bool summary_stat_declared(const std::string& key);
// The StatShow bits of a summary key (a cluster group's field by its part after the '.').
unsigned stat_show(const std::string& key);

// std::logic_error naming the first key of `figures` that is not declared (an engine emitting a
// statistic nobody declared): the summary writers call it before writing.
void check_summary_declared(const std::vector<std::pair<std::string, double>>& figures);

// ---- docs/metrics.md ----------------------------------------------------------------------
enum class StatTable { RequestsCsv, Summary, Aggregations };
StatTable parse_stat_table(const std::string& s);  // "requests", "summary", "aggregations"
const char* stat_table_name(StatTable t);
// The Markdown table of a file's statistics, as docs/metrics.md holds it (a trailing newline).
std::string stat_markdown(StatTable t);
// `text` with every generated region replaced by its current table. A region is
//   <!-- generated by `kappasim metrics <table> --markdown`; edit serving/stat_catalog.cpp -->
//   ...
//   <!-- end generated -->
// `more` holds tables generated elsewhere, by name (the sweep kinds' columns, "kinds":
// sweeps/point_kind's kind_columns_markdown, which this layer does not link).
// InputError naming `file` on an unknown table or an unterminated region.
std::string splice_generated_tables(const std::string& text, const std::string& file,
                                    const std::map<std::string, std::string>& more = {});

}  // namespace kappasim
