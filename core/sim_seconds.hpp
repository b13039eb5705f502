// Simulated time in seconds without a call into libsystemc (issue 24: the engine and the flow
// fabric ask the time tens of times per step, each sc_time_stamp().to_seconds() two calls through
// the PLT). sim_seconds(t) forms the product sc_time::to_seconds() forms in SystemC 2.3.4 — the
// ticks as a double, times the time resolution in femtoseconds, times 1e-15 — with the
// resolution read once: the same bits. The resolution is derived from sc_time(1 s) and checked
// against to_seconds() on a spread of tick counts at first use; should the check ever fail (a
// SystemC whose to_seconds differs), every call is to_seconds() itself.
#pragma once

#include <systemc>

namespace kappasim {

namespace detail {
// The time resolution in fs once known (> 0); 0 before the first call; -1: use to_seconds().
extern double g_sim_tick_fs;
double init_sim_tick_fs();
}  // namespace detail

inline double sim_seconds(const sc_core::sc_time& t) {
  double tick = detail::g_sim_tick_fs;
  if (tick <= 0 && (tick < 0 || (tick = detail::init_sim_tick_fs()) < 0)) return t.to_seconds();
  return static_cast<double>(t.value()) * tick * 1e-15;
}

// sc_time_stamp() without its call into libsystemc (issue 24: ≈ 40 a step, each through the PLT):
// SystemC's sc_time_stamp() returns sc_get_curr_simcontext()->time_stamp(), and both are inline
// in its headers (sysc/kernel/sc_simcontext.h), so this is the same reference.
inline const sc_core::sc_time& sim_now() { return sc_core::sc_get_curr_simcontext()->time_stamp(); }

// sc_time_stamp().to_seconds(), as sim_seconds.
inline double sim_now_seconds() { return sim_seconds(sim_now()); }

}  // namespace kappasim
