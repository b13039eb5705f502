// The analysis commands (docs/analysis.md); the logic lives in analysis/.
#pragma once

#include <string>
#include <vector>

namespace kappasim::cli {
// kappasim solve CONFIG --vary KEY --range LO:HI --target "METRIC OP VALUE" (cmd_solve.cpp)
int cmd_solve(const std::vector<std::string>& args);
// kappasim sensitivity CONFIG --metric M [--out DIR] (cmd_sensitivity.cpp)
int cmd_sensitivity(const std::vector<std::string>& args);
// kappasim calibrate MEASUREMENTS.yaml --out DIR (cmd_calibrate.cpp)
int cmd_calibrate(const std::vector<std::string>& args);
// kappasim measure capacity CONFIG --slo-ttft T (cmd_capacity.cpp; issue 26 item 19)
int cmd_measure_capacity(const std::vector<std::string>& args);
}  // namespace kappasim::cli
