// The P/D hand-off between two KV layouts (serving/handoff.hpp reshard_pieces, reshard_load;
// docs/disaggregation.md "The re-shard"): which prefill GPU each decode GPU reads each of its
// layers and heads from, the bytes on each pair and the descriptors each decode GPU posts, every
// value worked by hand in its comment from the model presets' geometry.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "models/llm/architecture.hpp"
#include "serving/handoff.hpp"
#include "tests/unit/preset_util.hpp"

namespace kappasim {
namespace handoff_reshard_test {
namespace {

struct P {
  int src, dst, layers, heads;
  double fraction;
};

void expect_pieces(const std::vector<ReshardPiece>& got, const std::vector<P>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].src, want[i].src) << "piece " << i;
    EXPECT_EQ(got[i].dst, want[i].dst) << "piece " << i;
    EXPECT_EQ(got[i].layers, want[i].layers) << "piece " << i;
    EXPECT_EQ(got[i].heads, want[i].heads) << "piece " << i;
    EXPECT_DOUBLE_EQ(got[i].fraction, want[i].fraction) << "piece " << i;
  }
}

}  // namespace
}  // namespace handoff_reshard_test

using handoff_reshard_test::expect_pieces;
using handoff_reshard_test::P;

// Identical layouts: GPU k reads its whole share from GPU k (one piece, fraction exactly 1), so
// its descriptors are today's per-GPU count under each profile's unit.
TEST(Reshard, IdenticalLayoutsReadEachGpusShareFromItsTwin) {
  const ModelSpec llama = test::model_preset("llama-3.1-70b");
  std::vector<P> want;
  for (int k = 0; k < 8; ++k) want.push_back({k, k, 80, 1, 1.0});
  expect_pieces(reshard_pieces(llama, {8, 1}, {8, 1}), want);
  // DeepSeek-V3 at TP 8 x PP 2: 31 + 30 layers (vLLM's get_pp_indices), the latent whole on each.
  const ModelSpec ds = test::model_preset("deepseek-v3");
  want.clear();
  for (int k = 0; k < 16; ++k) want.push_back({k, k, k < 8 ? 31 : 30, 1, 1.0});
  expect_pieces(reshard_pieces(ds, {8, 2}, {8, 2}), want);
  // Llama-3.1-70B, TP 8: 40,960 B per token per GPU; 2,048 tokens = 83,886,080 B per GPU.
  const std::vector<double> held(8, 2048 * 40960.0);
  const HandoffGeometry g{16, 256, 1};
  for (HandoffUnit u : {HandoffUnit::LayerBlock, HandoffUnit::Slice, HandoffUnit::Chunk}) {
    HandoffSpec h;
    h.unit = u;
    const ReshardLoad l = reshard_load(h, llama, {8, 1}, {8, 1}, held, 2048, g);
    for (int k = 0; k < 8; ++k) {
      EXPECT_EQ(l.dst_descriptors[k], handoff_descriptors(h, llama, 2048, held[k], g));
      EXPECT_EQ(l.src_bytes[k], held[k]);  // exactly: bytes x 1.0
    }
  }
}

// Llama-3.1-70B (8 KV heads of 128, 80 layers, BF16): 80 x 8 x 128 x 2 (K, V) x 2 B = 327,680 B of
// KV per token in all. Prefill TP 8 (GPU i: head i, all 80 layers, 40,960 B per token) to decode
// TP 4 x PP 2 (GPU s*4+j: heads 2j, 2j+1 of layers 40s..40s+39: 40 x 2 x 512 = 40,960 B per
// token). Each decode GPU reads head 2j from prefill GPU 2j and head 2j+1 from GPU 2j+1, each
// piece half its bytes. 2,048 tokens in blocks of 16 = 128 blocks: 83,886,080 B per decode GPU;
// each piece 41,943,040 B in 128 blocks x 40 layers x 2 (K, V) = 10,240 descriptors of 4,096 B
// (16 tokens x 1 head x 128 x 2 B: half of the decode block's region), 20,480 per decode GPU —
// twice what the same layout on both sides posts (one piece of 10,240). Each prefill GPU sends
// its head to both stages: 2 x 41,943,040 = 83,886,080 B, its whole share.
TEST(Reshard, Llama70bFromTp8ToTp4Pp2SplitsEachDecodeGpusHeadsOverTwoPrefillGpus) {
  const ModelSpec m = test::model_preset("llama-3.1-70b");
  EXPECT_EQ(kv_bytes_per_token_unified(m, DType::Bf16), 327680.0);
  std::vector<P> want;
  for (int s = 0; s < 2; ++s)
    for (int j = 0; j < 4; ++j) {
      want.push_back({2 * j, s * 4 + j, 40, 1, 0.5});
      want.push_back({2 * j + 1, s * 4 + j, 40, 1, 0.5});
    }
  expect_pieces(reshard_pieces(m, {8, 1}, {4, 2}), want);
  const std::vector<double> held(8, 2048 * 40960.0);
  HandoffSpec h;  // nixl-vllm: layer_block
  const ReshardLoad l = reshard_load(h, m, {8, 1}, {4, 2}, held, 2048, {16, 256, 2});
  double total = 0;
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(l.dst_descriptors[k], 2 * 128 * 40 * 2);
    EXPECT_DOUBLE_EQ(l.src_bytes[k], 83886080.0);
    total += l.src_bytes[k];
  }
  EXPECT_DOUBLE_EQ(total, 2048 * 327680.0);
  EXPECT_EQ(reshard_load(h, m, {4, 2}, {4, 2}, held, 2048, {16, 256, 2}).dst_descriptors[0],
            128 * 40 * 2);
  // mooncake-te (slice): a piece is 40 x 2 entries of 524,288 B = 8 slices of 64 KiB: 640; two
  // pieces 1,280 per decode GPU, as many as one 1 MiB entry per (layer, K/V) of the same layout
  // (80 x 16): slices follow the bytes, not the pieces.
  h.unit = HandoffUnit::Slice;
  EXPECT_EQ(reshard_load(h, m, {8, 1}, {4, 2}, held, 2048, {16, 256, 2}).dst_descriptors[3],
            2 * 80 * 8);
  EXPECT_EQ(reshard_load(h, m, {4, 2}, {4, 2}, held, 2048, {16, 256, 2}).dst_descriptors[3],
            80 * 16);
  // lmcache-pd (chunk): one object per 256-token chunk per source: 2 x 8 = 16.
  h.unit = HandoffUnit::Chunk;
  EXPECT_EQ(reshard_load(h, m, {8, 1}, {4, 2}, held, 2048, {16, 256, 2}).dst_descriptors[0], 16);
}

// DeepSeek-V3 (MLA, 61 layers; latent 512 + 64 values of 2 B = 1,152 B per token per layer),
// prefill TP 8 x PP 2 (stage 0: layers 0-30, stage 1: 31-60; every TP rank holds the whole latent
// of its stage's layers) to decode DP-16 with attention TP 1: the request lives on one DP rank,
// one GPU, which needs the whole latent of all 61 layers: 61 x 1,152 = 70,272 B per token. It
// reads layers 0-30 from prefill GPU 0 (stage 0, TP position 0 mod 8) and 31-60 from GPU 8 (stage
// 1, position 0): fractions 31/61 and 30/61. 2,048 tokens in blocks of 64 = 32 blocks: 73,138,176
// + 70,778,880 = 143,917,056 B; descriptors 32 x 31 + 32 x 30 = 1,952 (one region: MLA). The other
// 14 prefill GPUs send nothing.
TEST(Reshard, DeepSeekV3FromTp8Pp2ToDp16ReadsEachStagesLatentFromOneGpu) {
  const ModelSpec m = test::model_preset("deepseek-v3");
  EXPECT_EQ(kv_bytes_per_token_unified(m, DType::Bf16), 70272.0);
  expect_pieces(reshard_pieces(m, {8, 2}, {1, 1}),
                {{0, 0, 31, 1, 31.0 / 61}, {8, 0, 30, 1, 30.0 / 61}});
  const std::vector<double> held{2048 * 70272.0};
  HandoffSpec h;
  const ReshardLoad l = reshard_load(h, m, {8, 2}, {1, 1}, held, 2048, {64, 256, 1});
  ASSERT_EQ(l.dst_descriptors.size(), 1u);
  EXPECT_EQ(l.dst_descriptors[0], 32 * 31 + 32 * 30);
  ASSERT_EQ(l.src_bytes.size(), 16u);
  EXPECT_NEAR(l.src_bytes[0], 2048 * 31 * 1152.0, 1e-6);
  EXPECT_NEAR(l.src_bytes[8], 2048 * 30 * 1152.0, 1e-6);
  for (int k : {1, 2, 7, 9, 15}) EXPECT_EQ(l.src_bytes[k], 0.0);
  // mooncake-te: an entry per layer of 2,048 x 1,152 = 2,359,296 B = 36 slices: (31 + 30) x 36.
  h.unit = HandoffUnit::Slice;
  EXPECT_EQ(reshard_load(h, m, {8, 2}, {1, 1}, held, 2048, {64, 256, 1}).dst_descriptors[0],
            61 * 36);
}

// Replicas: where the source holds a head on several GPUs the reader takes replica (its TP
// position mod replicas). MLA from TP 4 to TP 8: decode GPU j reads the whole latent from prefill
// GPU j mod 4, so each prefill GPU sends its share twice. Qwen3-235B-A22B (4 KV heads) from TP 8
// (head h on GPUs 2h, 2h+1) to TP 4 (GPU j: head j): decode GPU j reads from 2j + (j mod 2).
TEST(Reshard, ReplicatedHeadsAreReadFromTheReplicaOfTheReadersPosition) {
  const ModelSpec ds = test::model_preset("deepseek-v3");
  std::vector<P> want;
  for (int j = 0; j < 8; ++j) want.push_back({j % 4, j, 61, 1, 1.0});
  expect_pieces(reshard_pieces(ds, {4, 1}, {8, 1}), want);
  const ReshardLoad l =
      reshard_load(HandoffSpec{}, ds, {4, 1}, {8, 1}, std::vector<double>(8, 1e6), 100, {});
  for (int k = 0; k < 4; ++k) EXPECT_EQ(l.src_bytes[k], 2e6);
  const ModelSpec qwen = test::model_preset("qwen3-235b-a22b");
  expect_pieces(reshard_pieces(qwen, {8, 1}, {4, 1}),
                {{0, 0, 94, 1, 1.0}, {3, 1, 94, 1, 1.0}, {4, 2, 94, 1, 1.0}, {7, 3, 94, 1, 1.0}});
  // The other way (TP 4 to TP 8): decode GPUs 2h and 2h+1 both read head h from GPU h.
  expect_pieces(reshard_pieces(qwen, {4, 1}, {8, 1}), {{0, 0, 94, 1, 1.0},
                                                       {0, 1, 94, 1, 1.0},
                                                       {1, 2, 94, 1, 1.0},
                                                       {1, 3, 94, 1, 1.0},
                                                       {2, 4, 94, 1, 1.0},
                                                       {2, 5, 94, 1, 1.0},
                                                       {3, 6, 94, 1, 1.0},
                                                       {3, 7, 94, 1, 1.0}});
}

// Stage boundaries that differ: Llama-3.1-70B from PP 2 (40 + 40) to PP 4 (20 each) at TP 8 —
// each decode stage inside one prefill stage; and from PP 4 to PP 2 — each decode GPU reads two
// pieces of 20 layers (half its bytes each) from the two prefill stages holding them.
TEST(Reshard, DifferentStageBoundariesMapLayersToDifferentSources) {
  const ModelSpec m = test::model_preset("llama-3.1-70b");
  const std::vector<ReshardPiece> a = reshard_pieces(m, {8, 2}, {8, 4});
  ASSERT_EQ(a.size(), 32u);
  EXPECT_EQ(a[8].dst, 8);  // decode stage 1 (layers 20-39), TP 0: prefill stage 0, TP 0
  EXPECT_EQ(a[8].src, 0);
  EXPECT_EQ(a[16].src, 8);  // decode stage 2 (layers 40-59): prefill stage 1
  EXPECT_EQ(a[16].layers, 20);
  EXPECT_DOUBLE_EQ(a[16].fraction, 1.0);
  const std::vector<ReshardPiece> b = reshard_pieces(m, {8, 4}, {8, 2});
  expect_pieces({b[0], b[1]}, {{0, 0, 20, 1, 0.5}, {8, 0, 20, 1, 0.5}});
  const ReshardLoad l = reshard_load(HandoffSpec{}, m, {8, 4}, {8, 2}, std::vector<double>(16, 1.0),
                                     2048, {16, 256, 2});
  EXPECT_EQ(l.dst_descriptors[0], 2 * 128 * 20 * 2);  // as many as 40 layers from one source
}

// A layout that cannot split the KV: TP 3 over 8 KV heads, PP above the layers.
TEST(Reshard, ALayoutThatCannotSplitTheKvIsRefused) {
  const ModelSpec m = test::model_preset("llama-3.1-70b");
  EXPECT_THROW(reshard_pieces(m, {8, 1}, {3, 1}), std::invalid_argument);
  EXPECT_THROW(reshard_pieces(m, {8, 81}, {8, 1}), std::invalid_argument);
  EXPECT_NO_THROW(reshard_pieces(m, {16, 1}, {2, 1}));  // 16 = 2 replicas of each head
}

// A hybrid cache's layers hold unequal bytes, so a piece's share of its destination stage is by
// bytes. Llama-3.1-70B's geometry with made-up weights: layers 0-39 weigh 1, 40-79 weigh 3; the
// prefill TP 8 x PP 2 (stages of 40 layers) to decode TP 8: each decode GPU takes 40 / 160 = 0.25
// of its bytes from stage 0 and 120 / 160 = 0.75 from stage 1 (0.5 each by layer count).
TEST(Reshard, AHybridCachesPiecesAreSharedByTheirLayersBytes) {
  const ModelSpec llama = test::model_preset("llama-3.1-70b");
  std::vector<double> w(80, 1.0);
  for (std::size_t l = 40; l < 80; ++l) w[l] = 3.0;
  std::vector<P> want;
  for (int k = 0; k < 8; ++k) {
    want.push_back({k, k, 40, 1, 0.25});
    want.push_back({8 + k, k, 40, 1, 0.75});
  }
  expect_pieces(reshard_pieces(llama, {8, 2}, {8, 1}, &w), want);
  // gpt-oss-120b at TP 4 (2 KV heads of 64 per GPU: 512 B per token and layer), 2,048 tokens:
  // a full layer holds 2,048 x 512 = 1,048,576 B, a sliding one (W = 128) 128 x 512 = 65,536 B;
  // its pattern starts S, F.
  const ModelSpec oss = test::model_preset("gpt-oss-120b");
  const std::vector<double> b =
      hybrid_layer_bytes(oss, hybrid_kv_per_gpu(oss, DType::Bf16, 4), 2048);
  ASSERT_EQ(b.size(), 36u);
  EXPECT_DOUBLE_EQ(b[0], 65536.0);
  EXPECT_DOUBLE_EQ(b[1], 1048576.0);
  double sum = 0;
  for (double x : b) sum += x;
  EXPECT_DOUBLE_EQ(sum, (2048.0 + 128) * 9216);  // HybridKv::bytes(0, 2048, 2048)
}

}  // namespace kappasim
