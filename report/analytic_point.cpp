#include "report/analytic_point.hpp"

#include <map>
#include <utility>

#include "core/config.hpp"

namespace kappasim::report {

namespace {
// One preset of `kind`, read once (as `kappasim kappa` reads a preset name).
template <class T>
const std::pair<T, ProvenanceTable>& cached(
    std::map<std::string, std::pair<T, ProvenanceTable>>& cache, const std::string& kind,
    const std::string& name) {
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  std::pair<T, ProvenanceTable> v;
  v.first = read_preset_config<T>(ConfigNode::make_scalar(name, {"--" + kind + " " + name, 0, 0}),
                                  kind, kind, &v.second);
  return cache.emplace(name, std::move(v)).first->second;
}
const std::pair<ModelSpec, ProvenanceTable>& model_entry(const std::string& name) {
  static std::map<std::string, std::pair<ModelSpec, ProvenanceTable>> models;
  return cached(models, "model", name);
}
const std::pair<SystemSpec, ProvenanceTable>& system_entry(const std::string& name) {
  static std::map<std::string, std::pair<SystemSpec, ProvenanceTable>> systems;
  return cached(systems, "system", name);
}
}  // namespace

const ModelSpec& preset_model(const std::string& name) { return model_entry(name).first; }
const SystemSpec& preset_system(const std::string& name) { return system_entry(name).first; }

KappaPoint evaluate_presets(const std::string& model, const std::string& system,
                            const KappaQuery& q) {
  const auto& m = model_entry(model);
  const auto& s = system_entry(system);
  ProvenanceTable prov = m.second;
  prov.insert(s.second.begin(), s.second.end());
  return evaluate_kappa(m.first, s.first, q, &prov);
}

KappaPoint analytic_point(const std::string& model, const std::string& system, int tp,
                          std::optional<double> K, std::optional<double> T,
                          const std::string& dtype) {
  KappaQuery q;
  q.compute_dtype = dtype;
  q.tp = tp > 0 ? tp : preset_system(system).gpus;
  q.context_k = K;
  q.new_tokens_t = T;
  return evaluate_presets(model, system, q);
}

}  // namespace kappasim::report
