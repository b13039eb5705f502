// A table of a pure function's answers shared by a process and every process it forks after
// share() (issue 24): a sweep's points are forked processes, and each computed again what its
// siblings had (`reproduce`: 539,638 binomial sums of the MoE row-block model over 1,360
// processes, 49,350 of them distinct). A key is four words (the first names the function);
// a value is a double. An answer read from the table is the bits the function would compute
// again, so outputs are the same whoever computed it first and whatever the number of workers.
//
// Where a key goes: the words but the second pick a region of kRegionSlots slots, the second
// its slot there (probing on from it). A function's answers that vary in one argument within a
// run (the MoE sum's token count, over one model's routing odds and block) then sit in one region
// of the table, so a forked process maps only the pages of its regions (issue 24: reading its
// answers from all over the 6 MiB table, a sweep point took ~90 page faults for them).
//
// Lock-free across processes: a slot is claimed by a compare-and-swap of its state word, filled,
// then published (release); a reader takes only published slots (acquire). Two processes may
// both miss a key and both insert it (the same value twice): harmless. A full neighbourhood
// (kProbe slots) drops the insert. Without share() (a single run, or where the shared mapping
// cannot be made) find() misses and insert() does nothing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kappasim {

class SharedMemo {
 public:
  // Maps the table (`slots` rounded up to a power of two, 48 bytes each, shared anonymous
  // memory: pages are committed as slots are written) unless it is mapped already. Call before
  // forking the processes that should share it. False when the mapping fails.
  static bool share(std::size_t slots = std::size_t{1} << 17);
  static bool shared();
  struct Key {
    std::uint64_t w[4];
  };
  // The value kept for `k`; false when none is (or no table is mapped).
  static bool find(const Key& k, double& value);
  static void insert(const Key& k, double value);
  // Published slots (for tests and benchmarks).
  static std::size_t size();
  // Empties the table (tests only: no process may be using it).
  static void clear();
  static constexpr std::size_t kProbe = 32;
  static constexpr std::size_t kRegionSlots = std::size_t{1} << 13;  // 384 KiB
};

}  // namespace kappasim
