#include "workloads/request.hpp"

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <ostream>
#include <stdexcept>
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
std::uint64_t key(std::uint64_t a, std::uint64_t b) {
  return mix(mix(a) ^ (b * 0x632be59bd9b4e019ULL));
}
}  // namespace

std::vector<std::uint64_t> chunk_keys(const Request& r, int chunk_tokens) {
  if (chunk_tokens < 1) throw std::logic_error("chunk_keys: chunk_tokens must be >= 1");
  const std::int64_t full = r.prompt_tokens() / chunk_tokens;
  std::vector<std::uint64_t> keys;
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
    for (std::int64_t i = 0; i < full; ++i) {
      const auto b = static_cast<std::size_t>(i / per_block);
      if (b >= r.block_hashes.size()) break;
      if (b + 1 > chained) {
        chain = key(chain, r.block_hashes[b]);
        chained = b + 1;
      }
      // A chunk's identity: its block's chain identity and its place inside the block.
      keys.push_back(key(chain, static_cast<std::uint64_t>(i % per_block)));
    }
    return keys;
  }
  const std::int64_t prefix_chunks = r.prefix_tokens / chunk_tokens;
  for (std::int64_t i = 0; i < full; ++i) {
    const bool shared = r.sequence_id != 0 && (i < prefix_chunks || r.extends_sequence);
    keys.push_back(shared ? key(r.sequence_id, static_cast<std::uint64_t>(i))
                          : key(r.id ^ 0x8000000000000000ULL, static_cast<std::uint64_t>(i)));
  }
  return keys;
}

std::vector<std::uint64_t> own_chunk_keys(const Request& r, int chunk_tokens) {
  if (!r.block_hashes.empty()) return {};  // trace chains: any request may name them
  std::vector<std::uint64_t> keys = chunk_keys(r, chunk_tokens);
  // chunk_keys' rule: chunk i is shared when the request has a sequence and i lies in the
  // prefix (or the request extends the sequence); every other chunk is the request's own.
  if (r.sequence_id == 0) return keys;
  if (r.extends_sequence) return {};
  const std::int64_t prefix_chunks = r.prefix_tokens / chunk_tokens;
  const auto first = static_cast<std::size_t>(
      std::min<std::int64_t>(prefix_chunks, static_cast<std::int64_t>(keys.size())));
  keys.erase(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(first));
  return keys;
}

}  // namespace kappasim
