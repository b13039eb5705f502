#include "serving/step_model.hpp"

#include <algorithm>
#include <cmath>

#include "serving/sim_clock.hpp"

namespace kappasim {

using sim_clock::now_s;
using sim_clock::wait_s;

namespace {

class TpStep final : public StepModel {
 public:
  TpStep(const RunSpec& spec, const RankGpus& rank, std::uint64_t& on_fewer_sms)
      : m_spec(spec), m_rank(rank), m_on_fewer_sms(on_fewer_sms) {}

  StepTime time(const std::vector<std::vector<SeqSlice>>& batches) override {
    m_slices = &batches.at(0);  // the step's batch outlives its compute (Group::run_step)
    return at_fraction(1.0);
  }

  void start(CopyGroup& c, double compute_s, double hbm_bytes) override {
    c.rs.assign(m_rank.size(), TransferRequest{});
    for (std::size_t k = 0; k < m_rank.size(); ++k) {
      GpuCompute& gpu = *m_rank.at(k).compute;
      double t = compute_s;
      if (gpu.sm_pool().free() < gpu.sm_pool().total()) {
        // A copy kernel holds SMs: the step (or this share of it) takes as much longer as the
        // step's batch does at the free SM fraction (kernel_timing). Today's load paths never
        // get here (counted; docs/serving-engine.md).
        ++m_on_fewer_sms;
        const double all = at_fraction(1.0).total.compute_time_s;
        const double part = at_fraction(gpu.sm_pool().compute_fraction()).total.compute_time_s;
        if (all > 0) t = compute_s * part / all;
      }
      gpu.start_step(t, hbm_bytes, c.rs[k], c.g);
    }
  }

 private:
  StepTime at_fraction(double sm_fraction) const {
    const ServingSpec& sv = m_spec.serving;
    return batch_step_time(m_spec.model, m_spec.system.gpu, m_rank.tp(), *m_slices,
                           sv.compute_dtype, sm_fraction, sv.kv_dtype, sv.stack.launch);
  }
  const RunSpec& m_spec;
  const RankGpus& m_rank;
  std::uint64_t& m_on_fewer_sms;
  const std::vector<SeqSlice>* m_slices = nullptr;
};

class LayoutStep final : public StepModel {
 public:
  LayoutStep(const RunSpec& spec, const ReplicaLayout& L, std::vector<const RankGpus*> ranks,
             LinkModule& link, LayoutStats& stats, std::uint64_t& on_fewer_sms)
      : m_spec(spec),
        m_L(L),
        m_ranks(std::move(ranks)),
        m_link(link),
        m_stats(stats),
        m_on_fewer_sms(on_fewer_sms) {
    // The all-to-all and PP activations go through the fabric where the back end carries
    // GPU-to-GPU transfers (the flow back end; LinkModel::carries).
    TransferRequest peer;
    peer.endpoint = Endpoint::PeerGpu;
    m_peer_fabric = link.carries(peer) && m_L.stage_gpus * m_L.pp > 1;
  }

  StepTime time(const std::vector<std::vector<SeqSlice>>& batches) override {
    m_cost = replica_step_cost(m_spec, m_L, batches);
    for (double t : m_cost.rank_tokens)
      if (t <= 0) m_stats.dummy_rank_steps += 1;
    m_stats.rank_idle_s += m_cost.rank_idle_s;
    m_stats.local_s += m_cost.local_s;
    m_stats.expert_s += m_cost.expert_s;
    m_stats.a2a_port_bound_s += m_cost.dispatch_s + m_cost.combine_s;
    m_stats.a2a_nvlink_bytes += m_cost.a2a_nvlink_bytes;
    m_stats.a2a_nic_bytes += m_cost.a2a_nic_bytes;
    m_stats.pp_bytes += m_cost.pp_bytes;
    StepTime st;
    st.total.compute_time_s = m_cost.step_s;
    st.total.flops = m_cost.flops;
    st.total.hbm_bytes = m_cost.hbm_bytes;
    // The layer-wise pipeline's fill and drain: one layer's share of the step.
    st.first_layer_s = st.last_layer_s = m_cost.step_s / m_spec.model.num_layers;
    return st;
  }

  void start(CopyGroup& c, double compute_s, double hbm_bytes) override {
    const double f = m_cost.step_s > 0 ? compute_s / m_cost.step_s : 0;
    c.g.add();
    sc_core::sc_spawn([this, &c, f, hbm_bytes]() {
      forward(f, hbm_bytes);
      c.g.member_done(now_s());
    });
  }

 private:
  // GPU i of stage s (i over the stage's ranks' TP positions).
  const GpuUnit& gpu(int s, int i) const {
    return m_ranks[static_cast<std::size_t>(i / m_L.tp)]->at(
        static_cast<std::size_t>(s * m_L.tp + i % m_L.tp));
  }
  // `t` of compute moving `bytes` through HBM on every GPU of stage s, waited for.
  void compute(int s, double t, double bytes) {
    if (!(t > 0)) return;
    CopyGroup c;
    c.rs.assign(static_cast<std::size_t>(m_L.stage_gpus), TransferRequest{});
    for (int i = 0; i < m_L.stage_gpus; ++i) {
      GpuCompute& g = *gpu(s, i).compute;
      // A copy kernel holding SMs slows the whole phase by the free SM fraction (an upper
      // bound; today's load paths never overlap a copy kernel with compute).
      const bool fewer = g.sm_pool().free() < g.sm_pool().total();
      if (fewer) ++m_on_fewer_sms;
      g.start_step(t, bytes, c.rs[static_cast<std::size_t>(i)], c.g, 0, fewer ? t : 0);
    }
    if (!c.g.finished) sc_core::wait(c.g.done);
  }
  void peer(CopyGroup& c) {
    for (TransferRequest& q : c.rs) m_link.start(q, c.g);
    m_stats.peer_transfers += static_cast<double>(c.rs.size());
    if (!c.rs.empty() && !c.g.finished) sc_core::wait(c.g.done);
  }
  // The stage's EP all-to-all phase for `layers` MoE layers: one aggregated PeerGpu transfer
  // per (sender, receiver) pair (the fabric charges one latency; the other layers' are waited).
  void a2a(int s, double layers, bool combine, double latency_s, int n_moe, double f) {
    const int S = m_L.stage_gpus;
    CopyGroup c;
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b) {
        const double bytes =
            m_cost.layer_pair_dispatch_bytes[static_cast<std::size_t>(a * S + b)] * layers * f;
        if (!(bytes > 0)) continue;
        // Dispatch: a sends to b; combine: the expert outputs come back, b to a.
        c.rs.push_back(
            peer_request(combine ? gpu(s, b) : gpu(s, a), combine ? gpu(s, a) : gpu(s, b), bytes));
      }
    peer(c);
    wait_s((n_moe - 1) * latency_s * f);
  }
  static TransferRequest peer_request(const GpuUnit& from, const GpuUnit& to, double bytes) {
    TransferRequest q;
    q.gpu = from.fabric;
    q.dir = Direction::D2H;  // gpu -> endpoint
    q.path = CopyPath::Dma;
    q.endpoint = Endpoint::PeerGpu;
    q.endpoint_index = to.fabric;
    q.bytes = bytes;
    return q;
  }
  void forward(double f, double hbm_bytes) {
    const ReplicaStepCost& k = m_cost;
    for (int s = 0; s < m_L.pp; ++s) {
      const std::size_t si = static_cast<std::size_t>(s);
      const double busy = k.stage_local_s[si] + k.stage_expert_s[si];
      const double per_s = busy > 0 ? hbm_bytes * m_L.pp / busy : 0;
      compute(s, k.stage_local_s[si] * f, per_s * k.stage_local_s[si]);
      const int n_moe = k.stage_moe_layers[si];
      const bool ep =
          m_peer_fabric && m_L.p.ep > 1 && n_moe > 0 && !k.layer_pair_dispatch_bytes.empty();
      double t = now_s();
      if (ep)
        a2a(s, n_moe, false, k.dispatch_latency_s, n_moe, f);
      else
        wait_s(k.stage_dispatch_s[si] * f);
      m_stats.a2a_s += now_s() - t;
      compute(s, k.stage_expert_s[si] * f, per_s * k.stage_expert_s[si]);
      t = now_s();
      if (ep)
        a2a(s, n_moe * m_L.cost.combine_bytes_per_value / m_L.cost.dispatch_bytes_per_value, true,
            k.combine_latency_s, n_moe, f);
      else
        wait_s(k.stage_combine_s[si] * f);
      m_stats.a2a_s += now_s() - t;
      if (s + 1 < m_L.pp) {  // activations: GPU i of this stage to GPU i of the next
        t = now_s();
        if (m_peer_fabric) {
          CopyGroup act;
          for (int i = 0; i < m_L.stage_gpus; ++i)
            act.rs.push_back(peer_request(gpu(s, i), gpu(s + 1, i), k.pp_bytes_per_gpu * f));
          peer(act);
        } else {
          wait_s(k.stage_pp_s[si] * f);
        }
        m_stats.pp_s += now_s() - t;
      }
    }
  }

  const RunSpec& m_spec;
  ReplicaLayout m_L;
  std::vector<const RankGpus*> m_ranks;
  LinkModule& m_link;
  LayoutStats& m_stats;
  std::uint64_t& m_on_fewer_sms;
  bool m_peer_fabric = false;
  ReplicaStepCost m_cost;
};

}  // namespace

std::unique_ptr<StepModel> make_tp_step(const RunSpec& spec, const RankGpus& rank,
                                        std::uint64_t& on_fewer_sms) {
  return std::make_unique<TpStep>(spec, rank, on_fewer_sms);
}

std::unique_ptr<StepModel> make_layout_step(const RunSpec& spec, const ReplicaLayout& L,
                                            std::vector<const RankGpus*> ranks, LinkModule& link,
                                            LayoutStats& stats, std::uint64_t& on_fewer_sms) {
  return std::make_unique<LayoutStep>(spec, L, std::move(ranks), link, stats, on_fewer_sms);
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
      {"ep_nvlink_bytes", ls.a2a_nvlink_bytes},
      {"ep_nic_bytes", ls.a2a_nic_bytes},
      {"pp_bytes", ls.pp_bytes},
      {"dp_rank_hit_rate_min", ls.rank_hit_rate_min},
      {"dp_rank_hit_rate_max", ls.rank_hit_rate_max},
  };
}

}  // namespace kappasim
