// Issue 25 part 1: the next-generation and PCIe-only hardware presets. Each test loads a preset
// and checks derived numbers against hand computation from the datasheet / announcement figures
// written here as literals (never the program's output), plus the designed behaviour of a GPU
// without NVLink: it runs at TP 1, and TP > 1 is refused naming system.gpu.nvlink_bandwidth.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/analytic/kappa.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "models/llm/architecture.hpp"
#include "serving/run_spec.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {
namespace generations_test {
namespace {

SystemSpec sys(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<SystemSpec>(ref, "system", "system");
}
ModelSpec model(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<ModelSpec>(ref, "model", "model");
}
void expect_rel(double actual, double expected, double rel, const std::string& what) {
  EXPECT_NEAR(actual, expected, rel * std::fabs(expected)) << what;
}
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

// PCI-SIG: GT/s per lane x 16 lanes x line code / 8 bits, per direction.
const double kGen4 = 16e9 * 16 * 128 / 130 / 8;  // 31.5077 GB/s
const double kGen5 = 32e9 * 16 * 128 / 130 / 8;  // 63.0154 GB/s
const double kGen6 = 64e9 * 16 * 236 / 256 / 8;  // 118 GB/s (256 B flit carries 236 B of TLP)

// meta-llama/Llama-3.1-70B config.json: F_pf = 2 N = 2 x 70,553,706,496 FLOP per token;
// B_kv = 80 layers x 2 (K,V) x 8 kv heads x 128 x 2 B = 327,680 B per token (bf16).
const double kL70F = 2 * 70553706496.0, kL70Kv = 327680;

TEST(Generations, L40sPcieOnly) {
  const SystemSpec s = sys("l40s");
  EXPECT_FALSE(s.gpu.nvlink_Bps.has_value()) << "L40S has no NVLink";
  // L40S datasheet: 384-bit GDDR6 at 18 Gbps = 384 / 8 x 18e9 = 864 GB/s; FP8 733 TF dense.
  expect_rel(s.gpu.hbm_bandwidth_Bps, 384.0 / 8 * 18e9, 1e-12, "GDDR6 bandwidth");
  expect_rel(s.gpu.peak("fp8"), 733e12, 1e-12, "FP8 dense");
  expect_rel(s.host_link_bandwidth_per_gpu(), kGen4, 1e-9, "PCIe 4.0 x16");
  // κ_HW = B / C = 31.5077e9 / 362.05e12 = 8.7026e-5 at BF16, TP 1.
  const KappaPoint p = evaluate_kappa(model("llama-3.1-70b"), s, KappaQuery{});
  expect_rel(p.kappa_hw, 8.7026e-5, 1e-4, "kappa_hw L40S");
  expect_rel(p.kappa_crit, kL70F / kL70Kv * kGen4 / 362.05e12, 1e-9, "kappa_crit L40S");
  // The simulator's requirements no longer include NVLink for a GPU that has none.
  EXPECT_NO_THROW(s.gpu.require_sim("system.gpu"));
}

TEST(Generations, TensorParallelWithoutNvlinkRefusedNamingTheKey) {
  for (const char* name : {"l40s", "rtx-pro-6000", "rubin-cpx"}) {
    const SystemSpec s = sys(name);
    KappaQuery q;
    q.tp = 2;
    const std::string e = error_of([&] { evaluate_kappa(model("llama-3.1-70b"), s, q); });
    EXPECT_TRUE(has(e, "system.gpu.nvlink_bandwidth")) << name << ": " << e;
    EXPECT_TRUE(has(e, "tp 2")) << e;
    // Giving the link makes the same query valid: the refusal is about the missing link.
    ConfigNode root = ConfigNode::make_map();
    root.set("system", ConfigNode::make_scalar(name));
    apply_set(root, "system.gpu.nvlink_bandwidth=\"100 GB/s\"");
    const SystemSpec with =
        read_preset_config<SystemSpec>(*root.find("system"), "system", "system");
    EXPECT_NO_THROW(evaluate_kappa(model("llama-3.1-70b"), with, q)) << name;
  }
  // A GPU that has the link but not its latency is incomplete for the simulator.
  GpuSpec g = sys("h100").gpu;
  g.nvlink_latency_s.reset();
  EXPECT_TRUE(has(error_of([&] { g.require_sim("system.gpu"); }), "nvlink_latency"));
}

TEST(Generations, RunWithTpOnAGpuWithoutNvlinkRefusedBeforeItStarts) {
  // The simulated all-reduce would throw inside a SystemC process, mid-run; RunSpec::validate
  // refuses it first, naming the key.
  auto run = [](const std::string& system, int tp) {
    const std::string yaml = "model: llama-3.1-8b\nsystem: " + system +
                             "\nserving: {tp: " + std::to_string(tp) +
                             "}\nworkload: {type: narrativeqa, requests: 2, rate: 1}\n";
    (void)read_config<RunSpec>(parse_yaml(yaml, "run.yaml"), "");
  };
  const std::string e = error_of([&] { run("l40s", 2); });
  EXPECT_TRUE(has(e, "system.gpu.nvlink_bandwidth: serving.tp 2")) << e;
  EXPECT_EQ(error_of([&] { run("l40s", 1); }), "");  // TP 1 needs no link
  EXPECT_EQ(error_of([&] { run("h20", 2); }), "");   // a GPU with NVLink runs TP 2
}

TEST(Generations, H20ComputeCappedHopper) {
  const SystemSpec s = sys("h20");
  expect_rel(s.gpu.peak("bf16"), 148e12, 1e-12, "BF16 dense");
  expect_rel(s.gpu.peak("fp8"), 296e12, 1e-12, "FP8 dense");
  expect_rel(s.gpu.hbm_bandwidth_Bps, 4.0e12, 1e-12, "HBM3");
  expect_rel(*s.gpu.nvlink_Bps, 900e9 / 2, 1e-12, "NVLink 4 per direction");
  // κ_HW = 63.0154e9 / 148e12 = 4.2578e-4: 6.7x H100's 6.372e-5 on the same Gen5 x16 link.
  const KappaPoint p = evaluate_kappa(model("llama-3.1-70b"), s, KappaQuery{});
  expect_rel(p.kappa_hw, 4.2578e-4, 1e-4, "kappa_hw H20");
}

TEST(Generations, B300AndGb300) {
  const SystemSpec h = sys("hgx-b300");
  // HGX B300 datasheet per 8 GPUs: 105 PF FP4 dense, 72 PF FP8 sparse.
  expect_rel(h.gpu.peak("fp4"), 105e15 / 8, 1e-12, "FP4 dense");
  expect_rel(h.gpu.peak("fp8"), 72e15 / 8 / 2, 1e-12, "FP8 dense");
  // The Xeon 6 root port (Gen5) binds the GPU -> CX8 (Gen6) -> CPU path.
  expect_rel(h.host_link_bandwidth_per_gpu(), kGen5, 1e-9, "Gen5 hop binds");
  expect_rel(sys("hgx-b300-gen6").host_link_bandwidth_per_gpu(), kGen6, 1e-9, "Gen6 end to end");
  const SystemSpec g = sys("gb300");
  // GB300 NVL72: 360 PF FP8 dense / 72 GPUs; C2C 900 GB/s bidirectional / 2 / 2 GPUs.
  expect_rel(g.gpu.peak("fp8"), 360e15 / 72, 1e-12, "GB300 FP8 dense");
  expect_rel(g.host_link_bandwidth_per_gpu(), 900e9 / 2 / 2, 1e-12, "C2C share");
  // κ_HW = 225e9 / 2.5e15 = 9.0e-5 at BF16.
  const KappaPoint p = evaluate_kappa(model("llama-3.1-70b"), g, KappaQuery{});
  expect_rel(p.kappa_hw, 9.0e-5, 1e-12, "kappa_hw GB300");
}

TEST(Generations, AmdParts) {
  const SystemSpec x = sys("mi300x");
  expect_rel(x.gpu.peak("bf16"), 1307.4e12, 1e-12, "MI300X BF16 dense");
  expect_rel(x.gpu.hbm_bandwidth_Bps, 5.3e12, 1e-12, "MI300X HBM3");
  // 7 xGMI links x 128 GB/s bidirectional = 896 GB/s; per direction over all links 448 GB/s.
  expect_rel(*x.gpu.nvlink_Bps, 7 * 128e9 / 2, 1e-12, "xGMI per direction");
  // κ_HW = 63.0154e9 / 1307.4e12 = 4.8199e-5.
  expect_rel(evaluate_kappa(model("llama-3.1-70b"), x, KappaQuery{}).kappa_hw, 4.8199e-5, 1e-4,
             "kappa_hw MI300X");
  // MI355X FP8: 8192 FLOP/clk/CU x 256 CUs x 2.4 GHz = 5.0332e15.
  expect_rel(sys("mi355x").gpu.peak("fp8"), 8192.0 * 256 * 2.4e9, 1e-4, "MI355X FP8 dense");
}

TEST(Generations, Mi300aIsAUnifiedHbmInstance) {
  const SystemSpec a = sys("mi300a");
  EXPECT_EQ(a.host_link.type, LinkType::HbmTier);
  // MI300X per-CU rate x 228 / 304 CUs: 1307.4 x 0.75 = 980.55 TF BF16.
  expect_rel(a.gpu.peak("bf16"), 1307.4e12 * 228 / 304, 1e-4, "MI300A BF16");
  // An offload copy reads and writes the one 5.3 TB/s HBM: 2.65 TB/s per direction.
  expect_rel(a.host_link_bandwidth_per_gpu(), 5.3e12 / 2, 1e-12, "HBM-to-HBM copy");
  // The GPU's pool and the tier share are the same 128 GB: the tier must fit inside it.
  EXPECT_LE(a.host_link.capacity_bytes.value_or(0), a.gpu.hbm_capacity_bytes);
}

TEST(Generations, RubinAnnouncedParts) {
  const SystemSpec v = sys("vr200");
  expect_rel(*v.gpu.nvlink_Bps, 3.6e12 / 2, 1e-12, "NVLink 6 per direction");
  expect_rel(v.host_link_bandwidth_per_gpu(), 1.8e12 / 2 / 2, 1e-12, "Vera C2C share");
  const SystemSpec c = sys("rubin-cpx");
  EXPECT_FALSE(c.gpu.nvlink_Bps.has_value()) << "CPX has no NVLink";
  expect_rel(c.host_link_bandwidth_per_gpu(), kGen6, 1e-9, "PCIe 6.0 x16");
  expect_rel(c.gpu.hbm_capacity_bytes, 128e9, 1e-12, "128 GB GDDR7");
}

TEST(Generations, UnknownPresetNamesSuggestEveryEqualNeighbour) {
  auto read = [](const std::string& yaml) {
    ConfigNode n = parse_yaml(yaml, "<test>");
    (void)read_preset_config<SystemSpec>(*n.find("system"), "system", "system");
  };
  // h100-sxm is one edit from h100-sxm5 and from h200-sxm: both are named.
  const std::string e = error_of([&] { read("system: {preset: h100, gpu: h100-sxm}\n"); });
  EXPECT_TRUE(has(e, "did you mean 'h100-sxm5' or 'h200-sxm'?")) << e;
  EXPECT_TRUE(has(e, "system.gpu")) << e;
  // h10 -> h100 (one edit) and h20 (one edit).
  const std::string e2 = error_of([&] { read("system: h10\n"); });
  EXPECT_TRUE(has(e2, "'h100'") && has(e2, "'h20'")) << e2;
}

// Issue 25: Kimi K2 (moonshotai/Kimi-K2-Instruct config.json): DeepSeek-V3's MLA + MoE with 64
// heads, 384 routed experts (8 active + 1 shared), one dense layer, a 163,840 vocabulary.
// By hand, per MLA layer: q_a 7168·1536 + q_b 1536·64·192 + kv_a 7168·576 + kv_b 512·64·256 +
// o 64·128·7168 = 101,122,048; an expert 3·7168·2048 = 44,040,192; the dense MLP 3·7168·18432
// = 396,361,728; router 384·7168 = 2,752,512; embedding and LM head 163,840·7168 each; norms
// 61·2·7168 + 7168 + 61·(1536 + 512) = 1,006,592. Active: 61 attention + 1 dense MLP + 60 × (9
// experts + router) + embedding + head + norms = 32,861,477,888 (the model card's "32 B
// activated"); the latent, 576 values × 61 layers × 2 B = 70,272 B per token, is DeepSeek-V3's.
TEST(Generations, KimiK2CountsAsItsConfigSays) {
  const ModelSpec m = model("kimi-k2");
  const double attention = 61.0 * (7168.0 * 1536 + 1536.0 * 64 * 192 + 7168.0 * 576 +
                                   512.0 * 64 * 256 + 64.0 * 128 * 7168);
  const double expert = 3.0 * 7168 * 2048;
  const double active = attention + 3.0 * 7168 * 18432 + 60 * (9 * expert + 384.0 * 7168) +
                        2 * 163840.0 * 7168 + (61.0 * 2 * 7168 + 7168 + 61.0 * (1536 + 512));
  EXPECT_DOUBLE_EQ(active, 32861477888.0);
  EXPECT_DOUBLE_EQ(count_params(m).active(), active);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Bf16), 70272.0);
}

}  // namespace
}  // namespace generations_test
}  // namespace kappasim
