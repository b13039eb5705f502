// The analytic κ model (arXiv 2601.19910, Eqs. 3 and 6): κ_crit closed form with the paper's
// convention, per-GPU view under tensor parallelism with KV-head replication, TTFT parts,
// P_OH and U, attention FLOPs over the cached context, F_pf conventions, and the roofline.
// Expected values are computed here from the public config numbers (Hugging Face config.json)
// and spec numbers (PCI-SIG, NVIDIA datasheets), written as literals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/analytic/kappa.hpp"
#include "models/llm/architecture.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {
namespace kappa_test {
namespace {

ModelSpec model(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<ModelSpec>(ref, "model", "model");
}
SystemSpec sys(const std::string& name, ProvenanceTable* prov = nullptr) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<SystemSpec>(ref, "system", "system", prov);
}

void expect_rel(double actual, double expected, double rel, const std::string& what = "") {
  EXPECT_NEAR(actual, expected, rel * std::fabs(expected)) << what;
}

// meta-llama/Llama-3.1-70B config.json: hidden 8192, 80 layers, 64 q / 8 kv heads of 128,
// intermediate 28672, vocab 128256, untied.
const double kL70Layers = 80, kL70Hidden = 8192, kL70Vocab = 128256;
const double kL70Params = 80 * (8192.0 * 8192 + 2.0 * 8192 * 1024 + 8192.0 * 8192  // attention
                                + 3.0 * 8192 * 28672                               // SwiGLU
                                + 2.0 * 8192)                                      // 2 norms
                          + 8192                                                   // final norm
                          + 2.0 * 128256 * 8192;                                   // emb + head
const double kL70Kv = 2.0 * 80 * 8 * 128 * 2;  // K,V · layers · kv heads · dim · BF16
const double kL70Slope = 4.0 * 80 * 64 * 128;  // attention FLOPs per new per cached token

// Qwen/Qwen3-235B-A22B config.json: hidden 4096, 94 layers, 64 q / 4 kv heads of 128, q/k
// norm, 128 experts top-8 of 1536, vocab 151936, untied.
const double kQwenActive = 94 * (4096.0 * 8192 + 2.0 * 4096 * 512 + 8192.0 * 4096 + 2.0 * 128 +
                                 8 * 3.0 * 4096 * 1536  // 8 active experts
                                 + 4096.0 * 128         // router
                                 + 2.0 * 4096)          // 2 norms
                           + 4096 + 2.0 * 151936 * 4096;
const double kQwenKv = 2.0 * 94 * 4 * 128 * 2;

// The paper's convention (mission.md): C_eff = 2000 TFLOP/s, BW = 64 GB/s, F_pf = 2·N_active.
const double kPaperC = 2000e12, kPaperBw = 64e9;
// PCIe 5.0 x16 per direction (PCI-SIG: 32 GT/s, 128b/130b); H100 SXM BF16 dense 989 TFLOP/s.
const double kGen5 = 32e9 * 16 * 128 / 130 / 8;
const double kH100Bf16 = 989e12;

KappaQuery paper_query() {
  KappaQuery q;
  q.compute_override = kPaperC;
  q.bandwidth_override = kPaperBw;
  return q;
}

TEST(Kappa, HandConstantsMatchPublished) {
  EXPECT_DOUBLE_EQ(kL70Params, 70553706496.0);
  EXPECT_DOUBLE_EQ(kL70Kv, 327680);
  EXPECT_DOUBLE_EQ(kQwenActive, 22190763520.0);
  EXPECT_DOUBLE_EQ(kQwenKv, 192512);
}

TEST(Kappa, ClosedForms) {
  EXPECT_DOUBLE_EQ(kappa_m(100, 4), 25);
  EXPECT_DOUBLE_EQ(kappa_hw(64e9, 2000e12), 3.2e-5);
  EXPECT_DOUBLE_EQ(kappa_crit(100, 4, 64e9, 2000e12), 25 * 3.2e-5);
}

TEST(Kappa, PaperConventionLlama70B) {
  const KappaPoint p = evaluate_kappa(model("llama-3.1-70b"), sys("h100"), paper_query());
  const double f = 2 * kL70Params;
  const double expected = f / kL70Kv * kPaperBw / kPaperC;
  EXPECT_DOUBLE_EQ(p.n_active_params, kL70Params);
  EXPECT_DOUBLE_EQ(p.b_kv, kL70Kv);
  EXPECT_DOUBLE_EQ(p.b_kv_gpu, kL70Kv);
  EXPECT_DOUBLE_EQ(p.f_pf, f);
  EXPECT_DOUBLE_EQ(p.compute, kPaperC);
  EXPECT_DOUBLE_EQ(p.bandwidth, kPaperBw);
  expect_rel(p.kappa_m, f / kL70Kv, 1e-12, "kappa_m");
  expect_rel(p.kappa_hw, 3.2e-5, 1e-12, "kappa_hw");
  expect_rel(p.kappa_crit, expected, 1e-9, "kappa_crit");
  expect_rel(p.kappa_crit, 13.7800, 1e-4, "13.7800");
  EXPECT_EQ(p.convention, "2n-active");
  EXPECT_EQ(p.compute_source, "--compute");
  EXPECT_EQ(p.bandwidth_source, "--bandwidth");
  EXPECT_FALSE(p.ttft.has_value());
  EXPECT_FALSE(p.kappa_crit_attention.has_value());
}

TEST(Kappa, PaperConventionQwen3_235B) {
  const KappaPoint p = evaluate_kappa(model("qwen3-235b-a22b"), sys("h100"), paper_query());
  const double expected = 2 * kQwenActive / kQwenKv * 3.2e-5;
  EXPECT_DOUBLE_EQ(p.b_kv, kQwenKv);
  expect_rel(p.kappa_crit, expected, 1e-9, "kappa_crit");
  expect_rel(p.kappa_crit, 7.3766, 1e-4, "7.3766");
}

TEST(Kappa, DatasheetDefaultsOnH100) {
  const KappaPoint p = evaluate_kappa(model("llama-3.1-70b"), sys("h100"), KappaQuery{});
  EXPECT_DOUBLE_EQ(p.compute, kH100Bf16);
  expect_rel(p.bandwidth, kGen5, 1e-12, "PCIe 5.0 x16");
  expect_rel(p.kappa_crit, 2 * kL70Params / kL70Kv * kGen5 / kH100Bf16, 1e-9, "kappa_crit");
  EXPECT_NE(p.bandwidth_source.find("x16"), std::string::npos) << p.bandwidth_source;

  KappaQuery fp8;
  fp8.compute_dtype = "fp8";
  fp8.kv_dtype = DType::Fp8;
  const KappaPoint q = evaluate_kappa(model("llama-3.1-70b"), sys("h100"), fp8);
  EXPECT_DOUBLE_EQ(q.compute, 1979e12);
  EXPECT_DOUBLE_EQ(q.b_kv, kL70Kv / 2);
  // Halving B_kv doubles κ_M.
  expect_rel(q.kappa_m, 2 * p.kappa_m, 1e-12, "fp8 KV");
}

TEST(Kappa, ComputeSourceNamesProvenance) {
  ProvenanceTable prov;
  const SystemSpec s = sys("h100", &prov);
  const KappaPoint p = evaluate_kappa(model("llama-3.1-70b"), s, KappaQuery{}, &prov);
  EXPECT_NE(p.compute_source.find("H100 datasheet"), std::string::npos) << p.compute_source;
}

TEST(Kappa, GB200SharesTheC2c) {
  const KappaPoint p = evaluate_kappa(model("llama-3.1-70b"), sys("gb200"), KappaQuery{});
  EXPECT_DOUBLE_EQ(p.bandwidth, 450e9 / 2);  // NVLink-C2C 450 GB/s per direction, 2 GPUs
  EXPECT_DOUBLE_EQ(p.compute, 2500e12);      // GB200 B200 BF16 dense
}

TEST(Kappa, TensorParallelQwenReplication) {
  KappaQuery q;
  q.tp = 8;
  const ModelSpec m = model("qwen3-235b-a22b");
  const KappaPoint p8 = evaluate_kappa(m, sys("paper-testbed"), q);
  const KappaPoint p1 = evaluate_kappa(m, sys("paper-testbed"), KappaQuery{});
  const double f = 2 * kQwenActive;
  const double b_gpu = 2.0 * 94 * 1 * 128 * 2;  // one (replicated) KV head per GPU
  EXPECT_DOUBLE_EQ(b_gpu, 48128);
  EXPECT_DOUBLE_EQ(p8.b_kv, kQwenKv);
  EXPECT_DOUBLE_EQ(p8.b_kv_gpu, b_gpu);
  expect_rel(p8.kappa_m, (f / 8) / b_gpu, 1e-12, "per-GPU kappa_m");
  expect_rel(p8.kappa_m, p1.kappa_m / 2, 1e-12, "replication halves kappa_m");
  expect_rel(p8.kappa_crit, (f / 8) / b_gpu * kGen5 / kH100Bf16, 1e-9, "kappa_crit TP8");

  // Llama-3.1-70B has 8 KV heads: TP 8 splits them evenly, κ_M is unchanged.
  const KappaPoint l8 = evaluate_kappa(model("llama-3.1-70b"), sys("paper-testbed"), q);
  EXPECT_DOUBLE_EQ(l8.b_kv_gpu, 40960);
  expect_rel(l8.kappa_m, 2 * kL70Params / kL70Kv, 1e-12, "llama TP8");
}

TEST(Kappa, TtftPartsAt64kContext) {
  const double K = 65536, T = 256;
  KappaQuery q;
  q.context_k = K;
  q.new_tokens_t = T;
  const KappaPoint p = evaluate_kappa(model("llama-3.1-70b"), sys("h100"), q);
  ASSERT_TRUE(p.ttft.has_value());
  ASSERT_TRUE(p.ttft_attention.has_value());
  const double f = 2 * kL70Params;
  const double t_x = K * kL70Kv / kGen5;
  const double t_c = T * f / kH100Bf16;
  expect_rel(p.ttft->t_transfer, t_x, 1e-12, "t_transfer");
  expect_rel(p.ttft->t_compute, t_c, 1e-12, "t_compute");
  expect_rel(p.ttft->ttft_serial(), t_x + t_c, 1e-12, "serial");
  expect_rel(p.ttft->ttft_overlap(), std::max(t_x, t_c), 1e-12, "overlap");
  expect_rel(p.ttft->p_oh(), t_x / t_c, 1e-12, "p_oh");
  expect_rel(p.ttft->utilization(), 1 / (1 + t_x / t_c), 1e-12, "U");
  EXPECT_GT(t_x, t_c);  // κ_ratio 256 ≫ κ_crit ≈ 7: link-bound

  // Attention over K cached + causal T new: per new token slope·(K + (T+1)/2).
  const double f_attn = kL70Slope * (K + (T + 1) / 2);
  expect_rel(*p.f_attention, f_attn, 1e-12, "f_attention");
  expect_rel(p.ttft_attention->t_compute, T * (f + f_attn) / kH100Bf16, 1e-12, "t_compute attn");
  expect_rel(p.ttft_attention->t_transfer, t_x, 1e-12, "t_transfer attn");
  expect_rel(*p.kappa_crit_attention, (f + f_attn) / kL70Kv * kGen5 / kH100Bf16, 1e-12,
             "kappa_crit_attention");

  // Same at TP 8: each GPU moves its 40960 B/token and computes 1/8 of the FLOPs.
  q.tp = 8;
  const KappaPoint p8 = evaluate_kappa(model("llama-3.1-70b"), sys("h100"), q);
  expect_rel(p8.ttft->t_transfer, K * 40960 / kGen5, 1e-12, "t_transfer TP8");
  expect_rel(p8.ttft->t_compute, T * (f / 8) / kH100Bf16, 1e-12, "t_compute TP8");
}

TEST(Kappa, TtftPartsFreeFunction) {
  const TtftParts t = ttft_parts(1000, 10, 100, 1e9, 1e6, 1e12);
  EXPECT_DOUBLE_EQ(t.t_transfer, 1000.0 * 100 / 1e6);  // 0.1 s
  EXPECT_DOUBLE_EQ(t.t_compute, 10 * 1e9 / 1e12);      // 0.01 s
  EXPECT_NEAR(t.p_oh(), 10, 1e-12);
  EXPECT_NEAR(t.utilization(), 1.0 / 11, 1e-15);
}

TEST(Kappa, KappaCritWithAttentionAtK) {
  const ModelSpec m = model("llama-3.1-70b");
  const double f = 2 * kL70Params;
  for (double K : {0.0, 1024.0, 65536.0}) {
    KappaQuery q = paper_query();
    q.context_k = K;  // T defaults to 1
    const KappaPoint p = evaluate_kappa(m, sys("h100"), q);
    const double attn_k1 = kL70Slope * (K + 1);  // one new token: K cached pairs + itself
    EXPECT_DOUBLE_EQ(*p.new_tokens_t, 1);
    expect_rel(*p.f_attention, attn_k1, 1e-12, "attn(K,1)");
    expect_rel(*p.kappa_crit_attention, (f + attn_k1) / kL70Kv * kPaperBw / kPaperC, 1e-12,
               "kappa_crit_attention");
    EXPECT_FALSE(p.ttft.has_value());  // needs both K and T
  }
  // At K = 64k attention (~172 GFLOP) more than doubles F (~141 GFLOP): κ_crit more than doubles.
  KappaQuery q = paper_query();
  q.context_k = 65536;
  const KappaPoint p = evaluate_kappa(m, sys("h100"), q);
  EXPECT_GT(*p.kappa_crit_attention, 2 * p.kappa_crit);
}

TEST(Kappa, MlaAttentionTakesTheCheaperOfExpandedAndAbsorbed) {
  // deepseek-ai/DeepSeek-V3: 61 layers, 128 heads, kv_lora 512, qk_nope 128, qk_rope 64, v 128.
  const double slope = 61.0 * 2 * 128 * (128 + 64 + 128);
  const double up = 61.0 * 2 * 512 * 128 * (128 + 128);
  const double slope_absorbed = 61.0 * 2 * 128 * (512 + 64 + 512);
  const double per_new_absorbed = 61.0 * 2 * 128 * 512 * (128 + 128);
  KappaQuery q;
  q.context_k = 100;
  q.new_tokens_t = 4;
  KappaPoint p = evaluate_kappa(model("deepseek-v3"), sys("h100"), q);
  // Few new tokens: absorbed (4·100 + 4·5/2 = 410 pairs).
  expect_rel(*p.f_attention, (410 * slope_absorbed + 4 * per_new_absorbed) / 4, 1e-12,
             "MLA f_attention, absorbed");
  q.context_k = 100000;
  q.new_tokens_t = 4096;
  p = evaluate_kappa(model("deepseek-v3"), sys("h100"), q);
  const double pairs = 4096.0 * 100000 + 4096.0 * 4097 / 2;
  expect_rel(*p.f_attention, (pairs * slope + 100000 * up) / 4096, 1e-12,
             "MLA f_attention, expanded");
  EXPECT_DOUBLE_EQ(p.b_kv, 61.0 * (512 + 64) * 2);
}

TEST(Kappa, FpfConventions) {
  const ModelSpec m = model("llama-3.1-70b");
  const SystemSpec s = sys("h100");
  const double emb = kL70Vocab * kL70Hidden;
  const double norms = (2 * kL70Layers + 1) * kL70Hidden;
  KappaQuery q;

  q.convention = FpfConvention::Kaplan;  // kaplan_context defaults to 4096
  KappaPoint p = evaluate_kappa(m, s, q);
  EXPECT_DOUBLE_EQ(p.f_pf, 2 * kL70Params + 2 * kL70Layers * 4096 * kL70Hidden);
  EXPECT_EQ(p.convention, "kaplan");
  q.kaplan_context = 8192;
  p = evaluate_kappa(m, s, q);
  EXPECT_DOUBLE_EQ(p.f_pf, 2 * kL70Params + 2 * kL70Layers * 8192 * kL70Hidden);

  q.convention = FpfConvention::TwoNNonEmbedding;
  p = evaluate_kappa(m, s, q);
  EXPECT_DOUBLE_EQ(p.f_pf, 2 * (kL70Params - 2 * emb));

  q.convention = FpfConvention::MatmulNoHead;
  p = evaluate_kappa(m, s, q);
  EXPECT_DOUBLE_EQ(p.f_pf, 2 * (kL70Params - 2 * emb - norms));

  q.fpf_override = 1e11;
  p = evaluate_kappa(m, s, q);
  EXPECT_DOUBLE_EQ(p.f_pf, 1e11);
  EXPECT_EQ(p.convention, "override");
}

TEST(Kappa, Roofline) {
  const KappaPoint p = evaluate_kappa(model("llama-3.1-70b"), sys("h100"), paper_query());
  const double f = 2 * kL70Params;
  const double kc = f / kL70Kv * kPaperBw / kPaperC;
  const int n = 13;
  const std::vector<RooflineRow> rows = roofline(p, 1, 1000, n);
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const RooflineRow& r = rows[i];
    const double k = std::pow(1000.0, i / 12.0);  // log-spaced 1 .. 1000
    SCOPED_TRACE("kappa " + std::to_string(k));
    expect_rel(r.kappa_ratio, k, 1e-12);
    const double overlap = k < kc ? kPaperC : f * kPaperBw / (k * kL70Kv);
    expect_rel(r.attainable_overlap, overlap, 1e-12, "overlap");
    expect_rel(r.attainable_serial, f / (f / kPaperC + k * kL70Kv / kPaperBw), 1e-12, "serial");
    expect_rel(r.p_oh, k / kc, 1e-12, "p_oh");
    EXPECT_EQ(r.link_bound, k > kc);
    EXPECT_LE(r.attainable_serial, r.attainable_overlap);
  }
  // Ridge at κ_crit: full compute with overlap, half of it serial, P_OH = 1.
  const std::vector<RooflineRow> ridge = roofline(p, kc / 10, kc * 10, 3);
  expect_rel(ridge[1].kappa_ratio, kc, 1e-12, "ridge");
  expect_rel(ridge[1].attainable_overlap, kPaperC, 1e-12, "ridge overlap");
  expect_rel(ridge[1].attainable_serial, kPaperC / 2, 1e-12, "ridge serial");
  expect_rel(ridge[1].p_oh, 1, 1e-12, "ridge p_oh");
  expect_rel(ridge[0].attainable_overlap, kPaperC, 1e-12, "below ridge");
  expect_rel(ridge[2].attainable_overlap, kPaperC / 10, 1e-12, "10x above ridge");

  EXPECT_THROW(roofline(p, 0, 10, 5), InputError);
  EXPECT_THROW(roofline(p, 10, 10, 5), InputError);
  EXPECT_THROW(roofline(p, 1, 10, 1), InputError);
}

TEST(Kappa, BadInputsThrow) {
  const ModelSpec m = model("llama-3.1-70b");
  const SystemSpec s = sys("h100");
  KappaQuery q;
  q.context_k = 1024;
  q.new_tokens_t = 0;
  EXPECT_THROW(evaluate_kappa(m, s, q), InputError);
  q.new_tokens_t = 16;
  q.context_k = -1;
  EXPECT_THROW(evaluate_kappa(m, s, q), InputError);
  KappaQuery tp;
  tp.tp = 3;
  EXPECT_THROW(evaluate_kappa(m, s, tp), InputError);
  tp.tp = 0;
  EXPECT_THROW(evaluate_kappa(m, s, tp), InputError);
  tp.tp = 3;  // DeepSeek-V3 (MLA): 128 query heads cannot split 3 ways
  EXPECT_THROW(evaluate_kappa(model("deepseek-v3"), s, tp), InputError);
  KappaQuery fp8;
  fp8.compute_dtype = "fp8";
  EXPECT_THROW(evaluate_kappa(m, sys("a100"), fp8), InputError);  // A100: no FP8 peak
}

}  // namespace
}  // namespace kappa_test
}  // namespace kappasim

namespace kappasim {
namespace kappa_test {
namespace {
TEST(Kappa, PohWithAttentionChargesAttentionFlops) {
  // Issue 20 part 4: report section 4's "analytic P_OH (attention FLOPs included)". Qwen3-235B
  // at K = 65,536, T = 64 under the paper's convention (C = 2000 TFLOP/s, BW = 64 GB/s, TP 1):
  //   t_x = K × B_kv / BW = 65,536 × 192,512 B / 64e9 = 0.19713 s
  //   F_pf·T = 2 × N_active × 64;  attention (causal, GQA: 2 × 64 heads × (128 + 128) per layer
  //   per pair, 94 layers) over T·K + T(T+1)/2 = 4,194,304 + 2,080 pairs = 1.2926e13 FLOP,
  //   ~4.5x the dense part, so P_OH with attention is ~1/5.5 of Eq. 3's F_pf-only P_OH.
  KappaQuery q = paper_query();
  q.context_k = 65536;
  q.new_tokens_t = 64;
  const KappaPoint p = evaluate_kappa(model("qwen3-235b-a22b"), sys("h100"), q);
  ASSERT_TRUE(p.ttft && p.ttft_attention);
  const double K = 65536, T = 64;
  const double t_x = K * kQwenKv / kPaperBw;
  const double f_attn = (T * K + T * (T + 1) / 2) * 94 * 2.0 * 64 * (128 + 128);
  const double t_c = (T * 2 * kQwenActive + f_attn) / kPaperC;
  expect_rel(p.ttft_attention->p_oh(), t_x / t_c, 1e-9, "P_OH with attention");
  expect_rel(p.ttft->p_oh(), t_x / (T * 2 * kQwenActive / kPaperC), 1e-9, "P_OH F_pf only");
  EXPECT_LT(p.ttft_attention->p_oh(), p.ttft->p_oh() / 5);
}
}  // namespace
}  // namespace kappa_test
}  // namespace kappasim
