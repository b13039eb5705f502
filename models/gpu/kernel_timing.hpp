// The kernels one GPU of a tensor-parallel group runs for one transformer layer's prefill of T
// new tokens over K cached tokens, and the time each takes. Pure C++ (no SystemC): the SystemC
// GpuCompute (models/gpu/gpu_compute) waits these times, and prefill_time() sums them, so the
// simulator and the closed form share one model. See docs/compute-model.md.
//
// Per kernel: time = max(FLOPs / (peak × sm_fraction × achievable fraction),
//                        HBM bytes / (hbm_bandwidth × hbm_efficiency)) + kernel_launch_overhead.
// The achievable fraction of a GEMM is the large-GEMM fraction of its precision
// (gemm_efficiency_for: FP8 below BF16, per GPU generation) times a
// shape efficiency that comes from tile quantisation (M and N rounded up to the GPU's CTA tile,
// GpuSpec::Tiles, a shorter row tile for small M; fused-MoE GEMMs pad every expert's rows to
// vLLM fused_moe's BLOCK_SIZE_M for the step's token count) and wave quantisation (tiles spread
// over the free SMs in whole waves). Attention
// uses attention_efficiency times the same quantisation over query tiles × heads (with the
// GQA packing and KV splitting FlashAttention-3 chooses when they help), times
// attention_paged_kv_efficiency (K/V gathered from vLLM's paged cache by cp.async, not TMA). A TP
// all-reduce is NCCL's cheapest algorithm and protocol, or the stack's own kernel (vLLM's custom
// all-reduce), from the GPU preset's all_reduce table (models/gpu/all_reduce).
// W8A8 / W4A4 GEMMs are preceded by a memory-bound activation-quantisation kernel, and every
// forward ends with its host cost (forward_overhead). Sources: presets/gpus/*.yaml and
// docs/compute-model.md, "Precision, paged KV and per-forward costs".
//
// FLOPs come from models/llm (attention_flops, the per-layer parameter counts): the matmul FLOPs
// of layer_kernels summed over layers equal linear_flops_per_token(m, false)·T + attention_flops
// at tp 1 (and /tp for the sharded parts at tp > 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.hpp"
#include "models/gpu/launch_model.hpp"
#include "models/llm/architecture.hpp"

namespace kappasim {

// GEMM tiles are per GPU (GpuSpec::Tiles, presets/gpus/*.yaml `tiles:`): the dense CTA tile
// (Hopper CUTLASS 128×128, K-block 64 bounding split-K), the shorter row tile small-M GEMMs get,
// and vLLM fused_moe's BLOCK_SIZE_M × BLOCK_SIZE_N by token count.
// FlashAttention's query and KV tiles: kAttentionTileM, kAttentionTileN (models/gpu/gpu_spec.hpp).
// Bytes per activation element: activations and the KV cache are BF16 (vLLM's default).
inline constexpr double kActivationBytes = 2;
// Dynamic per-token activation quantisation before a W8A8 / W4A4 GEMM (vLLM
// scaled_fp8_quant / scaled_int8_quant with per-token scales; NVFP4 with one FP8 scale per 16
// elements): one memory-bound kernel that reads the BF16 input and writes the quantised copy
// plus one FP32 scale per row. Source: pytorch/ao torchao/testing/training/roofline_utils.py,
// get_inference_tensor_memory_traffic_ovhd_s: "kernel 1: x_bf16 -> x_fp8", 2 + 1 bytes per
// element; vLLM PR 17126 (benchmarks/kernels/bench_fp8_gemm.py) times FP8 GEMMs with and
// without this kernel (the "-noquant" columns). Not fused into the preceding RMSNorm (assumption:
// vLLM's default pass config leaves norm+quant fusion off).
inline constexpr double kActQuantScaleBytes = 4;  // FP32 scale per token row
// Bytes written per quantised element for a weight (= compute) precision; 0 when activations
// stay BF16 (BF16, FP16, FP32).
double activation_quant_bytes(DType weights);

struct Kernel {
  // Host: the per-forward host-side cost (GpuSpec::forward_overhead), no GPU work.
  enum class Kind { Gemm, Attention, Elementwise, AllReduce, Host };
  std::string name;
  Kind kind = Kind::Elementwise;
  double flops = 0;       // on this GPU
  double hbm_bytes = 0;   // HBM traffic on this GPU (weights read once + activations)
  double comm_bytes = 0;  // all-reduce payload per GPU
  // GEMM: C[m × n] = A[m × k] · B[k × n]. Attention: m = query tokens (T), n = key tokens
  // (K + T), k = q/k head dim.
  double m = 0, n = 0, k = 0;
  double groups = 1;  // grouped GEMM (MoE experts touched): m rows spread over groups
  // Fused MoE GEMM (vLLM fused_moe): the step's tokens (hidden_states rows, the M its block
  // config keys on) and the model's experts; 0 for every other kernel.
  double moe_tokens = 0, moe_experts = 0;
  double heads = 0;     // attention: query heads on this GPU
  double kv_heads = 0;  // attention: KV heads on this GPU (GQA packing)
  int ranks = 1;        // all-reduce: GPUs in the ring
  // Runs once per sequence over that sequence's own context (attention, KV dequantisation);
  // batch_step_time launches each such kind once for the batch.
  bool per_sequence = false;
};

// How the attention step consumes a KV cache stored in `kv_dtype` (docs/studies-kv.md,
// "Compressed KV"):
//  - Native (bf16, fp16, fp32): FlashAttention reads the cache as stored.
//  - FusedDequant (fp8): the attention kernel reads FP8 KV and converts in registers, no extra
//    pass (vLLM's fp8 KV cache: FlashAttention-3 / FlashInfer / paged attention kernels read
//    the e4m3/e5m2 cache directly) [S]: the KV read costs fp8 bytes, FLOPs stay at BF16 rate.
//  - FusedDequant (nvfp4, mxfp4; issue 25): Blackwell's attention kernels read the block-scaled
//    FP4 cache and dequantise it in the kernel (NVIDIA, "Optimizing Inference for Long Context and
//    Large Batch Sizes with NVFP4 KV Cache", 2025-12-08: the cache is dequantised to FP8 for the
//    attention math; TensorRT-LLM's NVFP4 KV cache, FlashInfer's trtllm-gen kernels) [S for
//    NVFP4; A that MXFP4 is read the same way]: the KV read costs the FP4 bytes with their
//    scales (bytes_per_element), FLOPs stay at the BF16 attention rate (an assumption on the
//    safe side: an FP8 attention rate would be faster).
//  - SeparatePass (int8, int4): a dequantisation kernel reads the packed cached KV and writes it
//    as BF16 before attention, which then reads BF16 (Hugging Face transformers QuantizedCache,
//    cache_utils.py: _dequantize() the quantised cache, then torch.cat with the new keys/values
//    before attention) [S for that implementation, A as the int4 serving mechanism]. Per layer
//    it moves K × (B_kv(dtype) + B_kv(bf16)) / L bytes per GPU at the HBM roof
//    (hbm_bandwidth × hbm_efficiency): for int4 that is 5× the packed bytes. Quantisation
//    scales are not counted (B_kv(int4) is 0.5 B per element, models/llm).
enum class KvDequant { Native, FusedDequant, SeparatePass };
KvDequant kv_dequant_mode(DType kv_dtype);
// Issue 25: an FP4 KV cache is written by FP4 conversion instructions (FlashInfer's
// nvfp4_kv_quantize needs SM100+, cvt.rn.satfinite.e2m1x2.f32), so it needs a GPU with FP4
// support, taken as a GPU with an fp4 peak (Blackwell, Rubin, MI355X). Throws InputError naming
// `key` otherwise. A GPU that describes no peaks (a design evaluation) is not checked.
bool kv_dtype_supported(const GpuSpec& gpu, DType kv_dtype);
void require_kv_dtype_support(const GpuSpec& gpu, DType kv_dtype, const std::string& key);
// The HBM bytes of the separate dequantisation pass over `cached_tokens` tokens of one layer on
// one GPU (0 unless kv_dequant_mode is SeparatePass).
double kv_dequant_bytes(const ModelSpec& m, int tp, double cached_tokens, DType kv_dtype);

const char* kernel_kind_name(Kernel::Kind k);

// The kernels of one layer on one GPU of a TP group, in launch order (vLLM's order): input
// RMSNorm, QKV (or MLA) projections, [q/k norm], rotary embedding, KV-cache write, attention,
// output projection, [all-reduce], post-attention RMSNorm, MLP (gate_up, SiLU·mul, down) or MoE
// (router, grouped expert GEMMs, [shared experts]), [all-reduce]. `weights` is the weight dtype
// (bytes read); activations are BF16; the KV cache is `kv_dtype` (see KvDequant: fp8 is read
// by attention directly; int8/int4 add a per-sequence `kv_dequant` kernel before attention over
// the K tokens already cached).
std::vector<Kernel> layer_kernels(const ModelSpec& m, int layer, double T, double K, int tp,
                                  DType weights, DType kv_dtype = DType::Bf16);
// The same into `out` (cleared first; its capacity is reused: the step-time model's hot path).
void layer_kernels(std::vector<Kernel>& out, const ModelSpec& m, int layer, double T, double K,
                   int tp, DType weights, DType kv_dtype = DType::Bf16);
// The kernels outside the layers, once per prefill: before the layers the embedding gather;
// after them the final RMSNorm, the LM head for the last token only (vLLM computes logits
// for the sampled position) and the per-forward host cost (Kind::Host, GpuSpec::forward_overhead).
std::vector<Kernel> prefill_head_kernels(const ModelSpec& m, double T);
// Final norm over the T tokens, the LM head for `logits_rows` tokens (the last token of each
// sequence whose prefill completes: vLLM computes logits for those only), then the forward's
// host cost (`forward_overhead`: sampling, the sampled-token sync, runner-output handling).
std::vector<Kernel> prefill_tail_kernels(const ModelSpec& m, double T, int tp, DType weights,
                                         double logits_rows = 1);

// The weight dtype that goes with a compute precision ("bf16" → Bf16, "fp8" → Fp8, ...).
DType weight_dtype_for(const std::string& compute_dtype);

struct KernelTime {
  double time_s = 0;  // max(flops_time_s, memory_time_s) + launch overhead
  double flops_time_s = 0;
  double memory_time_s = 0;
  double efficiency = 0;  // achievable fraction of peak assumed by the FLOP roof (base × shape)
};

// Shape efficiencies (in (0, 1]) from tile and wave quantisation on `sms` SMs with the GPU's
// tile choices (rows M ≤ tiles.gemm_small_m get the short row tile).
double gemm_shape_efficiency(double M, double N, double K, double groups, int sms,
                             const GpuSpec::Tiles& tiles = GpuSpec::Tiles{});
// Expected number of distinct experts `tokens` tokens route to when each picks `top_k` of
// `experts` uniformly (without replacement): E · (1 − (1 − k/E)^T). Uniform routing is an
// assumption (docs/compute-model.md, "MoE").
double expected_experts_touched(double tokens, double top_k, double experts);
// vLLM fused_moe's block (BLOCK_SIZE_M, BLOCK_SIZE_N) for a step of `tokens` tokens over
// `experts` experts (get_default_config: tokens ≤ experts → the small block).
struct MoeBlock {
  double m = 0, n = 0;
};
MoeBlock moe_block(double tokens, double experts, const GpuSpec::Tiles& tiles);
// The row blocks moe_align_block_size pads a step's token-expert pairs to: every expert's rows
// rounded up to whole blocks of `block_m`, an expert with none taking none. Each of `tokens`
// tokens routes to `top_k` of `experts` uniformly (the assumption expected_experts_touched
// makes), so one expert's rows are Binomial(tokens, top_k / experts) and the expectation is
// experts · E[ceil(n / block_m)]: a step whose mean rows per expert fill whole blocks still
// pads the experts that drew more than the mean. Real routers are skewed beyond uniform, so
// this is the least padding routing leaves (docs/compute-model.md, "MoE").
double moe_row_blocks(double tokens, double top_k, double experts, double block_m);
// Fused MoE GEMM: `rows` token-expert pairs in `row_blocks` blocks of the block's M rows
// (moe_row_blocks), N columns in block-N tiles, one CTA per block, whole waves on `sms` SMs (no
// split-K in the Triton kernel). executed / padded FLOPs × CTAs / (waves × SMs).
double moe_shape_efficiency(double rows, double N, double row_blocks, const MoeBlock& block,
                            int sms);
// One sequence's part of an attention launch: its query tiles' row efficiency (rows used /
// rows padded, after FA3's GQA packing when that fills tiles better), its CTAs before any KV
// split (one per query tile and head, or per packed tile and KV head) and its KV blocks (the
// most splits its KV allows).
//
// And its KV tiles per CTA (docs/compute-model.md, "Attention by context length"): kv_counted
// is the mean KV columns per query row its FLOP count holds (K cached + half its own T new
// tokens, causal), in tiles; kv_computed the KV tiles a query tile's CTA computes (the K cached
// tokens and its own new rows up to its last, the diagonal tile whole).
struct AttentionShape {
  double tile_eff = 1, ctas = 1, kv_blocks = 1;
  double kv_counted = 1, kv_computed = 1;
};
AttentionShape attention_shape(double T, double kv_tokens, double q_heads, double kv_heads);
// Attention's achievable fraction by length, relative to the GPU's reference measurement
// (GpuSpec::attention_reference_seqlen): kv_counted / (kv_computed + splits × c), c the GPU's
// attention_pipeline_tiles (each of the `splits` CTAs a KV split makes pays its own prologue
// and epilogue), over GpuSpec::attention_reference_factor(). 1 for a GPU without a reference.
double attention_length_factor(const AttentionShape& a, double splits, const GpuSpec& gpu);
// The waves of a launch of `ctas` CTAs on `sms` SMs: fewer CTAs than SMs are split along the KV
// sequence (FA3 num_splits, at most `max_kv_blocks` ways) to fill one wave. Its fill is
// ctas / (waves × SMs) of the result.
struct AttentionWaves {
  double ctas = 1, waves = 1;
};
AttentionWaves attention_waves(double ctas, double max_kv_blocks, int sms);
// attention_shape's tile efficiency × the fill of the sequence's launch alone.
double attention_shape_efficiency(double T, double kv_tokens, double q_heads, double kv_heads,
                                  int sms);

// `sm_fraction`: the fraction of SMs free for compute (SmPool::compute_fraction()); the FLOP rate
// scales with it and waves are counted on the free SMs. Attention FLOPs run at the BF16 (else
// FP16) peak whatever `compute_dtype` is: the KV cache and FlashAttention are BF16.
// An all-reduce runs with `all_reduce`, the stack's implementation (models/gpu/all_reduce).
KernelTime kernel_time(const Kernel& kernel, const GpuSpec& gpu, const std::string& compute_dtype,
                       double sm_fraction = 1.0, const AllReduceImpl& all_reduce = AllReduceImpl{});

struct PrefillTime {
  double compute_time_s = 0;  // every kernel, in sequence
  double linear_time_s = 0;   // GEMMs
  double attention_time_s = 0;
  double comm_time_s = 0;   // all-reduces
  double other_time_s = 0;  // elementwise (norms, rotary, KV write, activation, embedding,
                            // FP8/INT8 activation quantisation)
  double host_time_s = 0;   // per-forward host cost (forward_overhead); not a GPU kernel
  // The stack's launches (models/gpu/launch_model): host time to issue the forward's kernels
  // and graph replays, and the GPU's wait for it (in compute_time_s) when the host is slower.
  double host_issue_s = 0;
  double launch_stall_s = 0;
  double flops = 0;
  double hbm_bytes = 0;  // HBM traffic of the kernels (for the power model)
  int kernels = 0;       // GPU kernels (the Host item is not one)
  // Adds one kernel (the one accumulation both prefill_time and GpuCompute use).
  void add(const Kernel& k, const KernelTime& t) { add(k.kind, k.flops, k.hbm_bytes, t.time_s); }
  // The same from what it reads of the kernel and its time.
  void add(Kernel::Kind kind, double flops, double hbm_bytes, double time_s);
};

// Charges the stack's host launches to a forward of `tokens` tokens whose kernels `p` holds
// (`outside_graph`: the kernels no graph captures): host_issue_s, launch_stall_s, and the stall
// added to compute_time_s. The GPU's busy time is compute_time_s less host_time_s.
void apply_launch(PrefillTime& p, const LaunchSpec& launch, double tokens, int layers,
                  double outside_graph);

// One GPU of a TP group: all layers plus the edge kernels, every kernel on all SMs, launched as
// `launch` says (the default LaunchSpec charges no host launch cost).
PrefillTime prefill_time(const ModelSpec& m, const GpuSpec& gpu, int tp, double T, double K,
                         const std::string& compute_dtype = "bf16", DType kv_dtype = DType::Bf16,
                         const LaunchSpec& launch = LaunchSpec{});

// One M×N×K GEMM (BF16 activations, weights in `dtype`'s storage), on all SMs.
KernelTime gemm_kernel_time(const GpuSpec& gpu, double M, double N, double K,
                            const std::string& dtype);
double gemm_time(const GpuSpec& gpu, double M, double N, double K, const std::string& dtype);

// Checks the prefill arguments (T ≥ 1, K ≥ 0, tp dividing the heads); InputError otherwise.
void check_prefill_args(const ModelSpec& m, int tp, double T, double K);

// One forward step of a batch on one GPU of a TP group (vLLM runs a step's sequences as one
// forward pass): the token-parallel kernels (norms, projections, MLP / MoE, all-reduce) run once
// over all the step's tokens; attention runs for each sequence over its own context, in one
// launch (FlashAttention varlen, batch_attention_time): the sequences' CTAs share the launch's
// waves, their FLOPs and KV reads add up, one launch overhead.
// Layers of the same kind (dense, MoE) cost the same, so each kind is timed once.
struct SeqSlice {
  double T;              // tokens prefilled this step
  double K;              // tokens already in the KV cache before them (cached + earlier chunks)
  bool finishes = true;  // its prefill completes this step: its last token's logits are computed
};
struct StepTime {
  PrefillTime total;         // head + all layers + tail
  double first_layer_s = 0;  // one layer's time (for the layer-wise pipeline's fill/drain)
  double last_layer_s = 0;
};
// The attention of a batch in ONE launch (FlashAttention varlen; issue 23: a decode batch holds
// many one-token sequences): every sequence's CTAs share the waves, so the fill is the launch's
// (attention_waves over the sequences' CTAs together, split up to the longest context's KV
// blocks), each sequence's FLOPs at its own tile efficiency; the KV reads add up; one launch
// overhead. For one sequence this is kernel_time of its kernel exactly. `seqs`: attention
// kernels (Kernel::Kind::Attention) of one layer.
// With `decode` masked_mha, the one-query (decode) sequences run in TensorRT-LLM's generation
// kernel instead: their KV bytes are read, their FLOPs are not charged and take no CTAs of the
// FlashAttention launch (DecodeAttention).
KernelTime batch_attention_time(const std::vector<Kernel>& seqs, const GpuSpec& gpu,
                                double sm_fraction = 1.0,
                                DecodeAttention decode = DecodeAttention::Flash);

class BatchStepParts;
// `parts` (may be null): the parts of earlier calls with the same model, GPU, TP degree, compute
// and KV dtypes and launch spec (BatchStepParts).
StepTime batch_step_time(const ModelSpec& m, const GpuSpec& gpu, int tp,
                         const std::vector<SeqSlice>& batch, const std::string& compute_dtype,
                         double sm_fraction = 1.0, DType kv_dtype = DType::Bf16,
                         const LaunchSpec& launch = LaunchSpec{}, BatchStepParts* parts = nullptr);

// The parts of batch_step_time that depend on the batch's total tokens alone (issue 24), kept
// for one model, GPU, TP degree, compute and KV dtypes and launch spec (its owner's: a TP step
// model): the head and tail kernels (what PrefillTime::add reads of each; the tail's LM head and
// host cost apart, keyed on the finishing sequences alone) and, per layer class, the token-parallel
// kernels' sum before the per-sequence ones are added to it; and the GPU's rates for the compute
// precision (Rates). Most steps are new batches (their slices differ) of a total token count seen
// before, and those kernels are most of a step's timing work. Keyed bit for bit on the tokens, the
// SM fraction, the logits rows and the class's first layer; each hit is what those very inputs gave
// and is added in the same order, so batch_step_time's result is the same bits with or without it.
// Direct-mapped (a new key replaces its slot's), bounded: at most `slots` entries of each kind,
// made as slots are first used. Each kind's slot table starts small and grows (×4, up to
// `slots`) while its entries fill more than an eighth of it (issue 24: three tables of 64 KiB
// zero-filled per step model were fresh pages in every forked point of a sweep, most of whose runs
// see a few hundred token counts); growing keeps the entries whose slots stay theirs, so it changes
// only what is found.
class BatchStepParts {
 public:
  static constexpr std::size_t kFirstSlots = 1024;  // 4 KiB
  explicit BatchStepParts(std::size_t slots = 16384) : m_slots(slots == 0 ? 1 : slots) {}

  struct Item {  // one kernel as PrefillTime::add reads it
    Kernel::Kind kind;
    double flops, hbm_bytes, time_s;
  };
  struct Edges {  // the head kernels and the tail's over the tokens, of (tokens, sm)
    std::uint64_t tokens = 0, sm = 0;
    bool used = false;
    int head = 0, tail = 0;  // items[0, head) the head's, then the tail's
    Item items[3];
  };
  struct Logits {  // the rest of the tail (LM head, host cost), of (logits rows, sm)
    std::uint64_t logits = 0, sm = 0;
    bool used = false;
    int count = 0;
    Item items[3];
  };
  struct Layer {  // a class's token-parallel kernels summed, for (tokens, sm, first layer)
    std::uint64_t tokens = 0, sm = 0;
    int first = -1;
    bool used = false;
    PrefillTime dense;
  };
  // What kernel_time looks up in the GPU spec by the compute precision's name (GpuSpec::peak,
  // gemm_efficiency_for, gemm_hbm_efficiency_for; attention's bf16, else fp16, peak), as those
  // lookups give them, and the precision's weight dtype (weight_dtype_for); `known` once filled
  // (by a step that passed GpuSpec::require_sim). A peak the GPU lacks is marked missing and
  // asked of GpuSpec::peak where it is used, which throws as before.
  struct Rates {
    bool known = false;
    DType weights = DType::Bf16;
    bool has_peak = false, has_attention_peak = false;
    const char* attention_dtype = "bf16";
    double peak = 0, attention_peak = 0, gemm_efficiency = 0, gemm_hbm_efficiency = 0;
  };
  Rates rates;
  // The slot for these keys (made on first use); its `used` and keys say whether it holds them.
  Edges& edges(double tokens, double sm_fraction);
  Logits& logits(double logits, double sm_fraction);
  Layer& layer(double tokens, double sm_fraction, int first);
  static std::uint64_t bits(double v);

 private:
  static std::size_t slot(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::size_t n);
  // The slot of keys (a, b, c) in `index` (made, kFirstSlots or fewer, on first use; grown ×4 up
  // to m_slots when a new entry would fill more than an eighth of it: `key_of` gives an entry's
  // keys), its entry made when the slot has none.
  template <class Entry, class KeyOf>
  Entry& find_or_make(std::vector<std::uint32_t>& index, std::vector<Entry>& entries,
                      std::uint64_t a, std::uint64_t b, std::uint64_t c, KeyOf key_of);
  template <class Entry, class KeyOf>
  [[gnu::noinline]] void grow(std::vector<std::uint32_t>& index, std::vector<Entry>& entries,
                              KeyOf key_of);
  std::size_t m_slots;
  // Per slot: 1 + its entry's index, 0 while unused (entries made as slots are first used).
  std::vector<std::uint32_t> m_edge_slot, m_logits_slot, m_layer_slot;
  std::vector<Edges> m_edges;
  std::vector<Logits> m_logits;
  std::vector<Layer> m_layers;
};

}  // namespace kappasim
