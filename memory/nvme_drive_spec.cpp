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

namespace {
constexpr double kTol = 1 + 1e-9;  // datasheet figures given exactly at a bound pass
}

void NvmeDriveSpec::validate(const std::string& path) const {
  if (lanes != 1 && lanes != 2 && lanes != 4 && lanes != 8 && lanes != 12 && lanes != 16 &&
      lanes != 32)
    throw InputError(path + ".lanes: a PCIe link has 1, 2, 4, 8, 12, 16 or 32 lanes, got " +
                     std::to_string(lanes));
  const auto over_link = [&](const char* key, double v) {
    if (v > link_Bps() * kTol)
      throw InputError(path + "." + key + ": " + format_quantity(v, dim::bandwidth) +
                       " exceeds the drive's PCIe link (" +
                       format_quantity(link_Bps(), dim::bandwidth) + " = rate_per_lane × " +
                       std::to_string(lanes) + " lanes / 8 × 128/130)");
  };
  over_link("seq_read_bandwidth", seq_read_Bps);
  over_link("seq_write_bandwidth", seq_write_Bps);
  // Random IOPS at io_size is a small-request figure: as bytes/s it cannot beat the drive's
  // sequential (large-request) figure; a datasheet that seems to is a unit slip (KIOPS, KiB).
  const auto iops_vs_seq = [&](const char* key, double iops, const char* seq_key, double seq) {
    if (iops * io_bytes > seq * kTol)
      throw InputError(path + "." + key + ": " + format_quantity(iops, dim::none) + " IOPS × " +
                       format_quantity(io_bytes, dim::bytes) + " = " +
                       format_quantity(iops * io_bytes, dim::bandwidth) + " exceeds " + seq_key +
                       " (" + format_quantity(seq, dim::bandwidth) +
                       "); random requests of io_size cannot outrun sequential ones");
  };
  iops_vs_seq("read_iops", read_iops, "seq_read_bandwidth", seq_read_Bps);
  iops_vs_seq("write_iops", write_iops, "seq_write_bandwidth", seq_write_Bps);
  // Little's law: with queue_depth reads in flight, each taking at least read_latency, the drive
  // completes at most queue_depth / read_latency reads per second.
  if (read_iops > queue_depth / read_latency_s * kTol)
    throw InputError(
        path + ".read_iops: " + format_quantity(read_iops, dim::none) +
        " IOPS needs more than queue_depth / read_latency = " + std::to_string(queue_depth) +
        " / " + format_quantity(read_latency_s, dim::time) + " = " +
        format_quantity(queue_depth / read_latency_s, dim::none) +
        " reads in flight per second (Little's law); raise queue_depth to the "
        "datasheet's figure or lower read_latency");
  if (usd_per_byte && *usd_per_byte > 1e-6)
    throw InputError(
        path + ".usd_per_byte: " + format_quantity(*usd_per_byte, dim::none) +
        " $/B is over $1000 per GB; give the price per byte (e.g. 1e-10 for $0.10/GB)");
}

}  // namespace kappasim
