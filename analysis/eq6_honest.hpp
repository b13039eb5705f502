// An honest test of the analytic model (docs/analysis.md "Eq. 6 from probed rates"): κ_crit
// predicted from rates probed *independently* of the run whose crossing it predicts, two ways.
//
//   Eq. 6 as published:  κ_crit = (F_pf / B_kv) · (B / C)
//     B = `probe h2d` at the load path's copy size (the tp GPUs copying at once),
//     C = `probe prefill` at a large T (K = 0), in the one FLOP convention (docs/accounting.md:
//         F_pf = 2 · N_active per new token, per GPU F_pf / tp).
//   Extended closed form: the K at which the load of K cached tokens takes as long as the
//   compute of T new tokens over them,
//     load(K)    = t_req + (K / c) · t_chunk + K · b_gpu / B
//     compute(K) = max(F_gpu · T / C, t_floor) + a · K · T
//     K*         = (max(F_gpu·T/C, t_floor) − t_req) / (b_gpu / B + t_chunk / c − a · T),  κ = K*/T
//   with t_req, t_chunk the per-request and per-chunk software time of the load (the serving
//   config's LMCache / native-connector costs), c the tier chunk in tokens, t_floor the
//   compute of the T new tokens at K = 0 probed with `probe prefill --t T` (weight reads — for
//   MoE every expert the T tokens touch —, TP all-reduce latency, kernel launches: the floor an
//   effective rate at large T hides at small T), a the attention time per cached × new token per
//   GPU (attention FLOPs over K at peak × attention_efficiency), and b_gpu the KV bytes per
//   token per GPU with KV-head replication (kv heads < tp). Chunks are taken as continuous
//   (K / c, not ⌈K / c⌉). When the denominator is ≤ 0 the load never catches up: +∞.
// Pure; the CLI runs the probes (apps/kappasim/honest_eq6.cpp).
#pragma once

namespace kappasim::analysis {

struct HonestInputs {
  double T = 0;
  double f_gpu = 0;     // FLOPs per new token per GPU (2 · N_active / tp)
  double b_kv_eq6 = 0;  // Eq. 6's KV bytes per token per GPU: B_kv / tp (no replication)
  double b_kv_gpu = 0;  // with KV-head replication
  double link_Bps = 0;  // probed
  double compute = 0;   // probed, FLOP/s in the convention
  double floor_s = 0;   // probed compute of T new tokens at K = 0
  double attn_s_per_kt = 0;
  double t_request_s = 0, t_chunk_s = 0, chunk_tokens = 1;
};

double kappa_crit_eq6_probed(const HonestInputs& in);
double kappa_crit_extended(const HonestInputs& in);

}  // namespace kappasim::analysis
