#include "memory/cxl_expander_spec.hpp"

#include <algorithm>

namespace kappasim {

double CxlExpanderSpec::link_Bps() const {
  if (flit_bytes <= 0) return 0;
  return rate_per_lane_Tps * lanes / 8.0 * flit_data_bytes / flit_bytes;
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
}

}  // namespace kappasim
