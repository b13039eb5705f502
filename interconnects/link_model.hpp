// The one interface behind which host<->GPU data movers of different fidelity sit: the fast
// flow-level fabric (systems/flow_fabric) and the packet-level PCIe model
// (interconnects/pcie_packet, one link; systems/packet_fabric, one per GPU; systems/link_backend
// builds either by name). Components
// (copy engines, copy kernels, GPU compute, the serving engine) talk to either through
//  - the blocking transfer(), or the TLM-2.0 target socket `in` (a tlm_generic_payload carrying
//    a TransferExtension; b_transport returns when the transfer's last byte has arrived);
//  - the non-blocking start() / start_group(): transfers join a TransferGroup whose `done`
//    event fires when every member has finished (no thread per transfer in the caller).
// The plain transfer data (Direction, CopyPath, TransferRequest) is SystemC-free:
// interconnects/transfer.hpp.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <systemc>
#include <tlm>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/pooled_spawn.hpp"
#include "core/sim_seconds.hpp"
#include "interconnects/transfer.hpp"

namespace kappasim {

class Topology;

class TransferExtension : public tlm::tlm_extension<TransferExtension> {
 public:
  TransferRequest request;
  tlm::tlm_extension_base* clone() const override { return new TransferExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    request = static_cast<const TransferExtension&>(other).request;
  }
};

// A set of non-blocking transfers waited on together. Members join with LinkModel::start (all
// in the same evaluation phase, before simulated time moves on); when the last one has
// finished, `finished` is set, `end_s` holds the time and `done` is notified (delta). The
// requests and the group must outlive that. A finished group may be reused.
struct TransferGroup {
  sc_core::sc_event done;
  bool finished = false;
  double end_s = 0;
  std::size_t left = 0;
  // Optional: called (with end_s) when the group finishes, after `done` is notified, from
  // the back end's process (e.g. a copy kernel returns its SMs). Must not destroy the group.
  std::function<void(double)> on_finished;

  // For back ends: one more member / one member finished at `now_s`.
  void add() {
    if (left == 0) finished = false;
    ++left;
  }
  void member_done(double now_s) {
    if (left == 0) return;
    if (--left == 0) {
      finished = true;
      end_s = now_s;
      done.notify(sc_core::SC_ZERO_TIME);
      if (on_finished) on_finished(now_s);
    }
  }
};

class LinkModel {
 public:
  virtual ~LinkModel() = default;
  // Blocking: call from an SC_THREAD; returns when the last payload byte has arrived
  // (r.start_s / r.end_s filled).
  virtual void transfer(TransferRequest& r) = 0;
  // Non-blocking: r joins g and starts `delay_s` from now (then pays its own first-byte latency
  // as transfer() would). r.start_s is the time it was started (now), r.end_s its last byte.
  virtual void start(TransferRequest& r, TransferGroup& g, double delay_s = 0) = 0;
  // Requests rs[0, n) that move in lockstep (GpuCompute::start_steps: a tensor-parallel group's
  // HBM flows of one step, same bytes and rate cap, one per GPU) join g and start now. A back end
  // that models HBM moves them as one flow crossing every request's path, at the rate of the
  // slowest, and ends them together; this default starts each on its own.
  virtual void start_lockstep(TransferRequest* rs, std::size_t n, TransferGroup& g) {
    for (std::size_t i = 0; i < n; ++i) start(rs[i], g, 0);
  }
  // Independent requests rs[0, n) join g, rs[i] starting delays_s[i] from now: start() of each
  // in order. A back end may take them in one call (the flow fabric queues a run of them due at
  // the same time as one entry; issue 24: a rank's stores, one copy per GPU, every step).
  virtual void start_many(TransferRequest* rs, std::size_t n, TransferGroup& g,
                          const double* delays_s) {
    for (std::size_t i = 0; i < n; ++i) start(rs[i], g, delays_s[i]);
  }
  // Starts every request of `rs` into g (g is reset first). An empty `rs` finishes g at once
  // (done notified in the next delta).
  void start_group(std::vector<TransferRequest>& rs, TransferGroup& g, double delay_s = 0) {
    g.finished = false;
    g.left = 0;
    if (rs.empty()) {
      g.finished = true;
      g.end_s = sim_now_seconds();
      g.done.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    for (TransferRequest& r : rs) start(r, g, delay_s);
  }
  // First-byte latency one transfer of this kind pays on an idle system (seconds).
  virtual double latency_s(int gpu, Direction dir, CopyPath path, bool pinned) const = 0;
  // Payload bytes/s one transfer of this kind gets alone on an idle system (its tightest
  // resource or own limit).
  virtual double solo_rate_Bps(int gpu, Direction dir, CopyPath path, bool pinned) const = 0;
  // The link capacity a run reports (summary link_capacity, the denominator of its link
  // utilisation): pinned host-DRAM transfers of this kind on GPU `gpu`. The engines ask the back
  // end they run on (issue 21: no second Topology beside it). Default: solo_rate_Bps.
  virtual double capacity_Bps(int gpu, Direction dir, CopyPath path) const {
    return solo_rate_Bps(gpu, dir, path, true);
  }
  // Whether this back end carries `r` (its endpoint, copy path, pinning). When not, `why` (if
  // given) gets what it cannot carry, e.g. "a transfer with endpoint 'cxl' (it models the PCIe
  // host link to host DRAM only)". Default: everything.
  virtual bool carries(const TransferRequest& r, std::string* why = nullptr) const {
    (void)r;
    (void)why;
    return true;
  }
  // The one answer to "can this back end carry this transfer" (issue 21): refusal() when
  // carries() says no. `context`: the config key that asks for such transfers (serving.tiers),
  // or empty. Back ends call it on every transfer they start; engines call it up front.
  void check_carries(const TransferRequest& r, const std::string& context = "") const {
    std::string why;
    if (!carries(r, &why)) throw refusal(fidelity(), why, context);
  }
  // The one error text for whatever a back end cannot carry (a transfer, a system, a node
  // count): "serving.link_fidelity: [<context> needs what ]the <fidelity> back end cannot carry
  // [: ]<what>; link_fidelity: flow carries it". The flow back end carries every endpoint,
  // system and node count the topology can describe.
  static InputError refusal(const std::string& fidelity, const std::string& what,
                            const std::string& context = "") {
    return InputError("serving.link_fidelity: " +
                      (context.empty()
                           ? "the " + fidelity + " back end cannot carry "
                           : context + " needs what the " + fidelity + " back end cannot carry: ") +
                      what + "; link_fidelity: flow carries it");
  }
  // The same two for a whole request, whatever its endpoint (issue 14: CXL, NVMe, peer GPU,
  // remote). Default: the host-DRAM figures (a back end that carries HostDram only rejects the
  // others when they are started).
  virtual double request_latency_s(const TransferRequest& r) const {
    return latency_s(r.gpu, r.dir, r.path, r.pinned);
  }
  virtual double request_solo_rate_Bps(const TransferRequest& r) const {
    return solo_rate_Bps(r.gpu, r.dir, r.path, r.pinned);
  }
  // Invariant check when the simulation is over (every transfer finished, bytes conserved);
  // throws std::logic_error naming what is wrong. Default: nothing to check.
  virtual void check_conservation() const {}
  // Whether to keep what check_conservation() compares (issue 24: a run without checks skips
  // the bookkeeping per transfer; check_conservation() then refuses). Default: kept. Call
  // before the first transfer.
  virtual void track_conservation(bool /*on*/) {}
  // The flow back end's resources (for stats and bottleneck reports); null for a back end that
  // has no Topology (packet).
  virtual const Topology* topology() const { return nullptr; }
  // Whether CopyPath::Local transfers (on-GPU HBM traffic) are carried and contend here; false:
  // the caller times them itself (GpuCompute then waits its compute time alone).
  virtual bool models_hbm() const { return false; }
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

 protected:
  // start() for a back end whose transfers are blocking calls: one dynamic thread per transfer
  // waits `delay_s`, runs transfer(r) and reports to g.
  void start_by_thread(TransferRequest& r, TransferGroup& g, double delay_s) {
    g.add();
    r.start_s = sim_now_seconds();
    TransferRequest* rp = &r;
    TransferGroup* gp = &g;
    spawn_pooled([this, rp, gp, delay_s]() {
      const double issued = rp->start_s;
      if (delay_s > 0) sc_core::wait(sc_core::sc_time(delay_s, sc_core::SC_SEC));
      transfer(*rp);
      rp->start_s = issued;
      gp->member_done(sim_now_seconds());
    });
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
