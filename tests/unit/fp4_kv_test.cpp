// Issue 25 part 3: FP4 KV caches (NVFP4, MXFP4) with their block scales. Every expected value is
// computed here from the formats' definitions (NVFP4: two E2M1 values per byte and one FP8 E4M3
// scale per 16 elements; MXFP4, OCP Microscaling v1.0: one E8M0 scale per 32 elements) and the
// checkpoints' config.json values, never read from the program.
#include <gtest/gtest.h>

#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/analytic/kappa.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "models/llm/architecture.hpp"
#include "serving/run_spec.hpp"
#include "tests/unit/preset_util.hpp"

namespace kappasim {
namespace fp4_kv_test {
namespace {

using test::model_preset;
using test::system_preset;

// Llama-3.1-8B: 32 layers × 2 (K, V) × 8 KV heads × 128 = 65,536 elements per token.
// NVFP4 0.5625 B each = 36,864 B; MXFP4 0.53125 B = 34,816 B; FP8 65,536 B.
TEST(Fp4Kv, BytesPerTokenCountTheBlockScales) {
  EXPECT_DOUBLE_EQ(bytes_per_element(DType::Nvfp4), 0.5625);
  EXPECT_DOUBLE_EQ(bytes_per_element(DType::Mxfp4), 0.53125);
  const ModelSpec m = model_preset("llama-3.1-8b");
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Nvfp4), 36864.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Mxfp4), 34816.0);
  EXPECT_EQ(parse_dtype("nvfp4", "kv_dtype"), DType::Nvfp4);
  EXPECT_EQ(parse_dtype("mxfp4", "kv_dtype"), DType::Mxfp4);
  EXPECT_STREQ(dtype_name(DType::Mxfp4), "mxfp4");
}

// FP4 compute stores its weights as NVFP4 with their scales: 0.5625 B per weight, so one GEMM
// of M 16, N 8192, K 8192 reads 8192 × 8192 × 0.5625 = 37,748,736 B of weights, plus its FP4
// activations in (16 × 8192 × 0.5625) and BF16 out (16 × 8192 × 2).
TEST(Fp4Kv, Fp4WeightsCountTheirScales) {
  EXPECT_EQ(weight_dtype_for("fp4"), DType::Nvfp4);
  const SystemSpec s = system_preset("b200");
  const KernelTime t = gemm_kernel_time(s.gpu, 16, 8192, 8192, "fp4");
  const double bytes = 8192.0 * 8192 * 0.5625 + 16.0 * 8192 * 0.5625 + 16.0 * 8192 * 2;
  EXPECT_DOUBLE_EQ(t.memory_time_s, bytes / (s.gpu.hbm_bandwidth_Bps * *s.gpu.hbm_efficiency));
}

// Attention reads the FP4 cache directly (dequantised in the kernel): no dequantisation kernel,
// and the KV read of a layer costs FP4 bytes. Llama-3.1-8B, TP 1, K = 4096, T = 128: one query
// tile reads the 4096 cached tokens and its own 128, 4224 tokens × 2 × 8 × 128 × 0.5625 B =
// 4,866,048 B, plus Q in and O out 128 × 32 × (128 + 128) × 2 B = 2,097,152 B.
TEST(Fp4Kv, AttentionReadsTheFp4CacheWithoutASeparatePass) {
  const ModelSpec m = model_preset("llama-3.1-8b");
  EXPECT_EQ(kv_dequant_mode(DType::Nvfp4), KvDequant::FusedDequant);
  EXPECT_EQ(kv_dequant_mode(DType::Mxfp4), KvDequant::FusedDequant);
  EXPECT_DOUBLE_EQ(kv_dequant_bytes(m, 1, 4096, DType::Nvfp4), 0.0);
  bool seen = false;
  for (const Kernel& k : layer_kernels(m, 0, 128, 4096, 1, DType::Bf16, DType::Nvfp4)) {
    EXPECT_NE(k.name, "kv_dequant");
    if (k.kind != Kernel::Kind::Attention) continue;
    seen = true;
    EXPECT_DOUBLE_EQ(k.hbm_bytes, 4224.0 * 2 * 8 * 128 * 0.5625 + 2097152.0);
  }
  EXPECT_TRUE(seen);
}

// A GPU must write FP4 (have an fp4 peak): B200 does, H100 does not; the refusal names the key.
TEST(Fp4Kv, AGpuWithoutFp4IsRefusedNamingTheKey) {
  EXPECT_NO_THROW(
      require_kv_dtype_support(system_preset("b200").gpu, DType::Nvfp4, "serving.kv_dtype"));
  EXPECT_NO_THROW(
      require_kv_dtype_support(system_preset("h100").gpu, DType::Fp8, "serving.kv_dtype"));
  try {
    require_kv_dtype_support(system_preset("h100").gpu, DType::Mxfp4, "serving.kv_dtype");
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("serving.kv_dtype: mxfp4 KV needs a GPU that writes FP4", 0),
        0u)
        << e.what();
  }
  // A run config says so at validation.
  const std::string yaml =
      "model: llama-3.1-8b\nsystem: h100\nworkload: {type: narrativeqa}\n"
      "serving: {tp: 1, kv_dtype: nvfp4}\n";
  try {
    read_config<RunSpec>(parse_yaml(yaml, "<test>"), "");
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("serving.kv_dtype: nvfp4 KV needs"), std::string::npos)
        << e.what();
  }
}

// κ moves both ways with FP4 (issue 25): on B200 FP4 KV cuts B_kv to 0.5625 B per element, so at
// the same compute κ_M is 2 / 0.5625 = 3.56× BF16's and κ_crit with it.
TEST(Fp4Kv, KappaCritGrowsAsBkvShrinks) {
  const ModelSpec m = model_preset("llama-3.1-8b");
  const SystemSpec s = system_preset("b200");
  KappaQuery q;
  const KappaPoint bf16 = evaluate_kappa(m, s, q);
  q.kv_dtype = DType::Nvfp4;
  const KappaPoint fp4 = evaluate_kappa(m, s, q);
  EXPECT_DOUBLE_EQ(fp4.b_kv, 36864.0);
  EXPECT_NEAR(fp4.kappa_crit / bf16.kappa_crit, 2 / 0.5625, 1e-12);
}

}  // namespace
}  // namespace fp4_kv_test
}  // namespace kappasim
