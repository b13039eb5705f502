// Configuration: one loader for every YAML file, preset and command-line override.
//
// Text is parsed (yaml-cpp) into a `ConfigNode` tree that keeps, for every value, the file, line
// and column it came from and its provenance ({value: X, spec: "source"}). Presets are resolved
// by name, `<<` merge keys and `preset:` references are applied, `--set a.b.c=value` overrides
// are merged in, and typed spec structs are read from the tree by `ConfigReader`, a visitor that
// checks dimensions and ranges and rejects unknown keys with the nearest valid key suggested.
// `ConfigWriter` is the same visitor in the other direction: it produces the effective config
// (every default filled, units normalised) for --dump-config.
//
// A spec struct describes its fields once:
//
//   template <class V> void visit(V& v) {
//     v.quantity("hbm_bandwidth", hbm_bandwidth_Bps, dim::bandwidth, req("HBM bandwidth"));
//     v.integer("sm_count", sm_count, req("streaming multiprocessors"));
//   }
//
// No SystemC here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"

namespace kappasim {

// Where a number comes from: kind is spec | measured | derived | assumption.
struct Provenance {
  Provenance() = default;
  Provenance(std::string kind_, std::string source_, std::string low_ = "", std::string high_ = "")
      : kind(std::move(kind_)),
        source(std::move(source_)),
        low(std::move(low_)),
        high(std::move(high_)) {}
  std::string kind;
  std::string source;
  // Declared plausible range for `kappasim sensitivity` ({value: X, assumption: "...", low: L,
  // high: H}); the literal text (same units as the value), empty when not declared.
  std::string low, high;
};
extern const char* const kProvenanceKinds[4];

class ConfigNode {
 public:
  enum class Kind { Null, Scalar, Map, Seq };

  Kind kind = Kind::Null;
  std::string scalar;
  std::vector<std::pair<std::string, ConfigNode>> entries;  // Map, in file order
  std::vector<ConfigNode> items;                            // Seq
  SourceLoc loc;                                            // where the value starts
  SourceLoc key_loc;                                        // where its key is (map children)
  std::optional<Provenance> provenance;
  bool quoted = false;  // scalar was quoted in the source: never a number

  static ConfigNode make_scalar(std::string v, SourceLoc loc = {});
  static ConfigNode make_map(SourceLoc loc = {});

  bool is_map() const { return kind == Kind::Map; }
  bool is_scalar() const { return kind == Kind::Scalar; }
  bool is_null() const { return kind == Kind::Null; }
  const ConfigNode* find(std::string_view key) const;
  ConfigNode* find(std::string_view key);
  // Inserts or replaces `key`, keeping the order of existing keys.
  ConfigNode& set(const std::string& key, ConfigNode value);
  bool erase(std::string_view key);
};

// Parses YAML text. `<<` merge keys are applied; {value: X, <kind>: "source"} maps collapse into
// X with a provenance. Syntax errors and duplicate keys throw InputError with file:line:col.
ConfigNode parse_yaml(std::string_view text, const std::string& filename);
// KnownSingle skips the count of documents (a second pass over the text), for a text known to
// hold one document: the built-in presets (PresetRegistry::find; a test checks every one).
enum class DocumentCheck { Full, KnownSingle };
ConfigNode parse_yaml(std::string_view text, const std::string& filename, DocumentCheck check);
// The subset of YAML emit_yaml writes (block maps and lists, plain and double-quoted scalars,
// {} and [], one-line flow maps: a value with its provenance), read without yaml-cpp (issue 24:
// a sweep point reads the point.yaml its runner wrote); std::nullopt for any other text.
// Where it answers, it answers what yaml-cpp gives (marks included; a test compares the two),
// so parse_yaml asks it first and goes to yaml-cpp (parse_yaml_cpp) when it declines.
std::optional<ConfigNode> parse_emitted_yaml(std::string_view text, const std::string& filename);
ConfigNode parse_yaml_cpp(std::string_view text, const std::string& filename, DocumentCheck check);
ConfigNode load_yaml_file(const std::string& path);

// Deep merge: maps merge key by key, anything else replaces. A scalar base under a map override
// without `preset:` is read as a preset name: h100 + {gpu: {...}} = {preset: h100, gpu: {...}}.
void merge_into(ConfigNode& base, const ConfigNode& over);

// Applies "a.b.c=value" (value is YAML, so "{preset: pcie4, lanes: 8}" works).
void apply_set(ConfigNode& root, std::string_view assignment);

// Emits a node as block-style YAML; numbers with provenance as {value: X, kind: "source"}.
std::string emit_yaml(const ConfigNode& node, bool with_provenance = true);

// The largest config, preset or sweep-spec file load_yaml_file reads (issue 12, item 9).
inline constexpr std::size_t kMaxConfigFileBytes = std::size_t{4} << 20;  // 4 MiB

// Levenshtein distance; used to suggest the nearest valid key or name.
std::size_t edit_distance(std::string_view a, std::string_view b);
// The nearest candidate within a small distance, or "" when none is close.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);
// "unknown key 'k' in WHERE; did you mean 'x'? (expected one of a, b, c)": the one wording for a
// key outside a fixed set (sweep specs, calibration files, ...).
std::string unknown_key_message(const std::string& key, const std::vector<std::string>& allowed,
                                const std::string& where);

// ---------------------------------------------------------------------------------------------
// Presets: built-in (compiled into the binary from presets/) plus user directories.

class PresetRegistry {
 public:
  // The built-in presets plus directories named in KAPPASIM_PRESET_PATH (colon-separated).
  static PresetRegistry& instance();

  // Adds a directory laid out as <dir>/<kind-folder>/<name>.yaml; its presets shadow built-ins.
  void add_directory(const std::string& dir);
  // Registers one preset from text (used for built-ins and tests).
  void add_text(const std::string& kind, const std::string& name, const std::string& file,
                std::string text);

  // The parsed preset (file-level `provenance:` applied), or nullptr.
  const ConfigNode* find(const std::string& kind, const std::string& name) const;
  std::vector<std::string> names(const std::string& kind) const;
  std::vector<std::string> kinds() const;
  // The file a preset came from (for messages and `kappasim presets show`).
  std::string file_of(const std::string& kind, const std::string& name) const;
  std::string text_of(const std::string& kind, const std::string& name) const;

  // The folder name for a kind ("gpu" -> "gpus").
  static std::string folder_of(const std::string& kind);
  // A preset given by file path (absolute, see resolve_preset_file), parsed once and cached;
  // `at` is the referring node (for the message when the file cannot be read).
  const ConfigNode* find_file(const std::string& kind, const std::string& path,
                              const SourceLoc& at) const;

 private:
  struct Entry {
    std::string file;
    std::string owned;  // the text read from a file or given to add_text
    mutable std::shared_ptr<ConfigNode> parsed;
    bool built_in = false;  // compiled in from presets/: one YAML document (DocumentCheck)
    // A built-in preset's compiled-in text, viewed where it lies (issue 24), else `owned`.
    const char* static_text = nullptr;
    std::size_t static_size = 0;
    std::string_view text() const {
      return static_text != nullptr ? std::string_view(static_text, static_size)
                                    : std::string_view(owned);
    }
  };
  std::map<std::string, std::map<std::string, Entry>> m_presets;  // kind -> name -> entry
  mutable std::map<std::string, Entry> m_files;                   // preset files by path
};

// ---- preset files and the input log (issue 12.11; docs/sweeps.md "Resume") ----
// A preset reference that holds '/' or ends in .yaml/.yml is a file path, wherever a preset
// name is accepted (model:, system:, gpu:, host_link:, preset:, --set system=..., sweep axes).
bool is_preset_file_ref(const std::string& ref);
// Absolute path of a preset file reference: a relative one resolves against the folder of the
// file holding the reference (`at.file`, when that is a file), else the current folder (--set,
// command-line options).
std::string resolve_preset_file(const std::string& ref, const SourceLoc& at);
// 16 hex digits: FNV-1a 64 + SplitMix64 finaliser over the bytes.
std::string content_hash(std::string_view text);
// Every preset ("preset <kind> <name>") and preset file ("file <abs path>") read through the
// registry since the last clear, with its content hash, sorted by key. A sweep point records
// it so that a resume reruns the point when any of them changed.
void note_input(const std::string& key, std::string_view content);
std::vector<std::pair<std::string, std::string>> input_log();
void clear_input_log();
// The hash of that input's content now (nullopt when it no longer exists).
std::optional<std::string> current_input_hash(const std::string& key);

// ---------------------------------------------------------------------------------------------
// Typed reading and writing of spec structs.

enum class Range { Any, Positive, NonNegative, Fraction, AtLeastOne };

struct Field {
  const char* doc = "";
  bool required = true;
  Range range = Range::Positive;
};
inline Field req(const char* doc, Range r = Range::Positive) { return {doc, true, r}; }
// Optional: the struct member's current value is the default.
inline Field opt(const char* doc, Range r = Range::Positive) { return {doc, false, r}; }

// Provenance of every value read, by dotted path ("system.gpu.hbm_bandwidth").
using ProvenanceTable = std::map<std::string, std::pair<Provenance, SourceLoc>>;

class ConfigReader {
 public:
  static constexpr bool kWriting = false;  // a visit() may skip an unused optional block
  // `node` must outlive the reader. `path` is the dotted key of `node` ("" at the root).
  ConfigReader(const ConfigNode& node, std::string path, ProvenanceTable* prov = nullptr);

  void quantity(const char* key, double& out, const Dimension& d, const Field& f);
  void quantity(const char* key, std::optional<double>& out, const Dimension& d, const Field& f);
  void number(const char* key, double& out, const Field& f);
  void integer(const char* key, std::int64_t& out, const Field& f);
  void integer(const char* key, int& out, const Field& f);
  // Exact over the whole 64-bit range (seeds); plain digits are never rounded through double.
  void integer(const char* key, std::uint64_t& out, const Field& f);
  void boolean(const char* key, bool& out, const Field& f);
  void text(const char* key, std::string& out, const Field& f);
  template <class E>
  void choice(const char* key, E& out, const std::vector<std::pair<const char*, E>>& names,
              const Field& f);
  // A map of quantities keyed by names from `allowed` (e.g. peak FLOP/s per dtype).
  void quantity_map(const char* key, std::map<std::string, double>& out, const Dimension& d,
                    const std::vector<std::string>& allowed, const Field& f);
  // A nested struct; when `preset_kind` is set the value may be a preset name or a map with
  // `preset:` and overrides.
  template <class T>
  void object(const char* key, T& out, const Field& f, const char* preset_kind = nullptr);
  // A preset-kind struct whose absence means the preset `default_preset`; the choice is recorded
  // as the provenance of <key>.name (`why`), so the effective config says which applies.
  template <class T>
  void object(const char* key, T& out, const Field& f, const char* preset_kind,
              const char* default_preset, const char* why);
  // Records a provenance for a key of this struct that the struct filled itself (a default
  // derived from other keys), so the effective config shows where it came from.
  void note(const char* key, const Provenance& p);

  // Throws on any key that no field consumed, suggesting the nearest valid key.
  void finish() const;
  // Whether the config gives `key` (a non-null value): for keys that conflict with another one
  // only when written (a default is no conflict), e.g. workload.rate with workload.concurrency.
  bool has(const char* key) const;
  // InputError at `key`'s position (file:line), naming <path>.<key>: "<path>.<key>: msg".
  [[noreturn]] void reject(const char* key, const std::string& msg) const;

  // Resolves `preset:` (and a bare preset name) of `kind` into a fresh merged tree.
  static ConfigNode resolve_preset(const ConfigNode& node, const std::string& kind,
                                   const std::string& path);

  const std::string& path() const { return m_path; }

  // A value this reader already read was changed by a rule (a scale factor, issue 12.12): its
  // provenance becomes derived: "<how>; from <old kind>: <old source>". `subpath` is relative
  // to this reader ("hbm_bandwidth", "peak_flops.bf16").
  void derive(const std::string& subpath, const std::string& how);

 private:
  const ConfigNode* take(const char* key, const Field& f, const char* what);
  std::string child_path(const char* key) const;
  [[noreturn]] void fail(const ConfigNode& at, const char* key, const std::string& msg) const;
  void check_range(const ConfigNode& at, const char* key, double v, const Dimension& d,
                   Range r) const;
  void record(const ConfigNode& n, const char* key);

  const ConfigNode& m_node;
  std::string m_path;
  ProvenanceTable* m_prov;
  std::vector<std::string> m_known;
  std::set<std::string> m_used;
};

// Produces the effective config tree of a struct (defaults filled, units normalised).
class ConfigWriter {
 public:
  static constexpr bool kWriting = true;
  explicit ConfigWriter(ConfigNode& out, std::string path = "",
                        const ProvenanceTable* prov = nullptr);

  void quantity(const char* key, double& v, const Dimension& d, const Field&);
  void quantity(const char* key, std::optional<double>& v, const Dimension& d, const Field&);
  void number(const char* key, double& v, const Field&);
  void integer(const char* key, std::int64_t& v, const Field&);
  void integer(const char* key, int& v, const Field&);
  void integer(const char* key, std::uint64_t& v, const Field&);
  void boolean(const char* key, bool& v, const Field&);
  void text(const char* key, std::string& v, const Field&);
  template <class E>
  void choice(const char* key, E& v, const std::vector<std::pair<const char*, E>>& names,
              const Field&);
  void quantity_map(const char* key, std::map<std::string, double>& v, const Dimension& d,
                    const std::vector<std::string>&, const Field&);
  template <class T>
  void object(const char* key, T& v, const Field&, const char* = nullptr);
  template <class T>
  void object(const char* key, T& v, const Field& f, const char* kind, const char*, const char*) {
    object(key, v, f, kind);
  }
  void note(const char*, const Provenance&) {}

 private:
  void put(const char* key, std::string scalar);
  ConfigNode& m_out;
  std::string m_path;
  const ProvenanceTable* m_prov;
};

// Reads a whole struct from a node, including the unknown-key check.
template <class T>
T read_config(const ConfigNode& node, const std::string& path, ProvenanceTable* prov = nullptr) {
  T out{};
  ConfigReader r(node, path, prov);
  out.visit(r);
  r.finish();
  out.validate(path);
  return out;
}
// Reads a struct that may be given as a preset name / `preset:` map of `kind`.
template <class T>
T read_preset_config(const ConfigNode& node, const std::string& kind, const std::string& path,
                     ProvenanceTable* prov = nullptr) {
  ConfigNode resolved = ConfigReader::resolve_preset(node, kind, path);
  return read_config<T>(resolved, path, prov);
}
template <class T>
ConfigNode write_config(const T& value, const std::string& path = "",
                        const ProvenanceTable* prov = nullptr) {
  ConfigNode out = ConfigNode::make_map();
  T copy = value;
  ConfigWriter w(out, path, prov);
  copy.visit(w);
  return out;
}

// ---- template definitions ----

template <class E>
void ConfigReader::choice(const char* key, E& out,
                          const std::vector<std::pair<const char*, E>>& names, const Field& f) {
  const ConfigNode* n = take(key, f, "one of a fixed set of names");
  if (!n) return;
  std::vector<std::string> valid;
  for (const auto& [name, value] : names) {
    if (n->scalar == name) {
      out = value;
      record(*n, key);  // a choice's provenance (e.g. a store mode the stack chose) survives dumps
      return;
    }
    valid.emplace_back(name);
  }
  std::string all;
  for (const auto& v : valid) all += (all.empty() ? "" : ", ") + v;
  std::string near = nearest(n->scalar, valid);
  fail(*n, key,
       "expected one of " + all + ", got \"" + excerpt(n->scalar) + "\"" +
           (near.empty() ? "" : "; did you mean \"" + near + "\"?"));
}

template <class T>
void ConfigReader::object(const char* key, T& out, const Field& f, const char* preset_kind) {
  m_known.emplace_back(key);
  const ConfigNode* n = m_node.is_map() ? m_node.find(key) : nullptr;
  if (!n || n->is_null()) {
    if (f.required)
      fail(n ? *n : m_node, nullptr,
           "missing required key '" + std::string(key) + "' (" + f.doc + ")");
    return;
  }
  m_used.insert(key);
  if (preset_kind) {
    out = read_preset_config<T>(*n, preset_kind, child_path(key), m_prov);
  } else {
    if (!n->is_map()) fail(*n, key, std::string("expected a map (") + f.doc + ")");
    out = read_config<T>(*n, child_path(key), m_prov);
  }
}

template <class T>
void ConfigReader::object(const char* key, T& out, const Field& f, const char* preset_kind,
                          const char* default_preset, const char* why) {
  const ConfigNode* n = m_node.is_map() ? m_node.find(key) : nullptr;
  if (n && !n->is_null()) {
    object(key, out, f, preset_kind);
    return;
  }
  m_known.emplace_back(key);
  ConfigNode name = ConfigNode::make_scalar(default_preset);
  name.loc = m_node.loc;
  out = read_preset_config<T>(name, preset_kind, child_path(key), m_prov);
  if (m_prov) (*m_prov)[child_path(key) + ".name"] = {Provenance{"assumption", why}, m_node.loc};
}

template <class E>
void ConfigWriter::choice(const char* key, E& v,
                          const std::vector<std::pair<const char*, E>>& names, const Field&) {
  for (const auto& [name, value] : names)
    if (value == v) put(key, name);
}

template <class T>
void ConfigWriter::object(const char* key, T& v, const Field&, const char*) {
  std::string p = m_path.empty() ? key : m_path + "." + key;
  m_out.set(key, write_config(v, p, m_prov));
}

}  // namespace kappasim
