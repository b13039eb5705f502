#include "serving/step_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <new>

#include "core/pooled_spawn.hpp"
#include "models/gpu/step_time_memo.hpp"
#include "serving/sim_clock.hpp"

namespace kappasim {

using sim_clock::now_s;
using sim_clock::wait_s;

namespace {

// A phase of `t` seconds at every SM moving `bytes` through each GPU's HBM, on `gpus`, beside
// copy kernels that may hold some of their SMs (pipeline stages overlap one micro-batch's load
// with another's compute; a layer-wise copy kernel overlaps the previous layer's compute).
// While any of the GPUs has SMs held the phase advances as its slowest GPU does at its free
// fraction f (`held_s(f)`: the whole phase's time at fraction f), re-timed whenever a copy kernel
// takes or frees SMs; the slow-down lasts as long as the copy kernel holds the SMs, not the
// whole phase (it was fixed at the phase's start: a 0.1 s pipeline stage was charged 4 s beside a
// copy kernel of 1 ms). Blocking: call from a process. Returns the share of the phase left to run
// at every SM (0 to 1); `fewer` is set when some of it ran on fewer SMs.
template <typename HeldTime>
double run_beside_copy_kernels(const std::vector<GpuCompute*>& gpus, double bytes, HeldTime held_s,
                               bool& fewer) {
  double left = 1;
  for (;;) {
    double f = 1;
    for (const GpuCompute* g : gpus) f = std::min(f, g->sm_pool().compute_fraction());
    if (f >= 1) return left;
    fewer = true;
    const double whole = held_s(f);
    sc_core::sc_event_or_list changed;
    for (const GpuCompute* g : gpus) changed |= g->sms_changed();
    const double t0 = now_s();
    sc_core::wait(sc_core::sc_time(left * whole, sc_core::SC_SEC), changed);
    const double ran = now_s() - t0;
    const double share = sc_core::timed_out() || !(whole > 0) ? left : std::min(left, ran / whole);
    for (GpuCompute* g : gpus) g->account_held(ran, bytes * share);
    left -= share;
    if (sc_core::timed_out() || left <= 0) return 0;
  }
}

class TpStep final : public StepModel {
 public:
  TpStep(const RunSpec& spec, const RankGpus& rank, LayoutStats& stats)
      : m_spec(spec), m_rank(rank), m_stats(stats) {}

  std::unique_ptr<StepRun> time(const std::vector<std::vector<SeqSlice>>& batches) override {
    // The step's batch outlives its compute (StepGroup).
    const std::vector<SeqSlice>& batch = batches.at(0);
    auto run = std::make_unique<Run>(*this, batch);
    if (const StepTime* t = m_memo.find(batch)) {  // the same slices timed before: same answer
      run->time = *t;
    } else {
      run->time = run->at_fraction(1.0);
      m_memo.store(batch, run->time);
    }
    return run;
  }

 private:
  struct Run final : StepRun {
    Run(TpStep& m, const std::vector<SeqSlice>& slices) : model(m), slices(slices) {}
    // One Run per step: their memory is kept on a per-thread free list and reused (issue 24:
    // the allocator's per step). A block freed on another thread joins that thread's list.
    static void* operator new(std::size_t size) {
      FreeList& f = free_list();
      if (size == sizeof(Run) && f.head) {
        Block* b = f.head;
        f.head = b->next;
        return b;
      }
      return ::operator new(size);
    }
    static void operator delete(void* p, std::size_t size) {
      if (size != sizeof(Run)) return ::operator delete(p);
      FreeList& f = free_list();
      f.head = new (p) Block{f.head};
    }
    struct Block {
      Block* next;
    };
    struct FreeList {
      Block* head = nullptr;
      FreeList() = default;
      FreeList(const FreeList&) = delete;
      FreeList& operator=(const FreeList&) = delete;
      ~FreeList() {
        while (head) {
          Block* b = head;
          head = b->next;
          ::operator delete(b);
        }
      }
    };
    static FreeList& free_list() {
      thread_local FreeList f;
      return f;
    }
    void start(CopyGroup& c, double compute_s, double hbm_bytes) override {
      const RankGpus& rank = model.m_rank;
      c.rs.resize(rank.size());  // start_step makes each a new request but for its buffers
      bool held = false;
      for (std::size_t k = 0; k < rank.size(); ++k) {
        const SmPool& sms = rank.at(k).compute->sm_pool();
        held = held || sms.free() < sms.total();
      }
      if (!held) {
        if (model.m_gpus.empty())
          for (std::size_t k = 0; k < rank.size(); ++k)
            model.m_gpus.push_back(&*rank.at(k).compute);
        GpuCompute::start_steps(model.m_gpus.data(), model.m_gpus.size(), compute_s, hbm_bytes,
                                c.rs.data(), c.g);
        return;
      }
      // A copy kernel holds SMs (a layer-wise copy kernel beside the previous layer's compute):
      // while it does, the step (or this share of it) advances as the step's batch does at the
      // free SM fraction (kernel_timing), then at every SM (run_beside_copy_kernels). Counted;
      // docs/serving-engine.md.
      ++model.m_stats.steps_on_fewer_sms;
      c.g.add();
      spawn_pooled([this, &c, compute_s, hbm_bytes] {
        const RankGpus& rank = model.m_rank;
        std::vector<GpuCompute*> gpus;
        for (std::size_t k = 0; k < rank.size(); ++k) gpus.push_back(&*rank.at(k).compute);
        const double all = time.total.compute_time_s;
        bool fewer = false;
        const double left = run_beside_copy_kernels(
            gpus, hbm_bytes,
            [&](double f) {
              return all > 0 ? compute_s * at_fraction(f).total.compute_time_s / all : 0;
            },
            fewer);
        if (left > 0)
          GpuCompute::start_steps(gpus.data(), gpus.size(), compute_s * left, hbm_bytes * left,
                                  c.rs.data(), c.g);
        c.g.member_done(now_s());
      });
    }
    StepTime at_fraction(double sm_fraction) const {
      const ServingSpec& sv = model.m_spec.serving;
      return batch_step_time(model.m_spec.model, model.m_spec.system.gpu, model.m_rank.tp(), slices,
                             sv.compute_dtype, sm_fraction, sv.kv_dtype, sv.stack.launch,
                             &model.m_parts);
    }
    TpStep& model;
    const std::vector<SeqSlice>& slices;
  };
  const RunSpec& m_spec;
  const RankGpus& m_rank;
  LayoutStats& m_stats;
  StepTimeMemo m_memo;              // batch_step_time at all SMs, by the batch's slices (issue 24)
  BatchStepParts m_parts;           // its token-count parts, for the batches the memo misses
  std::vector<GpuCompute*> m_gpus;  // the rank's GPUs' compute, in rank order (first step)
};

class LayoutStep final : public StepModel {
 public:
  LayoutStep(const RunSpec& spec, const ReplicaLayout& L, std::vector<const RankGpus*> ranks,
             LinkModule& link, LayoutStats& stats)
      : m_spec(spec),
        m_L(L),
        m_ranks(std::move(ranks)),
        m_link(link),
        m_stats(stats),
        m_stage_busy(static_cast<std::size_t>(L.pp), false),
        m_stage_free(static_cast<std::size_t>(L.pp)) {
    // The all-to-all and PP activations go through the fabric where the back end carries
    // GPU-to-GPU transfers (the flow back end; LinkModel::carries).
    m_peer_fabric = carries_peer(link) && m_L.stage_gpus * m_L.pp > 1;
  }

  int concurrent_batches() const override { return m_L.pp; }

  std::unique_ptr<StepRun> time(const std::vector<std::vector<SeqSlice>>& batches) override {
    auto run = std::make_unique<Run>(*this, replica_step_cost(m_spec, m_L, batches));
    const ReplicaStepCost& k = run->cost;
    for (double t : k.rank_tokens)
      if (t <= 0) m_stats.dummy_rank_steps += 1;
    m_stats.rank_idle_s += k.rank_idle_s;
    m_stats.local_s += k.local_s;
    m_stats.expert_s += k.expert_s;
    m_stats.a2a_port_bound_s += k.dispatch_s + k.combine_s;
    m_stats.a2a_nvlink_bytes += k.a2a_nvlink_bytes;
    m_stats.a2a_nic_bytes += k.a2a_nic_bytes;
    m_stats.pp_bytes += k.pp_bytes;
    StepTime& st = run->time;
    st.total.compute_time_s = k.step_s;
    st.total.flops = k.flops;
    st.total.hbm_bytes = k.hbm_bytes;
    // The layer-wise pipeline's fill and drain: one layer's share of the step; with stages, the
    // first stage's first layer and the last stage's last layer (its edge kernels with it).
    st.first_layer_s = st.last_layer_s = k.step_s / m_spec.model.num_layers;
    if (m_L.pp > 1) {
      st.first_layer_s = stage_time(k, 0).first_layer_s;
      st.last_layer_s = stage_time(k, m_L.pp - 1).last_layer_s;
    }
    return run;
  }

 private:
  struct Run final : StepRun {
    Run(LayoutStep& m, ReplicaStepCost c)
        : model(m),
          cost(std::move(c)),
          started(static_cast<std::size_t>(m.m_L.pp), 0),
          done(static_cast<std::size_t>(m.m_L.pp), 0),
          taken(static_cast<std::size_t>(m.m_L.pp), false),
          launched(static_cast<std::size_t>(m.m_L.pp), false),
          sent(static_cast<std::size_t>(m.m_L.pp), false) {}
    void start(CopyGroup& c, double compute_s, double hbm_bytes) override {
      const double f = cost.step_s > 0 ? compute_s / cost.step_s : 0;
      c.g.add();
      spawn_pooled([this, &c, f, hbm_bytes]() {
        model.forward(*this, f, hbm_bytes);
        c.g.member_done(now_s());
      });
    }
    int stages() const override { return model.m_L.pp; }
    std::unique_ptr<StepRun> stage(int s) override;
    void wait_launched(int s) override {
      while (!launched[static_cast<std::size_t>(s)]) sc_core::wait(changed);
    }
    LayoutStep& model;
    ReplicaStepCost cost;
    // Per stage, this step's progress: the fraction of its part started (launched once all of
    // it has), and done; whether the micro-batch holds the stage, and has sent its activations.
    std::vector<double> started, done;
    std::vector<bool> taken, launched, sent;
    sc_core::sc_event changed;  // any of them
  };
  // Stage s's share of a step (its StepTime the stage's), started by a per-stage load path run.
  struct StageRun final : StepRun {
    StageRun(Run& r, int s) : run(r), s(s) { time = run.model.stage_time(run.cost, s); }
    void start(CopyGroup& c, double compute_s, double hbm_bytes) override {
      const std::size_t si = static_cast<std::size_t>(s);
      const double all = time.total.compute_time_s;
      const double f = all > 0 ? compute_s / all : 1;
      // The stage's worker launches its forward at once; the stage runs it when the activations
      // and the stage are there.
      run.started[si] += f;
      check_launched();
      c.g.add();
      spawn_pooled([this, &c, f, hbm_bytes]() {
        run.model.stage_part(run, *this, s, f, hbm_bytes);
        c.g.member_done(now_s());
      });
    }
    void set_loading(bool l) override {
      loading = l;
      check_launched();
    }
    // Launched: every part started and no load of its worker in flight.
    void check_launched() {
      const std::size_t si = static_cast<std::size_t>(s);
      if (loading || run.started[si] < 1 - 1e-9 || run.launched[si]) return;
      run.launched[si] = true;
      run.changed.notify(sc_core::SC_ZERO_TIME);
    }
    Run& run;
    int s;
    bool loading = false;
  };

  // Stage s's share of step k: its time (the stage's phases and its activations out) and the
  // layer-wise pipeline's fill and drain over its own layers (the edge kernels in its last).
  StepTime stage_time(const ReplicaStepCost& k, int s) const {
    const std::size_t si = static_cast<std::size_t>(s);
    StepTime st;
    st.total.compute_time_s = k.stage_s(si);
    st.total.flops = k.flops;
    st.total.hbm_bytes = k.hbm_bytes;
    const bool last = s == m_L.pp - 1;
    const double edge = last ? k.edge_s : 0;
    const double layer =
        (st.total.compute_time_s - k.stage_pp_s[si] - edge) / std::max(1, k.stage_layers[si]);
    st.first_layer_s = layer;
    st.last_layer_s = layer + edge + k.stage_pp_s[si];
    return st;
  }

  // GPU i of stage s (i over the stage's ranks' TP positions).
  const GpuUnit& gpu(int s, int i) const {
    return m_ranks[static_cast<std::size_t>(i / m_L.tp)]->at(
        static_cast<std::size_t>(s * m_L.tp + i % m_L.tp));
  }
  // `t` of compute moving `bytes` through HBM on every GPU of stage s, waited for.
  void compute(int s, double t, double bytes) {
    if (!(t > 0)) return;
    std::vector<GpuCompute*> gpus;
    gpus.reserve(static_cast<std::size_t>(m_L.stage_gpus));
    for (int i = 0; i < m_L.stage_gpus; ++i) gpus.push_back(&*gpu(s, i).compute);
    // Another micro-batch's copy kernel may hold SMs of the stage's GPUs (its load beside this
    // compute): while it does, the phase runs at the free SM fraction, the whole phase taken as
    // SM-bound (an upper bound), then at every SM.
    bool fewer = false;
    const double left = run_beside_copy_kernels(
        gpus, bytes, [t](double f) { return t / f; }, fewer);
    if (fewer) ++m_stats.steps_on_fewer_sms;
    if (!(left > 0)) return;
    CopyGroup c;
    c.rs.assign(gpus.size(), TransferRequest{});
    GpuCompute::start_steps(gpus.data(), gpus.size(), t * left, bytes * left, c.rs.data(), c.g);
    if (!c.g.finished) sc_core::wait(c.g.done);
  }
  void peer(CopyGroup& c) {
    for (TransferRequest& q : c.rs) m_link.start(q, c.g);
    m_stats.peer_transfers += static_cast<double>(c.rs.size());
    if (!c.rs.empty() && !c.g.finished) sc_core::wait(c.g.done);
  }
  // The stage's EP all-to-all phase for `layers` MoE layers: one aggregated PeerGpu transfer
  // per (sender, receiver) pair (the fabric charges one latency; the other layers' are waited).
  void a2a(const ReplicaStepCost& k, int s, double layers, bool combine, double latency_s,
           int n_moe, double f) {
    const int S = m_L.stage_gpus;
    CopyGroup c;
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b) {
        const double bytes =
            k.layer_pair_dispatch_bytes[static_cast<std::size_t>(a * S + b)] * layers * f;
        if (!(bytes > 0)) continue;
        // Dispatch: a sends to b; combine: the expert outputs come back, b to a.
        c.rs.push_back(
            peer_transfer(combine ? gpu(s, b) : gpu(s, a), combine ? gpu(s, a) : gpu(s, b), bytes));
      }
    peer(c);
    wait_s((n_moe - 1) * latency_s * f);
  }
  // Stage s taken by one micro-batch at a time (they reach it in order; with one stage nothing
  // else runs on it).
  void take_stage(std::size_t s) {
    while (m_stage_busy[s]) sc_core::wait(m_stage_free[s]);
    m_stage_busy[s] = true;
  }
  void release_stage(std::size_t s) {
    m_stage_busy[s] = false;
    m_stage_free[s].notify(sc_core::SC_ZERO_TIME);
  }
  // Stage s's phases of step k at fraction f (compute, a2a, experts, a2a), `hbm_bytes` through
  // each of its GPUs' HBM in proportion to the compute phases' time.
  void stage_body(const ReplicaStepCost& k, int s, double f, double hbm_bytes) {
    const std::size_t si = static_cast<std::size_t>(s);
    // hbm_bytes is per GPU over the replica's GPUs: a stage's GPUs move pp times it over all
    // stages, each stage its compute time's share (not all of it on every stage).
    double busy = 0;
    for (int j = 0; j < m_L.pp; ++j)
      busy += k.stage_local_s[static_cast<std::size_t>(j)] +
              k.stage_expert_s[static_cast<std::size_t>(j)];
    const double per_s = busy > 0 ? hbm_bytes * m_L.pp / busy : 0;
    compute(s, k.stage_local_s[si] * f, per_s * k.stage_local_s[si]);
    const int n_moe = k.stage_moe_layers[si];
    const bool ep =
        m_peer_fabric && m_L.p.ep > 1 && n_moe > 0 && !k.layer_pair_dispatch_bytes.empty();
    double t = now_s();
    if (ep)
      a2a(k, s, n_moe, false, k.dispatch_latency_s, n_moe, f);
    else
      wait_s(k.stage_dispatch_s[si] * f);
    m_stats.a2a_s += now_s() - t;
    compute(s, k.stage_expert_s[si] * f, per_s * k.stage_expert_s[si]);
    t = now_s();
    if (ep)
      a2a(k, s, n_moe * m_L.cost.combine_bytes_per_value / m_L.cost.dispatch_bytes_per_value, true,
          k.combine_latency_s, n_moe, f);
    else
      wait_s(k.stage_combine_s[si] * f);
    m_stats.a2a_s += now_s() - t;
  }
  // Stage s's activations of step k at fraction f: GPU i of this stage to GPU i of the next.
  void activations(const ReplicaStepCost& k, int s, double f) {
    const double t = now_s();
    if (m_peer_fabric) {
      CopyGroup act;
      for (int i = 0; i < m_L.stage_gpus; ++i)
        act.rs.push_back(peer_transfer(gpu(s, i), gpu(s + 1, i), k.pp_bytes_per_gpu * f));
      peer(act);
    } else {
      wait_s(k.stage_pp_s[static_cast<std::size_t>(s)] * f);
    }
    m_stats.pp_s += now_s() - t;
  }
  // Waits for stage s if another micro-batch holds it; the wait is r's (not compute).
  void take_timed(StepRun& r, std::size_t s) {
    const double t = now_s();
    take_stage(s);
    r.take_wait_s += now_s() - t;
    m_stats.stage_wait_s += now_s() - t;
  }
  // The whole step (or a layer's share f of it) through every stage in turn.
  void forward(Run& r, double f, double hbm_bytes) {
    const ReplicaStepCost& k = r.cost;
    for (int s = 0; s < m_L.pp; ++s) {
      const std::size_t si = static_cast<std::size_t>(s);
      if (m_L.pp > 1) take_timed(r, si);
      stage_body(k, s, f, hbm_bytes);
      if (m_L.pp > 1) release_stage(si);  // the next micro-batch may start on it
      if (s + 1 < m_L.pp) activations(k, s, f);
    }
  }
  // Part f of stage s's share of step r (sr: its stage run): after the previous stage's
  // activations; the stage held from its first part to its last, then its activations out.
  void stage_part(Run& r, StageRun& sr, int s, double f, double hbm_bytes) {
    const std::size_t si = static_cast<std::size_t>(s);
    const double t = now_s();
    if (s > 0)
      while (!r.sent[si - 1]) sc_core::wait(r.changed);
    sr.arrival_wait_s += now_s() - t;
    if (!r.taken[si]) {
      take_timed(sr, si);
      r.taken[si] = true;
    }
    stage_body(r.cost, s, f, hbm_bytes);
    r.done[si] += f;
    if (r.done[si] < 1 - 1e-9 || r.sent[si]) return;
    release_stage(si);
    if (s + 1 < m_L.pp) activations(r.cost, s, 1.0);
    r.sent[si] = true;
    r.changed.notify(sc_core::SC_ZERO_TIME);
  }

  const RunSpec& m_spec;
  ReplicaLayout m_L;
  std::vector<const RankGpus*> m_ranks;
  LinkModule& m_link;
  LayoutStats& m_stats;
  bool m_peer_fabric = false;
  std::vector<bool> m_stage_busy;
  std::vector<sc_core::sc_event> m_stage_free;
};

std::unique_ptr<StepRun> LayoutStep::Run::stage(int s) {
  return std::make_unique<StageRun>(*this, s);
}

}  // namespace

std::unique_ptr<StepModel> make_tp_step(const RunSpec& spec, const RankGpus& rank,
                                        LayoutStats& stats) {
  return std::make_unique<TpStep>(spec, rank, stats);
}

std::unique_ptr<StepModel> make_layout_step(const RunSpec& spec, const ReplicaLayout& L,
                                            std::vector<const RankGpus*> ranks, LinkModule& link,
                                            LayoutStats& stats) {
  return std::make_unique<LayoutStep>(spec, L, std::move(ranks), link, stats);
}

std::vector<std::pair<std::string, double>> layout_figures(const LayoutStats& ls,
                                                           const ReplicaLayout& L) {
  double tokens = 0, busiest = 0;
  for (double x : ls.rank_tokens) {
    tokens += x;
    busiest = std::max(busiest, x);
  }
  const double nan = std::nan("");
  const auto ratio = [nan](double a, double b) { return b > 0 ? a / b : nan; };
  const double busy = ls.local_s + ls.expert_s + ls.a2a_s + ls.pp_s;
  return {
      {"dp_ranks", L.dp},
      {"replica_gpus", L.gpus},
      {"dp_mean_rank_tokens_per_step", ratio(tokens, ls.rank_steps)},
      {"dp_max_rank_tokens_per_step", ratio(ls.max_rank_tokens, ls.group_steps)},
      {"dp_rank_imbalance", ratio(ls.lockstep_max_tokens, tokens)},
      {"dp_routing_imbalance", ratio(busiest * L.dp, tokens)},
      {"dp_rank_idle_s", ls.rank_idle_s},
      {"dp_dummy_rank_steps", ls.dummy_rank_steps},
      {"ep_a2a_s", ls.a2a_s},
      {"ep_a2a_time_share", ratio(ls.a2a_s, busy)},
      {"ep_a2a_port_bound_s", ls.a2a_port_bound_s},
      {"peer_gpu_transfers", ls.peer_transfers},
      {"ep_expert_s", ls.expert_s},
      {"pp_activation_s", ls.pp_s},
      {"pp_stage_wait_s", ls.stage_wait_s},
      {"ep_nvlink_bytes", ls.a2a_nvlink_bytes},
      {"ep_nic_bytes", ls.a2a_nic_bytes},
      {"pp_bytes", ls.pp_bytes},
      {"dp_rank_hit_rate_min", ls.rank_hit_rate_min},
      {"dp_rank_hit_rate_max", ls.rank_hit_rate_max},
  };
}

}  // namespace kappasim
