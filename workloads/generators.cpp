#include "workloads/generators.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/error.hpp"
#include "core/units.hpp"

namespace kappasim {

double truncated_geometric_mean(double mean, std::int64_t max) {
  if (mean <= 1 || max <= 1) return 1;
  const double q = 1.0 - 1.0 / mean;
  const double qm = std::pow(q, static_cast<double>(max));
  // E[N | N <= max] for P(N = n) = p q^(n-1): 1/p - max q^max / (1 - q^max).
  return mean - static_cast<double>(max) * qm / (1.0 - qm);
}

namespace {
// The configured request rate, checked before it is divided into a session rate.
double checked_rate(double rate) {
  if (!(rate > 0) || !std::isfinite(rate))
    throw InputError(
        "workload.rate: the request rate must be a finite number > 0 requests per "
        "second, got " +
        format_number(rate));
  if (rate > kMaxArrivalRate)  // checked here too, so the message gives the rate as configured
    throw InputError(
        "workload.rate: the request rate must be at most " + format_number(kMaxArrivalRate) +
        " per second (a mean gap of 1 ns, 1000 ticks of the simulator's 1 ps time base), got " +
        format_number(rate));
  return rate;
}
}  // namespace

SessionGenerator::SessionGenerator(std::string name, std::int64_t requests, double rate,
                                   double mean_per_session, ArrivalKind arrival, double cv,
                                   std::uint64_t seed, double warmup_s)
    : m_name(std::move(name)),
      m_label(m_name),
      m_requests(requests),
      m_seed(seed),
      m_stream_seed(derive_seed(seed, m_name)),
      m_aux_seed(derive_seed(seed, m_name + "/aux")),
      m_arrivals(arrival, checked_rate(rate) / mean_per_session, cv,
                 derive_seed(seed, m_name + "/arrivals"), "workload.rate"),
      m_next_start(-bounded_warmup_s(requests, rate, mean_per_session, warmup_s)) {
  m_next_start += m_arrivals.next_gap();
}

double bounded_warmup_s(std::int64_t requests, double rate, double mean_per_session,
                        double warmup_s) {
  const double session_rate = checked_rate(rate) / std::max(mean_per_session, 1.0);
  const double cap = kWarmupSessionsPerRequest *
                     static_cast<double>(std::max<std::int64_t>(requests, 1)) / session_rate;
  return std::min(warmup_s, cap);
}

std::int64_t SessionGenerator::draw_tokens(Rng& rng, double median, double sigma,
                                           std::int64_t max) {
  const double x = std::round(rng.lognormal(median, sigma));
  if (!(x >= 1)) return 1;
  if (x >= static_cast<double>(max)) return max;
  return static_cast<std::int64_t>(x);
}

std::int64_t SessionGenerator::draw_count(Rng& rng, double mean, std::int64_t max) {
  if (mean <= 1 || max <= 1) return 1;
  for (;;) {
    const std::int64_t n = rng.geometric(1.0 / mean);
    if (n <= max) return n;
  }
}

bool SessionGenerator::run_to_zero(Session& s) {
  if (s.next_s < 0 && ends_before_zero(s)) return false;
  while (s.next_s < 0) {
    if (!skip(s) || --s.remaining <= 0) return false;
    s.next_s += think_time(s);
  }
  return true;
}

bool SessionGenerator::next(Request& out) {
  if (m_produced >= m_requests) return false;
  for (;;) {
    // Start every session that begins before the earliest pending request (an active session
    // wins a tie: it started earlier). A session's requests before t = 0 are run (and dropped)
    // as it starts, so only requests at t >= 0 wait in the queue (issue 24: the warm-up's
    // requests are most of a short run's at a high rate); the queue's order, (time, ordinal),
    // and every session's draws are what they would be if they waited there too.
    while (m_active.empty() || m_next_start < m_active.top().next_s) {
      Session s;
      s.ordinal = m_sessions++;
      s.rng = Rng(derive_seed(m_stream_seed, s.ordinal));
      s.aux = Rng(derive_seed(m_aux_seed, s.ordinal));
      s.next_s = m_next_start;
      start(s);
      if (run_to_zero(s)) m_active.push(s);
      m_next_start += m_arrivals.next_gap();
    }
    Session s = m_active.top();
    m_active.pop();
    Request r;
    r.arrival_s = s.next_s;
    r.output_tokens = 1;
    r.workload = m_label;
    const bool more = emit(s, r);
    if (more && --s.remaining > 0) {
      s.next_s += think_time(s);
      m_active.push(s);
    }
    r.id = static_cast<std::uint64_t>(++m_produced);
    out = std::move(r);
    return true;
  }
}

// ---- ShareGPT-like chat ----------------------------------------------------------------------

ShareGptGenerator::ShareGptGenerator(const ShareGptSpec& shape, std::int64_t requests, double rate,
                                     ArrivalKind arrival, double cv, std::uint64_t seed)
    : SessionGenerator("sharegpt", requests, rate,
                       truncated_geometric_mean(shape.turns_mean, shape.turns_max), arrival, cv,
                       seed, shape.warm_start ? shape.think_time_s * shape.turns_max : 0.0),
      m_shape(shape) {}

void ShareGptGenerator::start(Session& s) {
  s.remaining = draw_count(s.rng, m_shape.turns_mean, m_shape.turns_max);
  s.sequence_id = s.ordinal + 1;  // conversation number
  s.context = 0;
  s.pending = draw_tokens(s.rng, m_shape.user_tokens_median, m_shape.user_tokens_sigma,
                          std::min(m_shape.max_context_tokens, kMaxTokens));
}

bool ShareGptGenerator::emit(Session& s, Request& r) {
  r.sequence_id = s.sequence_id;
  r.extends_sequence = true;
  r.prefix_tokens = s.context;
  r.new_tokens = s.pending;
  // The next turn's prompt: this prompt, the model's reply, then a new user message.
  const std::int64_t reply =
      draw_tokens(s.rng, m_shape.reply_tokens_median, m_shape.reply_tokens_sigma, kMaxTokens);
  s.context += s.pending + reply;
  r.output_tokens = reply;  // what the model generates for this turn (serving.decode)
  s.pending = draw_tokens(s.rng, m_shape.user_tokens_median, m_shape.user_tokens_sigma, kMaxTokens);
  const std::int64_t limit = std::min(m_shape.max_context_tokens, kMaxTokens);
  return s.context + s.pending <= limit;  // the conversation ends when the window is full
}

double ShareGptGenerator::think_time(Session& s) {
  return m_shape.think_time_s > 0 ? s.rng.exponential(m_shape.think_time_s) : 0.0;
}

bool ShareGptGenerator::ends_before_zero(Session s) {
  while (s.next_s < 0) {
    s.rng.discard(2 * Rng::kLognormalWords);  // emit's reply and next user message
    if (--s.remaining <= 0) return true;
    s.next_s += think_time(s);
  }
  return false;
}

std::string ShareGptGenerator::describe() const {
  return "sharegpt-like chat: " + format_number(m_shape.turns_mean) + " turns on average, user " +
         format_number(m_shape.user_tokens_median) + " / reply " +
         format_number(m_shape.reply_tokens_median) + " tokens (medians)";
}

// ---- document QA -----------------------------------------------------------------------------

DocQaGenerator::DocQaGenerator(std::string name, const DocQaSpec& shape, std::int64_t requests,
                               double rate, ArrivalKind arrival, double cv, std::uint64_t seed)
    : SessionGenerator(std::move(name), requests, rate,
                       truncated_geometric_mean(shape.questions_mean, shape.questions_max), arrival,
                       cv, seed, shape.warm_start ? shape.think_time_s * shape.questions_max : 0.0),
      m_shape(shape) {
  if (m_shape.popularity == Popularity::Zipf)
    m_zipf.emplace(static_cast<std::uint64_t>(m_shape.documents), m_shape.zipf_s);
}

std::int64_t DocQaGenerator::document_tokens(std::uint64_t index) const {
  Rng rng(derive_seed(seed(), name() + "/document", index));
  return draw_tokens(rng, m_shape.document_tokens_median, m_shape.document_tokens_sigma,
                     std::min(m_shape.document_tokens_max, kMaxTokens));
}

std::int64_t DocQaGenerator::cached_document_tokens(std::uint64_t index) {
  if (index >= kCachedDocuments) return document_tokens(index);
  if (index >= m_document_tokens.size()) m_document_tokens.resize(index + 1, 0);
  std::int64_t& t = m_document_tokens[index];
  if (t == 0) t = document_tokens(index);
  return t;
}

void DocQaGenerator::start(Session& s) {
  const std::uint64_t doc =
      m_zipf ? m_zipf->sample(s.rng) : s.rng.below(static_cast<std::uint64_t>(m_shape.documents));
  s.remaining = draw_count(s.rng, m_shape.questions_mean, m_shape.questions_max);
  s.sequence_id = doc + 1;  // document number
  s.context = cached_document_tokens(doc);
}

bool DocQaGenerator::emit(Session& s, Request& r) {
  r.sequence_id = s.sequence_id;
  r.extends_sequence = false;
  r.prefix_tokens = s.context;
  r.new_tokens =
      draw_tokens(s.rng, m_shape.question_tokens_median, m_shape.question_tokens_sigma, kMaxTokens);
  r.output_tokens =
      draw_tokens(s.aux, m_shape.answer_tokens_median, m_shape.answer_tokens_sigma, kMaxTokens);
  return true;
}

bool DocQaGenerator::skip(Session& s) {
  s.rng.discard(Rng::kLognormalWords);  // the question (emit's draw_tokens)
  s.aux.discard(Rng::kLognormalWords);  // the answer
  return true;
}

double DocQaGenerator::think_time(Session& s) {
  return m_shape.think_time_s > 0 ? s.rng.exponential(m_shape.think_time_s) : 0.0;
}

std::string DocQaGenerator::describe() const {
  return name() + "-like document QA: " + std::to_string(m_shape.documents) + " documents (" +
         (m_zipf ? "zipf s=" + format_number(m_shape.zipf_s) : std::string("uniform")) +
         "), document " + format_number(m_shape.document_tokens_median) + " / question " +
         format_number(m_shape.question_tokens_median) + " tokens (medians), " +
         format_number(m_shape.questions_mean) + " questions per session on average";
}

// ---- by type ---------------------------------------------------------------------------------

std::unique_ptr<SessionGenerator> make_generator(WorkloadType type, const WorkloadSpec& spec,
                                                 std::int64_t requests, double rate,
                                                 std::uint64_t seed) {
  switch (type) {
    case WorkloadType::ShareGpt:
      return std::make_unique<ShareGptGenerator>(spec.sharegpt, requests, rate, spec.arrival,
                                                 spec.cv, seed);
    case WorkloadType::NarrativeQa:
      return std::make_unique<DocQaGenerator>("narrativeqa", spec.narrativeqa, requests, rate,
                                              spec.arrival, spec.cv, seed);
    case WorkloadType::DocFinQa:
      return std::make_unique<DocQaGenerator>("docfinqa", spec.docfinqa, requests, rate,
                                              spec.arrival, spec.cv, seed);
    case WorkloadType::Trace:
    case WorkloadType::Mix:
      break;
  }
  throw std::logic_error("make_generator: " + workload_type_name(type) + " is not a generator");
}

}  // namespace kappasim
