// Runs the one SystemC simulation a process may hold (SystemC 2.3: after sc_stop no module can
// be built and sc_start cannot run again). `build` constructs the modules (elaboration); the
// caller owns them and must keep them alive until run_simulation returns. The simulation runs
// until no event is pending (or `until_s`), and never past kSimTimeLimitS
// (core/sim_time_limit.hpp). SystemC warnings become errors; the copyright banner is suppressed so
// stdout stays clean for CSV/JSON.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <optional>
#include <string>

#include "core/sim_time_limit.hpp"  // kSimTimeLimitS (pure, so workloads/ can check inputs)

namespace kappasim {

// Throws std::logic_error when a simulation already ran in this process; rethrows anything the
// simulation threw (InputError stays InputError); InputError when events are still pending at
// kSimTimeLimitS (the run would pass the time base's reach).
void run_simulation(const std::function<void()>& build, std::optional<double> until_s = {});

// From inside a SystemC process: makes run_simulation rethrow `e` when the simulation ends
// (SystemC would otherwise wrap an exception leaving a process into an internal error). The
// caller should then wind its work down so that every thread ends (the work in flight drains):
// a thread still alive when its module is destroyed during the unwinding is killed on its
// coroutine stack, which AddressSanitizer reports as a false stack-buffer-overflow.
void sim_fail(std::exception_ptr e);

// Simulated time now, in seconds (valid inside and after the simulation).
double sim_now_s();

}  // namespace kappasim
