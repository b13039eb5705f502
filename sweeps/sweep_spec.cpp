#include "sweeps/sweep_spec.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/random.hpp"
#include "core/units.hpp"
#include "sweeps/point_kind.hpp"

namespace kappasim::sweep {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxAxisPoints = 1000000;
constexpr std::size_t kMaxPoints = 10000000;

[[noreturn]] void fail(const ConfigNode& at, const std::string& msg) {
  throw InputError(at.loc, msg);
}
[[noreturn]] void fail_key(const ConfigNode& at, const std::string& msg) {
  throw InputError(at.key_loc.file.empty() ? at.loc : at.key_loc, msg);
}

// Rejects keys not in `allowed`, naming the nearest one.
void check_keys(const ConfigNode& map, const std::vector<std::string>& allowed,
                const std::string& where) {
  for (const auto& [k, v] : map.entries) {
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == k;
    if (ok) continue;
    fail_key(v, unknown_key_message(k, allowed, where));
  }
}

const ConfigNode& need_map(const ConfigNode& n, const std::string& what) {
  if (!n.is_map()) fail(n, "expected a map (" + what + ")");
  return n;
}
const ConfigNode& need_seq(const ConfigNode& n, const std::string& what) {
  if (n.kind != ConfigNode::Kind::Seq) fail(n, "expected a list (" + what + ")");
  return n;
}
std::string need_scalar(const ConfigNode& n, const std::string& what) {
  if (!n.is_scalar()) fail(n, "expected a single value (" + what + ")");
  return n.scalar;
}

std::uint64_t parse_u64(const ConfigNode& n, const std::string& what, std::uint64_t lo,
                        std::uint64_t hi) {
  const std::string s = need_scalar(n, what);
  bool digits = !s.empty() && s.size() <= 20;
  for (char c : s) digits = digits && c >= '0' && c <= '9';
  errno = 0;
  const unsigned long long v = digits ? std::strtoull(s.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE || v < lo || v > hi)
    fail(n, "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                " (" + what + "), got \"" + s + "\"");
  return v;
}

bool parse_bool(const ConfigNode& n, const std::string& what) {
  const std::string s = need_scalar(n, what);
  if (s == "true") return true;
  if (s == "false") return false;
  fail(n, "expected true or false (" + what + "), got \"" + s + "\"");
}

// A range end: a number or a quantity.
Quantity parse_end(const ConfigNode& n, const std::string& what) {
  const std::string s = need_scalar(n, what);
  try {
    Quantity q = parse_quantity(s);
    if (!std::isfinite(q.value))
      fail(n, "expected a finite value (" + what + "), got \"" + s + "\"");
    return q;
  } catch (const UnitError& e) {
    fail(n, std::string(e.what()) + " (" + what + ")");
  }
}

// Removes binary noise of from + i·step (0.6 + 2·0.2 = 1.0000000000000002 → 1).
double tidy(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return std::strtod(buf, nullptr);
}

ConfigNode value_node(double v, const Dimension& d, const SourceLoc& loc) {
  return ConfigNode::make_scalar(d == dim::none ? format_number(v) : format_quantity(v, d), loc);
}

AxisKey parse_axis_key(const ConfigNode& n) {
  need_map(n, "an axis: {key, values | range | log_range, label?, labels?}");
  check_keys(n, {"key", "values", "range", "log_range", "label", "labels"}, "an axis");
  AxisKey a;
  a.loc = n.loc;
  const ConfigNode* key = n.find("key");
  if (!key) fail(n, "an axis needs 'key:' (a config path such as serving.tp)");
  a.key = need_scalar(*key, "the axis key, a config path");
  if (a.key.empty() || a.key.front() == '.' || a.key.back() == '.' ||
      a.key.find("..") != std::string::npos)
    fail(*key, "expected a config path such as serving.tp, got \"" + a.key + "\"");
  a.loc = key->loc;
  a.label = a.key;
  if (const ConfigNode* l = n.find("label")) a.label = need_scalar(*l, "the axis's column name");
  if (a.label.empty()) fail(*n.find("label"), "an axis label must not be empty");

  const ConfigNode* values = n.find("values");
  const ConfigNode* range = n.find("range");
  const ConfigNode* log_range = n.find("log_range");
  const int given = (values != nullptr) + (range != nullptr) + (log_range != nullptr);
  if (given != 1)
    fail(n, "axis '" + a.key + "': give exactly one of values:, range: or log_range: (got " +
                std::to_string(given) + ")");
  bool structured = false;
  if (values) {
    need_seq(*values, "the axis's values");
    if (values->items.empty())
      fail(*values, "axis '" + a.key + "' has no values (an empty axis would make an empty sweep)");
    for (const auto& v : values->items) {
      if (v.is_map() || v.kind == ConfigNode::Kind::Seq) structured = true;
      a.values.push_back(v);
    }
  } else if (range) {
    need_map(*range, "{from, to, step}");
    check_keys(*range, {"from", "to", "step"}, "range");
    for (const char* k : {"from", "to", "step"})
      if (!range->find(k)) fail(*range, std::string("range needs '") + k + ":'");
    const Quantity from = parse_end(*range->find("from"), "range from");
    const Quantity to = parse_end(*range->find("to"), "range to");
    const Quantity step = parse_end(*range->find("step"), "range step");
    if (from.dim != to.dim || from.dim != step.dim)
      fail(*range, "range from, to and step must have the same unit (got " +
                       dimension_name(from.dim) + ", " + dimension_name(to.dim) + ", " +
                       dimension_name(step.dim) + ")");
    if (!(step.value > 0)) fail(*range->find("step"), "range step must be greater than zero");
    if (to.value < from.value)
      fail(*range, "range has no points: 'to' is below 'from' (the range is inclusive, ascending)");
    const double span = (to.value - from.value) / step.value;
    if (!(span < static_cast<double>(kMaxAxisPoints)))
      fail(*range, "range has more than " + std::to_string(kMaxAxisPoints) + " points");
    const auto n_points = static_cast<std::size_t>(std::floor(span * (1 + 1e-12) + 1e-9)) + 1;
    for (std::size_t i = 0; i < n_points; ++i)
      a.values.push_back(
          value_node(tidy(from.value + static_cast<double>(i) * step.value), from.dim, range->loc));
  } else {
    need_map(*log_range, "{from, to, points}");
    check_keys(*log_range, {"from", "to", "points"}, "log_range");
    for (const char* k : {"from", "to", "points"})
      if (!log_range->find(k)) fail(*log_range, std::string("log_range needs '") + k + ":'");
    const Quantity from = parse_end(*log_range->find("from"), "log_range from");
    const Quantity to = parse_end(*log_range->find("to"), "log_range to");
    if (from.dim != to.dim)
      fail(*log_range, "log_range from and to must have the same unit (got " +
                           dimension_name(from.dim) + " and " + dimension_name(to.dim) + ")");
    if (!(from.value > 0))
      fail(*log_range->find("from"), "log_range from must be greater than zero");
    if (!(to.value > 0)) fail(*log_range->find("to"), "log_range to must be greater than zero");
    const ConfigNode& pn = *log_range->find("points");
    const std::size_t points = parse_u64(pn, "log_range points, at least 2", 0, kMaxAxisPoints);
    if (points < 2)
      fail(pn, "log_range points must be at least 2 (the ends are included), got " + pn.scalar);
    const double ratio = to.value / from.value;
    for (std::size_t i = 0; i < points; ++i) {
      double v = i == 0 ? from.value
                 : i + 1 == points
                     ? to.value
                     : tidy(from.value * std::pow(ratio, static_cast<double>(i) /
                                                             static_cast<double>(points - 1)));
      a.values.push_back(value_node(v, from.dim, log_range->loc));
    }
  }
  if (const ConfigNode* l = n.find("labels")) {
    need_seq(*l, "one label per value");
    if (l->items.size() != a.values.size())
      fail(*l, "axis '" + a.key + "': " + std::to_string(l->items.size()) + " labels for " +
                   std::to_string(a.values.size()) + " values");
    for (const auto& item : l->items) {
      a.labels.push_back(need_scalar(item, "a label"));
      if (a.labels.back().empty()) fail(item, "a label must not be empty");
    }
  } else {
    if (structured)
      fail(*values, "axis '" + a.key +
                        "': values that are maps or lists need 'labels:' (one name per "
                        "value, used as the column value)");
    for (const auto& v : a.values) a.labels.push_back(canonical_text(v));
  }
  return a;
}

// quick.axes replacement values: scalars, or the label of one of the axis's own values.
void replace_values(AxisKey& a, const ConfigNode& repl) {
  need_seq(repl, "replacement values for axis '" + a.key + "'");
  if (repl.items.empty()) fail(repl, "quick axis '" + a.key + "' has no values");
  std::vector<ConfigNode> values;
  std::vector<std::string> labels;
  for (const auto& v : repl.items) {
    bool found = false;
    if (v.is_scalar()) {
      for (std::size_t i = 0; i < a.labels.size() && !found; ++i) {
        if (a.labels[i] == v.scalar &&
            (a.values[i].is_map() || a.values[i].kind == ConfigNode::Kind::Seq)) {
          values.push_back(a.values[i]);
          labels.push_back(a.labels[i]);
          found = true;
        }
      }
    } else {
      fail(v, "quick axis '" + a.key + "': expected scalar values or labels of the axis's values");
    }
    if (!found) {
      values.push_back(v);
      labels.push_back(canonical_text(v));
    }
  }
  a.values = std::move(values);
  a.labels = std::move(labels);
}

ConfigNode scalar(const std::string& s) { return ConfigNode::make_scalar(s); }
ConfigNode seq() {
  ConfigNode n;
  n.kind = ConfigNode::Kind::Seq;
  return n;
}

}  // namespace

std::vector<std::string> SweepSpec::axis_labels() const {
  std::vector<std::string> out;
  for (const auto& a : axes)
    for (const auto& k : a.keys) out.push_back(k.label);
  return out;
}

std::size_t SweepSpec::point_count() const {
  std::size_t n = static_cast<std::size_t>(replicates);
  for (const auto& a : axes) n *= a.size();
  return n;
}

SweepSpec parse_sweep_spec(const ConfigNode& root, const std::string& base_dir, bool quick,
                           bool (*known_kind)(const std::string&)) {
  need_map(root, "a sweep spec: name, kind, axes, ...");
  check_keys(root,
             {"name", "description", "kind", "base", "config", "seed", "seed_per_point",
              "replicates", "axes", "metrics", "quick"},
             "the sweep spec");
  SweepSpec s;
  s.base_dir = base_dir;
  s.quick = quick;
  const ConfigNode* name = root.find("name");
  if (!name) fail(root, "missing required key 'name' (the sweep's name, [A-Za-z0-9._-]+)");
  s.name = need_scalar(*name, "the sweep's name");
  bool ok_name = !s.name.empty() && s.name.size() <= 200;
  for (char c : s.name)
    ok_name = ok_name &&
              (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
  if (!ok_name)
    fail(*name,
         "the sweep's name must match [A-Za-z0-9._-]+ (at most 200), got \"" + s.name + "\"");
  if (const ConfigNode* d = root.find("description")) s.description = need_scalar(*d, "one line");
  const ConfigNode* kind = root.find("kind");
  // The valid kinds: the registry's (sweeps/point_kind.hpp) that known_kind accepts.
  auto valid_kinds = [&known_kind] {
    std::string out;
    for (const auto& n : kinds().names())
      if (!known_kind || known_kind(n)) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? std::string("kappasim sweep kinds lists them") : "valid kinds: " + out;
  };
  if (!kind) fail(root, "missing required key 'kind' (" + valid_kinds() + ")");
  s.kind = need_scalar(*kind, "the point kind");
  if (known_kind && !known_kind(s.kind)) {
    // The registry's suggestion (core/registry.hpp), among the kinds the check accepts.
    std::vector<std::string> valid;
    for (const auto& n : kinds().names())
      if (known_kind(n)) valid.push_back(n);
    const std::string near = nearest(s.kind, valid);
    fail(*kind, "unknown point kind '" + excerpt(s.kind) + "'" +
                    (near.empty() ? "" : "; did you mean '" + near + "'?") + " (" + valid_kinds() +
                    ")");
  }

  s.config = ConfigNode::make_map(root.loc);
  if (const ConfigNode* b = root.find("base")) {
    const std::string rel = need_scalar(*b, "a config file relative to the spec's folder");
    const fs::path p = fs::path(rel).is_absolute() ? fs::path(rel) : fs::path(base_dir) / rel;
    try {
      s.config = load_yaml_file(p.string());
    } catch (const InputError& e) {
      fail(*b, std::string("base: ") + e.what());
    }
    if (!s.config.is_map()) fail(*b, "base: '" + p.string() + "' does not hold a map");
  }
  if (const ConfigNode* c = root.find("config")) {
    if (!c->is_null()) merge_into(s.config, need_map(*c, "an inline config merged over base"));
  }
  if (const ConfigNode* n = root.find("seed"))
    s.seed = parse_u64(*n, "the base seed", 0, UINT64_MAX);
  if (const ConfigNode* n = root.find("seed_per_point"))
    s.seed_per_point = parse_bool(*n, "seed_per_point");
  if (const ConfigNode* n = root.find("replicates"))
    s.replicates = static_cast<std::int64_t>(parse_u64(*n, "replicates", 1, kMaxAxisPoints));

  std::set<std::string> keys, labels{"point", "replicate", "seed", "status", "error"};
  auto add_key = [&](const AxisKey& k) {
    if (!keys.insert(k.key).second) throw InputError(k.loc, "duplicate axis key '" + k.key + "'");
    if (!labels.insert(k.label).second)
      throw InputError(k.loc,
                       "axis '" + k.key + "': column name '" + k.label +
                           "' is already used (by another axis or a fixed column); set label:");
  };
  if (const ConfigNode* axes = root.find("axes")) {
    if (!axes->is_null()) need_seq(*axes, "a list of axes");
    for (const auto& item : axes->items) {
      Axis axis;
      if (item.is_map() && item.find("zip")) {
        check_keys(item, {"zip"}, "a zip group");
        const ConfigNode& z = need_seq(*item.find("zip"), "a list of axes that vary together");
        if (z.items.empty()) fail(z, "a zip group needs at least one axis");
        for (const auto& k : z.items) axis.keys.push_back(parse_axis_key(k));
        for (const auto& k : axis.keys)
          if (k.values.size() != axis.keys.front().values.size())
            throw InputError(k.loc, "zip group of unequal lengths: '" + axis.keys.front().key +
                                        "' has " + std::to_string(axis.keys.front().values.size()) +
                                        " values, '" + k.key + "' has " +
                                        std::to_string(k.values.size()));
      } else {
        axis.keys.push_back(parse_axis_key(item));
      }
      for (const auto& k : axis.keys) {
        add_key(k);
        // The point's seed (issue 26 item 8): a whole number, as the base seed.
        if (k.key == kSeedKey)
          for (const auto& v : k.values) parse_u64(v, "a workload.seed value", 0, UINT64_MAX);
      }
      s.axes.push_back(std::move(axis));
    }
  }
  if (const ConfigNode* m = root.find("metrics")) {
    need_seq(*m, "metric names");
    for (const auto& item : m->items) s.metrics.push_back(need_scalar(item, "a metric name"));
  }
  if (const ConfigNode* q = root.find("quick")) {
    need_map(*q, "{set: {path: value}, axes: {key: [values]}}");
    check_keys(*q, {"set", "axes", "replicates"}, "quick");
    // quick.replicates: the replicate count under --quick (issue 11.1: the studies run >= 3
    // replicates, CI's quick runs fewer).
    if (const ConfigNode* n = q->find("replicates")) {
      const auto r =
          static_cast<std::int64_t>(parse_u64(*n, "quick.replicates", 1, kMaxAxisPoints));
      if (quick) s.replicates = r;
    }
    if (quick) {
      if (const ConfigNode* set = q->find("set"))
        for (const auto& [path, v] : need_map(*set, "config paths and values").entries)
          s.quick_set.emplace_back(path, v);
      if (const ConfigNode* ax = q->find("axes")) {
        for (const auto& [key, v] : need_map(*ax, "axis keys and replacement values").entries) {
          AxisKey* target = nullptr;
          for (auto& a : s.axes)
            for (auto& k : a.keys)
              if (k.key == key) target = &k;
          if (!target) {
            std::vector<std::string> all(keys.begin(), keys.end());
            const std::string near = nearest(key, all);
            fail_key(v, "quick.axes: '" + key + "' is not an axis key" +
                            (near.empty() ? "" : "; did you mean '" + near + "'?"));
          }
          replace_values(*target, v);
        }
        for (const auto& a : s.axes)
          for (const auto& k : a.keys)
            if (k.values.size() != a.keys.front().values.size())
              throw InputError(
                  k.loc, "zip group of unequal lengths under --quick: '" + a.keys.front().key +
                             "' has " + std::to_string(a.keys.front().values.size()) +
                             " values, '" + k.key + "' has " + std::to_string(k.values.size()));
      }
    }
  }
  double total = static_cast<double>(s.replicates);
  for (const auto& a : s.axes) total *= static_cast<double>(a.size());
  if (total > static_cast<double>(kMaxPoints))
    fail(root, "the sweep has " + format_number(total) + " points; at most " +
                   std::to_string(kMaxPoints));
  return s;
}

SweepSpec load_sweep_spec(const std::string& path, bool quick,
                          bool (*known_kind)(const std::string&)) {
  const ConfigNode root = load_yaml_file(path);
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  fs::path abs = fs::absolute(dir, ec);
  if (!ec) dir = abs.lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return parse_sweep_spec(root, dir, quick, known_kind);
}

ConfigNode resolved_tree(const SweepSpec& s) {
  ConfigNode r = ConfigNode::make_map();
  r.set("name", scalar(s.name));
  if (!s.description.empty()) {
    ConfigNode d = scalar(s.description);
    d.quoted = true;
    r.set("description", d);
  }
  r.set("kind", scalar(s.kind));
  r.set("seed", scalar(std::to_string(s.seed)));
  r.set("seed_per_point", scalar(s.seed_per_point ? "true" : "false"));
  r.set("replicates", scalar(std::to_string(s.replicates)));
  r.set("config", s.config);
  ConfigNode axes = seq();
  auto key_node = [](const AxisKey& k) {
    ConfigNode m = ConfigNode::make_map();
    m.set("key", scalar(k.key));
    m.set("label", scalar(k.label));
    ConfigNode values = seq();
    ConfigNode labels = seq();
    for (std::size_t i = 0; i < k.values.size(); ++i) {
      values.items.push_back(k.values[i]);
      ConfigNode l = scalar(k.labels[i]);
      l.quoted = true;
      labels.items.push_back(l);
    }
    m.set("values", values);
    m.set("labels", labels);
    return m;
  };
  for (const auto& a : s.axes) {
    if (a.keys.size() == 1) {
      axes.items.push_back(key_node(a.keys.front()));
    } else {
      ConfigNode z = seq();
      for (const auto& k : a.keys) z.items.push_back(key_node(k));
      ConfigNode m = ConfigNode::make_map();
      m.set("zip", z);
      axes.items.push_back(m);
    }
  }
  r.set("axes", axes);
  if (!s.metrics.empty()) {
    ConfigNode m = seq();
    for (const auto& x : s.metrics) m.items.push_back(scalar(x));
    r.set("metrics", m);
  }
  if (s.quick && !s.quick_set.empty()) {
    ConfigNode set = ConfigNode::make_map();
    for (const auto& [path, v] : s.quick_set) set.entries.emplace_back(path, v);
    ConfigNode q = ConfigNode::make_map();
    q.set("set", set);
    r.set("quick", q);
  }
  return r;
}

std::string spec_hash(const SweepSpec& s) {
  const std::string text =
      std::string("quick: ") + (s.quick ? "true" : "false") + "\n" + emit_yaml(resolved_tree(s));
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  h = mix64(h);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::vector<Point> expand(const SweepSpec& s) {
  std::vector<Point> out;
  const std::size_t total = s.point_count();
  out.reserve(total);
  const std::uint64_t base = derive_seed(s.seed, "kappasim.sweep");
  std::vector<std::size_t> idx(s.axes.size(), 0);
  for (std::size_t i = 0; i < total; ++i) {
    // Decompose i: replicates innermost, then the last axis fastest.
    std::size_t rest = i;
    Point p;
    p.index = i;
    p.replicate = static_cast<std::int64_t>(rest % static_cast<std::size_t>(s.replicates));
    rest /= static_cast<std::size_t>(s.replicates);
    p.axis_index.assign(s.axes.size(), 0);
    for (std::size_t a = s.axes.size(); a-- > 0;) {
      p.axis_index[a] = rest % s.axes[a].size();
      rest /= s.axes[a].size();
    }
    std::string canon;
    for (std::size_t a = 0; a < s.axes.size(); ++a) {
      for (const auto& k : s.axes[a].keys) {
        p.labels.push_back(k.labels[p.axis_index[a]]);
        canon +=
            (canon.empty() ? "" : "\n") + k.key + "=" + canonical_text(k.values[p.axis_index[a]]);
      }
    }
    std::uint64_t seed = derive_seed(base, static_cast<std::uint64_t>(p.replicate));
    if (s.seed_per_point) seed = derive_seed(seed, canon);
    p.seed = seed >> 1;
    // An axis on workload.seed sets the point's seed itself (issue 26 item 8: the run and
    // cluster kinds set workload.seed from the point's seed, so the axis was overridden and three
    // seeds gave identical results). Replicates beyond the first derive from it.
    for (std::size_t a = 0; a < s.axes.size(); ++a)
      for (const auto& k : s.axes[a].keys)
        if (k.key == kSeedKey) {
          const std::uint64_t v = std::stoull(canonical_text(k.values[p.axis_index[a]]));
          p.seed =
              p.replicate == 0 ? v : derive_seed(v, static_cast<std::uint64_t>(p.replicate)) >> 1;
        }
    out.push_back(std::move(p));
  }
  return out;
}

void set_path(ConfigNode& root, const std::string& path, const ConfigNode& value) {
  ConfigNode* at = &root;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty())
      throw InputError(value.loc, "empty key component in config path '" + path + "'");
    if (at->is_scalar()) {
      // A preset name being refined, as --set does: h100 + gpu.x = {preset: h100, gpu: {x}}.
      ConfigNode name = *at;
      name.key_loc = {};
      ConfigNode m = ConfigNode::make_map(at->loc);
      m.key_loc = at->key_loc;
      m.entries.emplace_back("preset", std::move(name));
      *at = std::move(m);
    } else if (at->kind == ConfigNode::Kind::Seq) {
      // A list item by its index (cluster.nodes.0.count): the item itself, not a map key.
      const bool digits = key.find_first_not_of("0123456789") == std::string::npos;
      const std::size_t i = digits && key.size() < 10 ? std::stoul(key) : at->items.size();
      if (i >= at->items.size())
        throw InputError(value.loc, "cannot set '" + path + "': the config holds a list of " +
                                        std::to_string(at->items.size()) + " item(s) there; '" +
                                        key + "' is not an index below that");
      if (dot == std::string::npos) {
        const SourceLoc key_loc = at->items[i].key_loc;
        at->items[i] = value;
        at->items[i].key_loc = key_loc.file.empty() ? value.loc : key_loc;
        return;
      }
      at = &at->items[i];
      start = dot + 1;
      continue;
    } else if (at->is_null()) {
      *at = ConfigNode::make_map(value.loc);
    }
    ConfigNode* next = at->find(key);
    if (!next) {
      ConfigNode fresh;
      fresh.loc = value.loc;
      fresh.key_loc = value.loc;
      next = &at->set(key, fresh);
    }
    if (dot == std::string::npos) {
      const SourceLoc key_loc = next->key_loc;
      *next = value;
      next->key_loc = key_loc.file.empty() ? value.loc : key_loc;
      return;
    }
    at = next;
    start = dot + 1;
  }
}

namespace {
// Preset file references (a scalar ending in .yaml/.yml) relative to the file that names them
// become absolute, so the point's config (written to points/pNNNNNN/point.yaml) reads the same
// file from anywhere and command.txt reruns it alone (issue 12.11). Other paths (traces) keep
// resolving against the spec's folder (--base-dir), as before.
void absolutize_preset_files(ConfigNode& n) {
  if (n.is_scalar()) {
    const std::string& v = n.scalar;
    const bool yaml = (v.size() > 5 && v.compare(v.size() - 5, 5, ".yaml") == 0) ||
                      (v.size() > 4 && v.compare(v.size() - 4, 4, ".yml") == 0);
    if (yaml && !fs::path(v).is_absolute()) n.scalar = resolve_preset_file(v, n.loc);
    return;
  }
  for (auto& [k, v] : n.entries) absolutize_preset_files(v);
  for (auto& v : n.items) absolutize_preset_files(v);
}
}  // namespace

ConfigNode point_config(const SweepSpec& s, const Point& p) {
  ConfigNode c = s.config;
  for (std::size_t a = 0; a < s.axes.size(); ++a)
    for (const auto& k : s.axes[a].keys) set_path(c, k.key, k.values[p.axis_index[a]]);
  if (s.quick)
    for (const auto& [path, v] : s.quick_set) set_path(c, path, v);
  absolutize_preset_files(c);
  return c;
}

std::string canonical_text(const ConfigNode& n) {
  switch (n.kind) {
    case ConfigNode::Kind::Null:
      return "null";
    case ConfigNode::Kind::Scalar:
      return n.scalar;
    case ConfigNode::Kind::Map: {
      std::string out = "{";
      for (std::size_t i = 0; i < n.entries.size(); ++i)
        out += (i ? ", " : "") + n.entries[i].first + ": " + canonical_text(n.entries[i].second);
      return out + "}";
    }
    case ConfigNode::Kind::Seq: {
      std::string out = "[";
      for (std::size_t i = 0; i < n.items.size(); ++i)
        out += (i ? ", " : "") + canonical_text(n.items[i]);
      return out + "]";
    }
  }
  return "";
}

std::string point_name(std::size_t index, std::size_t total) {
  std::size_t width = 6;
  for (std::size_t m = total > 0 ? total - 1 : 0, d = 1; m >= 10; m /= 10)
    width = std::max(width, ++d);
  std::string digits = std::to_string(index);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return "p" + digits;
}

std::string shell_quote(const std::string& arg) {
  static const std::string safe =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:,+@%-";
  bool plain = !arg.empty();
  for (char c : arg) plain = plain && safe.find(c) != std::string::npos;
  if (plain) return arg;
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

}  // namespace kappasim::sweep
