#include "report/conclusions.hpp"

#include "core/table.hpp"

namespace kappasim::report {

std::string ConclusionLog::markdown() const {
  if (m_rows.empty()) return "";
  std::vector<std::vector<std::string>> rows;
  rows.reserve(m_rows.size());
  for (const Conclusion& c : m_rows)
    rows.push_back({c.section, c.claim, c.regime, c.hinges_on, c.baselines});
  return "## Conclusions at a glance\n\n"
         "Each row is computed by its section from that section's rows (the section has the "
         "table and the reasoning); intervals are 95% over replicate workload seeds where the "
         "study has replicates. \"Conditional on\" marks a verdict that a plausible value of an "
         "assumed parameter could flip. Baselines: `kernel` is LMCache 0.3.5's default load path, "
         "`layer-wise` the configuration that reproduces the paper's testbed (section 5b).\n\n" +
         markdown_table({"section", "conclusion", "regime", "hinges on", "baselines"}, rows) + "\n";
}

}  // namespace kappasim::report
