// The analytic κ model of arXiv 2601.19910 (Meng, Lee, Wang): TTFT as transfer + compute
// (Eq. 3), κ_crit = κ_M · κ_HW (Eq. 6), P_OH and U, and rooflines — plus what the paper leaves
// out: attention FLOPs that grow with the cached context K, and the per-GPU view under tensor
// parallelism with KV-head replication. Reads the same ModelSpec / SystemSpec the simulator
// reads. Pure functions, no SystemC.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/analytic/tier_kappa.hpp"
#include "models/llm/architecture.hpp"
#include "models/llm/parallelism.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {

// ---- the closed forms (plain numbers in SI units) ------------------------------------------

// κ_M = F_pf / B_kv [FLOP/B], κ_HW = BW / C [B/FLOP], κ_crit = κ_M · κ_HW (Eq. 6).
inline double kappa_m(double f_pf, double b_kv) { return f_pf / b_kv; }
inline double kappa_hw(double bandwidth, double compute) { return bandwidth / compute; }
inline double kappa_crit(double f_pf, double b_kv, double bandwidth, double compute) {
  return kappa_m(f_pf, b_kv) * kappa_hw(bandwidth, compute);
}

// Eq. 3 for K cached and T new tokens: t_transfer = K·B_kv/BW, t_compute = T·F/C.
struct TtftParts {
  double t_transfer = 0;
  double t_compute = 0;
  double ttft_serial() const { return t_transfer + t_compute; }  // Eq. 3, no overlap
  double ttft_overlap() const { return t_transfer > t_compute ? t_transfer : t_compute; }
  double p_oh() const { return t_transfer / t_compute; }       // P_OH
  double utilization() const { return 1.0 / (1.0 + p_oh()); }  // U = 1 / (1 + P_OH)
};
TtftParts ttft_parts(double K, double T, double b_kv, double f_per_token, double bandwidth,
                     double compute);

// ---- conventions for F_pf -------------------------------------------------------------------

enum class FpfConvention {
  TwoNActive,        // 2 · N_active (all active parameters, embeddings included): the paper's
  TwoNNonEmbedding,  // 2 · N_active without embedding table and LM head
  MatmulNoHead,      // 2 · active matmul weights a prompt token passes (no LM head: vLLM
                     //   computes logits for the last token only)
  Kaplan,            // 2 · N_active + 2 · L · n_ctx · d_model (Kaplan et al. 2020, Table 1)
};
const std::vector<std::pair<const char*, FpfConvention>>& fpf_convention_names();

// ---- one evaluated point ---------------------------------------------------------------------

struct KappaQuery {
  std::string compute_dtype = "bf16";
  DType kv_dtype = DType::Bf16;
  int tp = 1;
  FpfConvention convention = FpfConvention::TwoNActive;
  double kaplan_context = 4096;
  std::optional<double> fpf_override;        // F_pf per new token, whole model
  std::optional<double> compute_override;    // C_eff per GPU
  std::optional<double> bandwidth_override;  // host->GPU bandwidth per GPU
  std::optional<double> context_k;           // cached tokens, for attention FLOPs and TTFT
  std::optional<double> new_tokens_t;        // new tokens, for attention FLOPs and TTFT
  // A parallelism layout (issue 14, models/llm/parallelism): per-GPU B_kv and F_pf follow it;
  // `tp` is then ignored (the layout's tp applies). Absent: plain TP `tp`, as before.
  std::optional<ParallelismSpec> layout;
  // Issue 14: tokens per KV chunk a GPU reads from a tier in one request (LMCache chunk_size
  // 256); the NVMe request size is this × the GPU's KV bytes per token.
  int tier_chunk_tokens = 256;
  // Issue 25: B_kv as a serving stack with a unified KV cache keeps and moves it (every
  // attention layer, full or sliding, holds every token: kv_bytes_per_token_unified), for
  // comparisons with the serving engine on the same inputs. False: what a prefix of the model
  // leaves (kv_bytes_for_prefix at --context K, the full layers' slope without). The same for a
  // model without a layer pattern.
  bool unified_kv = false;
  // Issue 23 item 5 (serving.replicated_kv: shard_allgather; docs/parallelism.md): the r GPUs of
  // a TP group holding the same KV each load 1/r of it over the host link and ring-all-gather
  // the rest over NVLink, in series with the load: the κ denominator becomes the host-link time
  // of b/r plus the all-gather's (r − 1)/r · b at the NVLink rate, in host-link bytes. False:
  // every GPU loads its whole copy (each_rank), as before.
  bool shard_replicated_kv = false;
};

// The sharded load of replicated KV, per cached token per GPU (KappaQuery::shard_replicated_kv).
struct KappaShardedKv {
  int r = 1;                // copies of each token's KV in the TP group
  double host_bytes = 0;    // over the host link: b_kv_share / r
  double gather_bytes = 0;  // sent over NVLink by the ring all-gather: (r − 1)/r · b_kv_share
  double gather_s = 0;      // their time at the NVLink peak (no per-step latency: per token)
  double host_equiv_bytes = 0;  // host_bytes + gather_s · BW: the κ denominator (b_kv_share)
};

// The layout's per-GPU view (KappaPoint::layout): the critical stage's costs per replica token.
struct KappaLayout {
  LayoutCost cost;
  std::string name;        // layout_name()
  double b_kv_share = 0;   // KV bytes per replica token per GPU (the κ denominator)
  double f_gpu = 0;        // F_pf per replica token per GPU, critical stage
  int critical_stage = 0;  // the stage with the longest compute + communication per token
  double nvlink_bytes = 0, nic_bytes = 0;  // per replica token per GPU, critical stage
  double t_comm = 0;                       // their time at the links' peak rates
  double kappa_crit_comm = 0;              // κ_crit with communication serial with compute
  double weight_bytes_gpu = 0;             // weights one GPU holds (compute dtype), largest stage
};

struct KappaPoint {
  std::string model, system, compute_dtype, kv_dtype, convention;
  int tp = 1;
  double n_active_params = 0;
  double b_kv = 0;  // KV bytes per token, whole model
  // Issue 25: where B_kv depends on the context (sliding-window or linear-attention layers),
  // the K it is taken at: "K = 100000" (prefix bytes / K at --context K) or "K → ∞" (the
  // full-attention layers only, without --context). Empty for a model whose B_kv is the same
  // at every K.
  std::string kv_at;
  double b_kv_gpu = 0;   // KV bytes per token one GPU holds (with replication)
  double f_pf = 0;       // FLOPs per new token, whole model, by the convention
  double compute = 0;    // C_eff per GPU
  double bandwidth = 0;  // BW per GPU
  std::string compute_source, bandwidth_source;
  double kappa_m = 0;  // per GPU: (F_pf / tp) / b_kv_gpu
  double kappa_hw = 0;
  double kappa_crit = 0;
  // With attention over K cached (+ T new, causal) tokens:
  std::optional<double> context_k, new_tokens_t;
  std::optional<double> f_attention;  // attention FLOPs per new token at (K, T)
  std::optional<double> kappa_crit_attention;
  // Eq. 3 at (K, T) (per GPU):
  std::optional<TtftParts> ttft;             // F = F_pf
  std::optional<TtftParts> ttft_attention;   // F = F_pf + attention
  std::optional<KappaLayout> layout;         // with a KappaQuery::layout
  std::optional<KappaShardedKv> sharded_kv;  // with KappaQuery::shard_replicated_kv
  // Per-GPU F per new token and KV bytes per cached token behind kappa_m (F_pf / tp and
  // b_kv_gpu without a layout; the layout's shares with one).
  double f_gpu = 0;
  double b_kv_share = 0;
  // Issue 14: per-tier κ when the system has tiers below DRAM (tier_kappa.hpp; empty without).
  std::vector<TierLoad> tiers;
  double tier_io_bytes = 0;  // the request size the NVMe figures are taken at
};

// Evaluates the model on one system. Throws InputError for an impossible query (no peak for
// the dtype, tp not dividing the heads, ...).
KappaPoint evaluate_kappa(const ModelSpec& m, const SystemSpec& s, const KappaQuery& q,
                          const ProvenanceTable* provenance = nullptr);  // keys "system.gpu..."

// Roofline of one GPU against the workload's κ_ratio (log-spaced from lo to hi): attainable
// FLOP/s with transfers overlapped (min(C, F·BW/(κ·B_kv))) and serial (Eq. 3).
struct RooflineRow {
  double kappa_ratio;
  double attainable_overlap;
  double attainable_serial;
  double p_oh;
  bool link_bound;
};
std::vector<RooflineRow> roofline(const KappaPoint& p, double lo, double hi, int points);

}  // namespace kappasim
