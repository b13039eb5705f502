// drain_free_heap (core/heap_drain): after it, the main heap has no free chunk below its top
// chunk, so a new allocation is carved from the top, above every chunk freed before; and it
// takes no more than the free bytes there were. Run in forked children: the drain keeps what it
// takes for the life of the process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/glibc_malloc.hpp"
#include "core/heap_drain.hpp"
#include "tests/unit/in_child.hpp"

namespace kappasim {
namespace heap_drain_test {
namespace {

using test_util::in_child;

#if KAPPASIM_GLIBC_MALLOC
TEST(HeapDrain, AfterItANewAllocationComesFromAboveEveryChunkFreedBefore) {
  EXPECT_EQ(in_child([] {
              // 400 chunks of 2 KiB to 64 KiB (above the thread cache's sizes, so a freed one
              // is a free chunk of the heap) and 100 small ones, then a plug above them so that
              // their frees cannot merge into the top chunk; every other one freed: free chunks
              // scattered below the top, of at least the bytes asked for, and small chunks in
              // the thread cache.
              std::vector<char*> chunks, small;
              std::size_t freed = 0;
              for (int i = 0; i < 400; ++i) {
                chunks.push_back(static_cast<char*>(std::malloc(std::size_t{2048} << (i % 6))));
                chunks.back()[0] = 1;
                if (i % 4 == 0) small.push_back(static_cast<char*>(std::malloc(24 + 8 * (i % 40))));
              }
              char* const plug = static_cast<char*>(std::malloc(64));
              for (int i = 0; i < 400; i += 2) {
                freed += std::size_t{2048} << (i % 6);
                std::free(chunks[static_cast<std::size_t>(i)]);
              }
              for (std::size_t i = 0; i < small.size(); i += 2) std::free(small[i]);
              const HeapDrain d = drain_free_heap();
              if (!d.ran) return 1;
              if (d.free_before < freed) return 2;  // at least what was freed
              if (d.free_after != 0) return 3;      // nothing free left below the top
              if (d.taken > d.free_before + 64 * 7 * 1040 + 4096) return 4;  // only what was free
              char* const next = static_cast<char*>(std::malloc(64));
              if (!(next > plug)) return 5;  // from the top chunk, above the plug
              for (std::size_t bytes = 24; bytes <= 344; bytes += 8)  // none from the cache
                if (!(static_cast<char*>(std::malloc(bytes)) > plug)) return 7;
              for (std::size_t i = 0; i < chunks.size(); ++i)
                if (i % 2 == 1 && next <= chunks[i]) return 6;
              return 0;
            }),
            0);
}

TEST(HeapDrain, LeavesTheMmapThresholdAtTheStartHeapsValue) {
  // An allocation just under 4 MiB still comes from the heap after the drain (below the program
  // break), one of 4 MiB from its own mapping (glibc: size >= threshold is mmapped).
  EXPECT_EQ(in_child([] {
              (void)drain_free_heap();
              char* const under = static_cast<char*>(std::malloc((std::size_t{4} << 20) - 4096));
              char* const at = static_cast<char*>(std::malloc(std::size_t{4} << 20));
              char* const brk = static_cast<char*>(::sbrk(0));
              if (!(under < brk)) return 1;
              if (!(at > brk)) return 2;
              return 0;
            }),
            0);
}
#else
TEST(HeapDrain, DoesNothingWithoutGlibcMalloc) { EXPECT_FALSE(drain_free_heap().ran); }
#endif

}  // namespace
}  // namespace heap_drain_test
}  // namespace kappasim
