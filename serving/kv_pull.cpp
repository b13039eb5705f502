#include "serving/kv_pull.hpp"

#include <algorithm>
#include <string>

#include "serving/sim_clock.hpp"

namespace kappasim {

using sim_clock::now_s;
using sim_clock::wait_s;

KvPull::KvPull(std::size_t ranks, const RunSpec& spec, EngineRole role, HandoffSpec handoff,
               KvRankLayout layout, double kv_bytes_per_token_gpu, std::optional<HybridKv> hybrid,
               OnPulled on_pulled, SendKv send_kv, SourceLayout source_layout,
               sc_core::sc_event& work)
    : m_spec(spec),
      m_role(role),
      m_handoff(std::move(handoff)),
      m_layout(layout),
      m_bkv_gpu(kv_bytes_per_token_gpu),
      m_hybrid(std::move(hybrid)),
      m_on_pulled(std::move(on_pulled)),
      m_send_kv(std::move(send_kv)),
      m_source_layout(std::move(source_layout)),
      m_work(work) {
  for (std::size_t r = 0; r < ranks; ++r) {
    m_stream.push_back(
        std::make_unique<sc_core::sc_mutex>(("load_stream" + std::to_string(r)).c_str()));
    m_copies.push_back(
        std::make_unique<sc_core::sc_mutex>(("copy_stream" + std::to_string(r)).c_str()));
  }
  m_loaded.resize(ranks);
}

KvPull::~KvPull() = default;

void KvPull::check_async(const RunSpec& spec, const LoadPathStrategy& path) {
  const ServingSpec& sv = spec.serving;
  if (sv.stack.load != StackLoad::Async) return;
  // An async load is the copy engines' DMA copies running beside other requests' steps; a copy
  // kernel would take the SMs of the steps it overlaps, and the layer-wise path interleaves its
  // copies with the request's own forward: neither can run outside the steps.
  if (!path.loads_outside_steps() || path.copy_path() != CopyPath::Dma)
    throw InputError("serving.load_path: " + std::string(sv.load_path.name) +
                     " cannot load "
                     "outside the steps as stack '" +
                     sv.stack.name +
                     "' does (serving.stack.load: async; a copy kernel would take the SMs of the "
                     "steps it overlaps, and the layer-wise path interleaves its copies with "
                     "the request's forward). Use serving.load_path: block_dma, or "
                     "serving.stack.load: in_step");
}

std::shared_ptr<CopyGroup> KvPull::send(Rank& rank, int system_gpus,
                                        const std::vector<double>& gpu_bytes, double rate_cap_Bps,
                                        int nvlink_base) {
  // HBM -> the GPU's NIC port out.
  auto c = nic_copy_group(rank, gpu_bytes, Direction::D2H, rate_cap_Bps, "send_kv");
  // On one host [A]: the sender's k-th sending GPU's bytes go to the host's GPU
  // nvlink_base + k mod (the GPUs past this engine's), standing for the decode GPU reading
  // them (the decode node's fabric places each piece exactly).
  if (nvlink_base >= 0) {  // HBM -> the GPU's NVLink port out
    const int spare = system_gpus - nvlink_base;
    int sent = 0;
    for (TransferRequest& r : c->rs) {
      r.endpoint = Endpoint::PeerGpu;
      r.endpoint_index = nvlink_base + (spare > 0 ? sent++ % spare : 0);
    }
  }
  rank.gpus->issue(*c, std::vector<std::int64_t>(c->rs.size(), 1), CopyPath::Dma, 0);
  return c;
}

double KvPull::begin_copies(std::size_t r) {
  const double t0 = now_s();
  m_copies.at(r)->lock();
  m_stream.at(r)->unlock();
  return now_s() - t0;
}

void KvPull::end_load(std::size_t r, bool copies_begun) {
  (copies_begun ? m_copies : m_stream).at(r)->unlock();
}

std::vector<Sequence*> KvPull::take_loaded(std::size_t r) {
  std::vector<Sequence*> out;
  out.swap(m_loaded.at(r));
  return out;
}

void KvPull::run(Rank& rank, Sequence* s, const std::function<void()>& load_async) {
  // One request's load at a time per rank, in the order they were admitted (the worker's one
  // thread issues a request's copies or posts its descriptors, one stream).
  if (s->pd_handoff && wait_pushed) {  // push_layer: into the receive buffer
    const double t0 = now_s();
    const double bytes = wait_pushed(s->req.id);
    rank.sched->pulled(s);
    if (m_on_pulled) m_on_pulled(s->req.id, t0, now_s(), bytes);
    m_work.notify(sc_core::SC_ZERO_TIME);
    return;
  }
  sc_core::sc_mutex& stream = *m_stream.at(static_cast<std::size_t>(rank.index));
  stream.lock();
  // An async load from the tier (stack.load: async; on a P/D decode engine with its tier, a
  // preempted request's reload, ServingEngine::relookup).
  if (!s->pd_handoff) {
    load_async();  // frees the thread once its copies start (begin_copies, end_load)
    // The copies are done; the scheduler learns it from the next step's get_finished
    // (StepGroup polls take_loaded at every step's end).
    m_loaded.at(static_cast<std::size_t>(rank.index)).push_back(s);
    m_work.notify(sc_core::SC_ZERO_TIME);
    return;
  }
  const double t0 = now_s();
  const double bytes = pull(rank, *s);
  stream.unlock();
  // The prefill instance learns at once (NIXL's notification ends the read); the scheduler at the
  // next step's get_finished, as an async load's.
  if (m_on_pulled) m_on_pulled(s->req.id, t0, now_s(), bytes);
  m_loaded.at(static_cast<std::size_t>(rank.index)).push_back(s);
  m_work.notify(sc_core::SC_ZERO_TIME);
}

double KvPull::pull(Rank& rank, const Sequence& s) {
  wait_s(m_handoff.fixed_s);
  // Every GPU of the rank pulls what it holds of the prompt's KV (all but the last token) through
  // its NIC (GPUDirect RDMA), piece by piece from the prefill GPUs holding those layers and heads
  // (the re-shard, reshard_pieces: with identical layouts GPU k's one piece is GPU k's whole
  // share), no faster than it posts the pieces' descriptors (the profile's unit).
  const std::int64_t tokens = s.cached_tokens;
  const HandoffGeometry geo{m_spec.serving.block_tokens, m_spec.serving.chunk_tokens, m_layout.pp};
  double bytes = 0;
  if (tokens > 0) {
    const HandoffSource from =
        m_source_layout ? m_source_layout(s.req.id) : HandoffSource{m_layout, -1};
    const KvRankLayout& src = from.layout;
    CopyGroup c;
    // Hybrid: every token of the full layers, the sliding layers' last W, the chunked layers'
    // last chunk and the linear layers' state (HybridKv::bytes).
    const double n = static_cast<double>(tokens);
    rank.gpus->plan_all(c.rs, m_hybrid ? m_hybrid->bytes(0, n, n) : n * m_bkv_gpu, Direction::H2D,
                        CopyPath::Dma);
    std::vector<double> held;
    for (const TransferRequest& r : c.rs) held.push_back(r.bytes);
    // Hybrid: the re-shard splits a GPU's bytes between stages by its layers' bytes.
    std::vector<double> layer_bytes;
    if (m_hybrid) layer_bytes = hybrid_layer_bytes(m_spec.model, *m_hybrid, n);
    const std::vector<double>* lb = m_hybrid ? &layer_bytes : nullptr;
    const ReshardLoad load =
        reshard_load(m_handoff, m_spec.model, src, m_layout, held, tokens, geo, lb);
    for (std::size_t k = 0; k < c.rs.size(); ++k) {
      TransferRequest& r = c.rs[k];
      r.endpoint = Endpoint::Remote;
      r.rate_cap_Bps = handoff_post_rate_cap(r.bytes, load.dst_descriptors[k], m_handoff);
      bytes += r.bytes;
    }
    double cap = 0;  // the rank's posting bound, all GPUs together (0: none)
    for (const TransferRequest& r : c.rs)
      cap = r.rate_cap_Bps > 0 && cap >= 0 ? cap + r.rate_cap_Bps : -1;
    if (from.nvlink_base >= 0) {
      // On one host: each piece of the re-shard is a GPU-to-GPU copy over NVLink from the prefill
      // GPU holding it into the decode GPU (Endpoint::PeerGpu: the sender's HBM and NVLink port
      // out, the receiver's NVLink port in and HBM), under its share of its decode GPU's posting
      // cap (the same descriptors, posted by the same worker thread).
      std::vector<TransferRequest> per_gpu = std::move(c.rs);
      c.rs.clear();
      for (const ReshardPiece& pc : reshard_pieces(m_spec.model, src, m_layout, lb)) {
        const TransferRequest& d = per_gpu.at(static_cast<std::size_t>(pc.dst));
        TransferRequest r = d;
        r.endpoint = Endpoint::PeerGpu;
        r.endpoint_index = from.nvlink_base + pc.src;
        r.bytes = d.bytes * pc.fraction;
        r.rate_cap_Bps = d.rate_cap_Bps * pc.fraction;
        if (r.bytes > 0) c.rs.push_back(r);
      }
    }
    rank.gpus->issue(c, std::vector<std::int64_t>(c.rs.size(), 1), CopyPath::Dma, 0);
    // The same bytes leave the prefill GPUs holding them through their NIC ports, shared there
    // with their other traffic (other decode nodes' pulls, stores to a remote tier): the pull
    // ends when both sides have moved them.
    const std::shared_ptr<CopyGroup> out =
        m_send_kv ? m_send_kv(s.req.id, load.src_bytes, std::max(cap, 0.0)) : nullptr;
    if (!c.g.finished) sc_core::wait(c.g.done);
    if (out && !out->g.finished) sc_core::wait(out->g.done);
  }
  return bytes;
}

}  // namespace kappasim
