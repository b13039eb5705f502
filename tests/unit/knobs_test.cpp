// Hardware-first configs (issue 12.11/12.12) and exact 64-bit integers (issue 11.1): preset
// files by path, scale factors checked against Eq. 6 by hand, PCIe x32, seeds above 2^53.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/analytic/kappa.hpp"
#include "models/llm/architecture.hpp"
#include "serving/run_spec.hpp"
#include "sweeps/sweep_results.hpp"
#include "sweeps/sweep_spec.hpp"
#include "systems/system_spec.hpp"
#include "workloads/workload_spec.hpp"

namespace knobs_test {
namespace {

using namespace kappasim;
namespace fs = std::filesystem;

SystemSpec system_with(const std::vector<std::string>& sets, ProvenanceTable* prov = nullptr) {
  ConfigNode root = ConfigNode::make_map();
  root.set("system", ConfigNode::make_scalar("h100"));
  for (const auto& s : sets) apply_set(root, s);
  return read_preset_config<SystemSpec>(*root.find("system"), "system", "system", prov);
}

double kappa_crit(const SystemSpec& sys) {
  const ModelSpec m =
      read_preset_config<ModelSpec>(ConfigNode::make_scalar("llama-3.1-8b"), "model", "model");
  return evaluate_kappa(m, sys, KappaQuery{}).kappa_crit;
}

// Eq. 6 by hand for Llama-3.1-8B on the h100 system (PCIe 5 x16 host link, BF16):
//   F_pf = 2 · 8 030 261 248 active parameters = 16 060 522 496 FLOP per token
//   B_kv = 32 layers · 8 KV heads · 128 · 2 (K and V) · 2 B = 131 072 B per token
//   B    = 32 GT/s · 16 lanes · 128/130 / 8 = 63.015 384 6 GB/s;  C = 989 TFLOP/s (BF16 dense)
//   κ_crit = F_pf · B / (B_kv · C)
double by_hand(double c_factor, double b_factor) {
  const double fpf = 2.0 * 8030261248.0, bkv = 131072;
  const double b = 32e9 * 16 * 128 / 130 / 8 * b_factor, c = 989e12 * c_factor;
  return fpf * b / (bkv * c);
}

TEST(Knobs, ScaleFactorsMoveKappaCritAsEq6) {
  EXPECT_NEAR(kappa_crit(system_with({})), by_hand(1, 1), 1e-9 * by_hand(1, 1));
  EXPECT_NEAR(by_hand(1, 1), 7.8073, 1e-4);
  // Twice the FLOP/s halves κ_crit; twice the host link restores it.
  EXPECT_NEAR(kappa_crit(system_with({"system.gpu.scale.flops=2"})), by_hand(2, 1), 1e-9);
  EXPECT_NEAR(
      kappa_crit(system_with({"system.gpu.scale.flops=2", "system.host_link.scale.bandwidth=2"})),
      by_hand(2, 2), 1e-9);
  // Per precision: only bf16 moves (the kappa query computes in bf16); fp8 alone leaves it.
  EXPECT_NEAR(kappa_crit(system_with({"system.gpu.scale.flops_by_dtype={bf16: 4}"})), by_hand(4, 1),
              1e-9);
  EXPECT_NEAR(kappa_crit(system_with({"system.gpu.scale.flops_by_dtype={fp8: 4}"})), by_hand(1, 1),
              1e-9);
  // Factors multiply: flops 2 × bf16 1.5 = 3.
  EXPECT_NEAR(kappa_crit(system_with({"system.gpu.scale={flops: 2, flops_by_dtype: {bf16: 1.5}}"})),
              by_hand(3, 1), 1e-9);
}

TEST(Knobs, ScaledFieldsCarryDerivedProvenanceAndDumpOnce) {
  ProvenanceTable prov;
  const SystemSpec s =
      system_with({"system.gpu.scale.hbm_bandwidth=2", "system.gpu.scale.flops=2"}, &prov);
  EXPECT_DOUBLE_EQ(s.gpu.hbm_bandwidth_Bps, 2 * 3.35e12);  // H100 SXM5 datasheet 3.35 TB/s
  EXPECT_DOUBLE_EQ(s.gpu.peak("bf16"), 2 * 989e12);
  const auto& p = prov.at("system.gpu.hbm_bandwidth").first;
  EXPECT_EQ(p.kind, "derived");
  EXPECT_NE(p.source.find("scale.hbm_bandwidth"), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("3.35 TB/s"), std::string::npos)
      << p.source;  // the datasheet source kept
  // The effective config holds the scaled value and no factor, so reading it back does not
  // scale twice.
  ConfigNode dumped = write_config(s, "system", &prov);
  EXPECT_EQ(dumped.find("gpu")->find("scale"), nullptr);
  const SystemSpec again = read_config<SystemSpec>(dumped, "system");
  EXPECT_DOUBLE_EQ(again.gpu.hbm_bandwidth_Bps, 2 * 3.35e12);
  EXPECT_DOUBLE_EQ(again.gpu.peak("bf16"), 2 * 989e12);
  // A precision the GPU lacks is an error naming it.
  try {
    system_with({"system.gpu=a100-sxm4-80gb", "system.gpu.scale.flops_by_dtype={fp8: 2}"});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("scale.flops_by_dtype.fp8"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(system_with({"system.gpu.scale.flops=0"}), InputError);
}

TEST(Knobs, PcieX32AndX12AreValidWidths) {
  // PCIe Base Specification link widths (Link Capabilities, Maximum Link Width): x1, x2, x4,
  // x8, x12, x16, x32. x32 of PCIe 5: 32 GT/s · 32 · 128/130 / 8 = 126.03 GB/s per direction.
  const SystemSpec x32 = system_with({"system.host_link.lanes=32"});
  EXPECT_NEAR(x32.host_link_bandwidth_per_gpu(), 32e9 * 32 * 128 / 130 / 8, 1);
  EXPECT_NEAR(kappa_crit(x32), by_hand(1, 2), 1e-9);
  EXPECT_NO_THROW(system_with({"system.host_link.lanes=12"}));
}

TEST(Knobs, SixtyFourBitSeedsRoundTrip) {
  // 18446744073709551557 is the largest prime below 2^64: not representable as a double.
  for (const std::string seed :
       {"18446744073709551557", "9007199254740993", "18446744073709551615", "0"}) {
    ConfigNode root = ConfigNode::make_map();
    apply_set(root, "workload.seed=" + seed);
    const WorkloadSpec w = read_config<WorkloadSpec>(*root.find("workload"), "workload");
    EXPECT_EQ(std::to_string(w.seed), seed);
    EXPECT_EQ(write_config(w, "workload").find("seed")->scalar, seed);
  }
  for (const std::string bad : {"18446744073709551616", "-1", "1.5", "1e300"}) {
    ConfigNode root = ConfigNode::make_map();
    apply_set(root, "workload.seed=" + bad);
    EXPECT_THROW(read_config<WorkloadSpec>(*root.find("workload"), "workload"), InputError) << bad;
  }
  // "1e3" still reads as a number.
  ConfigNode root = ConfigNode::make_map();
  apply_set(root, "workload.seed=1e3");
  EXPECT_EQ(read_config<WorkloadSpec>(*root.find("workload"), "workload").seed, 1000u);
  // Signed integer fields are exact too: 2^53 + 1 requests.
  ConfigNode r2 = ConfigNode::make_map();
  apply_set(r2, "workload.requests=9007199254740993");
  EXPECT_EQ(read_config<WorkloadSpec>(*r2.find("workload"), "workload").requests,
            9007199254740993LL);
}

TEST(Knobs, PresetFilesByPathResolveAgainstTheReferringFile) {
  const fs::path dir = fs::temp_directory_path() / ("kappasim-knobs-" + std::to_string(::getpid()));
  fs::create_directories(dir / "gpus");
  {
    std::ofstream(dir / "gpus" / "fast.yaml")
        << "preset: h100-sxm5\nhbm_bandwidth: {value: 8 TB/s, assumption: \"test\"}\n";
    std::ofstream(dir / "sys.yaml") << "preset: h100\ngpu: gpus/fast.yaml\n";
  }
  ConfigNode root = ConfigNode::make_map();
  apply_set(root, "system=" + (dir / "sys.yaml").string());
  const SystemSpec s = read_preset_config<SystemSpec>(*root.find("system"), "system", "system");
  EXPECT_DOUBLE_EQ(s.gpu.hbm_bandwidth_Bps, 8e12);
  EXPECT_DOUBLE_EQ(s.gpu.peak("bf16"), 989e12);  // the rest from h100-sxm5
  // A missing file names itself.
  ConfigNode bad = ConfigNode::make_map();
  apply_set(bad, "system=" + (dir / "nope.yaml").string());
  try {
    read_preset_config<SystemSpec>(*bad.find("system"), "system", "system");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.yaml"), std::string::npos) << e.what();
  }
  // A device is refused before any read (it would never end).
  ConfigNode dev = ConfigNode::make_map();
  apply_set(dev, "system.gpu=/dev/zero");
  try {
    read_preset_config<SystemSpec>(*dev.find("system"), "system", "system");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'/dev/zero' is not a regular file"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(Knobs, QuantityAxesGetNumericSiColumns) {
  const ConfigNode root = parse_yaml(
      "name: t\nkind: selftest\nconfig: {x: 1}\n"
      "axes:\n  - {key: system.host_link.bandwidth, values: [\"64 GB/s\", \"128 GB/s\"], label: "
      "host_link_bandwidth}\n"
      "  - {key: x, values: [1, 2]}\n  - {key: mode, values: [a, b]}\n",
      "spec.yaml");
  const sweep::SweepSpec s = sweep::parse_sweep_spec(root, ".", false);
  const auto pts = sweep::expand(s);
  std::vector<sweep::PointRecord> recs(pts.size(), sweep::PointRecord{"ok", "", {}});
  const sweep::MergedResults m = sweep::merge_results(s, pts, recs);
  EXPECT_EQ(m.csv.substr(0, m.csv.find('\n')),
            "point,host_link_bandwidth,host_link_bandwidth_Bps,x,mode,seed,status,error");
  EXPECT_NE(m.csv.find("\n4,128 GB/s,128000000000,1,a,"), std::string::npos) << m.csv;
  EXPECT_NE(m.jsonl.find("\"host_link_bandwidth_Bps\": 64000000000"), std::string::npos) << m.jsonl;
}

TEST(Knobs, GpuSideKvBufferAsGpuHardwareAndServingPrecedence) {
  const std::string base =
      "model: llama-3.1-8b\nworkload: {type: sharegpt, requests: 10}\n"
      "system: {preset: h100, gpu: {preset: h100-sxm5, kv_buffer: {capacity: 4 GiB, kind: sram, "
      "bandwidth: 10 TB/s, energy_per_bit: 0.1 pJ/bit}}}\n";
  ProvenanceTable prov;
  const RunSpec r = read_config<RunSpec>(parse_yaml(base, "run.yaml"), "", &prov);
  EXPECT_DOUBLE_EQ(r.serving.kv_buffer.capacity_bytes, 4.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(r.serving.kv_buffer.kind, KvBufferKind::Sram);
  EXPECT_DOUBLE_EQ(*r.serving.kv_buffer.bandwidth_Bps, 10e12);
  EXPECT_DOUBLE_EQ(*r.serving.kv_buffer.energy_per_byte_J, 0.1e-12 * 8);  // pJ/bit → J/B
  EXPECT_EQ(prov.at("serving.kv_buffer.capacity").first.kind, "derived");
  // serving.kv_buffer, when on, wins whole.
  const RunSpec s = read_config<RunSpec>(
      parse_yaml(base + "serving: {kv_buffer: {capacity: 1 GiB}}\n", "run.yaml"), "");
  EXPECT_DOUBLE_EQ(s.serving.kv_buffer.capacity_bytes, 1024.0 * 1024 * 1024);
  EXPECT_EQ(s.serving.kv_buffer.kind, KvBufferKind::Hbm);
  EXPECT_FALSE(s.serving.kv_buffer.bandwidth_Bps.has_value());
  // issue 26 item 22: a serving.kv_buffer capacity written as 0 switches the GPU's buffer off
  // (it was adopted regardless), in the file or by --set; an absent capacity still adopts it.
  const RunSpec zero = read_config<RunSpec>(
      parse_yaml(base + "serving: {kv_buffer: {capacity: 0 B}}\n", "run.yaml"), "");
  EXPECT_FALSE(zero.serving.kv_buffer.enabled());
  EXPECT_EQ(zero.serving.kv_buffer.capacity_bytes, 0.0);
  ConfigNode set_root = parse_yaml(base, "run.yaml");
  apply_set(set_root, "serving.kv_buffer.capacity=0 B");
  EXPECT_FALSE(read_config<RunSpec>(set_root, "").serving.kv_buffer.enabled());
  const RunSpec kind_only = read_config<RunSpec>(
      parse_yaml(base + "serving: {kv_buffer: {kind: hbm}}\n", "run.yaml"), "");
  EXPECT_DOUBLE_EQ(kind_only.serving.kv_buffer.capacity_bytes, 4.0 * 1024 * 1024 * 1024);
  // No buffer on the GPU and none in serving: off, as before.
  const RunSpec off = read_config<RunSpec>(
      parse_yaml("model: llama-3.1-8b\nsystem: h100\nworkload: {requests: 10}\n", "r.yaml"), "");
  EXPECT_FALSE(off.serving.kv_buffer.enabled());
}

}  // namespace
}  // namespace knobs_test
