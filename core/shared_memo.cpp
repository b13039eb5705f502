#include "core/shared_memo.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

namespace kappasim {

namespace {

constexpr std::uint64_t kEmpty = 0, kWriting = 1, kReady = 2;

struct Slot {
  std::uint64_t state;  // kEmpty, kWriting or kReady (atomic: __atomic builtins)
  std::uint64_t key[4];
  std::uint64_t value;  // the double's bits
};
static_assert(sizeof(Slot) == 48, "a slot is six words");

Slot* g_slots = nullptr;
std::size_t g_mask = 0;

std::uint64_t fold(std::uint64_t h, std::uint64_t w) {
  h ^= w + 0x7f4a7c159e3779b9ULL + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 31);
}

// The key's first slot: its region picked by every word but the second, its place in the
// region by the second (SharedMemo::kRegionSlots).
std::size_t home(const SharedMemo::Key& k) {
  const std::uint64_t region = fold(fold(fold(0x9e3779b97f4a7c15ULL, k.w[0]), k.w[2]), k.w[3]);
  const std::uint64_t within = fold(region, k.w[1]);
  const std::size_t span = std::min<std::size_t>(g_mask + 1, SharedMemo::kRegionSlots);
  return static_cast<std::size_t>((region & g_mask & ~(span - 1)) | (within & (span - 1)));
}

bool same(const Slot& s, const SharedMemo::Key& k) {
  return s.key[0] == k.w[0] && s.key[1] == k.w[1] && s.key[2] == k.w[2] && s.key[3] == k.w[3];
}

}  // namespace

bool SharedMemo::share(std::size_t slots) {
  if (g_slots != nullptr) return true;
  std::size_t n = 1;
  while (n < slots) n <<= 1;
  void* p =
      ::mmap(nullptr, n * sizeof(Slot), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  g_slots = static_cast<Slot*>(p);  // zero-filled: every slot kEmpty
  g_mask = n - 1;
  return true;
}

bool SharedMemo::shared() { return g_slots != nullptr; }

bool SharedMemo::find(const Key& k, double& value) {
  if (g_slots == nullptr) return false;
  const std::size_t h = home(k);
  for (std::size_t i = 0; i < kProbe; ++i) {
    const Slot& s = g_slots[(h + i) & g_mask];
    const std::uint64_t st = __atomic_load_n(&s.state, __ATOMIC_ACQUIRE);
    if (st == kEmpty) return false;
    if (st == kReady && same(s, k)) {
      std::memcpy(&value, &s.value, sizeof value);
      return true;
    }
  }
  return false;
}

void SharedMemo::insert(const Key& k, double value) {
  if (g_slots == nullptr) return;
  const std::size_t h = home(k);
  for (std::size_t i = 0; i < kProbe; ++i) {
    Slot& s = g_slots[(h + i) & g_mask];
    std::uint64_t st = __atomic_load_n(&s.state, __ATOMIC_ACQUIRE);
    if (st == kReady && same(s, k)) return;  // kept already
    if (st != kEmpty) continue;
    if (!__atomic_compare_exchange_n(&s.state, &st, kWriting, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
      continue;  // another process took it first: the next slot
    std::memcpy(s.key, k.w, sizeof s.key);
    std::memcpy(&s.value, &value, sizeof value);
    __atomic_store_n(&s.state, kReady, __ATOMIC_RELEASE);
    return;
  }
}

std::size_t SharedMemo::size() {
  std::size_t n = 0;
  if (g_slots == nullptr) return 0;
  for (std::size_t i = 0; i <= g_mask; ++i)
    n += __atomic_load_n(&g_slots[i].state, __ATOMIC_ACQUIRE) == kReady ? 1 : 0;
  return n;
}

void SharedMemo::clear() {
  if (g_slots != nullptr) std::memset(static_cast<void*>(g_slots), 0, (g_mask + 1) * sizeof(Slot));
}

}  // namespace kappasim
