#include "core/quantile.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace kappasim {

QuantileSketch::QuantileSketch(double relative_accuracy) : m_alpha(relative_accuracy) {
  if (!(relative_accuracy > 0 && relative_accuracy <= 0.5))
    throw std::invalid_argument("QuantileSketch: relative accuracy must be in (0, 0.5]");
  m_gamma = (1 + m_alpha) / (1 - m_alpha);
  m_log_gamma = std::log(m_gamma);
  m_min_index = bucket_index(kMinValue);
  m_max_index = bucket_index(kMaxValue);
}

void QuantileSketch::cover(Range& r, std::size_t from, std::size_t to) const {
  // Blocks of 64 counters (512 bytes), so a run of samples creeping past an edge widens the
  // range now and then, not at every new bucket.
  constexpr std::size_t kBlock = 64;
  const std::size_t n = max_counters();
  if (!r.counts.empty()) {
    from = std::min(from, r.lo);
    to = std::max(to, r.lo + r.counts.size() - 1);
  }
  const std::size_t lo = from / kBlock * kBlock;
  const std::size_t hi = std::min(n, (to / kBlock + 1) * kBlock);  // one past the last
  std::vector<std::uint64_t> counts(hi - lo, 0);
  std::copy(r.counts.begin(), r.counts.end(),
            counts.begin() + static_cast<std::ptrdiff_t>(r.lo - lo));
  r.lo = lo;
  r.counts.swap(counts);
}

int QuantileSketch::bucket_index(double x) const {
  return static_cast<int>(std::ceil(std::log(x) / m_log_gamma));
}

double QuantileSketch::bucket_value(int i) const {
  return 2 * std::pow(m_gamma, i) / (m_gamma + 1);
}

std::size_t QuantileSketch::slot(double magnitude) const {
  int i = magnitude >= kMaxValue ? m_max_index : bucket_index(magnitude);
  i = std::clamp(i, m_min_index, m_max_index);
  return static_cast<std::size_t>(i - m_min_index);
}

void QuantileSketch::add(double x) {
  if (std::isnan(x)) throw std::invalid_argument("QuantileSketch::add: NaN sample");
  if (m_count == 0) {
    m_min = m_max = x;
  } else {
    m_min = std::min(m_min, x);
    m_max = std::max(m_max, x);
  }
  ++m_count;
  m_sum += x;
  double mag = std::fabs(x);
  if (mag < kMinValue) {
    ++m_zero;
    return;
  }
  if (mag != m_last_mag) {  // never equal before the first non-zero sample (m_last_mag = 0)
    m_last_slot = slot(mag);
    m_last_mag = mag;
  }
  if (x > 0)
    count(m_pos, m_last_slot);
  else
    count(m_neg, m_last_slot);
}

void QuantileSketch::add_like(double x, const QuantileSketch& other) {
  const double mag = std::fabs(x);
  if (mag == other.m_last_mag && other.m_last_mag != 0 && other.m_alpha == m_alpha) {
    m_last_mag = mag;
    m_last_slot = other.m_last_slot;
  }
  add(x);
}

void QuantileSketch::merge(const QuantileSketch& o) {
  if (o.m_alpha != m_alpha)
    throw std::invalid_argument("QuantileSketch::merge: different relative accuracy");
  if (o.m_count == 0) return;
  if (m_count == 0) {
    m_min = o.m_min;
    m_max = o.m_max;
  } else {
    m_min = std::min(m_min, o.m_min);
    m_max = std::max(m_max, o.m_max);
  }
  m_count += o.m_count;
  m_sum += o.m_sum;
  m_zero += o.m_zero;
  for (auto [mine, theirs] : {std::pair{&m_pos, &o.m_pos}, std::pair{&m_neg, &o.m_neg}}) {
    if (theirs->counts.empty()) continue;
    const std::size_t last = theirs->lo + theirs->counts.size() - 1;
    if (theirs->lo < mine->lo || last - mine->lo >= mine->counts.size())
      cover(*mine, theirs->lo, last);
    for (std::size_t k = 0; k < theirs->counts.size(); ++k)
      mine->counts[theirs->lo + k - mine->lo] += theirs->counts[k];
  }
}

double QuantileSketch::mean() const {
  return m_count ? m_sum / static_cast<double>(m_count) : std::numeric_limits<double>::quiet_NaN();
}
double QuantileSketch::min() const {
  return m_count ? m_min : std::numeric_limits<double>::quiet_NaN();
}
double QuantileSketch::max() const {
  return m_count ? m_max : std::numeric_limits<double>::quiet_NaN();
}

double QuantileSketch::quantile(double q) const {
  if (m_count == 0 || std::isnan(q)) return std::numeric_limits<double>::quiet_NaN();
  if (q <= 0) return m_min;
  if (q >= 1) return m_max;
  // Lower-rank convention: the sample of 0-based rank floor(q·(n−1)).
  const auto rank = static_cast<std::uint64_t>(std::floor(q * static_cast<double>(m_count - 1)));
  auto clamp = [&](double v) { return std::clamp(v, m_min, m_max); };
  std::uint64_t seen = 0;
  // Negative samples, most negative first (largest magnitude = highest slot).
  for (std::size_t k = m_neg.counts.size(); k-- > 0;) {
    seen += m_neg.counts[k];
    if (seen > rank) return clamp(-bucket_value(m_min_index + static_cast<int>(m_neg.lo + k)));
  }
  seen += m_zero;
  if (seen > rank) return clamp(0.0);
  for (std::size_t k = 0; k < m_pos.counts.size(); ++k) {
    seen += m_pos.counts[k];
    if (seen > rank) return clamp(bucket_value(m_min_index + static_cast<int>(m_pos.lo + k)));
  }
  return m_max;  // unreachable: counts add up to m_count
}

}  // namespace kappasim
