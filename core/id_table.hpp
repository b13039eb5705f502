// A map from 64-bit ids to values for a live set that is small next to the id range (the engine's
// live requests, a KV pool's holders): an open-addressing table, linear probing from a
// Fibonacci hash, a power-of-two size at most half full, deletion by backward shift (no
// tombstones). Issue 24: a lookup is a multiply and a probe or two instead of a std::map's
// descent, and an insertion or erasure allocates nothing (the slots grow, never shrink: memory
// stays at the largest live set's). Values live in the slots and move when the table grows or an
// erasure shifts them: hold a stable address by a pointer value. Iteration (for_each) is in slot
// order, which depends on the ids and the history: only for order-free uses (integer sums).
// Pure C++.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kappasim {

template <class V>
class IdTable {
 public:
  std::size_t size() const { return m_size; }
  bool empty() const { return m_size == 0; }

  // The value of `id`, or nullptr when absent.
  V* find(std::uint64_t id) {
    const std::size_t i = slot_of(id);
    return i == npos() ? nullptr : &m_slots[i].value;
  }
  const V* find(std::uint64_t id) const {
    const std::size_t i = slot_of(id);
    return i == npos() ? nullptr : &m_slots[i].value;
  }
  // Inserts `id` (which must be absent) with value v; returns its value.
  V& insert(std::uint64_t id, V v) {
    if ((m_size + 1) * 2 > m_slots.size()) grow();
    const std::size_t mask = m_slots.size() - 1;
    std::size_t i = home(id);
    while (m_slots[i].used) i = (i + 1) & mask;
    Slot& s = m_slots[i];
    s.id = id;
    s.used = true;
    s.value = std::move(v);
    ++m_size;
    return s.value;
  }
  // Removes `id`, its value moved into *out when out is given; false when absent.
  bool erase(std::uint64_t id, V* out = nullptr) {
    std::size_t i = slot_of(id);
    if (i == npos()) return false;
    if (out) *out = std::move(m_slots[i].value);
    --m_size;
    // Backward shift: a later entry of the probe run moves into the hole when the hole lies
    // between its home and where it sits.
    const std::size_t mask = m_slots.size() - 1;
    for (std::size_t j = (i + 1) & mask; m_slots[j].used; j = (j + 1) & mask)
      if (((j - home(m_slots[j].id)) & mask) >= ((j - i) & mask)) {
        m_slots[i].id = m_slots[j].id;
        m_slots[i].value = std::move(m_slots[j].value);
        i = j;
      }
    m_slots[i].used = false;
    m_slots[i].value = V();
    return true;
  }
  // f(id, value) for every entry, in slot order.
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : m_slots)
      if (s.used) f(s.id, s.value);
  }

 private:
  struct Slot {
    std::uint64_t id = 0;
    bool used = false;
    V value{};
  };
  std::size_t npos() const { return m_slots.size(); }
  std::size_t home(std::uint64_t id) const {
    return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ull) >> m_shift);
  }
  std::size_t slot_of(std::uint64_t id) const {
    if (m_size == 0) return npos();
    const std::size_t mask = m_slots.size() - 1;
    for (std::size_t i = home(id);; i = (i + 1) & mask) {
      const Slot& s = m_slots[i];
      if (!s.used) return npos();
      if (s.id == id) return i;
    }
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(m_slots);
    const std::size_t n = old.empty() ? 16 : old.size() * 2;
    m_slots.resize(n);
    m_shift = 64;
    for (std::size_t k = n; k > 1; k /= 2) --m_shift;
    const std::size_t mask = n - 1;
    for (Slot& s : old) {
      if (!s.used) continue;
      std::size_t i = home(s.id);
      while (m_slots[i].used) i = (i + 1) & mask;
      m_slots[i].id = s.id;
      m_slots[i].used = true;
      m_slots[i].value = std::move(s.value);
    }
  }

  std::vector<Slot> m_slots;
  int m_shift = 64;  // 64 − log2(m_slots.size())
  std::size_t m_size = 0;
};

}  // namespace kappasim
