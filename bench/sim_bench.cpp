// Speed of the SystemC timing models, in one simulation (SystemC allows one per process):
//  - simulated transfers per wall second: flow-level fabric vs packet-level PCIe model, the
//    same 1 MiB host->GPU DMA reads on the same PCIe 5 x16 link;
//  - kernel events per simulated request-layer of the GPU compute model (fine and coarse).
// Prints one JSON object per line. Numbers and the command: docs/benchmarks.md.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <systemc>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "interconnects/pcie_packet.hpp"
#include "interconnects/pcie_protocol.hpp"
#include "models/gpu/gpu_compute.hpp"
#include "systems/flow_fabric.hpp"

using namespace kappasim;

namespace {
double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

int main(int argc, char** argv) {
  const int flow_n = argc > 1 ? std::atoi(argv[1]) : 200000;
  const int packet_n = argc > 2 ? std::atoi(argv[2]) : 200;
  const SystemSpec s =
      read_preset_config<SystemSpec>(ConfigNode::make_scalar("h100"), "system", "system");
  const ModelSpec m =
      read_preset_config<ModelSpec>(ConfigNode::make_scalar("llama-3.1-70b"), "model", "model");
  const double bytes = 1 << 20;
  std::unique_ptr<FlowFabric> flow;
  std::unique_ptr<PciePacketLink> packet;
  std::unique_ptr<GpuCompute> fine, coarse;
  double flow_wall = 0, packet_wall = 0;
  std::uint64_t fine_events = 0, coarse_events = 0;
  const int layers = 80;
  run_simulation([&] {
    flow = std::make_unique<FlowFabric>("flow", build_topology(s));
    packet = std::make_unique<PciePacketLink>("packet",
                                              PcieProtocol::from(s.host_link, "system.host_link"));
    fine = std::make_unique<GpuCompute>("fine", s.gpu, "bf16", false);
    coarse = std::make_unique<GpuCompute>("coarse", s.gpu, "bf16", true);
    sc_core::sc_spawn([&] {
      double t = wall_now();
      for (int i = 0; i < flow_n; ++i) {
        TransferRequest r;
        r.bytes = bytes;
        flow->transfer(r);
      }
      flow_wall = wall_now() - t;
      t = wall_now();
      for (int i = 0; i < packet_n; ++i) {
        TransferRequest r;
        r.bytes = bytes;
        packet->transfer(r);
      }
      packet_wall = wall_now() - t;
      fine->run_prefill(m, 4096, 65536, 8);
      coarse->run_prefill(m, 4096, 65536, 8);
      fine_events = static_cast<std::uint64_t>(fine->stats().kernel_events);
      coarse_events = static_cast<std::uint64_t>(coarse->stats().kernel_events);
    });
  });
  std::printf(
      "{\"model\": \"flow\", \"transfers\": %d, \"bytes_each\": %.0f, \"wall_s\": %.4f, "
      "\"transfers_per_s\": %.0f, \"kernel_events\": %llu}\n",
      flow_n, bytes, flow_wall, flow_n / flow_wall,
      static_cast<unsigned long long>(flow->kernel_events()));
  const auto& ps = packet->stats();
  std::printf(
      "{\"model\": \"packet\", \"transfers\": %d, \"bytes_each\": %.0f, \"wall_s\": %.4f, "
      "\"transfers_per_s\": %.1f, \"thread_activations\": %llu}\n",
      packet_n, bytes, packet_wall, packet_n / packet_wall,
      static_cast<unsigned long long>(ps.down.activations + ps.up.activations));
  std::printf("{\"flow_over_packet_speedup\": %.0f}\n",
              (flow_n / flow_wall) / (packet_n / packet_wall));
  std::printf(
      "{\"gpu_compute\": \"llama-3.1-70b tp 8, T 4096, K 65536\", \"layers\": %d, "
      "\"events_per_request_layer_fine\": %.2f, \"events_per_request_layer_coarse\": %.2f}\n",
      layers, static_cast<double>(fine_events) / layers,
      static_cast<double>(coarse_events) / layers);
  return 0;
}
