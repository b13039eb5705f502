#include "apps/kappasim/cli.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "core/units.hpp"
#include "serving/serving_spec.hpp"

namespace kappasim::cli {

ConfigNode ref_node(const std::string& ref, const std::string& kind) {
  if (ref.empty()) throw InputError("empty " + kind + " name");
  const bool is_file = ref.find('/') != std::string::npos ||
                       (ref.size() > 5 && ref.substr(ref.size() - 5) == ".yaml") ||
                       (ref.size() > 4 && ref.substr(ref.size() - 4) == ".yml");
  if (is_file) return load_yaml_file(ref);
  return ConfigNode::make_scalar(ref, {"--" + kind + " " + ref, 0, 0});
}

LoadedCase load_case(const std::string& model_ref, const std::string& system_ref,
                     const std::vector<std::string>& sets) {
  ConfigNode root = ConfigNode::make_map({"<case>", 0, 0});
  root.set("model", ref_node(model_ref, "model"));
  root.set("system", ref_node(system_ref, "system"));
  for (const auto& s : sets) apply_set(root, s);
  LoadedCase c;
  c.config = read_config<CaseConfig>(root, "", &c.provenance);
  return c;
}

template <class T>
const std::pair<T, ProvenanceTable>& CaseLoader::half(
    std::map<std::string, std::pair<T, ProvenanceTable>>& cache, const std::string& key,
    const std::string& ref) {
  auto it = cache.find(ref);
  if (it != cache.end()) return it->second;
  ConfigNode root = ConfigNode::make_map({"<case>", 0, 0});
  root.set(key, ref_node(ref, key));
  for (const auto& s : m_sets)
    if (s.compare(0, key.size() + 1, key + ".") == 0 ||
        s.compare(0, key.size() + 1, key + "=") == 0)
      apply_set(root, s);
  std::pair<T, ProvenanceTable> v;
  v.first = read_preset_config<T>(*root.find(key), key, key, &v.second);
  return cache.emplace(ref, std::move(v)).first->second;
}

LoadedCase CaseLoader::get(const std::string& model_ref, const std::string& system_ref) {
  if (!m_checked) {
    m_checked = true;
    return load_case(model_ref, system_ref, m_sets);
  }
  const auto& m = half(m_models, "model", model_ref);
  const auto& s = half(m_systems, "system", system_ref);
  LoadedCase c;
  c.config.model = m.first;
  c.config.system = s.first;
  c.provenance = m.second;
  c.provenance.insert(s.second.begin(), s.second.end());
  return c;
}

LoadedSystem load_system(const std::string& system_ref, const std::vector<std::string>& sets) {
  ConfigNode root = ConfigNode::make_map({"<case>", 0, 0});
  root.set("system", ref_node(system_ref, "system"));
  for (const auto& s : sets) {
    if (s.compare(0, 7, "system.") != 0 && s.compare(0, 7, "system=") != 0)
      throw InputError("--set " + s +
                       ": this command reads only a system; use system.<key>=<value>");
    apply_set(root, s);
  }
  LoadedSystem out;
  out.system =
      read_preset_config<SystemSpec>(*root.find("system"), "system", "system", &out.provenance);
  return out;
}

std::string dump_case(const LoadedCase& c) {
  return emit_yaml(write_config(c.config, "", &c.provenance));
}

po::variables_map parse(const std::string& command, const std::vector<std::string>& args,
                        const po::options_description& desc,
                        const po::positional_options_description* positional) {
  po::variables_map vm;
  try {
    po::command_line_parser p(args);
    p.options(desc);
    if (positional) p.positional(*positional);
    const po::parsed_options parsed = p.run();
    // The positional arguments' hidden option (e.g. presets' "args") is not an option the
    // user may give by name (issue 26.17): `--args X` is an unknown option like any other.
    if (positional) {
      std::set<std::string> hidden;
      for (unsigned i = 0; i < std::min(positional->max_total_count(), 16u); ++i)
        hidden.insert(positional->name_for_position(i));
      for (const auto& o : parsed.options)
        if (o.position_key < 0 && hidden.count(o.string_key))
          throw InputError("kappasim " + command + ": unrecognised option '--" + o.string_key +
                           "' (see kappasim " + command + " --help)");
    }
    po::store(parsed, vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    // Suggest the nearest option of this command (issue 12, item 14).
    std::string name = e.get_option_name();
    while (!name.empty() && name.front() == '-') name.erase(0, 1);
    std::vector<std::string> known;
    for (const auto& o : desc.options())
      if (!o->long_name().empty()) known.push_back(o->long_name());
    std::string near = nearest(name, known);
    // The same quantity under another command's name (issue 26.14): kappa's --context is
    // measure's --k (cached tokens K).
    static const std::map<std::string, std::string> kSynonyms = {{"k", "context"},
                                                                 {"context", "k"}};
    if (const auto syn = kSynonyms.find(name);
        syn != kSynonyms.end() && std::find(known.begin(), known.end(), syn->second) != known.end())
      near = syn->second;
    throw InputError("kappasim " + command + ": " + e.what() +
                     (near.empty() ? std::string() : "; did you mean '--" + near + "'?") +
                     " (see kappasim " + command + " --help)");
  } catch (const po::ambiguous_option& e) {
    // `kappa --k` matches --kaplan-context and --kv-dtype by prefix; K is --context there.
    std::string name = e.get_option_name();
    while (!name.empty() && name.front() == '-') name.erase(0, 1);
    std::string hint;
    if (name == "k")
      for (const auto& o : desc.options())
        if (o->long_name() == "context") hint = "; did you mean '--context'?";
    throw InputError("kappasim " + command + ": " + e.what() + hint + " (see kappasim " + command +
                     " --help)");
  } catch (const po::error& e) {
    throw InputError("kappasim " + command + ": " + e.what() + " (see kappasim " + command +
                     " --help)");
  }
  return vm;
}

double quantity_option(const std::string& option, const std::string& text, const Dimension& d) {
  try {
    double v = parse_quantity_as(text, d);
    if (!(v > 0)) throw UnitError("must be greater than zero, got \"" + text + "\"");
    return v;
  } catch (const UnitError& e) {
    throw InputError("--" + option + ": " + e.what());
  }
}

bool ttft_end_to_end_option(const std::string& text) {
  std::string names;
  for (const auto& [name, mode] : ttft_mode_names()) {
    if (text == name) return mode == TtftMode::EndToEnd;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw InputError("--ttft: expected one of " + names + ", got \"" + excerpt(text) + "\"");
}

std::vector<double> parse_sizes(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    const std::string t = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    if (t.empty()) throw InputError("--sizes: empty entry in \"" + text + "\"");
    double v = 0;
    try {
      v = parse_quantity_as(t, dim::bytes);
    } catch (const UnitError& err) {
      throw InputError("--sizes: " + std::string(err.what()));
    }
    if (!(v > 0) || !std::isfinite(v) || v > 1e15)
      throw InputError("--sizes: each size must be between 1 B and 1 PB, got \"" + t + "\"");
    out.push_back(v);
  }
  if (out.empty()) throw InputError("--sizes: give at least one size");
  return out;
}

std::string probe_estimate(double seconds) {
  char buf[32];
  for (int digits = 3; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, seconds);
    if (!(seconds > kMaxProbeSimTimeS) || std::strtod(buf, nullptr) > kMaxProbeSimTimeS) break;
  }
  return buf;
}

double count_option(const std::string& option, const std::string& text) {
  // An empty item ("1,,2" or a trailing comma) is named as such (issue 26.17), not as a
  // missing unit: a token count has none.
  if (text.find_first_not_of(" \t") == std::string::npos)
    throw InputError("--" + option +
                     ": an empty value (two commas in a row, or one at an end?); expected a whole "
                     "number of tokens");
  double v = 0;
  try {
    v = parse_quantity_as(text, dim::none);
  } catch (const UnitError& e) {
    throw InputError("--" + option + ": " + e.what());
  }
  if (v < 0 || v != std::floor(v) || v > 1e12)
    throw InputError("--" + option +
                     ": expected a whole number of tokens between 0 and 1e12, got \"" + text +
                     "\"");
  return v;
}

void add_preset_dirs(const std::vector<std::string>& dirs) {
  for (const auto& d : dirs) PresetRegistry::instance().add_directory(d);
}

}  // namespace kappasim::cli
