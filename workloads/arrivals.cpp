#include "workloads/arrivals.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/units.hpp"

namespace kappasim {

ArrivalProcess::ArrivalProcess(ArrivalKind kind, double rate, double cv, std::uint64_t seed,
                               const std::string& key)
    : m_kind(kind), m_rate(rate), m_cv(cv), m_rng(seed) {
  if (!(rate > 0) || !std::isfinite(rate))
    throw InputError(key +
                     ": the arrival rate must be a finite number > 0 requests per second, got " +
                     format_number(rate));
  if (rate > kMaxArrivalRate)
    throw InputError(
        key + ": the arrival rate must be at most " + format_number(kMaxArrivalRate) +
        " per second (a mean gap of 1 ns, 1000 ticks of the simulator's 1 ps time base), got " +
        format_number(rate));
  if (kind == ArrivalKind::Gamma) {
    if (!(cv > 0) || !std::isfinite(cv) || cv > kMaxGammaCv)
      throw InputError(
          key +
          ": the gamma arrivals' coefficient of variation (workload.cv) must be > 0 and at "
          "most " +
          format_number(kMaxGammaCv) + ", got " + format_number(cv) +
          " (shape 1/cv² below 0.01 puts almost every gap below any time resolution)");
    m_shape = 1.0 / (cv * cv);
    m_scale = 1.0 / (rate * m_shape);  // mean gap = shape · scale = 1 / rate
  }
}

double ArrivalProcess::next_gap() {
  if (m_kind == ArrivalKind::Poisson) return m_rng.exponential(1.0 / m_rate);
  return m_rng.gamma(m_shape, m_scale);
}

std::string ArrivalProcess::describe() const {
  if (m_kind == ArrivalKind::Poisson) return "poisson at " + format_number(m_rate) + "/s";
  return "gamma at " + format_number(m_rate) + "/s, cv " + format_number(m_cv);
}

}  // namespace kappasim
