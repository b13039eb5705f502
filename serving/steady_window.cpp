#include "serving/steady_window.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.hpp"
#include "core/units.hpp"

namespace kappasim {

double SteadyWindow::ttft_quantile(double p) const {
  if (ttft_sorted_s.empty()) return std::nan("");
  const double n = static_cast<double>(ttft_sorted_s.size());
  // ceil(p·n) with a guard against p·n landing a hair above a whole number (0.99 · 100).
  double rank = std::ceil(p * n - 1e-9 * n);
  rank = std::min(std::max(rank, 1.0), n);
  return ttft_sorted_s[static_cast<std::size_t>(rank) - 1];
}

SteadyWindow steady_window(std::vector<double> arrival_s, std::vector<double> finish_s,
                           double warmup, const char* what) {
  if (arrival_s.size() != finish_s.size())
    throw std::logic_error("steady_window: arrival and finish counts differ");
  if (!(warmup >= 0 && warmup < 1)) throw std::logic_error("steady_window: warmup not in [0, 1)");
  const std::size_t n = arrival_s.size();
  SteadyWindow w;
  auto too_few = [&](const std::string& why) {
    return InputError(std::string(what) + ": " + why +
                      " (the steady-state window is the arrivals after the warm-up fraction " +
                      format_number(warmup) + " up to the last arrival; raise the request count)");
  };
  if (n < 2) throw too_few(std::to_string(n) + " finished request(s), need at least 2");
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return arrival_s[a] < arrival_s[b]; });
  const std::size_t i0 = static_cast<std::size_t>(std::floor(warmup * static_cast<double>(n)));
  w.t0_s = arrival_s[order[std::min(i0, n - 1)]];
  w.t1_s = arrival_s[order[n - 1]];
  const double len = w.t1_s - w.t0_s;
  for (std::size_t i = 0; i < n; ++i) {
    if (arrival_s[i] >= w.t0_s && arrival_s[i] <= w.t1_s) {
      ++w.requests;
      w.ttft_sorted_s.push_back(finish_s[i] - arrival_s[i]);
    }
    if (finish_s[i] >= w.t0_s && finish_s[i] <= w.t1_s) ++w.finished;
  }
  if (w.requests < 2 || !(len > 0))
    throw too_few(std::to_string(w.requests) + " request(s) arrive in the window [" +
                  format_number(w.t0_s) + " s, " + format_number(w.t1_s) + " s]");
  std::sort(w.ttft_sorted_s.begin(), w.ttft_sorted_s.end());
  w.arrival_rps = static_cast<double>(w.requests) / len;
  w.served_rps = static_cast<double>(w.finished) / len;
  return w;
}

}  // namespace kappasim
