// Shared pieces of the kappasim command line: option parsing helpers, loading a model + system
// case from preset names or YAML files with --set overrides, and the exit-code convention
// (0 ok, 2 bad input, 1 internal error). Only this layer knows about argv and files.
#pragma once

#include <boost/program_options.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "models/llm/architecture.hpp"
#include "systems/system_spec.hpp"

namespace kappasim::cli {

namespace po = boost::program_options;

// The root of a case config: a model and a system, each a preset name or an inline map.
struct CaseConfig {
  ModelSpec model;
  SystemSpec system;
  template <class V>
  void visit(V& v) {
    v.object("model", model, req("the LLM"), "model");
    v.object("system", system, req("the hardware system"), "system");
  }
  void validate(const std::string&) const {}
};

struct LoadedCase {
  CaseConfig config;
  ProvenanceTable provenance;
};

// `ref` is a preset name, or a path to a YAML file (anything containing '/' or ending in
// .yaml/.yml) holding the model or system map.
ConfigNode ref_node(const std::string& ref, const std::string& kind);
LoadedCase load_case(const std::string& model_ref, const std::string& system_ref,
                     const std::vector<std::string>& sets);
// Loads each model and each system of a matrix once: --set overrides are split by their first
// key (model.* / system.*), so a case is the pair of its halves. The first case is also loaded
// whole, so a --set naming any other root key fails exactly as load_case would.
class CaseLoader {
 public:
  explicit CaseLoader(std::vector<std::string> sets) : m_sets(std::move(sets)) {}
  LoadedCase get(const std::string& model_ref, const std::string& system_ref);

 private:
  template <class T>
  const std::pair<T, ProvenanceTable>& half(
      std::map<std::string, std::pair<T, ProvenanceTable>>& cache, const std::string& key,
      const std::string& ref);
  std::vector<std::string> m_sets;
  bool m_checked = false;
  std::map<std::string, std::pair<ModelSpec, ProvenanceTable>> m_models;
  std::map<std::string, std::pair<SystemSpec, ProvenanceTable>> m_systems;
};

// Loads only a system (preset name or YAML file) with --set overrides; every --set must name a
// system.* key (InputError otherwise). Used by the probe commands.
struct LoadedSystem {
  SystemSpec system;
  ProvenanceTable provenance;
};
LoadedSystem load_system(const std::string& system_ref, const std::vector<std::string>& sets);

// The effective config of a case, every default filled, units normalised, with provenance.
std::string dump_case(const LoadedCase& c);

// Parses `args` against `desc`; unknown options and bad values become InputError naming the
// command. Positional arguments go to `positional` when given.
po::variables_map parse(const std::string& command, const std::vector<std::string>& args,
                        const po::options_description& desc,
                        const po::positional_options_description* positional = nullptr);

// A quantity option ("64 GB/s") of a given dimension, with the option named in errors.
double quantity_option(const std::string& option, const std::string& text, const Dimension& d);
// --sizes: a comma-separated list of byte sizes ("4 KiB,1 MiB"), each 1 B to 1 PB (probe h2d,
// probe allreduce).
std::vector<double> parse_sizes(const std::string& text);
// A non-negative count given as a number ("65536", "64e3", "64k" is not allowed).
double count_option(const std::string& option, const std::string& text);
// --ttft (probe prefill, measure poh): "engine" (false) or "end_to_end" (true; serving.ttft's
// modes, ttft_mode_names()); anything else names the option and the modes.
bool ttft_end_to_end_option(const std::string& text);

// The most simulated time one probe may ask for (issue 12, item 8): one day. SystemC's 1 ps time
// base holds 2^63 ps ≈ 106.7 days; a probe is checked against one day at the model's own
// estimate (prefill: the same kernel timing the simulation runs; copies: the path's rate, the
// least of its PCIe payload rate, its read tags and a copy kernel's loads in flight).
inline constexpr double kMaxProbeSimTimeS = 86400;

// A probe's estimated simulated time in the message that refuses it, to 3 significant digits
// ("1.85e+07"): the refusal needs its order of magnitude, not 16 digits. More digits only where 3
// would print a value at or below kMaxProbeSimTimeS for one above it.
std::string probe_estimate(double seconds);

// Adds --preset-dir directories to the registry.
void add_preset_dirs(const std::vector<std::string>& dirs);

int cmd_kappa(const std::vector<std::string>& args);
int cmd_roofline(const std::vector<std::string>& args);
int cmd_presets(const std::vector<std::string>& args);
// kappasim list [KIND]: every registry's names with their summaries (apps/kappasim/cmd_list.cpp).
int cmd_list(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);
// kappasim run CONFIG --out DIR (apps/kappasim/cmd_run.cpp)
int cmd_run(const std::vector<std::string>& args);
// kappasim measure kappa-crit|poh (apps/kappasim/cmd_measure.cpp)
int cmd_measure(const std::string& verb, const std::vector<std::string>& args);
// kappasim bench serving (apps/kappasim/cmd_measure.cpp)
int cmd_bench(const std::string& verb, const std::vector<std::string>& args);

// kappasim reproduce --out DIR (apps/kappasim/cmd_reproduce.cpp)
int cmd_reproduce(const std::vector<std::string>& args);

// kappasim probe h2d|d2h|bidir (apps/kappasim/cmd_probe_link.cpp)
int cmd_probe_link(const std::string& verb, const std::vector<std::string>& args);
// kappasim probe prefill|decode|gemm (apps/kappasim/cmd_probe_compute.cpp)
int cmd_probe_compute(const std::string& verb, const std::vector<std::string>& args);

// kappasim validate [--dir DIR] [--out FILE.md] [--check] (apps/kappasim/cmd_validate.cpp)
int cmd_validate(const std::vector<std::string>& args);

// kappasim metrics [TABLE] (apps/kappasim/cmd_metrics.cpp; serving/stat_catalog)
int cmd_metrics(const std::vector<std::string>& args);

// kappasim design emit (apps/kappasim/cmd_design.cpp)
int cmd_design(const std::string& verb, const std::vector<std::string>& args);

// kappasim sweep ... (apps/kappasim/cmd_sweep.cpp; the runner is sweeps/runner/)
int cmd_sweep(const std::vector<std::string>& args);

}  // namespace kappasim::cli
