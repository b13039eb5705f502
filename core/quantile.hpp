// Bounded-memory quantiles: a deterministic log-bucketed sketch (DDSketch, Masson, Rim and Lee,
// VLDB 2019) for latency percentiles over any number of samples.
//
// Buckets. With relative accuracy α and γ = (1+α)/(1−α), a positive value x falls in bucket
// i = ceil(log_γ x), i.e. γ^(i−1) < x ≤ γ^i, and the bucket stands for v_i = 2γ^i/(γ+1).
// Any x in the bucket satisfies |v_i − x| ≤ α·x. Buckets cover [kMinValue, kMaxValue]
// (1 ns .. 1e6 s) in a dense array of at most 3,455 counters (α = 0.5%, 27 KiB); values
// below kMinValue in magnitude count as zero, values above kMaxValue go into the top bucket
// (their exact extremes are still kept by min()/max()). Negative values use a mirrored array.
// Each array holds only the run of buckets its samples have reached so far, widened in blocks
// as a sample falls outside it (issue 24: latencies span a few decades, a few hundred buckets;
// the whole array zero-filled at construction was 7 fresh pages per sketch, and a run holds
// ten or more sketches, every one of them page faults in each of a sweep's forked points). The
// counts are the same, so every quantile is the same bits.
//
// Error bound. quantile(q) returns the representative of the bucket that holds the sample of
// rank floor(q·(n−1)) (0-based, lower-rank convention) in sorted order; for samples whose
// magnitude lies in [kMinValue, kMaxValue] it is within relative error α of that exact order
// statistic (|estimate − exact| ≤ α·|exact|); for |x| < kMinValue the absolute error is below
// kMinValue; the result is clamped to [min(), max()], which only reduces the error. q ≤ 0 gives
// min() and q ≥ 1 gives max(), both exact. count, sum, mean, min, max are exact (sum in
// insertion order, so a deterministic run gives identical bits).
//
// Memory is bounded: independent of the number of samples. Pure C++, no SystemC.
#pragma once

#include <cstdint>
#include <vector>

namespace kappasim {

class QuantileSketch {
 public:
  static constexpr double kDefaultRelativeAccuracy = 0.005;
  static constexpr double kMinValue = 1e-9;  // 1 ns, in seconds for latencies
  static constexpr double kMaxValue = 1e6;   // 1e6 s

  // relative_accuracy in (0, 0.5]; std::invalid_argument otherwise.
  explicit QuantileSketch(double relative_accuracy = kDefaultRelativeAccuracy);

  // Adds one sample; std::invalid_argument on NaN (infinities clamp like values beyond range).
  void add(double x);
  // add(x) for a sample that often equals the latest of `other` (a sketch of the same accuracy):
  // its bucket is then taken from other's (the same bucket_index of the same value; issue 24: a
  // prefill-only request's end-to-end latency is its TTFT, one log for both).
  void add_like(double x, const QuantileSketch& other);
  // Adds every sample of another sketch with the same accuracy (std::invalid_argument if not).
  void merge(const QuantileSketch& other);

  std::uint64_t count() const { return m_count; }
  double sum() const { return m_sum; }
  double mean() const;  // NaN when empty
  double min() const;   // NaN when empty
  double max() const;   // NaN when empty
  // The q-quantile (0 ≤ q ≤ 1) within the bound above; NaN when empty.
  double quantile(double q) const;

  double relative_accuracy() const { return m_alpha; }
  double gamma() const { return m_gamma; }
  // Bucket index of a positive value (exposed for tests): ceil(log_γ x).
  int bucket_index(double x) const;
  // Representative value of bucket i: 2γ^i/(γ+1).
  double bucket_value(int i) const;
  // Number of counters held (memory, for tests): at most max_counters() for each sign, however
  // many samples.
  std::size_t counters() const { return m_pos.counts.size() + m_neg.counts.size(); }
  // The counters of one sign's whole range (kMinValue .. kMaxValue).
  std::size_t max_counters() const {
    return static_cast<std::size_t>(m_max_index - m_min_index + 1);
  }

 private:
  // The counts of one sign's buckets m_min_index + lo .. m_min_index + lo + counts.size() - 1
  // (empty until a sample of that sign); a bucket outside it holds none.
  struct Range {
    std::size_t lo = 0;
    std::vector<std::uint64_t> counts;
  };
  // Widens `r` (by whole blocks, within [0, max_counters())) to hold slots [from, to].
  void cover(Range& r, std::size_t from, std::size_t to) const;
  void count(Range& r, std::size_t s) const {
    // s < r.lo wraps the unsigned difference past any size: one test for both sides.
    std::size_t i = s - r.lo;
    if (i >= r.counts.size()) {
      cover(r, s, s);
      i = s - r.lo;
    }
    ++r.counts[i];
  }
  std::size_t slot(double magnitude) const;  // bucket index less m_min_index

  double m_alpha;
  double m_gamma;
  double m_log_gamma;
  int m_min_index;  // bucket index of kMinValue
  int m_max_index;  // bucket index of kMaxValue
  Range m_pos;      // positive samples: bucket m_min_index + k at slot k
  Range m_neg;      // the same for |x| of negative samples
  std::uint64_t m_zero = 0;
  std::uint64_t m_count = 0;
  double m_sum = 0;
  double m_min = 0;
  double m_max = 0;
  // The magnitude of the last non-zero sample and its slot: a run of equal samples (a decode
  // step's inter-token latency, one per sequence of the batch) costs one log (issue 23).
  double m_last_mag = 0;
  std::size_t m_last_slot = 0;
};

}  // namespace kappasim
