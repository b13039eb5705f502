#include "interconnects/link_spec.hpp"

namespace kappasim {

const std::vector<std::pair<const char*, LinkType>>& LinkSpec::type_names() {
  static const std::vector<std::pair<const char*, LinkType>> n = {
      {"pcie", LinkType::Pcie}, {"c2c", LinkType::C2c}, {"hbm_tier", LinkType::HbmTier}};
  return n;
}

double LinkSpec::per_direction_bandwidth() const {
  if (type == LinkType::Pcie) return lanes * rate_per_lane_Tps * encoding_data / encoding_total / 8.0;
  return bandwidth_per_direction_Bps.value_or(0);
}

void LinkSpec::validate(const std::string& path) const {
  if (type != LinkType::Pcie) return;
  if (lanes != 1 && lanes != 2 && lanes != 4 && lanes != 8 && lanes != 16)
    throw InputError(path + ".lanes: a PCIe link has 1, 2, 4, 8 or 16 lanes, got " +
                     std::to_string(lanes));
  if (encoding_data > encoding_total)
    throw InputError(path + ".encoding_data: payload (" + format_number(encoding_data) +
                     ") cannot exceed the encoding unit (" + format_number(encoding_total) + ")");
}

}  // namespace kappasim
