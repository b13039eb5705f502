// Section 3 of the reproduce report: κ_crit where a request's simulated KV load time equals its
// compute time on paper-testbed, beside Eq. 6 with peak, achieved-link and achieved-link-and-
// compute rates. Input: sweep kappa-crit-testbed. Outputs: Markdown and the reference crossing
// (Qwen3-235B-A22B, kernel load path, T = 128) that sections 1, 8.2 and 8.4 mark.
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

TestbedSection section_kappa_testbed(const SweepData& testbed) {
  const ResultsTable& t = testbed.table;
  std::ostringstream md;
  TestbedSection out;
  std::vector<std::vector<std::string>> rows;
  double worst = 0;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (!t.ok(r)) {
      rows.push_back({t.get(r, "model"), t.get(r, "serving.load_path"), t.get(r, "measure.t"), "—",
                      "—", "—", "—", "—", "—", "—", t.get(r, "error")});
      continue;
    }
    const double sim = t.num(r, "kappa_crit_simulated"),
                 peak = t.num(r, "kappa_crit_analytic_peak"),
                 eff = t.num(r, "kappa_crit_analytic_effective"),
                 both = t.num(r, "kappa_crit_analytic_effective_compute");
    if (std::isfinite(both) && std::isfinite(sim))
      worst = std::max(worst, std::fabs(both / sim - 1));
    // The reference crossing (the last completed row of it, as the table is read in order).
    if (t.get(r, "model") == "qwen3-235b-a22b" && t.get(r, "serving.load_path") == "kernel" &&
        t.get(r, "measure.t") == "128") {
      out.reference.kappa_crit_sim = sim;
      out.reference.measured = true;
      out.reference.link_fraction =
          t.num(r, "h2d_load_bytes_per_s") / t.num(r, "h2d_peak_bytes_per_s");
      out.reference.compute_fraction =
          t.num(r, "compute_effective_flops") / t.num(r, "compute_peak_flops");
    }
    rows.push_back({t.get(r, "model"), t.get(r, "serving.load_path"), t.get(r, "measure.t"),
                    fmt_num(peak), fmt_num(eff), fmt_num(both),
                    kappa_crit_cell(sim, t.num(r, "link_binds_from_start"),
                                    t.num(r, "link_never_binds"), t.num(r, "kappa_max")),
                    fmt_num(t.num(r, "h2d_load_bytes_per_s") / 1e9) + " / " +
                        fmt_num(t.num(r, "h2d_peak_bytes_per_s") / 1e9),
                    gbs(t.num(r, "h2d_load_node_bytes_per_s")) + " / " +
                        gbs(t.num(r, "h2d_load_model_bytes_per_s")),
                    pct(t.num(r, "compute_effective_flops") / t.num(r, "compute_peak_flops")), ""});
  }
  md << "## 3. Analytic vs simulated κ_crit on paper-testbed\n\n"
     << "κ_crit where a request's simulated KV load time equals its compute time (isolated "
     << "requests, warm tier, whole LMCache chunks), beside Eq. 6 at TP 8 with the KV bytes a "
     << "GPU loads (a GQA model with fewer KV heads than ranks holds each head on several: "
     << "Qwen3-235B's 4 KV heads on 8 GPUs count twice, where section 3b's Eq. 6 as published "
     << "divides the model's bytes by TP) with (a) peak link and compute, "
     << "(b) the link bandwidth the simulation achieved, (c) both the achieved bandwidth and the "
     << "achieved compute rate (in the analytic model's FLOP convention).\n\n"
     << markdown_table(
            {"model", "load path", "T", "analytic (peak)", "analytic (eff. BW)",
             "analytic (eff. BW + compute)", "simulated", "H2D GB/s per load time / peak (per GPU)",
             "H2D GB/s node / model", "compute eff / peak", "note"},
            rows)
     << "\nWhere they differ and why: "
     << (worst < 1e-9
             ? std::string("column (c) equals the simulated crossing in every row (to rounding), "
                           "by construction")
             : "column (c) is within " + pct(worst) +
                   " of the simulated crossing in every row, where construction makes them equal")
     << ": both of its rates are read at that crossing, so it checks the bookkeeping, not Eq. 6 "
     << "(section 3b tests Eq. 6 on rates probed apart from it). From (b) "
     << "to the simulation the difference is the compute side: the steps' achieved rate (compute "
     << "eff / peak) carries what Eq. 3 leaves out (attention FLOPs that grow with K, the LM head, "
     << "the fixed cost of a small step), while the tier's per-request and per-chunk software is "
     << "inside the achieved link rate (bytes per load time). The gap to the peak-based κ_crit is "
     << "the mechanisms "
     << "that keep the link below its peak on this testbed (DDR4 host DRAM shared by 8 GPUs, PCIe "
     << "protocol overhead, the copy kernel's per-block cost) and the GPU below its dense peak "
     << "(docs/paper-reproduction.md, docs/pcie-model.md, docs/compute-model.md).\n\n";
  out.markdown = md.str();
  return out;
}

}  // namespace kappasim::report
