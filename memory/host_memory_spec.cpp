#include "memory/host_memory_spec.hpp"

namespace kappasim {

double HostMemorySpec::socket_bandwidth() const {
  if (bandwidth_per_socket_Bps) return *bandwidth_per_socket_Bps;
  return channels_per_socket.value_or(0) * transfer_rate_Tps.value_or(0) *
         bus_width_bytes.value_or(0);
}

void HostMemorySpec::validate(const std::string& path) const {
  const bool derived = channels_per_socket || transfer_rate_Tps || bus_width_bytes;
  if (bandwidth_per_socket_Bps && derived)
    throw InputError(path +
                     ": give either bandwidth_per_socket or channels_per_socket + "
                     "transfer_rate + bus_width, not both");
  if (!bandwidth_per_socket_Bps && !(channels_per_socket && transfer_rate_Tps && bus_width_bytes))
    throw InputError(path +
                     ": missing DRAM bandwidth: give channels_per_socket, transfer_rate "
                     "and bus_width, or bandwidth_per_socket");
  if (sockets > 1 && !inter_socket_Bps)
    throw InputError(path + ": a host with " + std::to_string(sockets) +
                     " sockets needs inter_socket_bandwidth");
  if (usd_per_byte && *usd_per_byte > 1e-6)  // issue 14: a price per GB typed as per byte
    throw InputError(path + ".usd_per_byte: " + format_quantity(*usd_per_byte, dim::none) +
                     " $/B is over $1000 per GB; give the price per byte (e.g. 4e-9 for $4/GB)");
}

}  // namespace kappasim
