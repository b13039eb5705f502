// A host-to-GPU link as a datasheet describes it: PCIe (generation, lanes, rate per lane, line
// encoding), NVLink-C2C, or the unified-HBM tier (KV in HBM-class memory on package). PCIe's
// per-direction bandwidth is derived from rate × lanes × encoding, never typed in. Protocol
// efficiency (TLP headers, completions, DLLPs) and per-copy costs belong to the link timing
// models, not here: this is the "peak" the analytic κ uses.
#pragma once

#include <optional>
#include <string>

#include "core/config.hpp"

namespace kappasim {

enum class LinkType { Pcie, C2c, HbmTier };

struct LinkSpec {
  std::string name;
  std::string display_name;
  LinkType type = LinkType::Pcie;
  // PCIe
  int generation = 0;
  double rate_per_lane_Tps = 0;  // transfers (bits per lane) per second
  double encoding_data = 0;      // e.g. 128 of 128b/130b; 236 of a 256 B Gen6 FLIT
  double encoding_total = 0;     // e.g. 130; 256
  int lanes = 16;
  // C2C and the HBM tier: the published per-direction figure
  std::optional<double> bandwidth_per_direction_Bps;
  std::optional<double> capacity_bytes;       // HBM tier only
  std::optional<double> energy_per_byte_J;    // read as "pJ/bit"

  // Per-direction bandwidth after line encoding (PCIe) or as published (C2C, HBM tier).
  double per_direction_bandwidth() const;

  static const std::vector<std::pair<const char*, LinkType>>& type_names();

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("preset name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.choice("type", type, type_names(), req("link type"));
    if (type == LinkType::Pcie) {
      v.integer("generation", generation, req("PCIe generation"));
      v.quantity("rate_per_lane", rate_per_lane_Tps, dim::transfer_rate,
                 req("raw signalling rate per lane"));
      v.number("encoding_data", encoding_data, req("payload bits (bytes) per encoding unit"));
      v.number("encoding_total", encoding_total, req("total bits (bytes) per encoding unit"));
      v.integer("lanes", lanes, opt("link width in lanes (1, 2, 4, 8 or 16)"));
    } else {
      v.quantity("bandwidth_per_direction", bandwidth_per_direction_Bps, dim::bandwidth,
                 req("bandwidth per direction"));
    }
    if (type == LinkType::HbmTier)
      v.quantity("capacity", capacity_bytes, dim::bytes, opt("capacity of the HBM tier"));
    v.quantity("energy_per_bit", energy_per_byte_J, dim::energy_per_byte,
               opt("energy per bit moved"));
  }
  void validate(const std::string& path) const;
};

}  // namespace kappasim
