// Runs the one SystemC simulation a process may hold (SystemC 2.3: after sc_stop no module can
// be built and sc_start cannot run again). `build` constructs the modules (elaboration); the
// caller owns them and must keep them alive until run_simulation returns. The simulation runs
// until no event is pending (or `until_s`). SystemC warnings become errors; the copyright
// banner is suppressed so stdout stays clean for CSV/JSON.
#pragma once

#include <functional>
#include <optional>

namespace kappasim {

// Throws std::logic_error when a simulation already ran in this process; rethrows anything the
// simulation threw (InputError stays InputError).
void run_simulation(const std::function<void()>& build, std::optional<double> until_s = {});

// Simulated time now, in seconds (valid inside and after the simulation).
double sim_now_s();

}  // namespace kappasim
