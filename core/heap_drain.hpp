// The sweep runner's zygote forks every point of a sweep from one process (issue 24). A point
// that allocates reuses the zygote's free heap chunks first: scattered over pages the zygote
// has written, so each of its first writes there is a copy-on-write page fault, and the pages
// it touches are sparse (a chunk here, a chunk there). drain_free_heap() runs in the zygote
// before it forks: it takes every free chunk of the main heap below the heap's top chunk and
// keeps them (they are never touched again), so a point's allocations come from the top chunk:
// untouched pages, filled densely. Allocation only: addresses are no output.
#pragma once

#include <cstddef>

namespace kappasim {

struct HeapDrain {
  std::size_t free_before = 0;  // free bytes below the top chunk before the drain
  std::size_t taken = 0;        // bytes of allocations kept
  std::size_t free_after = 0;   // free bytes below the top chunk after it
  bool ran = false;             // false where malloc is not glibc's or the heap is too fragmented
};

// Takes the main heap's free chunks below its top chunk (glibc malloc only; elsewhere, and
// under a sanitizer's allocator, does nothing). Not for a process with other threads.
HeapDrain drain_free_heap();

}  // namespace kappasim
