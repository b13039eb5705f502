// A host-to-GPU link as a datasheet describes it: PCIe (generation, lanes, rate per lane, line
// encoding), NVLink-C2C, or the unified-HBM tier (KV in HBM-class memory on package). PCIe's
// per-direction bandwidth is derived from rate × lanes × encoding, never typed in. Protocol
// efficiency (TLP headers, completions, DLLPs) and per-copy costs belong to the link timing
// models, not here: this is the "peak" the analytic κ uses.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/config.hpp"

namespace kappasim {

enum class LinkType { Pcie, C2c, HbmTier };

struct LinkSpec {
  std::string name;
  std::string display_name;
  LinkType type = LinkType::Pcie;
  // PCIe
  int generation = 0;
  double rate_per_lane_Tps = 0;  // transfers (bits per lane) per second
  double encoding_data = 0;      // e.g. 128 of 128b/130b; 236 of a 256 B Gen6 FLIT
  double encoding_total = 0;     // e.g. 130; 256
  int lanes = 16;
  // PCIe protocol (used by interconnects/pcie_protocol and the link timing models); optional so
  // analytic-only link files need not give them; require_sim() names what is missing.
  std::optional<double> max_payload_size_bytes;       // MPS: largest write TLP payload
  std::optional<double> read_completion_size_bytes;   // payload per completion of a DMA read
  std::optional<double> max_read_request_size_bytes;  // MRRS
  std::optional<double> sm_read_size_bytes;           // payload per read an SM issues (zero-copy)
  std::optional<double> tlp_overhead_3dw_bytes;       // framing + 3-DW header + LCRC
  std::optional<double> tlp_overhead_4dw_bytes;       // framing + 4-DW header + LCRC
  std::optional<double> dllp_bytes;                   // one ACK / UpdateFC DLLP on the wire
  std::optional<double> tlps_per_ack;                 // ACK coalescing
  std::optional<double> skp_interval_blocks;          // data blocks between SKP ordered sets
  std::optional<double> skp_bytes;                    // bytes of one SKP ordered set
  std::optional<double> round_trip_latency_s;         // read request -> first completion
  std::optional<double> max_outstanding_reads;        // read tags per requester
  // C2C and the HBM tier: the published per-direction figure
  std::optional<double> bandwidth_per_direction_Bps;
  std::optional<double> capacity_bytes;     // HBM tier only
  std::optional<double> energy_per_byte_J;  // read as "pJ/bit"
  // links: C2C sustained rate per direction where measured (host->GPU / GPU->host); the flow
  // model's link capacity of that direction, in place of bandwidth_per_direction.
  std::optional<double> sm_write_size_bytes;  // PCIe: payload per posted write SMs issue (D2H)
  std::optional<double> bandwidth_h2d_Bps;
  std::optional<double> bandwidth_d2h_Bps;

  // Per-direction bandwidth after line encoding (PCIe) or as published (C2C, HBM tier).
  double per_direction_bandwidth() const;

  static const std::vector<std::pair<const char*, LinkType>>& type_names();

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("preset name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.choice("type", type, type_names(), req("link type"));
    if (type == LinkType::Pcie) {
      v.integer("generation", generation, req("PCIe generation"));
      v.quantity("rate_per_lane", rate_per_lane_Tps, dim::transfer_rate,
                 req("raw signalling rate per lane"));
      v.number("encoding_data", encoding_data, req("payload bits (bytes) per encoding unit"));
      v.number("encoding_total", encoding_total, req("total bits (bytes) per encoding unit"));
      v.integer("lanes", lanes, opt("link width in lanes (1, 2, 4, 8, 12, 16 or 32)"));
      v.quantity("max_payload_size", max_payload_size_bytes, dim::bytes,
                 opt("MPS: largest write TLP payload"));
      v.quantity("read_completion_size", read_completion_size_bytes, dim::bytes,
                 opt("payload per completion returned for a DMA read"));
      v.quantity("max_read_request_size", max_read_request_size_bytes, dim::bytes,
                 opt("MRRS: largest read request"));
      v.quantity("sm_read_size", sm_read_size_bytes, dim::bytes,
                 opt("payload per read request issued by SMs (zero-copy)"));
      v.quantity("tlp_overhead_3dw", tlp_overhead_3dw_bytes, dim::bytes,
                 opt("wire bytes of a TLP beyond its payload, 3-DW header"));
      v.quantity("tlp_overhead_4dw", tlp_overhead_4dw_bytes, dim::bytes,
                 opt("wire bytes of a TLP beyond its payload, 4-DW header"));
      v.quantity("dllp_size", dllp_bytes, dim::bytes, opt("wire bytes of one DLLP"));
      v.quantity("tlps_per_ack", tlps_per_ack, dim::none,
                 opt("TLPs acknowledged per ACK DLLP", Range::AtLeastOne));
      v.quantity("skp_interval_blocks", skp_interval_blocks, dim::none,
                 opt("data blocks between SKP ordered sets", Range::AtLeastOne));
      v.quantity("skp_size", skp_bytes, dim::bytes,
                 opt("bytes of one SKP ordered set", Range::NonNegative));
      v.quantity("round_trip_latency", round_trip_latency_s, dim::time,
                 opt("read request to first completion", Range::NonNegative));
      v.quantity("max_outstanding_reads", max_outstanding_reads, dim::none,
                 opt("outstanding read requests (tags) per requester", Range::AtLeastOne));
      v.quantity(
          "sm_write_size", sm_write_size_bytes, dim::bytes,
          opt("payload per posted write issued by SMs (zero-copy D2H); default sm_read_size"));
    } else {
      v.quantity("bandwidth_per_direction", bandwidth_per_direction_Bps, dim::bandwidth,
                 req("bandwidth per direction"));
      if (type == LinkType::C2c) {  // links: measured per-direction rates
        v.quantity("bandwidth_h2d", bandwidth_h2d_Bps, dim::bandwidth,
                   opt("sustained host-to-GPU rate (measured), at most bandwidth_per_direction"));
        v.quantity("bandwidth_d2h", bandwidth_d2h_Bps, dim::bandwidth,
                   opt("sustained GPU-to-host rate (measured), at most bandwidth_per_direction"));
      }
    }
    if (type == LinkType::HbmTier)
      v.quantity("capacity", capacity_bytes, dim::bytes, opt("capacity of the HBM tier"));
    v.quantity("energy_per_bit", energy_per_byte_J, dim::energy_per_byte,
               opt("energy per bit moved"));
    // ---- relative knobs (issue 12.12): scale factors, applied once here as the spec is read ----
    if constexpr (!std::is_same_v<V, ConfigWriter>) {
      v.object("scale", scale, opt("what-if factors: {bandwidth: 2}"));
      if constexpr (std::is_same_v<V, ConfigReader>) apply_scale(v);
    }
  }
  // Relative knob (issue 12.12, presets/README.md "Relative knobs"): a factor on the
  // link's bandwidth per direction. PCIe: on rate_per_lane (a faster signalling rate; the
  // protocol's per-packet bytes and latencies are unchanged, so the timing models see it too);
  // C2C and the HBM tier: on bandwidth_per_direction. Not written back by --dump-config.
  struct Scale {
    std::optional<double> bandwidth;
    template <class V>
    void visit(V& v) {
      v.quantity("bandwidth", bandwidth, dim::none, opt("factor on the bandwidth per direction"));
    }
    void validate(const std::string&) const {}
  };
  Scale scale;
  void apply_scale(ConfigReader& r);
  void validate(const std::string& path) const;
  // Throws InputError naming every protocol field the simulator needs and this link lacks.
  void require_sim(const std::string& path) const;
};

}  // namespace kappasim
