// A mixed workload (`workload: {type: mix, mix: {sharegpt: 0.7, narrativeqa: 0.3}, ...}`): a
// superposition of the synthetic generators (not traces), merged lazily in arrival order.
//
// Components. The weights (>= 0, at least one > 0; keys sharegpt | narrativeqa | docfinqa) are
// normalised to p_k = w_k / Σw. Component k is the generator of a single `type: k` workload with
//  - the shape of the workload's own sub-object (workload.sharegpt, workload.narrativeqa, ...),
//  - arrival process and cv of the workload, at rate R·p_k (so the rates add up to R),
//  - seed derive_seed(seed, "mix/<name>") (core/random.hpp): independent of the other
//    components and of their weights, so changing one weight never reshuffles another's stream,
//  - requests n_k, the split of N in the fixed order sharegpt, narrativeqa, docfinqa by
//    cumulative rounding: with S_k = p_1 + ... + p_k, n_k = round(N·S_k) - round(N·S_(k-1))
//    (to nearest, halves up), and the last component with a positive weight takes what is left.
//    So Σ n_k = N exactly and each n_k is within 1 of N·p_k (0.5/0.5 of 101: 51 then 50;
//    0.5/0.3/0.2 of 7: 4, 2, 1). A component with n_k = 0 (weight 0, or one below ~1/(2N)) is
//    not run at all.
// Arrivals. Each component starts its sessions as its own process (Poisson or gamma, cv) at its
// rate; independent Poisson session streams superpose to a Poisson stream of the summed session
// rate, and the long-run request rate is Σ R·p_k = R. With `arrival: gamma` each component is
// its own gamma renewal stream; their superposition is not a gamma renewal process (it tends to
// Poisson as components are added). Each component stops after its n_k requests, so the last
// few requests of a run (after the first component has finished: of order √N of them) come
// at less than R.
// Merge. Requests come out in non-decreasing arrival_s; a tie between components goes to the
// earlier one in the fixed order, and each component's own order is kept. Ids are renumbered
// 1, 2, 3, ... over the merged stream. `Request::workload` keeps the component's name.
// Prefix identity. A component's sequence ids (conversation / document numbers) are tagged with
// its place in the fixed order: sequence_id = tag << 56 | local id, tag 1 sharegpt,
// 2 narrativeqa, 3 docfinqa. Ids of different components never collide (chunk keys of chat
// conversation 5 and NarrativeQA document 5 differ), the top bit stays clear (per-request chunk
// keys set it, request.cpp), and the tag does not depend on which other components are present.
// Local ids are far below 2^56 (a document catalogue is at most 9e15 entries; a component that
// reached 2^56 sessions is refused as an InputError).
// Memory: one look-ahead request per component plus each generator's active sessions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "workloads/generators.hpp"
#include "workloads/request.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {

inline constexpr int kMixTagShift = 56;
inline constexpr std::uint64_t kMixLocalMask = (std::uint64_t{1} << kMixTagShift) - 1;

// The sequence id a mix gives local id `local` of the component tagged `tag` (0 stays 0: no
// reusable prefix), and its parts.
std::uint64_t mix_sequence_id(std::uint64_t tag, std::uint64_t local);
inline std::uint64_t mix_local_sequence_id(std::uint64_t id) { return id & kMixLocalMask; }
inline std::uint64_t mix_sequence_tag(std::uint64_t id) { return id >> kMixTagShift; }

struct MixComponent {
  WorkloadType type = WorkloadType::ShareGpt;
  std::string name;   // "sharegpt" | "narrativeqa" | "docfinqa"
  double weight = 0;  // normalised: the weights of a mix sum to 1
  std::int64_t requests = 0;
  double rate = 0;         // requests per second: R·weight
  std::uint64_t seed = 0;  // derive_seed(seed, "mix/" + name)
  std::uint64_t tag = 0;   // sequence-id tag: 1 + place in the fixed order
};

// The components of `spec.mix` with a weight > 0, in the fixed order (checks the weights and
// the rate: InputError naming workload.mix.KEY / workload.rate).
std::vector<MixComponent> mix_components(const WorkloadSpec& spec, std::uint64_t seed);

class MixSource : public WorkloadSource {
 public:
  MixSource(const WorkloadSpec& spec, std::uint64_t seed);
  bool next(Request& out) override;
  std::string describe() const override;

  const std::vector<MixComponent>& components() const { return m_components; }
  // Component i's generator (nullptr when it has no requests to make).
  const SessionGenerator* generator(std::size_t i) const { return m_parts[i].gen.get(); }
  // Sessions held by all components (each generator's state_size()) plus look-ahead requests.
  std::size_t state_size() const;

 private:
  struct Part {
    std::unique_ptr<SessionGenerator> gen;
    Request head;
    bool has_head = false;
  };
  void refill(std::size_t i);

  std::vector<MixComponent> m_components;
  std::vector<Part> m_parts;  // one per component, same order
  double m_rate;
  std::uint64_t m_produced = 0;
};

}  // namespace kappasim
