// libFuzzer target: the config loader, the path every YAML file, preset and --set takes.
//
// The input is YAML text. Comment lines of the form "#set KEY.PATH=VALUE" are also applied as
// --set overrides (they are comments, so the YAML parse sees the same text). The input is read
// the way `kappasim run` reads its config (a RunSpec), and as a preset of every kind.
//
// Contract: only InputError (bad input, exit code 2) may escape, and UnitError (the CLI would
// report it as an internal error, exit code 1, so the first one is printed as a soft finding).
// Any other exception, a crash, a hang or a sanitizer report is a finding. A config that reads
// must also dump (--dump-config) to YAML that reads back and dumps identically.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "interconnects/link_spec.hpp"
#include "memory/host_memory_spec.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "models/llm/architecture.hpp"
#include "serving/run_spec.hpp"
#include "serving/serving_spec.hpp"
#include "systems/system_spec.hpp"
#include "workloads/workload_spec.hpp"

namespace {

using namespace kappasim;

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_config: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

// Reads `root` as T, then checks that its dump reads back and dumps to the same text.
template <class T, class Read>
void read_and_dump(const ConfigNode& root, Read read) {
  ProvenanceTable prov;
  const T spec = read(root, &prov);
  const std::string dump = emit_yaml(write_config(spec, "", &prov));
  std::string again;
  try {
    ProvenanceTable prov2;
    const T back = read(parse_yaml(dump, "dump.yaml"), &prov2);
    again = emit_yaml(write_config(back, "", &prov2));
  } catch (const InputError& e) {
    finding("the effective config (--dump-config) does not read back",
            std::string(e.what()) + "\n--- dump:\n" + dump);
  }
  if (again != dump) finding("the dump of the dump differs", dump + "\n--- again:\n" + again);
}

// Every value's and key's place, and quoting, equal in two trees of the same shape.
bool same_places(const ConfigNode& a, const ConfigNode& b) {
  if (a.loc.str() != b.loc.str() || a.key_loc.str() != b.key_loc.str() || a.quoted != b.quoted ||
      a.kind != b.kind || a.entries.size() != b.entries.size() || a.items.size() != b.items.size())
    return false;
  for (std::size_t i = 0; i < a.entries.size(); ++i)
    if (a.entries[i].first != b.entries[i].first ||
        !same_places(a.entries[i].second, b.entries[i].second))
      return false;
  for (std::size_t i = 0; i < a.items.size(); ++i)
    if (!same_places(a.items[i], b.items[i])) return false;
  return true;
}

template <class T>
void as_preset(const ConfigNode& root, const char* kind) {
  try {
    read_and_dump<T>(root, [kind](const ConfigNode& n, ProvenanceTable* p) {
      return read_preset_config<T>(n, kind, kind, p);
    });
  } catch (const InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> sets;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    if (line.substr(0, 5) == "#set ") sets.emplace_back(line.substr(5));
    pos = end + 1;
  }

  try {
    ConfigNode root;
    // parse_yaml's reader of emit_yaml's subset answers what yaml-cpp answers, where it answers.
    if (const std::optional<ConfigNode> fast = parse_emitted_yaml(text, "fuzz.yaml")) {
      ConfigNode slow;
      try {
        slow = parse_yaml_cpp(text, "fuzz.yaml", DocumentCheck::Full);
      } catch (const InputError& e) {
        finding("the emitted-subset reader read a text yaml-cpp refuses", e.what());
      }
      // The emitted tree (provenance included) and every value's place.
      if (emit_yaml(*fast) != emit_yaml(slow) || !same_places(*fast, slow))
        finding("the emitted-subset reader and yaml-cpp read different trees", text);
    }
    try {
      root = parse_yaml(text, "fuzz.yaml");
      for (const std::string& s : sets) apply_set(root, s);
    } catch (const InputError&) {
      return 0;
    }

    // As `kappasim run` reads it, then the first few requests its workload would produce.
    try {
      read_and_dump<RunSpec>(root, [](const ConfigNode& n, ProvenanceTable* p) {
        return read_config<RunSpec>(n, "", p);
      });
      const RunSpec spec = read_config<RunSpec>(root, "");
      if (spec.workload.type != WorkloadType::Trace) {
        auto source = make_source(spec.workload, static_cast<std::uint64_t>(spec.workload.seed));
        Request r;
        for (int i = 0; i < 16 && source->next(r); ++i) {
        }
      }
    } catch (const InputError&) {
    }

    // As a preset (or a file refining one) of every kind.
    as_preset<ModelSpec>(root, "model");
    as_preset<SystemSpec>(root, "system");
    as_preset<GpuSpec>(root, "gpu");
    as_preset<LinkSpec>(root, "link");
    as_preset<HostMemorySpec>(root, "host-memory");
  } catch (const UnitError& e) {
    // Allowed, but every UnitError should reach the user as an InputError with a position.
    static bool reported = false;
    if (!reported)
      std::fprintf(stderr, "fuzz_config: soft finding: a UnitError escaped: %s\n", e.what());
    reported = true;
  }
  return 0;
}
