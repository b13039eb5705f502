#include "workloads/mix_source.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.hpp"
#include "core/random.hpp"
#include "core/units.hpp"

namespace kappasim {

std::uint64_t mix_sequence_id(std::uint64_t tag, std::uint64_t local) {
  if (local == 0) return 0;
  if (local > kMixLocalMask)
    throw InputError(
        "workload.mix: a component reached 2^56 conversations or documents; its "
        "sequence ids would run into the next component's");
  return tag << kMixTagShift | local;
}

std::vector<MixComponent> mix_components(const WorkloadSpec& spec, std::uint64_t seed) {
  check_mix_weights(spec.mix, "workload.mix");
  if (!(spec.rate > 0) || !std::isfinite(spec.rate))
    throw InputError(
        "workload.rate: the request rate must be a finite number > 0 requests per "
        "second, got " +
        format_number(spec.rate));
  static const WorkloadType types[] = {WorkloadType::ShareGpt, WorkloadType::NarrativeQa,
                                       WorkloadType::DocFinQa};
  const auto& names = mix_generator_names();
  // Weights in the fixed order, scaled by the largest first so their sum cannot overflow.
  double w[3] = {0, 0, 0}, wmax = 0;
  for (std::size_t k = 0; k < 3; ++k) {
    const auto it = spec.mix.find(names[k]);
    w[k] = it == spec.mix.end() ? 0.0 : it->second;
    wmax = std::max(wmax, w[k]);
  }
  double total = 0;
  std::size_t last = 0;  // the last component with a positive weight
  for (std::size_t k = 0; k < 3; ++k) {
    w[k] /= wmax;
    total += w[k];
    if (w[k] > 0) last = k;
  }
  // Cumulative rounding: n_k = round(N·S_k) - round(N·S_(k-1)) (halves up); the last positive
  // component ends at N. Rounding to nearest keeps 75 - 1 ulp (0.3/0.1 of 100) at 75.
  const auto n = static_cast<double>(spec.requests);
  std::vector<MixComponent> out;
  double cum = 0;
  std::int64_t before = 0;
  for (std::size_t k = 0; k < 3; ++k) {
    if (!(w[k] > 0)) continue;
    cum += w[k];
    std::int64_t upto = spec.requests;
    if (k != last)
      upto = std::min(spec.requests, static_cast<std::int64_t>(std::floor(n * cum / total + 0.5)));
    MixComponent c;
    c.type = types[k];
    c.name = names[k];
    c.weight = w[k] / total;
    c.requests = std::max<std::int64_t>(0, upto - before);
    c.rate = spec.rate * c.weight;
    c.seed = derive_seed(seed, "mix/" + c.name);
    c.tag = k + 1;
    before = std::max(before, upto);
    out.push_back(std::move(c));
  }
  return out;
}

MixSource::MixSource(const WorkloadSpec& spec, std::uint64_t seed)
    : m_components(mix_components(spec, seed)), m_rate(spec.rate) {
  m_parts.resize(m_components.size());
  for (std::size_t i = 0; i < m_components.size(); ++i) {
    const MixComponent& c = m_components[i];
    if (c.requests > 0) m_parts[i].gen = make_generator(c.type, spec, c.requests, c.rate, c.seed);
  }
  for (std::size_t i = 0; i < m_parts.size(); ++i) refill(i);
}

void MixSource::refill(std::size_t i) {
  Part& p = m_parts[i];
  p.has_head = p.gen && p.gen->next(p.head);
  if (p.has_head) p.head.sequence_id = mix_sequence_id(m_components[i].tag, p.head.sequence_id);
}

bool MixSource::next(Request& out) {
  std::size_t best = m_parts.size();
  for (std::size_t i = 0; i < m_parts.size(); ++i) {
    if (!m_parts[i].has_head) continue;
    // Strictly earlier only: a tie goes to the earlier component in the fixed order.
    if (best == m_parts.size() || m_parts[i].head.arrival_s < m_parts[best].head.arrival_s)
      best = i;
  }
  if (best == m_parts.size()) return false;
  out = std::move(m_parts[best].head);
  out.id = ++m_produced;
  refill(best);
  return true;
}

std::size_t MixSource::state_size() const {
  std::size_t n = 0;
  for (const Part& p : m_parts) n += (p.gen ? p.gen->state_size() : 0) + (p.has_head ? 1 : 0);
  return n;
}

std::string MixSource::describe() const {
  std::string s = "mix at " + format_number(m_rate) + "/s of";
  for (std::size_t i = 0; i < m_components.size(); ++i) {
    const MixComponent& c = m_components[i];
    s += (i ? "; " : " ") + c.name + " " + format_number(100 * c.weight) + "% (" +
         std::to_string(c.requests) + " requests at " + format_number(c.rate) + "/s" +
         (m_parts[i].gen ? ": " + m_parts[i].gen->describe() : std::string()) + ")";
  }
  return s;
}

}  // namespace kappasim
