#include "core/quantile.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kappasim {

QuantileSketch::QuantileSketch(double relative_accuracy) : m_alpha(relative_accuracy) {
  if (!(relative_accuracy > 0 && relative_accuracy <= 0.5))
    throw std::invalid_argument("QuantileSketch: relative accuracy must be in (0, 0.5]");
  m_gamma = (1 + m_alpha) / (1 - m_alpha);
  m_log_gamma = std::log(m_gamma);
  m_min_index = bucket_index(kMinValue);
  m_max_index = bucket_index(kMaxValue);
  m_pos.assign(static_cast<std::size_t>(m_max_index - m_min_index + 1), 0);
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
  if (x > 0) {
    ++m_pos[m_last_slot];
  } else {
    if (m_neg.empty()) m_neg.assign(m_pos.size(), 0);
    ++m_neg[m_last_slot];
  }
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
  for (std::size_t k = 0; k < m_pos.size(); ++k) m_pos[k] += o.m_pos[k];
  if (!o.m_neg.empty()) {
    if (m_neg.empty()) m_neg.assign(m_pos.size(), 0);
    for (std::size_t k = 0; k < m_neg.size(); ++k) m_neg[k] += o.m_neg[k];
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
  for (std::size_t k = m_neg.size(); k-- > 0;) {
    seen += m_neg[k];
    if (seen > rank) return clamp(-bucket_value(m_min_index + static_cast<int>(k)));
  }
  seen += m_zero;
  if (seen > rank) return clamp(0.0);
  for (std::size_t k = 0; k < m_pos.size(); ++k) {
    seen += m_pos[k];
    if (seen > rank) return clamp(bucket_value(m_min_index + static_cast<int>(k)));
  }
  return m_max;  // unreachable: counts add up to m_count
}

}  // namespace kappasim
