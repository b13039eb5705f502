// The cluster config (serving/cluster_spec) and the κ-aware router's estimator against hand
// numbers: reading node lists with presets, errors with file:line:col, the per-GPU load rate of a
// TP group from the preset literals (PCIe link vs shared C2C and Grace DRAM), the load part of the
// service estimate, and the backlog's step arithmetic. batch_step_time() is the one model call
// (the compute of a step is defined as that function).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "serving/cluster_spec.hpp"
#include "serving/handoff.hpp"

namespace kappasim {
namespace cluster_spec_test {
namespace {

ClusterRunSpec parse(const std::string& yaml) {
  return read_config<ClusterRunSpec>(parse_yaml(yaml, "c.yaml"), "");
}

std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kPool =
    "cluster:\n"
    "  router: kappa_aware\n"
    "  nodes:\n"
    "    - {name: pcie, count: 2, system: b200, serving: {tp: 8, compute_dtype: fp8}}\n"
    "    - {name: c2c, system: gb200, serving: {tp: 2, compute_dtype: fp8}}\n"
    "model: qwen3-235b-a22b\n"
    "workload: {type: narrativeqa, requests: 10}\n";

// ---- hand numbers ----------------------------------------------------------------------------
// One PCIe 5.0 x16 direction on the wire (pcie5 preset: 32 GT/s, 128b/130b, one 16 B SKP per
// 370 blocks), and the wire cost of a 64 B SM read (128 B completions, 20 B framing, ACK DLLPs):
// the copy kernel's rate on a GPU's own link (see tests/sim/serving_engine_test.cpp).
const double kWire = 32e9 * 16 / 8 * 128.0 / 130.0 * (370.0 * 16) / (370.0 * 16 + 16);
const double kSmReadCost = 1 + 20.0 / 64 + 2.0 / 64;
// links: the copy kernel's reads are also bounded by Little's law on its loads in flight. The
// default stack's kernel (lmcache-0.3.5 copy_kernel: one-warp blocks of 8 B loads, 32 resident
// per SM) keeps 148 B200 SMs × 32 warps × 32 threads × 8 B = 1.21 MB in flight, 1,212 GB/s per
// 1 µs round trip; the read tags allow 768 × 64 B / 1 µs = 49.15 GB/s; the link's SmRead wire
// rate kWire / kSmReadCost = 46.77 GB/s is the lowest: the kernel path is link-bound.
const double kSmLoadRate = kWire / kSmReadCost;
constexpr double kSmTags = 768 * 64 / 1e-6;
// Qwen3-235B-A22B: 94 layers, 4 KV heads of 128, BF16 KV. TP 8 replicates the 4 heads to one
// per GPU; TP 2 holds 2 per GPU.
constexpr double kBkvTp8 = 2.0 * 94 * 1 * 128 * 2;  // 48,128 B
constexpr double kBkvTp2 = 2.0 * 94 * 2 * 128 * 2;  // 96,256 B
// presets/host-memory/gb200-grace.yaml: 512 GB/s LPDDR5X per socket × dram_efficiency 0.8,
// shared by the superchip's 2 GPUs; each GPU has its own C2C share of 225 GB/s per direction.
constexpr double kGraceDramPerGpu = 512e9 * 0.8 / 2;  // 204.8 GB/s < 225 GB/s

TEST(ClusterSpec, ReadsNodeGroupsWithPresetsAndDefaults) {
  const ClusterRunSpec s = parse(kPool);
  EXPECT_EQ(s.cluster.router, RouterKind::KappaAware);
  ASSERT_EQ(s.nodes.size(), 2u);
  EXPECT_EQ(s.nodes[0].name, "pcie");
  EXPECT_EQ(s.nodes[0].count, 2);
  EXPECT_EQ(s.nodes[0].system.gpus, 8);
  EXPECT_EQ(s.nodes[0].serving.tp, 8);
  EXPECT_EQ(s.nodes[1].count, 1);                              // default
  EXPECT_EQ(s.nodes[1].system.gpus_sharing_host_link, 1);      // gb200: one C2C share per GPU
  EXPECT_EQ(s.nodes[1].serving.max_num_batched_tokens, 4096);  // ServingSpec default
  EXPECT_EQ(s.node_count(), 3);
  const RunSpec r = s.node_run_spec(1);
  EXPECT_EQ(r.serving.tp, 2);
  EXPECT_FALSE(r.trace);
  EXPECT_EQ(r.model.num_layers, 94);
  // Default router.
  std::string no_router = kPool;
  no_router.replace(no_router.find("  router: kappa_aware\n"), 22, "");
  EXPECT_EQ(parse(no_router).cluster.router, RouterKind::RoundRobin);
}

TEST(ClusterSpec, EffectiveConfigRoundTrips) {
  const ClusterRunSpec s = parse(kPool);
  const std::string text = emit_yaml(write_cluster_config(s), false);
  const ClusterRunSpec t = parse(text);
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodes[1].name, "c2c");
  EXPECT_EQ(t.nodes[0].count, 2);
  EXPECT_EQ(t.nodes[1].serving.compute_dtype, "fp8");
  EXPECT_EQ(t.cluster.router, RouterKind::KappaAware);
  EXPECT_EQ(emit_yaml(write_cluster_config(t), false), text);
}

TEST(ClusterSpec, BadInputsNamePositionAndExpectation) {
  std::string e =
      error_of(std::string(kPool).replace(std::string(kPool).find("router:"), 7, "routr:"));
  EXPECT_NE(e.find("c.yaml:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("router"), std::string::npos) << e;  // the nearest valid key

  e = error_of(
      std::string(kPool).replace(std::string(kPool).find("kappa_aware"), 11, "kapa_aware"));
  EXPECT_NE(e.find("c.yaml:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean \"kappa_aware\""), std::string::npos) << e;

  // tp larger than the node's system: the list item's position and the key.
  e = error_of(std::string(kPool).replace(std::string(kPool).find("tp: 2"), 5, "tp: 4"));
  EXPECT_NE(e.find("c.yaml:5:"), std::string::npos) << e;
  EXPECT_NE(e.find("cluster.nodes.1.serving.tp"), std::string::npos) << e;

  // Unknown key inside a node group.
  e = error_of(std::string(kPool).replace(std::string(kPool).find("count: 2"), 8, "cont: 2"));
  EXPECT_NE(e.find("c.yaml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("count"), std::string::npos) << e;

  // Duplicate and malformed names, missing and empty lists, wrong shapes.
  e = error_of(std::string(kPool).replace(std::string(kPool).find("name: c2c"), 9, "name: pcie"));
  EXPECT_NE(e.find("used twice"), std::string::npos) << e;
  EXPECT_NE(e.find("c.yaml:4:"), std::string::npos) << e;
  e = error_of(std::string(kPool).replace(std::string(kPool).find("name: c2c"), 9, "name: c.2"));
  EXPECT_NE(e.find("[A-Za-z0-9_]"), std::string::npos) << e;
  EXPECT_NE(error_of("cluster: {router: round_robin}\nmodel: llama-3.1-8b\nworkload: {}\n")
                .find("missing required key 'nodes'"),
            std::string::npos);
  EXPECT_NE(
      error_of("cluster: {nodes: []}\nmodel: llama-3.1-8b\nworkload: {}\n").find("non-empty list"),
      std::string::npos);
  EXPECT_NE(error_of("cluster: {nodes: [h100]}\nmodel: llama-3.1-8b\nworkload: {}\n")
                .find("cluster.nodes.0: expected a map"),
            std::string::npos);
  EXPECT_NE(error_of("model: llama-3.1-8b\nworkload: {}\n").find("missing required key 'cluster'"),
            std::string::npos);
  EXPECT_NE(error_of("cluster: {nodes: [{name: a, system: h100}]}\nworkload: {}\n")
                .find("missing required key 'model'"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kPool) + "trace: false\n").find("trace"), std::string::npos);
  EXPECT_TRUE(is_cluster_config(parse_yaml(kPool, "c.yaml")));
  EXPECT_FALSE(is_cluster_config(parse_yaml("model: x\n", "c.yaml")));
}

// P/D disaggregation (docs/disaggregation.md): roles, and what a P/D cluster needs.
const char* kPd =
    "cluster:\n"
    "  nodes:\n"
    "    - {name: p, role: prefill, system: dgx-h100, serving: {tp: 8}}\n"
    "    - {name: d, role: decode, system: dgx-h100, serving: {tp: 8}}\n"
    "model: llama-3.1-70b\n"
    "workload: {type: sharegpt, requests: 10}\n";

// Issue 20 part 5 in a cluster: each node group's capacities are checked against its own
// hardware, as a single-node run's are. presets/systems/h100.yaml: a DGX H100 host with 2 TB of
// DDR5; the lmcache-0.3.5 stack keeps a quarter for the OS (host_reserve_fraction 0.25), so a
// DRAM tier holds at most 2 TB x 0.75 = 1.5 TB.
TEST(ClusterSpec, ANodeGroupsTierLargerThanItsHostsDramIsRefused) {
  const auto with_tier = [](const std::string& cap) {
    return "cluster:\n"
           "  nodes:\n"
           "    - {name: a, system: h100, serving: {tp: 1, tier_capacity: " +
           cap +
           "}}\n"
           "model: llama-3.1-8b\n"
           "workload: {type: sharegpt, requests: 10}\n";
  };
  EXPECT_EQ(error_of(with_tier("1.5 TB")), "(no error)");
  const std::string e = error_of(with_tier("1.6 TB"));
  EXPECT_NE(e.find("cluster.nodes.0.serving.tier_capacity"), std::string::npos) << e;
  EXPECT_NE(e.find("1.5 TB"), std::string::npos) << e;
  EXPECT_NE(error_of(with_tier("1 PB")).find("exceeds what system 'h100' can hold"),
            std::string::npos);
}

TEST(ClusterSpec, PdRolesSetWhoDecodesAndTheHandoffDefaultsAreNixls) {
  const ClusterRunSpec s = parse(kPd);
  EXPECT_TRUE(s.disaggregated());
  EXPECT_FALSE(parse(kPool).disaggregated());
  EXPECT_FALSE(s.node_run_spec(0).serving.decode);  // the prefill node: the first token only
  EXPECT_TRUE(s.node_run_spec(1).serving.decode);
  EXPECT_DOUBLE_EQ(s.cluster.handoff.post_per_descriptor_s, 6.7e-3 / 1785);  // vLLM #50913
  EXPECT_DOUBLE_EQ(s.cluster.handoff.fixed_s, 0.40e-3);
}

TEST(ClusterSpec, ALayerWisePushRefusesWhatItDoesNotModel) {
  const std::string push = "cluster:\n  handoff: p2p-nccl\n";
  std::string y = kPd;
  y.replace(y.find("cluster:\n"), 9, push);
  const ClusterRunSpec s = parse(y);
  EXPECT_EQ(s.cluster.handoff.send, HandoffSend::PushLayer);
  EXPECT_DOUBLE_EQ(s.cluster.handoff.fixed_s, 0.05e-3);
  EXPECT_DOUBLE_EQ(s.cluster.handoff.post_per_descriptor_s, 0);
  // Pools of different KV layouts: the re-shard of a push is not modelled.
  const std::string d8 = "role: decode, system: dgx-h100, serving: {tp: 8}";
  std::string lay = y;
  lay.replace(lay.find(d8), d8.size(), "role: decode, system: dgx-h100, serving: {tp: 4}");
  EXPECT_NE(error_of(lay).find("cluster.handoff.send: push_layer needs one KV layout"),
            std::string::npos)
      << error_of(lay);
  EXPECT_NE(error_of(lay).find("cluster.nodes.1.serving"), std::string::npos) << error_of(lay);
  // A decode group of several DP-attention ranks (on both pools: one layout; FP8 weights, since
  // Llama-3.1-70B's 70.6 GB of BF16 weights a GPU at TP 2 do not fit an H100's 72 GB budget).
  const std::string p8 = "role: prefill, system: dgx-h100, serving: {tp: 8}";
  const std::string dp = "serving: {tp: 2, compute_dtype: fp8, parallelism: {dp_attention: 4}}";
  std::string dps = y;
  dps.replace(dps.find(d8), d8.size(), "role: decode, system: dgx-h100, " + dp);
  dps.replace(dps.find(p8), p8.size(), "role: prefill, system: dgx-h100, " + dp);
  EXPECT_NE(error_of(dps).find("cluster.handoff.send: push_layer: decode group d "
                               "(cluster.nodes.1.serving.parallelism.dp_attention 4)"),
            std::string::npos)
      << error_of(dps);
  // A hybrid KV cache (gpt-oss-120b's sliding layers).
  std::string hyb = y;
  hyb.replace(hyb.find("llama-3.1-70b"), 13, "gpt-oss-120b");
  hyb.replace(hyb.find(d8), d8.size(),
              "role: decode, system: dgx-h100, serving: {tp: 8, kv_cache: hybrid}");
  hyb.replace(hyb.find(p8), p8.size(),
              "role: prefill, system: dgx-h100, serving: {tp: 8, kv_cache: hybrid}");
  EXPECT_NE(error_of(hyb).find("cluster.handoff.send: push_layer: group p "
                               "(cluster.nodes.0.serving.kv_cache: hybrid)"),
            std::string::npos)
      << error_of(hyb);
}

TEST(ClusterSpec, PdBadInputsNameTheKey) {
  std::string y = kPd;
  // Only prefill nodes.
  std::string only = y;
  only.replace(only.find("role: decode"), 12, "role: prefill");
  EXPECT_NE(error_of(only).find("cluster.nodes: a P/D cluster needs a group with role prefill "
                                "and one with role decode"),
            std::string::npos)
      << error_of(only);
  // A mixed group beside P/D pools.
  std::string mixed = y;
  mixed.replace(mixed.find("role: decode"), 12, "role: mixed");
  EXPECT_NE(error_of(mixed).find("cluster.nodes.1.role"), std::string::npos) << error_of(mixed);
  // A decode node without a NIC (the h100 preset gives none).
  std::string nic = y;
  nic.replace(nic.find("role: decode, system: dgx-h100"), 30, "role: decode, system: h100");
  EXPECT_NE(error_of(nic).find("cluster.nodes.1.system.nic_bandwidth"), std::string::npos)
      << error_of(nic);
  // A prefill node without a NIC: the hand-off leaves through it.
  std::string pnic = y;
  pnic.replace(pnic.find("role: prefill, system: dgx-h100"), 31, "role: prefill, system: h100");
  EXPECT_NE(error_of(pnic).find("cluster.nodes.0.system.nic_bandwidth"), std::string::npos)
      << error_of(pnic);
  // A layout beyond TP on one pool only: the hand-off re-shards the KV (serving/handoff.hpp
  // reshard_pieces), so pools of different layouts are accepted, as are identical ones.
  const std::string d8 = "role: decode, system: dgx-h100, serving: {tp: 8}";
  const std::string p8 = "role: prefill, system: dgx-h100, serving: {tp: 8}";
  const std::string pp2 = "parallelism: {pp: 2, nodes: 2}";
  std::string lay = y;
  lay.replace(lay.find(d8), d8.size(),
              "role: decode, system: dgx-h100, serving: {tp: 8, " + pp2 + "}");
  EXPECT_EQ(error_of(lay), "(no error)");
  std::string both = lay;
  both.replace(both.find(p8), p8.size(),
               "role: prefill, system: dgx-h100, serving: {tp: 8, " + pp2 + "}");
  EXPECT_EQ(error_of(both), "(no error)");
  // What no re-shard can mean: a decode TP that splits Llama-3.1-70B's 8 KV heads into partial
  // heads (6), and pools caching the KV in different dtypes (the hand-off copies bytes).
  std::string tp6 = y;
  tp6.replace(tp6.find(d8), d8.size(), "role: decode, system: dgx-h100, serving: {tp: 6}");
  EXPECT_NE(error_of(tp6).find("cluster.nodes.1.serving.tp: 6 must divide the 8 KV heads"),
            std::string::npos)
      << error_of(tp6);
  std::string dt = y;
  dt.replace(dt.find(d8), d8.size(),
             "role: decode, system: dgx-h100, serving: {tp: 8, kv_dtype: fp8}");
  EXPECT_NE(error_of(dt).find("cluster.nodes.1.serving.kv_dtype: fp8"), std::string::npos)
      << error_of(dt);
  // An unknown role names the choices.
  std::string bad = y;
  bad.replace(bad.find("role: decode"), 12, "role: decoder");
  EXPECT_NE(error_of(bad).find("role"), std::string::npos) << error_of(bad);
  EXPECT_NE(error_of(bad).find("decode"), std::string::npos) << error_of(bad);
}

// A decode node's own KV tier (docs/disaggregation.md, "A decode node's KV tier"): a decode
// group may use its tier; what cannot mean anything or is not modelled exits 2 naming
// cluster.nodes.N.decode_tier. Left out of the effective config unless set.
TEST(ClusterSpec, ADecodeTierIsADecodeGroupsAndRefusesWhatItDoesNotModel) {
  const std::string d8 = "role: decode, system: dgx-h100, serving: {tp: 8}";
  const auto with = [&](const std::string& decode, const std::string& head = "cluster:\n") {
    std::string y = kPd;
    y.replace(y.find(d8), d8.size(), decode);
    y.replace(y.find("cluster:\n"), 9, head);
    return y;
  };
  const ClusterRunSpec s = parse(with(d8 + ", decode_tier: true"));
  EXPECT_FALSE(s.nodes[0].decode_tier);
  EXPECT_TRUE(s.nodes[1].decode_tier);
  EXPECT_TRUE(s.any_decode_tier());
  EXPECT_FALSE(parse(kPd).any_decode_tier());
  EXPECT_EQ(error_of(with(d8 + ", decode_tier: true")), "(no error)");
  // Written only when set.
  EXPECT_EQ(emit_yaml(write_cluster_config(parse(kPd))).find("decode_tier"), std::string::npos);
  EXPECT_NE(emit_yaml(write_cluster_config(s)).find("decode_tier: true"), std::string::npos);
  // On a prefill group.
  std::string pre = kPd;
  const std::string p8 = "role: prefill, system: dgx-h100, serving: {tp: 8}";
  pre.replace(pre.find(p8), p8.size(), p8 + ", decode_tier: true");
  EXPECT_NE(error_of(pre).find("cluster.nodes.0.decode_tier: group p has role prefill; only a "
                               "P/D decode group"),
            std::string::npos)
      << error_of(pre);
  // On a group sharing a host with a prefill group (its DRAM and PCIe would count twice).
  std::string host = with(
      "role: decode, host: dgx, system: dgx-h100, serving: {tp: 4}, "
      "decode_tier: true");
  host.replace(host.find(p8), p8.size(),
               "role: prefill, host: dgx, system: dgx-h100, "
               "serving: {tp: 4}");
  EXPECT_NE(error_of(host).find("cluster.nodes.1.decode_tier: group d shares host 'dgx'"),
            std::string::npos)
      << error_of(host);
  // A hybrid KV cache (its decode chunks carry no window or state).
  std::string hy = kPd;
  hy.replace(hy.find("llama-3.1-70b"), 13, "gpt-oss-120b");
  hy.replace(hy.find(p8), p8.size(),
             "role: prefill, system: dgx-h100, serving: {tp: 8, kv_cache: hybrid}");
  hy.replace(hy.find(d8), d8.size(),
             "role: decode, system: dgx-h100, serving: {tp: 8, kv_cache: hybrid}, "
             "decode_tier: true");
  EXPECT_NE(error_of(hy).find("cluster.nodes.1.decode_tier: group d keeps a hybrid KV cache"),
            std::string::npos)
      << error_of(hy);
  // An async-loading stack beside push_layer's receive; an in-step stack is accepted.
  const std::string push = "cluster:\n  handoff: p2p-nccl\n";
  EXPECT_EQ(error_of(with(d8 + ", decode_tier: true", push)), "(no error)");
  const std::string native =
      "role: decode, system: dgx-h100, serving: {tp: 8, stack: "
      "vllm-native-0.12, load_path: block_dma}, decode_tier: true";
  EXPECT_EQ(error_of(with(native)), "(no error)");
  EXPECT_NE(error_of(with(native, push))
                .find("cluster.nodes.1.decode_tier: group d's stack "
                      "'vllm-native-0.12' loads asynchronously"),
            std::string::npos)
      << error_of(with(native, push));
  // Not a boolean.
  EXPECT_NE(error_of(with(d8 + ", decode_tier: maybe")).find("decode_tier"), std::string::npos);
}

// Which decode tiers store the pulled prompt: every tier connector beside another connector's
// hand-off (vLLM's OffloadingConnector, LMCacheConnectorV1 kv_both), not LMCache's own P/D
// receiver (its retrieve counts the prompt as saved).
TEST(ClusterSpec, ADecodeTierStoresThePulledPromptUnlessLmcacheHandedItOff) {
  HandoffSpec nixl, chunk;
  chunk.unit = HandoffUnit::Chunk;
  StackProfile lm, native;
  lm.family = StackFamily::Lmcache;
  native.family = StackFamily::VllmNative;
  EXPECT_TRUE(decode_tier_stores_prompt(nixl, lm));
  EXPECT_TRUE(decode_tier_stores_prompt(nixl, native));
  EXPECT_FALSE(decode_tier_stores_prompt(chunk, lm));
  EXPECT_TRUE(decode_tier_stores_prompt(chunk, native));
}

// P/D on one node (docs/disaggregation.md, "Prefill and decode on one node"): a prefill and a
// decode group naming one host share its nodes; what cannot be a host, or would count a shared
// resource twice, exits 2 naming the key.
TEST(ClusterSpec, PdOnOneHostValidatesItsGpusAndItsLink) {
  const auto on_host = [](const std::string& p, const std::string& d,
                          const std::string& system = "dgx-h100") {
    return "cluster:\n  nodes:\n"
           "    - {name: p, role: prefill, host: dgx, system: " +
           system + ", serving: {" + p +
           "}}\n"
           "    - {name: d, role: decode, host: dgx, system: " +
           system + ", serving: {" + d +
           "}}\n"
           "model: llama-3.1-70b\nworkload: {type: sharegpt, requests: 10}\n";
  };
  // 4 + 4 of a DGX H100's 8 GPUs: accepted, every hand-off within the node.
  const ClusterRunSpec s = parse(on_host("tp: 4", "tp: 4"));
  EXPECT_EQ(s.nodes[0].host, "dgx");
  EXPECT_EQ(s.node_host(1, 0), "dgx_0");
  EXPECT_TRUE(s.handoff_within_node());
  EXPECT_FALSE(s.handoff_crosses_nodes());
  // The effective config keeps the key where given, and writes none where not (kPd).
  EXPECT_EQ(parse(emit_yaml(write_cluster_config(s))).nodes[1].host, "dgx");
  EXPECT_EQ(write_cluster_config(parse(kPd)).find("cluster")->find("nodes")->items[0].find("host"),
            nullptr);
  // 4 + 8 GPUs exceed the host's 8.
  std::string e = error_of(on_host("tp: 4", "tp: 8"));
  EXPECT_NE(e.find("cluster.nodes.1.host: the GPUs of the groups on host 'dgx' (p 4 + d 8 = 12) "
                   "exceed the 8 GPUs of system 'dgx-h100'"),
            std::string::npos)
      << e;
  // A layout counts its tp x dp x pp GPUs: TP 4 x PP 2 beside TP 4 is 12.
  e = error_of(on_host("tp: 4", "tp: 4, parallelism: {pp: 2}"));
  EXPECT_NE(e.find("cluster.nodes.1.host"), std::string::npos) << e;
  // A hand-off over a link the system lacks: the L40S has no NVLink.
  e = error_of(on_host("tp: 1", "tp: 1", "l40s"));
  EXPECT_NE(e.find("cluster.nodes.0.host: the KV hand-off between the prefill and decode groups "
                   "on host 'dgx' travels over NVLink, which GPU"),
            std::string::npos)
      << e;
  // One host holds one prefill group (its DRAM, CPU tier and PCIe are each prefill engine's).
  std::string two = on_host("tp: 2", "tp: 2");
  two.replace(two.find("model:"), 0,
              "    - {name: p2, role: prefill, host: dgx, system: dgx-h100, serving: {tp: 2}}\n");
  e = error_of(two);
  EXPECT_NE(e.find("cluster.nodes.2.host: at most one prefill group per host"), std::string::npos)
      << e;
  // The groups on a host share its nodes: equal counts, one system.
  std::string cnt = on_host("tp: 4", "tp: 4");
  cnt.replace(cnt.find("role: decode, host: dgx"), 23, "role: decode, count: 2, host: dgx");
  e = error_of(cnt);
  EXPECT_NE(e.find("cluster.nodes.1.count"), std::string::npos) << e;
  std::string sys = on_host("tp: 4", "tp: 4");
  sys.replace(sys.find("role: decode, host: dgx, system: dgx-h100"), 41,
              "role: decode, host: dgx, system: h100");
  e = error_of(sys);
  EXPECT_NE(e.find("cluster.nodes.1.system: the groups on host 'dgx' share one system"),
            std::string::npos)
      << e;
  // The hand-off on one host is a GPU-to-GPU transfer, which the packet back end does not carry.
  e = error_of(on_host("tp: 4, link_fidelity: packet", "tp: 4"));
  EXPECT_NE(e.find("cluster.nodes.0.serving.link_fidelity: a hand-off within host 'dgx'"),
            std::string::npos)
      << e;
  // Mixed groups do not share hosts; a host name is a name.
  std::string mixed = on_host("tp: 4", "tp: 4");
  mixed.replace(mixed.find("role: prefill"), 13, "role: mixed");
  mixed.replace(mixed.find("role: decode"), 12, "role: mixed");
  e = error_of(mixed);
  EXPECT_NE(e.find("cluster.nodes.0.host: sharing host 'dgx'"), std::string::npos) << e;
  std::string name = on_host("tp: 4", "tp: 4");
  name.replace(name.find("host: dgx"), 9, "host: d.x");
  e = error_of(name);
  EXPECT_NE(e.find("cluster.nodes.0.host: expected 1-64 characters"), std::string::npos) << e;
  // Within the node only, neither group needs a NIC (the h100 preset gives none)...
  EXPECT_EQ(error_of(on_host("tp: 4", "tp: 4", "h100")), "(no error)");
  // ...but with two nodes per group, node 0's prefill may hand off to node 1's decode: the NIC.
  std::string two_nodes = on_host("tp: 4", "tp: 4", "h100");
  two_nodes.replace(two_nodes.find("role: prefill, host: dgx"), 24,
                    "role: prefill, count: 2, host: dgx");
  two_nodes.replace(two_nodes.find("role: decode, host: dgx"), 23,
                    "role: decode, count: 2, host: dgx");
  e = error_of(two_nodes);
  EXPECT_NE(e.find("system.nic_bandwidth"), std::string::npos) << e;
}

// Descriptors one decode GPU posts: blocks x its layers x K/V regions, by hand.
TEST(Handoff, DescriptorsAreBlocksTimesLayersTimesRegions) {
  const ClusterRunSpec s = parse(kPd);
  // Llama-3.1-70B: 80 layers, GQA (K and V apart). 1,000 tokens = 63 blocks of 16.
  EXPECT_EQ(handoff_descriptors(s.model, 1000, 16), 63 * 80 * 2);
  EXPECT_EQ(handoff_descriptors(s.model, 1000, 16, 2), 63 * 40 * 2);  // a PP stage's 40 layers
  EXPECT_EQ(handoff_descriptors(s.model, 1024, 64), 16 * 80 * 2);
  EXPECT_EQ(handoff_descriptors(s.model, 0, 16), 0);
  // DeepSeek-V3: 61 MLA layers, one latent per token: one region.
  const ClusterRunSpec ds =
      parse(std::string(kPd).replace(std::string(kPd).find("llama-3.1-70b"), 13, "deepseek-v3"));
  EXPECT_EQ(handoff_descriptors(ds.model, 1000, 16), 63 * 61);
  // Posting rate: 1 GB over 10,080 descriptors at 3.75 us = 37.8 ms -> 26.46 GB/s.
  HandoffSpec h;
  h.post_per_descriptor_s = 3.75e-6;
  EXPECT_NEAR(handoff_post_rate_cap(1e9, 10080, h), 1e9 / 37.8e-3, 1);
  h.post_per_descriptor_s = 0;
  EXPECT_EQ(handoff_post_rate_cap(1e9, 10080, h), 0);  // no cap
}

// The transfer-engine profiles (presets/transfer-engines/): each resolves by name; the default
// (no cluster.handoff, or a map without `preset:`) is the struct's figures, nixl-vllm's.
TEST(Handoff, ProfilesResolveByNameAndTheDefaultIsNixlsFigures) {
  const HandoffSpec plain;
  EXPECT_EQ(parse(kPd).cluster.handoff.name, "nixl-vllm");
  auto with = [](const std::string& h) {
    std::string y = kPd;
    return parse(y.replace(y.find("  nodes:"), 0, "  handoff: " + h + "\n"));
  };
  const HandoffSpec nixl = with("nixl-vllm").cluster.handoff;
  EXPECT_EQ(nixl.name, plain.name);
  EXPECT_EQ(nixl.unit, HandoffUnit::LayerBlock);
  EXPECT_EQ(plain.unit, HandoffUnit::LayerBlock);
  EXPECT_NEAR(nixl.fixed_s, plain.fixed_s, 1e-12 * plain.fixed_s);
  EXPECT_NEAR(nixl.post_per_descriptor_s, plain.post_per_descriptor_s,
              1e-5 * plain.post_per_descriptor_s);  // 3.7535 us against 6.7 ms / 1,785
  const HandoffSpec mc = with("mooncake-te").cluster.handoff;
  EXPECT_EQ(mc.unit, HandoffUnit::Slice);
  EXPECT_EQ(mc.slice_bytes, 65536);
  EXPECT_NEAR(mc.fixed_s, 0.295e-3, 1e-12);
  EXPECT_NEAR(mc.post_per_descriptor_s, 3.40e-6, 1e-15);
  EXPECT_EQ(with("lmcache-pd").cluster.handoff.unit, HandoffUnit::Chunk);
  // A preset with an override; a plain map keeps the default profile's figures.
  const HandoffSpec o = with("{preset: mooncake-te, post_per_descriptor: 0 s}").cluster.handoff;
  EXPECT_EQ(o.unit, HandoffUnit::Slice);
  EXPECT_EQ(o.post_per_descriptor_s, 0);
  const HandoffSpec m = with("{post_per_descriptor: 0 s}").cluster.handoff;
  EXPECT_EQ(m.unit, HandoffUnit::LayerBlock);
  EXPECT_EQ(m.fixed_s, plain.fixed_s);
  // An unknown profile names the key and the nearest profile (exit 2 through InputError).
  std::string y = kPd;
  const std::string e = error_of(y.replace(y.find("  nodes:"), 0, "  handoff: moncake-te\n"));
  EXPECT_NE(e.find("cluster.handoff"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'mooncake-te'"), std::string::npos) << e;
  y = kPd;
  const std::string u = error_of(y.replace(y.find("  nodes:"), 0, "  handoff: {unit: page}\n"));
  EXPECT_NE(u.find("unit"), std::string::npos) << u;
}

// Descriptors per GPU under each unit, by hand. Llama-3.1-70B at TP 8: 80 layers x 2 (K, V),
// 40,960 B per token per GPU (80 x 2 x 1 KV head x 128 x 2 B), 256 B per layer and region.
TEST(Handoff, DescriptorsFollowTheProfilesUnit) {
  const ClusterRunSpec s = parse(kPd);
  HandoffSpec h;
  const HandoffGeometry g{16, 256, 1};
  // layer_block: 2,048 tokens = 128 blocks x 80 layers x 2 = 20,480, as NixlConnector posts.
  EXPECT_EQ(handoff_descriptors(h, s.model, 2048, 2048 * 40960.0, g), 128 * 80 * 2);
  // slice: 160 entries of 2,048 x 256 B = 512 KiB, 8 slices of 64 KiB each = 1,280.
  h.unit = HandoffUnit::Slice;
  EXPECT_EQ(handoff_descriptors(h, s.model, 2048, 2048 * 40960.0, g), 160 * 8);
  // A short prompt's entry below one slice is one work request: 100 tokens = 25.6 KB -> 160.
  EXPECT_EQ(handoff_descriptors(h, s.model, 100, 100 * 40960.0, g), 160);
  // Two PP stages: 40 layers each, the stage's half of the bytes: 80 entries of 512 KiB.
  EXPECT_EQ(handoff_descriptors(h, s.model, 2048, 2048 * 20480.0, {16, 256, 2}), 80 * 8);
  // chunk: one LMCache memory object per 256 tokens, every layer in it: ceil(2,049 / 256) = 9.
  h.unit = HandoffUnit::Chunk;
  EXPECT_EQ(handoff_descriptors(h, s.model, 2049, 2049 * 40960.0, g), 9);
  EXPECT_EQ(handoff_descriptors(h, s.model, 0, 0, g), 0);
}

// The mooncake-te profile against the measurement it was fitted to (Mooncake docs, "vLLM PD
// Disaggregation Performance": Qwen3-8B, TP 8, H800 + ConnectX-7 RoCE at 25 GB/s per GPU). Qwen3-8B
// has Llama-3.1-8B's layer geometry (8 KV heads of 128) with 36 layers: 256 B per token per layer
// and region per GPU. Posting binds (64 KiB / 3.40 us = 19.3 GB/s < 25 GB/s), so the modelled
// transfer is fixed + slices x post; every measured row lies within 16% of it.
TEST(Handoff, MooncakeProfileReproducesItsPublishedTransferTimes) {
  std::string y = kPd;
  y.replace(y.find("  nodes:"), 0, "  handoff: mooncake-te\n");
  y.replace(y.find("llama-3.1-70b"), 13, "llama-3.1-8b");
  ClusterRunSpec s = parse(y);
  s.model.num_layers = 36;
  const HandoffSpec& h = s.cluster.handoff;
  const std::vector<std::pair<std::int64_t, double>> rows = {
      {128, 0.54e-3},  {256, 0.61e-3},  {512, 0.92e-3},    {1024, 1.50e-3},  {2048, 2.51e-3},
      {4096, 4.75e-3}, {8192, 8.84e-3}, {16384, 16.43e-3}, {32768, 31.65e-3}};
  for (const auto& [tokens, measured] : rows) {
    const double bytes = static_cast<double>(tokens) * 256 * 72;
    const std::int64_t slices = handoff_descriptors(h, s.model, tokens, bytes, {16, 256, 1});
    EXPECT_EQ(slices, 72 * ((tokens + 255) / 256)) << tokens;
    const double post_rate = handoff_post_rate_cap(bytes, slices, h);
    EXPECT_LT(post_rate, 25e9) << tokens;
    const double modelled = h.fixed_s + bytes / post_rate;
    EXPECT_NEAR(modelled, measured, 0.16 * measured) << tokens;
  }
}

TEST(ClusterEstimator, GroupLoadRateIsTheSlowestGpusShareWithTheWholeGroupLoading) {
  const ClusterRunSpec s = parse(kPool);
  // DGX B200: every GPU its own PCIe 5 x16 link; 4 GPUs per DDR5-4400 socket (8 channels × 8 B
  // × 0.8 = 225 GB/s) need 4 × 46.77 = 187 GB/s: each GPU's link binds, as for one GPU alone,
  // with or without the lmcache-0.3.5 kernel's shape (its loads in flight bound far above).
  const double pcie = group_load_rate(s.nodes[0].system, 8, LoadPath::Kernel);
  EXPECT_NEAR(pcie, kSmLoadRate, 1e-6 * pcie);
  EXPECT_LT(kSmLoadRate, kSmTags);
  CopyKernelShape lmcache;
  lmcache.load_width = 8;
  lmcache.threads_per_block = 32;
  lmcache.blocks_per_sm = 277;
  EXPECT_NEAR(group_load_rate(s.nodes[0].system, 8, LoadPath::Kernel, lmcache), kSmLoadRate,
              1e-6 * pcie);
  // A kernel of one one-warp block per SM (1 × 256 B per SM) would be bound by its own loads:
  // 148 × 256 B / 1 µs = 37.888 GB/s.
  lmcache.blocks_per_sm = 1;
  EXPECT_NEAR(group_load_rate(s.nodes[0].system, 8, LoadPath::Kernel, lmcache), 148.0 * 256 / 1e-6,
              1e-9 * 148.0 * 256 / 1e-6);
  // GB200: both GPUs load at once, each through its own C2C share (225 GB/s), from one Grace's
  // LPDDR5X (204.8 GB/s each): DRAM binds; one GPU alone gets its 225 GB/s share.
  const double c2c = group_load_rate(s.nodes[1].system, 2, LoadPath::Kernel);
  EXPECT_NEAR(c2c, kGraceDramPerGpu, 1e-6 * c2c);
  EXPECT_NEAR(group_load_rate(s.nodes[1].system, 1, LoadPath::Kernel), 225e9, 1e-3);
}

TEST(ClusterEstimator, ServiceIsLoadPlusComputeSerialAndPipelinedWithLayerwiseOverlap) {
  const ClusterRunSpec s = parse(kPool);
  const NodeModel pcie = make_node_model(s.node_run_spec(0));
  const NodeModel c2c = make_node_model(s.node_run_spec(1));
  EXPECT_DOUBLE_EQ(pcie.kv_bytes_per_token_gpu, kBkvTp8);
  EXPECT_DOUBLE_EQ(c2c.kv_bytes_per_token_gpu, kBkvTp2);

  // A long cached document and a short question: κ_ratio = 65536 / 16 = 4096.
  const std::int64_t K = 65536, T = 16;
  // The default stack, presets/stacks/lmcache-0.3.5.yaml: retrieve_fixed 0.5 ms, then per chunk
  // the up-front re-hash (28 µs) and the GPU idle gap (25 µs) = 0.5 + 256 × 0.053 = 14.068 ms.
  const double retrieve = 0.5e-3 + (K / 256) * (28e-6 + 25e-6);
  // The load (serving/request_cost): also one copy-kernel block per chunk at 0.24 µs (B200
  // preset); the stack's overlapped Python (74 µs × 256 = 18.9 ms) is shorter than either link
  // time, so the copies bound it.
  const double blocks = (K / 256) * 0.24e-6;
  const double load_pcie = retrieve + K * kBkvTp8 / kSmLoadRate + blocks;      // 67.4 ms + CPU
  const double load_c2c = retrieve + K * kBkvTp2 / kGraceDramPerGpu + blocks;  // 30.8 ms + CPU
  const ServiceEstimate ep = estimate_service(pcie, K, T);
  const ServiceEstimate ec = estimate_service(c2c, K, T);
  EXPECT_NEAR(ep.load_s, load_pcie, 1e-9 * load_pcie);
  EXPECT_NEAR(ec.load_s, load_c2c, 1e-9 * load_c2c);
  auto compute = [&](const NodeModel& n, double t, double k) {
    return batch_step_time(n.model, n.gpu, n.tp, {{t, k, true}}, n.compute_dtype)
               .total.compute_time_s +
           std::ceil(t / 4096) * 2e-3;  // step overhead per step
  };
  EXPECT_NEAR(ep.compute_s, compute(pcie, T, K), 1e-15);
  EXPECT_DOUBLE_EQ(ep.total_s, ep.load_s + ep.compute_s);  // kernel path: serial
  // The link time difference (36.6 ms) outweighs the compute difference: C2C finishes first.
  EXPECT_LT(ec.total_s, ep.total_s);

  // No cached tokens, a long prompt: no load; the PCIe node's 8 B200s out-compute the
  // superchip's 2 (the same GPU).
  const ServiceEstimate lp = estimate_service(pcie, 0, 8192);
  const ServiceEstimate lc = estimate_service(c2c, 0, 8192);
  EXPECT_EQ(lp.load_s, 0);
  EXPECT_EQ(lc.load_s, 0);
  EXPECT_NEAR(lp.compute_s, compute(pcie, 8192, 0), 1e-15);
  EXPECT_LT(lp.total_s, lc.total_s);

  // Layer-wise (the same node, the DMA per (layer, chunk) at the same rate for the check): the
  // load overlaps compute as a pipeline of L = 94 layers: cpu + max(x + last layer, x / L +
  // compute). x is bound by the stack's Python issuing 94 × 256 (layer, chunk) objects at 38 +
  // 67 µs each (2.53 s) rather than the link (83 ms + 94 × 256 DMAs × 2.36 µs = 57 ms).
  NodeModel over = pcie;
  over.cost.path = LoadPath::Layerwise;
  const ServiceEstimate eo = estimate_service(over, K, T);
  const int L = pcie.model.num_layers;
  ASSERT_EQ(L, 94);
  const double cpu_lw = 0.5e-3 + (K / 256) * 28e-6;
  const double x_lw = L * (K / 256) * (38e-6 + 67e-6);
  ASSERT_GT(x_lw, K * kBkvTp8 / kSmLoadRate + L * (K / 256) * 2.36e-6);
  const double last = batch_step_time(pcie.model, pcie.gpu, pcie.tp, {{double(T), double(K), true}},
                                      pcie.compute_dtype)
                          .last_layer_s;
  EXPECT_NEAR(eo.load_s, cpu_lw + x_lw, 1e-9 * x_lw);
  const double want = cpu_lw + std::max(x_lw + last, x_lw / L + eo.compute_s);
  EXPECT_NEAR(eo.total_s, want, 1e-9 * want);
}

TEST(ClusterEstimator, BacklogIsPendingLoadPlusFullAndPartialSteps) {
  const ClusterRunSpec s = parse(kPool);
  const NodeModel n = make_node_model(s.node_run_spec(0));
  EXPECT_EQ(estimate_backlog(n, 0, 0), 0);
  const double rate = kSmLoadRate;
  EXPECT_NEAR(estimate_backlog(n, 1000, 0), 1000 * kBkvTp8 / rate, 1e-15);
  const double full =
      batch_step_time(n.model, n.gpu, 8, {{4096, 0, true}}, "fp8").total.compute_time_s;
  const double part =
      batch_step_time(n.model, n.gpu, 8, {{100, 0, true}}, "fp8").total.compute_time_s;
  EXPECT_NEAR(estimate_backlog(n, 0, 2 * 4096 + 100), 2 * (full + 2e-3) + part + 2e-3, 1e-12);
}

// Hybrid KV (serving.kv_cache: hybrid) behind a router and through P/D (issue 21: every feature
// on every layout). The router's estimator loads a stored chunk's bytes per token: gpt-oss-120b
// at TP 8 keeps 1 KV head of 64 per GPU, 2 (K, V) x 64 x 2 B = 256 B per token per layer; a
// 256-token chunk (LMCache's default) stores all its tokens in the 18 full layers and its last
// 128 in the 18 sliding ones: (256 + 128) x 18 x 256 / 256 = 6,912 B per token.
TEST(ClusterSpec, HybridKvIsServedBehindARouterAndThroughPd) {
  const std::string mixed =
      "cluster:\n"
      "  nodes:\n"
      "    - {name: a, count: 2, system: dgx-h100, serving: {tp: 8, kv_cache: hybrid}}\n"
      "model: gpt-oss-120b\n"
      "workload: {type: sharegpt, requests: 10}\n";
  const ClusterRunSpec s = parse(mixed);
  EXPECT_NEAR(make_node_model(s.node_run_spec(0)).kv_bytes_per_token_gpu, 6912.0, 1e-9);
  // P/D: both pools must keep the same kind of cache.
  std::string pd = kPd;
  pd.replace(pd.find("llama-3.1-70b"), 13, "gpt-oss-120b");
  const std::string p8 = "role: prefill, system: dgx-h100, serving: {tp: 8}";
  const std::string d8 = "role: decode, system: dgx-h100, serving: {tp: 8}";
  std::string both = pd;
  both.replace(both.find(p8), p8.size(),
               "role: prefill, system: dgx-h100, serving: {tp: 8, "
               "kv_cache: hybrid}");
  both.replace(both.find(d8), d8.size(),
               "role: decode, system: dgx-h100, serving: {tp: 8, "
               "kv_cache: hybrid}");
  EXPECT_EQ(error_of(both), "(no error)");
  std::string one = pd;
  one.replace(one.find(p8), p8.size(),
              "role: prefill, system: dgx-h100, serving: {tp: 8, "
              "kv_cache: hybrid}");
  EXPECT_NE(error_of(one).find("cluster.nodes.1.serving.kv_cache: unified"), std::string::npos)
      << error_of(one);
  // Pools of different pipeline stages: the re-shard shares a GPU's bytes by its layers' bytes.
  std::string stages = both;
  stages.replace(stages.find("kv_cache: hybrid}}\n    - {name: d"), 18,
                 "kv_cache: hybrid, parallelism: {pp: 2, nodes: 2}}}");
  EXPECT_EQ(error_of(stages), "(no error)");
}

}  // namespace
}  // namespace cluster_spec_test
}  // namespace kappasim
