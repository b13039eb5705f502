// GPU power and energy: idle plus one term per activity, each with its own sourced parameter
// (presets/gpus/*.yaml: idle_power, energy_per_flop, energy_per_hbm_bit; the host link's
// energy_per_bit from presets/links/*.yaml):
//
//   E = P_idle·duration                      board power with a CUDA context held
//     + e_flop·FLOPs                         tensor-core work, above idle
//     + e_hbm·HBM bytes                      HBM traffic (DRAM, PHY, on-chip movement)
//     + e_link·link bytes                    host-link traffic (charged whole to the GPU)
//
// Power limit (the card's TDP, which the board enforces): (1) while compute kernels run, the
// FLOP term cannot exceed (TDP − P_idle)·compute_busy_s; (2) the mean over the interval cannot
// exceed TDP: E ≤ TDP·duration. The timing model does not lower clocks when the limit binds,
// so a capped interval's timing is optimistic; EnergyBreakdown::capped_j says how much was cut.
// For the limit to mean what the hardware does, call this per interval of roughly uniform
// activity (a scheduler step) and add up the energies.
//
// All quantities are per GPU. No SystemC. Derivations and tags: docs/metrics.md (Power).
#pragma once

#include <string>

#include "models/gpu/gpu_spec.hpp"

namespace kappasim {

struct PowerActivity {
  double duration_s = 0;      // wall (simulated) length of the interval
  double compute_busy_s = 0;  // time compute kernels ran in it (≤ duration_s)
  // Tensor-core FLOPs executed, counted in BF16 equivalents: a FLOP of dtype d counts
  // peak(bf16)/peak(d) (FP8 at twice the rate costs about the same power: half per FLOP).
  double flops = 0;
  double hbm_bytes = 0;               // bytes read from and written to HBM (incl. KV landing there)
  double link_bytes = 0;              // bytes over the GPU's host link, both directions
  double link_energy_per_byte_J = 0;  // LinkSpec::energy_per_byte_J of that link (0: unknown)
};

struct PowerParams {
  double idle_w = 0;
  double energy_per_flop_J = 0;
  double energy_per_hbm_byte_J = 0;
  double tdp_w = 0;
};
// The power parameters of a GPU; InputError naming the GPU and every missing field.
PowerParams power_params(const GpuSpec& gpu);

struct EnergyBreakdown {
  double idle_j = 0, compute_j = 0, hbm_j = 0, link_j = 0;  // before the power limit
  double capped_j = 0;  // energy removed by the power limit (≥ 0)
  double total_j = 0;   // idle + compute + hbm + link − capped
  bool capped() const { return capped_j > 0; }
};

EnergyBreakdown gpu_energy_breakdown(const PowerParams& p, const PowerActivity& a);
EnergyBreakdown gpu_energy_breakdown(const GpuSpec& gpu, const PowerActivity& a);
// Energy of one GPU over the interval, J.
double gpu_energy_j(const GpuSpec& gpu, const PowerActivity& a);
// Mean power of one GPU over the interval, W (energy / duration; 0 for an empty interval).
double gpu_power_w(const GpuSpec& gpu, const PowerActivity& a);

}  // namespace kappasim
