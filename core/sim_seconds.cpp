#include "core/sim_seconds.hpp"

#include <cstdint>

namespace kappasim::detail {

double g_sim_tick_fs = 0;

double init_sim_tick_fs() {
  // sc_time(1 s) is 1e15 / resolution ticks (the resolution fixed from the first sc_time on).
  const double ticks_per_s = static_cast<double>(sc_core::sc_time(1.0, sc_core::SC_SEC).value());
  double tick = ticks_per_s > 0 ? 1e15 / ticks_per_s : -1;
  // Tick counts up to 2^62 (far beyond kSimTimeLimitS at any resolution), odd and even,
  // small and large.
  const std::uint64_t probes[] = {0,
                                  1,
                                  2,
                                  3,
                                  7,
                                  999,
                                  1000,
                                  123456789,
                                  1000000000000ULL,
                                  999999999989ULL,
                                  123456789012345ULL,
                                  (1ULL << 53) + 1,
                                  (1ULL << 62) - 3};
  for (std::uint64_t v : probes) {
    if (tick <= 0) break;
    if (static_cast<double>(v) * tick * 1e-15 != sc_core::sc_time::from_value(v).to_seconds())
      tick = -1;
  }
  g_sim_tick_fs = tick;
  return tick;
}

}  // namespace kappasim::detail
