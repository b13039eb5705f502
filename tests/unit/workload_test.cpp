// Workloads: deterministic randomness, distributions, arrival processes and the synthetic
// generators (median κ_ratio against the paper's published medians, arrival order and rate,
// prefix identity of chat turns and document questions, bounded memory, config, mixes).
// Every expectation comes from the distributions' definitions or the paper, not from a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "core/config.hpp"
#include "core/random.hpp"
#include "workloads/arrivals.hpp"
#include "workloads/generators.hpp"
#include "workloads/mix_source.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {
namespace workload_test {
namespace {

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError thrown";
  return {};
}
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<Request> drain(WorkloadSource& src, std::size_t max = 1'000'000) {
  std::vector<Request> out;
  Request r;
  while (out.size() < max && src.next(r)) out.push_back(r);
  return out;
}

WorkloadSpec spec_of(WorkloadType t, std::int64_t requests, double rate = 10) {
  WorkloadSpec s;
  s.type = t;
  s.requests = requests;
  s.rate = rate;
  return s;
}

// ---- random ----------------------------------------------------------------------------------

TEST(Random, SameSeedSameSequence) {
  Rng a(42), b(42);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.next_u64(), b.next_u64());
  Rng c(42), d(42);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(c.lognormal(100, 1), d.lognormal(100, 1));
}

TEST(Random, KnownAnswerXoshiro256StarStar) {
  // SplitMix64 seeded with 0 yields 0xe220a8397b1dcdaf first (its published reference output);
  // the xoshiro256** values come from an independent transcription of Vigna's reference C code.
  EXPECT_EQ(mix64(0), 0xe220a8397b1dcdafULL);
  Rng r(0);
  EXPECT_EQ(r.next_u64(), 0x99ec5f36cb75f2b4ULL);
  EXPECT_EQ(r.next_u64(), 0xbf6e1f784956452aULL);
  EXPECT_EQ(r.next_u64(), 0x1a5f849d4933e6e0ULL);
}

TEST(Random, DerivedSeedsGiveDifferentStreams) {
  EXPECT_NE(derive_seed(1, "a"), derive_seed(1, "b"));
  EXPECT_NE(derive_seed(1, "a"), derive_seed(2, "a"));
  EXPECT_NE(derive_seed(1, std::uint64_t{0}), derive_seed(1, std::uint64_t{1}));
  EXPECT_EQ(derive_seed(7, "x", 3), derive_seed(7, "x", 3));
  Rng a(derive_seed(1, "sharegpt", 0)), b(derive_seed(1, "sharegpt", 1));
  int equal = 0;
  for (int i = 0; i < 100; ++i) equal += a.next_u64() == b.next_u64();
  EXPECT_EQ(equal, 0);
}

TEST(Random, UniformAndBelow) {
  Rng r(3);
  double sum = 0;
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 100000; ++i) {
    const double u = r.uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    ++counts[static_cast<std::size_t>(r.below(10))];
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);  // sd ≈ 95
}

TEST(Random, ExponentialMean) {
  Rng r(11);
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) sum += r.exponential(2.5);
  EXPECT_NEAR(sum / n, 2.5, 0.02 * 2.5);  // sd of the mean: 2.5 / sqrt(1e5) = 0.3%
}

TEST(Random, NormalMoments) {
  Rng r(12);
  double s1 = 0, s2 = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double x = r.normal();
    s1 += x;
    s2 += x * x;
  }
  EXPECT_NEAR(s1 / n, 0.0, 0.015);
  EXPECT_NEAR(s2 / n, 1.0, 0.02);
}

TEST(Random, LognormalMedianAndSigma) {
  Rng r(13);
  std::vector<double> v;
  double slog = 0, slog2 = 0;
  for (int i = 0; i < 100000; ++i) {
    v.push_back(r.lognormal(250, 0.8));
    slog += std::log(v.back());
    slog2 += std::log(v.back()) * std::log(v.back());
  }
  EXPECT_NEAR(median_of(v), 250, 0.02 * 250);
  const double m = slog / 1e5;
  EXPECT_NEAR(std::sqrt(slog2 / 1e5 - m * m), 0.8, 0.01);
}

TEST(Random, GammaMeanAndVariance) {
  for (double shape : {0.25, 0.5, 2.0, 7.5}) {
    Rng r(14);
    const double scale = 3;
    double s1 = 0, s2 = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
      const double x = r.gamma(shape, scale);
      s1 += x;
      s2 += x * x;
    }
    const double mean = s1 / n, var = s2 / n - mean * mean;
    EXPECT_NEAR(mean, shape * scale, 0.02 * shape * scale) << "shape " << shape;
    EXPECT_NEAR(var, shape * scale * scale, 0.06 * shape * scale * scale) << "shape " << shape;
  }
}

TEST(Random, GeometricMean) {
  Rng r(15);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) sum += static_cast<double>(r.geometric(0.2));
  EXPECT_NEAR(sum / 1e5, 5.0, 0.1);  // mean 1/p
  EXPECT_NEAR(truncated_geometric_mean(5, 1000), 5.0, 1e-9);
  EXPECT_DOUBLE_EQ(truncated_geometric_mean(5, 1), 1.0);
  // Truncated to {1, 2}: P(1) ∝ 0.2, P(2) ∝ 0.16 => mean (0.2 + 0.32) / 0.36.
  EXPECT_NEAR(truncated_geometric_mean(5, 2), 0.52 / 0.36, 1e-12);
}

TEST(Random, ZipfFrequencies) {
  ZipfTable z(100, 1.0);
  // Harmonic number H_100 = 5.18737751763962.
  EXPECT_NEAR(z.probability(0), 1 / 5.18737751763962, 1e-12);
  EXPECT_NEAR(z.probability(1), 0.5 / 5.18737751763962, 1e-12);
  Rng r(16);
  std::vector<int> counts(100, 0);
  for (int i = 0; i < 200000; ++i) ++counts[static_cast<std::size_t>(z.sample(r))];
  for (int k = 0; k < 5; ++k) EXPECT_GT(counts[k], counts[k + 1]) << "item " << k;
  EXPECT_NEAR(static_cast<double>(counts[0]) / counts[1], 2.0, 0.1);  // (2/1)^s
  EXPECT_NEAR(counts[0] / 2e5, 1 / 5.18737751763962, 0.005);
  ZipfTable u(4, 0.0);  // s = 0: uniform
  for (int k = 0; k < 4; ++k)
    EXPECT_NEAR(u.probability(static_cast<std::uint64_t>(k)), 0.25, 1e-12);
}

// ---- arrivals --------------------------------------------------------------------------------

TEST(Workload, PoissonAndGammaRates) {
  for (auto [kind, cv] : {std::pair{ArrivalKind::Poisson, 1.0}, std::pair{ArrivalKind::Gamma, 2.0},
                          std::pair{ArrivalKind::Gamma, 0.5}}) {
    ArrivalProcess p(kind, 20.0, cv, 99);
    const int n = 100000;
    double t = 0, s2 = 0;
    for (int i = 0; i < n; ++i) {
      const double g = p.next_gap();
      ASSERT_GE(g, 0.0);
      t += g;
      s2 += g * g;
    }
    EXPECT_NEAR(n / t, 20.0, 0.03 * 20.0) << p.describe();
    const double mean = t / n;
    EXPECT_NEAR(std::sqrt(s2 / n - mean * mean) / mean, cv, 0.05 * cv) << p.describe();
  }
}

TEST(Workload, RateMustBePositive) {
  EXPECT_TRUE(
      has(error_of([] { ArrivalProcess(ArrivalKind::Poisson, 0, 1, 1); }), "workload.rate"));
  EXPECT_TRUE(
      has(error_of([] { ArrivalProcess(ArrivalKind::Poisson, -3, 1, 1, "x.rate"); }), "x.rate"));
  EXPECT_TRUE(has(error_of([] { ArrivalProcess(ArrivalKind::Gamma, 1, 0, 1); }), "cv"));
  EXPECT_TRUE(has(
      error_of([] { read_config<WorkloadSpec>(parse_yaml("rate: 0\n", "w.yaml"), "workload"); }),
      "workload.rate"));
  WorkloadSpec s = spec_of(WorkloadType::NarrativeQa, 10, -2);
  const std::string msg = error_of([&] { make_source(s, 1); });
  EXPECT_TRUE(has(msg, "workload.rate")) << msg;
  EXPECT_TRUE(has(msg, "-2")) << msg;
}

// ---- generators ------------------------------------------------------------------------------

struct Published {
  WorkloadType type;
  double median_kappa;
};
const Published kPublished[] = {{WorkloadType::ShareGpt, 100},
                                {WorkloadType::NarrativeQa, 5000},
                                {WorkloadType::DocFinQa, 10000}};

TEST(Workload, MedianKappaMatchesThePaper) {
  // The paper's medians: ShareGPT 100, NarrativeQA 5000, (Doc)FinQA 10000; ±10%.
  for (const auto& p : kPublished) {
    for (std::uint64_t seed : {1u, 2u}) {
      auto src = make_source(spec_of(p.type, 5000), seed);
      std::vector<double> k;
      for (const auto& r : drain(*src)) k.push_back(r.kappa_ratio());
      ASSERT_EQ(k.size(), 5000u);
      EXPECT_NEAR(median_of(k), p.median_kappa, 0.10 * p.median_kappa)
          << workload_type_name(p.type) << " seed " << seed;
    }
  }
}

TEST(Workload, OutputTokensAreTheChatReplyAndTheAnswerLengths) {
  // ShareGPT: a turn's output is the reply the history grows by, so the next turn of the same
  // conversation has prefix = this prefix + this message + this output.
  std::map<std::uint64_t, Request> last;
  std::size_t followed = 0;
  for (const Request& r : drain(*make_source(spec_of(WorkloadType::ShareGpt, 3000), 4))) {
    auto it = last.find(r.sequence_id);
    if (it != last.end()) {
      const Request& p = it->second;
      EXPECT_EQ(r.prefix_tokens, p.prefix_tokens + p.new_tokens + p.output_tokens);
      ++followed;
    }
    last[r.sequence_id] = r;
  }
  EXPECT_GT(followed, 1000u);
  // NarrativeQA: answers are lognormal with median answer_tokens_median (32 by default), ±10%.
  std::vector<double> out;
  for (const Request& r : drain(*make_source(spec_of(WorkloadType::NarrativeQa, 5000), 4)))
    out.push_back(static_cast<double>(r.output_tokens));
  EXPECT_NEAR(median_of(out), 32, 3.2);
}

TEST(Workload, RequestsAreWellFormedAndInOrder) {
  for (const auto& p : kPublished) {
    auto src = make_source(spec_of(p.type, 3000), 5);
    const auto reqs = drain(*src);
    ASSERT_EQ(reqs.size(), 3000u);
    Request extra;
    EXPECT_FALSE(src->next(extra));  // stops after `requests`
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      const Request& r = reqs[i];
      EXPECT_EQ(r.id, i + 1);
      EXPECT_GE(r.new_tokens, 1);
      EXPECT_GE(r.prefix_tokens, 0);
      EXPECT_GE(r.output_tokens, 1);  // generated only when the run decodes
      EXPECT_NE(r.sequence_id, 0u);
      EXPECT_EQ(r.workload, workload_type_name(p.type));
      if (i > 0) {
        ASSERT_GE(r.arrival_s, reqs[i - 1].arrival_s) << "request " << r.id;
      }
    }
    EXPECT_GE(reqs.front().arrival_s, 0.0);
    EXPECT_FALSE(src->describe().empty());
  }
}

TEST(Workload, SameSeedSameRequests) {
  for (const auto& p : kPublished) {
    auto a = make_source(spec_of(p.type, 500), 9), b = make_source(spec_of(p.type, 500), 9),
         c = make_source(spec_of(p.type, 500), 10);
    const auto ra = drain(*a), rb = drain(*b), rc = drain(*c);
    int differ = 0;
    for (std::size_t i = 0; i < ra.size(); ++i) {
      EXPECT_EQ(ra[i].arrival_s, rb[i].arrival_s);
      EXPECT_EQ(ra[i].prefix_tokens, rb[i].prefix_tokens);
      EXPECT_EQ(ra[i].new_tokens, rb[i].new_tokens);
      EXPECT_EQ(ra[i].sequence_id, rb[i].sequence_id);
      differ += ra[i].prefix_tokens != rc[i].prefix_tokens || ra[i].new_tokens != rc[i].new_tokens;
    }
    EXPECT_GT(differ, 250);
  }
}

TEST(Workload, ArrivalRateMatchesTheConfiguredRate) {
  // Sessions bring several requests each; in steady state (the second half of the run, long
  // after the first sessions) requests arrive at the configured rate.
  for (const auto& p : kPublished) {
    for (auto [kind, cv] :
         {std::pair{ArrivalKind::Poisson, 1.0}, std::pair{ArrivalKind::Gamma, 2.0}}) {
      WorkloadSpec s = spec_of(p.type, 200000, 50);
      s.arrival = kind;
      s.cv = cv;
      auto src = make_source(s, 3);
      std::vector<double> t;
      Request r;
      while (src->next(r)) t.push_back(r.arrival_s);
      ASSERT_EQ(t.size(), 200000u);
      const double end = t.back(), from = end / 2;
      const auto in_window = std::count_if(t.begin(), t.end(), [&](double a) { return a > from; });
      EXPECT_NEAR(static_cast<double>(in_window) / (end - from), 50.0, 0.03 * 50.0)
          << workload_type_name(p.type) << " cv " << cv;
    }
  }
}

TEST(Workload, ChatTurnsExtendThePreviousPrompt) {
  WorkloadSpec s = spec_of(WorkloadType::ShareGpt, 3000);
  s.sharegpt.warm_start = false;  // every conversation is seen from its first turn
  auto src = make_source(s, 4);
  std::map<std::uint64_t, std::vector<Request>> conv;
  for (const auto& r : drain(*src)) conv[r.sequence_id].push_back(r);
  int pairs = 0;
  for (const auto& [id, turns] : conv) {
    EXPECT_EQ(turns.front().prefix_tokens, 0) << "conversation " << id;  // first turn: no history
    for (std::size_t i = 0; i + 1 < turns.size(); ++i) {
      const Request &a = turns[i], &b = turns[i + 1];
      EXPECT_TRUE(a.extends_sequence);
      EXPECT_GE(b.prefix_tokens, a.prompt_tokens());
      EXPECT_GE(b.arrival_s, a.arrival_s);
      for (int chunk : {16, 256}) {
        const auto ka = chunk_keys(a, chunk), kb = chunk_keys(b, chunk);
        ASSERT_LE(ka.size(), kb.size());
        EXPECT_TRUE(std::equal(ka.begin(), ka.end(), kb.begin())) << "conversation " << id;
      }
      ++pairs;
    }
  }
  EXPECT_GT(pairs, 1000);
}

TEST(Workload, DocumentQuestionsSharePrefixNotQuestion) {
  for (WorkloadType t : {WorkloadType::NarrativeQa, WorkloadType::DocFinQa}) {
    WorkloadSpec s = spec_of(t, 1000);
    auto src = make_source(s, 6);
    std::map<std::uint64_t, std::vector<Request>> docs;
    for (const auto& r : drain(*src)) docs[r.sequence_id].push_back(r);
    int pairs = 0;
    const int chunk = 16;
    for (const auto& [id, qs] : docs) {
      for (std::size_t i = 0; i + 1 < qs.size(); ++i) {
        const Request &a = qs[i], &b = qs[i + 1];
        EXPECT_FALSE(a.extends_sequence);
        EXPECT_EQ(a.prefix_tokens, b.prefix_tokens) << "one document, one length";
        const auto ka = chunk_keys(a, chunk), kb = chunk_keys(b, chunk);
        const auto shared = static_cast<std::size_t>(a.prefix_tokens / chunk);
        ASSERT_GE(ka.size(), shared);
        ASSERT_GE(kb.size(), shared);
        EXPECT_TRUE(
            std::equal(ka.begin(), ka.begin() + static_cast<std::ptrdiff_t>(shared), kb.begin()));
        const std::set<std::uint64_t> qa(ka.begin() + static_cast<std::ptrdiff_t>(shared),
                                         ka.end());
        for (auto it = kb.begin() + static_cast<std::ptrdiff_t>(shared); it != kb.end(); ++it)
          EXPECT_EQ(qa.count(*it), 0u) << "question chunks are never shared";
        ++pairs;
      }
    }
    EXPECT_GT(pairs, 250) << workload_type_name(t);
    // Different documents share no chunk.
    auto it = docs.begin();
    const auto k1 = chunk_keys(it->second.front(), 256);
    const auto k2 = chunk_keys(std::next(it)->second.front(), 256);
    const std::set<std::uint64_t> s1(k1.begin(), k1.end());
    for (auto k : k2) EXPECT_EQ(s1.count(k), 0u);
  }
}

TEST(Workload, ZipfPopularityMakesDocumentsRecur) {
  WorkloadSpec s = spec_of(WorkloadType::NarrativeQa, 20000);
  s.narrativeqa.popularity = Popularity::Zipf;
  s.narrativeqa.zipf_s = 1.2;
  s.narrativeqa.questions_mean = 1;  // one question per session: counts follow popularity
  auto src = make_source(s, 8);
  std::map<std::uint64_t, int> count;
  for (const auto& r : drain(*src)) ++count[r.sequence_id];
  // Document 1 has weight 1, document 2 weight 2^-1.2 = 0.435, document 10 weight 10^-1.2.
  EXPECT_GT(count[1], count[2]);
  EXPECT_GT(count[2], count[10]);
  EXPECT_NEAR(static_cast<double>(count[2]) / count[1], std::pow(2.0, -1.2), 0.05);
  // Uniform over 1567 documents: the most popular document is nowhere near 20% of requests.
  auto uni = make_source(spec_of(WorkloadType::NarrativeQa, 20000), 8);
  std::map<std::uint64_t, int> ucount;
  for (const auto& r : drain(*uni)) ++ucount[r.sequence_id];
  EXPECT_GT(count[1], 1000);
  for (const auto& [id, c] : ucount) EXPECT_LT(c, 200) << "document " << id;
}

TEST(Workload, BoundedMemoryOverManyRequests) {
  // Active sessions ≈ session rate × session length (Little's law): for chat at 10 req/s,
  // ~2.2 conversations/s × ~4.5 turns × 30 s think time ≈ 300, whatever the request count.
  for (const auto& p : kPublished) {
    WorkloadSpec s = spec_of(p.type, 100000, 10);
    auto made = make_source(s, 2);
    auto* gen = dynamic_cast<SessionGenerator*>(made.get());
    ASSERT_NE(gen, nullptr);
    std::size_t max_first = 0, max_second = 0;
    Request r;
    for (int i = 0; i < 100000; ++i) {
      ASSERT_TRUE(gen->next(r));
      (i < 50000 ? max_first : max_second) =
          std::max(i < 50000 ? max_first : max_second, gen->state_size());
    }
    EXPECT_LT(max_second, 2000u) << workload_type_name(p.type);
    EXPECT_LE(max_second, 2 * max_first) << workload_type_name(p.type);
  }
}

TEST(Workload, WarmStartBeginsInSteadyState) {
  // Cold: the first requests are all first turns (no history). Warm: conversations already
  // under way at t = 0, so with 6 turns on average most early requests carry history.
  int with_history[2] = {0, 0};
  for (bool warm : {false, true}) {
    WorkloadSpec s = spec_of(WorkloadType::ShareGpt, 100);
    s.sharegpt.warm_start = warm;
    auto src = make_source(s, 1);
    const auto reqs = drain(*src);
    if (!warm) {
      EXPECT_EQ(reqs.front().prefix_tokens, 0);
    }
    for (const auto& r : reqs) {
      with_history[warm] += r.prefix_tokens > 0;
      EXPECT_GE(r.arrival_s, 0.0);
    }
  }
  // Steady state: 1 - 1/E[turns] ≈ 5/6 of requests carry history.
  EXPECT_GT(with_history[1], 65);
  EXPECT_LT(with_history[0], with_history[1] / 2);
}

// Issue 12, item 7: the warm-up is bounded by the requests asked for. ShareGPT defaults: think
// 60 s × 40 turns = 2400 s of warm-up; E[turns | <= 40] = 6 - 40 (5/6)^40 / (1 - (5/6)^40)
// ≈ 6 - 40 · 6.80e-4 = 5.9728. At 10 requests/s the session rate is 1.674/s: 2400 s starts ~4000
// sessions, under the cap of 1000 × 200, so the warm-up is whole. At 1e4/s the cap binds: 1000 ×
// 200 / (1e4 / 5.9728) ≈ 119.46 s.
TEST(Workload, WarmUpIsBoundedByTheRequestsAskedFor) {
  const double q40 = std::pow(5.0 / 6.0, 40);
  const double mean = 6 - 40 * q40 / (1 - q40);
  EXPECT_NEAR(truncated_geometric_mean(6, 40), mean, 1e-12);
  EXPECT_DOUBLE_EQ(bounded_warmup_s(200, 10, mean, 2400), 2400);
  EXPECT_NEAR(bounded_warmup_s(200, 1e4, mean, 2400), 1000 * 200 / (1e4 / mean), 1e-9);
  EXPECT_NEAR(bounded_warmup_s(200, 1e4, mean, 2400), 119.46, 0.01);
  // 200 requests at 1e5/s: generated, all at t >= 0, in arrival order, with history from the
  // sessions already under way.
  WorkloadSpec s = spec_of(WorkloadType::ShareGpt, 200);
  s.rate = 1e5;
  auto src = make_source(s, 1);
  const auto reqs = drain(*src);
  ASSERT_EQ(reqs.size(), 200u);
  int with_history = 0;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_GE(reqs[i].arrival_s, 0.0);
    if (i) {
      EXPECT_GE(reqs[i].arrival_s, reqs[i - 1].arrival_s);
    }
    with_history += reqs[i].prefix_tokens > 0;
  }
  // The cap (11.9 s of warm-up against 60 s think times) leaves fewer follow-up turns than the
  // steady state's 5/6, but sessions are under way at t = 0.
  EXPECT_GT(with_history, 0);
}

// Issue 24: a session's requests before t = 0 are run (and dropped) as the session starts instead
// of waiting in the queue with the others. The reference below is the generator's definition
// (generators.hpp) run literally: sessions start at the arrival process's times from
// -warm-up on, each with its streams derive_seed(seed, name[/aux], ordinal); every request waits
// in one queue ordered by (time, session ordinal); those before t = 0 are dropped. It calls the
// generator's own start / emit / think_time, so what is compared is the merge and the draws.
template <class G>
struct OpenGenerator : G {
  using G::G;
  using Session = typename G::Session;
  void start_(Session& s) { this->start(s); }
  bool emit_(Session& s, Request& r) { return this->emit(s, r); }
  double think_(Session& s) { return this->think_time(s); }
};

template <class G>
std::vector<Request> reference_stream(OpenGenerator<G>& g, const std::string& name, std::int64_t n,
                                      double rate, double per_session, double warmup_s,
                                      std::uint64_t seed) {
  using Session = typename OpenGenerator<G>::Session;
  ArrivalProcess arrivals(ArrivalKind::Poisson, rate / per_session, 1,
                          derive_seed(seed, name + "/arrivals"));
  double next_start = -bounded_warmup_s(n, rate, per_session, warmup_s) + arrivals.next_gap();
  const auto later = [](const Session& a, const Session& b) {
    return a.next_s != b.next_s ? a.next_s > b.next_s : a.ordinal > b.ordinal;
  };
  std::vector<Session> queue;  // a heap under `later`
  std::uint64_t ordinal = 0;
  std::vector<Request> out;
  while (static_cast<std::int64_t>(out.size()) < n) {
    while (queue.empty() || next_start < queue.front().next_s) {
      Session s;
      s.ordinal = ordinal++;
      s.rng = Rng(derive_seed(seed, name, s.ordinal));
      s.aux = Rng(derive_seed(seed, name + "/aux", s.ordinal));
      s.next_s = next_start;
      g.start_(s);
      queue.push_back(s);
      std::push_heap(queue.begin(), queue.end(), later);
      next_start += arrivals.next_gap();
    }
    std::pop_heap(queue.begin(), queue.end(), later);
    Session s = queue.back();
    queue.pop_back();
    Request r;
    r.arrival_s = s.next_s;
    const bool more = g.emit_(s, r);
    if (more && --s.remaining > 0) {
      s.next_s += g.think_(s);
      queue.push_back(s);
      std::push_heap(queue.begin(), queue.end(), later);
    }
    if (r.arrival_s < 0) continue;
    r.id = out.size() + 1;
    out.push_back(r);
  }
  return out;
}

void expect_same_requests(const std::vector<Request>& a, const std::vector<Request>& b,
                          const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(what + ", request " + std::to_string(i));
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);  // bit for bit
    EXPECT_EQ(a[i].sequence_id, b[i].sequence_id);
    EXPECT_EQ(a[i].prefix_tokens, b[i].prefix_tokens);
    EXPECT_EQ(a[i].new_tokens, b[i].new_tokens);
    EXPECT_EQ(a[i].output_tokens, b[i].output_tokens);
    EXPECT_EQ(a[i].extends_sequence, b[i].extends_sequence);
  }
}

// make_source keeps a short generated stream from its time-limit check and replays it (issue
// 24): the same requests as a fresh generator's, again with replay_again; a longer stream is
// generated again instead (nothing kept: replay_again has nothing to give).
TEST(Workload, AShortStreamIsReplayedAsItWasGenerated) {
  const auto fresh = [](const WorkloadSpec& s, std::uint64_t seed) {
    return drain(*make_source_again(s, seed));
  };
  for (const WorkloadType t : {WorkloadType::ShareGpt, WorkloadType::NarrativeQa}) {
    const WorkloadSpec s = spec_of(t, 300, 20);
    auto made = make_source(s, 3);
    auto again = replay_again(*made);
    ASSERT_NE(again, nullptr) << workload_type_name(t);
    EXPECT_EQ(made->describe(), make_source_again(s, 3)->describe());
    expect_same_requests(drain(*made), fresh(s, 3), workload_type_name(t) + " replayed");
    expect_same_requests(drain(*again), fresh(s, 3), workload_type_name(t) + " replayed again");
  }
  WorkloadSpec mix = spec_of(WorkloadType::ShareGpt, 300, 20);
  mix.type = WorkloadType::Mix;
  mix.mix = {{"sharegpt", 0.7}, {"narrativeqa", 0.3}};
  auto made = make_source(mix, 5);
  ASSERT_NE(replay_again(*made), nullptr);
  expect_same_requests(drain(*made), fresh(mix, 5), "mix replayed");

  const auto longer = static_cast<std::int64_t>(kReplayRequests) + 1;
  auto generated = make_source(spec_of(WorkloadType::ShareGpt, longer, 1000), 3);
  EXPECT_EQ(replay_again(*generated), nullptr);
  EXPECT_EQ(drain(*generated).size(), static_cast<std::size_t>(longer));
}

TEST(Workload, WarmUpRequestsRunAtTheirSessionsStartGiveTheQueuedStream) {
  for (const double rate : {0.5, 10.0, 300.0}) {
    const std::string r = " at " + std::to_string(rate) + "/s";
    // The default window, and one that ends most conversations early (in the warm-up too,
    // where ShareGptGenerator::ends_before_zero skips the turns' sizes).
    for (const std::int64_t window : {std::int64_t{0}, std::int64_t{3000}}) {
      ShareGptSpec shape;
      if (window > 0) shape.max_context_tokens = window;
      const double per = truncated_geometric_mean(shape.turns_mean, shape.turns_max);
      const double warm = shape.think_time_s * shape.turns_max;
      ShareGptGenerator g(shape, 400, rate, ArrivalKind::Poisson, 1, 7);
      OpenGenerator<ShareGptGenerator> ref(shape, 400, rate, ArrivalKind::Poisson, 1, 7);
      expect_same_requests(drain(g), reference_stream(ref, "sharegpt", 400, rate, per, warm, 7),
                           "sharegpt" + r + " window " + std::to_string(window));
    }
    for (const WorkloadType t : {WorkloadType::NarrativeQa, WorkloadType::DocFinQa}) {
      const std::string name = workload_type_name(t);
      WorkloadSpec spec = spec_of(t, 400, rate);
      DocQaSpec shape = t == WorkloadType::NarrativeQa ? static_cast<DocQaSpec>(spec.narrativeqa)
                                                       : static_cast<DocQaSpec>(spec.docfinqa);
      if (t == WorkloadType::NarrativeQa) shape.popularity = Popularity::Zipf;  // both samplers
      const double per = truncated_geometric_mean(shape.questions_mean, shape.questions_max);
      const double warm = shape.think_time_s * shape.questions_max;
      DocQaGenerator g(name, shape, 400, rate, ArrivalKind::Poisson, 1, 7);
      OpenGenerator<DocQaGenerator> ref(name, shape, 400, rate, ArrivalKind::Poisson, 1, 7);
      expect_same_requests(drain(g), reference_stream(ref, name, 400, rate, per, warm, 7),
                           name + r);
    }
  }
}

// Rates and gamma cvs the time base cannot represent are rejected (docs/bad-inputs.md).
TEST(Workload, ArrivalLimits) {
  EXPECT_THROW(ArrivalProcess(ArrivalKind::Poisson, 1e300, 1, 1), InputError);
  EXPECT_NO_THROW(ArrivalProcess(ArrivalKind::Poisson, 1e9, 1, 1));
  EXPECT_THROW(ArrivalProcess(ArrivalKind::Gamma, 10, 1e6, 1), InputError);
  EXPECT_THROW(ArrivalProcess(ArrivalKind::Gamma, 10, 10.5, 1), InputError);
  EXPECT_NO_THROW(ArrivalProcess(ArrivalKind::Gamma, 10, 10, 1));
}

TEST(Workload, ChatEndsBeforeTheContextWindowIsFull) {
  WorkloadSpec s = spec_of(WorkloadType::ShareGpt, 5000);
  s.sharegpt.max_context_tokens = 2000;
  auto src = make_source(s, 1);
  for (const auto& r : drain(*src)) EXPECT_LE(r.prompt_tokens(), 2000);
}

TEST(Workload, DocumentLengthIsAFunctionOfTheDocument) {
  DocQaGenerator g("narrativeqa", NarrativeQaSpec{}, 10, 1, ArrivalKind::Poisson, 1, 3);
  DocQaGenerator h("narrativeqa", NarrativeQaSpec{}, 10, 1, ArrivalKind::Poisson, 1, 3);
  std::vector<double> len;
  for (std::uint64_t d = 0; d < 1567; ++d) {
    EXPECT_EQ(g.document_tokens(d), h.document_tokens(d));
    len.push_back(static_cast<double>(g.document_tokens(d)));
  }
  // Mean of the lognormal: median · exp(σ²/2) = 45940 · e^0.18 ≈ 55,000 (reference-data.md).
  double sum = 0;
  for (double l : len) sum += l;
  EXPECT_NEAR(sum / len.size(), 55000, 0.05 * 55000);
}

// ---- mix -------------------------------------------------------------------------------------

WorkloadSpec mix_of(std::map<std::string, double> weights, std::int64_t requests,
                    double rate = 10) {
  WorkloadSpec s = spec_of(WorkloadType::Mix, requests, rate);
  s.mix = std::move(weights);
  return s;
}

std::map<std::string, std::int64_t> count_by_workload(const std::vector<Request>& rs) {
  std::map<std::string, std::int64_t> n;
  for (const auto& r : rs) ++n[r.workload];
  return n;
}

TEST(WorkloadMix, SplitsRequestsByCumulativeRounding) {
  // n_k = round(N·S_k) - round(N·S_(k-1)) in the order sharegpt, narrativeqa, docfinqa.
  // 0.5/0.5 of 101: round(50.5) = 51, then 101 - 51 = 50.
  auto odd = make_source(mix_of({{"sharegpt", 0.5}, {"narrativeqa", 0.5}}, 101), 1);
  auto n = count_by_workload(drain(*odd));
  EXPECT_EQ(n["sharegpt"], 51);
  EXPECT_EQ(n["narrativeqa"], 50);
  EXPECT_EQ(n.count("docfinqa"), 0u);
  auto even = make_source(mix_of({{"sharegpt", 0.5}, {"narrativeqa", 0.5}}, 100), 1);
  n = count_by_workload(drain(*even));
  EXPECT_EQ(n["sharegpt"], 50);
  EXPECT_EQ(n["narrativeqa"], 50);
  // Weights need not sum to 1: 1/1 is 0.5/0.5.
  auto same = make_source(mix_of({{"sharegpt", 1}, {"narrativeqa", 1}}, 101), 1);
  n = count_by_workload(drain(*same));
  EXPECT_EQ(n["sharegpt"], 51);
  EXPECT_EQ(n["narrativeqa"], 50);

  struct Case {
    std::map<std::string, double> w;
    std::int64_t n;
    std::vector<std::int64_t> expect;  // sharegpt, narrativeqa, docfinqa (positive weights only)
  };
  const Case cases[] = {
      {{{"sharegpt", 0.7}, {"narrativeqa", 0.3}}, 10, {7, 3}},
      // 100·0.75 computes as 75 - 1 ulp here: rounding to nearest keeps it 75 (floor: 74).
      {{{"sharegpt", 0.3}, {"narrativeqa", 0.1}}, 100, {75, 25}},
      {{{"sharegpt", 0.5}, {"narrativeqa", 0.3}, {"docfinqa", 0.2}}, 1000, {500, 300, 200}},
      // S = 0.5, 0.8, 1 of 7: round(3.5) = 4, round(5.6) = 6, 7 => 4, 2, 1.
      {{{"sharegpt", 0.5}, {"narrativeqa", 0.3}, {"docfinqa", 0.2}}, 7, {4, 2, 1}},
      // 2/3 of 1 rounds to 1: the second component gets nothing and is not run.
      {{{"narrativeqa", 2}, {"docfinqa", 1}}, 1, {1, 0}},
      // A zero weight is no component at all.
      {{{"sharegpt", 0}, {"docfinqa", 3}}, 5, {5}},
  };
  for (const Case& c : cases) {
    const auto comps = mix_components(mix_of(c.w, c.n, 20), 1);
    ASSERT_EQ(comps.size(), c.expect.size());
    std::int64_t total = 0;
    double wsum = 0;
    for (std::size_t i = 0; i < comps.size(); ++i) {
      EXPECT_EQ(comps[i].requests, c.expect[i]) << comps[i].name << " of " << c.n;
      EXPECT_DOUBLE_EQ(comps[i].rate, 20 * comps[i].weight);
      total += comps[i].requests;
      wsum += comps[i].weight;
    }
    EXPECT_EQ(total, c.n);
    EXPECT_NEAR(wsum, 1.0, 1e-12);
  }
  const auto c3 =
      mix_components(mix_of({{"sharegpt", 0.5}, {"narrativeqa", 0.3}, {"docfinqa", 0.2}}, 10), 4);
  EXPECT_DOUBLE_EQ(c3[0].rate, 5);
  EXPECT_DOUBLE_EQ(c3[1].rate, 3);
  EXPECT_DOUBLE_EQ(c3[2].rate, 2);
  EXPECT_EQ(c3[1].seed, derive_seed(4, "mix/narrativeqa"));
  EXPECT_EQ(c3[2].tag, 3u);
}

TEST(WorkloadMix, MergedInArrivalOrderWithGlobalIds) {
  for (auto kind : {ArrivalKind::Poisson, ArrivalKind::Gamma}) {
    WorkloadSpec s = mix_of({{"sharegpt", 0.5}, {"narrativeqa", 0.3}, {"docfinqa", 0.2}}, 5000, 30);
    s.arrival = kind;
    s.cv = 2;
    auto src = make_source(s, 3);
    const auto reqs = drain(*src);
    ASSERT_EQ(reqs.size(), 5000u);
    Request extra;
    EXPECT_FALSE(src->next(extra));
    std::map<std::string, double> last_of;
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(reqs[i].id, i + 1);  // unique and increasing: 1, 2, 3, ...
      if (i > 0) {
        ASSERT_GE(reqs[i].arrival_s, reqs[i - 1].arrival_s) << "request " << reqs[i].id;
      }
      EXPECT_GE(reqs[i].new_tokens, 1);
      last_of[reqs[i].workload] = reqs[i].arrival_s;
    }
    EXPECT_EQ(last_of.size(), 3u);  // every component is present
    EXPECT_TRUE(has(src->describe(), "narrativeqa"));
  }
}

TEST(WorkloadMix, ComponentIsTheSingleTypeGeneratorWithTheDerivedSeed) {
  // Mix seed 7; a component is the single-type generator at rate R·p with n_k requests and seed
  // derive_seed(7, "mix/<name>"); only its sequence ids carry the tag (1 sharegpt, 2
  // narrativeqa, 3 docfinqa) in their top byte.
  const std::uint64_t seed = 7;
  {
    WorkloadSpec mix = mix_of({{"sharegpt", 1}, {"narrativeqa", 0}, {"docfinqa", 0}}, 800, 10);
    WorkloadSpec single = spec_of(WorkloadType::ShareGpt, 800, 10);
    auto m = make_source(mix, seed);
    auto g = make_source(single, derive_seed(seed, "mix/sharegpt"));
    const auto rm = drain(*m), rg = drain(*g);
    ASSERT_EQ(rm.size(), 800u);
    ASSERT_EQ(rg.size(), 800u);
    for (std::size_t i = 0; i < rm.size(); ++i) {
      EXPECT_EQ(rm[i].id, rg[i].id);
      EXPECT_EQ(rm[i].arrival_s, rg[i].arrival_s);
      EXPECT_EQ(rm[i].prefix_tokens, rg[i].prefix_tokens);
      EXPECT_EQ(rm[i].new_tokens, rg[i].new_tokens);
      EXPECT_EQ(rm[i].extends_sequence, rg[i].extends_sequence);
      EXPECT_EQ(rm[i].workload, "sharegpt");
      EXPECT_EQ(rm[i].sequence_id, (std::uint64_t{1} << 56) | rg[i].sequence_id);
    }
  }
  {
    // Half and half: the narrativeqa half is the generator at 6 req/s with 300 requests.
    WorkloadSpec mix = mix_of({{"sharegpt", 0.5}, {"narrativeqa", 0.5}}, 600, 12);
    mix.narrativeqa.popularity = Popularity::Zipf;  // shapes come from the workload's sub-objects
    WorkloadSpec single = spec_of(WorkloadType::NarrativeQa, 300, 6);
    single.narrativeqa = mix.narrativeqa;
    auto m = make_source(mix, seed);
    auto g = make_source(single, derive_seed(seed, "mix/narrativeqa"));
    std::vector<Request> part;
    for (const auto& r : drain(*m))
      if (r.workload == "narrativeqa") part.push_back(r);
    const auto rg = drain(*g);
    ASSERT_EQ(part.size(), 300u);
    ASSERT_EQ(rg.size(), 300u);
    for (std::size_t i = 0; i < part.size(); ++i) {
      EXPECT_EQ(part[i].arrival_s, rg[i].arrival_s);
      EXPECT_EQ(part[i].prefix_tokens, rg[i].prefix_tokens);
      EXPECT_EQ(part[i].new_tokens, rg[i].new_tokens);
      EXPECT_EQ(part[i].sequence_id, (std::uint64_t{2} << 56) | rg[i].sequence_id);
    }
  }
}

TEST(WorkloadMix, SequenceIdsOfComponentsNeverCollide) {
  WorkloadSpec s = mix_of({{"sharegpt", 1}, {"narrativeqa", 1}, {"docfinqa", 1}}, 6000, 20);
  // Small catalogues and cold chat starts make the local numbers overlap: documents 1..5 and
  // conversations 1, 2, 3, ... all exist in every component.
  s.narrativeqa.documents = 5;
  s.docfinqa.documents = 5;
  s.sharegpt.warm_start = false;
  auto src = make_source(s, 2);
  std::map<std::string, std::set<std::uint64_t>> ids, locals;
  std::map<std::string, std::set<std::uint64_t>> keys;
  for (const auto& r : drain(*src)) {
    ids[r.workload].insert(r.sequence_id);
    locals[r.workload].insert(mix_local_sequence_id(r.sequence_id));
    const std::uint64_t tag = r.workload == "sharegpt" ? 1 : r.workload == "narrativeqa" ? 2 : 3;
    EXPECT_EQ(mix_sequence_tag(r.sequence_id), tag) << r.workload;
    for (auto k : chunk_keys(r, 256)) keys[r.workload].insert(k);
  }
  ASSERT_EQ(ids.size(), 3u);
  // The same local numbers occur in every component...
  for (std::uint64_t d = 1; d <= 5; ++d) {
    EXPECT_EQ(locals["narrativeqa"].count(d), 1u);
    EXPECT_EQ(locals["docfinqa"].count(d), 1u);
    EXPECT_EQ(locals["sharegpt"].count(d), 1u);
  }
  // ...but the sequence ids and the chunk keys are disjoint between components.
  for (const char* a : {"sharegpt", "narrativeqa", "docfinqa"})
    for (const char* b : {"sharegpt", "narrativeqa", "docfinqa"}) {
      if (std::string(a) >= b) continue;
      for (auto id : ids[a]) EXPECT_EQ(ids[b].count(id), 0u) << a << " / " << b;
      std::size_t common = 0;
      for (auto k : keys[a]) common += keys[b].count(k);
      EXPECT_EQ(common, 0u) << a << " / " << b;
    }
}

TEST(WorkloadMix, BadWeightsAreInputErrorsNamingTheKey) {
  auto read = [](const std::string& text) {
    return read_config<WorkloadSpec>(parse_yaml(text, "w.yaml"), "workload");
  };
  std::string msg = error_of([&] { read("type: mix\nmix: {sharegpt: 1, narrativeqa: -0.5}\n"); });
  EXPECT_TRUE(has(msg, "workload.mix.narrativeqa")) << msg;
  EXPECT_TRUE(has(msg, "w.yaml:2")) << msg;
  msg = error_of([&] { read("type: mix\nmix: {sharegpt: 0, docfinqa: 0}\n"); });
  EXPECT_TRUE(has(msg, "workload.mix")) << msg;
  EXPECT_TRUE(has(msg, "at least one weight > 0")) << msg;
  msg = error_of([&] { read("type: mix\n"); });
  EXPECT_TRUE(has(msg, "workload.mix")) << msg;
  msg = error_of([&] { read("type: mix\nmix: {sharegpt: 1, trace: 1}\n"); });
  EXPECT_TRUE(has(msg, "'trace'")) << msg;
  EXPECT_TRUE(has(msg, "workload.mix")) << msg;
  msg = error_of([&] { read("type: mix\nmix: {sharegtp: 1}\n"); });
  EXPECT_TRUE(has(msg, "did you mean 'sharegpt'")) << msg;
  msg = error_of([&] { read("type: mix\nmix: {sharegpt: 1 GB}\n"); });
  EXPECT_TRUE(has(msg, "workload.mix.sharegpt")) << msg;
  msg = error_of([&] { read("type: mix\nmix: [sharegpt]\n"); });
  EXPECT_TRUE(has(msg, "workload.mix")) << msg;
  // A spec built in code is checked when the source is made.
  msg = error_of([] { make_source(mix_of({{"trace", 1}}, 10), 1); });
  EXPECT_TRUE(has(msg, "workload.mix.trace")) << msg;
  msg = error_of([] { make_source(mix_of({{"sharegpt", 1}, {"docfinqa", -1}}, 10), 1); });
  EXPECT_TRUE(has(msg, "workload.mix.docfinqa")) << msg;
  msg = error_of([] { make_source(mix_of({{"sharegpt", 1}, {"docfinqa", std::nan("")}}, 10), 1); });
  EXPECT_TRUE(has(msg, "workload.mix.docfinqa")) << msg;
  msg = error_of([] { make_source(mix_of({}, 10), 1); });
  EXPECT_TRUE(has(msg, "workload.mix")) << msg;
  msg = error_of([] { make_source(mix_of({{"sharegpt", 1}}, 10, 0), 1); });
  EXPECT_TRUE(has(msg, "workload.rate")) << msg;
  // Weights of a type other than mix are still range-checked, but otherwise unused.
  EXPECT_TRUE(has(error_of([&] { read("mix: {docfinqa: -1}\n"); }), "workload.mix.docfinqa"));
  EXPECT_NO_THROW(read("type: sharegpt\nmix: {docfinqa: 0}\n"));
}

TEST(WorkloadMix, ReadsFromYamlAndRoundTrips) {
  const auto s = read_config<WorkloadSpec>(
      parse_yaml("type: mix\nrequests: 50\nrate: 4\nmix: {sharegpt: 0.7, narrativeqa: 0.3}\n"
                 "sharegpt: {turns_mean: 3}\n",
                 "w.yaml"),
      "workload");
  EXPECT_EQ(s.type, WorkloadType::Mix);
  ASSERT_EQ(s.mix.size(), 2u);
  EXPECT_DOUBLE_EQ(s.mix.at("sharegpt"), 0.7);
  EXPECT_DOUBLE_EQ(s.mix.at("narrativeqa"), 0.3);
  const auto back = read_config<WorkloadSpec>(write_config(s, "workload"), "workload");
  EXPECT_EQ(back.type, WorkloadType::Mix);
  EXPECT_EQ(back.mix, s.mix);
  EXPECT_DOUBLE_EQ(back.sharegpt.turns_mean, 3);
  // A single type dumps an empty mix that reads back.
  const auto plain =
      read_config<WorkloadSpec>(write_config(WorkloadSpec{}, "workload"), "workload");
  EXPECT_TRUE(plain.mix.empty());
}

TEST(WorkloadMix, SameSeedSameStream) {
  const WorkloadSpec s = mix_of({{"sharegpt", 0.6}, {"docfinqa", 0.4}}, 1000);
  auto a = make_source(s, 11), b = make_source(s, 11), c = make_source(s, 12);
  const auto ra = drain(*a), rb = drain(*b), rc = drain(*c);
  ASSERT_EQ(ra.size(), rb.size());
  int differ = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].id, rb[i].id);
    EXPECT_EQ(ra[i].arrival_s, rb[i].arrival_s);
    EXPECT_EQ(ra[i].workload, rb[i].workload);
    EXPECT_EQ(ra[i].sequence_id, rb[i].sequence_id);
    EXPECT_EQ(ra[i].prefix_tokens, rb[i].prefix_tokens);
    EXPECT_EQ(ra[i].new_tokens, rb[i].new_tokens);
    differ += ra[i].arrival_s != rc[i].arrival_s || ra[i].new_tokens != rc[i].new_tokens;
  }
  EXPECT_GT(differ, 500);
}

TEST(WorkloadMix, RateIsTheSumAndMemoryStaysBounded) {
  // Components at 0.7·50 and 0.3·50 req/s superpose to 50 req/s: count the arrivals between
  // a quarter and three quarters of the run (clear of the start and of the tail, where one
  // component has finished). Memory: active sessions of the components (each bounded as a
  // single generator is) plus one look-ahead request each, whatever the request count.
  WorkloadSpec s = mix_of({{"sharegpt", 0.7}, {"narrativeqa", 0.3}}, 200000, 50);
  MixSource src(s, 5);
  std::vector<double> t;
  std::size_t max_first = 0, max_second = 0;
  Request r;
  while (src.next(r)) {
    t.push_back(r.arrival_s);
    auto& m = t.size() <= 100000 ? max_first : max_second;
    m = std::max(m, src.state_size());
  }
  ASSERT_EQ(t.size(), 200000u);
  const double from = t.back() / 4, to = 3 * t.back() / 4;
  const auto in = std::count_if(t.begin(), t.end(), [&](double a) { return a > from && a <= to; });
  EXPECT_NEAR(static_cast<double>(in) / (to - from), 50.0, 0.03 * 50.0);
  EXPECT_LT(max_second, 10000u);
  EXPECT_LE(max_second, 2 * max_first);
}

// ---- config ----------------------------------------------------------------------------------

TEST(Workload, ReadsSpecFromYaml) {
  const ConfigNode n = parse_yaml(
      "type: docfinqa\nrequests: 77\nrate: 2.5\narrival: gamma\ncv: 3\nseed: 12\n"
      "docfinqa:\n  popularity: zipf\n  zipf_s: 0.9\n  think_time: 2 min\n"
      "trace: {path: t.jsonl, format: mooncake, time_scale: 0.5, limit: 10}\n",
      "w.yaml");
  const auto s = read_config<WorkloadSpec>(n, "workload");
  EXPECT_EQ(s.type, WorkloadType::DocFinQa);
  EXPECT_EQ(s.requests, 77);
  EXPECT_DOUBLE_EQ(s.rate, 2.5);
  EXPECT_EQ(s.arrival, ArrivalKind::Gamma);
  EXPECT_DOUBLE_EQ(s.cv, 3);
  EXPECT_EQ(s.seed, 12);
  EXPECT_EQ(s.docfinqa.popularity, Popularity::Zipf);
  EXPECT_DOUBLE_EQ(s.docfinqa.zipf_s, 0.9);
  EXPECT_DOUBLE_EQ(s.docfinqa.think_time_s, 120);
  // Keys not given keep the DocFinQA defaults, not the generic document-QA ones.
  EXPECT_DOUBLE_EQ(s.docfinqa.document_tokens_median, DocFinQaSpec{}.document_tokens_median);
  EXPECT_EQ(s.docfinqa.documents, DocFinQaSpec{}.documents);
  EXPECT_EQ(s.trace.format, TraceFormat::Mooncake);
  EXPECT_EQ(s.trace.limit, 10);
  // Round trip through the writer.
  const auto back = read_config<WorkloadSpec>(write_config(s, "workload"), "workload");
  EXPECT_DOUBLE_EQ(back.docfinqa.think_time_s, 120);
  EXPECT_EQ(back.trace.path, "t.jsonl");
}

TEST(Workload, ConfigErrorsNameTheKey) {
  auto read = [](const std::string& text) {
    return read_config<WorkloadSpec>(parse_yaml(text, "w.yaml"), "workload");
  };
  EXPECT_TRUE(has(error_of([&] { read("type: sharegtp\n"); }), "did you mean \"sharegpt\""));
  EXPECT_TRUE(has(error_of([&] { read("type: trace\n"); }), "workload.trace.path"));
  EXPECT_TRUE(has(error_of([&] { read("narrativeqa: {zipf: 1}\n"); }), "zipf_s"));
  EXPECT_TRUE(has(error_of([&] { read("sharegpt: {turns_mean: 50, turns_max: 10}\n"); }),
                  "workload.sharegpt.turns_mean"));
  EXPECT_TRUE(has(error_of([&] { read("requests: 0\n"); }), "workload.requests"));
  EXPECT_TRUE(
      has(error_of([&] { read("trace: {time_scale: 0}\n"); }), "workload.trace.time_scale"));
}

}  // namespace
}  // namespace workload_test
}  // namespace kappasim
