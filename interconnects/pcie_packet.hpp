// Packet-level model of ONE PCIe link between the host (root complex + host memory) and ONE GPU,
// both directions. It exists to validate the flow-level fabric on small cases: it moves each
// transfer as the real sequence of TLPs and DLLPs, one at a time, and the flow model's
// bandwidths (interconnects/pcie_protocol) must come out of it by themselves.
//
// What it models
//  - Each direction is a serial resource sending one TLP or DLLP at a time at
//    wire_Bps = raw_Bps · usable_fraction (line encoding, then SKP ordered sets as a rate cut).
//  - H2D (DmaRead / SmRead): the GPU issues MRd requests upstream (4-DW header, no payload) of
//    max_read_request (DMA) or sm_access (SM) bytes, holding one tag each; at most
//    max_outstanding_reads tags are held by the GPU at once, shared by all its read transfers.
//    Completions become ready at the root complex round_trip_latency after the MRd has arrived,
//    and go downstream as ceil(req / read_completion) CplD TLPs (3-DW header). A tag is freed
//    when the request's last completion has arrived. So latency is applied once per request:
//    request serialisation + latency + completion serialisation (+ queueing on either wire).
//  - SmRead with TransferRequest::sm_inflight_bytes > 0: the copy kernel's loads keep at most
//    floor(sm_inflight_bytes / sm_access) requests of that transfer in flight (its SMs' load
//    slots), on top of the shared tags: Little's law comes out of the packets by itself.
//  - D2H (DmaWrite / SmWrite): posted MWr TLPs (4-DW header) of max_payload or sm_access bytes,
//    limited by a receiver credit of `posted_credit_bytes`; a TLP's credit is consumed when it
//    starts and returned `credit_return_s` after it has arrived.
//  - ACK DLLPs: one per tlps_per_ack TLPs received, sent the opposite way, with priority over
//    TLPs on that wire.
//  - Arbitration: round robin, one TLP per turn, among the transfers that have a TLP ready on
//    a direction (several SC_THREADs calling transfer() at once contend this way).
//  - A transfer ends when its last payload byte has arrived (last CplD at the GPU, last MWr at
//    the root complex); r.start_s / r.end_s are filled.
// What it ignores
//  - Host memory, the root complex and the GPU are infinitely fast apart from the read round
//    trip; no wire propagation delay for writes; no UpdateFC DLLPs (credits return after a fixed
//    delay); no replay buffer, NAKs or errors; no L0s/L1 power states; no EDS tokens before SKP
//    ordered sets; buffers are assumed RCB-aligned (every completion but the last is full);
//    pageable host memory (r.pinned) is treated as pinned; r.gpu is ignored (one GPU).
// Cost: one SC_THREAD per direction, one activation per TLP/DLLP sent plus one per wake-up on
// a pending completion, a tag or a credit; no process or event per TLP. For a DMA read that is
// about 12,800 TLPs/DLLPs per MiB (8192 CplD + 2048 MRd + 2560 ACKs), ≈ 14,900 activations.
// The LinkModule socket `in` must be bound (multi_passthrough_target_socket needs one binding).
// Sources: the protocol parameters of presets/links/pcieN.yaml (see docs/pcie-model.md).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "interconnects/link_model.hpp"
#include "interconnects/pcie_protocol.hpp"

namespace kappasim {

struct PciePacketOptions {
  // Receiver credit for posted writes (MWr header + data), in payload bytes. The default is
  // deliberately generous (1 MiB ≫ wire rate × credit_return_s ≈ 60 KB at Gen5), so writes are
  // wire-limited unless a test or sweep lowers it. [assumption]
  double posted_credit_bytes = 1024.0 * 1024.0;
  // Delay from a MWr's arrival to the return of its credit; < 0 means round_trip_latency.
  // [assumption: the root complex frees a posted buffer as late as it answers a read]
  double credit_return_s = -1;
  // Copy-kernel reads without their own TransferRequest::sm_inflight_bytes use this; 0 (the
  // default, as the flow fabric): no bound but the tags.
  double sm_inflight_bytes = 0;
};

struct PcieDirectionStats {
  double wire_bytes = 0;          // TLP + DLLP bytes sent (SKP ordered sets not included)
  double payload_bytes = 0;       // payload bytes carried by TLPs
  std::uint64_t mrd_tlps = 0;     // read requests
  std::uint64_t cpl_tlps = 0;     // completions with data
  std::uint64_t mwr_tlps = 0;     // posted writes
  std::uint64_t dllps = 0;        // ACK DLLPs
  std::uint64_t activations = 0;  // times this direction's thread resumed
  double busy_s = 0;              // time spent serialising
};

struct PciePacketStats {
  PcieDirectionStats down;  // host -> GPU
  PcieDirectionStats up;    // GPU -> host
  std::uint64_t transfers = 0;
};

class PciePacketLink : public LinkModule {
 public:
  PciePacketLink(const sc_core::sc_module_name& name, const PcieProtocol& p,
                 const PciePacketOptions& opts = {});
  ~PciePacketLink() override;

  // Blocking: call from an SC_THREAD. CopyPath::Local is rejected (InputError): no HBM here.
  void transfer(TransferRequest& r) override;
  // Non-blocking: one dynamic thread per transfer runs transfer() (LinkModule::start_by_thread).
  void start(TransferRequest& r, TransferGroup& g, double delay_s = 0) override {
    start_by_thread(r, g, delay_s);
  }
  double latency_s(int gpu, Direction dir, CopyPath path, bool pinned) const override;
  // The wire rate over the op's wire cost, the read-tag limit for reads and, for copy-kernel
  // reads, Little's law on the default in-flight bytes (PciePacketOptions::sm_inflight_bytes).
  // InputError for CopyPath::Local.
  double solo_rate_Bps(int gpu, Direction dir, CopyPath path, bool pinned) const override;
  std::string fidelity() const override { return "packet"; }

  const PciePacketStats& stats() const { return m_stats; }
  const PcieProtocol& protocol() const { return m_p; }

 private:
  struct Chunk {  // one completion waiting at the root complex
    sc_core::sc_time ready;
    double bytes;
    bool last_of_request;
  };
  struct Flow {  // one transfer in progress
    TransferRequest* req = nullptr;
    PcieOp op = PcieOp::DmaRead;
    double total = 0;
    double issued = 0;     // reads: bytes requested; writes: bytes sent
    double delivered = 0;  // payload bytes arrived at the destination
    std::deque<Chunk> completions;
    // Copy-kernel reads: requests the kernel's loads may keep in flight (Little's law; from
    // TransferRequest::sm_inflight_bytes / sm_access), and how many are in flight now.
    double max_inflight = 0;  // 0: no bound beyond the read tags
    double inflight = 0;
    bool finished = false;
    sc_core::sc_event done;
  };
  struct Credit {
    sc_core::sc_time at;
    double bytes;
  };
  enum class Kind { None, Dllp, MRd, CplD, MWr };
  struct Item {
    Kind kind = Kind::None;
    Flow* flow = nullptr;
    double payload = 0;
    double wire = 0;
    bool last_of_request = false;
  };
  struct Wire {
    sc_core::sc_event wake;
    std::size_t rr = 0;             // round-robin position among flows
    std::uint64_t tlps_to_ack = 0;  // TLPs received from the other direction
    std::uint64_t acks_sent = 0;    // ACK DLLPs this direction has sent for them
    double busy_until_s = 0;        // exact (unrounded) end of the last serialisation
  };

  void down_thread();
  void up_thread();
  bool pick_down(Item& it, sc_core::sc_time& next_ready);
  bool pick_up(Item& it, sc_core::sc_time& next_ready);
  void deliver_down(const Item& it);
  void deliver_up(const Item& it);
  void run(Wire& w, PcieDirectionStats& st, bool down);
  void send(Wire& w, PcieDirectionStats& st, const Item& it);
  bool ack_due(const Wire& w) const;
  void reclaim_credits();
  void finish(Flow& f);

  PcieProtocol m_p;
  PciePacketOptions m_opts;
  double m_wire_Bps;
  sc_core::sc_time m_rtt;
  sc_core::sc_time m_credit_return;
  std::vector<Flow*> m_flows;  // in arrival order
  double m_tags_free;
  double m_credit_free;
  std::deque<Credit> m_credit_returns;
  Wire m_down, m_up;
  PciePacketStats m_stats;
};

}  // namespace kappasim
