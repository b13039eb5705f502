#include "memory/nvme_drive_spec.hpp"

#include <algorithm>

namespace kappasim {

double NvmeDriveSpec::link_Bps() const { return rate_per_lane_Tps * lanes / 8.0 * 128.0 / 130.0; }

double NvmeDriveSpec::read_Bps(double request_bytes) const {
  return std::min({seq_read_Bps, read_iops * request_bytes, link_Bps()});
}

double NvmeDriveSpec::write_Bps(double request_bytes) const {
  return std::min({seq_write_Bps, write_iops * request_bytes, link_Bps()});
}

void NvmeDriveSpec::validate(const std::string& path) const {
  if (seq_read_Bps > link_Bps() * (1 + 1e-9))
    throw InputError(
        path + ".seq_read_bandwidth: " + format_quantity(seq_read_Bps, dim::bandwidth) +
        " exceeds the drive's PCIe link (" + format_quantity(link_Bps(), dim::bandwidth) + ")");
}

}  // namespace kappasim
