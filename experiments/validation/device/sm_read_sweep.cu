// SM-driven (zero-copy) host-memory reads and writes over the knobs that set how many loads a GPU
// keeps in flight, for issue 20 ("SM-driven (zero-copy) reads"). Run by run.sh on a lent GPU
// machine; prints CSV on stdout, one row per measurement.
//
// What it measures:
//   read   a kernel reads a pinned, mapped host buffer (cudaHostAlloc(..., cudaHostAllocMapped))
//          with W-byte loads (8: uint2, 16: uint4), T threads per block, B blocks per SM
//          (grid = B x SMs, every block resident: T x B <= 2048 threads and B <= 32 per SM),
//          U independent loads per thread before their values are used (the loads a warp has in
//          flight), over buffers of 1 MiB to 1 GiB. Bytes in flight on the GPU side are
//          SMs x B x T x U x W.
//   write  the same with stores into the host buffer (the D2H direction).
//   pair   two read kernels at once on two streams, each over its own buffer (two loaders), and
//          one read and one write kernel at once (a load beside a store).
//   ce     cudaMemcpyAsync host->device, device->host, and both at once, for reference.
//   latency-host / latency-device   one thread chasing dependent 8-byte loads through pinned host
//          memory (and device memory): one read's round trip, the T in Little's law.
//   The 256 MiB pass and the two-at-once rows run first; other sizes follow (a run cut short by
//   its time limit keeps what matters most).
// Each row: the best and the median of REPS timed runs after one warm-up (CUDA events).
// Nothing here depends on kappasim; the rows are compared with `kappasim probe h2d --engine kernel`
// by the session that records them (docs/validation.md).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                \
                   cudaGetErrorString(e_));                                          \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

namespace {

constexpr int kReps = 3;

template <typename V>
__device__ __forceinline__ unsigned fold(const V& v);
template <>
__device__ __forceinline__ unsigned fold<uint2>(const uint2& v) {
  return v.x ^ v.y;
}
template <>
__device__ __forceinline__ unsigned fold<uint4>(const uint4& v) {
  return v.x ^ v.y ^ v.z ^ v.w;
}

// Grid-stride read: each thread issues U loads of one V each (consecutive threads read
// consecutive V, so a warp's load is one coalesced request), then folds them. `volatile`-free
// loads through the read-only path are avoided (ld.global on a host pointer: uncached sysmem).
template <typename V, int U>
__global__ void read_kernel(const V* __restrict__ src, size_t n, unsigned* sink) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    V v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= fold(v[u]);
  }
  for (; i < n; i += stride) acc ^= fold(src[i]);
  if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the loads; (almost) never taken
}

template <typename V>
__device__ __forceinline__ V pattern();
template <>
__device__ __forceinline__ uint2 pattern<uint2>() {
  return make_uint2(0x5a5a5a5au, 0xa5a5a5a5u);
}
template <>
__device__ __forceinline__ uint4 pattern<uint4>() {
  return make_uint4(0x5a5a5a5au, 0xa5a5a5a5u, 0x5a5a5a5au, 0xa5a5a5a5u);
}

template <typename V, int U>
__global__ void write_kernel(V* __restrict__ dst, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const V v = pattern<V>();
  for (; i < n; i += stride) dst[i] = v;
}

// One thread chasing a chain of dependent 8-byte loads through a buffer: each load's address is
// the value of the one before, so the time per hop is one read's round trip (sysmem: the GPU's
// request over PCIe to the host's root complex and DRAM, and the completion back).
__global__ void chase_kernel(const unsigned long long* __restrict__ base, int hops,
                             unsigned long long* out) {
  unsigned long long i = 0;
  for (int h = 0; h < hops; ++h) i = base[i];
  out[0] = i;
}

// Reads that use G bytes of every 128-byte line (G = 32, 64 or 128): lane l of a warp loads 16 B at
// line (l / (G/16)), offset (l % (G/16)) * 16. With G = 32 each line gives one 32 B sector, so the
// GPU must issue a separate host read per sector: the rate then shows the request size and the
// requester's outstanding-read (tag) limit, not the wire's 128 B completions.
template <int G>
__global__ void granule_kernel(const uint4* __restrict__ src, size_t lines, unsigned* sink) {
  constexpr int lanes_per_line = G / 16;
  constexpr int lines_per_warp = 32 / lanes_per_line;
  const int lane = threadIdx.x & 31;
  const size_t warp = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const size_t warps = (size_t(gridDim.x) * blockDim.x) >> 5;
  unsigned acc = 0;
  for (size_t l0 = warp * lines_per_warp; l0 + lines_per_warp <= lines;
       l0 += warps * lines_per_warp) {
    const size_t line = l0 + lane / lanes_per_line;
    const uint4 v = src[line * 8 + (lane % lanes_per_line)];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

struct Buffers {
  void* host[2] = {nullptr, nullptr};  // pinned, mapped
  void* dev[2] = {nullptr, nullptr};
  unsigned* sink = nullptr;
  size_t bytes = 0;
};

using Launch = void (*)(void* buf, size_t bytes, int grid, int threads, cudaStream_t s,
                        unsigned* sink);

template <typename V, int U>
void launch_read(void* buf, size_t bytes, int grid, int threads, cudaStream_t s, unsigned* sink) {
  read_kernel<V, U><<<grid, threads, 0, s>>>(static_cast<const V*>(buf), bytes / sizeof(V), sink);
}

template <typename V, int U>
void launch_write(void* buf, size_t bytes, int grid, int threads, cudaStream_t s, unsigned*) {
  write_kernel<V, U><<<grid, threads, 0, s>>>(static_cast<V*>(buf), bytes / sizeof(V));
}

Launch pick(bool write, int width, int unroll) {
  if (write) return width == 8 ? launch_write<uint2, 1> : launch_write<uint4, 1>;
  if (width == 8) {
    switch (unroll) {
      case 1: return launch_read<uint2, 1>;
      case 4: return launch_read<uint2, 4>;
      default: return launch_read<uint2, 12>;
    }
  }
  switch (unroll) {
    case 1: return launch_read<uint4, 1>;
    case 4: return launch_read<uint4, 4>;
    default: return launch_read<uint4, 12>;
  }
}

struct Timing {
  double best_s, median_s;
};

// Times `body` (which enqueues work on the given streams) REPS times after one warm-up.
template <typename F>
Timing time_it(cudaStream_t s0, cudaStream_t s1, F body) {
  cudaEvent_t start, stop, joined;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventCreate(&joined));
  std::vector<double> t;
  for (int r = 0; r <= kReps; ++r) {
    CHECK(cudaEventRecord(start, s0));
    CHECK(cudaStreamWaitEvent(s1, start, 0));
    body();
    CHECK(cudaEventRecord(joined, s1));
    CHECK(cudaStreamWaitEvent(s0, joined, 0));
    CHECK(cudaEventRecord(stop, s0));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaGetLastError());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (r > 0) t.push_back(ms * 1e-3);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaEventDestroy(joined));
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

void row(const char* mode, int width, int threads, int blocks_per_sm, int unroll, size_t bytes,
         int sms, Timing tm, double moved_bytes) {
  const double inflight = double(sms) * blocks_per_sm * threads * unroll * width;
  std::printf("%s,%d,%d,%d,%d,%zu,%.0f,%.9f,%.9f,%.3f\n", mode, width, threads, blocks_per_sm,
              unroll, bytes, inflight, tm.best_s, tm.median_s, moved_bytes / tm.best_s / 1e9);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // --quick: the 256 MiB size only (a first look in under a minute).
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  // --extra: only the second pass (sector-granule reads, a size ramp, the round trip under load).
  const bool extra = argc > 1 && std::strcmp(argv[1], "--extra") == 0;
  int dev = 0;
  CHECK(cudaSetDevice(dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  const int sms = prop.multiProcessorCount;
  std::fprintf(stderr, "device %s, %d SMs, %d max threads/SM, %d max blocks/SM, PCIe %x:%x\n",
               prop.name, sms, prop.maxThreadsPerMultiProcessor, prop.maxBlocksPerMultiProcessor,
               prop.pciBusID, prop.pciDeviceID);

  const size_t max_bytes = size_t(1) << 30;
  Buffers b;
  b.bytes = max_bytes;
  for (int k = 0; k < 2; ++k) {
    CHECK(cudaHostAlloc(&b.host[k], max_bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    std::memset(b.host[k], 1 + k, max_bytes);  // touch every page before timing
    CHECK(cudaMalloc(&b.dev[k], max_bytes));
    CHECK(cudaMemset(b.dev[k], 0, max_bytes));
  }
  CHECK(cudaMalloc(&b.sink, sizeof(unsigned)));
  void* mapped[2];
  for (int k = 0; k < 2; ++k) CHECK(cudaHostGetDevicePointer(&mapped[k], b.host[k], 0));

  cudaStream_t s0, s1;
  CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));

  std::printf("mode,width_B,threads,blocks_per_sm,unroll,bytes,gpu_inflight_B,best_s,median_s,"
              "best_GBps\n");

  // In the order the later passes run them (256 MiB first, below).
  std::vector<size_t> sizes = {size_t(16) << 20, size_t(1) << 20, size_t(256) << 20, max_bytes};
  if (quick) sizes = {size_t(256) << 20};
  const int threads_list[] = {32, 64, 128, 256, 512, 1024};
  const int blocks_list[] = {1, 2, 4, 8, 16, 32};
  const int max_threads = prop.maxThreadsPerMultiProcessor;
  const int max_blocks = prop.maxBlocksPerMultiProcessor;

  if (extra) {
    // Sector granules: G useful bytes per 128 B line, at a low and a high number of warps.
    for (int g : {32, 64, 128})
      for (int threads : {128, 1024})
        for (int bps : {1, 2}) {
          const size_t span = size_t(256) << 20;
          const size_t lines = span / 128;
          const double useful = double(lines) * g;
          row(g == 32 ? "granule32" : g == 64 ? "granule64" : "granule128", 16, threads, bps, 1,
              span, sms, time_it(s0, s1, [&] {
                const int grid = bps * sms;
                const uint4* src = static_cast<const uint4*>(mapped[0]);
                if (g == 32) granule_kernel<32><<<grid, threads, 0, s0>>>(src, lines, b.sink);
                if (g == 64) granule_kernel<64><<<grid, threads, 0, s0>>>(src, lines, b.sink);
                if (g == 128) granule_kernel<128><<<grid, threads, 0, s0>>>(src, lines, b.sink);
              }),
              useful);
        }
    // Size ramp: the copy engine, nvbandwidth's kernel shape and LMCache 0.3.5's.
    for (size_t kib : {64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}) {
      const size_t bytes = kib << 10;
      row("ramp-ce-h2d", 0, 0, 0, 0, bytes, sms, time_it(s0, s1, [&] {
            CHECK(cudaMemcpyAsync(b.dev[0], b.host[0], bytes, cudaMemcpyHostToDevice, s0));
          }),
          double(bytes));
      Launch nvb = pick(false, 16, 12);
      row("ramp-read", 16, 512, 1, 12, bytes, sms, time_it(s0, s1, [&] {
            nvb(mapped[0], bytes, sms, 512, s0, b.sink);
          }),
          double(bytes));
      Launch lmc = pick(false, 8, 1);
      row("ramp-read", 8, 32, 32, 1, bytes, sms, time_it(s0, s1, [&] {
            lmc(mapped[0], bytes, 32 * sms, 32, s0, b.sink);
          }),
          double(bytes));
    }
  }

  // Read round trip: a chain with a stride of 4 KiB + 64 B (a new page and line each hop) over
  // the first 256 MiB of the host buffer and, for reference, of device memory. Rows "latency-host"
  // and "latency-device": bytes = the span chased, best_s / median_s = seconds per hop.
  {
    const size_t span = size_t(256) << 20;
    const size_t step = (4096 + 64) / 8;  // in 8-byte words
    const size_t words = span / 8;
    std::vector<unsigned long long> chain(words, 0);
    size_t at = 0, links = 0;
    while (at + step < words) {
      chain[at] = at + step;
      at += step;
      ++links;
    }
    chain[at] = 0;  // close the loop
    unsigned long long* host_chain = static_cast<unsigned long long*>(b.host[1]);
    std::memcpy(host_chain, chain.data(), span);
    CHECK(cudaMemcpy(b.dev[1], chain.data(), span, cudaMemcpyHostToDevice));
    unsigned long long* out = nullptr;
    CHECK(cudaMalloc(&out, sizeof(unsigned long long)));
    const int hops = 20000;
    std::fprintf(stderr, "latency chain: %zu links of %zu B\n", links, step * 8);
    void* host_mapped = nullptr;
    CHECK(cudaHostGetDevicePointer(&host_mapped, b.host[1], 0));
    Timing th = time_it(s0, s1, [&] {
      chase_kernel<<<1, 1, 0, s0>>>(static_cast<const unsigned long long*>(host_mapped), hops,
                                    out);
    });
    Timing td = time_it(s0, s1, [&] {
      chase_kernel<<<1, 1, 0, s0>>>(static_cast<const unsigned long long*>(b.dev[1]), hops, out);
    });
    std::printf("latency-host,8,1,1,1,%zu,8,%.9e,%.9e,0\n", span, th.best_s / hops,
                th.median_s / hops);
    std::printf("latency-device,8,1,1,1,%zu,8,%.9e,%.9e,0\n", span, td.best_s / hops,
                td.median_s / hops);
    std::fflush(stdout);
    if (extra) {
      // The round trip under load: the chase on stream s1 while stream s0 keeps the link busy
      // (an SM reader of nvbandwidth's shape, an SM writer, or the copy engine), timed on s1
      // alone. Rows "latency-host-under-<load>": seconds per hop, best and median of 3.
      const int loaded_hops = 4000;
      const char* loads[] = {"sm-read", "sm-write", "ce-h2d"};
      cudaEvent_t a, z;
      CHECK(cudaEventCreate(&a));
      CHECK(cudaEventCreate(&z));
      for (int li = 0; li < 3; ++li) {
        std::vector<double> t;
        for (int r = 0; r < 4; ++r) {
          if (li == 0) pick(false, 16, 12)(mapped[0], max_bytes, sms, 512, s0, b.sink);
          if (li == 1) pick(true, 16, 1)(mapped[0], max_bytes, 2 * sms, 512, s0, nullptr);
          if (li == 2)
            CHECK(cudaMemcpyAsync(b.dev[0], b.host[0], max_bytes, cudaMemcpyHostToDevice, s0));
          CHECK(cudaEventRecord(a, s1));
          chase_kernel<<<1, 1, 0, s1>>>(static_cast<const unsigned long long*>(host_mapped),
                                        loaded_hops, out);
          CHECK(cudaEventRecord(z, s1));
          CHECK(cudaDeviceSynchronize());
          CHECK(cudaGetLastError());
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, a, z));
          if (r > 0) t.push_back(ms * 1e-3 / loaded_hops);
        }
        std::sort(t.begin(), t.end());
        std::printf("latency-host-under-%s,8,1,1,1,%zu,8,%.9e,%.9e,0\n", loads[li], span,
                    t.front(), t[t.size() / 2]);
        std::fflush(stdout);
      }
      CHECK(cudaEventDestroy(a));
      CHECK(cudaEventDestroy(z));
    }
    CHECK(cudaFree(out));
    std::memset(b.host[1], 2, span);
  }
  if (extra) return 0;

  // CE reference.
  for (size_t bytes : sizes) {
    row("ce-h2d", 0, 0, 0, 0, bytes, sms, time_it(s0, s1, [&] {
          CHECK(cudaMemcpyAsync(b.dev[0], b.host[0], bytes, cudaMemcpyHostToDevice, s0));
        }),
        double(bytes));
    row("ce-d2h", 0, 0, 0, 0, bytes, sms, time_it(s0, s1, [&] {
          CHECK(cudaMemcpyAsync(b.host[0], b.dev[0], bytes, cudaMemcpyDeviceToHost, s0));
        }),
        double(bytes));
    row("ce-bidir", 0, 0, 0, 0, bytes, sms, time_it(s0, s1, [&] {
          CHECK(cudaMemcpyAsync(b.dev[0], b.host[0], bytes, cudaMemcpyHostToDevice, s0));
          CHECK(cudaMemcpyAsync(b.host[1], b.dev[1], bytes, cudaMemcpyDeviceToHost, s1));
        }),
        2.0 * double(bytes));
  }

  // Reads alone: width x threads x blocks/SM x unroll, one size at a time, and writes the same
  // way. The 256 MiB pass (every configuration) and the two-at-once rows come first, so that a
  // run cut short by its time limit still holds them; the other sizes follow.
  auto reads_and_writes = [&](size_t bytes) {
    for (int width : {8, 16})
      for (int unroll : {1, 4, 12})
        for (int threads : threads_list)
          for (int bps : blocks_list) {
            if (threads * bps > max_threads || bps > max_blocks) continue;
            Launch f = pick(false, width, unroll);
            row("read", width, threads, bps, unroll, bytes, sms, time_it(s0, s1, [&] {
                  f(mapped[0], bytes, bps * sms, threads, s0, b.sink);
                }),
                double(bytes));
          }
    // Writes alone (one store per thread per iteration; stores do not wait for completions).
    for (int width : {8, 16})
      for (int threads : threads_list)
        for (int bps : blocks_list) {
          if (threads * bps > max_threads || bps > max_blocks) continue;
          Launch f = pick(true, width, 1);
          row("write", width, threads, bps, 1, bytes, sms, time_it(s0, s1, [&] {
                f(mapped[0], bytes, bps * sms, threads, s0, nullptr);
              }),
              double(bytes));
        }
  };

  const size_t pair_bytes = size_t(256) << 20;
  reads_and_writes(pair_bytes);

  // Two at once: two readers (each over its own buffer), and a reader beside a writer. Each
  // kernel gets the grid it would have alone; where both cannot be resident the hardware
  // interleaves their blocks.
  for (int unroll : {1, 4, 12})
    for (int threads : {128, 256, 512})
      for (int bps : {1, 2, 4}) {
        Launch rd = pick(false, 16, unroll);
        Launch wr = pick(true, 16, 1);
        row("read-alone", 16, threads, bps, unroll, pair_bytes, sms, time_it(s0, s1, [&] {
              rd(mapped[0], pair_bytes, bps * sms, threads, s0, b.sink);
            }),
            double(pair_bytes));
        row("read+read", 16, threads, bps, unroll, pair_bytes, sms, time_it(s0, s1, [&] {
              rd(mapped[0], pair_bytes, bps * sms, threads, s0, b.sink);
              rd(mapped[1], pair_bytes, bps * sms, threads, s1, b.sink);
            }),
            2.0 * double(pair_bytes));
        row("read+write", 16, threads, bps, unroll, pair_bytes, sms, time_it(s0, s1, [&] {
              rd(mapped[0], pair_bytes, bps * sms, threads, s0, b.sink);
              wr(mapped[1], pair_bytes, bps * sms, threads, s1, nullptr);
            }),
            2.0 * double(pair_bytes));
        row("read+ce-h2d", 16, threads, bps, unroll, pair_bytes, sms, time_it(s0, s1, [&] {
              rd(mapped[0], pair_bytes, bps * sms, threads, s0, b.sink);
              CHECK(cudaMemcpyAsync(b.dev[1], b.host[1], pair_bytes, cudaMemcpyHostToDevice, s1));
            }),
            2.0 * double(pair_bytes));
      }

  for (size_t bytes : sizes)
    if (bytes != pair_bytes) reads_and_writes(bytes);

  CHECK(cudaStreamDestroy(s0));
  CHECK(cudaStreamDestroy(s1));
  for (int k = 0; k < 2; ++k) {
    CHECK(cudaFreeHost(b.host[k]));
    CHECK(cudaFree(b.dev[k]));
  }
  CHECK(cudaFree(b.sink));
  return 0;
}
