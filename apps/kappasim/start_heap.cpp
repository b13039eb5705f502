// Issue 24: the start of a process. libsystemc's static initialisation allocates and zero-fills
// a 3 MiB scratch heap (`sc_core::sc_temp_heap`, sysc/utils/sc_temporary.h: `new char[0x300000]`
// then `memset`), which glibc serves from a fresh mmap: 768 page faults, one per 4 KiB page,
// about a tenth of a short run's CPU on a VM whose faults are dear. This function runs from
// .preinit_array, before any shared library's initialiser: it makes allocations up to 4 MiB come
// from the main heap, grows that heap once by 4 MiB and faults the growth in with one
// madvise(MADV_POPULATE_WRITE) (Linux 5.14; elsewhere the call fails and nothing changes), so
// SystemC's 3 MiB lands on memory already present. Allocation only: no output changes.
// Not in sanitizer builds (their allocators are not glibc's).
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || \
    __has_feature(thread_sanitizer)
#define KAPPASIM_START_HEAP_OFF 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KAPPASIM_START_HEAP_OFF 1
#endif

#if !defined(KAPPASIM_START_HEAP_OFF) && defined(__GLIBC__) && defined(__linux__)
namespace {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14 (uapi/asm-generic/mman-common.h)
#endif

constexpr int kStartHeapBytes = 4 << 20;  // above SystemC's 3 MiB scratch heap

void kappasim_start_heap() {
  if (mallopt(M_MMAP_THRESHOLD, kStartHeapBytes) != 1 || mallopt(M_TOP_PAD, kStartHeapBytes) != 1)
    return;
  void* p = std::malloc(64);  // grows the main heap by the pad
  if (p == nullptr) return;
  const auto from = (reinterpret_cast<std::uintptr_t>(p) + 4095) & ~std::uintptr_t{4095};
  std::free(p);
  const auto to = reinterpret_cast<std::uintptr_t>(sbrk(0));
  // Only the main heap's top, just grown: [first page after p, the program break).
  if (to > from && to - from <= std::uintptr_t{2} * kStartHeapBytes)
    (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
}

}  // namespace

__attribute__((section(".preinit_array"),
               used)) static void (*const kappasim_start_heap_p)() = kappasim_start_heap;
#endif
