// Section 5b's subsection on the break-even prefix (issue 20 part 3): for every serving stack ×
// load path of section 5b, the smallest cached prefix from which loading it beats recomputing
// it, simulated beside the analytic model's. Input: sweep stacks-break-even (kind break-even).
// Output: Markdown (a table and what it says, computed from the rows).
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "core/table.hpp"
#include "report/format.hpp"
#include "report/sections.hpp"

namespace kappasim::report {

namespace {

// A break-even cell: the crossing, "≤ k_min" when the hit was no slower at the first K, "> k_max"
// when it was still slower at the last.
std::string break_even_cell(const ResultsTable& t, std::size_t r, const std::string& which) {
  const std::string pre = which == "simulated" ? "break_even_" : "break_even_analytic_";
  if (t.num(r, pre + "from_start") == 1) return "≤ " + fmt_num(t.num(r, "k_min"));
  if (t.num(r, pre + "never") == 1) return "> " + fmt_num(t.num(r, "k_max"));
  return fmt_num(t.num(r, "break_even_k_" + which));
}

}  // namespace

std::string section_stacks_break_even(const SweepData& be, ConclusionLog* log) {
  const ResultsTable& t = be.table;
  if (t.rows.empty()) return "";
  std::ostringstream md;
  std::string T = "—";
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    if (t.ok(r)) T = t.get(r, "t");
  md << "### Where loading beats recomputing: the break-even prefix (T = " << T << ")\n\n"
     << "For each stack and load path above: the smallest cached prefix K from which loading it "
     << "from the warm DRAM tier and computing T = " << T
     << " new tokens is no slower than computing all K + " << T
     << " tokens (`kappasim measure break-even`, sweep stacks-break-even; docs/serving-stacks.md "
     << "\"Where loading starts to pay\"): isolated requests, TP 8, a log grid of K in whole tier "
     << "chunks up to what the GPUs' KV cache holds, the break-even K interpolated between the two "
        "grid "
     << "points where the miss-minus-hit TTFT changes sign (so it need not be a whole chunk). "
     << "\"≤ K\" means loading was no slower already "
     << "at the grid's first K; a K from which recomputing is slower again further up does not "
     << "count (the break-even is the last turn). The analytic column is Eq. 3 with attention "
     << "FLOPs on the same inputs, with no per-request software and no weight-read floor. "
     << "Deterministic: no replicates.\n\n";
  std::vector<std::vector<std::string>> rows;
  // paper-testbed rows with a break-even beyond their first chunk: stack/path -> K, per model.
  // (K, stack / path, whether loading already paid at the grid's first K and then stopped).
  std::map<std::string, std::vector<std::tuple<double, std::string, bool>>> late;
  int from_start = 0, total = 0, window = 0;
  std::string late_model;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (!t.ok(r)) continue;
    const std::string stack = t.get(r, "stack") + " / " + t.get(r, "load_path");
    rows.push_back(
        {t.get(r, "system"), t.get(r, "model"), stack, break_even_cell(t, r, "simulated"),
         break_even_cell(t, r, "analytic"),
         fmt_num(1e3 * t.num(r, "ttft_hit_at_k_min_s")) + " / " +
             fmt_num(1e3 * t.num(r, "ttft_miss_at_k_min_s")) +
             " at K = " + fmt_num(t.num(r, "k_min")),
         fmt_num(t.num(r, "speedup_at_k_max")) + "× at K = " + fmt_num(t.num(r, "k_max"))});
    if (t.get(r, "system") != "paper-testbed") continue;
    ++total;
    if (t.num(r, "break_even_from_start") == 1) {
      ++from_start;
    } else {
      const double k =
          t.num(r, "break_even_never") == 1 ? INFINITY : t.num(r, "break_even_k_simulated");
      // Not monotone: a hit at the first K already beat the recompute, then lost to it further
      // up (the break-even is the last turn).
      const bool first = t.num(r, "ttft_hit_at_k_min_s") <= t.num(r, "ttft_miss_at_k_min_s");
      if (first) ++window;
      late[t.get(r, "model")].emplace_back(k, stack, first);
    }
  }
  md << markdown_table({"system", "model", "stack / load path", "break-even K (simulated)",
                        "break-even K (analytic)", "TTFT hit / miss (ms) at the first K",
                        "miss / hit at the largest K"},
                       rows)
     << "\n";
  if (total == 0) return md.str();
  md << "What the rows say (computed from them, paper-testbed):\n\n"
     << "- Loading pays at every K from the first tier chunk on " << from_start << " of " << total
     << " model × stack / path rows"
     << (window > 0 ? "; on " + std::to_string(window) +
                          " more it pays at the first chunk, stops paying in a window of larger "
                          "prefixes and pays again from the K given below"
                    : std::string())
     << ".\n";
  std::string claim;
  for (auto& [model, v] : late) {
    std::sort(v.begin(), v.end());
    std::string list;
    for (const auto& [k, stack, first] : v)
      list += (list.empty() ? "" : ", ") + stack + " (K ≈ " +
              (std::isfinite(k) ? fmt_num(k) : std::string("none on the grid")) +
              (first ? "; it also pays at the first chunk" : "") + ")";
    md << "- " << model << ": loading pays for every longer prefix only from the K given on "
       << list << ": below it their per-request or per-chunk software (each stack's profile, "
       << "docs/serving-stacks.md) costs more than recomputing the prefix at small T, where a "
       << "prefill is bound by reading the weights (at the first chunk, where the prefix is "
       << "small, a row marked so still wins).\n";
    claim += (claim.empty() ? "" : "; ") + model + ": " + list;
  }
  md << "\n";
  if (log && !claim.empty())
    log->add({"5b",
              "Reusing a cached prefix pays at every prefix from the first tier chunk on " +
                  std::to_string(from_start) + " of " + std::to_string(total) +
                  " model × stack / path rows; the others for every longer prefix only from "
                  "the K given (" +
                  claim + ")",
              "isolated requests, T = " + T +
                  ", TP 8, paper-testbed, warm DRAM tier; TTFT of a hit against a full "
                  "recompute; deterministic",
              "the stacks' per-request and per-copy software costs (docs/serving-stacks.md: "
              "measured for LMCache 0.3.5, assumptions with ranges elsewhere) and the small-T "
              "compute; conditional on them: a cheaper per-chunk or per-copy cost moves a long "
              "break-even down",
              "both baselines appear as rows (kernel: LMCache's default; layerwise: the paper's "
              "testbed)"});
  return md.str();
}

}  // namespace kappasim::report
