// Eq. 6 and its extended closed form from probed rates (see eq6_honest.hpp).
#include "analysis/eq6_honest.hpp"

#include <algorithm>
#include <cmath>

namespace kappasim::analysis {

double kappa_crit_eq6_probed(const HonestInputs& in) {
  return in.f_gpu / in.b_kv_eq6 * in.link_Bps / in.compute;
}

double kappa_crit_extended(const HonestInputs& in) {
  const double t_compute0 = std::max(in.f_gpu * in.T / in.compute, in.floor_s);
  const double num = t_compute0 - in.t_request_s;
  const double den =
      in.b_kv_gpu / in.link_Bps + in.t_chunk_s / in.chunk_tokens - in.attn_s_per_kt * in.T;
  if (den <= 0) return HUGE_VAL;
  return std::max(num, 0.0) / den / in.T;
}

}  // namespace kappasim::analysis
