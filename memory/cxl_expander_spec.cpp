#include "memory/cxl_expander_spec.hpp"

#include <algorithm>

namespace kappasim {

double CxlExpanderSpec::link_Bps() const {
  if (flit_bytes <= 0 || encoding_total <= 0) return 0;
  return rate_per_lane_Tps * lanes / 8.0 * encoding_data / encoding_total * flit_data_bytes /
         flit_bytes;
}

double CxlExpanderSpec::read_Bps() const {
  return media_read_Bps ? std::min(link_Bps(), *media_read_Bps) : link_Bps();
}

double CxlExpanderSpec::write_Bps() const {
  return media_write_Bps ? std::min(link_Bps(), *media_write_Bps) : link_Bps();
}

void CxlExpanderSpec::validate(const std::string& path) const {
  if (flit_data_bytes > flit_bytes)
    throw InputError(path + ".flit_data_bytes: a flit cannot carry more payload (" +
                     format_quantity(flit_data_bytes, dim::bytes) + ") than its size (" +
                     format_quantity(flit_bytes, dim::bytes) + ")");
  if (encoding_data > encoding_total)
    throw InputError(path + ".encoding_data: a line-code block cannot carry more payload bits (" +
                     format_quantity(encoding_data, dim::none) + ") than it has (" +
                     format_quantity(encoding_total, dim::none) + ")");
  // CXL rides the PCIe PHY, so its widths are PCIe's (the Link Capabilities register's widths;
  // CXL 2.0 devices are x4, x8 or x16).
  if (lanes != 1 && lanes != 2 && lanes != 4 && lanes != 8 && lanes != 12 && lanes != 16 &&
      lanes != 32)
    throw InputError(path +
                     ".lanes: a CXL (PCIe PHY) link has 1, 2, 4, 8, 12, 16 or 32 lanes, got " +
                     std::to_string(lanes));
  if (usd_per_byte && *usd_per_byte > 1e-6)
    throw InputError(path + ".usd_per_byte: " + format_quantity(*usd_per_byte, dim::none) +
                     " $/B is over $1000 per GB; give the price per byte (e.g. 5e-9 for $5/GB)");
}

}  // namespace kappasim
