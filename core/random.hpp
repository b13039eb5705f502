// Deterministic randomness: a seeded generator and hand-written distributions.
//
// The generator is xoshiro256** (Blackman & Vigna) seeded through SplitMix64, so the same seed
// gives the same 64-bit sequence on every platform and compiler. The distributions are written
// here, not taken from <random>: std::*_distribution algorithms are unspecified and differ
// between standard libraries. Continuous distributions use std::log / std::exp / std::sqrt /
// std::cos, which glibc rounds correctly or within one ulp; integer streams are bit-identical
// everywhere.
//
// Independent streams: `derive_seed(base, label)` and `derive_seed(base, index)` mix a label or
// an index into a seed, so (seed, "sharegpt", conversation 17) always names the same stream no
// matter how many other streams were drawn before it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kappasim {

// SplitMix64 finaliser (a bijection on 64-bit words). Inline: hash tables on the step path
// (models/gpu's step-time memos) mix their keys with it.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// A seed for an independent stream named by `label` / `index` under `base`.
std::uint64_t derive_seed(std::uint64_t base, std::string_view label);
std::uint64_t derive_seed(std::uint64_t base, std::uint64_t index);
std::uint64_t derive_seed(std::uint64_t base, std::string_view label, std::uint64_t index);

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0);

  std::uint64_t next_u64();
  // Advances the stream by n words, as n next_u64() calls would (the words unused).
  void discard(std::uint64_t n) {
    for (; n > 0; --n) next_u64();
  }
  // Uniform in [0, 1), 53 random bits.
  double uniform01();
  // Uniform in (0, 1]: safe to take the logarithm of.
  double uniform_open0();
  // Uniform integer in [0, n), without modulo bias (n >= 1).
  std::uint64_t below(std::uint64_t n);

  // Exponential with the given mean (> 0), by inversion.
  double exponential(double mean);
  // Standard normal by Box–Muller (one value per two uniforms; no cached state).
  double normal();
  double normal(double mean, double sd) { return mean + sd * normal(); }
  // Lognormal given its median (> 0) and the sigma of its logarithm (>= 0). Always two words of
  // the stream (normal()'s two uniforms): kLognormalWords.
  double lognormal(double median, double sigma);
  static constexpr std::uint64_t kLognormalWords = 2;
  // Gamma(shape, scale), Marsaglia–Tsang; shape < 1 via the U^(1/shape) boost.
  double gamma(double shape, double scale);
  // Geometric on {1, 2, ...} with success probability p in (0, 1]; mean 1/p.
  std::int64_t geometric(double p);

 private:
  std::uint64_t m_s[4];
};

// Zipf over items 0..n-1 (item k has weight 1/(k+1)^s), sampled by inverse CDF over a table of
// n doubles. s = 0 is uniform.
class ZipfTable {
 public:
  ZipfTable(std::uint64_t n, double s);
  std::uint64_t sample(Rng& rng) const;
  double probability(std::uint64_t k) const;
  std::uint64_t size() const { return m_cdf.size(); }

 private:
  std::vector<double> m_cdf;  // cumulative, last = 1
};

}  // namespace kappasim
