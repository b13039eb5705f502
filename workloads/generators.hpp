// Synthetic workload generators (WorkloadSource implementations): ShareGPT-like chat,
// NarrativeQA-like and DocFinQA-like document QA. Shapes and defaults: workload_spec.hpp and
// docs/workloads.md.
//
// All three are session generators. Sessions (a conversation, a visit to one document) start at
// the times of an ArrivalProcess whose rate is `rate / E[requests per session]`, so the long-run
// request rate is `rate`; a session's requests follow one another think-time apart. Generation is
// lazy: only sessions still active are kept (a priority queue ordered by their next request's
// time), so memory is bounded by the sessions in flight, never by how many requests were made.
// Requests come out in non-decreasing arrival order with ids 1, 2, 3, ...; each session draws
// from its own random stream (derive_seed(seed, kind, session index)), so the output is a pure
// function of the spec and the seed.
//
// Warm start (the default): sessions start from -(think_time × most requests per session) on and
// requests before t = 0 are not emitted, so the first requests already include later chat turns
// and repeat questions in their steady-state share. Without it (warm_start: false) the first
// minutes hold mostly first turns, and the median κ_ratio of a short run falls below the steady
// one. Either way the KV tier starts empty: a warm-started session's earlier prompts were never
// seen by it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "core/random.hpp"
#include "workloads/arrivals.hpp"
#include "workloads/request.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {

// Mean of a geometric distribution on {1, 2, ...} with untruncated mean `mean`, truncated to
// at most `max` (what a session's request count averages).
double truncated_geometric_mean(double mean, std::int64_t max);

// The warm-up is cut so that at most kWarmupSessionsPerRequest × requests sessions start before
// t = 0 (in expectation), so generation costs O(requests) whatever the rate and think time
// (issue 12, item 7). Default configs start far fewer (ShareGPT at 10 requests/s: about 20 per
// request) and are unaffected; a run of few requests at a very high rate starts with the
// conversations of the last 1000 × requests session starts only (docs/bad-inputs.md).
inline constexpr double kWarmupSessionsPerRequest = 1000;
// min(warmup_s, kWarmupSessionsPerRequest × requests / (rate / mean_per_session)).
double bounded_warmup_s(std::int64_t requests, double rate, double mean_per_session,
                        double warmup_s);

class SessionGenerator : public WorkloadSource {
 public:
  bool next(Request& out) override;
  // Sessions held in memory (active conversations / document visits): bounded by the rate
  // times a session's length, not by the requests produced.
  std::size_t state_size() const { return m_active.size(); }
  // Long-run session arrival rate (per second).
  double session_rate() const { return m_arrivals.rate(); }

 protected:
  struct Session {
    double next_s = 0;          // arrival time of its next request
    std::uint64_t ordinal = 0;  // 0, 1, 2, ... in start order (breaks time ties)
    Rng rng;
    std::int64_t remaining = 0;  // requests still to come, including the next one
    std::uint64_t sequence_id = 0;
    std::int64_t context = 0;  // chat: history tokens; document QA: document tokens
    std::int64_t pending = 0;  // chat: the next user message's tokens
    Rng aux;  // its own second stream (document QA: answer lengths), so adding draws to it
              // leaves the first stream's prompts unchanged
  };

  // `mean_per_session`: expected requests per session (sets the session rate). Sessions start
  // from -warmup_s on and requests before t = 0 are dropped, so at t = 0 the mix of sessions in
  // progress is already the steady one (0: a cold start, every session begins at t >= 0).
  // The warm-up actually used is bounded_warmup_s(...) (below).
  SessionGenerator(std::string name, std::int64_t requests, double rate, double mean_per_session,
                   ArrivalKind arrival, double cv, std::uint64_t seed, double warmup_s);

  // Fills a new session (remaining >= 1, sequence_id, context, pending).
  virtual void start(Session& s) = 0;
  // Fills r.prefix_tokens / new_tokens / sequence_id / extends_sequence for the session's next
  // request and advances it; returns false when the session ends early.
  virtual bool emit(Session& s, Request& r) = 0;
  // What emit() does to the session for a request that is dropped (one before t = 0): the same
  // draws from its streams and the same return value. By default emit() into a scratch request;
  // a generator whose emit() draws a fixed number of words and whose return value does not
  // depend on them may only advance the streams.
  virtual bool skip(Session& s) {
    Request r;
    return emit(s, r);
  }
  virtual double think_time(Session& s) = 0;
  // A bound for the warm-up (issue 24): true when the session, a copy of one just started
  // before t = 0, certainly ends before t = 0 whatever the sizes of its dropped requests, found
  // without computing them. Then run_to_zero() drops it without running them: the same result,
  // since a dropped session changes nothing else. By default false (no bound).
  virtual bool ends_before_zero(Session s) {
    (void)s;
    return false;
  }

  std::uint64_t seed() const { return m_seed; }
  const std::string& name() const { return m_name; }

  // Draws max(1, round(lognormal)) clamped to [1, max]: Rng::kLognormalWords words of `rng`.
  static std::int64_t draw_tokens(Rng& rng, double median, double sigma, std::int64_t max);
  // Geometric count on {1..max} with untruncated mean `mean` (rejection).
  static std::int64_t draw_count(Rng& rng, double mean, std::int64_t max);

 private:
  struct Later {
    bool operator()(const Session& a, const Session& b) const {
      return a.next_s != b.next_s ? a.next_s > b.next_s : a.ordinal > b.ordinal;
    }
  };
  // A new session's requests before t = 0 (the warm-up; dropped), run at its start: its draws
  // are its own streams', so running them here instead of in time order with the other sessions
  // leaves every draw as it was. False when the session ended before t = 0.
  bool run_to_zero(Session& s);
  std::string m_name;
  InternedName m_label;  // Request::workload: m_name, interned
  std::int64_t m_requests;
  std::int64_t m_produced = 0;
  std::uint64_t m_seed;
  // derive_seed(seed, name) and derive_seed(seed, name + "/aux"): a session's two streams are
  // derive_seed(these, ordinal) (= derive_seed(seed, label, ordinal)).
  std::uint64_t m_stream_seed, m_aux_seed;
  ArrivalProcess m_arrivals;
  double m_next_start;
  std::uint64_t m_sessions = 0;
  std::priority_queue<Session, std::vector<Session>, Later> m_active;
};

class ShareGptGenerator : public SessionGenerator {
 public:
  ShareGptGenerator(const ShareGptSpec& shape, std::int64_t requests, double rate,
                    ArrivalKind arrival, double cv, std::uint64_t seed);
  std::string describe() const override;

 protected:
  void start(Session& s) override;
  bool emit(Session& s, Request& r) override;
  double think_time(Session& s) override;
  // The conversation's turns before t = 0 with emit()'s draws skipped (two draw_tokens,
  // 2 × Rng::kLognormalWords words): its think times are drawn as they would be. A full window
  // can only end it sooner, so running out of turns before t = 0 this way ends it there too.
  bool ends_before_zero(Session s) override;

 private:
  ShareGptSpec m_shape;
};

class DocQaGenerator : public SessionGenerator {
 public:
  // `name`: "narrativeqa" or "docfinqa" (the Request::workload label and the stream label).
  DocQaGenerator(std::string name, const DocQaSpec& shape, std::int64_t requests, double rate,
                 ArrivalKind arrival, double cv, std::uint64_t seed);
  std::string describe() const override;
  // Tokens of document `index` (0-based): a fixed function of the seed and the index.
  std::int64_t document_tokens(std::uint64_t index) const;

 protected:
  void start(Session& s) override;
  bool emit(Session& s, Request& r) override;
  // emit()'s draws without their values: Rng::kLognormalWords words of each stream; true.
  bool skip(Session& s) override;
  double think_time(Session& s) override;

 private:
  // document_tokens(index), computed once per document (up to kCachedDocuments of them).
  std::int64_t cached_document_tokens(std::uint64_t index);
  static constexpr std::uint64_t kCachedDocuments = 1 << 16;
  DocQaSpec m_shape;
  std::optional<ZipfTable> m_zipf;
  std::vector<std::int64_t> m_document_tokens;  // 0: not computed yet (a document has >= 1)
};

// The generator of a synthetic `type` (sharegpt, narrativeqa, docfinqa) with the shape of
// spec's sub-object for it and the given request count, rate and seed (arrival and cv from
// spec). make_source uses it with spec.requests and spec.rate; a mix with its components'.
std::unique_ptr<SessionGenerator> make_generator(WorkloadType type, const WorkloadSpec& spec,
                                                 std::int64_t requests, double rate,
                                                 std::uint64_t seed);

}  // namespace kappasim
