// The steady-state window of one serving run (issue 26 item 19, `kappasim measure capacity`,
// docs/analysis.md "Capacity at a TTFT SLO"): the figures of the requests that arrived after a
// warm-up and before the arrivals end, so neither the start (an empty system) nor the drain
// (no arrivals, the queue emptying) enters them.
//
// Definition, over the N requests that finished (sorted arrival times a_0 <= ... <= a_{N-1}):
//   window        [t0, t1] with t0 = a_i0, i0 = floor(warmup · N), and t1 = a_{N-1} (the last
//                 arrival); its length L = t1 - t0
//   arrival_rps   (arrivals in [t0, t1]) / L: the offered load the window saw
//   served_rps    (finishes in [t0, t1]) / L: the throughput; below arrival_rps when the system
//                 cannot keep up (the queue grows)
//   ttft_q(p)     the nearest-rank p-quantile of the TTFTs of the requests that arrived in
//                 [t0, t1]: the ceil(p · n)-th smallest of their n TTFTs (exact, no sketch)
// Rejected requests (prompts longer than the GPUs' KV cache) never finish and are not counted.
// Pure: no SystemC. Memory: two doubles per finished request (the caller's vectors).
#pragma once

#include <cstddef>
#include <vector>

namespace kappasim {

struct SteadyWindow {
  double t0_s = 0, t1_s = 0;  // the window
  std::size_t requests = 0;   // arrivals in it (their TTFTs are the sample)
  std::size_t finished = 0;   // finishes in it
  double arrival_rps = 0, served_rps = 0;
  std::vector<double> ttft_sorted_s;  // the window's TTFTs, ascending

  // Nearest rank: the ceil(p · n)-th smallest TTFT (p in (0, 1]); NaN when the window is empty.
  double ttft_quantile(double p) const;
};

// `arrival_s[i]` and `finish_s[i]` belong to request i (any order); warmup in [0, 1). InputError
// when fewer than 2 requests arrive in the window or it has no length (too few requests, or all
// arrivals at one instant): the message names `what` (e.g. "workload.requests").
SteadyWindow steady_window(std::vector<double> arrival_s, std::vector<double> finish_s,
                           double warmup, const char* what);

}  // namespace kappasim
