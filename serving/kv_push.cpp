#include "serving/kv_push.hpp"

#include <stdexcept>
#include <string>

#include "models/llm/parallelism.hpp"
#include "serving/kv_pull.hpp"
#include "serving/scheduler.hpp"
#include "serving/sim_clock.hpp"

namespace kappasim {

using sim_clock::now_s;
using sim_clock::wait_s;

KvPush::KvPush(const RunSpec& spec, HandoffSpec handoff, KvRankLayout layout,
               double kv_bytes_per_token_gpu, Receive receive, OnPushed on_pushed)
    : m_spec(spec),
      m_handoff(std::move(handoff)),
      m_layout(layout),
      m_bkv_gpu(kv_bytes_per_token_gpu),
      m_receive(std::move(receive)),
      m_on_pushed(std::move(on_pushed)) {
  int first = 0;
  for (int n : stage_layer_counts(m_spec.model.num_layers, m_layout.pp)) {
    m_stage_first.push_back(first);
    first += n;
  }
}

KvPush::~KvPush() = default;

void KvPush::computed(Rank& rank, const Sequence& s, int first, int n, double compute_s) {
  const int L = m_spec.model.num_layers;
  if (n < 1 || first < 0 || first + n > L)
    throw std::logic_error("KvPush::computed: layers [" + std::to_string(first) + ", " +
                           std::to_string(first + n) + ") of " + std::to_string(L));
  m_pushing.try_emplace(s.req.id);
  const double t0 = now_s();
  for (int j = 0; j < n; ++j) {
    const int layer = first + j;
    int stage = 0;
    while (stage + 1 < static_cast<int>(m_stage_first.size()) &&
           m_stage_first[static_cast<std::size_t>(stage + 1)] <= layer)
      ++stage;
    std::unique_ptr<Stream>& st = m_streams[{rank.index, stage}];
    if (!st) {
      st = std::make_unique<Stream>();
      Stream* raw = st.get();
      sc_core::sc_spawn([this, raw] { sender(*raw); });
    }
    Send x;
    x.rank = &rank;
    x.id = s.req.id;
    x.tokens = s.req.prompt_tokens();
    x.layer = layer;
    x.ready_s = t0 + (j + 1) * compute_s / n;
    st->q.push_back(x);
    st->ev.notify(sc_core::SC_ZERO_TIME);
  }
}

void KvPush::sender(Stream& st) {
  for (;;) {
    while (st.q.empty()) sc_core::wait(st.ev);
    const Send x = st.q.front();
    st.q.pop_front();
    if (now_s() < x.ready_s) wait_s(x.ready_s - now_s());
    send_one(x);
  }
}

void KvPush::send_one(const Send& x) {
  Pushing& p = m_pushing.at(x.id);
  const double t0 = now_s();
  if (p.start_s < 0) p.start_s = t0;
  // The layer's KV on its stage's GPUs: each holds its stage's share of a token's KV (plan_all's
  // kv_share) over the stage's layers; the other stages' GPUs send nothing for it.
  const std::vector<int> layers = stage_layer_counts(m_spec.model.num_layers, m_layout.pp);
  int stage = 0;
  while (stage + 1 < m_layout.pp && m_stage_first[static_cast<std::size_t>(stage + 1)] <= x.layer)
    ++stage;
  std::vector<TransferRequest> plan;
  x.rank->gpus->plan_all(plan, static_cast<double>(x.tokens) * m_bkv_gpu, Direction::D2H,
                         CopyPath::Dma);
  const HandoffGeometry geo{m_spec.serving.block_tokens, m_spec.serving.chunk_tokens, m_layout.pp};
  std::vector<double> bytes(plan.size(), 0.0);
  double cap = 0, sum = 0;  // the posting bound, the stage's GPUs together (-1: none binds)
  for (std::size_t k = 0; k < plan.size(); ++k) {
    if (static_cast<int>(k) / m_layout.tp != stage) continue;
    bytes[k] = plan[k].bytes / layers[static_cast<std::size_t>(stage)];
    sum += bytes[k];
    const double c = handoff_post_rate_cap(
        bytes[k], handoff_piece_descriptors(m_handoff, m_spec.model, x.tokens, bytes[k], 1, geo),
        m_handoff);
    cap = c > 0 && cap >= 0 ? cap + c : -1;
  }
  // The send's own cost before its bytes move (P2pNccl: the ZMQ PUT and its answer), then the
  // bytes through both NIC ports.
  wait_s(m_handoff.fixed_s);
  if (sum > 0) {
    const std::shared_ptr<CopyGroup> out =
        KvPull::send(*x.rank, m_spec.system.gpus, bytes, std::max(cap, 0.0), -1);
    const std::shared_ptr<CopyGroup> in =
        m_receive ? m_receive(x.id, bytes, std::max(cap, 0.0)) : nullptr;
    if (!out->g.finished) sc_core::wait(out->g.done);
    if (in && !in->g.finished) sc_core::wait(in->g.done);
  }
  p.bytes += sum;
  // Every layer has arrived once: the decode side has the prompt (a layer sent again, were the
  // prompt's last chunk computed twice, moves its bytes and is not counted).
  if (p.done || ++p.sent < m_spec.model.num_layers) return;
  p.done = true;
  if (m_on_pushed) m_on_pushed(x.id, p.start_s, now_s(), p.bytes);
}

std::shared_ptr<CopyGroup> nic_copy_group(const Rank& rank, const std::vector<double>& gpu_bytes,
                                          Direction dir, double rate_cap_Bps, const char* who) {
  if (gpu_bytes.size() != rank.gpus->size())
    throw std::logic_error(std::string(who) + ": " + std::to_string(gpu_bytes.size()) +
                           " GPUs' bytes for a rank of " + std::to_string(rank.gpus->size()));
  auto c = std::make_shared<CopyGroup>();
  double bytes = 0;
  for (std::size_t k = 0; k < gpu_bytes.size(); ++k) {
    if (!(gpu_bytes[k] > 0)) continue;  // e.g. a re-shard reads nothing from this GPU
    TransferRequest r;
    r.gpu = rank.gpus->at(k).fabric;
    r.dir = dir;
    r.path = CopyPath::Dma;
    r.endpoint = Endpoint::Remote;  // the GPU's NIC port: in (H2D) or out (D2H)
    r.bytes = gpu_bytes[k];
    c->rs.push_back(r);
    bytes += r.bytes;
  }
  for (TransferRequest& r : c->rs)
    r.rate_cap_Bps = rate_cap_Bps > 0 && bytes > 0 ? rate_cap_Bps * r.bytes / bytes : 0;
  return c;
}

std::shared_ptr<CopyGroup> KvPush::receive(Rank& rank, const std::vector<double>& gpu_bytes,
                                           double rate_cap_Bps) {
  auto c = nic_copy_group(rank, gpu_bytes, Direction::H2D, rate_cap_Bps, "KvPush::receive");
  rank.gpus->issue(*c, std::vector<std::int64_t>(c->rs.size(), 1), CopyPath::Dma, 0);
  return c;
}

}  // namespace kappasim
