#include "serving/arrivals.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/sim_runner.hpp"
#include "serving/kv_store.hpp"
#include "serving/sim_clock.hpp"
#include "serving/stack_profile.hpp"

namespace kappasim {

using sim_clock::now_s;
using sim_clock::wait_s;

namespace {
// The keys of a request's reusable prefix (its leading whole chunks inside prefix_tokens): the
// leading keys of chunk_keys(r, chunk_tokens), computed only that far (chunk_keys of the first
// min(prefix, prompt) tokens are the prompt's leading keys).
void prefix_keys(const Request& r, int chunk_tokens, std::vector<std::uint64_t>& keys) {
  chunk_keys(r, chunk_tokens, std::min(r.prefix_tokens, r.prompt_tokens()), keys);
}
}  // namespace

Arrivals::Arrivals(const RunSpec& spec, WorkloadSource& source, EngineRole role,
                   WarmSource warm_source, const std::vector<std::unique_ptr<Rank>>& ranks,
                   const ClusterView& view, Admit admit, sc_core::sc_event& work)
    : m_spec(spec),
      m_source(source),
      m_role(role),
      m_warm_source(std::move(warm_source)),
      m_ranks(ranks),
      m_view(view),
      m_admit(std::move(admit)),
      m_work(work) {
  if (m_ranks.size() > 1) m_router = make_router(spec.serving.dp_router);
  if (spec.workload.concurrency > 0)
    m_clients = std::make_unique<ClientPool>(spec.workload.concurrency, spec.workload.think_time_s);
}

Arrivals::~Arrivals() = default;

std::size_t Arrivals::route(const Request& r) {
  if (m_ranks.size() == 1) return 0;
  const std::size_t i = m_router->choose(r, m_view);
  if (i >= m_ranks.size())
    throw std::logic_error(std::string("router ") + router_name(m_spec.serving.dp_router) +
                           " chose rank " + std::to_string(i) + " of " +
                           std::to_string(m_ranks.size()));
  return i;
}

void Arrivals::run() {
  const ServingSpec& sv = m_spec.serving;
  const int chunk = sv.tier_chunk_tokens();
  bool warmed = false;
  if (sv.warm_tier && m_warm_source) {
    // Every rank's tier as the workload's own stream would leave it: every request's prefix in
    // arrival order, LRU within the capacity (routing is known only as requests arrive).
    std::unique_ptr<WorkloadSource> src = m_warm_source();
    Request w;
    std::vector<std::uint64_t> keys;  // one buffer for every request's keys
    while (src->next(w)) {
      prefix_keys(w, chunk, keys);
      for (auto& rank : m_ranks) rank->store->warm(keys);
    }
    warmed = true;
  }
  Request r;
  // Closed loop: the request arrives when a client is ready (its previous request finished,
  // then its think time); the stream's own arrival time is not used. Past the time base's reach
  // the stream ends as if exhausted (next_arrival).
  while (next_arrival(m_source, m_clients.get(), r)) {
    if (r.arrival_s > now_s()) wait_s(r.arrival_s - now_s());
    // End-to-end TTFT (serving.ttft): the stack's front end (one API server process, serial:
    // a request waits for the ones before it) handles the request before the scheduler sees it.
    const double fe_in = sv.end_to_end() ? front_end_in_s(sv.stack, r.prompt_tokens()) : 0;
    if (fe_in > 0) wait_s(fe_in);
    const std::size_t ri = route(r);
    if (sv.warm_tier && !warmed && m_role != EngineRole::Decode) {
      // No copy of the stream to warm from: a prefix never placed before counts as
      // pre-populated at its first use; later uses find it only if it survived LRU.
      KvStore& store = *m_ranks[ri]->store;
      std::vector<std::uint64_t> pk;
      prefix_keys(r, chunk, pk);
      pk.erase(std::remove_if(pk.begin(), pk.end(),
                              [&](std::uint64_t k) { return store.dram().ever_placed(k); }),
               pk.end());
      store.warm(pk);
    }
    if (!m_admit(r, ri, fe_in)) break;
  }
  m_done = true;
  m_work.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace kappasim
