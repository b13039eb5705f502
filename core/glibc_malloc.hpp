// KAPPASIM_SANITIZER: 1 in a build under AddressSanitizer, MemorySanitizer, ThreadSanitizer or
// LeakSanitizer (whose allocator replaces glibc's, and whose checks run at a normal exit).
// KAPPASIM_GLIBC_MALLOC: 1 where malloc is glibc's own, so tuning it (mallopt, malloc_trim, the
// main heap's break) means something; 0 under a sanitizer and off glibc. Used by
// apps/kappasim/start_heap.cpp (the process's first heap), the sweep runner's zygote and
// core/heap_drain (issue 24); KAPPASIM_SANITIZER also by apps/kappasim/main.cpp (its exit).
#pragma once

#define KAPPASIM_SANITIZER 0
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || \
    __has_feature(thread_sanitizer) || __has_feature(leak_sanitizer)
#undef KAPPASIM_SANITIZER
#define KAPPASIM_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#undef KAPPASIM_SANITIZER
#define KAPPASIM_SANITIZER 1
#endif

#if KAPPASIM_SANITIZER || !defined(__GLIBC__)
#define KAPPASIM_GLIBC_MALLOC 0
#else
#define KAPPASIM_GLIBC_MALLOC 1
#endif

namespace kappasim {
// M_MMAP_THRESHOLD as apps/kappasim/start_heap.cpp sets it: allocations up to 4 MiB come from
// the main heap (above SystemC's 3 MiB scratch heap). core/heap_drain restores it after raising
// it for its fence.
inline constexpr int kStartMmapThresholdBytes = 4 << 20;
}  // namespace kappasim
