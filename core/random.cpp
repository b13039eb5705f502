#include "core/random.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kappasim {

namespace {
constexpr double kTwoPi = 6.283185307179586476925286766559;
std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

std::uint64_t derive_seed(std::uint64_t base, std::string_view label) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the label's bytes
  for (unsigned char c : label) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return mix64(mix64(base) ^ h);
}

std::uint64_t derive_seed(std::uint64_t base, std::uint64_t index) {
  return mix64(mix64(base ^ 0x5851f42d4c957f2dULL) + mix64(index));
}

std::uint64_t derive_seed(std::uint64_t base, std::string_view label, std::uint64_t index) {
  return derive_seed(derive_seed(base, label), index);
}

Rng::Rng(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (auto& s : m_s) {
    x += 0x9e3779b97f4a7c15ULL;  // SplitMix64 step; never yields four zero words
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    s = z ^ (z >> 31);
  }
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(m_s[1] * 5, 7) * 9;
  const std::uint64_t t = m_s[1] << 17;
  m_s[2] ^= m_s[0];
  m_s[3] ^= m_s[1];
  m_s[1] ^= m_s[2];
  m_s[0] ^= m_s[3];
  m_s[2] ^= t;
  m_s[3] = rotl(m_s[3], 45);
  return result;
}

double Rng::uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Rng::uniform_open0() { return static_cast<double>((next_u64() >> 11) + 1) * 0x1.0p-53; }

std::uint64_t Rng::below(std::uint64_t n) {
  if (n == 0) throw std::logic_error("Rng::below: n must be >= 1");
  // Rejection: 2^64 - threshold is a multiple of n, so x % n is unbiased for x >= threshold.
  const std::uint64_t threshold = (std::uint64_t{0} - n) % n;
  for (;;) {
    const std::uint64_t x = next_u64();
    if (x >= threshold) return x % n;
  }
}

double Rng::exponential(double mean) { return -mean * std::log(uniform_open0()); }

double Rng::normal() {
  const double u1 = uniform_open0();
  const double u2 = uniform01();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

double Rng::lognormal(double median, double sigma) { return median * std::exp(sigma * normal()); }

double Rng::gamma(double shape, double scale) {
  if (!(shape > 0) || !(scale > 0))
    throw std::logic_error("Rng::gamma: shape and scale must be > 0");
  if (shape < 1) {
    // Gamma(a) = Gamma(a + 1) · U^(1/a).
    const double g = gamma(shape + 1, 1.0);
    return scale * g * std::pow(uniform_open0(), 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0, v = 0;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = uniform_open0();
    if (u < 1.0 - 0.0331 * x * x * x * x) return scale * d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return scale * d * v;
  }
}

std::int64_t Rng::geometric(double p) {
  if (!(p > 0) || p > 1) throw std::logic_error("Rng::geometric: p must be in (0, 1]");
  if (p == 1) return 1;
  // Inversion: the number of trials up to and including the first success.
  const double k = std::floor(std::log(uniform_open0()) / std::log1p(-p));
  return 1 + static_cast<std::int64_t>(std::min(k, 9.0e15));
}

ZipfTable::ZipfTable(std::uint64_t n, double s) {
  if (n == 0) throw std::logic_error("ZipfTable: n must be >= 1");
  m_cdf.resize(static_cast<std::size_t>(n));
  double total = 0;
  for (std::uint64_t k = 0; k < n; ++k) {
    total += s == 0 ? 1.0 : std::pow(static_cast<double>(k + 1), -s);
    m_cdf[static_cast<std::size_t>(k)] = total;
  }
  for (auto& c : m_cdf) c /= total;
  m_cdf.back() = 1.0;
}

std::uint64_t ZipfTable::sample(Rng& rng) const {
  const double u = rng.uniform01();
  const auto it = std::upper_bound(m_cdf.begin(), m_cdf.end(), u);
  return static_cast<std::uint64_t>(
      std::min<std::ptrdiff_t>(it - m_cdf.begin(), static_cast<std::ptrdiff_t>(m_cdf.size()) - 1));
}

double ZipfTable::probability(std::uint64_t k) const {
  const auto i = static_cast<std::size_t>(k);
  return i == 0 ? m_cdf[0] : m_cdf[i] - m_cdf[i - 1];
}

}  // namespace kappasim
