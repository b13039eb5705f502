// GpuCompute: one GPU's compute engine as a SystemC module (one per GPU of a TP group).
//
// What it models: the kernel sequence of a transformer prefill on this GPU, run in order on one
// stream, each kernel a timed wait whose duration comes from the pure kernel model
// (models/gpu/kernel_timing: roofline of FLOPs at an achievable fraction with tile/wave
// quantisation against HBM bytes, plus a launch overhead; ring all-reduce over NVLink). The
// GPU's SMs are an SmPool: copy kernels (LMCache's zero-copy load path) acquire SMs from it, and
// each compute kernel runs at the fraction of SMs free when it starts.
//
// Events: fine mode (default) waits once per kernel, i.e. per request-layer 10 waits for a dense
// GQA layer (Llama) at tp 1, 13 for a Qwen3 MoE layer, 18 for a DeepSeek-V3 MLA + MoE layer with
// its shared expert (13 for its dense layers); 2 more each at tp > 1 (the all-reduces); plus 3
// per prefill (embedding, final norm, LM head) and 1 for the per-forward host cost; FP8/INT8
// weights add one activation-quantisation kernel per quantised GEMM. Coarse mode
// waits once per layer (the sum of its kernels, all at the SM fraction seen at layer start) and
// once for the edge kernels before and after the layers.
//
// What it ignores: overlap between kernels (one stream; no PDL or CUDA-graph launch hiding),
// SMs taken by NCCL, HBM bandwidth used by concurrent copies, changes to the SM share during a
// kernel (the share at kernel start holds to its end), power and clock throttling, batching of
// several requests into one forward pass (callers pass the batch's T and K).
//
// Sources: see models/gpu/kernel_timing.hpp and docs/compute-model.md; every efficiency is a
// sourced preset field (presets/gpus/*.yaml).
#pragma once

#include <cstdint>
#include <string>
#include <systemc>

#include "models/gpu/gpu_spec.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "models/gpu/sm_pool.hpp"
#include "models/llm/architecture.hpp"

namespace kappasim {

class GpuCompute : public sc_core::sc_module {
 public:
  struct Stats {
    PrefillTime time;               // busy time split by kernel kind, FLOPs, kernels run
    std::int64_t kernel_events = 0;  // timed waits issued
    double busy_s() const { return time.compute_time_s; }
  };

  // Throws InputError when the GPU lacks a simulator field or the precision.
  GpuCompute(sc_core::sc_module_name name, const GpuSpec& gpu,
             const std::string& compute_dtype = "bf16", bool coarse = false);

  SmPool& sm_pool() { return m_sms; }
  const GpuSpec& gpu() const { return m_gpu; }
  const Stats& stats() const { return m_stats; }
  bool coarse() const { return m_coarse; }

  // Blocking: call from an SC_THREAD. Concurrent callers are served one at a time (one compute
  // stream per GPU).
  void run_layer(const ModelSpec& m, int layer, double T, double K, int tp);
  // Embedding, every layer, final norm and LM head.
  void run_prefill(const ModelSpec& m, double T, double K, int tp);

 private:
  void run_kernels(const std::vector<Kernel>& ks);
  GpuSpec m_gpu;
  std::string m_dtype;
  DType m_weights;
  bool m_coarse;
  SmPool m_sms;
  sc_core::sc_mutex m_stream;
  Stats m_stats;
};

}  // namespace kappasim
