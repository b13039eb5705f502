#include "workloads/request.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <unordered_set>

namespace kappasim {

namespace {
// Every distinct name once; never shrinks (a run holds a handful: one per generator or trace).
// Elements of an unordered_set keep their address when it rehashes.
const std::string* empty_name() {
  static const auto* empty = new std::string();
  return empty;
}
const std::string* intern(const std::string& text) {
  if (text.empty()) return empty_name();  // default-constructed names take no lock
  static std::mutex lock;
  static auto* names = new std::unordered_set<std::string>();  // never destroyed: names outlive
                                                               // every static Request
  const std::lock_guard<std::mutex> hold(lock);
  return &*names->insert(text).first;
}
}  // namespace

InternedName::InternedName() : m_text(empty_name()) {}
InternedName::InternedName(const std::string& text) : m_text(intern(text)) {}
InternedName::InternedName(const char* text) : m_text(intern(text)) {}

std::ostream& operator<<(std::ostream& os, const InternedName& n) { return os << n.str(); }

namespace {
// SplitMix64 finaliser: a fixed, platform-independent 64-bit mix.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// key(a, b) with mix(a) given: a request's chunks share their `a` (issue 24: one mix per chunk
// instead of two, the same bits).
std::uint64_t key_mixed(std::uint64_t mixed_a, std::uint64_t b) {
  return mix(mixed_a ^ (b * 0x632be59bd9b4e019ULL));
}
std::uint64_t key(std::uint64_t a, std::uint64_t b) { return key_mixed(mix(a), b); }
constexpr std::uint64_t kOwnBit = 0x8000000000000000ULL;  // own_key's mark on the request id
}  // namespace

namespace {
// Chunk i's key when it is wholly inside the prompt and the request has no trace hashes, or when
// it holds generated tokens: shared (the sequence's) when the request has a sequence and i lies
// in its prefix or the request extends the sequence (a chat turn's next prompt starts with this
// prompt and its reply), otherwise the request's own.
bool shared_chunk(const Request& r, std::int64_t i, std::int64_t prefix_chunks) {
  return r.sequence_id != 0 && (i < prefix_chunks || r.extends_sequence);
}
std::uint64_t plain_key(const Request& r, std::int64_t i, std::int64_t prefix_chunks) {
  return shared_chunk(r, i, prefix_chunks) ? key(r.sequence_id, static_cast<std::uint64_t>(i))
                                           : own_key(r, i);
}
}  // namespace

namespace {
// The leading keys of a sequence's chunks, key(sequence_id, i) for i < n, kept for the last few
// sequences asked (issue 24: every request of a document or chat asks for its prefix's keys at
// least three times: warming, admission, store; a copy costs a fraction of the mixes). A
// direct-mapped cache of kSequenceSlots sequences, each holding at most kMaxSequenceKeys keys
// (longer prefixes are computed as before), so its memory is bounded (2 MiB) whatever the
// workload; per thread, as sweep points may run in threads. Values only: the same keys as
// computing them.
constexpr std::size_t kSequenceSlots = 128;
constexpr std::int64_t kMaxSequenceKeys = 2048;
struct SequenceKeys {
  std::uint64_t sequence_id = 0;  // 0: empty (a request without a sequence shares no chunk)
  std::vector<std::uint64_t> keys;
};
void append_sequence_keys(std::uint64_t sequence_id, std::int64_t n,
                          std::vector<std::uint64_t>& out) {
  const std::uint64_t seq = mix(sequence_id);
  if (n > kMaxSequenceKeys) {
    for (std::int64_t i = 0; i < n; ++i)
      out.push_back(key_mixed(seq, static_cast<std::uint64_t>(i)));
    return;
  }
  thread_local std::array<SequenceKeys, kSequenceSlots> cache;
  SequenceKeys& e = cache[seq % kSequenceSlots];
  if (e.sequence_id != sequence_id) {
    e.sequence_id = sequence_id;
    e.keys.clear();
  }
  for (auto i = static_cast<std::int64_t>(e.keys.size()); i < n; ++i)
    e.keys.push_back(key_mixed(seq, static_cast<std::uint64_t>(i)));
  out.insert(out.end(), e.keys.data(), e.keys.data() + n);
}
}  // namespace

std::uint64_t own_key(const Request& r, std::int64_t i) {
  return key(r.id ^ kOwnBit, static_cast<std::uint64_t>(i));
}

void chunk_keys(const Request& r, int chunk_tokens, std::int64_t tokens,
                std::vector<std::uint64_t>& keys) {
  if (chunk_tokens < 1) throw std::logic_error("chunk_keys: chunk_tokens must be >= 1");
  const std::int64_t prompt = r.prompt_tokens();
  if (tokens < 0) tokens = prompt;
  const std::int64_t full = tokens / chunk_tokens, prompt_full = prompt / chunk_tokens;
  keys.clear();
  keys.reserve(static_cast<std::size_t>(full));
  if (!r.block_hashes.empty()) {
    if (r.block_tokens < chunk_tokens || r.block_tokens % chunk_tokens != 0)
      throw std::logic_error("chunk_keys: chunk_tokens must divide the trace's block size");
    const std::int64_t per_block = r.block_tokens / chunk_tokens;
    // A block's identity is its position in the chain: identity(b) = H(identity(b − 1),
    // hash_ids[b]), identity(−1) a fixed seed, as a prefix cache hashes (parent hash, block
    // tokens) (vLLM's prefix caching, LMCache's chunk hashes). In a well-formed Mooncake trace a
    // hash_id already names its whole prefix, so this changes no hit there; in a trace that
    // contradicts itself ([1,2] then [2,1], or [3,3,3]) it gives what a real prefix cache
    // finds: only the leading blocks whose whole chain matches (docs/workloads.md).
    std::uint64_t chain = 0x6b61707061736d31ULL;  // identity(−1): any fixed value
    std::size_t chained = 0;                      // blocks folded into `chain` so far
    for (std::int64_t i = 0; i < std::min(full, prompt_full); ++i) {
      const auto b = static_cast<std::size_t>(i / per_block);
      if (b >= r.block_hashes.size()) return;  // the chain ends: nothing after it leads
      if (b + 1 > chained) {
        chain = key(chain, r.block_hashes[b]);
        chained = b + 1;
      }
      // A chunk's identity: its block's chain identity and its place inside the block.
      keys.push_back(key(chain, static_cast<std::uint64_t>(i % per_block)));
    }
    // Chunks holding generated tokens: the trace names no tokens the model generates, so no
    // other request's prompt is known to repeat them: the request's own.
    const std::uint64_t own = mix(r.id ^ kOwnBit);
    for (std::int64_t i = prompt_full; i < full; ++i)
      keys.push_back(key_mixed(own, static_cast<std::uint64_t>(i)));  // own_key(r, i)
    return;
  }
  // plain_key(r, i, prefix_chunks) for each i: shared_chunk holds exactly for i below `shared`
  // (all of them when the request extends its sequence, the prefix's chunks otherwise, none
  // without a sequence): the sequence's leading keys (append_sequence_keys), then the request's
  // own, with its mix(a) computed once (issue 24: no branch per key; the same keys).
  const std::int64_t prefix_chunks = r.prefix_tokens / chunk_tokens;
  const std::int64_t shared =
      r.sequence_id == 0 ? 0 : (r.extends_sequence ? full : std::min(full, prefix_chunks));
  if (shared > 0) append_sequence_keys(r.sequence_id, shared, keys);
  const std::uint64_t own = mix(r.id ^ kOwnBit);
  for (std::int64_t i = std::max<std::int64_t>(shared, 0); i < full; ++i)
    keys.push_back(key_mixed(own, static_cast<std::uint64_t>(i)));
}

std::vector<std::uint64_t> chunk_keys(const Request& r, int chunk_tokens, std::int64_t tokens) {
  std::vector<std::uint64_t> keys;
  chunk_keys(r, chunk_tokens, tokens, keys);
  return keys;
}

std::uint64_t generated_chunk_key(const Request& r, int chunk_tokens, std::int64_t i) {
  if (chunk_tokens < 1 || (i + 1) * chunk_tokens <= r.prompt_tokens())
    throw std::logic_error("generated_chunk_key: chunk " + std::to_string(i) +
                           " lies wholly inside the prompt");
  if (!r.block_hashes.empty()) return own_key(r, i);
  return plain_key(r, i, r.prefix_tokens / chunk_tokens);
}

std::int64_t own_chunk_start(const Request& r, int chunk_tokens, std::int64_t n_keys) {
  // Trace chains: any request may name a prompt chunk; only the generated chunks are its own.
  // Otherwise chunk_keys' rule: chunk i is shared when the request has a sequence and i lies in
  // the prefix (or the request extends the sequence); every other chunk is the request's own.
  std::int64_t first = 0;
  if (!r.block_hashes.empty())
    first = r.prompt_tokens() / chunk_tokens;
  else if (r.sequence_id != 0)
    first = r.extends_sequence ? n_keys : r.prefix_tokens / chunk_tokens;
  return std::min(first, n_keys);
}

std::vector<std::uint64_t> own_chunk_keys(const Request& r, int chunk_tokens, std::int64_t tokens) {
  std::vector<std::uint64_t> keys = chunk_keys(r, chunk_tokens, tokens);
  const std::int64_t first =
      own_chunk_start(r, chunk_tokens, static_cast<std::int64_t>(keys.size()));
  keys.erase(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(first));
  return keys;
}

}  // namespace kappasim
