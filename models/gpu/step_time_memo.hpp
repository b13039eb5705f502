// A bounded memo of batch step times (issue 24): the TP step model times every step with
// batch_step_time, a pure function of the batch's slices for a fixed model, GPU, TP degree,
// dtypes, SM fraction and launch costs, and identical batches recur (a trace of whole prefills
// repeats its prompt lengths). The memo is direct-mapped: a batch's slices, compared bit for bit
// (T, K, finishes), pick one of `slots` slots by their hash, and a new batch replaces whatever
// that slot held. Its memory is bounded (`slots` entries at most, made as slots are first used,
// each key's vector reused after), so it stops growing once the slots are used; a hit returns the
// StepTime batch_step_time returned for those very inputs, so a run's outputs are the same with or
// without it. The slot table starts small and grows (×4, up to `slots`) while its entries fill
// more than an eighth of it, so few batches replace another's (issue 24: a run's batches are
// mostly a few hundred kinds, and the whole table zero-filled at the start was fresh pages in
// every forked point of a sweep); growing keeps the entries whose slots stay theirs, so it
// changes which batches a lookup finds, never what it returns.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/random.hpp"
#include "models/gpu/kernel_timing.hpp"

namespace kappasim {

class StepTimeMemo {
 public:
  static constexpr std::size_t kFirstSlots = 512;  // 4 KiB
  explicit StepTimeMemo(std::size_t slots = 4096)
      : m_max_slots(slots == 0 ? 1 : slots), m_slot(std::min(m_max_slots, kFirstSlots)) {}

  // The step time stored for exactly these slices, or nullptr.
  const StepTime* find(const std::vector<SeqSlice>& batch) const {
    const std::uint64_t h = hash(batch);
    const Slot& s = m_slot[static_cast<std::size_t>(h % m_slot.size())];
    // The hash's high half first: another batch in the slot is told apart without its entry.
    if (s.entry == 0 || s.tag != static_cast<std::uint32_t>(h >> 32)) return nullptr;
    const Entry& e = m_entries[s.entry - 1];
    return same(e.key, batch) ? &e.value : nullptr;
  }
  // Stores `value` for these slices, replacing what their slot held.
  void store(const std::vector<SeqSlice>& batch, const StepTime& value) {
    const std::uint64_t h = hash(batch);
    Slot* s = &m_slot[static_cast<std::size_t>(h % m_slot.size())];
    if (s->entry == 0 && 8 * (m_entries.size() + 1) > m_slot.size() &&
        m_slot.size() < m_max_slots) {
      grow();
      s = &m_slot[static_cast<std::size_t>(h % m_slot.size())];
    }
    if (s->entry == 0) {
      m_entries.emplace_back();
      s->entry = static_cast<std::uint32_t>(m_entries.size());
    }
    s->tag = static_cast<std::uint32_t>(h >> 32);
    Entry& e = m_entries[s->entry - 1];
    e.key.assign(batch.begin(), batch.end());
    e.value = value;
  }
  std::size_t slots() const { return m_slot.size(); }       // now (at most the constructor's)
  std::size_t entries() const { return m_entries.size(); }  // slots used so far

  // The slice's hash over the bits of its fields (FNV-1a 64 over T, K and finishes, then a
  // SplitMix64 finaliser), the slot index it picks. Public for the tests.
  static std::uint64_t hash(const std::vector<SeqSlice>& batch) {
    std::uint64_t h = 1469598103934665603ULL;
    const auto mix = [&h](std::uint64_t v) {
      h ^= v;
      h *= 1099511628211ULL;
    };
    for (const SeqSlice& s : batch) {
      mix(bits(s.T));
      mix(bits(s.K));
      mix(s.finishes ? 1 : 0);
    }
    return mix64(h);
  }

 private:
  struct Entry {
    std::vector<SeqSlice> key;
    StepTime value;
  };
  static std::uint64_t bits(double v) {
    std::uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
  }
  // Bit for bit: -0.0 is not 0.0 and a NaN never matches a NaN of other bits.
  static bool same(const std::vector<SeqSlice>& a, const std::vector<SeqSlice>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (bits(a[i].T) != bits(b[i].T) || bits(a[i].K) != bits(b[i].K) ||
          a[i].finishes != b[i].finishes)
        return false;
    return true;
  }
  struct Slot {
    std::uint32_t entry = 0;  // 1 + its entry's index, 0 when unused
    std::uint32_t tag = 0;    // the high half of its batch's hash
  };
  // The table ×4 (at most m_max_slots): each entry into its slot of the new table, in the order
  // they were made; an entry whose slot an earlier one took is dropped (a miss later, as a
  // replaced one is).
  void grow() {
    std::vector<Slot> slot(std::min(m_max_slots, 4 * m_slot.size()));
    std::vector<Entry> kept;
    kept.reserve(m_entries.size());
    for (Entry& e : m_entries) {
      const std::uint64_t h = hash(e.key);
      Slot& s = slot[static_cast<std::size_t>(h % slot.size())];
      if (s.entry != 0) continue;
      kept.push_back(std::move(e));
      s.entry = static_cast<std::uint32_t>(kept.size());
      s.tag = static_cast<std::uint32_t>(h >> 32);
    }
    m_slot.swap(slot);
    m_entries.swap(kept);
  }
  std::size_t m_max_slots;
  std::vector<Slot> m_slot;
  std::vector<Entry> m_entries;
};

}  // namespace kappasim
