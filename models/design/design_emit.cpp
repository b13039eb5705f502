#include "models/design/design_emit.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/units.hpp"
#include "models/design/host_bound.hpp"

namespace kappasim {

namespace {

// A scalar with a `derived:` provenance; `text` is written so that it parses back to exactly
// the value (shortest round-trip digits, SI base unit).
ConfigNode derived(const std::string& text, const std::string& why) {
  ConfigNode n = ConfigNode::make_scalar(text);
  n.provenance = Provenance{"derived", why, "", ""};
  return n;
}
ConfigNode assumed(const std::string& text, const std::string& why) {
  ConfigNode n = ConfigNode::make_scalar(text);
  n.provenance = Provenance{"assumption", why, "", ""};
  return n;
}
std::string num(double v) { return format_number(v); }

const ConfigNode& preset(const std::string& kind, const std::string& name, const char* option) {
  const ConfigNode* n = PresetRegistry::instance().find(kind, name);
  if (!n) {
    const auto names = PresetRegistry::instance().names(kind);
    const std::string near = nearest(name, names);
    throw InputError(std::string(option) + ": unknown " + kind + " preset '" + name + "'" +
                     (near.empty() ? std::string() : " (did you mean '" + near + "'?)"));
  }
  return *n;
}

// The scalar value of a preset key, whether written plainly or as {value: X, kind: "..."}.
double preset_number(const ConfigNode& root, const std::string& key, const Dimension& d,
                     const std::string& what) {
  const ConfigNode* n = root.find(key);
  if (!n || !n->is_scalar()) throw InputError(what + ": has no scalar '" + key + "'");
  return parse_quantity_as(n->scalar, d);
}

}  // namespace

ConfigNode EmittedDesign::system_inline() const {
  ConfigNode s = system;
  s.set("gpu", gpu);
  return s;
}

std::string design_point_name(const std::string& coefficients_name, const DesignSplit& s) {
  const auto f = s.fractions();
  return coefficients_name + "-" + (s.mode == BudgetMode::Area ? "area" : "power") + "-l" +
         num(f[1]) + "-s" + num(f[2]);
}

EmittedDesign emit_design(const DesignCoefficients& c, const DesignSplit& s,
                          const DesignEmitOptions& o) {
  EmittedDesign e;
  // Unknown names first, so the message names the option the user got wrong.
  (void)preset("gpu", o.base_gpu, "--base");
  if (o.host != "gb200" && o.host != "unlimited" && !o.host.empty())
    (void)preset("system", o.host, "--host");
  e.point = design_point(c, s);
  const DesignPoint& d = e.point;
  const char* mode = s.mode == BudgetMode::Area ? "area" : "power";
  if (!d.within_area_budget())
    throw InputError("design split: needs " + num(d.total_area_m2() * 1e6) +
                     " mm^2, more than the area budget of " + num(d.budget_area_m2 * 1e6) +
                     " mm^2 (equal-" + mode + " split " + num(d.compute_fraction) + " / " +
                     num(d.link_fraction) + " / " + num(d.sram_fraction) +
                     "); infeasible: move budget from the link or SRAM to compute");
  if (!d.within_power_budget())
    throw InputError("design split: draws " + num(d.total_power_w()) +
                     " W, more than the power budget of " + num(d.budget_power_w) + " W (equal-" +
                     mode + " split " + num(d.compute_fraction) + " / " + num(d.link_fraction) +
                     " / " + num(d.sram_fraction) +
                     "); infeasible: move budget from the link or SRAM to compute");

  e.name = o.name.empty() ? design_point_name(o.coefficients_name, s) : o.name;
  // The name becomes file names under the preset folder (gpus/<name>.yaml, systems/<name>-<host>
  // .yaml): a plain file name only, so `../x` or `a/b` can never write outside the folder.
  const bool plain =
      !e.name.empty() && e.name.size() <= 128 && e.name[0] != '.' && e.name[0] != '-' &&
      e.name.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
  if (!plain)
    throw InputError("--name: '" + e.name +
                     "' is not a plain preset name (letters, digits, '.', '_', '-'; not starting "
                     "with '.' or '-'; at most 128 characters): it names files in the --out "
                     "folder");
  // The split in words, repeated in every provenance string so each value stands alone.
  const std::string split = "design " + o.coefficients_name + " (base die " + o.base_gpu +
                            ", equal-" + mode + " budget " +
                            (s.mode == BudgetMode::Area ? num(d.budget_area_m2 * 1e6) + " mm^2"
                                                        : num(d.budget_power_w) + " W") +
                            ", split compute " + num(d.compute_fraction) + " / link " +
                            num(d.link_fraction) + " / SRAM " + num(d.sram_fraction) +
                            "; models/design, kappasim design emit)";

  // ---- GPU ----------------------------------------------------------------------------------
  e.gpu = preset("gpu", o.base_gpu, "--base");
  const double scale = d.compute_flops / c.compute_flops;  // C / C0
  e.gpu.set("name", ConfigNode::make_scalar(e.name));
  e.gpu.set("display_name",
            ConfigNode::make_scalar(o.base_gpu + " die re-split: " + num(d.compute_flops / 1e12) +
                                    " TFLOP/s BF16, host PHY " + num(d.link_Bps / 1e9) +
                                    " GB/s, KV SRAM " + num(d.sram_bytes / 1e6) + " MB"));
  if (ConfigNode* pf = e.gpu.find("peak_flops"); pf && pf->is_map()) {
    for (auto& [dtype, v] : pf->entries) {
      if (!v.is_scalar()) continue;
      const double base = parse_quantity_as(v.scalar, dim::flop_rate);
      const double value = dtype == "bf16" ? d.compute_flops : base * scale;
      v = derived(num(value) + " FLOP/s",
                  dtype == "bf16" ? "dense BF16 peak of the " + split
                                  : o.base_gpu + " " + dtype + " peak " + num(base / 1e12) +
                                        " TFLOP/s x the SM array's scale C/C0 = " + num(scale) +
                                        " of the " + split);
    }
  }
  const double sm0 = preset_number(e.gpu, "sm_count", dim::none, "gpu preset " + o.base_gpu);
  const double sms = std::max(1.0, std::round(sm0 * scale));
  e.gpu.set("sm_count",
            derived(num(sms), o.base_gpu + " " + num(sm0) + " SMs x C/C0 = " + num(scale) +
                                  ", rounded (the SM array is what the "
                                  "compute fraction buys) of the " +
                                  split));
  e.gpu.set("tdp", derived(num(d.total_power_w()) + " W",
                           "fixed " + num(d.fixed_power_w) + " W + compute " +
                               num(d.compute_power_w) + " W + link PHY " + num(d.link_power_w) +
                               " W + SRAM " + num(d.sram_power_w) + " W of the " + split));
  if (e.gpu.find("idle_power")) {
    const double idle0 = preset_number(e.gpu, "idle_power", dim::power, "gpu preset " + o.base_gpu);
    // The PHY is powered at peak whether or not it carries data and the SRAM leaks: both are
    // always-on power. The base idle power already holds the base die's own PHY.
    const double idle = idle0 + (d.link_power_w - c.baseline_link_power()) + d.sram_power_w;
    e.gpu.set("idle_power",
              derived(num(idle) + " W",
                      o.base_gpu + " idle " + num(idle0) + " W + link PHY " + num(d.link_power_w) +
                          " W - base PHY " + num(c.baseline_link_power()) + " W + SRAM " +
                          num(d.sram_power_w) + " W (always-on) of the " + split));
  }

  // ---- system -------------------------------------------------------------------------------
  const std::string host = o.host.empty() ? std::string("dgx-h100") : o.host;
  e.system_name = e.name + "-" + host;
  const double lanes = 16;
  // rate x lanes x 128/130 / 8 = the design's PHY bandwidth per direction
  const double rate = d.link_Bps * 8.0 * 130.0 / 128.0 / lanes;
  ConfigNode link = ConfigNode::make_map();
  link.set("preset", ConfigNode::make_scalar("pcie5"));
  link.set("lanes",
           derived("16",
                   "the link model takes at most 16 lanes; the rate per lane "
                   "carries the width (the design's PHY = " +
                       num(d.link_Bps / (32e9 * 128.0 / 130.0 / 8.0)) + " PCIe 5.0 lanes)"));
  link.set("rate_per_lane",
           derived(num(rate) + " T/s", "the design's PHY " + num(d.link_Bps) +
                                           " B/s per direction x 8 x 130/128 / 16 lanes of the " +
                                           split));
  link.set("energy_per_bit", derived(num(2 * c.link_energy_per_byte_J / 8.0) + " J/bit",
                                     "both ends: 2 x the coefficients' GPU-end " +
                                         num(c.link_energy_per_byte_J / 8.0 * 1e12) +
                                         " pJ/bit (as presets/links/pcie5.yaml counts the link)"));
  const DesignRequester rq = design_requester(d.link_Bps, c.host_link_Bps);
  link.set("max_outstanding_reads",
           derived(num(rq.tags),
                   "the base die's read tags per B/s of PHY: pcie5's tags x the design's PHY " +
                       num(d.link_Bps) + " / the base PHY " + num(c.host_link_Bps) +
                       " B/s, at least pcie5's own and at most 16384 (PCIe 6.0 flit mode's "
                       "14-bit tags; docs/design-model.md, \"The requester's read tags\")"));
  if (host == "gb200" || host == "unlimited") {
    if (o.gpus < 1) throw InputError("design emit: --gpus must be at least 1");
    const bool grace = host == "gb200";
    e.system = ConfigNode::make_map();
    e.system.set("name", ConfigNode::make_scalar(e.system_name));
    e.system.set("display_name",
                 ConfigNode::make_scalar(grace ? "re-split die on a GB200-class Grace host"
                                               : "re-split die, die-only view (host unbounded)"));
    e.system.set("gpu", ConfigNode::make_scalar(e.name));
    e.system.set("gpus", derived(std::to_string(o.gpus), "one TP group of the study"));
    e.system.set("host_link", link);
    e.system.set("gpus_sharing_host_link", derived("1", "one PHY per GPU (the design's link)"));
    const int per_socket = grace ? 2 : 1;
    const int sockets = (o.gpus + per_socket - 1) / per_socket;
    ConfigNode hm = ConfigNode::make_map();
    hm.set("preset", ConfigNode::make_scalar("gb200-grace"));
    hm.set("sockets", derived(std::to_string(sockets),
                              grace ? "one Grace (512 GB/s LPDDR5X) per 2 GPUs as on GB200 "
                                      "(presets/systems/gb200.yaml), repeated for the GPUs"
                                    : "one socket per GPU (die-only view)"));
    if (!grace)
      hm.set("bandwidth_per_socket",
             assumed("1e15 B/s",
                     "die-only view (the design kind's host: unlimited): host DRAM far "
                     "above any PHY so the design's link alone binds; no real host"));
    hm.set("inter_socket_bandwidth",
           assumed("128e9 B/s",
                   "unused: each GPU's KV pool is on its own socket (kv_pool local); "
                   "given because a multi-socket host needs one"));
    e.system.set("host_memory", hm);
    e.system.set("gpus_per_socket", derived(std::to_string(per_socket),
                                            grace ? "GB200: two GPUs per Grace" : "die-only view"));
    e.system.set("kv_pool", ConfigNode::make_scalar("local"));
  } else {
    e.system = preset("system", host, "--host");
    const ConfigNode* hl = e.system.find("host_link");
    const std::string hl_name = hl && hl->is_scalar()      ? hl->scalar
                                : hl && hl->find("preset") ? hl->find("preset")->scalar
                                                           : std::string();
    const ConfigNode* lp =
        hl_name.empty() ? nullptr : PresetRegistry::instance().find("link", hl_name);
    const ConfigNode* ty = lp ? lp->find("type") : nullptr;
    if (!ty || ty->scalar != "pcie")
      throw InputError("--host: system '" + host + "' has no PCIe host link to replace (" +
                       (hl_name.empty() ? std::string("none named") : hl_name) +
                       "); use dgx-h100, gb200 or unlimited");
    e.system.set("name", ConfigNode::make_scalar(e.system_name));
    e.system.set("display_name", ConfigNode::make_scalar("re-split die on the " + host + " host"));
    e.system.erase("description");
    e.system.set("gpu", ConfigNode::make_scalar(e.name));
    e.system.set("host_link", link);
    e.system.set("gpus_sharing_host_link", derived("1", "one PHY per GPU (the design's link)"));
  }

  // ---- serving kv_buffer ------------------------------------------------------------------------
  e.kv_buffer = ConfigNode::make_map();
  e.kv_buffer.set("capacity", derived(num(d.sram_bytes) + " B", "KV SRAM per GPU of the " + split));
  if (d.sram_bytes > 0) {
    e.kv_buffer.set("kind", ConfigNode::make_scalar("sram"));
    e.kv_buffer.set("bandwidth",
                    derived(num(c.sram_bandwidth_Bps) + " B/s",
                            "the coefficients' sram_bandwidth (" + o.coefficients_name + ")"));
  }
  return e;
}

}  // namespace kappasim
