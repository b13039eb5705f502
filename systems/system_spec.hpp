// A system: GPUs, the host link each GPU reaches host memory through, and host memory. Built
// from presets (presets/systems/*.yaml refer to gpu, link and host-memory presets by name).
// Topology (switches, sockets, which GPU hangs where) is added by the SystemC layer.
#pragma once

#include <string>

#include "core/config.hpp"
#include "interconnects/link_spec.hpp"
#include "memory/cxl_expander_spec.hpp"
#include "memory/cxl_pool_spec.hpp"
#include "memory/host_memory_spec.hpp"
#include "memory/nvme_drive_spec.hpp"
#include "models/gpu/gpu_spec.hpp"

namespace kappasim {

struct SystemSpec {
  std::string name;
  std::string display_name;
  std::string description;
  GpuSpec gpu;
  int gpus = 1;
  LinkSpec host_link;
  int gpus_sharing_host_link = 1;  // GPUs behind one host-link instance (GB200: 2 per C2C)
  HostMemorySpec host_memory;
  // Topology: GPU g attaches to socket g / gpus_per_socket (0 = all on socket 0); the host link
  // instance of GPU g is shared by GPUs with the same g / gpus_sharing_host_link.
  int gpus_per_socket = 0;
  // Remote: the socket after the GPU's own ((s + 1) mod sockets). FirstTouch: LMCache 0.3.5's
  // default (cudaHostAlloc from the worker thread, pages where that thread first ran); modelled
  // deterministically as the rank's own socket (assumption, docs/flow-model.md).
  enum class KvPool { Local, Socket0, Interleave, Remote, FirstTouch };
  KvPool kv_pool = KvPool::Local;  // where the pinned KV pool lives
  // links: per-rank placement, one name per GPU separated by commas ("local,remote,..."); empty:
  // every GPU uses kv_pool. Each TP rank has its own pinned pool (kv-stack-mechanisms.md §1.1).
  std::string kv_pool_per_gpu;
  // ---- KV tiers below host DRAM and the node's network (issue 14, docs/memory-tiers.md) ----
  // CXL Type-3 expanders (cxl_devices of them, spread over the sockets' root ports, device i on
  // socket i mod sockets) and NVMe drives (nvme_drives, drive i on socket i mod sockets); 0 =
  // none. nic_bandwidth: per GPU per direction (one NIC port per GPU, DGX-style), for
  // inter-node traffic (TP/EP/PP across nodes) and a remote KV store; absent: no NIC.
  CxlExpanderSpec cxl;
  int cxl_devices = 0;
  NvmeDriveSpec nvme;
  int nvme_drives = 0;
  // Issue 20 part 5: what the host can attach. cxl_lanes: CPU PCIe/CXL lanes the host gives its
  // CXL expanders (cxl_devices × cxl.lanes must fit); nvme_slots: drive bays. Each is required
  // once the system has such devices (0 = not given).
  int cxl_lanes = 0;
  int nvme_slots = 0;
  // Issue 25: a pooled CXL tier behind a CXL switch (docs/memory-tiers.md "Pooled CXL memory"):
  // the pool (preset kind cxl-pool) and the lanes of this host's link to the switch (0: no
  // pool). They count against cxl_lanes with the expanders'. In a cluster every node whose
  // system names a pool shares it (one pool per cluster).
  CxlPoolSpec cxl_pool;
  int cxl_pool_lanes = 0;
  bool has_cxl_pool() const { return cxl_pool_lanes > 0; }
  std::optional<double> nic_Bps;
  std::optional<double> nic_latency_s;  // one inter-node message's latency (RDMA write)
  static const std::vector<std::pair<const char*, KvPool>>& kv_pool_names();
  // The placement of GPU g's pool (kv_pool_per_gpu when given, else kv_pool). InputError naming
  // kv_pool_per_gpu when the list does not name one valid placement per GPU.
  KvPool pool_of_gpu(int g, const std::string& path = "system") const;
  int socket_of_gpu(int g) const { return gpus_per_socket > 0 ? g / gpus_per_socket : 0; }

  // Peak host->GPU bandwidth one GPU sees when all GPUs sharing its link load at once.
  double host_link_bandwidth_per_gpu() const {
    return host_link.per_direction_bandwidth() / gpus_sharing_host_link;
  }

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("preset name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.text("description", description, opt("what this system is"));
    v.object("gpu", gpu, req("the GPU"), "gpu");
    v.integer("gpus", gpus, opt("GPUs in the system", Range::AtLeastOne));
    v.object("host_link", host_link, req("the host-to-GPU link"), "link");
    v.integer("gpus_sharing_host_link", gpus_sharing_host_link,
              opt("GPUs sharing one host link", Range::AtLeastOne));
    v.object("host_memory", host_memory, req("host DRAM"), "host-memory");
    v.integer("gpus_per_socket", gpus_per_socket,
              opt("GPUs attached to each CPU socket (0: all on socket 0)", Range::NonNegative));
    v.choice("kv_pool", kv_pool, kv_pool_names(),
             opt("pinned KV pool placement: local (each GPU's own socket), socket0, interleave, "
                 "remote (the next socket), first-touch (LMCache default; as local)"));
    v.text("kv_pool_per_gpu", kv_pool_per_gpu,
           opt("per-rank pool placement, one kv_pool name per GPU, comma-separated"));
    // ---- issue 14: tiers below DRAM and the NIC. The device blocks and counts are written to
    // the effective config only when the system has devices (outputs of other systems unchanged).
    // cxl_lanes also bounds a pool's host port, so a pool system writes it too.
    if (!V::kWriting || cxl_devices > 0)
      v.integer("cxl_devices", cxl_devices, opt("CXL memory expanders", Range::NonNegative));
    if (!V::kWriting || cxl_devices > 0 || cxl_pool_lanes > 0)
      v.integer("cxl_lanes", cxl_lanes,
                opt("CPU lanes the host gives CXL expanders (cxl_devices x cxl.lanes must fit)",
                    Range::NonNegative));
    if (!V::kWriting || cxl_devices > 0)
      v.object("cxl", cxl, opt("the CXL Type-3 memory expander (preset kind cxl)"), "cxl");
    if (!V::kWriting || cxl_pool_lanes > 0) {
      v.integer("cxl_pool_lanes", cxl_pool_lanes,
                opt("lanes of this host's link to the CXL pool's switch (0: no pool)",
                    Range::NonNegative));
      v.object("cxl_pool", cxl_pool, opt("the pooled CXL tier (preset kind cxl-pool)"), "cxl-pool");
    }
    if (!V::kWriting || nvme_drives > 0) {
      v.integer("nvme_drives", nvme_drives, opt("NVMe drives holding KV", Range::NonNegative));
      v.integer("nvme_slots", nvme_slots,
                opt("NVMe drive bays of the host (nvme_drives must fit)", Range::NonNegative));
      v.object("nvme", nvme, opt("the NVMe drive (preset kind nvme)"), "nvme");
    }
    v.quantity("nic_bandwidth", nic_Bps, dim::bandwidth,
               opt("inter-node NIC bandwidth per GPU per direction"));
    v.quantity("nic_latency", nic_latency_s, dim::time,
               opt("one inter-node message's latency", Range::NonNegative));
  }
  void validate(const std::string& path) const;
};

}  // namespace kappasim
