#include "workloads/workload_spec.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/sim_time_limit.hpp"
#include "core/units.hpp"
#include "workloads/generators.hpp"
#include "workloads/mix_source.hpp"
#include "workloads/trace_reader.hpp"

namespace kappasim {

namespace {
void check_max(const std::string& key, std::int64_t v) {
  if (v > kMaxTokens)
    throw InputError(key + ": " + std::to_string(v) + " is above the limit of " +
                     std::to_string(kMaxTokens) + " tokens");
}
}  // namespace

void ShareGptSpec::validate(const std::string& path) const {
  if (turns_mean > turns_max)
    throw InputError(path + ".turns_mean: " + format_number(turns_mean) + " is above turns_max (" +
                     std::to_string(turns_max) + ")");
  check_max(path + ".max_context_tokens", max_context_tokens);
}

void DocQaSpec::validate(const std::string& path) const {
  if (questions_mean > questions_max)
    throw InputError(path + ".questions_mean: " + format_number(questions_mean) +
                     " is above questions_max (" + std::to_string(questions_max) + ")");
  check_max(path + ".document_tokens_max", document_tokens_max);
  if (popularity == Popularity::Zipf && documents > 100'000'000)
    throw InputError(path +
                     ".documents: zipf popularity keeps a table of one number per "
                     "document; at most 100000000 documents");
}

// NarrativeQA-like defaults (docs/workloads.md): documents average ~55k tokens
// (reference-data.md), lognormal with sigma 0.6 [A] => median 55000 / exp(0.18) = 45,940; the
// question median 9.2 tokens [A] puts the median κ_ratio at the paper's 5000.
NarrativeQaSpec::NarrativeQaSpec() {
  documents = 1567;  // NarrativeQA's stories (Kočiský et al. 2018) [A: catalogue size]
  document_tokens_median = 45940;
  document_tokens_sigma = 0.6;
  question_tokens_median = 9.2;
  question_tokens_sigma = 0.4;
  questions_mean = 3;
  think_time_s = 60;
}

// DocFinQA-like defaults: filings average 123k words (Reddy et al. 2024), ~1.3 tokens per word
// [A] => mean ~160k tokens; lognormal sigma 0.5 [A] => median 160000 / exp(0.125) = 141,200;
// question median 14.1 tokens [A] puts the median κ_ratio at the paper's 10000.
DocFinQaSpec::DocFinQaSpec() {
  documents = 1236;  // unique filings in DocFinQA [A: catalogue size]
  document_tokens_median = 141200;
  document_tokens_sigma = 0.5;
  question_tokens_median = 14.1;
  question_tokens_sigma = 0.4;
  questions_mean = 3;
  think_time_s = 60;
}

void TraceSpec::validate(const std::string&) const {}

const std::vector<std::string>& mix_generator_names() {
  static const std::vector<std::string> names = {"sharegpt", "narrativeqa", "docfinqa"};
  return names;
}

void check_mix_weights(const std::map<std::string, double>& mix, const std::string& path) {
  const auto& names = mix_generator_names();
  bool positive = false;
  for (const auto& [key, w] : mix) {
    if (std::find(names.begin(), names.end(), key) == names.end())
      throw InputError(path + "." + key + ": '" + key +
                       "' is not a generator a mix can weight (sharegpt, narrativeqa, docfinqa)");
    if (!(w >= 0) || !std::isfinite(w))
      throw InputError(path + "." + key + ": a mix weight must be a finite number >= 0, got " +
                       format_number(w));
    positive = positive || w > 0;
  }
  if (!positive)
    throw InputError(path +
                     ": type mix needs at least one weight > 0 among sharegpt, "
                     "narrativeqa, docfinqa (e.g. mix: {sharegpt: 0.7, narrativeqa: 0.3})");
}

void WorkloadSpec::validate(const std::string& path) const {
  const std::string p = path.empty() ? "workload" : path;
  if (type == WorkloadType::Trace && trace.path.empty())
    throw InputError(p + ".trace.path: type is trace but no trace file is given");
  if (type == WorkloadType::Mix) check_mix_weights(mix, p + ".mix");
  if (concurrency < 0)
    throw InputError(p + ".concurrency: a closed loop needs at least 1 client, got " +
                     std::to_string(concurrency));
  if (!(think_time_s >= 0) || !std::isfinite(think_time_s))
    throw InputError(p + ".think_time: expected a finite time >= 0, got " +
                     format_number(think_time_s));
  if (concurrency > 0 && type == WorkloadType::Trace)
    throw InputError(p +
                     ".concurrency: a trace replays its own arrival times; closed-loop "
                     "clients need a synthetic type");
}

std::string closed_loop_text(const WorkloadSpec& w) {
  if (w.concurrency <= 0) return "";
  std::string s = "concurrency " + std::to_string(w.concurrency);
  if (w.think_time_s > 0) s += ", think time " + format_number(w.think_time_s) + " s";
  return s;
}

std::string workload_type_name(WorkloadType t) {
  switch (t) {
    case WorkloadType::ShareGpt:
      return "sharegpt";
    case WorkloadType::NarrativeQa:
      return "narrativeqa";
    case WorkloadType::DocFinQa:
      return "docfinqa";
    case WorkloadType::Trace:
      return "trace";
    case WorkloadType::Mix:
      return "mix";
  }
  return "?";
}

namespace {
// Issue 12 item 1: arrivals the simulator's time base cannot reach (core/sim_runner.hpp) are
// rejected before anything is simulated. Generators are deterministic, so a second instance with
// the same seed, run ahead, sees exactly the arrivals the run will (traces: validate_trace).
// Its requests, kept when there are at most kReplayRequests of them (else nullptr).
std::shared_ptr<const std::vector<Request>> within_time_limit(
    std::unique_ptr<WorkloadSource> probe) {
  auto kept = std::make_shared<std::vector<Request>>();
  Request r;
  while (probe->next(r)) {
    if (r.arrival_s > kSimTimeLimitS)
      throw InputError("workload: request " + std::to_string(r.id) + " arrives at " +
                       sim_time_limit_message(r.arrival_s) +
                       "; expected arrivals within it: a higher workload.rate or fewer "
                       "workload.requests");
    if (!kept) continue;
    if (kept->size() < kReplayRequests)
      kept->push_back(r);
    else
      kept.reset();  // too long to keep: generated again
  }
  return kept;
}

// The requests a generator drew, replayed in order (make_source; issue 24).
class ReplaySource final : public WorkloadSource {
 public:
  ReplaySource(std::shared_ptr<const std::vector<Request>> rs, std::string what)
      : m_rs(std::move(rs)), m_what(std::move(what)) {}
  bool next(Request& out) override {
    if (m_i >= m_rs->size()) return false;
    out = (*m_rs)[m_i++];
    return true;
  }
  std::string describe() const override { return m_what; }
  std::unique_ptr<WorkloadSource> again() const {
    return std::make_unique<ReplaySource>(m_rs, m_what);
  }

 private:
  std::shared_ptr<const std::vector<Request>> m_rs;
  std::string m_what;
  std::size_t m_i = 0;
};

// `probe`'s stream checked; a replay of it when it was kept, else a new copy of the source.
std::unique_ptr<WorkloadSource> checked(std::unique_ptr<WorkloadSource> probe,
                                        const WorkloadSpec& spec, std::uint64_t seed,
                                        const std::string& base_dir) {
  std::string what = probe->describe();
  if (auto kept = within_time_limit(std::move(probe)))
    return std::make_unique<ReplaySource>(std::move(kept), std::move(what));
  return make_source_again(spec, seed, base_dir);
}
}  // namespace

std::unique_ptr<WorkloadSource> replay_again(const WorkloadSource& source) {
  const auto* r = dynamic_cast<const ReplaySource*>(&source);
  return r ? r->again() : nullptr;
}

std::unique_ptr<WorkloadSource> make_source(const WorkloadSpec& spec, std::uint64_t seed,
                                            const std::string& base_dir) {
  // A trace is checked as it is read (validate_trace); a generated stream is run ahead here.
  if (spec.type == WorkloadType::Trace) return make_source_again(spec, seed, base_dir);
  return checked(make_source_again(spec, seed, base_dir), spec, seed, base_dir);
}

std::unique_ptr<WorkloadSource> make_source_again(const WorkloadSpec& spec, std::uint64_t seed,
                                                  const std::string& base_dir) {
  switch (spec.type) {
    case WorkloadType::ShareGpt:
    case WorkloadType::NarrativeQa:
    case WorkloadType::DocFinQa:
      return make_generator(spec.type, spec, spec.requests, spec.rate, seed);
    case WorkloadType::Trace:
      return std::make_unique<TraceSource>(spec.trace, base_dir);
    case WorkloadType::Mix:
      return std::make_unique<MixSource>(spec, seed);
  }
  throw std::logic_error("make_source: unknown workload type");
}

}  // namespace kappasim
