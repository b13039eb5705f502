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

  std::vector<size_t> sizes = {size_t(1) << 20, size_t(16) << 20, size_t(256) << 20, max_bytes};
  if (quick) sizes = {size_t(256) << 20};
  const int threads_list[] = {32, 64, 128, 256, 512, 1024};
  const int blocks_list[] = {1, 2, 4, 8, 16, 32};
  const int max_threads = prop.maxThreadsPerMultiProcessor;
  const int max_blocks = prop.maxBlocksPerMultiProcessor;

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

  // Reads alone: width x threads x blocks/SM x unroll x size.
  for (int width : {8, 16})
    for (int unroll : {1, 4, 12})
      for (int threads : threads_list)
        for (int bps : blocks_list) {
          if (threads * bps > max_threads || bps > max_blocks) continue;
          Launch f = pick(false, width, unroll);
          for (size_t bytes : sizes)
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
        for (size_t bytes : sizes)
          row("write", width, threads, bps, 1, bytes, sms, time_it(s0, s1, [&] {
                f(mapped[0], bytes, bps * sms, threads, s0, nullptr);
              }),
              double(bytes));
      }

  // Two at once: two readers (each over its own buffer), and a reader beside a writer. Each
  // kernel gets the grid it would have alone; where both cannot be resident the hardware
  // interleaves their blocks.
  const size_t pair_bytes = size_t(256) << 20;
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

  CHECK(cudaStreamDestroy(s0));
  CHECK(cudaStreamDestroy(s1));
  for (int k = 0; k < 2; ++k) {
    CHECK(cudaFreeHost(b.host[k]));
    CHECK(cudaFree(b.dev[k]));
  }
  CHECK(cudaFree(b.sink));
  return 0;
}
