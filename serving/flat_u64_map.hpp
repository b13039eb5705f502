// A flat hash map from 64-bit keys to 32-bit values: open addressing, linear probing,
// backward-shift deletion, power-of-two table. One allocation per growth and none per insert,
// so it replaces std::unordered_map/set<uint64_t> on the serving hot path (issue 24). A slot is
// 12 bytes, the key and its value; the value kNone (never stored) marks an empty slot. (It was
// 16 with a separate flag: a capacity search's warm tiers grow tables of tens of thousands of
// slots in every probe process, whose pages are each a page fault; issue 24.)
// Never iterated by callers: membership and lookup only, so its order cannot reach an output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kappasim {

class FlatU64Map {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  std::size_t size() const { return m_size; }
  bool empty() const { return m_size == 0; }

  // The value stored for `key`, or kNone.
  std::uint32_t find(std::uint64_t key) const {
    const std::uint32_t* v = value_of(key);
    return v ? *v : kNone;
  }
  bool contains(std::uint64_t key) const { return find(key) != kNone; }

  // The stored value of `key` to read or change in place, or nullptr when absent. Valid until
  // the next insert, emplace or erase (they may move slots).
  std::uint32_t* find_value(std::uint64_t key) { return const_cast<std::uint32_t*>(value_of(key)); }

  // The value of `key`, inserted as `value` when absent (second: true then): one probe run
  // for "find, else insert". The pointer is valid as find_value's. `value` must not be kNone.
  std::pair<std::uint32_t*, bool> emplace(std::uint64_t key, std::uint32_t value) {
    // At most half full: a lookup of an absent key (every new chunk a tier places) probes
    // about (1 + 1/(1 - load)^2) / 2 slots under linear probing, 2.5 at 1/2 against 32.5 at
    // the 7/8 this used to allow (a capacity search's warm passes spent ~20% of their CPU in
    // those probes; issue 24). Twice the slots at worst: 12 B per slot.
    if ((m_size + 1) * 2 > m_slots.size()) grow();
    for (std::size_t i = slot_of(key);; i = (i + 1) & m_mask) {
      Slot& s = m_slots[i];
      if (s.value == kNone) {
        s = Slot{key, value};
        ++m_size;
        return {&s.value, true};
      }
      if (s.key == key) return {&s.value, false};
    }
  }

  // Inserts key -> value when absent; returns false (nothing changes) when present.
  bool insert(std::uint64_t key, std::uint32_t value) { return emplace(key, value).second; }

  // Removes `key`; false when absent.
  bool erase(std::uint64_t key) {
    if (m_size == 0) return false;
    std::size_t i = slot_of(key);
    for (;; i = (i + 1) & m_mask) {
      if (m_slots[i].value == kNone) return false;
      if (m_slots[i].key == key) break;
    }
    erase_at(i);
    return true;
  }
  // Removes the entry whose value `v` is (from find_value or emplace, still valid): erase()
  // without probing for its key again (issue 24).
  void erase_value(std::uint32_t* v) {
    const Slot* s =
        reinterpret_cast<const Slot*>(reinterpret_cast<const char*>(v) - offsetof(Slot, value));
    erase_at(static_cast<std::size_t>(s - m_slots.data()));
  }

  // `v` (from find_value or emplace for `key`) when its slot still holds `key`, else key's value
  // found again (an erase since may have moved it); nullptr when key is absent.
  std::uint32_t* refind(std::uint32_t* v, std::uint64_t key) {
    const Slot* s =
        reinterpret_cast<const Slot*>(reinterpret_cast<const char*>(v) - offsetof(Slot, value));
    return s->value != kNone && s->key == key ? v : find_value(key);
  }

  void clear() {
    m_slots.assign(m_slots.size(), Slot{});
    m_size = 0;
  }

 private:
  void erase_at(std::size_t i) {
    // Backward shift: move later members of the probe run into the hole when their home slot
    // allows, so lookups never need tombstones.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & m_mask; m_slots[j].value != kNone; j = (j + 1) & m_mask) {
      const std::size_t home = slot_of(m_slots[j].key);
      // j may move to `hole` when home is not in the cyclic interval (hole, j].
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        m_slots[hole] = m_slots[j];
        hole = j;
      }
    }
    m_slots[hole].value = kNone;
    --m_size;
  }
#pragma pack(push, 4)
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t value = kNone;  // kNone: empty
  };
#pragma pack(pop)
  static_assert(sizeof(Slot) == 12, "a slot is a key and a value");
  const std::uint32_t* value_of(std::uint64_t key) const {
    if (m_size == 0) return nullptr;
    for (std::size_t i = slot_of(key);; i = (i + 1) & m_mask) {
      const Slot& s = m_slots[i];
      if (s.value == kNone) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  std::size_t slot_of(std::uint64_t key) const {
    // Fibonacci hashing over a SplitMix-style fold: keys need not be well mixed.
    key ^= key >> 31;
    key *= 0x9e3779b97f4a7c15ULL;
    return static_cast<std::size_t>(key >> m_shift);
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(m_slots);
    const std::size_t n = old.empty() ? 16 : old.size() * 2;
    m_slots.assign(n, Slot{});
    m_mask = n - 1;
    m_shift = 64;
    for (std::size_t b = n; b > 1; b >>= 1) --m_shift;
    m_size = 0;
    for (const Slot& s : old)
      if (s.value != kNone) insert(s.key, s.value);
  }

  std::vector<Slot> m_slots;
  std::size_t m_mask = 0;
  int m_shift = 64;
  std::size_t m_size = 0;
};

}  // namespace kappasim
