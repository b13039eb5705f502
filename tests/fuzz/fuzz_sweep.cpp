// libFuzzer target: the sweep spec parser (sweeps/sweep_spec), the path every `kappasim sweep`,
// `sweep points`, `emit slurm` and `reproduce` spec takes before anything runs.
//
// The input is YAML text read as a spec (with and without --quick; `base:` resolves against a
// folder that does not exist, so a base file is always a clean error). A spec that parses is
// expanded (when it has at most 10,000 points), every point's config and name is built, its
// resolved tree must parse back to the same spec hash, and shell_quote must read back, word for
// word, as a POSIX shell reads it.
//
// Contract: only InputError (bad input, exit code 2) may escape. Any other exception, a crash,
// a hang or a sanitizer report is a finding.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/config.hpp"
#include "sweeps/sweep_spec.hpp"

namespace {

using namespace kappasim;

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_sweep: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

void check_spec(const sweep::SweepSpec& s) {
  double total = static_cast<double>(s.replicates);
  for (const auto& a : s.axes) total *= static_cast<double>(a.size());
  if (total <= 10000) {
    const auto points = sweep::expand(s);
    if (static_cast<double>(points.size()) != total)
      finding("expand() gave " + std::to_string(points.size()) + " points, axes say " +
                  std::to_string(total),
              s.name);
    for (const auto& p : points) {
      (void)sweep::point_config(s, p);
      (void)sweep::point_name(p.index, points.size());
    }
  }
  // The resolved tree is a spec of its own with the same hash.
  const ConfigNode tree = sweep::resolved_tree(s);
  const sweep::SweepSpec again = sweep::parse_sweep_spec(tree, s.base_dir, s.quick);
  if (sweep::spec_hash(again) != sweep::spec_hash(s))
    finding("resolved_tree does not parse back to the same spec", emit_yaml(tree));
  // Shell quoting: a POSIX shell's reading of the quoted word gives the argument back, and
  // nothing outside quotes is a character the shell would interpret.
  for (const std::string& arg : {s.name, s.description, s.base_dir + "/" + s.description}) {
    const std::string q = sweep::shell_quote(arg);
    std::string back;
    for (std::size_t i = 0; i < q.size(); ++i) {
      const char c = q[i];
      if (c == '\'') {
        const std::size_t end = q.find('\'', i + 1);
        if (end == std::string::npos) finding("shell_quote left a quote open", q);
        back += q.substr(i + 1, end - i - 1);
        i = end;
      } else if (c == '\\' && i + 1 < q.size()) {
        back += q[++i];
      } else if (std::isalnum(static_cast<unsigned char>(c)) ||
                 std::string("_./=:,+@%-").find(c) != std::string::npos) {
        back += c;
      } else {
        finding("shell_quote left a shell character unquoted", q);
      }
    }
    if (back != arg) finding("shell_quote does not read back as its argument", arg + "\n" + q);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 16384) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (bool quick : {false, true}) {
    try {
      const ConfigNode root = parse_yaml(text, "spec.yaml");
      check_spec(sweep::parse_sweep_spec(root, "/nonexistent-kappasim-fuzz", quick));
    } catch (const InputError&) {
      // bad input: the expected outcome for most inputs
    } catch (const std::exception& e) {
      finding(std::string("unexpected exception: ") + e.what(), text);
    }
  }
  return 0;
}
