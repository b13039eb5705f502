// The one interface behind which host<->GPU data movers of different fidelity sit: the fast
// flow-level fabric (interconnects/flow_fabric) and the packet-level PCIe model
// (interconnects/pcie_packet). A copy engine or copy kernel talks to either through the same
// TLM-2.0 target socket `in`: a tlm_generic_payload carrying a TransferExtension; b_transport
// returns when the transfer's last byte has arrived.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <string>
#include <utility>
#include <vector>

namespace kappasim {

enum class Direction { H2D, D2H };
// Who moves the bytes: a DMA copy engine (cudaMemcpyAsync; reads host memory in large requests
// returned as read-completion-size completions) or SMs running a copy kernel over pinned host
// memory (zero-copy; one small read per sm_read_size).
enum class CopyPath { Dma, Kernel };

struct TransferRequest {
  int gpu = 0;
  Direction dir = Direction::H2D;
  CopyPath path = CopyPath::Dma;
  double bytes = 0;   // payload bytes
  bool pinned = true; // host buffer pinned (false: pageable, staged through a CPU memcpy)
  // Copy-kernel reads (CopyPath::Kernel, H2D): payload bytes the kernel's loads keep in flight
  // (sm_inflight_bytes in pcie_protocol); Little's law bounds the read at this / round trip.
  // 0: the flow fabric uses the system GPU's default (all SMs, copy_kernel_load_width); the
  // packet model then applies no bound beyond its read tags.
  double sm_inflight_bytes = 0;
  // Filled by the model:
  sc_core::sc_time start, end;
  // Flow model, group transfers (FlowFabric::start_group): seconds the transfer moved with each
  // resource as its bottleneck (Topology resource index; -1: its rate cap).
  std::vector<std::pair<int, double>> bottleneck_s;
};

class TransferExtension : public tlm::tlm_extension<TransferExtension> {
 public:
  TransferRequest request;
  tlm::tlm_extension_base* clone() const override { return new TransferExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    request = static_cast<const TransferExtension&>(other).request;
  }
};

class LinkModel {
 public:
  virtual ~LinkModel() = default;
  // Blocking: call from an SC_THREAD; returns when the last payload byte has arrived.
  virtual void transfer(TransferRequest& r) = 0;
  virtual std::string fidelity() const = 0;  // "flow" or "packet"
};

// Base for a LinkModel that is an sc_module with the TLM target socket `in`.
class LinkModule : public sc_core::sc_module, public LinkModel {
 public:
  // Zero or more initiators: a model may be driven directly through transfer() as well.
  tlm_utils::multi_passthrough_target_socket<LinkModule, 32, tlm::tlm_base_protocol_types, 0,
                                             sc_core::SC_ZERO_OR_MORE_BOUND>
      in;

  explicit LinkModule(const sc_core::sc_module_name& name) : sc_core::sc_module(name), in("in") {
    in.register_b_transport(this, &LinkModule::b_transport);
  }

 private:
  void b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    sc_core::wait(delay);
    delay = sc_core::SC_ZERO_TIME;
    TransferExtension* ext = nullptr;
    gp.get_extension(ext);
    if (!ext) {
      gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
      return;
    }
    transfer(ext->request);
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
  }
};

}  // namespace kappasim
