// The simulator's time limit (issue 12 item 1), a plain constant: the SystemC runner
// (core/sim_runner) stops there, and the pure input readers (workloads/) reject times beyond it,
// so it lives in a SystemC-free header of the core layer (issue 13 item 6).
#pragma once

#include <cstdio>
#include <string>

namespace kappasim {

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
