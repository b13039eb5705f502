// A sweep spec (docs/sweeps.md): a base config, axes over config keys, seeds and replicates,
// expanded into an ordered list of points. Pure: no processes, no files other than the spec
// and its `base:` config. The runner (apps/kappasim/cmd_sweep.cpp) executes the points.
//
// Expansion order: the cartesian product of the axes in the order given, the last axis varying
// fastest; the members of a `zip:` group advance together as one axis; replicates innermost.
// Point id = index in that order.
//
// Seeds (64-bit, deterministic on every platform; core/random derive_seed = FNV-1a + SplitMix64):
//   s = derive_seed(derive_seed(seed, "kappasim.sweep"), replicate)
//   seed_per_point: s = derive_seed(s, canonical text of the point's axis values)
//   point seed = s >> 1   (63 bits, so it fits every config's non-negative integer seed field)
// The canonical text of a point's axis values is "key=value" per axis joined by "\n", a value
// in canonical_text() form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"

namespace kappasim::sweep {

// The config key that is each point's seed (the run and cluster kinds set it from the point's
// seed): an axis on it sets the point's seed (expand).
inline constexpr const char* kSeedKey = "workload.seed";

// One varying key. `values` are the value nodes (scalars or maps), `labels` their text in the
// results (the canonical text of a scalar, or the spec's `labels:` entry).
struct AxisKey {
  std::string key;    // config path ("serving.tp")
  std::string label;  // column name (default: the key)
  std::vector<ConfigNode> values;
  std::vector<std::string> labels;
  SourceLoc loc;
};

// An axis: one key, or a zip group of keys of equal length varying together.
struct Axis {
  std::vector<AxisKey> keys;
  std::size_t size() const { return keys.empty() ? 0 : keys.front().values.size(); }
};

struct SweepSpec {
  std::string name;
  std::string description;
  std::string kind;
  ConfigNode config;  // base merged with `config:` (the `base:` file already read)
  std::uint64_t seed = 1;
  bool seed_per_point = false;
  std::int64_t replicates = 1;
  std::vector<Axis> axes;
  std::vector<std::string> metrics;  // empty: every metric the kind returns
  std::vector<std::pair<std::string, ConfigNode>> quick_set;  // quick.set (path, value)
  bool quick = false;    // --quick applied (axes replaced, quick_set applies)
  std::string base_dir;  // the spec's folder (relative paths resolve against it)

  // Axis columns in order (one per key, zip members each their own column).
  std::vector<std::string> axis_labels() const;
  std::size_t point_count() const;
};

// Parses a spec tree. `base_dir` is the spec's folder (`base:` is read relative to it);
// `quick` applies the spec's `quick:` section. Errors are InputError with file:line:col.
// `known_kind` decides whether a kind name exists (null: any name is accepted).
SweepSpec parse_sweep_spec(const ConfigNode& root, const std::string& base_dir, bool quick,
                           bool (*known_kind)(const std::string&) = nullptr);
SweepSpec load_sweep_spec(const std::string& path, bool quick,
                          bool (*known_kind)(const std::string&) = nullptr);

// The resolved spec as a tree in the spec format: `base:` inlined into `config:`, ranges written
// out as `values:`, and under --quick the quick axes substituted (`quick:` keeps only `set:`;
// without --quick there is no `quick:`), so parse_sweep_spec(resolved_tree(s), s.base_dir,
// s.quick) expands to the same points without reading any other file.
ConfigNode resolved_tree(const SweepSpec& s);
// 16 hex digits: FNV-1a 64 over "quick: <bool>\n" + emit_yaml(resolved_tree(s)), finalised by
// SplitMix64 (core/random mix64).
std::string spec_hash(const SweepSpec& s);

struct Point {
  std::size_t index = 0;
  std::vector<std::size_t> axis_index;  // per Axis
  std::int64_t replicate = 0;
  std::uint64_t seed = 0;
  std::vector<std::string> labels;  // per axis key (axis_labels() order)
};

// Every point in order (the configs are built on demand by point_config()).
std::vector<Point> expand(const SweepSpec& s);
// The point's config: spec config, each axis value set at its key (replacing the node there
// whole), then quick_set under --quick.
ConfigNode point_config(const SweepSpec& s, const Point& p);

// Sets `value` at dotted `path`, creating maps on the way; a scalar met on the way becomes
// {preset: scalar} (a preset being refined, as --set does); the node at the path is replaced.
void set_path(ConfigNode& root, const std::string& path, const ConfigNode& value);

// Canonical one-line text of a value: a scalar's text, maps as {k: v, ...}, lists as [a, b].
std::string canonical_text(const ConfigNode& n);

// "p000042": 6 digits, more when the sweep has more than a million points.
std::string point_name(std::size_t index, std::size_t total);

// Quotes one argument for a POSIX shell: unchanged if it only holds [A-Za-z0-9_./=:,+@%-],
// else in single quotes with ' written as '\''.
std::string shell_quote(const std::string& arg);

}  // namespace kappasim::sweep
