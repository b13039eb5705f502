#include "interconnects/link_spec.hpp"

#include "interconnects/pcie_widths.hpp"

namespace kappasim {

const std::vector<std::pair<const char*, LinkType>>& LinkSpec::type_names() {
  static const std::vector<std::pair<const char*, LinkType>> n = {
      {"pcie", LinkType::Pcie}, {"c2c", LinkType::C2c}, {"hbm_tier", LinkType::HbmTier}};
  return n;
}

double LinkSpec::per_direction_bandwidth() const {
  if (type == LinkType::Pcie)
    return lanes * rate_per_lane_Tps * encoding_data / encoding_total / 8.0;
  return bandwidth_per_direction_Bps.value_or(0);
}

void LinkSpec::validate(const std::string& path) const {
  // links: a measured per-direction C2C rate cannot exceed the published per-direction figure.
  for (const auto& [key, v] :
       {std::pair<const char*, const std::optional<double>*>{"bandwidth_h2d", &bandwidth_h2d_Bps},
        {"bandwidth_d2h", &bandwidth_d2h_Bps}})
    if (*v && bandwidth_per_direction_Bps && !(**v > 0 && **v <= *bandwidth_per_direction_Bps))
      throw InputError(path + "." + key +
                       ": must be above 0 and at most bandwidth_per_direction (" +
                       format_number(*bandwidth_per_direction_Bps / 1e9) + " GB/s), got " +
                       format_number(**v / 1e9) + " GB/s");
  if (type != LinkType::Pcie) return;
  // Link widths the PCIe Base Specification defines (the Link Capabilities register's Maximum
  // Link Width encodings: x1, x2, x4, x8, x12, x16, x32; issue 12.12, docs/hardware-sources.md).
  if (!valid_pcie_link_width(lanes))
    throw InputError(path + ".lanes: a PCIe link has 1, 2, 4, 8, 12, 16 or 32 lanes, got " +
                     std::to_string(lanes));
  // Max_Read_Request_Size and Max_Payload_Size are 3-bit fields of the Device Control register
  // (PCI Express Base Specification, §7.5.3.4): 000b = 128 B ... 101b = 4096 B; the other
  // encodings are reserved. So each is a power of two from 128 B to 4096 B (issue 26.11).
  for (const auto& [key, v] : {std::pair<const char*, const std::optional<double>*>{
                                   "max_read_request_size", &max_read_request_size_bytes},
                               {"max_payload_size", &max_payload_size_bytes}}) {
    if (!*v) continue;
    const double x = **v;
    bool ok = false;
    for (double b = 128; b <= 4096; b *= 2) ok = ok || x == b;
    if (!ok)
      throw InputError(path + "." + key + ": PCIe allows 128, 256, 512, 1024, 2048 or 4096 B " +
                       "(the Device Control register's encodings), got " + format_number(x) + " B");
  }
  if (encoding_data > encoding_total)
    throw InputError(path + ".encoding_data: payload (" + format_number(encoding_data) +
                     ") cannot exceed the encoding unit (" + format_number(encoding_total) + ")");
}

void LinkSpec::require_sim(const std::string& path) const {
  if (type != LinkType::Pcie) return;
  std::string missing;
  auto need = [&](const std::optional<double>& v, const char* key) {
    if (!v) missing += (missing.empty() ? "" : ", ") + std::string(key);
  };
  need(max_payload_size_bytes, "max_payload_size");
  need(read_completion_size_bytes, "read_completion_size");
  need(max_read_request_size_bytes, "max_read_request_size");
  need(sm_read_size_bytes, "sm_read_size");
  need(tlp_overhead_3dw_bytes, "tlp_overhead_3dw");
  need(tlp_overhead_4dw_bytes, "tlp_overhead_4dw");
  need(dllp_bytes, "dllp_size");
  need(tlps_per_ack, "tlps_per_ack");
  need(skp_interval_blocks, "skp_interval_blocks");
  need(skp_bytes, "skp_size");
  need(round_trip_latency_s, "round_trip_latency");
  need(max_outstanding_reads, "max_outstanding_reads");
  if (!missing.empty())
    throw InputError(path + ": the simulator needs " + missing + " (link '" + name + "')");
}

}  // namespace kappasim

namespace kappasim {

void LinkSpec::apply_scale(ConfigReader& r) {
  if (!scale.bandwidth) return;
  const double f = *scale.bandwidth;
  const std::string why = "× " + format_number(f) + " (scale.bandwidth)";
  if (type == LinkType::Pcie) {
    rate_per_lane_Tps *= f;
    r.derive("rate_per_lane", why);
  } else if (bandwidth_per_direction_Bps) {
    *bandwidth_per_direction_Bps *= f;
    r.derive("bandwidth_per_direction", why);
  }
  // Measured per-direction rates (C2C) scale with the link they were measured on.
  if (bandwidth_h2d_Bps) {
    *bandwidth_h2d_Bps *= f;
    r.derive("bandwidth_h2d", why);
  }
  if (bandwidth_d2h_Bps) {
    *bandwidth_d2h_Bps *= f;
    r.derive("bandwidth_d2h", why);
  }
  scale = Scale{};
}

}  // namespace kappasim
