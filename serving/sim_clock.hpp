// Simulated-time helpers shared by the serving engine's parts (engine, step groups, step models, KV
// store): the current simulated time in seconds, a wait that skips zero, and the link back end's
// registry name of a LinkFidelity. SystemC (serving_sim layer).
#pragma once

#include <systemc>

#include <string>

#include "core/sim_seconds.hpp"
#include "serving/serving_spec.hpp"

namespace kappasim::sim_clock {

inline double now_s() { return sim_now_seconds(); }  // core/sim_seconds.hpp (issue 24)
inline void wait_s(double s) {
  if (s > 0) sc_core::wait(sc_core::sc_time(s, sc_core::SC_SEC));
}
// serving.link_fidelity's name: the link back-end registry's key (systems/link_backend).
inline std::string link_fidelity_name(LinkFidelity f) {
  for (const auto& [name, v] : link_fidelity_names())
    if (v == f) return name;
  return "?";
}

}  // namespace kappasim::sim_clock
