#include "serving/step_group.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "core/pooled_spawn.hpp"
#include "core/sim_seconds.hpp"
#include "serving/kv_store.hpp"
#include "serving/sim_clock.hpp"
#include "serving/stack_profile.hpp"
#include "systems/topology.hpp"

namespace kappasim {

using sim_clock::now_s;
using sim_clock::wait_s;

// The load path strategy's context for one step, or for one request's load outside the steps
// (serving.stack.load: async; `run` null: no compute, its own time breakdown and bounds): the
// step's own accounting, the group's GPUs, copies and trace.
class StepGroup::Context final : public LoadContext {
 public:
  Context(StepGroup& g, std::uint64_t step) : m_g(g), m_step(step) {
    spec = &g.m_env.spec;
    // The per-GPU mean of the group's KV bytes per token: a rank's GPU holds B_kv_gpu over pp
    // stages on average, and the strategy's bytes add up the group's ranks.
    kv_bytes_per_token_gpu = g.m_env.kv.unit_per_gpu * g.store_weight();
    // Over the host link: 1/r of it when replicated KV is sharded (serving.replicated_kv).
    kv_bytes_per_token_link = kv_bytes_per_token_gpu / g.m_env.kv.replication;
    buffer_Bps = g.buffer_Bps;
    stats = &g.stats;
    step_time = &time;
    step_bounds = &bounds;
  }
  double now() const override { return now_s(); }
  void wait(double s) override { wait_s(s); }
  void start_copies(CopyGroup& c, double bytes_per_gpu, std::int64_t units, CopyPath path) override;
  void wait_copies(CopyGroup& c) override {
    if (!c.g.finished) sc_core::wait(c.g.done);
    if (m_loading.erase(&c) > 0 && m_loading.empty()) run->set_loading(false);
    if (c.shards_end_s >= 0) stats->allgather_s += c.g.end_s - c.shards_end_s;  // the all-gather
    for (Rank* r : m_g.ranks) r->store->account_load(c);  // per-level load bytes and time
  }
  bool stage_worker() const override { return stage >= 0 && run; }
  void hold_launch(bool held) override {
    if (!stage_worker()) return;
    if (held) {
      m_loading.insert(nullptr);  // the worker's own CPU: no copy group
      run->set_loading(true);
    } else if (m_loading.erase(nullptr) > 0 && m_loading.empty()) {
      run->set_loading(false);
    }
  }
  CopySplit split_copies(const CopyGroup& c, double t_start) const override {
    const auto& bound = m_g.m_resource_bound;
    if (c.shards_end_s < 0) return split_copy_times(c.rs, t_start, c.g.end_s, bound);
    // The shards' split up to their end, then the NVLink all-gather's time: the link's (a link
    // moving the load's bytes; kv_allgather_s says how much of it the gather took).
    CopySplit s = split_copy_times(c.rs, t_start, c.shards_end_s, bound);
    const double gather = std::max(0.0, c.g.end_s - c.shards_end_s);
    s.link += gather;
    s.bounds[LoadBound::Link] += gather;
    return s;
  }
  void compute(const StepTime& st) override {
    if (!run) return;  // an async load: the request computes in a later step
    const double t_c = now_s();
    std::vector<std::unique_ptr<CopyGroup>>& idle = m_g.m_compute_groups;
    std::unique_ptr<CopyGroup> c;
    if (idle.empty()) {
      c = std::make_unique<CopyGroup>();
    } else {  // as a new one: the requests' vectors keep their buffers
      c = std::move(idle.back());
      idle.pop_back();
      c->g.finished = c->shards.finished = false;
      c->g.end_s = c->shards.end_s = 0;
      c->g.left = c->shards.left = 0;
      c->g.on_finished = c->shards.on_finished = nullptr;
      c->gather.clear();
      c->shards_end_s = -1;
    }
    start_compute(*c, st.total.compute_time_s, st.total.hbm_bytes);
    wait_copies(*c);
    time.compute_s += now_s() - t_c;
    trace_compute(t_c, now_s());
    c->g.done.cancel();  // what destroying it did: no notification left pending
    c->shards.done.cancel();
    idle.push_back(std::move(c));
  }
  void start_compute(CopyGroup& c, double compute_s, double hbm_bytes) override {
    if (!run) throw std::logic_error("an async load computes nothing");
    run->start(c, compute_s, hbm_bytes);
    if (m_g.m_env.push && plans) m_g.push_layers(*this, compute_s);  // P/D push_layer
  }
  double buffer_copy_s(const LoadSplit& ls) const override {
    // Every rank's GPUs copy their own buffer hits at once: the slowest rank's.
    if (m_g.ranks.size() == 1) return LoadContext::buffer_copy_s(ls);
    double t = 0;
    for (double b : buffer_tokens)
      t = std::max(t, b > 0 ? b * m_g.m_env.kv.unit_per_gpu / buffer_Bps : 0);
    return t;
  }
  void trace_copies(const CopyGroup& c, const std::string& what) override {
    m_g.m_env.trace.copies(c, what);
  }
  void trace_load(const std::string& what, double t0, double t1) override {
    m_g.m_env.trace.load(run ? what : what + " (async)", t0, t1);
  }
  void trace_link(const std::string& what, double t0, double t1) override {
    m_g.m_env.trace.link(m_g.ranks, what, t0, t1);
  }
  void trace_compute(double t0, double t1) override {
    if (run && m_g.m_env.trace.on())
      m_g.m_env.trace.compute(m_g.ranks, "step " + std::to_string(m_step), t0, t1);
  }

  StepRun* run = nullptr;  // the step's compute (null: outside the steps)
  // P/D push_layer (StepGroup::push_layers): the step's plans, one per rank, and how many of
  // this context's layers (its stage's, or the model's) have started computing.
  const std::vector<StepPlan>* plans = nullptr;
  int pushed_layers = 0;
  int stage = -1;  // a pipeline stage's load (StepGroup::load_by_stage): its GPUs' copies only
  // An async load's rank (StepGroup::load_async; -1: a step's load): its copies take the rank's
  // copy stream (KvPull::begin_copies), after the previous request's copies; the wait is not
  // the load's own time.
  int async_rank = -1;
  bool copies_begun = false;
  double stream_wait_s = 0;
  // Hybrid KV (issue 25, StepGroup::hybrid_load): the stage's share of this load over its
  // GpuUnit::kv_share, and the share of a GPU's host bytes that is replicated (all-gathered).
  double kv_scale = 1, gather_share = 1;
  TimeBreakdown time;                              // the step's categories
  LoadBoundTimes bounds;                           // the step's load, per bound
  std::vector<double> link_tokens, buffer_tokens;  // the step's, per rank

 private:
  StepGroup& m_g;
  std::uint64_t m_step;
  // A stage's load groups in flight (stage >= 0), and nullptr while hold_launch holds it.
  std::set<const CopyGroup*> m_loading;
};

struct StepGroup::Step {
  // A step is reused by the next one (issue 24: its vectors keep their buffers); begin() resets
  // what a step adds to.
  std::vector<StepPlan> plans;
  std::vector<StepWork> work;                      // per rank (serving/step_plan)
  std::vector<std::pair<Rank*, Sequence*>> pulls;  // admitted to load outside the steps
  std::unique_ptr<Context> ctx;
  std::unique_ptr<StepRun> run;
  std::vector<std::vector<SeqSlice>> batches;
  std::vector<std::vector<RequestState*>> first, done;
  std::vector<std::vector<RequestState*>> decoded;  // may store the chunks they fill
  double start = 0, kv_used = 0, load_s = 0, compute_s = 0;
  bool finished = false;  // its loads, compute and stores have ended (ended notified)
  sc_core::sc_event ended;
};

StepGroup::StepGroup(const StepGroupEnv& env, std::vector<Rank*> rs,
                     std::unique_ptr<StepModel> model, double share)
    : ranks(std::move(rs)), gpu_share(share), m_env(env), m_model(std::move(model)) {
  // Bound reports need the flow back end's resources; the packet back end reports its whole
  // time as the link's.
  if (const Topology* topo = m_env.link.topology())
    for (const auto& res : topo->resources())
      m_resource_bound.push_back(load_bound_of_resource(res.name));
  m_peer_fabric = m_env.kv.replication > 1 && carries_peer(m_env.link);
}

StepGroup::~StepGroup() = default;

double StepGroup::store_weight() const {
  const double n = static_cast<double>(ranks.size()) * m_env.layout.pp;
  return n == 1 ? 1.0 : 1.0 / n;
}

void StepGroup::steps() {
  const auto held = [this] {
    return std::any_of(ranks.begin(), ranks.end(),
                       [](const Rank* r) { return r->store->holding(); });
  };
  const std::size_t depth = static_cast<std::size_t>(m_model->concurrent_batches());
  for (;;) {
    if (m_flight.size() < depth) {
      // Requests held out of the queue by their prefetch are still to come.
      if (m_flight.empty() &&
          std::all_of(ranks.begin(), ranks.end(), [](const Rank* r) { return r->sched->idle(); })) {
        if (m_env.arrivals_done() && !held()) return;
        sc_core::wait(m_env.work);
        continue;
      }
      std::unique_ptr<Step> b = m_spare ? std::move(m_spare) : std::make_unique<Step>();
      // A spare's plans are filled again in place (their items' buffers kept; issue 24); its
      // other members are untouched.
      b->plans.resize(ranks.size());
      bool any = false;
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        Rank* r = ranks[i];
        r->sched->plan(now_s(), *r->kv, b->plans[i]);
        any = any || !b->plans[i].items.empty();
        // Requests admitted to load their KV outside the steps: an async tier load starts when
        // this step's worker runs (start_loads); a P/D pull starts now (vLLM's workers start the
        // reads as the step that admitted them begins).
        for (Sequence* s : r->sched->take_pulls()) b->pulls.emplace_back(r, s);
      }
      if (!m_env.pull.step_handoff() || (!any && !m_flight.empty())) start_loads(*b);
      if (any && depth == 1) {  // one step at a time: in this process
        begin(*b);
        execute(*b);
        end(*b);
        m_spare = std::move(b);  // the next step's, its buffers kept
        continue;
      }
      if (any) {  // a micro-batch: its loads, compute and stores in a process of its own
        begin(*b);
        Step* p = b.get();
        m_flight.push_back(std::move(b));
        spawn_pooled([this, p] {
          execute(*p);
          p->finished = true;
          p->ended.notify(sc_core::SC_ZERO_TIME);
        });
        continue;
      }
      if (m_flight.empty() && m_env.pull.step_handoff() && (!b->pulls.empty() || parked())) {
        empty_step(*b);
        m_spare = std::move(b);  // start_loads took its pulls
        continue;
      }
      if (m_flight.empty()) {
        // plan() may have rejected prompts larger than the whole pool and admitted nothing:
        // count them now (no step will call take_finished() if they were the last arrivals).
        bool running = false;
        for (Rank* r : ranks) {
          r->sched->take_finished(m_finished);
          for (Sequence* s : m_finished) m_env.finish(s);
          // Pulls in flight, or blocks a P/D prefill holds for its decode instance, come back.
          running = running || r->sched->running() > 0 || r->sched->pulling() > 0 ||
                    r->kv->used_blocks() > 0;
        }
        // With nothing running and no block held every waiting prompt fits (larger ones were
        // rejected above), so an empty plan with the source done means the system is empty;
        // check_end() verifies it.
        if (m_env.arrivals_done() && !running && !held()) return;
        sc_core::wait(m_env.work);
        continue;
      }
    }
    // The queue is full, or nothing more can be planned: the oldest step's outputs.
    Step& oldest = *m_flight.front();
    if (!oldest.finished) sc_core::wait(oldest.ended);
    end(oldest);
    m_flight.pop_front();
  }
}

void StepGroup::begin(Step& b) {
  const ServingSpec& sv = m_env.spec.serving;
  ++stats.steps;
  b.start = now_s();
  b.kv_used = b.load_s = b.compute_s = 0;  // a reused Step's (Step)
  b.finished = false;
  b.ctx = std::make_unique<Context>(*this, stats.steps);
  b.ctx->plans = &b.plans;
  TimeBreakdown& time = b.ctx->time;
  // Scheduler critical path (serial before the step; serving/step_plan): every rank's scheduler
  // runs in its own process, so the step waits for the slowest.
  double overhead = 0, software = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    Scheduler& sched = *ranks[r]->sched;
    const SchedulerCpu c = scheduler_cpu(sv, b.plans[r], sched.waiting_front(), sched.running(),
                                         m_env.spec.model.num_layers);
    overhead = std::max(overhead, c.overhead_s);
    software = std::max(software, c.lookup_s + c.meta_s);
    for (const auto& [q, t] : c.tier_request) m_env.ledger.at(q->req.id).tier_request_s += t;
  }
  stats.stack.scheduler_s += software;
  // vLLM's per-step CPU scheduling work, then the stack's scheduler-side software. Both whole
  // ticks of simulated time: one wait of their sum, each part's time as two waits would leave it
  // (issue 24: a timed wake-up fewer per step; sc_time adds ticks exactly).
  const sc_core::sc_time d1 =
      overhead > 0 ? sc_core::sc_time(overhead, sc_core::SC_SEC) : sc_core::SC_ZERO_TIME;
  const sc_core::sc_time d2 =
      software > 0 ? sc_core::sc_time(software, sc_core::SC_SEC) : sc_core::SC_ZERO_TIME;
  if (d1 != sc_core::SC_ZERO_TIME && d2 != sc_core::SC_ZERO_TIME) {
    const sc_core::sc_time t1 = sim_now() + d1;
    sc_core::wait(d1 + d2);
    const double t_sched = sim_seconds(t1);
    time.step_overhead_s += t_sched - b.start;
    time.sched_software_s += now_s() - t_sched;
    return;
  }
  wait_s(overhead);
  time.step_overhead_s += now_s() - b.start;
  const double t_sched = now_s();
  wait_s(software);
  time.sched_software_s += now_s() - t_sched;
}

void StepGroup::start_loads(Step& b) {
  for (const auto& [r, s] : b.pulls)
    spawn_pooled([this, r = r, s = s] {
      m_env.pull.run(*r, s, [this, r, s] { load_async(m_env.ledger.at(s->req.id), *r); });
    });
  b.pulls.clear();
}

void StepGroup::poll_loads() {
  for (Rank* r : ranks)
    for (Sequence* s : m_env.pull.take_loaded(static_cast<std::size_t>(r->index)))
      r->sched->pulled(s);
}

bool StepGroup::parked() const {
  return std::any_of(ranks.begin(), ranks.end(),
                     [](const Rank* r) { return r->sched->pulling() > 0; });
}

void StepGroup::empty_step(Step& b) {
  // vLLM v1 (docs/serving-stacks.md "When an async load's request runs"): EngineCore keeps
  // stepping while its scheduler has requests, the parked ones included; a step with no token
  // runs the worker's kv_connector_no_forward: start_load_kv, then get_finished.
  const double e = m_env.spec.serving.stack.empty_step_s;
  if (e > 0) {
    // wait_s(e), its sc_time converted once.
    if (m_empty_step_time == sc_core::SC_ZERO_TIME)
      m_empty_step_time = sc_core::sc_time(e, sc_core::SC_SEC);
    sc_core::wait(m_empty_step_time);
  }
  start_loads(b);
  const bool seen = std::any_of(ranks.begin(), ranks.end(), [this](const Rank* r) {
    return m_env.pull.has_loaded(static_cast<std::size_t>(r->index));
  });
  poll_loads();
  // No cost per iteration (empty_step 0): wait for a load to end or a request to arrive rather
  // than iterate at one instant.
  if (!(e > 0) && !seen) sc_core::wait(m_env.work);
}

void StepGroup::execute(Step& b) {
  const ServingSpec& sv = m_env.spec.serving;
  const std::size_t n = ranks.size();
  Context& ctx = *b.ctx;
  start_loads(b);  // the worker's start_load_kv, as the step's forward starts
  // What the step computes and loads (serving/step_plan), per rank.
  // Per rank, emptied: the inner vectors keep their buffers (issue 24).
  const auto reset = [n](auto& v) {
    v.resize(n);
    for (auto& x : v) x.clear();
  };
  reset(b.first);
  reset(b.done);
  reset(b.decoded);
  b.work.resize(n);
  b.batches.resize(n);
  const bool store_decode = sv.stack.store_decode && sv.effective_store() != StoreMode::None;
  std::size_t loading = 0;
  double max_tokens = 0;
  LayoutStats& ls = m_env.layout_stats;
  std::vector<StepWork>& work = b.work;
  for (std::size_t r = 0; r < n; ++r) {
    plan_step_work(b.plans[r], work[r], m_env.pd_stores);
    b.batches[r].swap(work[r].slices);  // work's own slices are not read again
    for (const StepItem& it : b.plans[r].items)
      if (it.seq->first_token_s < 0) ++m_env.ledger.at(it.seq->req.id).steps;  // before its TTFT
    for (Sequence* s : work[r].load) b.first[r].push_back(&m_env.ledger.at(s->req.id));
    for (Sequence* s : work[r].done) b.done[r].push_back(&m_env.ledger.at(s->req.id));
    if (store_decode)
      for (Sequence* s : work[r].decoded) b.decoded[r].push_back(&m_env.ledger.at(s->req.id));
    loading += b.first[r].size();
    b.kv_used += ranks[r]->kv->utilization();  // after admission, before finishers leave
    ls.rank_tokens[static_cast<std::size_t>(ranks[r]->index)] += b.plans[r].tokens;
    max_tokens = std::max(max_tokens, static_cast<double>(b.plans[r].tokens));
  }
  b.kv_used /= static_cast<double>(n);
  ls.rank_steps += static_cast<double>(n);
  ls.group_steps += 1;
  ls.max_rank_tokens += max_tokens;
  ls.lockstep_max_tokens += max_tokens * static_cast<double>(n);
  b.run = m_model->time(b.batches);
  ctx.run = b.run.get();
  const StepTime& step_time = b.run->time;
  b.compute_s = step_time.total.compute_time_s;
  if (loading > 0) {  // the load path's strategy: the loads and the step's compute
    LoadSplit all;
    std::size_t requests = loading;  // one rank: its own
    if (n > 1) requests = 0;
    ctx.link_tokens.assign(n, 0);
    ctx.buffer_tokens.assign(n, 0);
    for (std::size_t r = 0; r < n; ++r) {
      if (b.first[r].empty()) continue;
      KvStore& store = *ranks[r]->store;
      store.begin_load(b.first[r], ctx.time);
      const LoadSplit split =
          split_loads(work[r].load, store.chunk_tokens(), sv.block_tokens, store.buffer(),
                      m_env.kv.hybrid ? &*m_env.kv.hybrid : nullptr);
      for (std::size_t i = 0; i < b.first[r].size(); ++i) {
        b.first[r][i]->link_tokens = split.seq_link_tokens[i];
        if (!split.seq_link_state.empty())
          b.first[r][i]->link_state_tokens = split.seq_link_state[i];
        if (store.buffer()) b.first[r][i]->buffer_tokens = split.seq_buffer_tokens[i];
      }
      ctx.link_tokens[r] = split.link_tokens;
      ctx.buffer_tokens[r] = split.buffer_tokens;
      if (n == 1) {
        all = split;
        break;
      }
      // Bytes add up; every rank's process issues its own chunks at once (the slowest's count).
      all.link_tokens += split.link_tokens;
      all.buffer_tokens += split.buffer_tokens;
      for (std::size_t k = 0; k < all.link_parts.size(); ++k)
        all.link_parts[k] += split.link_parts[k];
      all.chunks = std::max(all.chunks, split.chunks);
      all.link_chunks = std::max(all.link_chunks, split.link_chunks);
      all.link_blocks16 = std::max(all.link_blocks16, split.link_blocks16);
      requests = std::max(requests, b.first[r].size());
    }
    if (b.run->stages() > 1) {
      b.load_s = load_by_stage(b, all, static_cast<std::int64_t>(requests));
    } else {
      hybrid_load(ctx, all);
      b.load_s = m_env.load_path.run(ctx, all, static_cast<std::int64_t>(requests), step_time);
    }
    for (std::size_t r = 0; r < n; ++r)
      if (!b.first[r].empty()) ranks[r]->store->end_load(b.first[r]);  // promotions
  } else {
    ctx.compute(step_time);
  }
  // A micro-batch's wait for a pipeline stage busy with another is not its compute: the step's
  // queue (its requests waited; the stage's GPUs were computing the other micro-batch).
  if (const double w = b.run->take_wait_s; w > 0) {
    ctx.time.compute_s -= w;
    ctx.time.queue_s += w;
  }
  for (const auto& f : b.first)
    for (RequestState* st : f) st->load_s = b.load_s;
  // A request's compute, steps and time breakdown are its TTFT's: the steps before its first
  // output token (decode steps after it are in its e2e and TPOT).
  for (const StepPlan& p : b.plans)
    for (const StepItem& it : p.items)
      if (it.seq->first_token_s < 0) m_env.ledger.at(it.seq->req.id).compute_s += b.compute_s;
  // Per GPU: a pipeline stage's GPUs compute their stage's share of the step (pp steps in
  // flight keep the other stages busy).
  stats.compute_busy_s += b.compute_s / m_env.layout.pp;
  stats.flops += step_time.total.flops;
  stats.hbm_bytes += step_time.total.hbm_bytes;
  const double t_store = now_s();
  store_phase(ctx, b.done, b.decoded);
  ctx.time.store_s += now_s() - t_store;
  // The worker's get_finished at the end of its execute_model: the async loads ended by now.
  if (m_env.pull.step_handoff()) poll_loads();
  // The step's categories sum to its duration (--check); every sequence in it waited all of it.
  if (m_env.spec.check && std::fabs(ctx.time.sum() - (now_s() - b.start)) > 1e-12 + 1e-12 * now_s())
    throw std::logic_error("invariant violated: step " + std::to_string(stats.steps) +
                           "'s time breakdown does not sum to its duration");
}

void StepGroup::end(Step& b) {
  const std::size_t n = ranks.size();
  const Context& ctx = *b.ctx;
  // The GPUs' time: a micro-batch's wait for a busy stage (queue) is the other micro-batch's.
  // With pipeline stages pp micro-batches are in flight, their steps overlapping, and a stage's
  // GPUs hold one at a time: a step counts 1/pp of its time (as compute_busy_s does), so the
  // run's categories and idle still sum to the simulated time.
  TimeBreakdown gpu_time = ctx.time;
  gpu_time.queue_s = 0;
  if (const int pp = m_env.layout.pp; pp > 1)
    for (const auto& c : TimeBreakdown::categories()) gpu_time.*c.field /= pp;
  stats.run_time += gpu_time;
  stats.run_bounds += ctx.bounds;
  for (const StepPlan& p : b.plans)
    for (const StepItem& it : p.items) {
      Sequence& q = *it.seq;
      if (q.first_token_s < 0) m_env.ledger.at(q.req.id).time += ctx.time;
      // Inter-token latency: every output token after the first, from the one before it (a
      // preempted sequence's next token comes after its prefill again).
      if ((it.decode || (it.last && q.generated > 0)) && m_env.summary)
        m_env.summary->add_itl(now_s() - q.last_token_s);
    }
  if (ctx.bounds.total() > 0)
    for (const auto& f : b.first)
      for (RequestState* st : f) st->load_bounds = ctx.bounds;
  for (std::size_t r = 0; r < n; ++r)
    if (n == 1 || !b.plans[r].items.empty())
      ranks[r]->sched->complete(b.plans[r], now_s(), *ranks[r]->kv);
  for (Rank* r : ranks) {
    r->sched->take_finished(m_finished);
    for (Sequence* s : m_finished) m_env.finish(s);
  }
  if (m_env.spec.check) check_step(b.start);
  if (m_env.summary) {
    StepRecord rec;
    rec.start_s = b.start;
    rec.end_s = now_s();
    for (const StepPlan& p : b.plans) {
      rec.tokens += p.tokens;
      rec.seqs += static_cast<int>(p.items.size());
    }
    rec.budget = static_cast<std::int64_t>(m_env.spec.serving.max_num_batched_tokens) *
                 static_cast<std::int64_t>(n);
    rec.vram_used_fraction = b.kv_used;
    rec.load_s = b.load_s;
    rec.compute_s = b.compute_s;
    m_env.summary->add_step(rec);
  }
  if (m_env.trace.on()) {
    std::size_t waiting = 0;
    std::int64_t tokens = 0;
    for (std::size_t r = 0; r < n; ++r) {
      waiting += ranks[r]->sched->waiting();
      tokens += b.plans[r].tokens;
    }
    m_env.trace.step(b.start, b.kv_used, tokens, waiting);
  }
}

void StepGroup::push_layers(Context& ctx, double compute_s) {
  // The layers this call computes: the context's (its pipeline stage's, or the model's), all
  // that are left, or (the layer-wise load path computes one layer per call) compute_s's share.
  const int L = m_env.spec.model.num_layers;
  int first = 0, layers = L;
  if (ctx.stage >= 0) {
    const std::vector<int> sl = stage_layer_counts(L, m_env.layout.pp);
    for (int s = 0; s < ctx.stage; ++s) first += sl[static_cast<std::size_t>(s)];
    layers = sl[static_cast<std::size_t>(ctx.stage)];
  }
  const int left = layers - ctx.pushed_layers;
  if (left <= 0) return;
  const double total = ctx.run->time.total.compute_time_s;
  int n = left;
  if (total > 0 && compute_s < total)
    n = std::clamp(static_cast<int>(std::lround(compute_s / total * layers)), 1, left);
  first += ctx.pushed_layers;
  ctx.pushed_layers += n;
  // A prompt's last chunk (vLLM's P2pNcclConnector sends a chunked prompt's KV, whole, with its
  // last chunk's forward) of a request with a decode stage to come.
  for (std::size_t r = 0; r < ranks.size() && r < ctx.plans->size(); ++r)
    for (const StepItem& it : (*ctx.plans)[r].items)
      if (it.last && !it.decode && it.seq->hold_kv)
        m_env.push->computed(*ranks[r], *it.seq, first, n, compute_s);
}

const RunSpec& StepGroup::stage_spec(int s, int layers) {
  const std::size_t si = static_cast<std::size_t>(s);
  if (m_stage_spec.size() <= si) m_stage_spec.resize(si + 1);
  if (!m_stage_spec[si] || m_stage_spec[si]->model.num_layers != layers) {
    m_stage_spec[si] = std::make_unique<RunSpec>(m_env.spec);
    m_stage_spec[si]->model.num_layers = layers;  // the layers its worker loads and computes
  }
  return *m_stage_spec[si];
}

double StepGroup::load_by_stage(Step& b, const LoadSplit& all, std::int64_t requests) {
  Context& step = *b.ctx;
  const int pp = b.run->stages();
  const double w = 1.0 / pp;  // a stage's GPUs: 1/pp of the group's
  struct StageLoad {
    std::unique_ptr<StepRun> run;
    std::unique_ptr<Context> ctx;
    EngineStats stats;
    double t0 = 0, load_end = 0, end = 0;
    bool finished = false;
    sc_core::sc_event ended;
  };
  std::vector<std::unique_ptr<StageLoad>> st;
  const std::vector<int> layers = stage_layer_counts(m_env.spec.model.num_layers, pp);
  for (int s = 0; s < pp; ++s) {
    auto x = std::make_unique<StageLoad>();
    x->run = b.run->stage(s);
    x->ctx = std::make_unique<Context>(*this, stats.steps);
    Context& c = *x->ctx;
    c.spec = &stage_spec(s, layers[static_cast<std::size_t>(s)]);
    c.stats = &x->stats;
    c.stage = s;
    c.run = x->run.get();
    c.plans = step.plans;
    c.link_tokens = step.link_tokens;
    c.buffer_tokens = step.buffer_tokens;
    hybrid_load(c, all);
    st.push_back(std::move(x));
  }
  const double t_exec = now_s();
  // Stage s's worker: its load and compute once stage s - 1's worker has launched its forward.
  const auto go = [&](int s) {
    StageLoad& x = *st[static_cast<std::size_t>(s)];
    if (s > 0) b.run->wait_launched(s - 1);
    x.t0 = now_s();
    x.load_end = x.t0 + m_env.load_path.run(*x.ctx, all, requests, x.run->time);
    x.end = now_s();
    x.finished = true;
    x.ended.notify(sc_core::SC_ZERO_TIME);
  };
  for (int s = 1; s < pp; ++s) spawn_pooled([&go, s] { go(s); });
  go(0);
  for (const auto& x : st)
    if (!x->finished) sc_core::wait(x->ended);
  // The step's breakdown: stage 0's own, then each later stage's time beyond the stages before
  // it: its load still running (exposed, split as its load's categories), its wait for a busy
  // stage (queue), the rest compute. A stage's wait for the activations overlaps the earlier
  // stages' time and is not counted again.
  TimeBreakdown& T = step.time;
  double prev_end = t_exec, load_end = t_exec;
  for (int s = 0; s < pp; ++s) {
    StageLoad& x = *st[static_cast<std::size_t>(s)];
    TimeBreakdown c = x.ctx->time;
    const double take = x.run->take_wait_s;
    c.compute_s -= take + x.run->arrival_wait_s;
    if (s == 0) {
      c.queue_s += take;
      T += c;
    } else {
      const double d = std::max(0.0, x.end - prev_end);
      const double exposed = std::clamp(x.load_end - prev_end, 0.0, d);
      T.add_exposed_load(exposed, c.load_software_s, c.load_link_s, c.load_wait_s);
      const double q = std::min(take, d - exposed);
      T.queue_s += q;
      T.compute_s += d - exposed - q;
    }
    prev_end = std::max(prev_end, x.end);
    load_end = std::max(load_end, x.load_end);
    // Per-GPU figures: each stage's are its GPUs', a 1/pp share of the group's.
    add_group_stats(stats, x.stats, w);
    for (std::size_t i = 0; i < step.bounds.s.size(); ++i)
      step.bounds.s[i] += x.ctx->bounds.s[i] * w;
  }
  return load_end - t_exec;
}

void StepGroup::store_phase(Context& ctx, const std::vector<std::vector<RequestState*>>& done,
                            const std::vector<std::vector<RequestState*>>& decoded) {
  for (Rank* r : ranks) r->store->reap();
  std::vector<CopyGroup*> started;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (CopyGroup* c = ranks[r]->store->store(done[r], decoded[r])) started.push_back(c);
  if (started.empty() || m_env.spec.serving.effective_store() == StoreMode::Async) return;
  // LMCache's store synchronises the stream before the step ends.
  for (CopyGroup* c : started) ctx.wait_copies(*c);
  for (Rank* r : ranks) r->store->reap();
}

void StepGroup::check_step(double start_s) {
  // Steps in flight at once (pipeline stages) overlap; one at a time, each starts after the last.
  const bool serial = m_model->concurrent_batches() == 1;
  if ((serial && start_s < m_last_step_end_s) || now_s() < start_s)
    throw std::logic_error("invariant violated: step " + std::to_string(stats.steps) +
                           " starts before the previous one ended");
  m_last_step_end_s = now_s();
  // KV in HBM: the blocks in use, with the weights and the reserve, fit the GPU's HBM.
  const ServingSpec& sv = m_env.spec.serving;
  const ModelSpec& m = m_env.spec.model;
  const ReplicaLayout& L = m_env.layout;
  const double weights = L.p.beyond_tp()
                             ? layout_weight_bytes_per_gpu(
                                   m, L.p, bytes_per_element(weight_dtype_for(sv.compute_dtype)))
                             : weight_bytes(m, weight_dtype_for(sv.compute_dtype)) / L.tp;
  // The fullest stage's GPU holds the most KV per token (all of it without stages).
  const double bkv = L.p.beyond_tp() ? L.cost.kv_bytes_rank : m_env.kv.unit_per_gpu;
  for (const Rank* r : ranks) {
    if (r->kv->used_blocks() > r->kv->total_blocks())
      throw std::logic_error("invariant violated: KV blocks in use exceed the pool");
    const double kv = static_cast<double>(r->kv->used_blocks()) * sv.block_tokens * bkv;
    if (weights + sv.activation_reserve_bytes + kv > m_env.spec.system.gpu.hbm_capacity_bytes)
      throw std::logic_error("invariant violated: KV in HBM (" + format_quantity(kv, dim::bytes) +
                             ") exceeds what the GPU's HBM leaves");
  }
}

// ---- async loads (serving.stack.load: async) ----

bool StepGroup::loads_async(const ServingSpec& sv, const RequestState& st) {
  // The engine refused the settings an async load cannot take part in (KvPull::check_async).
  return sv.stack.load == StackLoad::Async && st.seq->cached_tokens > 0;
}

void StepGroup::load_async(RequestState& st, const Rank& rank) {
  const ServingSpec& sv = m_env.spec.serving;
  const std::size_t n = ranks.size();
  std::size_t ri = 0;
  while (ri < n && ranks[ri] != &rank) ++ri;
  if (ri == n) throw std::logic_error("an async load on a rank outside its step group");
  // As a step's loads (StepGroup::execute) for this one request of rank ri: its lower-level hits'
  // prefetches and levels, its buffer hits, its chunks over the host links. Only rank ri's GPUs
  // copy (a lockstep group's other ranks hold none of its KV); under PP every stage's GPUs load
  // their layers' share at once (GpuUnit::kv_share): the stages' workers start together.
  KvStore& store = *ranks[ri]->store;
  Context ctx(*this, stats.steps);
  ctx.async_rank = rank.index;
  const std::vector<RequestState*> one{&st};
  const double t0 = now_s();
  store.begin_load(one, ctx.time);
  const double waited = now_s() - t0;
  const LoadSplit ls = split_loads({st.seq.get()}, store.chunk_tokens(), sv.block_tokens,
                                   store.buffer(), m_env.kv.hybrid ? &*m_env.kv.hybrid : nullptr);
  st.link_tokens = ls.seq_link_tokens.at(0);
  if (!ls.seq_link_state.empty()) st.link_state_tokens = ls.seq_link_state.at(0);
  if (store.buffer()) st.buffer_tokens = ls.seq_buffer_tokens.at(0);
  ctx.link_tokens.assign(n, 0);
  ctx.buffer_tokens.assign(n, 0);
  ctx.link_tokens[ri] = ls.link_tokens;
  ctx.buffer_tokens[ri] = ls.buffer_tokens;
  hybrid_load(ctx, ls);
  st.load_s = waited + m_env.load_path.run(ctx, ls, 1, StepTime{}) - ctx.stream_wait_s;
  m_env.pull.end_load(static_cast<std::size_t>(rank.index), ctx.copies_begun);
  store.end_load(one);
  if (ctx.bounds.total() > 0) st.load_bounds = ctx.bounds;
}

// ---- copies ----

void StepGroup::Context::start_copies(CopyGroup& c, double bytes_per_gpu, std::int64_t units,
                                      CopyPath path) {
  // Every rank's share: its link tokens of the step (the strategy's bytes add up the group's).
  const std::vector<Rank*>& ranks = m_g.ranks;
  const std::size_t n = ranks.size();
  if (async_rank >= 0 && !copies_begun) {
    stream_wait_s += m_g.m_env.pull.begin_copies(static_cast<std::size_t>(async_rank));
    copies_begun = true;
  }
  if (stage >= 0 && run) {  // its worker's loads are in flight until waited for
    m_loading.insert(&c);
    run->set_loading(true);
  }
  double total = 0, most = 0;
  for (double t : link_tokens) {
    total += t;
    most = std::max(most, t);
  }
  c.rs.clear();
  std::vector<std::int64_t> u;
  for (std::size_t r = 0; r < n; ++r) {
    double bytes = bytes_per_gpu;
    std::int64_t copies = units;
    if (n > 1 || m_g.m_env.layout.pp > 1) {
      if (!(link_tokens[r] > 0)) continue;
      // Bytes: the rank's share of the group's; copies: the strategy counted the busiest rank's.
      bytes = bytes_per_gpu / m_g.store_weight() * (link_tokens[r] / total);
      copies = std::max<std::int64_t>(
          1, std::llround(static_cast<double>(units) * (link_tokens[r] / most)));
    }
    if (kv_scale != 1) bytes *= kv_scale;  // hybrid: the stage's kinds of this load
    if (!ranks[r]->store->plan_load(c.rs, u, bytes, copies, path)) {
      ranks[r]->gpus->plan_all(c.rs, bytes, Direction::H2D, path);
      u.resize(c.rs.size(), copies);
    }
  }
  if (stage >= 0) {  // a pipeline stage's load: its GPUs' members only (their layers' KV)
    std::size_t k = 0;
    for (std::size_t i = 0; i < c.rs.size(); ++i) {
      int s = -1;
      for (Rank* r : ranks)
        for (std::size_t j = 0; j < r->gpus->size(); ++j)
          if (r->gpus->at(j).fabric == c.rs[i].gpu) s = static_cast<int>(j) / r->gpus->tp();
      if (s != stage) continue;
      c.rs[k] = c.rs[i];
      u[k] = u[i];
      ++k;
    }
    c.rs.resize(k);
    u.resize(k);
    if (c.rs.empty()) {  // nothing on this stage's GPUs: the group ends now
      c.g.finished = true;
      c.g.end_s = now_s();
      return;
    }
  }
  // c.rs is complete (the back end keeps pointers into it): start every member, into c.shards
  // when an all-gather follows (serving.replicated_kv: shard_allgather).
  const bool gather = m_g.m_env.kv.replication > 1 && !c.rs.empty();
  c.shards_end_s = -1;
  for (std::size_t i = 0; i < c.rs.size(); ++i)
    for (Rank* r : ranks)
      if (r->gpus->owns(c.rs[i].gpu)) {
        r->gpus->issue_one(c.rs[i], u[i], gather ? c.shards : c.g, path, 0);
        break;
      }
  if (gather) m_g.start_gather(c, gather_share);
}

void StepGroup::hybrid_load(Context& c, const LoadSplit& all) const {
  const ServedKv& kv = m_env.kv;
  if (!kv.hybrid) return;
  std::array<double, 4> parts = all.link_parts;
  if (c.stage >= 0 && !kv.stages.empty()) {
    // Its GPUs' kinds of this load: a stage of more sliding layers than its share of the full
    // ones loads more of a short prefix (its windows) than its share of a stored chunk.
    const std::size_t s = static_cast<std::size_t>(c.stage);
    const double share = hybrid_stage_share(*kv.hybrid, kv.stages.at(s), parts);
    if (kv.stage_share.at(s) > 0) c.kv_scale = share / kv.stage_share.at(s);
    const double w[4] = {kv.hybrid->full_Bpt, kv.hybrid->sliding_Bpt, kv.hybrid->chunked_Bpt,
                         kv.hybrid->state_B};
    const double h[4] = {kv.stages[s].full_Bpt, kv.stages[s].sliding_Bpt, kv.stages[s].chunked_Bpt,
                         kv.stages[s].state_B};
    for (std::size_t i = 0; i < 4; ++i) parts[i] = w[i] > 0 ? parts[i] * h[i] / w[i] : 0;
  }
  const int R = kv.replication;
  const double total = parts[0] + parts[1] + parts[2] + parts[3];
  if (R <= 1 || !(total > 0)) return;
  // Sharded by bytes: the attention KV (full, sliding, chunked) is copied on R ranks and each
  // loads 1/R of it; the linear state is split tp ways (one copy) and each loads its own whole.
  const double state = parts[3] / total;
  const double host = (1 - state) / R + state;  // a GPU's host bytes per byte it holds
  c.kv_bytes_per_token_link = c.kv_bytes_per_token_gpu * host;
  c.gather_share = (1 - state) / R / host;
}

void StepGroup::start_gather(CopyGroup& c, double gather_share) {
  // Each GPU's shard: its host members' bytes (every level of the hierarchy).
  std::map<int, double> shard;
  for (const TransferRequest& q : c.rs) shard[q.gpu] += q.bytes;
  const int R = m_env.kv.replication;
  c.gather.clear();
  for (const Rank* rank : ranks) {
    const RankGpus& gs = *rank->gpus;
    const std::size_t tp = static_cast<std::size_t>(gs.tp());
    const std::size_t group = static_cast<std::size_t>(R);
    // Stage-major: stage s, TP position j at s x tp + j; a group is R consecutive positions.
    for (std::size_t k = 0; k < gs.size(); ++k) {
      const std::size_t j = k % tp;
      const GpuUnit& from = gs.at(k);
      const GpuUnit& to = gs.at(k - j + (j / group) * group + (j % group + 1) % group);
      const auto it = shard.find(from.fabric);
      if (it == shard.end() || !(it->second > 0)) continue;
      // The ring: it forwards every other GPU's shard once (hybrid: the shard's attention KV).
      c.gather.push_back(peer_transfer(from, to, (R - 1) * it->second * gather_share));
    }
  }
  // g ends with the gather: one member of its own until the gather's transfers have started.
  c.g.finished = false;
  c.g.left = 0;
  c.g.add();
  spawn_pooled([this, &c] { run_gather(c); });
}

void StepGroup::run_gather(CopyGroup& c) {
  if (!c.shards.finished) sc_core::wait(c.shards.done);
  c.shards_end_s = now_s();
  const int R = m_env.kv.replication;
  const GpuSpec& gpu = m_env.spec.system.gpu;
  const double step_latency_s = gpu.nvlink_latency_s.value_or(0);
  double bytes = 0, most = 0;
  for (const TransferRequest& q : c.gather) {
    bytes += q.bytes;
    most = std::max(most, q.bytes);
  }
  double gpus = 0;
  for (const Rank* r : ranks) gpus += static_cast<double>(r->gpus->size());
  stats.allgather_bytes_gpu += bytes / gpus;
  if (m_peer_fabric) {
    // The fabric charges one step's latency per transfer; the ring's other R - 2 steps wait
    // first (ring_allgather_s: (R - 1) latencies + (R - 1)/R of the bytes at the link rate).
    for (TransferRequest& q : c.gather) m_env.link.start(q, c.g, (R - 2) * step_latency_s);
  } else {
    // A back end without GPU-to-GPU transfers (packet: host links only): the ring's time at the
    // NVLink peak, as the layout step waits its per-port times there.
    wait_s(ring_allgather_s(most * R / (R - 1), R, gpu.nvlink_Bps.value_or(0), step_latency_s));
  }
  c.g.member_done(now_s());  // its own member; the transfers end it when they do
}

}  // namespace kappasim
