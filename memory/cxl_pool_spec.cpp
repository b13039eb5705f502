#include "memory/cxl_pool_spec.hpp"

#include <algorithm>
#include <numeric>

namespace kappasim {

double CxlPoolSpec::port_Bps(int lanes) const {
  if (flit_bytes <= 0 || encoding_total <= 0) return 0;
  return rate_per_lane_Tps * lanes / 8.0 * encoding_data / encoding_total * flit_data_bytes /
         flit_bytes;
}

void CxlPoolSpec::validate(const std::string& path) const {
  device.validate(path + ".device");
  if (flit_data_bytes > flit_bytes)
    throw InputError(path + ".flit_data_bytes: a flit cannot carry more payload (" +
                     format_quantity(flit_data_bytes, dim::bytes) + ") than its size (" +
                     format_quantity(flit_bytes, dim::bytes) + ")");
  if (encoding_data > encoding_total)
    throw InputError(path + ".encoding_data: a line-code block cannot carry more payload bits (" +
                     format_quantity(encoding_data, dim::none) + ") than it has (" +
                     format_quantity(encoding_total, dim::none) + ")");
  const long need = long(host_ports) * port_lanes + long(devices) * device.lanes;
  if (need > switch_lanes)
    throw InputError(path + ".devices: " + std::to_string(host_ports) + " host port(s) x" +
                     std::to_string(port_lanes) + " + " + std::to_string(devices) + " device(s) x" +
                     std::to_string(device.lanes) + " need " + std::to_string(need) +
                     " lanes, more than the switch's " + std::to_string(switch_lanes) +
                     " (switch_lanes)");
}

std::vector<double> pool_port_shares(double capacity, const std::vector<double>& demands) {
  // Water-filling: hosts in order of demand; each takes min(its demand, what is left / the hosts
  // still unserved).
  std::vector<std::size_t> order(demands.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return demands[a] < demands[b]; });
  std::vector<double> share(demands.size(), 0.0);
  double left = capacity;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const double fair = left / static_cast<double>(order.size() - k);
    const double s = std::min(demands[order[k]], fair);
    share[order[k]] = s;
    left -= s;
  }
  return share;
}

}  // namespace kappasim
