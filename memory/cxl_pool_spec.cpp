#include "memory/cxl_pool_spec.hpp"

#include <algorithm>
#include <numeric>

namespace kappasim {

namespace {
// The host<->switch link as an expander's link of `lanes` lanes: the same PHY and flit arithmetic
// (CxlExpanderSpec::link_Bps) and the same checks on its framing and width.
CxlExpanderSpec host_link(const CxlPoolSpec& p, int lanes) {
  CxlExpanderSpec l;
  l.rate_per_lane_Tps = p.rate_per_lane_Tps;
  l.lanes = lanes;
  l.flit_bytes = p.flit_bytes;
  l.flit_data_bytes = p.flit_data_bytes;
  l.encoding_data = p.encoding_data;
  l.encoding_total = p.encoding_total;
  return l;
}
}  // namespace

double CxlPoolSpec::port_Bps(int lanes) const { return host_link(*this, lanes).link_Bps(); }

void CxlPoolSpec::validate(const std::string& path) const {
  device.validate(path + ".device");
  host_link(*this, 1).validate(path);  // the flit and line code (one lane: any width passes)
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
