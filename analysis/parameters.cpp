// Tagged parameters and their ranges (see parameters.hpp).
#include "analysis/parameters.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"
#include "core/units.hpp"

namespace kappasim::analysis {

const std::vector<SoftwareTag>& serving_tags() {
  // Ranges are the brackets serving_spec.hpp and docs/scheduler.md cite for each default.
  static const std::vector<SoftwareTag> tags = {
      {"serving.step_overhead", "assumption", "0.15 ms", "6 ms",
       "serving_spec.hpp [A]: vLLM async scheduling 0.15-0.17 ms (PR 11133) .. early v1 5-6 ms "
       "(issue 10634)"},
      {"serving.lmcache_retrieve_fixed", "derived", "0.25 ms", "1 ms",
       "serving_spec.hpp [D]: LMCache PR 3110 log, 0.55 ms less transfer; range x0.5..x2 assumed"},
      {"serving.lmcache_retrieve_per_chunk", "derived", "0.05 ms", "0.2 ms",
       "serving_spec.hpp [D]: LMCache PR 1740 log, 4.2 ms / 40 chunks; range x0.5..x2 assumed"},
      {"serving.lmcache_store_fixed", "derived", "0.9 ms", "3.6 ms",
       "serving_spec.hpp [D]: LMCache PR 3110 / 1740 logs, ~1.8 ms; range x0.5..x2 assumed"},
      {"serving.lmcache_store_per_chunk", "derived", "0 s", "0.01 ms",
       "serving_spec.hpp [D]: not resolvable from the logs (<= ~0.01 ms per chunk)"},
      {"serving.native_request_fixed", "assumption", "0 s", "0.5 ms",
       "serving_spec.hpp [A]: no published measurement"},
      {"serving.native_per_block", "assumption", "0 s", "20 us",
       "serving_spec.hpp [A]: CPU cost per block beyond the DMA's own; none published"},
      {"serving.fairness_max_wait", "assumption", "1 s", "20 s",
       "serving_spec.hpp [A]: Fair's wait bound, a study knob"},
      {"serving.activation_reserve", "assumption", "3.05 GiB", "8 GiB",
       "serving_spec.hpp [M->A]: vLLM PR 10511 profile, 3.05 GiB at TP 1 .. 4.84 GiB at TP 2; 8 "
       "GiB for larger models assumed"},
  };
  return tags;
}

const ConfigNode* find_path(const ConfigNode& root, const std::string& dotted) {
  const ConfigNode* n = &root;
  std::size_t a = 0;
  while (n) {
    const std::size_t b = dotted.find('.', a);
    const std::string part = dotted.substr(a, b == std::string::npos ? std::string::npos : b - a);
    n = n->is_map() ? n->find(part) : nullptr;
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return n;
}

void tag_serving_defaults(ConfigNode& effective) {
  for (const auto& t : serving_tags()) {
    ConfigNode* n = const_cast<ConfigNode*>(find_path(effective, t.key));
    if (n && n->is_scalar() && !n->provenance)
      n->provenance = Provenance{t.kind, t.why, t.low, t.high};
  }
}

namespace {

// 6 significant digits: default range ends read cleanly ("360 ns", not 359.99999999999994 ns).
double sig6(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.6g", v);
  return std::strtod(b, nullptr);
}

bool whole(double v) { return std::fabs(v - std::round(v)) < 1e-9 * std::max(1.0, std::fabs(v)); }

void walk(const ConfigNode& n, const std::string& path, double rel,
          std::vector<TaggedParameter>& out) {
  if (n.is_map()) {
    for (const auto& [k, v] : n.entries) walk(v, path.empty() ? k : path + "." + k, rel, out);
    return;
  }
  if (!n.is_scalar() || !n.provenance || n.quoted) return;
  // Assumed and derived values, and any value whose provenance declares a range (a measured
  // number with a stated spread, e.g. host DRAM efficiency 0.75-0.85).
  const std::string& kind = n.provenance->kind;
  const bool ranged = !n.provenance->low.empty() && !n.provenance->high.empty();
  if (kind != "assumption" && kind != "derived" && !ranged) return;
  Quantity q;
  try {
    q = parse_quantity(n.scalar);
  } catch (const UnitError&) {
    return;  // a name, not a number
  }
  TaggedParameter p;
  p.key = path;
  p.kind = kind;
  p.source = n.provenance->source;
  p.base = q.value;
  p.base_text = n.scalar;
  auto side = [&](const std::string& text, const char* which) {
    try {
      Quantity b = parse_quantity(text);
      if (!(b.dim == q.dim)) throw UnitError("'" + text + "' is not a " + dimension_name(q.dim));
      return b.value;
    } catch (const UnitError& e) {
      throw InputError(n.loc, "provenance '" + std::string(which) + "' of '" + path +
                                  "': " + e.what() + "; expected a value like '" + n.scalar + "'");
    }
  };
  const bool has_low = !n.provenance->low.empty(), has_high = !n.provenance->high.empty();
  const bool dimless = q.dim == dim::none;
  const bool integer = dimless && whole(q.value) && std::fabs(q.value) >= 1;
  std::string rule;
  p.low = has_low ? side(n.provenance->low, "low") : sig6(q.value * (1 - rel));
  p.high = has_high ? side(n.provenance->high, "high") : sig6(q.value * (1 + rel));
  char pct[32];
  std::snprintf(pct, sizeof pct, "%g%%", rel * 100);
  if (has_low && has_high) {
    rule = "declared";
  } else {
    rule = (has_low || has_high) ? std::string("declared/default ±") + pct
                                 : std::string("default ±") + pct;
    if (dimless && q.value > 0 && q.value <= 1 && !has_high && p.high > 1) {
      p.high = 1;
      rule += ", capped at 1";
    }
    if (integer) {
      const double lo = std::max(1.0, std::round(p.low)), hi = std::round(p.high);
      p.low = lo >= q.value ? q.value - 1 : lo;
      p.high = hi <= q.value ? q.value + 1 : hi;
      if (p.low < 1) p.low = q.value;  // a count of 1 only goes up
      rule += ", whole numbers";
    }
  }
  if (p.low > p.high)
    throw InputError(n.loc, "provenance range of '" + path + "': low " + format_number(p.low) +
                                " is above high " + format_number(p.high));
  p.declared = has_low && has_high;
  p.range = rule;
  p.low_text = has_low ? n.provenance->low
                       : (dimless ? format_number(p.low) : format_quantity(p.low, q.dim));
  p.high_text = has_high ? n.provenance->high
                         : (dimless ? format_number(p.high) : format_quantity(p.high, q.dim));
  out.push_back(std::move(p));
}

}  // namespace

std::vector<TaggedParameter> tagged_parameters(const ConfigNode& effective, double default_rel) {
  std::vector<TaggedParameter> out;
  walk(effective, "", default_rel, out);
  return out;
}

}  // namespace kappasim::analysis
