// kappasim presets: list, show (resolved, with provenance) and check the built-in presets.
#include <algorithm>
#include <iostream>

#include "apps/kappasim/cli.hpp"
#include "core/error.hpp"
#include "core/table.hpp"
#include "models/design/area_power.hpp"
#include "serving/handoff.hpp"
#include "serving/router_policy.hpp"
#include "serving/scheduler_policy.hpp"
#include "serving/stack_profile.hpp"

namespace kappasim::cli {

namespace {

// Reads a preset as its typed spec and writes back its effective config.
std::string effective(const std::string& kind, const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name, {"presets show", 0, 0});
  ProvenanceTable prov;
  auto show = [&](auto spec) { return emit_yaml(write_config(spec, "", &prov)); };
  if (kind == "model") return show(read_preset_config<ModelSpec>(ref, kind, "", &prov));
  if (kind == "gpu") return show(read_preset_config<GpuSpec>(ref, kind, "", &prov));
  if (kind == "link") return show(read_preset_config<LinkSpec>(ref, kind, "", &prov));
  if (kind == "host-memory") return show(read_preset_config<HostMemorySpec>(ref, kind, "", &prov));
  if (kind == "system") return show(read_preset_config<SystemSpec>(ref, kind, "", &prov));
  if (kind == "design") return show(read_preset_config<DesignCoefficients>(ref, kind, "", &prov));
  if (kind == "stack") {  // a stack alone: every block it gives, those a run may hide included
    StackProfile p = read_preset_config<StackProfile>(ref, kind, "", &prov);
    p.write_end_to_end = p.write_nvme = true;
    return show(p);
  }
  // KV tiers below DRAM (issue 14)
  if (kind == "cxl") return show(read_preset_config<CxlExpanderSpec>(ref, kind, "", &prov));
  if (kind == "nvme") return show(read_preset_config<NvmeDriveSpec>(ref, kind, "", &prov));
  if (kind == "cxl-pool") return show(read_preset_config<CxlPoolSpec>(ref, kind, "", &prov));
  if (kind == "transfer-engine")  // P/D hand-off profiles (serving/handoff.hpp)
    return show(read_preset_config<HandoffSpec>(ref, kind, "", &prov));
  throw InputError("unknown preset kind '" + kind + "'");
}

// Numbers in the preset file itself that carry no provenance (a file-level default counts).
void unsourced(const ConfigNode& n, const std::string& path, std::vector<std::string>& out) {
  if (n.is_map()) {
    for (const auto& [k, v] : n.entries) unsourced(v, path.empty() ? k : path + "." + k, out);
  } else if (n.kind == ConfigNode::Kind::Seq) {
    for (const auto& v : n.items) unsourced(v, path, out);
  } else if (n.is_scalar() && !n.quoted && !n.provenance) {
    try {
      parse_quantity(n.scalar);  // a number, with or without a unit
      out.push_back(n.loc.str() + ": " + path + " = " + n.scalar);
    } catch (const UnitError&) {
    }
  }
}

}  // namespace

int cmd_presets(const std::vector<std::string>& args) {
  std::vector<std::string> pos, preset_dirs;
  bool raw = false;
  po::options_description desc(
      "kappasim presets: the built-in models, GPUs, links, host memories and systems\n"
      "Usage: kappasim presets [list [KIND]]\n"
      "       kappasim presets show KIND/NAME [--raw]\n"
      "       kappasim presets check          (every number has a source; every preset loads)\n"
      "       kappasim presets policies       (the registered scheduler policies and routers;\n"
      "                                        kappasim list: every registered kind)\n"
      "Options");
  desc.add_options()("raw", po::bool_switch(&raw), "show the file as written")(
      "preset-dir", po::value(&preset_dirs)->composing(), "extra preset folder")(
      "help,h", "this help")("args", po::value(&pos), "");
  po::positional_options_description p;
  p.add("args", -1);
  auto vm = parse("presets", args, desc, &p);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  add_preset_dirs(preset_dirs);
  PresetRegistry& reg = PresetRegistry::instance();
  const std::string verb = pos.empty() ? "list" : pos[0];
  if (verb == "list") {
    if (pos.size() > 2) throw InputError("kappasim presets list: at most one KIND");
    Table t({"kind", "name", "display_name", "file"});
    for (const auto& kind : reg.kinds()) {
      if (pos.size() == 2 && pos[1] != kind) continue;
      for (const auto& name : reg.names(kind)) {
        const ConfigNode* n = reg.find(kind, name);
        const ConfigNode* dn = n->find("display_name");
        t.add_row({kind, name, dn ? dn->scalar : std::string(), reg.file_of(kind, name)});
      }
    }
    if (pos.size() == 2 && t.rows().empty()) {
      std::string all;
      for (const auto& k : reg.kinds()) all += (all.empty() ? "" : ", ") + k;
      throw InputError("kappasim presets list: unknown kind '" + pos[1] + "' (expected " + all +
                       ")");
    }
    std::cout << t.text();
    return 0;
  }
  if (verb == "show") {
    if (pos.size() != 2 || pos[1].find('/') == std::string::npos)
      throw InputError("kappasim presets show: expected KIND/NAME, e.g. system/h100");
    const std::string kind = pos[1].substr(0, pos[1].find('/'));
    const std::string name = pos[1].substr(pos[1].find('/') + 1);
    // Issue 26.14: an unknown kind or name is named, with the nearest valid one, before any
    // preset is read (the reader's message had an empty source: "presets show: : unknown…").
    const std::vector<std::string> kinds = reg.kinds();
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      std::string all;
      for (const auto& k : kinds) all += (all.empty() ? "" : ", ") + k;
      const std::string near = nearest(kind, kinds);
      throw InputError("kappasim presets show: unknown preset kind '" + excerpt(kind) + "'" +
                       (near.empty() ? std::string() : "; did you mean '" + near + "'?") +
                       " (expected " + all + ")");
    }
    if (!reg.find(kind, name)) {
      const std::string near = nearest(name, reg.names(kind));
      throw InputError("kappasim presets show: unknown " + kind + " preset '" + excerpt(name) +
                       "'" + (near.empty() ? std::string() : "; did you mean '" + near + "'?") +
                       " (kappasim presets list " + kind + ")");
    }
    if (raw) {
      if (!reg.find(kind, name)) throw InputError("no " + kind + " preset '" + name + "'");
      std::cout << reg.text_of(kind, name);
    } else {
      const std::string body = effective(kind, name);  // fails before anything is printed
      std::cout << "# " << kind << " preset " << name << " from " << reg.file_of(kind, name)
                << ", resolved (defaults filled, units normalised)\n"
                << body;
    }
    return 0;
  }
  if (verb == "check") {
    std::vector<std::string> problems;
    int count = 0;
    for (const auto& kind : reg.kinds()) {
      for (const auto& name : reg.names(kind)) {
        ++count;
        try {
          unsourced(*reg.find(kind, name), "", problems);
          effective(kind, name);
        } catch (const InputError& e) {
          problems.push_back(e.what());
        }
      }
    }
    for (const auto& pr : problems) std::cerr << "unsourced or invalid: " << pr << "\n";
    std::cout << count << " presets checked, " << problems.size() << " problems\n";
    return problems.empty() ? 0 : 2;
  }
  // Policies are code, not preset files: listed from their registries (serving/policies,
  // serving/routers; docs/scheduler.md "How to add a policy").
  if (verb == "policies") {
    if (pos.size() != 1) throw InputError("kappasim presets policies: takes no argument");
    Table t({"key", "name", "summary"});
    for (const auto* e : scheduler_policies().entries())
      t.add_row({"serving.policy", e->name, e->summary});
    for (const auto* e : routers().entries()) t.add_row({"cluster.router", e->name, e->summary});
    std::cout << t.text();
    return 0;
  }
  const std::string near = nearest(verb, {"list", "show", "check", "policies"});
  throw InputError("kappasim presets: unknown verb '" + verb + "'" +
                   (near.empty() ? std::string() : "; did you mean '" + near + "'?") +
                   " (expected list, show, check or policies)");
}

}  // namespace kappasim::cli
