// Arrival processes: the gaps between successive arrivals.
//
// Poisson at `rate` (exponential gaps, mean 1/rate) and gamma-renewal with a coefficient of
// variation `cv` (shape 1/cv², same mean; cv = 1 is Poisson, cv > 1 burstier, cv < 1 more
// regular). Deterministic: a pure function of the seed.
#pragma once

#include <cstdint>
#include <string>

#include "core/random.hpp"

namespace kappasim {

enum class ArrivalKind { Poisson, Gamma };

// Limits on an arrival process that the simulator can represent (issue 12, item 7):
// - rate at most 1e9 per second: the mean gap (1 ns) is still 1000 ticks of SystemC's 1 ps time
//   base; faster, gaps round to zero and arrivals pile up at one instant.
// - gamma cv at most 10 (shape 1/cv² >= 0.01): the median gap of a gamma with shape k is about
//   mean × 2^(-1/k) / k, so at k = 1e-12 (cv = 1e6) every gap is zero in double precision and the
//   process never advances. cv 10 already means bursts of ~100 arrivals; measured production
//   inter-arrival cv is of order 1 to a few.
inline constexpr double kMaxArrivalRate = 1e9;
inline constexpr double kMaxGammaCv = 10;

class ArrivalProcess {
 public:
  // `rate` in arrivals per second (> 0); `cv` (> 0) is used by Gamma only. `key` names the
  // config key the rate came from, for the InputError thrown when rate or cv is out of range.
  ArrivalProcess(ArrivalKind kind, double rate, double cv, std::uint64_t seed,
                 const std::string& key = "workload.rate");

  // Seconds until the next arrival (> 0 with probability one).
  double next_gap();

  double rate() const { return m_rate; }
  double cv() const { return m_kind == ArrivalKind::Poisson ? 1.0 : m_cv; }
  ArrivalKind kind() const { return m_kind; }
  std::string describe() const;

 private:
  ArrivalKind m_kind;
  double m_rate;
  double m_cv;
  double m_shape = 1;
  double m_scale = 1;
  Rng m_rng;
};

}  // namespace kappasim
