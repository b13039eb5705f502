// A design point of the area/power model (area_power.hpp) written out as hardware the serving
// simulator reads like any other (docs/design-model.md, "Emitting a design point"):
//   - a GPU preset: the base GPU (h100-sxm5 for h100-4n) with the design's tensor FLOP/s
//     (every precision scaled by C / C0, as the SM array is scaled), SM count scaled alike, TDP =
//     the design's total power, idle power + the change in always-on PHY power + the SRAM's power;
//   - a system preset: the host (dgx-h100, a GB200-class Grace host, or the die-only `unlimited`
//     host) with that GPU and a PCIe host link carrying the design's PHY bandwidth (16 lanes, the
//     rate per lane carrying the width, since the link model takes at most 16 lanes);
//   - the serving `kv_buffer` settings for the KV SRAM ({capacity: 0 B} when the split has none):
//     the design's SRAM bytes per GPU, kind sram, at the coefficients' sram_bandwidth.
// Every emitted number carries a `derived:` provenance naming the coefficients, the base die, the
// budget and the split. What is not emitted: die area (no GPU preset key), the SRAM's own energy
// per byte read (in the idle power at the coefficients' power per byte), the HBM/NVLink side (fixed
// part of the die, unchanged). Pure C++, no SystemC.
#pragma once

#include <string>

#include "core/config.hpp"
#include "models/design/area_power.hpp"

namespace kappasim {

struct DesignEmitOptions {
  std::string coefficients_name = "h100-4n";  // for provenance and the default name
  std::string base_gpu = "h100-sxm5";         // GPU preset the die is a re-split of
  // dgx-h100 (or any system preset with a PCIe host link), gb200 (a GB200-class Grace host: one
  // LPDDR5X socket per 2 GPUs, the gb200-grace memory), or unlimited (die-only: host DRAM far above
  // any PHY, so the PHY alone binds).
  std::string host = "dgx-h100";
  int gpus = 8;      // GPUs of the emitted system (gb200 / unlimited hosts)
  std::string name;  // preset name of the GPU and the system (default: from the split)
};

struct EmittedDesign {
  std::string name;  // GPU preset name; the system preset is name + "-" + host
  std::string system_name;
  DesignPoint point;
  ConfigNode gpu;        // a `gpu` preset tree (provenance on every changed value)
  ConfigNode system;     // a `system` preset tree; `gpu:` names the GPU preset
  ConfigNode kv_buffer;  // the serving.kv_buffer map
  // The system tree with the GPU inline (for a sweep whose points must not depend on a preset
  // folder: the spec hash then covers the hardware).
  ConfigNode system_inline() const;
};

// The default preset name of a split: <coefficients>-<mode>-l<link>-s<sram>, e.g.
// h100-4n-area-l0.05-s0.1.
std::string design_point_name(const std::string& coefficients_name, const DesignSplit& s);

// Emits the split. InputError when the split is outside the coefficients' budgets (area and
// power, DesignPoint tolerance), when the base GPU or host preset is unknown, or when the host
// system has no PCIe host link to replace.
EmittedDesign emit_design(const DesignCoefficients& c, const DesignSplit& s,
                          const DesignEmitOptions& o);

}  // namespace kappasim
