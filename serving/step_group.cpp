#include "serving/step_group.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "serving/sim_clock.hpp"
#include "serving/stack_profile.hpp"
#include "systems/topology.hpp"

namespace kappasim {

using sim_clock::now_s;
using sim_clock::wait_s;

ServingEngine::Group::Group(ServingEngine& e, std::vector<Rank*> rs,
                            std::unique_ptr<StepModel> model, double share)
    : ranks(std::move(rs)), gpu_share(share), m_e(e), m_model(std::move(model)) {
  LoadContext::spec = &e.m_spec;
  // The per-GPU mean of the group's KV bytes per token: a rank's GPU holds B_kv_gpu over pp
  // stages on average, and the strategy's bytes add up the group's ranks.
  LoadContext::kv_bytes_per_token_gpu = e.m_kv.unit_per_gpu * store_weight();
  // Over the host link: 1/r of it when replicated KV is sharded (serving.replicated_kv).
  LoadContext::kv_bytes_per_token_link = LoadContext::kv_bytes_per_token_gpu / e.m_kv.replication;
  // buffer_Bps: the ranks' KV stores' (set by the engine once they exist).
  LoadContext::stats = &stats;
  LoadContext::step_time = &m_step_time;
  LoadContext::step_bounds = &m_step_bounds;
  // Bound reports need the flow back end's resources; the packet back end reports its whole
  // time as the link's.
  if (const Topology* topo = e.m_link->topology())
    for (const auto& res : topo->resources())
      m_resource_bound.push_back(load_bound_of_resource(res.name));
  TransferRequest peer;
  peer.endpoint = Endpoint::PeerGpu;
  m_peer_fabric = e.m_kv.replication > 1 && e.m_link->carries(peer);
}

double ServingEngine::Group::store_weight() const {
  const double n = static_cast<double>(ranks.size()) * m_e.m_layout.pp;
  return n == 1 ? 1.0 : 1.0 / n;
}

void ServingEngine::Group::steps() {
  const auto held = [this] {
    return std::any_of(ranks.begin(), ranks.end(),
                       [](const Rank* r) { return r->store->holding(); });
  };
  for (;;) {
    // Requests held out of the queue by their prefetch are still to come.
    if (std::all_of(ranks.begin(), ranks.end(), [](const Rank* r) { return r->sched->idle(); })) {
      if (m_e.m_arrivals->done() && !held()) return;
      sc_core::wait(m_e.m_work);
      continue;
    }
    std::vector<StepPlan> plans;
    bool any = false;
    for (Rank* r : ranks) {
      plans.push_back(r->sched->plan(now_s(), *r->kv));
      any = any || !plans.back().items.empty();
      // P/D: requests admitted to pull their prompt's KV start now, outside the step (vLLM's
      // workers start the reads as the step that admitted them begins).
      for (Sequence* s : r->sched->take_pulls())
        sc_core::sc_spawn([this, r, s] {
          m_e.m_pull->run(*r, s, [this, s] { load_async(m_e.m_ledger.at(s->req.id)); });
        });
    }
    if (!any) {
      // plan() may have rejected prompts larger than the whole pool and admitted nothing:
      // count them now (no step will call take_finished() if they were the last arrivals).
      bool running = false;
      for (Rank* r : ranks) {
        for (Sequence* s : r->sched->take_finished()) m_e.finish(s);
        // Pulls in flight, or blocks a P/D prefill holds for its decode instance, come back.
        running = running || r->sched->running() > 0 || r->sched->pulling() > 0 ||
                  r->kv->used_blocks() > 0;
      }
      // With nothing running and no block held every waiting prompt fits (larger ones were
      // rejected above), so an empty plan with the source done means the system is empty;
      // check_end() verifies it.
      if (m_e.m_arrivals->done() && !running && !held()) return;
      sc_core::wait(m_e.m_work);
      continue;
    }
    run_step(plans);
  }
}

void ServingEngine::Group::run_step(const std::vector<StepPlan>& plans) {
  const ServingSpec& sv = m_e.m_spec.serving;
  const std::size_t n = ranks.size();
  ++stats.steps;
  const double start = now_s();
  m_step_time = TimeBreakdown{};
  m_step_bounds = LoadBoundTimes{};
  // Scheduler critical path (serial before the step; serving/step_plan): every rank's scheduler
  // runs in its own process, so the step waits for the slowest.
  double overhead = 0, software = 0;
  for (std::size_t r = 0; r < n; ++r) {
    const Scheduler& sched = *ranks[r]->sched;
    const SchedulerCpu c = scheduler_cpu(sv, plans[r], sched.waiting_front(), sched.running(),
                                         m_e.m_spec.model.num_layers);
    overhead = std::max(overhead, c.overhead_s);
    software = std::max(software, c.lookup_s + c.meta_s);
    for (const auto& [q, t] : c.tier_request) m_e.m_ledger.at(q->req.id).tier_request_s += t;
  }
  stats.stack.scheduler_s += software;
  wait_s(overhead);  // vLLM's per-step CPU scheduling work
  m_step_time.step_overhead_s += now_s() - start;
  const double t_sched = now_s();
  wait_s(software);  // the stack's scheduler-side software
  m_step_time.sched_software_s += now_s() - t_sched;
  // What the step computes and loads (serving/step_plan), per rank.
  std::vector<StepWork> work;
  std::vector<std::vector<SeqSlice>> batches;
  std::vector<std::vector<RequestState*>> first(n), done(n);
  std::size_t loading = 0;
  double kv_used = 0, max_tokens = 0;
  for (std::size_t r = 0; r < n; ++r) {
    work.push_back(plan_step_work(plans[r]));
    batches.push_back(std::move(work.back().slices));  // work's own slices are not read again
    for (const StepItem& it : plans[r].items)
      if (it.seq->first_token_s < 0) ++m_e.m_ledger.at(it.seq->req.id).steps;  // before its TTFT
    for (Sequence* s : work.back().load) first[r].push_back(&m_e.m_ledger.at(s->req.id));
    for (Sequence* s : work.back().done) done[r].push_back(&m_e.m_ledger.at(s->req.id));
    loading += first[r].size();
    kv_used += ranks[r]->kv->utilization();  // after admission, before finishers leave
    LayoutStats& ls = m_e.m_layout_stats;
    ls.rank_tokens[static_cast<std::size_t>(ranks[r]->index)] += plans[r].tokens;
    max_tokens = std::max(max_tokens, static_cast<double>(plans[r].tokens));
  }
  kv_used /= static_cast<double>(n);
  m_e.m_layout_stats.rank_steps += static_cast<double>(n);
  m_e.m_layout_stats.group_steps += 1;
  m_e.m_layout_stats.max_rank_tokens += max_tokens;
  m_e.m_layout_stats.lockstep_max_tokens += max_tokens * static_cast<double>(n);
  const StepTime step_time = m_model->time(batches);
  const double compute_s = step_time.total.compute_time_s;
  double load_s = 0;
  if (loading > 0) {  // the load path's strategy: the loads and the step's compute
    LoadSplit all;
    std::size_t requests = loading;  // one rank: its own
    if (n > 1) requests = 0;
    m_link_tokens.assign(n, 0);
    m_buffer_tokens.assign(n, 0);
    for (std::size_t r = 0; r < n; ++r) {
      if (first[r].empty()) continue;
      KvStore& store = *ranks[r]->store;
      store.begin_load(first[r], m_step_time);
      const LoadSplit ls =
          split_loads(work[r].load, store.chunk_tokens(), sv.block_tokens, store.buffer(),
                      m_e.m_kv.hybrid ? &*m_e.m_kv.hybrid : nullptr);
      for (std::size_t i = 0; i < first[r].size(); ++i) {
        first[r][i]->link_tokens = ls.seq_link_tokens[i];
        if (store.buffer()) first[r][i]->buffer_tokens = ls.seq_buffer_tokens[i];
      }
      m_link_tokens[r] = ls.link_tokens;
      m_buffer_tokens[r] = ls.buffer_tokens;
      if (n == 1) {
        all = ls;
        break;
      }
      // Bytes add up; every rank's process issues its own chunks at once (the slowest's count).
      all.link_tokens += ls.link_tokens;
      all.buffer_tokens += ls.buffer_tokens;
      all.chunks = std::max(all.chunks, ls.chunks);
      all.link_chunks = std::max(all.link_chunks, ls.link_chunks);
      all.link_blocks16 = std::max(all.link_blocks16, ls.link_blocks16);
      requests = std::max(requests, first[r].size());
    }
    load_s = m_e.m_load_path->run(*this, all, static_cast<std::int64_t>(requests), step_time);
    for (std::size_t r = 0; r < n; ++r)
      if (!first[r].empty()) ranks[r]->store->end_load(first[r]);  // promotions
  } else {
    compute(step_time);
  }
  for (const auto& f : first)
    for (RequestState* st : f) st->load_s = load_s;
  // A request's compute, steps and time breakdown are its TTFT's: the steps before its first
  // output token (decode steps after it are in its e2e and TPOT).
  for (const StepPlan& p : plans)
    for (const StepItem& it : p.items)
      if (it.seq->first_token_s < 0) m_e.m_ledger.at(it.seq->req.id).compute_s += compute_s;
  stats.compute_busy_s += compute_s;
  stats.flops += step_time.total.flops;
  stats.hbm_bytes += step_time.total.hbm_bytes;
  const double t_store = now_s();
  store_phase(done);
  m_step_time.store_s += now_s() - t_store;
  // The step's categories sum to its duration (--check); every sequence in it waited all of it.
  if (m_e.m_spec.check &&
      std::fabs(m_step_time.sum() - (now_s() - start)) > 1e-12 + 1e-12 * now_s())
    throw std::logic_error("invariant violated: step " + std::to_string(stats.steps) +
                           "'s time breakdown does not sum to its duration");
  stats.run_time += m_step_time;
  stats.run_bounds += m_step_bounds;
  for (const StepPlan& p : plans)
    for (const StepItem& it : p.items) {
      Sequence& q = *it.seq;
      if (q.first_token_s < 0) m_e.m_ledger.at(q.req.id).time += m_step_time;
      // Inter-token latency: every output token after the first, from the one before it (a
      // preempted sequence's next token comes after its prefill again).
      if ((it.decode || (it.last && q.generated > 0)) && m_e.m_sinks.summary)
        m_e.m_sinks.summary->add_itl(now_s() - q.last_token_s);
    }
  if (m_step_bounds.total() > 0)
    for (const auto& f : first)
      for (RequestState* st : f) st->load_bounds = m_step_bounds;
  for (std::size_t r = 0; r < n; ++r)
    if (n == 1 || !plans[r].items.empty())
      ranks[r]->sched->complete(plans[r], now_s(), *ranks[r]->kv);
  for (Rank* r : ranks)
    for (Sequence* s : r->sched->take_finished()) m_e.finish(s);
  if (m_e.m_spec.check) check_step(start);
  if (m_e.m_sinks.summary) {
    StepRecord rec;
    rec.start_s = start;
    rec.end_s = now_s();
    for (const StepPlan& p : plans) {
      rec.tokens += p.tokens;
      rec.seqs += static_cast<int>(p.items.size());
    }
    rec.budget =
        static_cast<std::int64_t>(sv.max_num_batched_tokens) * static_cast<std::int64_t>(n);
    rec.vram_used_fraction = kv_used;
    rec.load_s = load_s;
    rec.compute_s = compute_s;
    m_e.m_sinks.summary->add_step(rec);
  }
  if (m_e.m_trace->on()) {
    std::size_t waiting = 0;
    std::int64_t tokens = 0;
    for (std::size_t r = 0; r < n; ++r) {
      waiting += ranks[r]->sched->waiting();
      tokens += plans[r].tokens;
    }
    m_e.m_trace->step(start, kv_used, tokens, waiting);
  }
}

double ServingEngine::Group::store_phase(const std::vector<std::vector<RequestState*>>& done) {
  for (Rank* r : ranks) r->store->reap();
  const double t0 = now_s();
  std::vector<CopyGroup*> started;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (CopyGroup* c = ranks[r]->store->store(done[r])) started.push_back(c);
  if (started.empty() || m_e.m_spec.serving.effective_store() == StoreMode::Async) return 0;
  // LMCache's store synchronises the stream before the step ends.
  for (CopyGroup* c : started) wait_copies(*c);
  const double t = now_s() - t0;
  for (Rank* r : ranks) r->store->reap();
  return t;
}

void ServingEngine::Group::check_step(double start_s) {
  if (start_s < m_last_step_end_s || now_s() < start_s)
    throw std::logic_error("invariant violated: step " + std::to_string(stats.steps) +
                           " starts before the previous one ended");
  m_last_step_end_s = now_s();
  // KV in HBM: the blocks in use, with the weights and the reserve, fit the GPU's HBM.
  const ServingSpec& sv = m_e.m_spec.serving;
  const ModelSpec& m = m_e.m_spec.model;
  const double weights =
      m_e.m_layout.p.beyond_tp()
          ? layout_weight_bytes_per_gpu(m, m_e.m_layout.p,
                                        bytes_per_element(weight_dtype_for(sv.compute_dtype)))
          : weight_bytes(m, weight_dtype_for(sv.compute_dtype)) / m_e.m_layout.tp;
  // The fullest stage's GPU holds the most KV per token (all of it without stages).
  const double bkv =
      m_e.m_layout.p.beyond_tp() ? m_e.m_layout.cost.kv_bytes_rank : m_e.m_kv.unit_per_gpu;
  for (const Rank* r : ranks) {
    if (r->kv->used_blocks() > r->kv->total_blocks())
      throw std::logic_error("invariant violated: KV blocks in use exceed the pool");
    const double kv = static_cast<double>(r->kv->used_blocks()) * sv.block_tokens * bkv;
    if (weights + sv.activation_reserve_bytes + kv > m_e.m_spec.system.gpu.hbm_capacity_bytes)
      throw std::logic_error("invariant violated: KV in HBM (" + format_quantity(kv, dim::bytes) +
                             ") exceeds what the GPU's HBM leaves");
  }
}

// ---- async loads (serving.stack.load: async) ----

namespace {
// The load path strategy's context for one request's load outside the steps: the group's copies
// and accounting, its own time breakdown and bounds (no step is running it), no compute.
class OutsideSteps final : public LoadContext {
 public:
  explicit OutsideSteps(LoadContext& g) : m_g(g) {
    spec = g.spec;
    kv_bytes_per_token_gpu = g.kv_bytes_per_token_gpu;
    kv_bytes_per_token_link = g.kv_bytes_per_token_link;
    buffer_Bps = g.buffer_Bps;
    stats = g.stats;
    step_time = &time;
    step_bounds = &bounds;
  }
  double now() const override { return m_g.now(); }
  void wait(double s) override { m_g.wait(s); }
  void start_copies(CopyGroup& c, double b, std::int64_t u, CopyPath p) override {
    m_g.start_copies(c, b, u, p);
  }
  void wait_copies(CopyGroup& c) override { m_g.wait_copies(c); }
  CopySplit split_copies(const CopyGroup& c, double t) const override {
    return m_g.split_copies(c, t);
  }
  void compute(const StepTime&) override {}  // the request computes in a later step
  void start_compute(CopyGroup&, double, double) override {
    throw std::logic_error("an async load computes nothing");
  }
  void trace_copies(const CopyGroup& c, const std::string& w) override { m_g.trace_copies(c, w); }
  void trace_load(const std::string& w, double t0, double t1) override {
    m_g.trace_load(w + " (async)", t0, t1);
  }
  void trace_link(const std::string& w, double t0, double t1) override {
    m_g.trace_link(w, t0, t1);
  }
  void trace_compute(double, double) override {}
  TimeBreakdown time;
  LoadBoundTimes bounds;

 private:
  LoadContext& m_g;
};
}  // namespace

bool ServingEngine::Group::loads_async(const ServingSpec& sv, const RequestState& st) {
  // The engine refused every other setting with an async stack (KvPull::check_async).
  return sv.stack.load == StackLoad::Async && st.seq->cached_tokens > 0;
}

void ServingEngine::Group::load_async(RequestState& st) {
  const ServingSpec& sv = m_e.m_spec.serving;
  KvStore& store = *ranks.front()->store;
  const LoadSplit ls = split_loads({st.seq.get()}, store.chunk_tokens(), sv.block_tokens, nullptr,
                                   m_e.m_kv.hybrid ? &*m_e.m_kv.hybrid : nullptr);
  st.link_tokens = ls.seq_link_tokens.at(0);
  OutsideSteps ctx(*this);
  st.load_s = m_e.m_load_path->run(ctx, ls, 1, StepTime{});
  if (ctx.bounds.total() > 0) st.load_bounds = ctx.bounds;
}

// ---- LoadContext ----
double ServingEngine::Group::now() const { return now_s(); }
void ServingEngine::Group::wait(double s) { wait_s(s); }

void ServingEngine::Group::start_copies(CopyGroup& c, double bytes_per_gpu, std::int64_t units,
                                        CopyPath path) {
  // Every rank's share: its link tokens of the step (the strategy's bytes add up the group's).
  const std::size_t n = ranks.size();
  double total = 0, most = 0;
  for (double t : m_link_tokens) {
    total += t;
    most = std::max(most, t);
  }
  c.rs.clear();
  std::vector<std::int64_t> u;
  for (std::size_t r = 0; r < n; ++r) {
    double bytes = bytes_per_gpu;
    std::int64_t copies = units;
    if (n > 1 || m_e.m_layout.pp > 1) {
      if (!(m_link_tokens[r] > 0)) continue;
      // Bytes: the rank's share of the group's; copies: the strategy counted the busiest rank's.
      bytes = bytes_per_gpu / store_weight() * (m_link_tokens[r] / total);
      copies = std::max<std::int64_t>(
          1, std::llround(static_cast<double>(units) * (m_link_tokens[r] / most)));
    }
    if (!ranks[r]->store->plan_load(c.rs, u, bytes, copies, path)) {
      ranks[r]->gpus->plan_all(c.rs, bytes, Direction::H2D, path);
      u.resize(c.rs.size(), copies);
    }
  }
  // c.rs is complete (the back end keeps pointers into it): start every member, into c.shards
  // when an all-gather follows (serving.replicated_kv: shard_allgather).
  const bool gather = m_e.m_kv.replication > 1 && !c.rs.empty();
  c.shards_end_s = -1;
  for (std::size_t i = 0; i < c.rs.size(); ++i)
    for (Rank* r : ranks)
      if (r->gpus->owns(c.rs[i].gpu)) {
        r->gpus->issue_one(c.rs[i], u[i], gather ? c.shards : c.g, path, 0);
        break;
      }
  if (gather) start_gather(c);
}

void ServingEngine::Group::start_gather(CopyGroup& c) {
  // Each GPU's shard: its host members' bytes (every level of the hierarchy).
  std::map<int, double> shard;
  for (const TransferRequest& q : c.rs) shard[q.gpu] += q.bytes;
  const int R = m_e.m_kv.replication;
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
      TransferRequest q;
      q.gpu = from.fabric;
      q.dir = Direction::D2H;  // gpu -> endpoint
      q.path = CopyPath::Dma;
      q.endpoint = Endpoint::PeerGpu;
      q.endpoint_index = to.fabric;
      q.bytes = (R - 1) * it->second;  // the ring: it forwards every other GPU's shard once
      c.gather.push_back(q);
    }
  }
  // g ends with the gather: one member of its own until the gather's transfers have started.
  c.g.finished = false;
  c.g.left = 0;
  c.g.add();
  sc_core::sc_spawn([this, &c] { run_gather(c); });
}

void ServingEngine::Group::run_gather(CopyGroup& c) {
  if (!c.shards.finished) sc_core::wait(c.shards.done);
  c.shards_end_s = now_s();
  const int R = m_e.m_kv.replication;
  const GpuSpec& gpu = m_e.m_spec.system.gpu;
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
    for (TransferRequest& q : c.gather) m_e.m_link->start(q, c.g, (R - 2) * step_latency_s);
  } else {
    // A back end without GPU-to-GPU transfers (packet: host links only): the ring's time at the
    // NVLink peak, as the layout step waits its per-port times there.
    wait_s(ring_allgather_s(most * R / (R - 1), R, gpu.nvlink_Bps.value_or(0), step_latency_s));
  }
  c.g.member_done(now_s());  // its own member; the transfers end it when they do
}

void ServingEngine::Group::wait_copies(CopyGroup& c) {
  if (!c.g.finished) sc_core::wait(c.g.done);
  if (c.shards_end_s >= 0) stats.allgather_s += c.g.end_s - c.shards_end_s;  // the all-gather
  for (Rank* r : ranks) r->store->account_load(c);  // per-level load bytes and time
}

CopySplit ServingEngine::Group::split_copies(const CopyGroup& c, double t_start) const {
  if (c.shards_end_s < 0) return split_copy_times(c.rs, t_start, c.g.end_s, m_resource_bound);
  // The shards' split up to their end, then the NVLink all-gather's time: the link's (a link
  // moving the load's bytes; kv_allgather_s says how much of it the gather took).
  CopySplit s = split_copy_times(c.rs, t_start, c.shards_end_s, m_resource_bound);
  const double gather = std::max(0.0, c.g.end_s - c.shards_end_s);
  s.link += gather;
  s.bounds[LoadBound::Link] += gather;
  return s;
}

void ServingEngine::Group::compute(const StepTime& st) {
  const double t_c = now_s();
  CopyGroup c;
  start_compute(c, st.total.compute_time_s, st.total.hbm_bytes);
  wait_copies(c);
  m_step_time.compute_s += now_s() - t_c;
  trace_compute(t_c, now_s());
}

void ServingEngine::Group::start_compute(CopyGroup& c, double compute_s, double hbm_bytes) {
  m_model->start(c, compute_s, hbm_bytes);
}

double ServingEngine::Group::buffer_copy_s(const LoadSplit& ls) const {
  // Every rank's GPUs copy their own buffer hits at once: the slowest rank's.
  if (ranks.size() == 1) return LoadContext::buffer_copy_s(ls);
  double t = 0;
  for (double b : m_buffer_tokens)
    t = std::max(t, b > 0 ? b * m_e.m_kv.unit_per_gpu / buffer_Bps : 0);
  return t;
}

void ServingEngine::Group::trace_copies(const CopyGroup& c, const std::string& what) {
  m_e.m_trace->copies(c, what);
}

void ServingEngine::Group::trace_load(const std::string& what, double t0, double t1) {
  m_e.m_trace->load(what, t0, t1);
}

void ServingEngine::Group::trace_link(const std::string& what, double t0, double t1) {
  m_e.m_trace->link(ranks, what, t0, t1);
}

void ServingEngine::Group::trace_compute(double start_s, double end_s) {
  if (m_e.m_trace->on())
    m_e.m_trace->compute(ranks, "step " + std::to_string(stats.steps), start_s, end_s);
}

}  // namespace kappasim
