// Parallelism layouts beyond tensor parallelism (issue 14): attention data parallelism
// ("DP-attention"), expert parallelism (EP), pipeline parallelism (PP) and replicas spanning
// several nodes, and the per-GPU accounting each layout implies: KV bytes per token a GPU holds
// and loads, prefill FLOPs per GPU, and the communication bytes (TP all-reduce, EP all-to-all
// dispatch/combine, PP activations) over NVLink and the inter-node NIC. Pure functions, no
// SystemC; the analytic κ model (models/analytic) and the engine's layout step
// (serving/replica_step) read them.
//
// Conventions (docs/parallelism.md, with sources):
//  - ranks are ordered TP innermost, then DP-attention, then PP (vLLM / Megatron order); one
//    pipeline stage is the tp × dp_attention GPUs of one "EP group" (vLLM: "expert layers form
//    a tensor parallel group of size DP × TP"; --enable-expert-parallel turns it into an EP
//    group of the same size), so ep is 1 (MoE experts tensor-parallel over the stage) or
//    tp × dp_attention;
//  - GPUs of the replica = tp × dp_attention × pp, spread evenly over `nodes` nodes of the
//    system (at most system.gpus each); a stage fills whole nodes or fits inside one;
//  - layers split over stages as vLLM's default get_pp_indices does (L // pp each, the
//    remainder one extra layer each on the stages before the last);
//  - each DP rank holds and loads only its own requests' KV; within a rank, GQA KV heads split
//    over the attention TP (replicated when tp > KV heads), an MLA latent is whole on every TP
//    rank; the per-GPU share of a replica token is the rank's bytes / dp_attention (balanced
//    DP ranks: the load imbalance between them is not modelled here);
//  - experts are balanced over EP ranks (routing uniform within the chosen expert groups);
//  - communication is charged per token at the link's peak per-direction bandwidth (no
//    per-collective latency: the per-token view of κ; the engine will add them).
// What it ignores: the DP-rank imbalance, expert-load imbalance (EPLB), overlap of
// communication with compute (DeepSeek's two micro-batches), collectives' fixed latencies.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "models/llm/architecture.hpp"

namespace kappasim {

// [S] NVIDIA DGX BasePOD RA, core components: the DGX H100/H200 has "eight single-port NVIDIA
// ConnectX-7 VPI, up to 400 Gb/s InfiniBand/Ethernet" for the compute fabric, one per GPU (DGX
// H100 User Guide, Table 6: each ConnectX-7 port maps to one GPU): 400 Gb/s = 50 GB/s per
// direction per GPU.
inline constexpr double kConnectX7BytesPerS = 400e9 / 8;

struct ParallelismSpec {
  int tp = 0;            // attention tensor parallelism (0: serving.tp in a run config; 1 in kappa)
  int dp_attention = 1;  // attention data-parallel ranks
  int ep = 1;            // expert parallelism: 1 or tp × dp_attention
  int pp = 1;            // pipeline stages
  int nodes = 1;         // nodes the replica spans
  double nic_bandwidth_Bps = kConnectX7BytesPerS;  // inter-node, per GPU per direction

  template <class V>
  void visit(V& v) {
    v.integer("tp", tp, opt("attention tensor parallelism (0: serving.tp)", Range::NonNegative));
    v.integer("dp_attention", dp_attention,
              opt("attention data-parallel ranks (each holds only its own requests' KV)",
                  Range::AtLeastOne));
    v.integer("ep", ep,
              opt("expert parallelism: 1 (experts tensor-parallel) or tp x dp_attention",
                  Range::AtLeastOne));
    v.integer("pp", pp, opt("pipeline-parallel stages", Range::AtLeastOne));
    v.integer("nodes", nodes, opt("nodes the model replica spans", Range::AtLeastOne));
    v.quantity("nic_bandwidth", nic_bandwidth_Bps, dim::bandwidth,
               opt("inter-node NIC bandwidth per GPU per direction (default ConnectX-7 400 Gb/s)"));
  }
  // Ranges only (no model): tp >= 0, the rest >= 1, NIC bandwidth finite > 0.
  void validate(const std::string& path) const;
  // Anything beyond plain tensor parallelism on one node.
  bool beyond_tp() const { return dp_attention > 1 || ep > 1 || pp > 1 || nodes > 1; }
  int attention_tp() const { return tp > 0 ? tp : 1; }
  int stage_gpus() const { return attention_tp() * dp_attention; }
  int gpus() const { return stage_gpus() * pp; }
};

// Parses "tp=8", "dp_attention=8,ep=8", "tp=8,pp=2,nodes=2", "nic_bandwidth=25 GB/s" (the
// `kappasim kappa --layout` syntax). InputError naming `what` and the bad item.
ParallelismSpec parse_layout(const std::string& text, const std::string& what);
// The canonical short form: "tp=8", "tp=1,dp_attention=8,ep=8", "tp=8,pp=2,nodes=2".
std::string layout_name(const ParallelismSpec& p);

// Checks the layout against a model and the GPUs of one node: the GPU count (tp × dp_attention
// × pp over `nodes` nodes of at most gpus_per_node), heads divisible by the attention TP, KV
// heads divisible by (or dividing) it, pp <= layers, ep 1 or the stage size, ep <= experts and
// dividing them, no EP for a dense model, expert groups aligned with EP ranks and nodes.
// InputError prefixed with `path` ("--layout 'tp=3'", "serving.parallelism").
void validate_layout(const ParallelismSpec& p, const ModelSpec& m, int gpus_per_node,
                     const std::string& path);

// Layers of each pipeline stage (vLLM get_pp_indices default partition).
std::vector<int> stage_layer_counts(int num_layers, int pp);

// Probability that one holder of `held` experts (an EP rank, or a node of them) receives none
// of a token's top-k experts, with routing uniform over the experts of `topk_groups` expert
// groups chosen uniformly out of `groups` (groups = topk_groups = 1: no group limit). `held`
// must be a multiple of the group size or divide it.
double p_holder_not_selected(int experts, int held, int k, int groups, int topk_groups);

// One stage of the layout: its layers and its per-GPU costs per *replica* token (a token of any
// request the replica serves; one DP rank's tokens are 1/dp_attention of them).
struct StageCost {
  int first_layer = 0, layers = 0, moe_layers = 0;
  double active_params = 0;   // active parameters a token passes in this stage
  double kv_bytes_rank = 0;   // KV bytes per own-rank token one GPU of the stage holds
  double kv_bytes_share = 0;  // = kv_bytes_rank / dp_attention
  double flops_fraction = 0;  // active_params / whole-model active params
  // Communication, bytes one GPU sends per replica token, by link.
  double tp_allreduce_bytes = 0;    // attention (+ dense MLP, shared experts) all-reduce over tp
  double moe_collective_bytes = 0;  // ep = 1, dp > 1: all-gather + reduce-scatter over the stage
  double ep_nvlink_bytes = 0;       // EP dispatch + combine over NVLink
  double ep_nic_bytes = 0;          // EP dispatch + combine over the NIC
  double pp_bytes = 0;              // activations to the next stage
  double nvlink_bytes = 0, nic_bytes = 0;  // the above summed by link
};

struct LayoutCost {
  ParallelismSpec layout;
  int gpus = 1, stage_gpus = 1, gpus_per_node = 1;
  int max_stage_layers = 0;
  double kv_bytes_per_layer_rank = 0;  // one GPU, per own-rank token, one layer
  double kv_bytes_rank = 0;       // max over stages: per own-rank token one GPU holds (b_kv_gpu)
  double kv_bytes_share = 0;      // max over stages: per replica token per GPU
  double kv_replication = 0;      // bytes stored over all GPUs per token / B_kv (1: no copies)
  double max_flops_fraction = 0;  // max over stages of the stage's share of F_pf
  // EP all-to-all per token (the whole token, before the per-GPU share).
  double ep_ranks_reached = 0;  // expected EP ranks other than the sender's, per MoE layer
  double ep_nodes_reached = 0;  // expected nodes other than the sender's, per MoE layer
  double dispatch_bytes_per_value = 0, combine_bytes_per_value = 0;
  std::vector<StageCost> stages;
};

// `compute_dtype`: fp8 dispatches in FP8 with one FP32 scale per 128 values (DeepSeek-V3
// report §3.3, DeepEP); anything else in BF16. Combine, all-reduce and PP activations: BF16.
// Throws InputError as validate_layout (path "layout").
// `hybrid` (serving.kv_cache: hybrid, issue 25): the KV per token a stage's GPU holds is its
// full-attention layers' (the paged pool's unit, HybridKv::full_Bpt of the stage's layers); its
// sliding layers' window and linear layers' state are per request (stage_hybrid_kv_per_gpu).
// Otherwise every attention layer's (the unified cache; linear layers refused).
LayoutCost layout_cost(const ModelSpec& m, DType kv, const std::string& compute_dtype,
                       const ParallelismSpec& p, int gpus_per_node, bool hybrid = false);

// Issue 25: what one GPU of pipeline stage `stage` (pp stages, vLLM's partition, attention TP
// `tp`) holds of a hybrid-aware KV cache: the HybridKv of the layer kinds in its contiguous
// range of layers (its full layers' bytes per token, its sliding layers' window, its linear
// layers' state split tp ways). Summed over the stages: hybrid_kv_per_gpu(m, kv, tp). Its
// full_Bpt may be 0 (a stage of sliding or linear layers only).
HybridKv stage_hybrid_kv_per_gpu(const ModelSpec& m, DType kv, int tp, int pp, int stage);

// ---- Replicated KV loaded once (issue 23 item 5; docs/parallelism.md) ----------------------
// How the ranks of a TP group that hold the same KV bytes get them (serving.replicated_kv; issue 23
// item 5, docs/parallelism.md "Replicated KV loaded once"): GQA KV heads replicated when tp > KV
// heads, an MLA latent whole on every TP rank.
enum class ReplicatedKv {
  EachRank,        // every rank loads its whole copy over its own host link (LMCache, vLLM today)
  ShardAllgather,  // each of the r ranks holding a copy loads 1/r of it over its own host link,
                   // then the shards are all-gathered over NVLink (ring) before the compute
};
const std::vector<std::pair<const char*, ReplicatedKv>>& replicated_kv_names();
// Copies of one token's KV inside a TP group of `tp` GPUs: tp x (bytes one GPU holds) / B_kv.
// GQA: tp / H_kv when tp > H_kv (each head on tp / H_kv GPUs, vLLM), else 1; MLA: tp (the latent
// whole on every TP rank). Qwen3-235B-A22B (4 KV heads) at tp 8: 2; DeepSeek-V3 at tp 8: 8.
// Throws InputError as kv_heads_per_gpu for a tp that does not divide the heads.
int kv_replication_factor(const ModelSpec& m, DType kv, int tp);
// The r GPUs holding one copy form an all-gather group: consecutive TP positions (vLLM gives
// KV head j / (tp / H_kv) to TP rank j; MLA: the whole TP group). Each loads 1/r of the bytes
// over its host link and the ring all-gather sends, per GPU, (r - 1)/r of them over NVLink.
struct ShardedKvLoad {
  int r = 1;                // the replication factor
  double host_bytes = 0;    // per GPU over its host link: bytes / r
  double gather_bytes = 0;  // per GPU sent (and received) over NVLink: (r - 1)/r x bytes
};
ShardedKvLoad shard_replicated_kv(double bytes_per_gpu, int r);
// A ring all-gather over r GPUs after which every GPU holds `bytes_per_gpu`: r - 1 steps, each
// moving a 1/r shard over every GPU's link at once: (r - 1) x step_latency + (r - 1)/r x bytes /
// link rate (NCCL's ring all-gather; the per-step latency is the GPU preset's nvlink_latency).
double ring_allgather_s(double bytes_per_gpu, int r, double link_Bps, double step_latency_s);

// Weight bytes one GPU holds, the largest stage: attention, dense MLPs and shared experts split
// over the attention TP (copied on every DP rank), routed experts over the stage (E / ep
// experts each under EP; each expert split over the stage without), routers and norms on
// every GPU, embedding / LM head split over the attention TP on the first / last stage.
// Simplification: vLLM keeps some small MLA projections (q_a, kv_a) whole on every rank.
double layout_weight_bytes_per_gpu(const ModelSpec& m, const ParallelismSpec& p,
                                   double bytes_per_param);

}  // namespace kappasim
