// Section 8.3 of `kappasim reproduce` (apps/kappasim/report_rebalancing.cpp): the FLOP / link /
// SRAM rebalancing study, analytic search then the best splits simulated. Kept in its own file
// so cmd_reproduce.cpp only calls it; the section reaches the report through this context.
#pragma once

#include <functional>
#include <sstream>
#include <string>

#include "apps/kappasim/report_util.hpp"

namespace kappasim::cli {

struct ReportContext {
  std::ostringstream& md;
  bool quick = false;
  std::string out;          // the reproduce output folder
  std::string experiments;  // experiments/ (sweep specs)
  // Runs a sweep spec file (resumably) into DIR/sweeps/<name>[-quick] and returns its results.
  std::function<ResultsTable(const std::string& spec_path)> sweep;
  std::function<std::string(const Figure&)> figure;
  std::function<void(const std::string&, const std::string&)> write_data;
  std::function<std::string(const std::string& name)> sweep_dir;
};

void report_rebalancing(ReportContext& R);

}  // namespace kappasim::cli
