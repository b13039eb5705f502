// Runs the one SystemC simulation a process may hold (SystemC 2.3: after sc_stop no module can
// be built and sc_start cannot run again). `build` constructs the modules (elaboration); the
// caller owns them and must keep them alive until run_simulation returns. The simulation runs
// until no event is pending (or `until_s`), and never past kSimTimeLimitS (below). SystemC warnings become errors; the copyright
// banner is suppressed so stdout stays clean for CSV/JSON.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <optional>
#include <string>

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

// ---- the time base's reach (issue 12 item 1) ----
// SystemC keeps time as a 64-bit count of the 1 ps resolution, but converts seconds to that
// count through a signed 64-bit integer, so any time or delay past 2^63 ps (≈ 106.75 days)
// saturates and later times come out wrong (TTFTs went negative). Every simulation therefore
// stops at kSimTimeLimitS: run_simulation throws InputError (exit 2) when anything is still
// pending there, and inputs that must pass it (a trace row, a request's arrival) are rejected
// where they are read. 100 days leaves 6.75 days of headroom below 2^63 ps, so no single delay
// reaching the limit can saturate.
inline constexpr double kSimTimeLimitDays = 100;
inline constexpr double kSimTimeLimitS = kSimTimeLimitDays * 86400;
// "N s (D days), beyond the simulator's time limit of 100 days (...)": the shared wording.
inline std::string sim_time_limit_message(double t_s) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "%.9g s (%.4g days), beyond the simulator's time limit of %g days (SystemC's "
                "64-bit time at its 1 ps resolution reaches 2^63 ps = 106.75 days)",
                t_s, t_s / 86400, kSimTimeLimitDays);
  return buf;
}

}  // namespace kappasim
