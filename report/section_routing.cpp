// Section 8.5 of the reproduce report: round robin, capacity-weighted round robin, least loaded
// and κ-aware routing across two PCIe nodes and one NVLink-C2C superchip in one simulation; the
// router with the lowest TTFT p99 per load against round robin and against the capacity-weighted
// baseline, and the study's regime. Input: sweep studies/routing. Output: Markdown.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/table.hpp"
#include "core/units.hpp"
#include "report/analytic_point.hpp"
#include "report/format.hpp"
#include "report/replicates.hpp"
#include "report/sections.hpp"
#include "report/serving_tables.hpp"

namespace kappasim::report {

namespace fs = std::filesystem;

namespace {

// One baseline's table and conclusions (the kernel path's sweep, or the layer-wise one's).
std::string routing_part(const SweepData& study, const std::string& baseline, ConclusionLog* log) {
  const ResultsTable& t = study.table;
  std::ostringstream md;
  std::vector<std::vector<std::string>> rows;
  for (const auto& cr : configurations(t, {"workload", "rate", "router"})) {
    const std::size_t r = cr[0];
    if (!first_ok(t, cr)) {
      rows.push_back({t.get(r, "workload"), t.get(r, "rate"), t.get(r, "router"),
                      "failed: " + t.get(r, "error")});
      continue;
    }
    rows.push_back({t.get(r, "workload"), t.get(r, "rate"), t.get(r, "router"),
                    interval_cell(t, cr, "throughput_rps"), interval_cell(t, cr, "ttft_p50_s"),
                    interval_cell(t, cr, "ttft_p99_s"),
                    fmt_num(mean_of(t, cr, "pcie.requests_routed")) + " / " +
                        fmt_num(mean_of(t, cr, "c2c.requests_routed")),
                    fmt_num(mean_of(t, cr, "pcie.offered_kappa_mean")) + " / " +
                        fmt_num(mean_of(t, cr, "c2c.offered_kappa_mean"))});
  }
  md << "**Baseline: " << baseline << ".** "
     << regime_paragraph(study, configurations(t, {"workload", "rate", "router"}))
     << markdown_table({"workload", "rate (req/s)", "router", "throughput (req/s)", "TTFT p50 (s)",
                        "TTFT p99 (s)", "requests PCIe / C2C", "mean κ PCIe / C2C"},
                       rows)
     << "\nConclusions (computed; " << kReplicateNote
     << "): the router with the lowest TTFT p99 at "
     << "each load, and its p99 relative to round robin and to the capacity-weighted baseline:\n";
  const auto weighted =
      best_per_group(t, {"workload", "rate"}, "router", "ttft_p99_s", true, "weighted_round_robin");
  const auto plain =
      best_per_group(t, {"workload", "rate"}, "router", "ttft_p99_s", true, "round_robin");
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const Best& b = plain[i];
    md << "- " << b.group << ": " << b.winner << " (p99 "
       << interval_cell(t, b.winner_rows, "ttft_p99_s") << " s, " << fmt_num(b.value / b.baseline)
       << "× round robin's " << interval_cell(t, b.baseline_rows, "ttft_p99_s") << " s";
    if (b.winner != "round_robin" && !b.baseline_rows.empty())
      md << "; " << versus(t, b.winner_rows, b.baseline_rows, "ttft_p99_s", "round robin", "s");
    if (i < weighted.size() && weighted[i].group == b.group && !weighted[i].baseline_rows.empty() &&
        b.winner != "weighted_round_robin") {
      const Best& w = weighted[i];
      md << "; " << fmt_num(w.value / w.baseline) << "× weighted round robin's "
         << interval_cell(t, w.baseline_rows, "ttft_p99_s") << " s, "
         << versus(t, w.winner_rows, w.baseline_rows, "ttft_p99_s", "weighted round robin", "s");
    }
    md << ")\n";
  }
  // The conclusions table: per workload, its middle rate (the sweep brackets each workload's
  // capacity with three rates), the best router against both baselines.
  if (log) {
    std::map<std::string, std::vector<std::size_t>> per_workload;  // workload -> plain indices
    std::vector<std::string> order;
    for (std::size_t i = 0; i < plain.size(); ++i) {
      const std::string w = t.get(
          plain[i].baseline_rows.empty() ? plain[i].winner_rows[0] : plain[i].baseline_rows[0],
          "workload");
      if (!per_workload.count(w)) order.push_back(w);
      per_workload[w].push_back(i);
    }
    for (const std::string& w : order) {
      const auto& idx = per_workload[w];
      const std::size_t i = idx[idx.size() / 2];
      const Best& b = plain[i];
      if (b.baseline_rows.empty() || i >= weighted.size() || weighted[i].baseline_rows.empty())
        continue;
      const Best& wb = weighted[i];
      std::vector<std::vector<std::size_t>> group_configs;
      for (const auto& cr : configurations(t, {"workload", "rate", "router"}))
        if (t.get(cr[0], "workload") == w &&
            t.get(cr[0], "rate") == t.get(b.baseline_rows[0], "rate"))
          group_configs.push_back(cr);
      // The workload's other rates in one clause each: is the best router's TTFT p99 lower
      // than both baselines' beyond the paired replicates?
      std::string others;
      for (std::size_t j : idx) {
        if (j == i || j >= weighted.size()) continue;
        const Best& p = plain[j];
        const Best& q = weighted[j];
        const auto lower = [&](const Best& x) {
          if (x.winner_rows.empty() || x.baseline_rows.empty()) return false;
          const stats::Interval d = paired(t, x.winner_rows, x.baseline_rows, "ttft_p99_s");
          return d.n >= 2 && std::isfinite(d.hi) && d.hi < 0;
        };
        const bool both =
            p.winner != "round_robin" && p.winner != "weighted_round_robin" && lower(p) && lower(q);
        others += std::string(others.empty() ? "" : "; ") + "rate " +
                  t.get(p.winner_rows[0], "rate") + ": " + p.winner +
                  (both ? " lower than both baselines beyond the replicates"
                        : " not resolved against both baselines");
      }
      log->add(
          {"8.5",
           b.group + ": lowest TTFT p99 with " + b.winner + ", " +
               interval_cell(t, b.winner_rows, "ttft_p99_s") + " s; against round robin " +
               (b.winner == "round_robin"
                    ? std::string("(itself)")
                    : versus(t, b.winner_rows, b.baseline_rows, "ttft_p99_s", "round robin", "s")) +
               "; against weighted round robin " +
               (b.winner == "weighted_round_robin"
                    ? std::string("(itself)")
                    : versus(t, wb.winner_rows, wb.baseline_rows, "ttft_p99_s",
                             "weighted round robin", "s")) +
               (others.empty() ? std::string() : " (the workload's other rates: " + others + ")"),
           regime_brief(study, group_configs),
           "kappa_aware's estimator (Eq. 3's parts per node; no queueing or batching)",
           baseline + "; two router baselines (round robin, weighted by peak compute)"});
    }
  }
  return md.str();
}

}  // namespace

std::string section_routing(const SweepData& study, ConclusionLog* log,
                            const SweepData* layerwise) {
  std::ostringstream md;
  md << "### 8.5 κ-aware routing across a mixed pool of PCIe and NVLink-C2C nodes\n\n"
     << "Two DGX B200 nodes (PCIe 5, TP 8) and one GB200 superchip (NVLink-C2C, TP 2) serve "
     << "Qwen3-235B-A22B in FP8 in one simulation; a router sends each arriving request to a node: "
     << "round robin, weighted round robin (a share of the arrivals per node in proportion to "
     << "its GPUs' peak compute, 8:8:2 here: the capacity-aware baseline, which still reads "
     << "neither load nor κ), least loaded (fewest outstanding requests) or κ-aware (the node "
     << "where the request would finish first, from the analytic estimate of its load and compute "
     << "time on that node plus the node's backlog; docs/routing.md). Every node's tier holds the "
     << "documents' KV (warm, 20 NarrativeQA-like documents), so a router sees each request's "
     << "κ, not cache locality. On both of the studies' baselines: LMCache 0.3.5's default "
     << "kernel path at loads that bracket that pool's capacity, and its layer-wise path (the "
     << "paper's testbed, section 5b) at loads that bracket its own.\n\n";
  md << routing_part(study, "kernel path", log);
  if (layerwise) md << routing_part(*layerwise, "layer-wise path", log);
  md << "\nThe analytic side of this study is the router's own estimator: it uses Eq. 3's parts on "
     << "each node's descriptions; the simulation then shows what queueing, batching and VRAM "
     << "admission (which the estimator ignores) do to the outcome.\n\n";
  return md.str();
}

}  // namespace kappasim::report
