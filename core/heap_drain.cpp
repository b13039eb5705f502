#include "core/heap_drain.hpp"

#include "core/glibc_malloc.hpp"

#if KAPPASIM_GLIBC_MALLOC
#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#endif

namespace kappasim {

#if KAPPASIM_GLIBC_MALLOC
namespace {

// mallinfo2's free bytes of the main arena below its top chunk. glibc (malloc/malloc.c,
// int_mallinfo): fordblks counts every free chunk, the top chunk included; keepcost is the top
// chunk's size.
std::size_t free_below_top() {
  const struct mallinfo2 mi = ::mallinfo2();
  return mi.fordblks > mi.keepcost ? mi.fordblks - mi.keepcost : 0;
}

// glibc's default M_MMAP_THRESHOLD maximum on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX: 32 MiB).
constexpr std::size_t kMaxThreshold = std::size_t{32} << 20;
// The most a thread cache holds (glibc: 64 sizes of chunk, 32 to 1,040 bytes, 7 of each).
constexpr std::size_t kTcacheBytes = 64 * 7 * 1040;
constexpr std::size_t kTcacheMaxRequest = 1032;

}  // namespace

HeapDrain drain_free_heap() {
  HeapDrain d;
  d.free_before = free_below_top();
  // The fence: an allocation larger than every free chunk below the top, so it is carved from
  // the top chunk; every free chunk lies below it, and whatever comes from the top lies above.
  const std::size_t fence_bytes = d.free_before + 4096;
  if (fence_bytes >= kMaxThreshold / 2) return d;  // too much to take: leave the heap as it is
  // Below the mmap threshold, so the fence comes from the heap (start_heap.cpp sets 4 MiB; the
  // threshold is restored below).
  const int threshold = static_cast<int>(kMaxThreshold);
  if (::mallopt(M_MMAP_THRESHOLD, threshold) != 1) return d;
  char* const fence = static_cast<char*>(std::malloc(fence_bytes));
  const auto brk = reinterpret_cast<char*>(::sbrk(0));
  if (fence != nullptr && fence < brk) {
    // Largest sizes first: a large free chunk goes in one piece, small ones and the remainders
    // of split chunks in smaller pieces. Then every small chunk size once more: freed small
    // chunks wait in glibc's per-thread cache (tcache: up to 7 of each size to 1,032 bytes,
    // counted as in use by mallinfo2), which only an allocation of their exact size takes. An
    // allocation from above the fence came from the top chunk, and the next size is tried: a
    // large one is given back (it merges into the top chunk again), a small one is kept (freed,
    // it would wait in the cache for the next allocation of its size, above the fence). Bounded:
    // each kept allocation below the fence takes free bytes there.
    const std::size_t bound = d.free_before + kTcacheBytes + 4096;
    const auto take = [&](std::size_t size) {
      while (d.taken <= bound) {
        char* p = static_cast<char*>(std::malloc(size));
        if (p == nullptr) return;
        if (p > fence) {
          if (size > kTcacheMaxRequest) std::free(p);
          return;
        }
        d.taken += size;  // kept: never freed, never touched again
      }
    };
    for (std::size_t size = std::size_t{1} << 22; size >= 16; size >>= 1) take(size);
    for (std::size_t size = 16; size <= 1024; size += 16) take(size);  // chunks of size + 16
    d.ran = true;
    // The fence is kept too: untouched pages but its first (no memory), and freed it could not
    // merge into the top chunk past the small allocations kept above it.
  } else {
    std::free(fence);
  }
  // The threshold as start_heap.cpp sets it (mallopt cannot read it back; a process that did
  // not set it, a test binary, keeps 4 MiB from here on).
  ::mallopt(M_MMAP_THRESHOLD, kStartMmapThresholdBytes);
  d.free_after = free_below_top();
  return d;
}
#else
HeapDrain drain_free_heap() { return {}; }
#endif

}  // namespace kappasim
