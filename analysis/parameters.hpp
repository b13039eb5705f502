// The parameters `kappasim sensitivity` varies (docs/analysis.md): every numeric value of the
// effective configuration whose provenance is `assumption:` or `derived:`, or that declares a
// range (`low:`/`high:`, e.g. a measured value with its spread), with the range it is varied
// over. Pure.
//
// Ranges: a provenance may declare one, `{value: X, assumption: "...", low: L, high: H}` (core/
// config); otherwise the default relative range base·(1 ± rel) (rel = 0.5 unless the command
// says otherwise), with a dimensionless base in (0, 1] capped at 1 (efficiencies, fractions)
// and whole-number dimensionless values rounded (at least 1 when the base is, and never equal
// to the base). The output says which rule gave each range.
//
// The serving spec's software defaults carry their [A]/[D] tags as comments in
// serving/serving_spec.hpp; serving_tags() is their machine-readable form (key, kind, range,
// why), applied to an effective run config where a value has no provenance of its own.
#pragma once

#include <string>
#include <vector>

#include "core/config.hpp"

namespace kappasim::analysis {

struct TaggedParameter {
  std::string key;   // dotted path in the effective config ("system.gpu.dma_copy_overhead")
  std::string kind;  // assumption | derived (| measured | spec, with a declared range)
  std::string source;
  std::string base_text, low_text, high_text;  // literals as written into a config
  double base = 0, low = 0, high = 0;          // SI
  bool declared = false;                       // low/high from the provenance
  std::string range;                           // "declared" | "default ±50%" (+ cap/round)
};

// Walks `effective` (a tree with provenance, e.g. from write_config) in file order. InputError
// when a declared low/high is not a value of the same dimension as the base, or low > high.
std::vector<TaggedParameter> tagged_parameters(const ConfigNode& effective,
                                               double default_rel = 0.5);

struct SoftwareTag {
  const char* key;   // path under the run config ("serving.step_overhead")
  const char* kind;  // assumption | derived
  const char* low;
  const char* high;
  const char* why;  // source, shortened from serving_spec.hpp
};
const std::vector<SoftwareTag>& serving_tags();
// Attaches serving_tags() provenance to those keys of `effective` that have none.
void tag_serving_defaults(ConfigNode& effective);

// The node at a dotted path, or null.
const ConfigNode* find_path(const ConfigNode& root, const std::string& dotted);

}  // namespace kappasim::analysis
