// The `workload:` section of a config: which source produces requests, how many, how fast, and
// the shape parameters of each synthetic generator (docs/workloads.md lists every key, its
// default and which defaults are assumptions).
//
//   workload:
//     type: narrativeqa          # sharegpt | narrativeqa | docfinqa | mix | trace
//     requests: 1000
//     rate: 10                   # requests per second (long-run average)
//     arrival: poisson           # poisson | gamma (with cv)
//     seed: 1
//     narrativeqa: {popularity: zipf, zipf_s: 1.1}
//     trace: {path: traces/x.jsonl, format: mooncake, time_scale: 0.5, limit: 5000}
//     mix: {sharegpt: 0.7, narrativeqa: 0.3}   # weights, used with type: mix (mix_source.hpp)
//
// Every generator sub-object is optional and read (and checked) whatever `type` is; only the one
// `type` names is used. A trace ignores requests, rate, arrival, cv and seed: it replays its own
// arrival times (times time_scale) and stops after `limit` rows (0: all). `type: mix`
// superposes the generators named in `mix` (weights >= 0, normalised), each shaped by its own
// sub-object as for a single type (workloads/mix_source.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "workloads/arrivals.hpp"
#include "workloads/request.hpp"

namespace kappasim {

// Limits every source enforces (a trace row outside them is an input error).
inline constexpr std::int64_t kMaxTokens = 10'000'000;

// ShareGPT-like multi-turn chat. A conversation has `turns` turns (geometric, mean turns_mean,
// at most turns_max); turn n's prompt is the whole history (earlier user messages and replies:
// the cached prefix K) plus the new user message (T). Turns are think_time apart (exponential).
struct ShareGptSpec {
  // Defaults (docs/workloads.md): all shape values are assumptions [A]; user_tokens_median is
  // set so the median κ_ratio over requests is the paper's 100.
  double turns_mean = 6;
  int turns_max = 40;
  double user_tokens_median = 11;
  double user_tokens_sigma = 1.0;
  double reply_tokens_median = 300;
  double reply_tokens_sigma = 0.7;
  double think_time_s = 30;
  std::int64_t max_context_tokens = 131072;
  bool warm_start = true;

  template <class V>
  void visit(V& v) {
    v.number("turns_mean", turns_mean,
             opt("mean turns per conversation (geometric)", Range::AtLeastOne));
    v.integer("turns_max", turns_max, opt("most turns per conversation", Range::AtLeastOne));
    v.number("user_tokens_median", user_tokens_median,
             opt("median tokens of a user message (lognormal)"));
    v.number("user_tokens_sigma", user_tokens_sigma,
             opt("sigma of ln(user message tokens)", Range::NonNegative));
    v.number("reply_tokens_median", reply_tokens_median,
             opt("median tokens of a model reply added to the history (lognormal)"));
    v.number("reply_tokens_sigma", reply_tokens_sigma,
             opt("sigma of ln(reply tokens)", Range::NonNegative));
    v.quantity(
        "think_time", think_time_s, dim::time,
        opt("mean time between turns of one conversation (exponential)", Range::NonNegative));
    v.integer("max_context_tokens", max_context_tokens,
              opt("a conversation ends before its prompt would exceed this", Range::AtLeastOne));
    v.boolean("warm_start", warm_start,
              opt("begin with conversations already under way (steady state at t = 0)"));
  }
  void validate(const std::string& path) const;
};

enum class Popularity { Uniform, Zipf };

// Document QA (NarrativeQA-like, DocFinQA-like). A session picks a document from a catalogue
// of `documents` (uniform or zipf popularity, so documents recur across sessions) and asks
// `questions` questions (geometric, mean questions_mean, at most questions_max), think_time
// apart. Prompt = the whole document (prefix K, shared by every question on it) + the question
// (T, never shared). Document i's length is a fixed function of (seed, i).
struct DocQaSpec {
  std::int64_t documents = 1000;
  Popularity popularity = Popularity::Uniform;
  double zipf_s = 1.0;
  double document_tokens_median = 50000;
  double document_tokens_sigma = 0.6;
  std::int64_t document_tokens_max = 2'000'000;
  double questions_mean = 3;
  int questions_max = 20;
  double question_tokens_median = 10;
  double question_tokens_sigma = 0.4;
  // [A] output tokens of an answer (used only when the run decodes, serving.decode): lognormal.
  // NarrativeQA's reference answers average 4.73 tokens (Kočiský et al. 2018, Table 1); a chat
  // model answers in a sentence or two, so the median is set above that.
  double answer_tokens_median = 32;
  double answer_tokens_sigma = 0.8;
  double think_time_s = 60;
  bool warm_start = true;

  template <class V>
  void visit(V& v) {
    v.integer("documents", documents, opt("documents in the catalogue", Range::AtLeastOne));
    static const std::vector<std::pair<const char*, Popularity>> pops = {
        {"uniform", Popularity::Uniform}, {"zipf", Popularity::Zipf}};
    v.choice("popularity", popularity, pops, opt("how sessions pick a document: uniform or zipf"));
    v.number("zipf_s", zipf_s,
             opt("zipf exponent s (document k has weight 1/k^s)", Range::NonNegative));
    v.number("document_tokens_median", document_tokens_median,
             opt("median document tokens (lognormal)"));
    v.number("document_tokens_sigma", document_tokens_sigma,
             opt("sigma of ln(document tokens)", Range::NonNegative));
    v.integer("document_tokens_max", document_tokens_max,
              opt("documents longer than this are truncated to it", Range::AtLeastOne));
    v.number("questions_mean", questions_mean,
             opt("mean questions per session on one document (geometric)", Range::AtLeastOne));
    v.integer("questions_max", questions_max, opt("most questions per session", Range::AtLeastOne));
    v.number("question_tokens_median", question_tokens_median,
             opt("median tokens of a question (lognormal)"));
    v.number("question_tokens_sigma", question_tokens_sigma,
             opt("sigma of ln(question tokens)", Range::NonNegative));
    v.number("answer_tokens_median", answer_tokens_median,
             opt("median output tokens of an answer (lognormal; decode runs)"));
    v.number("answer_tokens_sigma", answer_tokens_sigma,
             opt("sigma of ln(answer tokens)", Range::NonNegative));
    v.quantity("think_time", think_time_s, dim::time,
               opt("mean time between questions of one session (exponential)", Range::NonNegative));
    v.boolean("warm_start", warm_start,
              opt("begin with sessions already under way (steady state at t = 0)"));
  }
  void validate(const std::string& path) const;
};

// NarrativeQA-like: books and scripts averaging ~55k tokens, short questions.
struct NarrativeQaSpec : DocQaSpec {
  NarrativeQaSpec();
};
// DocFinQA-like: whole SEC filings (longer), somewhat longer questions.
struct DocFinQaSpec : DocQaSpec {
  DocFinQaSpec();
};

enum class TraceFormat { Jsonl, Csv, Mooncake };

struct TraceSpec {
  std::string path;  // relative paths are taken from the config file's folder
  TraceFormat format = TraceFormat::Jsonl;
  double time_scale = 1;   // arrival_s = trace time × time_scale (2: half the rate)
  std::int64_t limit = 0;  // replay at most this many rows (0: all)

  template <class V>
  void visit(V& v) {
    v.text("path", path, opt("trace file (relative to the config file's folder)"));
    static const std::vector<std::pair<const char*, TraceFormat>> formats = {
        {"jsonl", TraceFormat::Jsonl},
        {"csv", TraceFormat::Csv},
        {"mooncake", TraceFormat::Mooncake}};
    v.choice("format", format, formats, opt("jsonl | csv (kappasim columns) | mooncake"));
    v.number("time_scale", time_scale, opt("multiplies every arrival time (2: half the rate)"));
    v.integer("limit", limit, opt("replay at most this many rows (0: all)", Range::NonNegative));
  }
  void validate(const std::string& path) const;
};

enum class WorkloadType { ShareGpt, NarrativeQa, DocFinQa, Trace, Mix };

// The generators a mix may weight, in the fixed order that orders a mix's components (request
// split, arrival-time ties, sequence-id tags): sharegpt, narrativeqa, docfinqa.
const std::vector<std::string>& mix_generator_names();

struct WorkloadSpec {
  WorkloadType type = WorkloadType::ShareGpt;
  std::int64_t requests = 1000;
  double rate = 10;  // requests per second
  ArrivalKind arrival = ArrivalKind::Poisson;
  double cv = 1;
  std::uint64_t seed =
      1;  // 64-bit: a sweep seed from results.csv round-trips exactly (--set workload.seed=...)
  // Closed loop (docs/workloads.md "Closed loop"): `concurrency` clients, each sending its next
  // request when its previous one finished (its last token when the run decodes, else its first)
  // plus `think_time`; the first `concurrency` requests arrive at t = 0. The stream (prompts,
  // prefixes, output lengths, order) is the generator's; only the arrival times are the clients'.
  // 0: open loop (arrival times from rate / the trace). Conflicts with a given rate, arrival or
  // cv, and with a trace (it fixes its own arrival times).
  std::int64_t concurrency = 0;
  double think_time_s = 0;  // closed loop: a client's pause between a finish and its next request
  ShareGptSpec sharegpt;
  NarrativeQaSpec narrativeqa;
  DocFinQaSpec docfinqa;
  TraceSpec trace;
  std::map<std::string, double> mix;  // generator name -> weight (type: mix)

  template <class V>
  void visit(V& v) {
    static const std::vector<std::pair<const char*, WorkloadType>> types = {
        {"sharegpt", WorkloadType::ShareGpt},
        {"narrativeqa", WorkloadType::NarrativeQa},
        {"docfinqa", WorkloadType::DocFinQa},
        {"trace", WorkloadType::Trace},
        {"mix", WorkloadType::Mix}};
    v.choice("type", type, types, opt("sharegpt | narrativeqa | docfinqa | trace | mix"));
    v.integer("requests", requests,
              opt("requests to generate (synthetic types)", Range::AtLeastOne));
    // A closed-loop config's effective config leaves the open-loop arrival keys out (read back,
    // they would conflict with concurrency).
    if (!V::kWriting || concurrency == 0) {
      v.number("rate", rate, opt("long-run request rate, requests per second (synthetic types)"));
      static const std::vector<std::pair<const char*, ArrivalKind>> kinds = {
          {"poisson", ArrivalKind::Poisson}, {"gamma", ArrivalKind::Gamma}};
      v.choice("arrival", arrival, kinds,
               opt("arrival process of conversations / document sessions: poisson | gamma"));
      v.number("cv", cv, opt("coefficient of variation of gamma inter-arrival gaps (1: Poisson)"));
    }
    if (!V::kWriting || concurrency > 0) {
      v.integer("concurrency", concurrency,
                opt("closed loop: clients, each sending its next request when its previous one "
                    "finished (0 or absent: open loop)",
                    Range::NonNegative));
      v.quantity("think_time", think_time_s, dim::time,
                 opt("closed loop: a client's pause between its request's finish and its next",
                     Range::NonNegative));
    }
    if constexpr (!V::kWriting) check_closed_loop_keys(v);
    v.integer("seed", seed, opt("random seed", Range::NonNegative));
    v.object("sharegpt", sharegpt, opt("ShareGPT-like chat shape"));
    v.object("narrativeqa", narrativeqa, opt("NarrativeQA-like document QA shape"));
    v.object("docfinqa", docfinqa, opt("DocFinQA-like filing QA shape"));
    v.object("trace", trace, opt("trace replay"));
    v.quantity_map("mix", mix, dim::none, mix_generator_names(),
                   opt("type mix: weight of each generator (sharegpt, narrativeqa, docfinqa; "
                       ">= 0, normalised)",
                       Range::NonNegative));
  }
  void validate(const std::string& path) const;

 private:
  // The combinations of keys that mean nothing in closed loop (InputError at the key).
  template <class R>
  void check_closed_loop_keys(R& v) const {
    if (v.has("concurrency") && concurrency < 1)
      v.reject("concurrency", "a closed loop needs at least 1 client, got " +
                                  std::to_string(concurrency) +
                                  " (leave concurrency out for open-loop arrivals)");
    if (concurrency == 0) {
      if (v.has("think_time"))
        v.reject("think_time",
                 "a think time applies to closed-loop clients only: set "
                 "workload.concurrency");
      return;
    }
    for (const char* key : {"rate", "arrival", "cv"})
      if (v.has(key))
        v.reject(key, std::string("an open-loop arrival key; with workload.concurrency the "
                                  "clients' finishes set the arrival times (leave ") +
                          key + " out, or leave concurrency out for open-loop arrivals)");
    if (type == WorkloadType::Trace)
      v.reject("concurrency",
               "a trace replays its own arrival times; closed-loop clients need a synthetic "
               "type (sharegpt, narrativeqa, docfinqa, mix)");
  }
};

// Closed loop (WorkloadSpec::concurrency > 0): the clients' regime text, "concurrency N" (with
// its think time when > 0).
std::string closed_loop_text(const WorkloadSpec& w);

std::string workload_type_name(WorkloadType t);

// Checks a mix's weights: every key a generator (mix_generator_names), every weight finite and
// >= 0, at least one > 0. Throws InputError naming `path`.KEY (or `path` when none is positive).
void check_mix_weights(const std::map<std::string, double>& mix, const std::string& path);

// The source a spec describes. `seed` replaces spec.seed (pass spec.seed, or a seed derived from
// it for replicates); `base_dir` is the folder relative trace paths are taken from (the config
// file's folder; "" = the current directory). A trace is opened here (InputError if it cannot
// be) but validated only as it is read: call validate_trace() first to check it whole. A mix is
// a MixSource (workloads/mix_source.hpp) over lazily run generators. A generated stream (a
// generator's or a mix's) is run once ahead to check its arrivals against the simulator's time
// limit; one of at most kReplayRequests requests is kept then and replayed (below).
std::unique_ptr<WorkloadSource> make_source(const WorkloadSpec& spec, std::uint64_t seed,
                                            const std::string& base_dir = "");
// make_source without its check that every arrival is within the simulator's time limit (a
// generator run ahead once): for a second copy of a source make_source already made with the
// same spec and seed, which checked the same arrivals (issue 24: the warm tier's copy).
std::unique_ptr<WorkloadSource> make_source_again(const WorkloadSpec& spec, std::uint64_t seed,
                                                  const std::string& base_dir = "");
// Issue 24: make_source keeps a generated stream of at most kReplayRequests requests from its
// time-limit check (about 100 B each: ≤ 1.6 MB) and returns a source that replays it, instead of
// a second generator that would draw the same requests again. replay_again(source) is a new
// source over the same kept requests for a source make_source returned that way, else nullptr
// (a trace, a longer stream: make_source_again then).
inline constexpr std::size_t kReplayRequests = 16384;
std::unique_ptr<WorkloadSource> replay_again(const WorkloadSource& source);

}  // namespace kappasim
