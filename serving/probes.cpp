// The probes' simulations (serving/probes.hpp), moved out of apps/kappasim (issue 13 item 5).
#include "serving/probes.hpp"

#include <systemc>

#include <algorithm>
#include <functional>
#include <memory>
#include <utility>

#include "core/sim_runner.hpp"
#include "models/gpu/copy_engine.hpp"
#include "models/gpu/gpu_compute.hpp"
#include "systems/flow_fabric.hpp"

namespace kappasim {

LinkProbeResult run_link_probe(LinkProbeOptions options) {
  const LinkProbeOptions& o = options;
  std::unique_ptr<FlowFabric> fabric;
  std::vector<std::unique_ptr<CopyEngine>> engines;
  std::vector<std::unique_ptr<CopyKernel>> kernels;
  LinkProbeResult result;
  const std::function<void()> build = [&] {
    fabric = std::make_unique<FlowFabric>("fabric", std::move(options.topology));
    for (int g = 0; g < o.gpus; ++g) {
      engines.push_back(std::make_unique<CopyEngine>(("gpu" + std::to_string(g) + "_ce").c_str(),
                                                     o.system.gpu, g));
      engines.back()->out.bind(fabric->in);
      kernels.push_back(std::make_unique<CopyKernel>(("gpu" + std::to_string(g) + "_ck").c_str(),
                                                     o.system.gpu, o.kernel));
      kernels.back()->out.bind(fabric->in);
    }
    sc_core::sc_spawn([&] {
      for (double size : o.sizes) {
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        const auto transfers0 = fabric->transfers();
        const auto events0 = fabric->kernel_events();
        int outstanding = 0;
        sc_core::sc_event all_done;
        sc_core::sc_time last_end = t0;
        for (int g = 0; g < o.gpus; ++g)
          for (Direction d : o.directions) {
            ++outstanding;
            sc_core::sc_spawn([&, g, d, size] {
              if (o.use_dma) {
                for (int b = 0; b < o.blocks; ++b) {
                  TransferRequest r;
                  r.dir = d;
                  r.bytes = size;
                  r.pinned = o.pinned;
                  engines[static_cast<std::size_t>(g)]->copy(r);
                }
              } else {
                kernels[static_cast<std::size_t>(g)]->copy_blocks(g, d, size, o.blocks);
              }
              last_end = std::max(last_end, sc_core::sc_time_stamp());
              if (--outstanding == 0) all_done.notify(sc_core::SC_ZERO_TIME);
            });
          }
        sc_core::wait(all_done);
        LinkProbePhase p;
        p.size = size;
        p.time_s = (last_end - t0).to_seconds();
        p.transfers = static_cast<double>(fabric->transfers() - transfers0);
        p.events = static_cast<double>(fabric->kernel_events() - events0);
        result.phases.push_back(p);
      }
    });
  };
  run_simulation(build);
  result.fidelity = fabric->fidelity();
  return result;
}

ComputeProbeResult run_compute_probe(const ComputeProbeOptions& o) {
  std::unique_ptr<GpuCompute> sim;
  double end_s = 0;
  run_simulation([&] {
    sim = std::make_unique<GpuCompute>("gpu0", o.gpu, o.precision, o.coarse);
    sim->set_launch(o.launch);
    sc_core::sc_spawn([&] {
      sim->run_prefill(o.model, o.t, o.k, o.tp);
      end_s = sim_now_s();
    });
  });
  ComputeProbeResult r;
  r.time = sim->stats().time;
  r.kernel_events = sim->stats().kernel_events;
  r.sim_time_s = end_s;
  return r;
}

}  // namespace kappasim
