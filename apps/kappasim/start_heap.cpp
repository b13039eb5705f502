// Issue 24: the start of a process. libsystemc's static initialisation allocates and zero-fills
// a 3 MiB scratch heap (`sc_core::sc_temp_heap`, sysc/utils/sc_temporary.h: `new char[0x300000]`
// then `memset`), which glibc serves from a fresh mmap: 768 page faults, one per 4 KiB page. On
// a VM whose page faults are dear (≈ 13–20 µs each here) that was a tenth of a short run's CPU,
// and every later 4 KiB of heap a run touches costs another. This function runs from
// .preinit_array, before any shared library's initialiser (and before the first malloc): it makes
// allocations up to 4 MiB come from the main heap, starts that heap one page below a 2 MiB
// boundary, grows it once by 32 MiB (address space only), asks for transparent huge pages over
// all of it (madvise(MADV_HUGEPAGE): the kernel's `transparent_hugepage/enabled` is `madvise` on
// common distributions) and faults its first 4 MiB in with one madvise(MADV_POPULATE_WRITE)
// (Linux 5.14; elsewhere the calls fail and nothing changes). SystemC's 3 MiB then lands on two
// present 2 MiB pages, and the rest of a run's heap is faulted in 2 MiB at a time (a
// 100,000-request run: ≈ 260 page faults instead of ≈ 1,100). Resident memory grows in 2 MiB steps,
// so a process holds up to 2 MiB more than it uses. Allocation only: no output changes. Not in
// sanitizer builds (their allocators are not glibc's).
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "core/glibc_malloc.hpp"

#if KAPPASIM_GLIBC_MALLOC && defined(__linux__)
namespace {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14 (uapi/asm-generic/mman-common.h)
#endif

constexpr int kStartHeapBytes = kappasim::kStartMmapThresholdBytes;
constexpr int kHeapPadBytes = 32 << 20;  // the main heap's first growth (virtual until used)
constexpr std::uintptr_t kPage = 4096;
constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

void kappasim_start_heap() {
  if (mallopt(M_MMAP_THRESHOLD, kStartHeapBytes) != 1 || mallopt(M_TOP_PAD, kHeapPadBytes) != 1)
    return;
  // No malloc has run yet (preinit), so the main heap will start at the program break: move the
  // break up to one page below a 2 MiB boundary first (the skipped addresses are never touched).
  // malloc's own headers then sit in that first page, and the 2 MiB ranges above it are untouched
  // when they are marked for huge pages (a range with a small page already in it gets none). The
  // pad stays the heap's top pad, so glibc keeps 32 MiB at the top when it trims; beyond it the
  // heap grows on ordinary pages.
  // glibc takes a break moved by someone else in its stride should malloc already have run.
  const auto brk0 = reinterpret_cast<std::uintptr_t>(sbrk(0));
  const std::uintptr_t start = ((brk0 + kPage + kHugePage - 1) & ~(kHugePage - 1)) - kPage;
  if (start > brk0 && sbrk(static_cast<intptr_t>(start - brk0)) == reinterpret_cast<void*>(-1))
    return;
  void* p = std::malloc(64);  // grows the main heap by the pad
  if (p == nullptr) return;
  const auto from = reinterpret_cast<std::uintptr_t>(p) & ~(kPage - 1);
  std::free(p);
  const auto to = reinterpret_cast<std::uintptr_t>(sbrk(0));
  // Only the main heap's top, just grown: [the page of p, the program break).
  if (to <= from || to - from > std::uintptr_t{2} * kHeapPadBytes) return;
  const std::uintptr_t huge_from = (from + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t huge_to = to & ~(kHugePage - 1);
  if (huge_to > huge_from)
    (void)madvise(reinterpret_cast<void*>(huge_from), huge_to - huge_from, MADV_HUGEPAGE);
  const std::uintptr_t fill_to = std::min<std::uintptr_t>(to, huge_from + kStartHeapBytes);
  (void)madvise(reinterpret_cast<void*>(from), fill_to - from, MADV_POPULATE_WRITE);
}

}  // namespace

__attribute__((section(".preinit_array"),
               used)) static void (*const kappasim_start_heap_p)() = kappasim_start_heap;
#endif

// Issue 24: the program's own machine code, mapped in one call at the start. A run touches code
// all over kappasim's 4.5 MiB of text, and each first touch of a 64 KiB stretch of it was a page
// fault (≈ 60 in a one-request run, ≈ 10 µs each on a VM whose page faults are dear);
// madvise(MADV_POPULATE_READ) (Linux 5.14; elsewhere it fails and nothing changes) maps the
// pages, already in the page cache, with no fault. The process's resident set counts the text
// it maps (shared with every other kappasim process), ≈ 1 MB more than a run touched. Code
// only: no output changes.
#if defined(__linux__)
extern "C" char __executable_start[], etext[];  // the linker's: the program's first byte, its
                                                // text's end
namespace {

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14 (uapi/asm-generic/mman-common.h)
#endif

void kappasim_map_text() {
  constexpr std::uintptr_t kTextPage = 4096;
  const std::uintptr_t from =
      reinterpret_cast<std::uintptr_t>(__executable_start) & ~(kTextPage - 1);
  const auto to = reinterpret_cast<std::uintptr_t>(etext);
  if (to > from) (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_READ);
}

}  // namespace

__attribute__((section(".preinit_array"),
               used)) static void (*const kappasim_map_text_p)() = kappasim_map_text;
#endif
