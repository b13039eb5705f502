// The conclusions table at the top of the report (issue 22 item 5): each section that draws a
// conclusion from its rows also logs it here, with its value and interval, the regime it was
// measured in, the assumption it hinges on ("conditional on …" where a plausible value of that
// assumption could flip it) and which of the studies' baselines it holds on. The driver
// (report/reproduce.cpp) prints the log as one table after the introduction, so a reader sees
// every verdict with its caveats before the sections that derive them.
#pragma once

#include <string>
#include <vector>

namespace kappasim::report {

struct Conclusion {
  std::string section;    // "8.2"
  std::string claim;      // computed from the section's rows, with its value and interval
  std::string regime;     // the regime the rows were measured in (computed where the rows say)
  std::string hinges_on;  // the assumption it depends on
  std::string baselines;  // the baselines it was run on, and whether it holds on each
};

class ConclusionLog {
 public:
  void add(Conclusion c) { m_rows.push_back(std::move(c)); }
  const std::vector<Conclusion>& rows() const { return m_rows; }
  // The Markdown section: a heading, one sentence on how to read it, and the table ("" when
  // nothing was logged).
  std::string markdown() const;

 private:
  std::vector<Conclusion> m_rows;
};

}  // namespace kappasim::report
