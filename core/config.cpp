#include "core/config.hpp"

#include "core/config_scan_count.hpp"
#include "core/preset_warm.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace kappasim {

const char* const kProvenanceKinds[4] = {"spec", "measured", "derived", "assumption"};

// ---------------------------------------------------------------------------------------------
// ConfigNode

ConfigNode ConfigNode::make_scalar(std::string v, SourceLoc loc) {
  ConfigNode n;
  n.kind = Kind::Scalar;
  n.scalar = std::move(v);
  n.loc = std::move(loc);
  return n;
}
ConfigNode ConfigNode::make_map(SourceLoc loc) {
  ConfigNode n;
  n.kind = Kind::Map;
  n.loc = std::move(loc);
  return n;
}
// Entries visited by the linear key searches below (issue 26.5: the test holds parsing and
// reading a map of n keys to O(n) visits; core/config_scan_count.hpp).
static std::atomic<std::uint64_t> g_key_visits{0};
std::uint64_t config_key_visits() { return g_key_visits.load(std::memory_order_relaxed); }

const ConfigNode* ConfigNode::find(std::string_view key) const {
  std::uint64_t visited = 0;
  const ConfigNode* hit = nullptr;
  for (const auto& [k, v] : entries) {
    ++visited;
    if (k == key) {
      hit = &v;
      break;
    }
  }
  g_key_visits.fetch_add(visited, std::memory_order_relaxed);
  return hit;
}
ConfigNode* ConfigNode::find(std::string_view key) {
  return const_cast<ConfigNode*>(static_cast<const ConfigNode&>(*this).find(key));
}
ConfigNode& ConfigNode::set(const std::string& key, ConfigNode value) {
  if (kind != Kind::Map) {
    kind = Kind::Map;
    scalar.clear();
    items.clear();
  }
  if (ConfigNode* existing = find(key)) return *existing = std::move(value);
  entries.emplace_back(key, std::move(value));
  return entries.back().second;
}
bool ConfigNode::erase(std::string_view key) {
  auto it =
      std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.first == key; });
  if (it == entries.end()) return false;
  entries.erase(it);
  return true;
}

// ---------------------------------------------------------------------------------------------
// YAML -> ConfigNode

namespace {

SourceLoc loc_of(const YAML::Mark& m, const std::string& file) {
  if (m.line < 0) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

// {value: X, spec: "..."} collapses into X with a provenance.
// Optional `low:` / `high:` beside it declare the range `kappasim sensitivity` varies it over.
bool collapse_provenance(ConfigNode& n) {
  if (!n.is_map() || n.entries.size() < 2 || n.entries.size() > 4) return false;
  const ConfigNode* value = n.find("value");
  if (!value) return false;
  const ConfigNode* low = n.find("low");
  const ConfigNode* high = n.find("high");
  if (n.entries.size() != 2u + (low ? 1u : 0u) + (high ? 1u : 0u)) return false;
  for (const char* kind : kProvenanceKinds) {
    const ConfigNode* src = n.find(kind);
    if (!src) continue;
    if (!src->is_scalar() || src->scalar.empty())
      throw InputError(src->loc, std::string("provenance '") + kind +
                                     "' must be a non-empty text naming the source");
    for (const ConfigNode* b : {low, high})
      if (b && (!b->is_scalar() || b->scalar.empty()))
        throw InputError(b->loc, "provenance 'low'/'high' must be a value like the one in 'value'");
    ConfigNode out = *value;
    out.provenance =
        Provenance{kind, src->scalar, low ? low->scalar : "", high ? high->scalar : ""};
    out.key_loc = n.key_loc;
    n = std::move(out);
    return true;
  }
  return false;
}

// YAML aliases share nodes: "&a {b: *a}" is a cycle and nested aliases of aliases grow
// exponentially when expanded into a tree. No config comes near these limits.
constexpr int kMaxDepth = 200;
constexpr long kMaxValues = 100000;
struct Budget {
  int depth = 0;
  long values = 0;
};

ConfigNode convert(const YAML::Node& y, const std::string& file, Budget& budget) {
  ConfigNode n;
  n.loc = loc_of(y.Mark(), file);
  if (++budget.values > kMaxValues)
    throw InputError(n.loc, "the YAML holds more than " + std::to_string(kMaxValues) +
                                " values once its aliases are expanded; expected a config");
  if (budget.depth >= kMaxDepth)
    throw InputError(n.loc, "the YAML nests deeper than " + std::to_string(kMaxDepth) +
                                " levels (an alias inside its own anchor?); expected a config");
  struct Nest {
    int& depth;
    explicit Nest(int& d) : depth(++d) {}
    ~Nest() { --depth; }
  } nest(budget.depth);
  switch (y.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      n.kind = ConfigNode::Kind::Null;
      break;
    case YAML::NodeType::Scalar:
      n.kind = ConfigNode::Kind::Scalar;
      n.scalar = y.Scalar();
      n.quoted = y.Tag() == "!";  // yaml-cpp tags quoted scalars "!"
      break;
    case YAML::NodeType::Sequence:
      n.kind = ConfigNode::Kind::Seq;
      for (const auto& item : y) n.items.push_back(convert(item, file, budget));
      break;
    case YAML::NodeType::Map: {
      n.kind = ConfigNode::Kind::Map;
      std::vector<ConfigNode> bases;  // from `<<` merge keys
      std::vector<std::pair<std::string, ConfigNode>> own;
      std::unordered_map<std::string, std::size_t> own_index;
      for (const auto& kv : y) {
        if (!kv.first.IsScalar())
          throw InputError(loc_of(kv.first.Mark(), file), "map keys must be plain names");
        std::string key = kv.first.Scalar();
        ConfigNode child = convert(kv.second, file, budget);
        child.key_loc = loc_of(kv.first.Mark(), file);
        if (key == "<<") {
          if (child.is_map()) {
            bases.push_back(std::move(child));
          } else if (child.kind == ConfigNode::Kind::Seq) {
            for (auto& item : child.items) {
              if (!item.is_map()) throw InputError(item.loc, "a '<<' merge list must hold maps");
              bases.push_back(std::move(item));
            }
          } else {
            throw InputError(child.loc, "'<<' must merge a map (an alias such as *base)");
          }
          continue;
        }
        // A hash index, not a scan of the keys so far: a map of n keys costs O(n) (issue 26.5).
        const auto [at, fresh] = own_index.emplace(key, own.size());
        if (!fresh)
          throw InputError(child.key_loc, "duplicate key '" + key + "' (first at line " +
                                              std::to_string(own[at->second].second.key_loc.line) +
                                              ")");
        own.emplace_back(std::move(key), std::move(child));
      }
      // Earlier merge sources win over later ones (YAML merge-key rule); own keys win over all.
      for (auto it = bases.rbegin(); it != bases.rend(); ++it) merge_into(n, *it);
      if (n.entries.empty()) {
        n.entries = std::move(own);
      } else {
        std::unordered_map<std::string, std::size_t> merged;
        for (std::size_t i = 0; i < n.entries.size(); ++i) merged.emplace(n.entries[i].first, i);
        for (auto& [k, v] : own) {
          if (auto e = merged.find(k); e != merged.end()) {
            n.entries[e->second].second = std::move(v);
          } else {
            n.entries.emplace_back(std::move(k), std::move(v));
          }
        }
      }
      n.kind = ConfigNode::Kind::Map;
      collapse_provenance(n);
      break;
    }
  }
  return n;
}

// Records where a YAML document starts (its first node, else its start marker) and ignores its
// content (parse_yaml's document count).
struct DocumentStarts : YAML::EventHandler {
  bool seen = false, has_node = false;
  YAML::Mark mark;
  void node(const YAML::Mark& m) {
    if (!has_node) mark = m;
    has_node = true;
  }
  void OnDocumentStart(const YAML::Mark& m) override {
    seen = true;
    if (!has_node) mark = m;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    node(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnMapEnd() override {}
};

// Whether emit_yaml quotes a text: anything YAML would read as something else in plain form (an
// indicator, edge spaces, a line break). EmittedReader reads as plain only what this leaves plain.
bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  static const std::string_view specials = ":#{}[],&*!|>'\"%@`";
  if (s.front() == ' ' || s.back() == ' ' || s.front() == '-' || s.front() == '?') return true;
  for (char c : s)
    if (specials.find(c) != std::string_view::npos || c == '\n') return true;
  return false;
}

// ---- The subset emit_yaml writes, read without yaml-cpp (issue 24) ----------------------------
// A sweep point's process reads the point.yaml its runner has just written (emit_yaml), and the
// report reads values back from them: yaml-cpp was 4.3% of `reproduce`'s CPU samples (≈ 5,600
// texts of ≈ 2.5 kB), 0.9% with this reader in front of it. The built-in presets a run reads are
// hand-written in nearly the same subset, and yaml-cpp reading them was most of a run's start
// (35 M of a one-request run's 55 M instructions). This reader accepts only that subset and
// builds the node yaml-cpp and convert() would build, marks included; any other text (a flow
// list, an anchor, a tab, a byte outside printable ASCII, a key `<<`, a duplicate key, a
// single-quoted or literal scalar, ...) gets std::nullopt and goes to yaml-cpp, which also gives
// every error its message. The subset, line by line (I = the block's indent, in spaces; blank
// lines and comment lines, at any indent, are skipped; a comment after a value, a '#' after a
// space outside a double-quoted text, is cut with the spaces before it):
//   I KEY:                 a key whose value is the block below at I + 2 (a map or a list)
//   I KEY: VALUE           a key and an inline value
//   I KEY: >- (or >)       a key and folded text: the lines below at one deeper indent, joined
//                          by spaces (`>` keeps one final line break)
//   I-                     a list item whose value is the block below at I + 2
//   I- VALUE               a list item with an inline value
// KEY: a plain name (what emit_yaml leaves unquoted) or a double-quoted text; VALUE: {}, [], a
// plain scalar (null, Null, NULL and ~ read as null, as yaml-cpp reads them; outside a flow map
// also one with commas, brackets or an inner '#': block_plain_ok), a double-quoted text (escapes
// \" \\ \n only), or a one-line flow map of such keys and scalars or flow maps (what a value
// with a provenance is written as: {value: 80 GB, spec: "..."}; a preset reference with a key:
// {preset: pcie5, lanes: {value: 16, spec: "..."}}).
class EmittedReader {
 public:
  EmittedReader(std::string_view text, const std::string& file) : m_file(file) {
    std::size_t at = 0;
    while (at < text.size()) {
      const std::size_t nl = text.find('\n', at);
      if (nl == std::string_view::npos) {  // emit_yaml ends every line
        m_ok = false;
        return;
      }
      m_lines.push_back(text.substr(at, nl - at));
      at = nl + 1;
    }
    for (std::string_view l : m_lines)  // tabs, CR, NUL, UTF-8 outside a comment: yaml-cpp's
      if (!(comment_line(l) ? comment_text(l) : printable_ascii(l))) m_ok = false;
  }

  std::optional<ConfigNode> read() {
    if (!m_ok) return std::nullopt;
    // Comment and blank lines (a header: "# kappasim sweep: ..."; a preset's notes): yaml-cpp
    // skips them and counts their lines, as loc() does.
    skip();
    if (m_line == m_lines.size() || indent_of(m_line) != 0) return std::nullopt;
    for (std::string_view l : m_lines)  // a document marker, or what might read as one
      if (l.substr(0, 3) == "---" || l.substr(0, 3) == "...") return std::nullopt;
    ConfigNode root;
    if (!block(0, 0, root) || m_line != m_lines.size()) return std::nullopt;
    if (!root.is_map()) return std::nullopt;  // a root list: yaml-cpp (no config is one)
    return root;
  }

 private:
  static constexpr int kMaxNest = 100;  // below convert()'s limit: deeper goes to yaml-cpp
  static constexpr std::size_t kMaxKeyChars = 1000;

  static bool printable_ascii(std::string_view l) {
    for (char c : l)
      if (c < 0x20 || c > 0x7e) return false;
    return true;
  }
  static bool comment_line(std::string_view l) {
    const std::size_t n = l.find_first_not_of(' ');
    return n != std::string_view::npos && l[n] == '#';
  }
  // A comment line's text (issue 24: a config's comments name κ, ≈ or ×, and sent the whole file
  // to yaml-cpp, ≈ 1.5 M instructions of a run's start): printable ASCII, and UTF-8 for YAML's
  // printable characters beyond it, none that YAML 1.1 reads as a line break (U+0085, U+2028,
  // U+2029), no byte-order mark, no C1 control. Anything else goes to yaml-cpp as before.
  static bool comment_text(std::string_view l) {
    const auto* p = reinterpret_cast<const unsigned char*>(l.data());
    const auto* const end = p + l.size();
    while (p < end) {
      const unsigned lead = *p;
      if (lead >= 0x20 && lead <= 0x7e) {
        ++p;
        continue;
      }
      std::size_t more = 0;  // continuation bytes
      std::uint32_t cp = 0;
      if (lead >= 0xc2 && lead <= 0xdf) {
        more = 1;
        cp = lead & 0x1fu;
      } else if (lead >= 0xe0 && lead <= 0xef) {
        more = 2;
        cp = lead & 0x0fu;
      } else if (lead >= 0xf0 && lead <= 0xf4) {
        more = 3;
        cp = lead & 0x07u;
      } else {
        return false;  // a control, DEL, a stray continuation byte, or no UTF-8 lead byte
      }
      if (static_cast<std::size_t>(end - p) <= more) return false;  // cut short
      for (std::size_t k = 1; k <= more; ++k) {
        if ((p[k] & 0xc0u) != 0x80u) return false;
        cp = (cp << 6) | (p[k] & 0x3fu);
      }
      const std::uint32_t least = more == 1 ? 0x80u : more == 2 ? 0x800u : 0x10000u;
      if (cp < least) return false;  // overlong
      const bool printable = (cp >= 0xa0u && cp <= 0xd7ffu) || (cp >= 0xe000u && cp <= 0xfffdu) ||
                             (cp >= 0x10000u && cp <= 0x10ffffu);
      if (!printable || cp == 0x2028u || cp == 0x2029u || cp == 0xfeffu) return false;
      p += more + 1;
    }
    return true;
  }

  std::size_t indent_of(std::size_t i) const {
    const std::string_view l = m_lines[i];
    std::size_t n = 0;
    while (n < l.size() && l[n] == ' ') ++n;
    return n;
  }
  SourceLoc loc(std::size_t line, std::size_t col) const {
    return {m_file, static_cast<int>(line) + 1, static_cast<int>(col) + 1};
  }
  // A line with nothing for the parser: blank (spaces only) or a comment, at any indent.
  bool skippable(std::size_t i) const {
    const std::size_t n = indent_of(i);
    return n == m_lines[i].size() || m_lines[i][n] == '#';
  }
  void skip() {
    while (m_line < m_lines.size() && skippable(m_line)) ++m_line;
  }
  // A line's content without its comment (a '#' after a space, outside a double-quoted text)
  // and the spaces before it, as yaml-cpp ends a value there. A '"' inside a plain scalar
  // would be taken for a quote here; block_plain_ok declines such a scalar.
  static std::string_view strip_comment(std::string_view s) {
    bool quoted = false;
    std::size_t end = s.size();
    for (std::size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (quoted) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          quoted = false;
      } else if (c == '"') {
        quoted = true;
      } else if (c == '#' && i > 0 && s[i - 1] == ' ') {
        end = i;
        break;
      }
    }
    while (end > 0 && s[end - 1] == ' ') --end;
    return s.substr(0, end);
  }
  static bool item_line(std::string_view content) {
    return content == "-" || (content.size() >= 2 && content[0] == '-' && content[1] == ' ');
  }
  // A plain scalar as emit_yaml writes one (needs_quotes false). In a flow map yaml-cpp also ends
  // a plain scalar at '?' (its EndScalarInFlow).
  static bool plain_ok(std::string_view s, bool flow = false) {
    return !needs_quotes(s) && !(flow && s.find('?') != std::string_view::npos);
  }
  // A plain scalar outside a flow map (a value on its key's line, a list item), as hand-written
  // presets have them ("8x H100 SXM5, PCIe 5.0 x16", "-1"): YAML ends one only at ": " or " #"
  // (both already cut or declined here) and reads a first indicator as something else. Taken:
  // one that starts with no indicator ('-' only before a non-space), holds no ": ", no " #", no
  // '"', and ends in neither ':' nor ' '; anything else goes to yaml-cpp.
  static bool block_plain_ok(std::string_view s) {
    if (plain_ok(s)) return true;
    if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
    static const std::string_view first = "?:,[]{}#&*!|>'\"%@`";
    if (first.find(s.front()) != std::string_view::npos) return false;
    if (s.front() == '-' && (s.size() < 2 || s[1] == ' ')) return false;
    return s.find(": ") == std::string_view::npos && s.find(" #") == std::string_view::npos &&
           s.find('"') == std::string_view::npos;
  }
  static bool null_word(std::string_view s) {
    return s == "~" || s == "null" || s == "Null" || s == "NULL";
  }
  bool count_value() { return ++m_values <= kMaxValues; }

  // A double-quoted text at s[at] == '"': its value, `at` moved past the closing quote.
  static bool quoted(std::string_view s, std::size_t& at, std::string& out) {
    out.clear();
    for (std::size_t i = at + 1; i < s.size(); ++i) {
      const char c = s[i];
      if (c == '"') {
        at = i + 1;
        return true;
      }
      if (c == '\\') {
        if (++i == s.size()) return false;
        const char e = s[i];
        if (e == '"' || e == '\\')
          out += e;
        else if (e == 'n')
          out += '\n';
        else
          return false;  // any other escape: yaml-cpp's
        continue;
      }
      out += c;
    }
    return false;
  }

  // A key at content[0..]: its text and where its ':' is; then ": " or ":" at the end. yaml-cpp
  // refuses an implicit key whose ':' is more than 1,024 characters after its start: such a key
  // is declined (past 1,000, to be safe).
  static bool key(std::string_view content, std::string& k, std::size_t& colon, bool flow) {
    if (!content.empty() && content[0] == '"') {
      std::size_t at = 0;
      if (!quoted(content, at, k) || at >= content.size() || content[at] != ':') return false;
      colon = at;
      return colon <= kMaxKeyChars && k != "<<";  // convert() merges any "<<", quoted or not
    }
    colon = content.find(':');
    if (colon == std::string_view::npos || colon > kMaxKeyChars) return false;
    k = std::string(content.substr(0, colon));
    // A plain key: no null (yaml-cpp reads "~: 1" as a null key) and no merge key.
    return plain_ok(k, flow) && !null_word(k) && k != "<<";
  }

  // An inline value text (the rest of its line from column col), into n.
  bool inline_value(std::string_view v, std::size_t line, std::size_t col, ConfigNode& n) {
    if (!count_value()) return false;
    n.loc = loc(line, col);
    if (v == "{}") {
      n.kind = ConfigNode::Kind::Map;
      return true;
    }
    if (v == "[]") {
      n.kind = ConfigNode::Kind::Seq;
      return true;
    }
    if (!v.empty() && v[0] == '{') return flow_map(v, line, col, n);
    return scalar(v, line, col, n, false);
  }
  // A scalar filling v (in a flow map: up to ',' or '}' — plain_ok excludes both).
  bool scalar(std::string_view v, std::size_t line, std::size_t col, ConfigNode& n, bool flow) {
    if (flow && !count_value()) return false;
    n.loc = loc(line, col);
    if (!v.empty() && v[0] == '"') {
      std::size_t at = 0;
      if (!quoted(v, at, n.scalar) || at != v.size()) return false;
      n.kind = ConfigNode::Kind::Scalar;
      n.quoted = true;
      return true;
    }
    if (!(flow ? plain_ok(v, true) : block_plain_ok(v))) return false;
    if (null_word(v)) {
      n.kind = ConfigNode::Kind::Null;
      return true;
    }
    n.kind = ConfigNode::Kind::Scalar;
    n.scalar = std::string(v);
    return true;
  }
  // {k: v, k: v} on one line, the whole of v: keys plain or quoted, values scalars.
  bool flow_map(std::string_view v, std::size_t line, std::size_t col, ConfigNode& n) {
    if (v.size() < 2 || v.back() != '}') return false;
    n.kind = ConfigNode::Kind::Map;
    Keys keys;
    std::size_t at = 1;
    for (;;) {
      std::string k;
      std::size_t colon = 0;
      const std::string_view rest = v.substr(at, v.size() - 1 - at);
      if (!key(rest, k, colon, true) || colon + 1 >= rest.size() || rest[colon + 1] != ' ')
        return false;
      const std::size_t vstart = at + colon + 2;
      // The value ends at ", " or at the closing brace (a quoted one at its closing quote).
      std::size_t vend;
      if (vstart < v.size() && v[vstart] == '{') {  // a flow map in it (a preset and its keys)
        vend = closing_brace(v, vstart);
        if (vend == std::string_view::npos || vend + 1 >= v.size() || !count_value()) return false;
        ++vend;
        ConfigNode child;
        child.loc = loc(line, col + vstart);
        if (!flow_map(v.substr(vstart, vend - vstart), line, col + vstart, child)) return false;
        child.key_loc = loc(line, col + at);
        if (!add(n, keys, std::move(k), std::move(child))) return false;
        if (vend == v.size() - 1) break;
        if (v.compare(vend, 2, ", ") != 0) return false;
        at = vend + 2;
        continue;
      }
      if (vstart < v.size() && v[vstart] == '"') {
        std::string tmp;
        vend = vstart;
        if (!quoted(v, vend, tmp)) return false;
      } else {
        vend = v.find_first_of(",}", vstart);
      }
      if (vend == std::string_view::npos || vend >= v.size()) return false;
      ConfigNode child;
      if (!scalar(v.substr(vstart, vend - vstart), line, col + vstart, child, true)) return false;
      child.key_loc = loc(line, col + at);
      if (!add(n, keys, std::move(k), std::move(child))) return false;
      if (vend == v.size() - 1) break;  // the closing brace
      if (v.compare(vend, 2, ", ") != 0) return false;
      at = vend + 2;
    }
    return finish_map(n);
  }
  // The '}' closing the '{' at v[open] (double-quoted texts skipped), or npos.
  static std::size_t closing_brace(std::string_view v, std::size_t open) {
    int depth = 0;
    for (std::size_t i = open; i < v.size(); ++i) {
      const char c = v[i];
      if (c == '"') {
        std::string tmp;
        if (!quoted(v, i, tmp)) return std::string_view::npos;
        --i;  // at the closing quote; the loop steps past it
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        return i;
      }
    }
    return std::string_view::npos;
  }
  // The keys of a map being read, for the duplicate check: a scan while the map is short, a hash
  // set past kScanKeys entries (issue 26.5: a map of n keys costs O(n), as in convert()).
  struct Keys {
    std::unordered_set<std::string> set;
  };
  static constexpr std::size_t kScanKeys = 16;
  static bool add(ConfigNode& map, Keys& keys, std::string k, ConfigNode child) {
    if (map.entries.size() < kScanKeys) {
      for (const auto& e : map.entries)
        if (e.first == k) return false;  // a duplicate: yaml-cpp's path names it
    } else {
      if (keys.set.empty())
        for (const auto& e : map.entries) keys.set.insert(e.first);
      if (!keys.set.insert(k).second) return false;
    }
    map.entries.emplace_back(std::move(k), std::move(child));
    return true;
  }
  static bool finish_map(ConfigNode& n) {
    collapse_provenance(n);  // as convert() does for every map; throws as it does
    return true;
  }

  // The block whose first line is m_line, at `indent`: a map or a list.
  bool block(std::size_t indent, int nest, ConfigNode& n) {
    skip();
    if (nest > kMaxNest || m_line >= m_lines.size() || indent_of(m_line) != indent) return false;
    if (!count_value()) return false;
    n.loc = loc(m_line, indent);
    const bool list = item_line(strip_comment(m_lines[m_line].substr(indent)));
    n.kind = list ? ConfigNode::Kind::Seq : ConfigNode::Kind::Map;
    Keys keys;
    while (m_line < m_lines.size()) {
      skip();
      if (m_line == m_lines.size()) break;
      const std::size_t ind = indent_of(m_line);
      if (ind < indent) break;
      if (ind > indent) return false;
      const std::string_view content = strip_comment(m_lines[m_line].substr(indent));
      if (item_line(content) != list) return false;  // a map and a list at one indent
      const std::size_t line = m_line++;
      if (list) {
        ConfigNode item;
        if (content == "-") {
          if (!block(indent + 2, nest + 1, item)) return false;
        } else if (!inline_value(content.substr(2), line, indent + 2, item)) {
          return false;
        }
        n.items.push_back(std::move(item));
        continue;
      }
      std::string k;
      std::size_t colon = 0;
      if (!key(content, k, colon, false)) return false;
      ConfigNode child;
      if (colon + 1 == content.size()) {
        if (!block(indent + 2, nest + 1, child)) return false;
      } else if (const std::string_view v = content.substr(colon + 1); v == " >-" || v == " >") {
        if (!folded(line, indent + colon + 2, indent, v == " >", child)) return false;
      } else if (content[colon + 1] != ' ' ||
                 !inline_value(content.substr(colon + 2), line, indent + colon + 2, child)) {
        return false;
      }
      child.key_loc = loc(line, indent);
      if (!add(n, keys, std::move(k), std::move(child))) return false;
    }
    return list || finish_map(n);
  }

  // A folded block scalar (`>-`, or `>` keeping one final line break) after the key at
  // `parent`'s indent, its indicator at (line, col): the text lines below it, all at one indent
  // deeper than `parent`, joined by spaces. Declined (yaml-cpp's): a more indented line, a line
  // ending in a space, a blank line inside it.
  bool folded(std::size_t line, std::size_t col, std::size_t parent, bool keep, ConfigNode& n) {
    if (!count_value() || m_line >= m_lines.size()) return false;
    n.loc = loc(line, col);
    const std::size_t ind = indent_of(m_line);
    if (ind <= parent || ind == m_lines[m_line].size()) return false;
    std::string text;
    while (m_line < m_lines.size()) {
      const std::string_view l = m_lines[m_line];
      const std::size_t i = indent_of(m_line);
      if (i == l.size()) {  // blank: only after its last line
        std::size_t j = m_line;
        while (j < m_lines.size() && indent_of(j) == m_lines[j].size()) ++j;
        if (j < m_lines.size() && indent_of(j) >= ind) return false;
        break;
      }
      if (i < ind) break;
      if (i > ind || l.back() == ' ') return false;
      if (!text.empty()) text += ' ';
      text += l.substr(ind);
      ++m_line;
    }
    if (keep) text += '\n';
    n.kind = ConfigNode::Kind::Scalar;
    n.scalar = std::move(text);
    n.quoted = true;  // yaml-cpp tags a block scalar "!", as a quoted one
    return true;
  }

  const std::string& m_file;
  std::vector<std::string_view> m_lines;
  std::size_t m_line = 0;
  long m_values = 0;
  bool m_ok = true;
};

}  // namespace

ConfigNode parse_yaml(std::string_view text, const std::string& filename) {
  return parse_yaml(text, filename, DocumentCheck::Full);
}

std::optional<ConfigNode> parse_emitted_yaml(std::string_view text, const std::string& filename) {
  try {
    return EmittedReader(text, filename).read();
  } catch (const InputError&) {
    return std::nullopt;  // collapse_provenance refused it: yaml-cpp's path says so, as ever
  }
}

ConfigNode parse_yaml(std::string_view text, const std::string& filename, DocumentCheck check) {
  if (std::optional<ConfigNode> n = parse_emitted_yaml(text, filename)) return std::move(*n);
  return parse_yaml_cpp(text, filename, check);
}

ConfigNode parse_yaml_cpp(std::string_view text, const std::string& filename, DocumentCheck check) {
  // Issue 26.17: a NUL byte is named with its place (yaml-cpp would stop reading at it).
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    const auto before = text.substr(0, nul);
    const int line = 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
    const auto bol = before.rfind('\n');
    const int col = static_cast<int>(nul - (bol == std::string_view::npos ? 0 : bol + 1)) + 1;
    throw InputError(SourceLoc{filename, line, col},
                     "a NUL byte (binary data?); expected a YAML text");
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
    // A built-in preset is one document (Config.BuiltInPresetsAreOneDocumentEach), so
    // it skips the second pass: that pass scans the whole text again, half of the parse.
    // A second document (after `---`) is an error, not silently dropped. yaml-cpp's LoadAll
    // never ends on some malformed texts (0.7: its loop keeps building empty documents; found by
    // fuzz_sweep), so the documents are counted by the event parser, two at most.
    if (check == DocumentCheck::Full) {
      std::istringstream in{std::string(text)};
      YAML::Parser parser(in);
      DocumentStarts first, second;
      if (parser.HandleNextDocument(first) && parser.HandleNextDocument(second) && second.seen)
        throw InputError(loc_of(second.mark, filename),
                         "a second YAML document (after '---'); a config file holds one document");
    }
  } catch (const YAML::Exception& e) {
    std::string msg = e.msg;
    // yaml-cpp's depth guard reports itself as "bad file"; say what it is.
    if (msg == "bad file" || msg.find("recursion") != std::string::npos)
      msg = "nested too deeply (more than yaml-cpp's limit of flow or block levels)";
    throw InputError(loc_of(e.mark, filename), "YAML syntax error: " + msg);
  }
  Budget budget;
  ConfigNode n = convert(root, filename, budget);
  if (n.loc.line == 0) n.loc = {filename, 1, 1};
  return n;
}

ConfigNode load_yaml_file(const std::string& path) {
  // Only regular files of at most kMaxConfigFileBytes (issue 12, item 9): a device such as
  // /dev/zero or a FIFO would never end, and a huge file would take minutes and gigabytes to
  // parse before the value budget rejects it.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw InputError("cannot read config file '" + path +
                     "': not a regular file (a folder, device or pipe)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read config file '" + path + "': " + std::strerror(errno));
  // Read in blocks up to one byte past the limit (issue 24: not a 4 MiB zero-filled buffer per
  // config: that was most of a small run's start-up).
  std::string text;
  char block[1 << 16];
  while (text.size() <= kMaxConfigFileBytes && in) {
    const std::size_t want = std::min(sizeof block, kMaxConfigFileBytes + 1 - text.size());
    in.read(block, static_cast<std::streamsize>(want));
    text.append(block, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw IoError("cannot read config file '" + path + "': " + std::strerror(errno));
  if (text.size() > kMaxConfigFileBytes)
    throw InputError(
        "config file '" + path + "' is larger than " + std::to_string(kMaxConfigFileBytes >> 20) +
        " MiB, the limit for a config, preset or sweep spec (the largest shipped one is a few kB)");
  return parse_yaml(text, path);
}

void merge_into(ConfigNode& base, const ConfigNode& over) {
  if (over.is_map() && base.kind == ConfigNode::Kind::Seq && !over.entries.empty()) {
    // --set cluster.nodes.0.count=2: a key of decimal digits indexes the list.
    bool indices = true;
    for (const auto& [k, v] : over.entries)
      indices = indices && !k.empty() && k.size() < 10 &&
                k.find_first_not_of("0123456789") == std::string::npos;
    if (indices) {
      for (const auto& [k, v] : over.entries) {
        const std::size_t i = std::stoul(k);
        if (i >= base.items.size())
          throw InputError(v.loc, "index " + k + " is past the list's " +
                                      std::to_string(base.items.size()) +
                                      " item(s) (list items are numbered from 0)");
        merge_into(base.items[i], v);
      }
      return;
    }
  }
  if (over.is_map()) {
    if (base.is_scalar() && !over.find("preset")) {
      // A preset name being refined: h100 + {gpu: ...} = {preset: h100, gpu: ...}
      ConfigNode name = base;
      name.key_loc = {};
      ConfigNode m = ConfigNode::make_map(base.loc);
      m.key_loc = base.key_loc;
      m.entries.emplace_back("preset", std::move(name));
      base = std::move(m);
    }
    if (base.is_map() && !over.find("preset")) {
      // Indexed by key, so merging maps of n keys is O(n), not O(n^2) (issue 26.5).
      std::unordered_map<std::string, std::size_t> index;
      for (std::size_t i = 0; i < base.entries.size(); ++i) index.emplace(base.entries[i].first, i);
      for (const auto& [k, v] : over.entries) {
        if (auto e = index.find(k); e != index.end()) {
          merge_into(base.entries[e->second].second, v);
        } else {
          index.emplace(k, base.entries.size());
          base.entries.emplace_back(k, v);
        }
      }
      return;
    }
  }
  SourceLoc key_loc = base.key_loc;
  base = over;
  if (base.key_loc.file.empty()) base.key_loc = key_loc;
}

void apply_set(ConfigNode& root, std::string_view assignment) {
  const std::string where = "--set " + std::string(assignment);
  auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw InputError(
        "--set expects KEY.PATH=VALUE (e.g. system.gpu.hbm_bandwidth=\"4 TB/s\"), got '" +
        std::string(assignment) + "'");
  std::string_view path = assignment.substr(0, eq);
  std::string_view value = assignment.substr(eq + 1);
  // `--set key=` is a typo or a shell variable that expanded to nothing, never a request to
  // delete the key (issue 12, item 14).
  if (value.find_first_not_of(" \t") == std::string_view::npos)
    throw InputError("--set " + std::string(assignment) + ": no value after '='; expected " +
                     std::string(path) + "=VALUE");
  std::vector<std::string> keys;
  std::size_t start = 0;
  while (true) {
    auto dot = path.find('.', start);
    std::string k(
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (k.empty()) throw InputError("--set: empty key component in '" + std::string(path) + "'");
    keys.push_back(k);
    if (keys.size() > static_cast<std::size_t>(kMaxDepth))  // merge_into recurses per key
      throw InputError("--set: the key path has more than " + std::to_string(kMaxDepth) +
                       " components; expected a config key such as serving.tp");
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  ConfigNode v;
  try {
    v = parse_yaml(value, where);
  } catch (const InputError& e) {
    throw InputError(std::string("in ") + where + ": value is not valid YAML: " + e.what());
  }
  if (v.is_null() && !value.empty()) v = ConfigNode::make_scalar(std::string(value));
  v.loc = {where, 0, 0};
  v.key_loc = {where, 0, 0};
  // Build {k1: {k2: ... value}} and merge it, so preset names along the path get refined.
  ConfigNode over = std::move(v);
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    ConfigNode m = ConfigNode::make_map({where, 0, 0});
    m.key_loc = {where, 0, 0};
    m.entries.emplace_back(*it, std::move(over));
    over = std::move(m);
  }
  if (root.is_null()) root = ConfigNode::make_map(root.loc);
  merge_into(root, over);
}

// ---------------------------------------------------------------------------------------------
// Emitting YAML

namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}
// Texts (quoted in the source, or written by ConfigWriter::text) are quoted only where YAML
// would otherwise read them as something else; numbers, booleans and names never need it.
std::string scalar_text(const ConfigNode& n) {
  bool q = needs_quotes(n.scalar);
  if (n.quoted && !q) {
    static const char* words[] = {"true", "false", "True", "False", "null",
                                  "yes",  "no",    "on",   "off",   "~"};
    for (const char* w : words) q = q || n.scalar == w;
    q = q || std::isdigit(static_cast<unsigned char>(n.scalar[0])) || n.scalar[0] == '.' ||
        n.scalar[0] == '+';
  }
  return q ? quote(n.scalar) : n.scalar;
}
void emit(const ConfigNode& n, int indent, bool prov, std::string& out);

std::string inline_value(const ConfigNode& n, bool prov) {
  if (n.is_null()) return "null";
  std::string v = scalar_text(n);
  if (prov && n.provenance)
    return "{value: " + v + ", " + n.provenance->kind + ": " + quote(n.provenance->source) +
           (n.provenance->low.empty() ? "" : ", low: " + n.provenance->low) +
           (n.provenance->high.empty() ? "" : ", high: " + n.provenance->high) + "}";
  return v;
}

void emit(const ConfigNode& n, int indent, bool prov, std::string& out) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  if (n.is_map()) {
    for (const auto& [k, v] : n.entries) {
      out += pad + (needs_quotes(k) ? quote(k) : k) + ":";
      if (v.is_map() && !v.entries.empty()) {
        out += "\n";
        emit(v, indent + 2, prov, out);
      } else if (v.kind == ConfigNode::Kind::Seq && !v.items.empty()) {
        out += "\n";
        emit(v, indent + 2, prov, out);
      } else if (v.is_map()) {
        out += " {}\n";
      } else if (v.kind == ConfigNode::Kind::Seq) {
        out += " []\n";
      } else {
        out += " " + inline_value(v, prov) + "\n";
      }
    }
  } else if (n.kind == ConfigNode::Kind::Seq) {
    for (const auto& item : n.items) {
      // An empty map or list is written inline: "-" alone would read back as null.
      if (item.is_map() && item.entries.empty()) {
        out += pad + "- {}\n";
      } else if (item.kind == ConfigNode::Kind::Seq && item.items.empty()) {
        out += pad + "- []\n";
      } else if (item.is_map() || item.kind == ConfigNode::Kind::Seq) {
        out += pad + "-\n";
        emit(item, indent + 2, prov, out);
      } else {
        out += pad + "- " + inline_value(item, prov) + "\n";
      }
    }
  } else {
    out += pad + inline_value(n, prov) + "\n";
  }
}

}  // namespace

std::string emit_yaml(const ConfigNode& node, bool with_provenance) {
  std::string out;
  emit(node, 0, with_provenance, out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Suggestions

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string unknown_key_message(const std::string& key, const std::vector<std::string>& allowed,
                                const std::string& where) {
  std::string all;
  for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
  const std::string near = nearest(key, allowed);
  return "unknown key '" + key + "' in " + where +
         (near.empty() ? "" : "; did you mean '" + near + "'?") + " (expected one of " + all + ")";
}

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Close enough to be a typo: at most a third of the word, and at least 2 edits allowed.
  std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return best_d <= limit ? best : std::string();
}

namespace {
// "; did you mean 'a'?" or, when several names are equally close (h100-sxm -> h100-sxm5 and
// h200-sxm; llama-3.1-7b -> llama-3.1-70b and llama-3.1-8b), "; did you mean 'a' or 'b'?":
// naming only the first of a tie would pick one at random by sort order.
std::string preset_suggestion(const std::string& word, const std::vector<std::string>& names) {
  const std::string best = nearest(word, names);
  if (best.empty()) return "";
  const std::size_t d = edit_distance(word, best);
  std::vector<std::string> tied;
  for (const auto& n : names)
    if (edit_distance(word, n) == d) tied.push_back(n);
  std::string out = "; did you mean ";
  for (std::size_t i = 0; i < tied.size(); ++i)
    out += (i == 0 ? "" : (i + 1 == tied.size() ? " or " : ", ")) + ("'" + tied[i] + "'");
  return out + "?";
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Presets

namespace {
const std::vector<std::pair<std::string, std::string>>& kind_folders() {
  static const std::vector<std::pair<std::string, std::string>> k = {
      {"model", "models"},
      {"gpu", "gpus"},
      {"link", "links"},
      {"host-memory", "host-memory"},
      {"system", "systems"},
      {"design", "design"},  // models/design area/power coefficients
      {"stack", "stacks"},   // serving software stacks (serving/stack_profile.hpp)
      {"cxl", "cxl-expanders"},
      {"nvme", "nvme-drives"},                  // KV tiers below DRAM (issue 14)
      {"cxl-pool", "cxl-pools"},                // a CXL switch and its pooled devices (issue 25)
      {"transfer-engine", "transfer-engines"},  // P/D hand-off profiles (serving/handoff.hpp)
  };
  return k;
}

bool looks_numeric(const ConfigNode& n) {
  if (!n.is_scalar() || n.quoted || n.scalar.empty()) return false;
  char c = n.scalar.front();
  return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+';
}

void apply_default_provenance(ConfigNode& n, const Provenance& p) {
  if (n.is_map()) {
    for (auto& [k, v] : n.entries) apply_default_provenance(v, p);
  } else if (n.kind == ConfigNode::Kind::Seq) {
    for (auto& v : n.items) apply_default_provenance(v, p);
  } else if (looks_numeric(n) && !n.provenance) {
    n.provenance = p;
  }
}
}  // namespace

// Defined in the generated presets_embedded.cpp.
struct EmbeddedPreset {
  const char* path;
  const char* text;
  std::size_t size;
};
extern const EmbeddedPreset kEmbeddedPresets[];
extern const std::size_t kEmbeddedPresetCount;

std::string PresetRegistry::folder_of(const std::string& kind) {
  for (const auto& [k, f] : kind_folders())
    if (k == kind) return f;
  return kind;
}

PresetRegistry& PresetRegistry::instance() {
  static PresetRegistry reg = [] {
    PresetRegistry r;
    for (std::size_t i = 0; i < kEmbeddedPresetCount; ++i) {
      std::filesystem::path p(kEmbeddedPresets[i].path);  // presets/<folder>/<name>.yaml
      std::string folder = p.parent_path().filename().string();
      for (const auto& [k, f] : kind_folders())
        if (f == folder) {
          // A view of the compiled-in text, neither measured nor copied (issue 24).
          r.m_presets[k][p.stem().string()] = Entry{
              p.string(), {}, nullptr, true, kEmbeddedPresets[i].text, kEmbeddedPresets[i].size};
        }
    }
    if (const char* env = std::getenv("KAPPASIM_PRESET_PATH")) {
      std::string s(env);
      std::size_t start = 0;
      while (start <= s.size()) {
        auto colon = s.find(':', start);
        std::string dir =
            s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        if (!dir.empty()) r.add_directory(dir);
        if (colon == std::string::npos) break;
        start = colon + 1;
      }
    }
    return r;
  }();
  return reg;
}

void PresetRegistry::add_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError("preset directory '" + dir + "' does not exist or is not a directory");
  for (const auto& [kind, folder] : kind_folders()) {
    fs::path sub = fs::path(dir) / folder;
    if (!fs::is_directory(sub, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(sub))
      if (e.path().extension() == ".yaml" || e.path().extension() == ".yml")
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      add_text(kind, f.stem().string(), f.string(), ss.str());
    }
  }
}

void PresetRegistry::add_text(const std::string& kind, const std::string& name,
                              const std::string& file, std::string text) {
  m_presets[kind][name] = Entry{file, std::move(text), nullptr, false};
}

const ConfigNode* PresetRegistry::find(const std::string& kind, const std::string& name) const {
  auto k = m_presets.find(kind);
  if (k == m_presets.end()) return nullptr;
  auto e = k->second.find(name);
  if (e == k->second.end()) return nullptr;
  const Entry& entry = e->second;
  note_input("preset " + kind + " " + name, entry.text());
  if (!entry.parsed) {
    ConfigNode n = parse_yaml(entry.text(), entry.file,
                              entry.built_in ? DocumentCheck::KnownSingle : DocumentCheck::Full);
    if (!n.is_map()) throw InputError(n.loc, "a preset file must hold a map of keys");
    if (const ConfigNode* p = n.find("provenance")) {
      ConfigNode prov = *p;
      if (!prov.provenance && prov.is_map() && prov.entries.size() == 1) {
        const auto& [pk, pv] = prov.entries.front();
        bool ok = false;
        for (const char* kname : kProvenanceKinds) ok = ok || pk == kname;
        if (!ok || !pv.is_scalar())
          throw InputError(prov.loc,
                           "'provenance' must be {spec|measured|derived|assumption: \"source\"}");
        n.erase("provenance");
        apply_default_provenance(n, Provenance{pk, pv.scalar, "", ""});
      } else {
        throw InputError(p->loc,
                         "'provenance' must be {spec|measured|derived|assumption: \"source\"}");
      }
    }
    if (const ConfigNode* nm = n.find("name"); nm && nm->scalar != name)
      throw InputError(
          nm->loc, "preset name '" + nm->scalar + "' does not match its file name '" + name + "'");
    entry.parsed = std::make_shared<ConfigNode>(std::move(n));
  }
  return entry.parsed.get();
}

// ---- preset files by path, and the input log (issue 12.11) ----

bool is_preset_file_ref(const std::string& ref) {
  auto ends = [&](const char* suf) {
    const std::size_t n = std::strlen(suf);
    return ref.size() > n && ref.compare(ref.size() - n, n, suf) == 0;
  };
  return ref.find('/') != std::string::npos || ends(".yaml") || ends(".yml");
}

std::string resolve_preset_file(const std::string& ref, const SourceLoc& at) {
  namespace fs = std::filesystem;
  fs::path p(ref);
  std::error_code ec;
  if (p.is_relative() && !at.file.empty() && fs::is_regular_file(at.file, ec)) {
    const fs::path dir = fs::path(at.file).parent_path();
    if (!dir.empty()) p = dir / p;
  }
  const fs::path abs = fs::absolute(p, ec);
  return (ec ? p : abs).lexically_normal().string();
}

const ConfigNode* PresetRegistry::find_file(const std::string& kind, const std::string& path,
                                            const SourceLoc& at) const {
  auto it = m_files.find(path);
  if (it == m_files.end()) {
    // A preset is a few kB: refuse devices, FIFOs and huge files before reading (/dev/zero), with
    // the same limit as any config file (kMaxConfigFileBytes), and quote the path shortly.
    const std::string shown = excerpt(path);  // 60 bytes, as every quoted value (bad-inputs.md)
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
      throw InputError(at, "the " + kind + " preset file '" + shown + "' is not a regular file");
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxConfigFileBytes)
      throw InputError(at, "the " + kind + " preset file '" + shown + "' holds " +
                               std::to_string(size) + " bytes; a preset file may hold at most " +
                               std::to_string(kMaxConfigFileBytes >> 20) + " MiB");
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw InputError(
          at, "cannot read " + kind + " preset file '" + shown + "': " + std::strerror(errno) +
                  " (a relative path resolves against the folder of the file that names it)");
    std::stringstream ss;
    ss << in.rdbuf();
    Entry e{path, ss.str(), nullptr, false};
    it = m_files.emplace(path, std::move(e)).first;
  }
  const Entry& entry = it->second;
  note_input("file " + path, entry.text());
  if (!entry.parsed) {
    ConfigNode n = parse_yaml(entry.text(), entry.file);
    if (!n.is_map()) throw InputError(n.loc, "a " + kind + " preset file must hold a map of keys");
    if (const ConfigNode* p = n.find("provenance")) {
      ConfigNode prov = *p;
      bool ok = !prov.provenance && prov.is_map() && prov.entries.size() == 1 &&
                prov.entries.front().second.is_scalar();
      if (ok) {
        ok = false;
        for (const char* kname : kProvenanceKinds) ok = ok || prov.entries.front().first == kname;
      }
      if (!ok)
        throw InputError(prov.loc,
                         "'provenance' must be {spec|measured|derived|assumption: \"source\"}");
      n.erase("provenance");
      apply_default_provenance(
          n, Provenance{prov.entries.front().first, prov.entries.front().second.scalar, "", ""});
    }
    entry.parsed = std::make_shared<ConfigNode>(std::move(n));
  }
  return entry.parsed.get();
}

namespace {
std::map<std::string, std::string>& input_log_map() {
  static std::map<std::string, std::string> log;
  return log;
}
}  // namespace

std::string content_hash(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  // SplitMix64 finaliser (as core/random mix64), kept local so core/config stays self-contained.
  h += 0x9e3779b97f4a7c15ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  h ^= h >> 31;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void note_input(const std::string& key, std::string_view content) {
  input_log_map()[key] = content_hash(content);
}
std::vector<std::pair<std::string, std::string>> input_log() {
  return {input_log_map().begin(), input_log_map().end()};
}
void clear_input_log() { input_log_map().clear(); }

void parse_all_presets() {
  const std::map<std::string, std::string> log = input_log_map();
  PresetRegistry& reg = PresetRegistry::instance();
  for (const std::string& kind : reg.kinds())
    for (const std::string& name : reg.names(kind)) {
      try {
        reg.find(kind, name);
      } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): reported where used
      }
    }
  input_log_map() = log;
}

std::optional<std::string> current_input_hash(const std::string& key) {
  if (key.rfind("preset ", 0) == 0) {
    const auto sp = key.find(' ', 7);
    if (sp == std::string::npos) return std::nullopt;
    const std::string kind = key.substr(7, sp - 7), name = key.substr(sp + 1);
    const PresetRegistry& reg = PresetRegistry::instance();
    const auto names = reg.names(kind);
    if (std::find(names.begin(), names.end(), name) == names.end()) return std::nullopt;
    return content_hash(reg.text_of(kind, name));
  }
  if (key.rfind("file ", 0) == 0) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(key.substr(5), ec)) return std::nullopt;
    std::ifstream in(key.substr(5), std::ios::binary);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    return content_hash(ss.str());
  }
  return std::nullopt;
}

std::vector<std::string> PresetRegistry::names(const std::string& kind) const {
  std::vector<std::string> out;
  auto k = m_presets.find(kind);
  if (k != m_presets.end())
    for (const auto& [name, e] : k->second) out.push_back(name);
  return out;
}
std::vector<std::string> PresetRegistry::kinds() const {
  std::vector<std::string> out;
  for (const auto& [k, f] : kind_folders()) out.push_back(k);
  return out;
}
std::string PresetRegistry::file_of(const std::string& kind, const std::string& name) const {
  auto k = m_presets.find(kind);
  if (k == m_presets.end()) return {};
  auto e = k->second.find(name);
  return e == k->second.end() ? std::string() : e->second.file;
}
std::string PresetRegistry::text_of(const std::string& kind, const std::string& name) const {
  auto k = m_presets.find(kind);
  if (k == m_presets.end()) return {};
  auto e = k->second.find(name);
  return e == k->second.end() ? std::string() : std::string(e->second.text());
}

// ---------------------------------------------------------------------------------------------
// ConfigReader

ConfigReader::ConfigReader(const ConfigNode& node, std::string path, ProvenanceTable* prov)
    : m_node(node), m_path(std::move(path)), m_prov(prov) {
  if (!node.is_map() && !node.is_null())
    throw InputError(node.loc,
                     (m_path.empty() ? std::string("the config") : "'" + m_path + "'") +
                         " must be a map of keys, got " +
                         (node.kind == ConfigNode::Kind::Seq
                              ? "a list of " + std::to_string(node.items.size()) + " item(s)"
                              : "'" + excerpt(node.scalar) + "'"));
}

std::string ConfigReader::child_path(const char* key) const {
  return m_path.empty() ? std::string(key) : m_path + "." + key;
}

bool ConfigReader::has(const char* key) const {
  const ConfigNode* n = m_node.is_map() ? m_node.find(key) : nullptr;
  return n && !n->is_null();
}

void ConfigReader::reject(const char* key, const std::string& msg) const {
  const ConfigNode* n = m_node.is_map() ? m_node.find(key) : nullptr;
  fail(n ? *n : m_node, key, msg);
}

void ConfigReader::fail(const ConfigNode& at, const char* key, const std::string& msg) const {
  std::string where = key ? child_path(key) : (m_path.empty() ? "config" : m_path);
  throw InputError(at.loc, where + ": " + msg);
}

const ConfigNode* ConfigReader::take(const char* key, const Field& f, const char* what) {
  m_known.emplace_back(key);
  const ConfigNode* n = m_node.is_map() ? m_node.find(key) : nullptr;
  if (!n || n->is_null()) {
    if (f.required) {
      std::string at = m_path.empty() ? "the config" : "'" + m_path + "'";
      throw InputError(n ? n->loc : m_node.loc,
                       at + ": missing required key '" + key + "' (" + f.doc + "; " + what + ")");
    }
    if (n) m_used.insert(key);
    return nullptr;
  }
  m_used.insert(key);
  if (!n->is_scalar())
    fail(*n, key, std::string("expected ") + what + ", got a " + (n->is_map() ? "map" : "list"));
  return n;
}

void ConfigReader::note(const char* key, const Provenance& p) {
  if (m_prov) (*m_prov)[child_path(key)] = {p, m_node.loc};
}

void ConfigReader::record(const ConfigNode& n, const char* key) {
  if (m_prov && n.provenance) (*m_prov)[child_path(key)] = {*n.provenance, n.loc};
}

void ConfigReader::check_range(const ConfigNode& at, const char* key, double v, const Dimension& d,
                               Range r) const {
  auto show = [&] { return d == dim::none ? format_number(v) : format_quantity(v, d); };
  switch (r) {
    case Range::Any:
      return;
    case Range::Positive:
      if (!(v > 0)) fail(at, key, "must be greater than zero, got " + show());
      return;
    case Range::NonNegative:
      if (!(v >= 0)) fail(at, key, "must not be negative, got " + show());
      return;
    case Range::Fraction:
      if (!(v >= 0 && v <= 1)) fail(at, key, "must be a fraction in [0, 1], got " + show());
      return;
    case Range::AtLeastOne:
      if (!(v >= 1)) fail(at, key, "must be at least 1, got " + show());
      return;
  }
}

void ConfigReader::quantity(const char* key, double& out, const Dimension& d, const Field& f) {
  std::string what = "a " + dimension_name(d) + " such as \"" + example_literal(d) + "\"";
  const ConfigNode* n = take(key, f, what.c_str());
  if (!n) return;
  double v = 0;
  try {
    v = parse_quantity_as(n->scalar, d);
  } catch (const UnitError& e) {
    fail(*n, key, e.what());
  }
  check_range(*n, key, v, d, f.range);
  out = v;
  record(*n, key);
}

void ConfigReader::quantity(const char* key, std::optional<double>& out, const Dimension& d,
                            const Field& f) {
  double v = out.value_or(0);
  const bool present = m_node.is_map() && m_node.find(key) && !m_node.find(key)->is_null();
  quantity(key, v, d, f);
  if (present) out = v;
}

void ConfigReader::number(const char* key, double& out, const Field& f) {
  quantity(key, out, dim::none, f);
}

namespace {
// An integer written as plain decimal digits (optional sign) is parsed exactly, not through
// double (which loses digits above 2^53: seeds from results.csv must round-trip). Returns false
// when the text is not plain digits (then the caller parses it as a number, e.g. "1e3").
bool exact_integer(const std::string& text, bool& negative, std::uint64_t& magnitude,
                   bool& overflow) {
  std::size_t i = 0;
  negative = false;
  overflow = false;
  magnitude = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  if (i >= text.size()) return false;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    const std::uint64_t d = static_cast<std::uint64_t>(text[i] - '0');
    if (magnitude > (UINT64_MAX - d) / 10) overflow = true;
    magnitude = magnitude * 10 + d;
  }
  return true;
}
}  // namespace

void ConfigReader::integer(const char* key, std::int64_t& out, const Field& f) {
  const ConfigNode* n = take(key, f, "a whole number");
  if (!n) return;
  {
    bool neg = false, overflow = false;
    std::uint64_t mag = 0;
    if (exact_integer(n->scalar, neg, mag, overflow)) {
      const std::uint64_t limit = neg ? 9223372036854775808ULL : 9223372036854775807ULL;
      if (overflow || mag > limit)
        fail(*n, key,
             "expected a whole number from -9223372036854775808 to 9223372036854775807, got \"" +
                 excerpt(n->scalar) + "\"");
      const std::int64_t v =
          neg ? static_cast<std::int64_t>(0 - mag) : static_cast<std::int64_t>(mag);
      check_range(*n, key, static_cast<double>(v), dim::none, f.range);
      out = v;
      record(*n, key);
      return;
    }
  }
  double v = 0;
  try {
    v = parse_quantity_as(n->scalar, dim::none);
  } catch (const UnitError& e) {
    fail(*n, key, std::string("expected a whole number: ") + e.what());
  }
  if (v != std::floor(v))
    fail(*n, key, "expected a whole number, got \"" + excerpt(n->scalar) + "\"");
  // A whole number, but past what a double holds exactly (issue 26.17: the range is the
  // problem, not wholeness).
  if (std::fabs(v) > 9.0e15)
    fail(*n, key,
         "\"" + excerpt(n->scalar) +
             "\" is out of range: a value in exponent or unit form must be at most 9e15 in size "
             "(write the digits for a larger exact whole number)");
  check_range(*n, key, v, dim::none, f.range);
  out = static_cast<std::int64_t>(v);
  record(*n, key);
}

void ConfigReader::integer(const char* key, std::uint64_t& out, const Field& f) {
  const ConfigNode* n = take(key, f, "a whole number from 0 to 18446744073709551615");
  if (!n) return;
  bool neg = false, overflow = false;
  std::uint64_t mag = 0;
  if (exact_integer(n->scalar, neg, mag, overflow)) {
    if (overflow || (neg && mag != 0))
      fail(*n, key,
           "expected a whole number from 0 to 18446744073709551615, got \"" + excerpt(n->scalar) +
               "\"");
    check_range(*n, key, static_cast<double>(mag), dim::none, f.range);
    out = mag;
    record(*n, key);
    return;
  }
  // "1e3" and the like: exact below 2^53 only, so larger values must be written in digits.
  double v = 0;
  try {
    v = parse_quantity_as(n->scalar, dim::none);
  } catch (const UnitError& e) {
    fail(*n, key, std::string("expected a whole number: ") + e.what());
  }
  if (v != std::floor(v) || v < 0 || v > 9.0e15)
    fail(*n, key,
         "expected a whole number from 0 to 18446744073709551615 (above 9e15 in plain digits), got "
         "\"" +
             excerpt(n->scalar) + "\"");
  check_range(*n, key, v, dim::none, f.range);
  out = static_cast<std::uint64_t>(v);
  record(*n, key);
}

void ConfigReader::integer(const char* key, int& out, const Field& f) {
  std::int64_t v = out;
  integer(key, v, f);
  if (v > 2147483647 || v < -2147483647) {
    fail(*m_node.find(key), key,
         "out of range: at most 2147483647 in size, got " + std::to_string(v));
  }
  out = static_cast<int>(v);
}

void ConfigReader::boolean(const char* key, bool& out, const Field& f) {
  const ConfigNode* n = take(key, f, "true or false");
  if (!n) return;
  if (n->scalar == "true" || n->scalar == "True") {
    out = true;
  } else if (n->scalar == "false" || n->scalar == "False") {
    out = false;
  } else {
    fail(*n, key, "expected true or false, got \"" + excerpt(n->scalar) + "\"");
  }
}

void ConfigReader::text(const char* key, std::string& out, const Field& f) {
  const ConfigNode* n = take(key, f, "a text");
  if (!n) return;
  out = n->scalar;
  record(*n, key);  // a text's provenance (e.g. a default stack name) survives --dump-config
}

void ConfigReader::quantity_map(const char* key, std::map<std::string, double>& out,
                                const Dimension& d, const std::vector<std::string>& allowed,
                                const Field& f) {
  m_known.emplace_back(key);
  const ConfigNode* n = m_node.is_map() ? m_node.find(key) : nullptr;
  if (!n || n->is_null()) {
    if (f.required)
      fail(n ? *n : m_node, nullptr,
           "missing required key '" + std::string(key) + "' (" + f.doc + ")");
    return;
  }
  m_used.insert(key);
  if (!n->is_map()) fail(*n, key, std::string("expected a map (") + f.doc + ")");
  ConfigReader sub(*n, child_path(key), m_prov);
  std::map<std::string, double> result;
  for (const auto& [k, v] : n->entries) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) continue;
    double x = 0;
    sub.quantity(k.c_str(), x, d, req(f.doc, f.range));
    result[k] = x;
  }
  for (const auto& a : allowed) sub.m_known.push_back(a);
  sub.finish();
  out = std::move(result);
}

void ConfigReader::derive(const std::string& subpath, const std::string& how) {
  if (!m_prov) return;
  const std::string full = m_path.empty() ? subpath : m_path + "." + subpath;
  auto it = m_prov->find(full);
  if (it == m_prov->end()) {
    (*m_prov)[full] = {Provenance{"derived", how, "", ""}, SourceLoc{}};
    return;
  }
  it->second.first = Provenance{
      "derived", how + "; from " + it->second.first.kind + ": " + it->second.first.source, "",
      ""};  // a scaled value: the declared range no longer applies
}

void ConfigReader::finish() const {
  if (!m_node.is_map()) return;
  for (const auto& [k, v] : m_node.entries) {
    if (m_used.count(k) || k == "preset") continue;
    std::vector<std::string> known(m_known.begin(), m_known.end());
    std::sort(known.begin(), known.end());
    known.erase(std::unique(known.begin(), known.end()), known.end());
    std::string near = nearest(k, known);
    std::string list;
    for (const auto& s : known) list += (list.empty() ? "" : ", ") + s;
    std::string where = m_path.empty() ? "at the top level" : "in '" + m_path + "'";
    throw InputError(v.key_loc.file.empty() ? v.loc : v.key_loc,
                     "unknown key '" + k + "' " + where +
                         (near.empty() ? "" : "; did you mean '" + near + "'?") +
                         " (valid keys: " + list + ")");
  }
}

ConfigNode ConfigReader::resolve_preset(const ConfigNode& node, const std::string& kind,
                                        const std::string& path) {
  // A bare name is a preset reference; a map may carry `preset:` plus overrides.
  std::vector<std::string> chain;
  ConfigNode cur = node;
  if (cur.is_scalar()) {
    ConfigNode m = ConfigNode::make_map(cur.loc);
    m.entries.emplace_back("preset", cur);
    cur = std::move(m);
  }
  if (!cur.is_map())
    throw InputError(cur.loc, path + ": expected a " + kind + " preset name or a map of keys");
  while (const ConfigNode* p = cur.find("preset")) {
    if (!p->is_scalar() || p->scalar.empty())
      throw InputError(p->loc, path + ".preset: expected a " + kind + " preset name");
    const std::string name = p->scalar;
    if (std::find(chain.begin(), chain.end(), name) != chain.end())
      throw InputError(p->loc, path + ": preset '" + name + "' refers to itself through 'preset:'");
    chain.push_back(name);
    const PresetRegistry& reg = PresetRegistry::instance();
    // A path (holds '/' or ends in .yaml/.yml) names a preset file (issue 12.11).
    const ConfigNode* base = is_preset_file_ref(name)
                                 ? reg.find_file(kind, resolve_preset_file(name, p->loc), p->loc)
                                 : reg.find(kind, name);
    if (!base) {
      std::vector<std::string> names = reg.names(kind);
      std::string list;
      for (const auto& s : names) list += (list.empty() ? "" : ", ") + s;
      throw InputError(p->loc, path + ": unknown " + kind + " preset '" + excerpt(name) + "'" +
                                   preset_suggestion(name, names) + " (known " + kind +
                                   " presets: " + list + ")");
    }
    ConfigNode merged = *base;
    ConfigNode over = cur;
    over.erase("preset");
    merge_into(merged, over);
    cur = std::move(merged);
  }
  return cur;
}

// ---------------------------------------------------------------------------------------------
// ConfigWriter

ConfigWriter::ConfigWriter(ConfigNode& out, std::string path, const ProvenanceTable* prov)
    : m_out(out), m_path(std::move(path)), m_prov(prov) {}

void ConfigWriter::put(const char* key, std::string scalar) {
  ConfigNode n = ConfigNode::make_scalar(std::move(scalar));
  if (m_prov) {
    auto it = m_prov->find(m_path.empty() ? key : m_path + "." + key);
    if (it != m_prov->end()) n.provenance = it->second.first;
  }
  m_out.set(key, std::move(n));
}
void ConfigWriter::quantity(const char* key, double& v, const Dimension& d, const Field&) {
  put(key, format_quantity(v, d));
}
void ConfigWriter::quantity(const char* key, std::optional<double>& v, const Dimension& d,
                            const Field&) {
  if (v) put(key, format_quantity(*v, d));
}
void ConfigWriter::number(const char* key, double& v, const Field&) { put(key, format_number(v)); }
void ConfigWriter::integer(const char* key, std::int64_t& v, const Field&) {
  put(key, std::to_string(v));
}
void ConfigWriter::integer(const char* key, int& v, const Field&) { put(key, std::to_string(v)); }
void ConfigWriter::integer(const char* key, std::uint64_t& v, const Field&) {
  put(key, std::to_string(v));
}
void ConfigWriter::boolean(const char* key, bool& v, const Field&) {
  put(key, v ? "true" : "false");
}
void ConfigWriter::text(const char* key, std::string& v, const Field&) {
  ConfigNode n = ConfigNode::make_scalar(v);
  n.quoted = true;
  if (m_prov) {  // a text default chosen by the loader (ConfigReader::object with a default)
    auto it = m_prov->find(m_path.empty() ? key : m_path + "." + key);
    if (it != m_prov->end()) n.provenance = it->second.first;
  }
  m_out.set(key, std::move(n));
}
void ConfigWriter::quantity_map(const char* key, std::map<std::string, double>& v,
                                const Dimension& d, const std::vector<std::string>&, const Field&) {
  ConfigNode m = ConfigNode::make_map();
  ConfigWriter sub(m, m_path.empty() ? key : m_path + "." + key, m_prov);
  for (auto& [k, x] : v) sub.quantity(k.c_str(), x, d, {});
  m_out.set(key, std::move(m));
}

}  // namespace kappasim
