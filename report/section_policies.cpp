// Section 7 of the reproduce report: FIFO vs utilisation-aware vs fair scheduling under VRAM
// pressure. Input: sweep policies. Outputs: Markdown, ttft-policies-*.csv and two figures.
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

std::string section_policies(const SweepData& runs, const FigureFolder& fig) {
  std::ostringstream md;
  md << "## 7. FIFO vs utilisation-aware vs fair scheduling\n\n"
     << "NarrativeQA-like at 8 RPS on paper-testbed (VRAM pressure), the same requests for every "
     << "policy. FIFO admits in arrival order and blocks behind a large prompt that does not fit; "
     << "utilisation-aware admits whatever fits the free VRAM and budget; fair does so but admits "
        "a "
     << "request that has waited longer than its bound first (docs/scheduler.md).\n\n";
  md << serving_table(runs, "serving.policy", "ttft-policies", "TTFT CDF by scheduling policy",
                      fig);
  md << "Each run's regime (issue 22: offered vs served, what bounds a step, how much came from "
        "the tier):\n\n"
     << load_verdicts(runs, "serving.policy");
  md << "The analytic model has no scheduler: it prices every request as if it ran alone, so it "
     << "cannot rank these policies; the simulation shows the trade between throughput (budget "
     << "utilisation) and tail latency / fairness (p99, max wait, Jain index).\n\n";
  return md.str();
}

}  // namespace kappasim::report
