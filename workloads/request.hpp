// One serving request, the one request type every layer uses (workloads produce it, the
// scheduler and engine consume it, metrics report it). Pure data, no SystemC.
//
// Prefix identity. The prompt is `prefix_tokens` tokens of a reusable sequence followed by
// `new_tokens` tokens. The reusable sequence is named by `sequence_id` (a document, a
// conversation). Chunk i of the prompt (chunk_tokens tokens each) has a key:
//  - chunks wholly inside the prefix: key(sequence_id, i), shared by every request on that
//    sequence, so a later request finds them in the KV tier;
//  - chunks holding new tokens: key(sequence_id, i) again when `extends_sequence` (a chat turn:
//    the next turn's prompt starts with this whole prompt), otherwise key(request id, i), never
//    shared (a question over a document).
// A trace with explicit block hashes (Mooncake: one hash per 512-token block) gives
// `block_hashes`; chunk keys then derive from those hashes (chunk_tokens must divide the block)
// through a prefix chain: block b's identity is H(identity of block b − 1, block_hashes[b]), so
// the same hash at another position, or after another prefix, is another block.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace kappasim {

// A name many requests share (the generator or trace that produced them), interned: each
// distinct text is stored once for the process's life and a copy costs one pointer (issue 24:
// at 100,000 overloaded requests ~67,000 wait in the queue, and a name such as
// "trace:vidur-100k.jsonl" was a heap allocation for each). Reads as a const std::string&.
class InternedName {
 public:
  InternedName();                         // ""
  InternedName(const std::string& text);  // NOLINT(google-explicit-constructor): a name is text
  InternedName(const char* text);         // NOLINT(google-explicit-constructor)
  const std::string& str() const { return *m_text; }
  operator const std::string&() const { return *m_text; }  // NOLINT(google-explicit-constructor)
  bool empty() const { return m_text->empty(); }
  std::size_t size() const { return m_text->size(); }
  const char* c_str() const { return m_text->c_str(); }
  // Interned: equal texts share one pointer.
  friend bool operator==(const InternedName& a, const InternedName& b) {
    return a.m_text == b.m_text;
  }
  friend bool operator!=(const InternedName& a, const InternedName& b) { return !(a == b); }
  friend bool operator==(const InternedName& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const std::string& a, const InternedName& b) { return a == b.str(); }
  friend bool operator!=(const InternedName& a, const std::string& b) { return a.str() != b; }
  friend bool operator!=(const std::string& a, const InternedName& b) { return a != b.str(); }
  friend bool operator==(const InternedName& a, const char* b) { return a.str() == b; }
  friend bool operator==(const char* a, const InternedName& b) { return a == b.str(); }
  friend bool operator!=(const InternedName& a, const char* b) { return a.str() != b; }
  friend bool operator!=(const char* a, const InternedName& b) { return a != b.str(); }
  friend bool operator<(const InternedName& a, const InternedName& b) { return a.str() < b.str(); }

 private:
  const std::string* m_text;
};
std::ostream& operator<<(std::ostream& os, const InternedName& n);

struct Request {
  std::uint64_t id = 0;
  double arrival_s = 0;
  std::uint64_t sequence_id = 0;   // 0: no reusable prefix
  std::int64_t prefix_tokens = 0;  // K if the whole prefix is in the tier
  std::int64_t new_tokens = 0;     // T (at least 1)
  std::int64_t output_tokens = 1;  // prefill only by default: one output token
  bool extends_sequence = false;   // the prompt's new tokens extend the sequence (chat turns)
  // Explicit prefix identity (Mooncake traces): one hash per block of block_tokens tokens,
  // covering prefix + new tokens; empty for generated workloads.
  std::vector<std::uint64_t> block_hashes;
  int block_tokens = 0;
  InternedName workload;  // which generator or trace produced it ("narrativeqa", "trace:x.jsonl")

  std::int64_t prompt_tokens() const { return prefix_tokens + new_tokens; }
  double kappa_ratio() const {
    return new_tokens > 0 ? static_cast<double>(prefix_tokens) / new_tokens : 0;
  }
};

// Keys of the full chunks of `chunk_tokens` tokens among the request's first `tokens` tokens
// (default: its prompt; more: the prompt, then the tokens the model generates for it). A
// trailing partial chunk has no key: LMCache stores and finds full chunks only, vLLM hashes full
// blocks only. A chunk holding generated tokens is the sequence's when the request extends it
// (a chat turn: the next turn's prompt repeats this prompt and its reply), otherwise the
// request's own (a trace names no generated tokens). Deterministic: a pure function of the
// request.
std::vector<std::uint64_t> chunk_keys(const Request& r, int chunk_tokens, std::int64_t tokens = -1);
// The same into `keys` (cleared first; its buffer reused: no allocation per call once grown).
void chunk_keys(const Request& r, int chunk_tokens, std::int64_t tokens,
                std::vector<std::uint64_t>& keys);
// chunk_keys(r, chunk_tokens, tokens)[i] for a chunk i that holds generated tokens
// ((i + 1) x chunk_tokens > the prompt), in O(1) (logic_error for a chunk inside the prompt).
std::uint64_t generated_chunk_key(const Request& r, int chunk_tokens, std::int64_t i);
// The request's own key of chunk i (one no other request has).
std::uint64_t own_key(const Request& r, std::int64_t i);
// The keys among chunk_keys(r, chunk_tokens, tokens) that belong to r alone (no other request
// has them: chunks that neither a shared prefix, an extended sequence nor a trace chain names).
// Once r is done nothing asks for them.
std::vector<std::uint64_t> own_chunk_keys(const Request& r, int chunk_tokens,
                                          std::int64_t tokens = -1);
// Where r's own keys begin among its first `n_keys` chunk keys (chunk_keys(r, chunk_tokens, ...)
// with n_keys elements): own_chunk_keys is keys[own_chunk_start(...)..].
std::int64_t own_chunk_start(const Request& r, int chunk_tokens, std::int64_t n_keys);

// A stream of requests in arrival order (non-decreasing arrival_s). Generators and trace
// readers implement it; they produce requests lazily so memory stays bounded by the requests in
// the system, never by how many were produced.
class WorkloadSource {
 public:
  virtual ~WorkloadSource() = default;
  // The next request, or false when the source is exhausted.
  virtual bool next(Request& out) = 0;
  virtual std::string describe() const = 0;
};

// Requests held in memory, returned in order (isolated-request measurements, tests).
class VectorSource : public WorkloadSource {
 public:
  explicit VectorSource(std::vector<Request> rs, std::string what = "requests from memory")
      : m_rs(std::move(rs)), m_what(std::move(what)) {}
  bool next(Request& out) override {
    if (m_i >= m_rs.size()) return false;
    out = m_rs[m_i++];
    return true;
  }
  std::string describe() const override { return m_what; }

 private:
  std::vector<Request> m_rs;
  std::string m_what;
  std::size_t m_i = 0;
};

}  // namespace kappasim
