#include "systems/system_spec.hpp"

#include <algorithm>

#include <sstream>

namespace kappasim {

const std::vector<std::pair<const char*, SystemSpec::KvPool>>& SystemSpec::kv_pool_names() {
  static const std::vector<std::pair<const char*, KvPool>> n = {
      {"local", KvPool::Local},
      {"socket0", KvPool::Socket0},
      {"interleave", KvPool::Interleave},
      {"remote", KvPool::Remote},
      {"first-touch", KvPool::FirstTouch}};
  return n;
}

namespace {
std::vector<std::string> split_pools(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? std::string() : item.substr(b, e - b + 1));
  }
  if (!text.empty() && text.back() == ',') out.emplace_back();
  return out;
}
}  // namespace

SystemSpec::KvPool SystemSpec::pool_of_gpu(int g, const std::string& path) const {
  if (kv_pool_per_gpu.empty()) return kv_pool;
  const std::vector<std::string> items = split_pools(kv_pool_per_gpu);
  if (static_cast<int>(items.size()) != gpus)
    throw InputError(path + ".kv_pool_per_gpu: expected one placement per GPU (" +
                     std::to_string(gpus) + "), got " + std::to_string(items.size()) + " in \"" +
                     kv_pool_per_gpu + "\"");
  const std::string& name = items.at(static_cast<std::size_t>(g));
  std::string valid;
  for (const auto& [n, v] : kv_pool_names()) {
    if (name == n) return v;
    valid += (valid.empty() ? "" : ", ") + std::string(n);
  }
  throw InputError(path + ".kv_pool_per_gpu: GPU " + std::to_string(g) + ": unknown placement '" +
                   name + "' (valid: " + valid + ")");
}

void SystemSpec::validate(const std::string& path) const {
  if (gpus_sharing_host_link > gpus)
    throw InputError(path + ".gpus_sharing_host_link: " + std::to_string(gpus_sharing_host_link) +
                     " GPUs cannot share a link in a system of " + std::to_string(gpus));
  if (gpus_per_socket > 0 && (gpus + gpus_per_socket - 1) / gpus_per_socket > host_memory.sockets)
    throw InputError(path + ".gpus_per_socket: " + std::to_string(gpus) + " GPUs at " +
                     std::to_string(gpus_per_socket) + " per socket need more than the " +
                     std::to_string(host_memory.sockets) + " sockets of the host");
  for (int g = 0; g < gpus; ++g) pool_of_gpu(g, path);  // links: a bad per-rank list fails here
  // Issue 14: a device count needs its device block (an unset block has capacity 0, since
  // capacity is a required key of a given block), and the block must be a consistent device.
  if (cxl_devices > 0) {
    if (!(cxl.capacity_bytes > 0))
      throw InputError(path + ".cxl: cxl_devices = " + std::to_string(cxl_devices) +
                       " needs a cxl block (a cxl preset such as samsung-cmm-d-256gb, or a map "
                       "with capacity, rate_per_lane, lanes, flit_bytes, flit_data_bytes)");
    cxl.validate(path + ".cxl");
    // Issue 20 part 5: the expanders' lanes must fit the lanes the host gives them.
    if (cxl_lanes < 1)
      throw InputError(path + ".cxl_lanes: cxl_devices = " + std::to_string(cxl_devices) +
                       " needs the CPU lanes the host gives CXL expanders (e.g. 64 for 8 x8 "
                       "devices; the host CPU's datasheet lane count less what its other "
                       "devices use)");
    const long long need = static_cast<long long>(cxl_devices) * cxl.lanes;
    if (need > cxl_lanes)
      throw InputError(path + ".cxl_devices: " + std::to_string(cxl_devices) + " x" +
                       std::to_string(cxl.lanes) + " CXL expanders need " + std::to_string(need) +
                       " lanes, more than the host's " + std::to_string(cxl_lanes) +
                       " (system.cxl_lanes); expected at most " +
                       std::to_string(cxl_lanes / cxl.lanes) + " devices");
  }
  // Issue 25: a pooled tier is the system's CXL tier (expanders or a pool, not both: one CXL
  // level in the KV hierarchy); its host link must fit the switch's port and the host's lanes.
  if (cxl_pool_lanes > 0) {
    if (!(cxl_pool.devices > 0))
      throw InputError(path + ".cxl_pool: cxl_pool_lanes = " + std::to_string(cxl_pool_lanes) +
                       " needs a cxl_pool block (a cxl-pool preset such as "
                       "h3-falcon-c5022-cz120, or a map with device, devices, host_ports, ...)");
    cxl_pool.validate(path + ".cxl_pool");
    if (cxl_devices > 0)
      throw InputError(path + ".cxl_pool: a system has one CXL tier: its cxl_devices (" +
                       std::to_string(cxl_devices) +
                       " direct-attached expanders) or a cxl_pool, not both");
    if (cxl_pool_lanes > cxl_pool.port_lanes)
      throw InputError(path + ".cxl_pool_lanes: x" + std::to_string(cxl_pool_lanes) +
                       " is wider than the pool switch's host ports (x" +
                       std::to_string(cxl_pool.port_lanes) + ", cxl_pool.port_lanes)");
    // cxl_lanes: checked when given (the effective config does not write it for a pool yet).
    if (cxl_lanes > 0 && cxl_pool_lanes > cxl_lanes)
      throw InputError(path + ".cxl_pool_lanes: an x" + std::to_string(cxl_pool_lanes) +
                       " link to the CXL pool needs more lanes than the host's " +
                       std::to_string(cxl_lanes) + " (system.cxl_lanes)");
  }
  if (nvme_drives > 0) {
    if (!(nvme.capacity_bytes > 0))
      throw InputError(path + ".nvme: nvme_drives = " + std::to_string(nvme_drives) +
                       " needs an nvme block (an nvme preset such as samsung-pm1743-3840gb, or a "
                       "map with capacity, rate_per_lane, seq_read_bandwidth, ...)");
    nvme.validate(path + ".nvme");
    if (nvme_slots < 1)
      throw InputError(path + ".nvme_slots: nvme_drives = " + std::to_string(nvme_drives) +
                       " needs the host's NVMe drive bays (e.g. 8 on a DGX H100)");
    if (nvme_drives > nvme_slots)
      throw InputError(path + ".nvme_drives: " + std::to_string(nvme_drives) +
                       " drives exceed the host's " + std::to_string(nvme_slots) +
                       " drive bays (system.nvme_slots)");
  }
  // Issue 26.11: the topology attaches every CXL expander and NVMe drive to its socket's root
  // ports with a link of its own, so their lanes come out of the sockets' PCIe lanes. No server
  // CPU has more than 128 per socket (AMD EPYC 7002-9005: 128 lanes per CPU, AnandTech's EPYC
  // 7002 review; a 2P EPYC system exposes 128-160 in all; Intel Xeon 8480C: 80, Intel ark), so
  // more device lanes than 128 x sockets cannot be built.
  constexpr long kMaxRootLanesPerSocket = 128;
  const long device_lanes = (cxl_devices > 0 ? long(cxl_devices) * cxl.lanes : 0) +
                            (nvme_drives > 0 ? long(nvme_drives) * nvme.lanes : 0);
  const long root_lanes = kMaxRootLanesPerSocket * std::max(1, host_memory.sockets);
  if (device_lanes > root_lanes)
    throw InputError(
        path +
        (nvme_drives > 0 && long(nvme_drives) * nvme.lanes > long(cxl_devices) * cxl.lanes
             ? ".nvme_drives"
             : ".cxl_devices") +
        ": " + std::to_string(cxl_devices) + " CXL device(s) x" + std::to_string(cxl.lanes) +
        " + " + std::to_string(nvme_drives) + " NVMe drive(s) x" + std::to_string(nvme.lanes) +
        " need " + std::to_string(device_lanes) + " PCIe lanes, more than the " +
        std::to_string(root_lanes) + " a " + std::to_string(host_memory.sockets) +
        "-socket host can have (at most 128 root-port lanes per socket: AMD EPYC; each device "
        "has its own link into its socket)");
  if (nic_latency_s && !nic_Bps)
    throw InputError(path + ".nic_latency: given without nic_bandwidth (a NIC needs both)");
}

}  // namespace kappasim
