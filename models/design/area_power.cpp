#include "models/design/area_power.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/units.hpp"

namespace kappasim {

namespace {
std::string mm2(double m2) { return format_number(m2 * 1e6) + " mm^2"; }
std::string join(const std::string& path, const char* key) {
  return path.empty() ? std::string(key) : path + "." + key;
}
}  // namespace

void DesignCoefficients::validate(const std::string& path) const {
  if (!(fixed_area() > 0))
    throw InputError(join(path, "die_area") + ": the baseline's compute, link and SRAM take " +
                     mm2(movable_area()) + ", not less than the die (" + mm2(die_area_m2) +
                     "); check compute_density, link_density and sram_density");
  if (!(fixed_power() > 0))
    throw InputError(join(path, "tdp") + ": the baseline's compute, link and SRAM draw " +
                     format_number(movable_power()) + " W, not less than the TDP (" +
                     format_number(tdp_w) + " W); check the energy coefficients");
}

const std::vector<std::pair<const char*, BudgetMode>>& budget_mode_names() {
  static const std::vector<std::pair<const char*, BudgetMode>> n = {{"area", BudgetMode::Area},
                                                                    {"power", BudgetMode::Power}};
  return n;
}

std::array<double, 3> DesignSplit::fractions() const {
  const double l = link_fraction;
  if (compute_fraction && sram_fraction) return {*compute_fraction, l, *sram_fraction};
  if (compute_fraction) return {*compute_fraction, l, std::max(0.0, 1.0 - *compute_fraction - l)};
  const double sr = sram_fraction.value_or(0);
  return {std::max(0.0, 1.0 - l - sr), l, sr};
}

void DesignSplit::validate(const std::string& path) const {
  const std::array<double, 3> f = fractions();
  const double sum = (compute_fraction ? *compute_fraction : 0) + link_fraction +
                     (sram_fraction ? *sram_fraction : 0);
  if (sum > 1 + 1e-12)
    throw InputError(join(path, "link_fraction") + ": the fractions given add up to " +
                     format_number(sum) + ", more than 1");
  // A design without compute or without a host link cannot serve offloaded prefill.
  if (!(f[0] > 0))
    throw InputError(join(path, "compute_fraction") + ": compute gets nothing (fractions " +
                     format_number(f[0]) + " / " + format_number(f[1]) + " / " +
                     format_number(f[2]) + "); it must be greater than zero");
  if (!(link_fraction > 0))
    throw InputError(join(path, "link_fraction") + ": must be greater than zero");
}

DesignSplit baseline_split(const DesignCoefficients& c, BudgetMode mode) {
  DesignSplit s;
  s.mode = mode;
  if (mode == BudgetMode::Area) {
    const double a = c.movable_area();
    s.compute_fraction = c.baseline_compute_area() / a;
    s.link_fraction = c.baseline_link_area() / a;
    s.sram_fraction = c.baseline_sram_area() / a;
  } else {
    const double p = c.movable_power();
    s.compute_fraction = c.baseline_compute_power() / p;
    s.link_fraction = c.baseline_link_power() / p;
    s.sram_fraction = c.baseline_sram_power() / p;
  }
  return s;
}

DesignPoint design_point(const DesignCoefficients& c, const DesignSplit& s) {
  s.validate("design");
  DesignPoint d;
  d.budget_area_m2 = s.area_budget_m2.value_or(c.die_area_m2);
  d.budget_power_w = s.power_budget_w.value_or(c.tdp_w);
  d.fixed_area_m2 = c.fixed_area();
  d.fixed_power_w = c.fixed_power();
  const std::array<double, 3> f = s.fractions();
  d.compute_fraction = f[0];
  d.link_fraction = f[1];
  d.sram_fraction = f[2];

  if (s.mode == BudgetMode::Area) {
    const double movable = d.budget_area_m2 - d.fixed_area_m2;
    if (!(movable > 0))
      throw InputError("design.area_budget: " + mm2(d.budget_area_m2) +
                       " leaves nothing movable after the fixed " + mm2(d.fixed_area_m2));
    d.compute_flops = d.compute_fraction * movable / c.area_per_flops();
    d.link_Bps = d.link_fraction * movable / c.area_per_link_Bps();
    d.sram_bytes = d.sram_fraction * movable / c.area_per_sram_byte();
  } else {
    const double movable = d.budget_power_w - d.fixed_power_w;
    if (!(movable > 0))
      throw InputError("design.power_budget: " + format_number(d.budget_power_w) +
                       " W leaves nothing movable after the fixed " +
                       format_number(d.fixed_power_w) + " W");
    d.compute_flops = d.compute_fraction * movable / c.power_per_flops();
    d.link_Bps = d.link_fraction * movable / c.power_per_link_Bps();
    // An SRAM that draws no power (sram_power 0) cannot be sized by power.
    d.sram_bytes =
        c.power_per_sram_byte() > 0 ? d.sram_fraction * movable / c.power_per_sram_byte() : 0.0;
  }
  d.compute_area_m2 = d.compute_flops * c.area_per_flops();
  d.link_area_m2 = d.link_Bps * c.area_per_link_Bps();
  d.sram_area_m2 = d.sram_bytes * c.area_per_sram_byte();
  d.compute_power_w = d.compute_flops * c.power_per_flops();
  d.link_power_w = d.link_Bps * c.power_per_link_Bps();
  d.sram_power_w = d.sram_bytes * c.power_per_sram_byte();
  return d;
}

}  // namespace kappasim
