// A GPU's datasheet description: peak dense FLOP/s per dtype, HBM capacity and bandwidth, SMs,
// L2, TDP, NVLink. Values come from presets/gpus/*.yaml, each with its source. The SystemC
// compute component (later) reads the same struct, so the analytic model and the simulator
// share one description.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/config.hpp"

namespace kappasim {

// FlashAttention query-tile rows (kBlockM) and KV-tile columns (kBlockN) for head_dim 128,
// BF16: FA3 hopper/tile_size.h tile_size_fwd_sm90 returns {128, 128} for causal (FA2's sm8x
// tiles also use kBlockM 128).
inline constexpr double kAttentionTileM = 128;
inline constexpr double kAttentionTileN = 128;

// One NCCL protocol's cost on this GPU's NVLink (docs/compute-model.md, "All-reduce"): the
// fixed latency of an operation, the latency of each of its ring steps, and the share of the
// link's achieved bus bandwidth its wire format leaves to payload (LL: 4 B of data per 8-byte
// line with its flag; LL128: 120 B per 128-byte line), capped where NCCL caps it.
struct AllReduceProtocol {
  std::optional<double> base_latency_s;
  std::optional<double> step_latency_s;
  std::optional<double> bandwidth_fraction;  // absent: 1
  std::optional<double> max_bus_Bps;         // absent: no cap
  template <class V>
  void visit(V& v) {
    v.quantity("base_latency", base_latency_s, dim::time,
               opt("fixed latency of one all-reduce with this protocol", Range::NonNegative));
    v.quantity("step_latency", step_latency_s, dim::time,
               opt("latency of one ring step over NVLink with this protocol", Range::NonNegative));
    v.quantity(
        "bandwidth_fraction", bandwidth_fraction, dim::none,
        opt("payload share of the achieved bus bandwidth (protocol wire format)", Range::Fraction));
    v.quantity("max_bus_bandwidth", max_bus_Bps, dim::bandwidth,
               opt("cap on this protocol's bus bandwidth"));
  }
  void validate(const std::string&) const {}
};

// The TP all-reduce over this GPU's NVLink (models/gpu/all_reduce, docs/compute-model.md
// "All-reduce"). Absent (no ring_bus_bandwidth): the ring at the line rate with nvlink_latency
// per step, as before the table existed.
struct AllReduceSpec {
  // NCCL's ring with the Simple protocol at large messages (nccl-tests busbw): what the link
  // carries of payload per direction when every GPU sends and receives at once.
  std::optional<double> ring_bus_Bps;
  // NVLink SHARP (NVSwitch multicast + in-switch reduction; H100/B200 HGX): the algorithm
  // bandwidth (message bytes / time at large messages: each GPU sends its buffer into the switch
  // and receives the reduced one, whatever the GPU count) and the operation's latency. Absent:
  // no NVLS (A100, PCIe systems).
  std::optional<double> nvls_alg_Bps;
  std::optional<double> nvls_latency_s;
  AllReduceProtocol ll, ll128, simple;
  // One flag barrier of a peer-to-peer all-reduce kernel (vLLM's custom all-reduce): a flag
  // written to every peer over NVLink and spun on.
  std::optional<double> barrier_latency_s;
  template <class V>
  void visit(V& v) {
    v.quantity("ring_bus_bandwidth", ring_bus_Bps, dim::bandwidth,
               opt("NCCL ring (Simple) all-reduce bus bandwidth at large messages"));
    v.quantity("nvls_bandwidth", nvls_alg_Bps, dim::bandwidth,
               opt("NCCL NVLS (NVLink SHARP) all-reduce algorithm bandwidth (bytes / time) at "
                   "large messages"));
    v.quantity("nvls_latency", nvls_latency_s, dim::time,
               opt("latency of one NVLS all-reduce", Range::NonNegative));
    v.object("ll", ll,
             opt("NCCL LL protocol: {base_latency, step_latency, bandwidth_fraction, "
                 "max_bus_bandwidth}"));
    v.object("ll128", ll128, opt("NCCL LL128 protocol: as ll"));
    v.object("simple", simple, opt("NCCL Simple protocol: as ll"));
    v.quantity("barrier_latency", barrier_latency_s, dim::time,
               opt("one flag barrier of a peer-to-peer all-reduce kernel over NVLink",
                   Range::NonNegative));
  }
  void validate(const std::string&) const {}
};

struct GpuSpec {
  std::string name;
  std::string display_name;
  double hbm_capacity_bytes = 0;
  double hbm_bandwidth_Bps = 0;
  std::map<std::string, double> peak_flops;  // dense tensor-core FLOP/s by dtype
  int sm_count = 0;
  double l2_bytes = 0;
  double tdp_w = 0;
  std::optional<double> nvlink_Bps;  // per direction, GPU to GPU

  // Used by the simulator (models/gpu, interconnects); optional so analytic-only GPU files
  // need not give them. The simulator's require_sim() names any that are missing.
  std::optional<double> copy_engines;                  // DMA copy engines usable for H2D/D2H
  std::optional<double> dma_copy_overhead_s;           // fixed cost per cudaMemcpyAsync
  std::optional<double> copy_kernel_block_overhead_s;  // fixed cost per block, SM copy kernel
  std::optional<double> gemm_efficiency;               // achievable fraction of peak, large GEMMs
  // Compute efficiency by precision and mechanism (docs/compute-model.md, "Precision, paged KV
  // and per-forward costs"). Each is optional: absent means the BF16 value / no such cost.
  // Large-GEMM fraction of that precision's own peak, where it differs from gemm_efficiency
  // (the BF16/FP16 value): FP8 GEMMs reach a lower fraction of their doubled peak.
  std::map<std::string, double> gemm_efficiency_by_precision;
  // Fraction of HBM bandwidth a GEMM of that precision streams its operands at when it is bound
  // by memory (small M: the weights), where it differs from hbm_efficiency: an FP8 kernel's
  // weight-streaming rate, measured at M = 1, not the pointwise-kernel rate.
  std::map<std::string, double> hbm_efficiency_by_precision;
  // Attention reading a paged KV cache (vLLM's block table) through per-thread cp.async
  // gathers instead of TMA bulk loads: fraction of the contiguous-KV rate.
  std::optional<double> attention_paged_kv_efficiency;
  // Host-side time per forward pass on the critical path after its kernels are queued: sampling,
  // the sampled-token sync, runner-output handling (scheduling and input preparation are
  // serving.step_overhead, not charged here).
  std::optional<double> forward_overhead_s;
  std::optional<double> attention_efficiency;  // achievable fraction, FlashAttention fwd
  // Attention efficiency by length (docs/compute-model.md, "Attention by context length"): the
  // causal sequence length of the forward measurement attention_efficiency comes from, and the
  // KV tiles' worth of a CTA's time its software pipeline does not overlap (prologue: Q and the
  // first K/V loads; epilogue: O rescale and store), fitted to that kernel's non-causal
  // seqlen curve. Both or neither; neither: attention_efficiency at every length.
  std::optional<double> attention_reference_seqlen;
  std::optional<double> attention_pipeline_tiles;
  std::optional<double> hbm_efficiency;            // achievable fraction of HBM bandwidth
  std::optional<double> kernel_launch_overhead_s;  // per kernel
  std::optional<double> nvlink_latency_s;          // per all-reduce step
  // The all-reduce by algorithm and protocol (optional; see AllReduceSpec).
  AllReduceSpec all_reduce;
  // Power model (models/gpu/power); optional: only runs that report energy need them.
  std::optional<double> idle_power_w;           // CUDA context held, no kernel running
  std::optional<double> energy_per_flop_J;      // dense tensor-core FLOP, above idle
  std::optional<double> energy_per_hbm_byte_J;  // per HBM byte moved, above idle (all-in)
  // Occupancy limits per SM (CUDA compute capability table): how many of a copy kernel's
  // warps can be resident at once, so how many loads to host memory an SM keeps in flight
  // (models/gpu/copy_kernel_shape, docs/pcie-model.md "SM reads"); absent: no clamp.
  std::optional<double> max_warps_per_sm;
  std::optional<double> max_blocks_per_sm;

  static const std::vector<std::string>& compute_dtypes();

  // Relative knobs (issue 12.12, presets/README.md "Relative knobs"): what-if factors on
  // datasheet figures, applied once as the spec is read (apply_scale), so the analytic model
  // and the simulator see the same scaled GPU. Not written back by --dump-config: the scaled
  // values are, with a `derived:` provenance naming the factor.
  struct Scale {
    std::optional<double> flops;                   // × every precision's peak FLOP/s
    std::map<std::string, double> flops_by_dtype;  // × one precision's peak (on top of flops)
    std::optional<double> hbm_bandwidth;           // × HBM bandwidth
    template <class V>
    void visit(V& v) {
      v.quantity("flops", flops, dim::none, opt("factor on every precision's peak FLOP/s"));
      v.quantity_map("flops_by_dtype", flops_by_dtype, dim::none, compute_dtypes(),
                     opt("factor on one precision's peak FLOP/s, e.g. {fp8: 2}"));
      v.quantity("hbm_bandwidth", hbm_bandwidth, dim::none, opt("factor on the HBM bandwidth"));
    }
    void validate(const std::string&) const {}
  };
  Scale scale;
  // Multiplies the scaled fields, records their provenance, and clears `scale`.
  void apply_scale(ConfigReader& r);

  // A GPU-side KV buffer as GPU hardware (issue 12.12, docs/studies-kv.md "The buffer as GPU
  // hardware"): what a GPU or system preset says about an on-package store of hot prefix
  // chunks. A run uses it when serving.kv_buffer is off (capacity 0); serving.kv_buffer, when
  // on, overrides it whole (RunSpec::visit). Absent by default: no shipped GPU has one.
  struct KvBuffer {
    double capacity_bytes = 0;            // per GPU; 0 = none
    bool sram = false;                    // kind: hbm (carved out of HBM) | sram (separate store)
    std::optional<double> bandwidth_Bps;  // buffer -> KV pages copy bandwidth
    std::optional<double> energy_per_byte_J;  // per bit read from a separate (sram) store
    template <class V>
    void visit(V& v) {
      v.quantity("capacity", capacity_bytes, dim::bytes,
                 opt("buffer capacity per GPU (0 = none)", Range::NonNegative));
      v.choice("kind", sram,
               std::vector<std::pair<const char*, bool>>{{"hbm", false}, {"sram", true}},
               opt("hbm (a region of HBM) or sram (a separate on-package store)"));
      v.quantity("bandwidth", bandwidth_Bps, dim::bandwidth,
                 opt("buffer -> KV pages copy bandwidth per GPU"));
      v.quantity("energy_per_bit", energy_per_byte_J, dim::energy_per_byte,
                 opt("energy per bit read from a separate (sram) store", Range::NonNegative));
    }
    void validate(const std::string&) const {}
  };
  KvBuffer kv_buffer;

  // The kernels' tile choices on this GPU (docs/compute-model.md, "Tiles"): the CTA output tile
  // a GEMM library picks by problem size, and the block sizes of vLLM's fused MoE kernel.
  // Defaults are the Hopper / vLLM values named below; a GPU preset gives its own with a source.
  struct Tiles {
    // Dense GEMM CTA tile (rows x columns of C) and K-block. CUTLASS's Hopper warp-specialised
    // GEMM (examples/48_hopper_warp_specialized_gemm: TileShape 128x128, 64-element BF16
    // K-block for TMA/WGMMA).
    double gemm_m = 128, gemm_n = 128, gemm_k = 64;
    // Row tile for GEMMs with M <= gemm_small_m: the library picks a tile no taller than the
    // smallest row block one CTA's MMA issues (Hopper WGMMA: m64 per warpgroup, CUTLASS sm90
    // TileShape 64xN; Ampere mma.sync m16, cuBLAS small-M kernels 64 rows).
    double gemm_small_m = 64;
    // vLLM fused_moe (Triton) get_default_config, BF16/FP16 without a tuned JSON: M (tokens in
    // the step) <= E (experts): BLOCK_SIZE_M 16, BLOCK_SIZE_N 32; otherwise 64 x 64. Each
    // expert's token-expert rows are padded to a multiple of BLOCK_SIZE_M (moe_align_block_size).
    double moe_small_m = 16, moe_small_n = 32;
    double moe_m = 64, moe_n = 64;
    template <class V>
    void visit(V& v) {
      v.quantity("gemm_m", gemm_m, dim::none, opt("dense GEMM CTA tile rows", Range::AtLeastOne));
      v.quantity("gemm_n", gemm_n, dim::none,
                 opt("dense GEMM CTA tile columns", Range::AtLeastOne));
      v.quantity("gemm_k", gemm_k, dim::none,
                 opt("dense GEMM K-block (bounds split-K)", Range::AtLeastOne));
      v.quantity("gemm_small_m", gemm_small_m, dim::none,
                 opt("row tile used when M is at most this", Range::AtLeastOne));
      v.quantity("moe_small_m", moe_small_m, dim::none,
                 opt("fused MoE BLOCK_SIZE_M when tokens <= experts", Range::AtLeastOne));
      v.quantity("moe_small_n", moe_small_n, dim::none,
                 opt("fused MoE BLOCK_SIZE_N when tokens <= experts", Range::AtLeastOne));
      v.quantity("moe_m", moe_m, dim::none,
                 opt("fused MoE BLOCK_SIZE_M when tokens > experts", Range::AtLeastOne));
      v.quantity("moe_n", moe_n, dim::none,
                 opt("fused MoE BLOCK_SIZE_N when tokens > experts", Range::AtLeastOne));
    }
    void validate(const std::string&) const {}
  };
  Tiles tiles;

  // Peak dense FLOP/s for a dtype; InputError naming the GPU when it has no such rate.
  double peak(const std::string& dtype) const;
  // The large-GEMM efficiency of `dtype`: gemm_efficiency_by_precision[dtype] when given, else
  // gemm_efficiency. Call after require_sim().
  double gemm_efficiency_for(const std::string& dtype) const;
  // The HBM fraction a memory-bound GEMM of `dtype` streams at: hbm_efficiency_by_precision[dtype]
  // when given, else hbm_efficiency. Call after require_sim().
  double gemm_hbm_efficiency_for(const std::string& dtype) const;

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("preset name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.quantity("hbm_capacity", hbm_capacity_bytes, dim::bytes, req("HBM capacity"));
    v.quantity("hbm_bandwidth", hbm_bandwidth_Bps, dim::bandwidth, req("HBM bandwidth"));
    v.quantity_map("peak_flops", peak_flops, dim::flop_rate, compute_dtypes(),
                   req("dense tensor-core peak FLOP/s per dtype"));
    v.integer("sm_count", sm_count, req("number of streaming multiprocessors"));
    v.quantity("l2_cache", l2_bytes, dim::bytes, req("L2 cache size"));
    v.quantity("tdp", tdp_w, dim::power, req("thermal design power"));
    v.quantity("nvlink_bandwidth", nvlink_Bps, dim::bandwidth,
               opt("GPU-to-GPU NVLink bandwidth per direction"));
    v.quantity("copy_engines", copy_engines, dim::none,
               opt("DMA copy engines available to host<->device copies", Range::AtLeastOne));
    v.quantity("dma_copy_overhead", dma_copy_overhead_s, dim::time,
               opt("fixed cost of one cudaMemcpyAsync", Range::NonNegative));
    v.quantity("copy_kernel_block_overhead", copy_kernel_block_overhead_s, dim::time,
               opt("fixed cost per block copied by an SM copy kernel", Range::NonNegative));
    v.quantity("gemm_efficiency", gemm_efficiency, dim::none,
               opt("achievable fraction of peak FLOP/s for large GEMMs", Range::Fraction));
    v.quantity("attention_efficiency", attention_efficiency, dim::none,
               opt("achievable fraction of peak FLOP/s for attention", Range::Fraction));
    v.quantity("attention_reference_seqlen", attention_reference_seqlen, dim::none,
               opt("causal sequence length (tokens) of the measurement attention_efficiency "
                   "comes from",
                   Range::AtLeastOne));
    v.quantity("attention_pipeline_tiles", attention_pipeline_tiles, dim::none,
               opt("KV tiles' worth of a FlashAttention CTA's time not overlapped by its "
                   "pipeline (prologue and epilogue)",
                   Range::NonNegative));
    // Compute efficiency by precision and mechanism (helper "compute", issue 10).
    v.quantity_map("gemm_efficiency_by_precision", gemm_efficiency_by_precision, dim::none,
                   compute_dtypes(),
                   opt("large-GEMM fraction of each precision's own peak where it differs from "
                       "gemm_efficiency",
                       Range::Fraction));
    v.quantity_map("hbm_efficiency_by_precision", hbm_efficiency_by_precision, dim::none,
                   compute_dtypes(),
                   opt("fraction of HBM bandwidth a memory-bound GEMM of each precision streams "
                       "at, where it differs from hbm_efficiency",
                       Range::Fraction));
    v.quantity("attention_paged_kv_efficiency", attention_paged_kv_efficiency, dim::none,
               opt("attention rate reading a paged KV cache, as a fraction of the contiguous-KV "
                   "rate",
                   Range::Fraction));
    v.quantity("forward_overhead", forward_overhead_s, dim::time,
               opt("host time per forward pass: sampling, sampled-token sync, output handling",
                   Range::NonNegative));
    v.quantity("hbm_efficiency", hbm_efficiency, dim::none,
               opt("achievable fraction of HBM bandwidth when streaming", Range::Fraction));
    v.quantity("kernel_launch_overhead", kernel_launch_overhead_s, dim::time,
               opt("fixed cost per kernel", Range::NonNegative));
    v.quantity("nvlink_latency", nvlink_latency_s, dim::time,
               opt("latency of one NVLink all-reduce step", Range::NonNegative));
    v.quantity("idle_power", idle_power_w, dim::power,
               opt("board power with a CUDA context held and no kernel running"));
    v.quantity("energy_per_flop", energy_per_flop_J, Dimension(0, 0, -1, 1, 0, 0),
               opt("energy above idle per dense tensor-core FLOP", Range::NonNegative));
    v.quantity("energy_per_hbm_bit", energy_per_hbm_byte_J, dim::energy_per_byte,
               opt("energy above idle per bit moved to or from HBM (DRAM, PHY and on-chip "
                   "movement)",
                   Range::NonNegative));
    // Zero-copy SM reads (links): the occupancy limits clamp a copy kernel's resident warps.
    v.quantity("max_warps_per_sm", max_warps_per_sm, dim::none,
               opt("resident warps per SM at most (occupancy limit)", Range::AtLeastOne));
    v.quantity("max_blocks_per_sm", max_blocks_per_sm, dim::none,
               opt("resident thread blocks per SM at most (occupancy limit)", Range::AtLeastOne));
    // ---- relative knobs (issue 12.12): scale factors, applied once here as the spec is read ----
    if constexpr (!std::is_same_v<V, ConfigWriter>) {
      v.object("scale", scale,
               opt("what-if factors: {flops, flops_by_dtype: {fp8: 2}, hbm_bandwidth}"));
      if constexpr (std::is_same_v<V, ConfigReader>) apply_scale(v);
    }
    v.object("tiles", tiles,
             opt("kernel tile choices: {gemm_m, gemm_n, gemm_k, gemm_small_m, moe_small_m, "
                 "moe_small_n, moe_m, moe_n}"));
    // Written only when given, so the effective config of a GPU without it is unchanged.
    if (!V::kWriting || all_reduce.ring_bus_Bps)
      v.object("all_reduce", all_reduce,
               opt("TP all-reduce: {ring_bus_bandwidth, nvls_bandwidth, nvls_latency, ll, "
                   "ll128, simple, barrier_latency}"));
    v.object("kv_buffer", kv_buffer,
             opt("GPU-side KV buffer as hardware: {capacity, kind, bandwidth, energy_per_bit}"));
  }
  void validate(const std::string& path) const;
  // n_u / (n_c + c) of the reference measurement (attention_reference_seqlen): its KV tiles
  // per CTA counted in FLOPs (n_u) over those computed plus the pipeline's (n_c + c); 1 without
  // a reference. kernel_timing's attention efficiency is attention_efficiency × a sequence's own
  // ratio / this one.
  double attention_reference_factor() const;
  // Throws InputError naming every simulator field this GPU lacks.
  void require_sim(const std::string& path) const;
};

}  // namespace kappasim
