// kappasim list [KIND]: every registered pluggable kind (core/registry.hpp: scheduler policies,
// routers, load paths, link back ends, sweep point kinds, stack profiles) with the config key
// that selects one and each name's one-line summary. The rows come from the registries this
// binary links (all_registries), so a registration the linker dropped is missing here.
#include <algorithm>
#include <iostream>

#include "apps/kappasim/cli.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"

namespace kappasim::cli {

int cmd_list(const std::vector<std::string>& args) {
  std::vector<std::string> pos, preset_dirs;
  std::string kinds;
  for (const RegistryBase* r : all_registries())
    kinds += (kinds.empty() ? "" : ", ") + std::string(r->id());
  po::options_description desc(
      "kappasim list: every registered kind that a config selects by name, with one-line docs\n"
      "Usage: kappasim list [KIND]   (KIND: " +
      kinds +
      ")\n"
      "Columns: kind, the config key that selects one, name, summary.\n"
      "Options");
  desc.add_options()("preset-dir", po::value(&preset_dirs)->composing(),
                     "extra preset folder (its stack profiles are listed)")("help,h", "this help")(
      "args", po::value(&pos), "");
  po::positional_options_description p;
  p.add("args", -1);
  auto vm = parse("list", args, desc, &p);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (pos.size() > 1) throw InputError("kappasim list: at most one KIND");
  add_preset_dirs(preset_dirs);
  std::vector<const RegistryBase*> shown;
  if (pos.empty())
    shown = all_registries();
  else
    shown = {&registry_by_id(pos[0])};  // unknown: InputError with the nearest kind
  // Left-aligned columns, the summary last (core/table's text aligns a text column by the first
  // row only up to the row count, so a short listing would come out ragged).
  std::vector<std::vector<std::string>> rows = {{"kind", "key", "name", "summary"}};
  for (const RegistryBase* r : shown)
    for (const auto& item : r->listing())
      rows.push_back({r->id(), r->key(), item.name, item.summary});
  std::vector<std::size_t> width(3, 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < width.size(); ++i)
      line += row[i] + std::string(width[i] - row[i].size() + 2, ' ');
    line += row[3];
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  }
  return 0;
}

}  // namespace kappasim::cli
