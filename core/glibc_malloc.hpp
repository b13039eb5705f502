// KAPPASIM_GLIBC_MALLOC: 1 where malloc is glibc's own, so tuning it (mallopt, malloc_trim, the
// main heap's break) means something; 0 under a sanitizer, whose allocator replaces glibc's, and
// off glibc. Used by apps/kappasim/start_heap.cpp (the process's first heap), the sweep
// runner's zygote and core/heap_drain (issue 24).
#pragma once

#define KAPPASIM_GLIBC_MALLOC 1
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || \
    __has_feature(thread_sanitizer)
#undef KAPPASIM_GLIBC_MALLOC
#define KAPPASIM_GLIBC_MALLOC 0
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(__GLIBC__)
#undef KAPPASIM_GLIBC_MALLOC
#define KAPPASIM_GLIBC_MALLOC 0
#endif

namespace kappasim {
// M_MMAP_THRESHOLD as apps/kappasim/start_heap.cpp sets it: allocations up to 4 MiB come from
// the main heap (above SystemC's 3 MiB scratch heap). core/heap_drain restores it after raising
// it for its fence.
inline constexpr int kStartMmapThresholdBytes = 4 << 20;
}  // namespace kappasim
