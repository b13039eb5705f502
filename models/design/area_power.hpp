// Area/power model of a GPU die re-split between tensor compute, host-link PHY and an on-chip
// KV SRAM, at the baseline's die area or at its power (docs/design-model.md).
//
// Every unit of each resource costs area and power at a fixed rate (presets/design/*.yaml, each
// coefficient sourced): compute in mm^2 and W per FLOP/s of peak dense BF16, the host link in mm^2
// and W per B/s of per-direction bandwidth (PHY), the SRAM in mm^2 and W per byte. The baseline
// die (e.g. H100 SXM5) gives the movable part (what it spends on the three resources); the rest of
// the die and of its power is fixed (HBM PHYs, L2, NoC, NVLink, idle power) and stays. A design
// point gives each resource a fraction of the movable area (equal-area mode) or of the movable
// power (equal-power mode), and the fractions set peak C, link BW and SRAM bytes.
//
// The host side of the link (DRAM bandwidth per socket, root ports) is models/design/host_bound.
// Ignored here: die-edge (shoreline)
// limits on PHY placement, yield and cost, clocks and voltage, and what compute area also buys
// besides FLOP/s (the SMs' share of L1, registers). Pure C++, no SystemC.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "core/config.hpp"

namespace kappasim {

// The coefficients and the baseline die: a preset of kind "design" (presets/design/).
struct DesignCoefficients {
  std::string name;
  std::string display_name;
  // Baseline die as built.
  double die_area_m2 = 0;
  double tdp_w = 0;
  double compute_flops = 0;  // peak dense BF16 FLOP/s
  double host_link_Bps = 0;  // host-link bandwidth, per direction
  double kv_sram_bytes = 0;  // dedicated KV SRAM (0 on today's GPUs)
  // Per-unit costs.
  double compute_density = 0;            // FLOP/s per m^2
  double compute_energy_per_flop_J = 0;  // W per FLOP/s of peak (J per FLOP)
  double link_density = 0;               // per-direction B/s per m^2 of PHY
  double link_energy_per_byte_J = 0;     // J per byte at the GPU's end, each direction
  double sram_density = 0;               // B per m^2
  double sram_power_per_byte_w = 0;      // W per byte (leakage and reads)
  double sram_bandwidth_Bps = 0;         // rate at which a hit is copied from SRAM into HBM
  std::string host_system;               // system preset whose host feeds the baseline GPU

  // Cost of one unit of each resource.
  double area_per_flops() const { return 1.0 / compute_density; }
  double area_per_link_Bps() const { return 1.0 / link_density; }
  double area_per_sram_byte() const { return 1.0 / sram_density; }
  double power_per_flops() const { return compute_energy_per_flop_J; }
  // Both directions are powered at the per-direction rate.
  double power_per_link_Bps() const { return 2.0 * link_energy_per_byte_J; }
  double power_per_sram_byte() const { return sram_power_per_byte_w; }

  // Baseline: area and power of the three resources and of the fixed rest.
  double baseline_compute_area() const { return compute_flops * area_per_flops(); }
  double baseline_link_area() const { return host_link_Bps * area_per_link_Bps(); }
  double baseline_sram_area() const { return kv_sram_bytes * area_per_sram_byte(); }
  double movable_area() const {
    return baseline_compute_area() + baseline_link_area() + baseline_sram_area();
  }
  double fixed_area() const { return die_area_m2 - movable_area(); }
  double baseline_compute_power() const { return compute_flops * power_per_flops(); }
  double baseline_link_power() const { return host_link_Bps * power_per_link_Bps(); }
  double baseline_sram_power() const { return kv_sram_bytes * power_per_sram_byte(); }
  double movable_power() const {
    return baseline_compute_power() + baseline_link_power() + baseline_sram_power();
  }
  double fixed_power() const { return tdp_w - movable_power(); }

  template <class V>
  void visit(V& v) {
    static const Dimension per_area_flop_rate = dim::flop_rate / dim::area;
    static const Dimension per_flop_energy = dim::energy / dim::flops;
    static const Dimension per_area_bandwidth = dim::bandwidth / dim::area;
    static const Dimension per_area_bytes = dim::bytes / dim::area;
    static const Dimension power_per_bytes = dim::power / dim::bytes;
    v.text("name", name, opt("preset name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.quantity("die_area", die_area_m2, dim::area, req("baseline die area"));
    v.quantity("tdp", tdp_w, dim::power, req("baseline power (TDP)"));
    v.quantity("compute", compute_flops, dim::flop_rate, req("baseline peak dense BF16 FLOP/s"));
    v.quantity("host_link_bandwidth", host_link_Bps, dim::bandwidth,
               req("baseline host-link bandwidth per direction"));
    v.quantity("kv_sram", kv_sram_bytes, dim::bytes,
               req("baseline dedicated KV SRAM (0 B if none)", Range::NonNegative));
    v.quantity("compute_density", compute_density, per_area_flop_rate,
               req("peak dense BF16 FLOP/s per mm^2 of SM array"));
    v.quantity("compute_energy_per_flop", compute_energy_per_flop_J, per_flop_energy,
               req("power per unit of peak FLOP/s (J per FLOP at full load)"));
    v.quantity("link_density", link_density, per_area_bandwidth,
               req("host-link bandwidth per direction per mm^2 of PHY"));
    v.quantity("link_energy_per_bit", link_energy_per_byte_J, dim::energy_per_byte,
               req("host-link energy per bit at the GPU's end, each direction"));
    v.quantity("sram_density", sram_density, per_area_bytes, req("SRAM bytes per mm^2"));
    v.quantity("sram_power", sram_power_per_byte_w, power_per_bytes,
               req("SRAM power per byte (leakage and reads)", Range::NonNegative));
    v.quantity("sram_bandwidth", sram_bandwidth_Bps, dim::bandwidth,
               req("rate at which an SRAM hit is copied into HBM"));
    v.text("host_system", host_system,
           opt("system preset whose host side feeds the baseline GPU (the design kind's default "
               "host)"));
  }
  void validate(const std::string& path) const;
};

enum class BudgetMode { Area, Power };
const std::vector<std::pair<const char*, BudgetMode>>& budget_mode_names();

// How the movable budget is split. link_fraction is required; of compute and SRAM, the one not
// given gets the rest (compute when neither is: SRAM 0). Fractions may add up to less than 1
// (the rest is left unused) but never to more.
struct DesignSplit {
  BudgetMode mode = BudgetMode::Area;
  std::optional<double> compute_fraction;
  double link_fraction = 0;
  std::optional<double> sram_fraction;
  std::optional<double> area_budget_m2;  // default: the baseline die area
  std::optional<double> power_budget_w;  // default: the baseline TDP

  template <class V>
  void visit(V& v) {
    v.choice("mode", mode, budget_mode_names(),
             opt("area: fractions of the movable die area; power: fractions of the movable power"));
    v.quantity("compute_fraction", compute_fraction, dim::none,
               opt("fraction of the movable budget spent on tensor compute (default: the rest)",
                   Range::Fraction));
    v.quantity("link_fraction", link_fraction, dim::none,
               req("fraction of the movable budget spent on host-link PHY", Range::Fraction));
    v.quantity("sram_fraction", sram_fraction, dim::none,
               opt("fraction spent on KV SRAM (default: 1 - compute - link)", Range::Fraction));
    v.quantity("area_budget", area_budget_m2, dim::area, opt("die area (default: the baseline's)"));
    v.quantity("power_budget", power_budget_w, dim::power,
               opt("power (default: the baseline's TDP)"));
  }
  // {compute, link, sram} with the defaults applied.
  std::array<double, 3> fractions() const;
  void validate(const std::string& path) const;
};

// What a split gives: resources, and the area and power they take.
struct DesignPoint {
  double compute_flops = 0, link_Bps = 0, sram_bytes = 0;
  double compute_fraction = 0, link_fraction = 0, sram_fraction = 0;
  double compute_area_m2 = 0, link_area_m2 = 0, sram_area_m2 = 0, fixed_area_m2 = 0;
  double compute_power_w = 0, link_power_w = 0, sram_power_w = 0, fixed_power_w = 0;
  double budget_area_m2 = 0, budget_power_w = 0;
  // An equal-power point may need more area than the budget, and an equal-area one more power.
  // Tolerance 0.1% (0.8 mm^2, 0.7 W on H100): fractions written to 3-4 digits in a study land
  // that close to the baseline, and no coefficient is known to better than that.
  static constexpr double kBudgetTolerance = 1e-3;
  bool within_area_budget() const {
    return total_area_m2() <= budget_area_m2 * (1 + kBudgetTolerance);
  }
  bool within_power_budget() const {
    return total_power_w() <= budget_power_w * (1 + kBudgetTolerance);
  }
  double total_area_m2() const {
    return fixed_area_m2 + compute_area_m2 + link_area_m2 + sram_area_m2;
  }
  double total_power_w() const {
    return fixed_power_w + compute_power_w + link_power_w + sram_power_w;
  }
};

// The split that reproduces the baseline die in the given mode.
DesignSplit baseline_split(const DesignCoefficients& c, BudgetMode mode);
// Resources of a split; InputError when the budget leaves nothing movable.
DesignPoint design_point(const DesignCoefficients& c, const DesignSplit& s);

}  // namespace kappasim
