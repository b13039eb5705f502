#include "serving/kv_store.hpp"

#include <algorithm>
#include <cmath>

#include "core/pooled_spawn.hpp"
#include "core/sim_runner.hpp"
#include "serving/sim_clock.hpp"
#include "serving/stack_profile.hpp"

namespace kappasim {

using sim_clock::now_s;

namespace {
Endpoint endpoint_of_level(TierLevel l) {
  switch (l) {
    case TierLevel::Dram:
      return Endpoint::HostDram;
    case TierLevel::Cxl:
      return Endpoint::Cxl;
    case TierLevel::Nvme:
      return Endpoint::Nvme;
    case TierLevel::Remote:
      return Endpoint::Remote;
  }
  return Endpoint::HostDram;
}
}  // namespace

KvStore::KvStore(const RunSpec& spec, const RankGpus& gpus, const LinkModel& link,
                 double kv_bytes_per_token_gpu, double dram_bytes, EngineStats& stats,
                 double bytes_weight, double time_weight, double share, Hooks hooks,
                 KvTier* shared_cxl)
    : m_spec(spec),
      m_gpus(gpus),
      m_stats(stats),
      m_weight(bytes_weight),
      m_time_weight(time_weight),
      m_hooks(std::move(hooks)) {
  const ServingSpec& sv = spec.serving;
  const int tp = gpus.tp();
  m_chunk_tokens = sv.tier_chunk_tokens();
  m_chunk_bytes_gpu = m_chunk_tokens * kv_bytes_per_token_gpu;
  m_dram = std::make_unique<KvTier>(m_chunk_tokens, dram_bytes, tp * kv_bytes_per_token_gpu);
  const TiersSpec& t = sv.tiers;
  std::vector<KvHierarchy::Level> lower;
  if (t.enabled()) {
    t.validate_against(spec.system, "serving.tiers");
    if (sv.kv_buffer.enabled())
      throw InputError(
          "serving.tiers: tiers below DRAM are not simulated together with serving.kv_buffer");
    // The levels' capacities are the replica's, split evenly over its ranks (as DRAM's).
    const auto part = [share](double b) { return share == 1 ? b : b * share; };
    if (t.cxl_capacity_bytes > 0)
      lower.push_back({TierLevel::Cxl, part(t.cxl_capacity_bytes), shared_cxl});
    if (t.nvme_capacity_bytes > 0) lower.push_back({TierLevel::Nvme, part(t.nvme_capacity_bytes)});
    if (t.remote_capacity_bytes > 0)
      lower.push_back({TierLevel::Remote, part(t.remote_capacity_bytes)});
    for (const auto& lv : lower) {  // the back end carries each level's transfers (one check)
      TransferRequest probe;
      probe.endpoint = endpoint_of_level(lv.level);
      link.check_carries(probe, "serving.tiers");
    }
  }
  m_hier = std::make_unique<KvHierarchy>(*m_dram, lower, tp * kv_bytes_per_token_gpu, t.write,
                                         t.promote_on_hit);
  if (tiered()) m_stats.tier_io.assign(m_hier->levels(), EngineStats::TierIo{});
  if (sv.kv_buffer.enabled()) {
    sv.kv_buffer.validate("serving.kv_buffer");
    m_buffer_Bps = kv_buffer_bandwidth(sv.kv_buffer, spec.system.gpu);
    // One buffer per GPU holding that GPU's shard of each chunk (per-GPU bytes per token).
    m_buffer = std::make_unique<KvTier>(m_chunk_tokens, sv.kv_buffer.capacity_bytes,
                                        kv_bytes_per_token_gpu);
  }
}

KvStore::~KvStore() = default;

std::size_t KvStore::lookup(RequestState& st, const std::vector<std::uint64_t>& keys) {
  const std::vector<int> at = m_hier->lookup(keys);  // DRAM alone: the tier's own lookup
  if (tiered() && std::any_of(at.begin(), at.end(), [](int l) { return l > 0; }))
    st.chunk_levels = at;
  return at.size();
}

bool KvStore::holding() const {
  if (m_spec.serving.tiers.admit_while_prefetching) return false;
  return std::any_of(m_prefetches.begin(), m_prefetches.end(),
                     [](const Prefetch& p) { return !p.enqueued; });
}

std::vector<int> KvStore::devices_for(std::size_t level, int k) const {
  int n = 1;
  switch (m_hier->level(level)) {
    case TierLevel::Cxl:
      n = m_spec.system.has_cxl_pool() ? 1 : m_spec.system.cxl_devices;  // a pool: one endpoint
      break;
    case TierLevel::Nvme:
      n = m_spec.system.nvme_drives;
      break;
    default:
      n = 1;
  }
  n = std::max(n, 1);
  const int tp = m_gpus.tp();
  std::vector<int> d;
  if (n >= tp) {
    for (int i = k % tp; i < n; i += tp) d.push_back(i);
  } else {
    d.push_back(k % n);
  }
  return d;
}

void KvStore::plan_level(std::vector<TransferRequest>& rs, std::vector<std::int64_t>& units,
                         std::size_t level, double bytes_per_gpu, std::int64_t units_per_gpu,
                         Direction dir) const {
  const TierLevel l = m_hier->level(level);
  for (std::size_t k = 0; k < m_gpus.size(); ++k) {
    const GpuUnit& u = m_gpus.at(k);
    const std::vector<int> devs = devices_for(level, static_cast<int>(k));
    const double n = static_cast<double>(devs.size());
    for (int d : devs) {
      TransferRequest r;
      r.gpu = u.fabric;
      r.dir = dir;
      r.path = CopyPath::Dma;
      r.bytes = (u.kv_share == 1 ? bytes_per_gpu : bytes_per_gpu * u.kv_share) / n;
      r.endpoint = endpoint_of_level(l);
      r.endpoint_index = d;
      r.direct = l == TierLevel::Nvme && m_spec.serving.tiers.gds;
      // One I/O per chunk shard (LocalDiskBackend: one file per chunk per rank).
      if (l == TierLevel::Nvme) {
        r.io_bytes = m_chunk_bytes_gpu * u.kv_share;
        // The reads the connector keeps in flight (0: the drive's queue depth).
        r.queue_depth = m_spec.serving.stack.nvme_read_queue_depth;
      }
      rs.push_back(r);
      units.push_back(std::max<std::int64_t>(
          1, static_cast<std::int64_t>(std::ceil(static_cast<double>(units_per_gpu) / n))));
    }
  }
}

void KvStore::begin_load(const std::vector<RequestState*>& first, TimeBreakdown& t) {
  if (!tiered()) return;
  // admit_while_prefetching: a request admitted before its prefetch landed waits for it here
  // (its load then reads DRAM); charged to the step's link wait.
  const double t0 = now_s();
  for (const RequestState* st : first)
    for (Prefetch& p : m_prefetches)
      if (p.st == st && !p.c.g.finished) sc_core::wait(p.c.g.done);
  reap_prefetches();
  for (const RequestState* st : first)
    m_prefetches.remove_if([st](const Prefetch& p) { return p.st == st; });
  t.load_wait_s += now_s() - t0;
  // Each loading sequence moves prompt tokens [R, R + K) (R: its load_start): every hit chunk's
  // overlap with that range is loaded from the level that served the chunk.
  m_step_level_tokens.assign(m_hier->levels(), 0);
  for (const RequestState* st : first) {
    const std::int64_t R = st->seq->load_start(), K = st->seq->cached_tokens;
    // Tokens of [lo, hi), or under hybrid its bytes in full-layer tokens (as split_loads).
    const auto count = [&](std::int64_t lo, std::int64_t hi) {
      if (!m_hybrid) return static_cast<double>(hi - lo);
      return m_hybrid->bytes(static_cast<double>(lo), static_cast<double>(hi),
                             static_cast<double>(R + K)) /
             m_hybrid->full_Bpt;
    };
    if (st->chunk_levels.empty()) {
      m_step_level_tokens[0] += count(R, R + K);
      continue;
    }
    for (std::size_t j = 0; j < st->chunk_levels.size(); ++j) {
      const std::int64_t a = static_cast<std::int64_t>(j) * m_chunk_tokens;
      const std::int64_t lo = std::max(a, R), hi = std::min(a + m_chunk_tokens, R + K);
      if (hi > lo)
        m_step_level_tokens[static_cast<std::size_t>(st->chunk_levels[j])] += count(lo, hi);
    }
  }
}

bool KvStore::plan_load(std::vector<TransferRequest>& rs, std::vector<std::int64_t>& u,
                        double bytes_per_gpu, std::int64_t units, CopyPath path) const {
  if (!tiered()) return false;
  double total = 0, lower = 0;
  for (std::size_t i = 0; i < m_step_level_tokens.size(); ++i) {
    total += m_step_level_tokens[i];
    if (i > 0) lower += m_step_level_tokens[i];
  }
  if (!(lower > 0) || !(total > 0)) return false;
  for (std::size_t i = 0; i < m_step_level_tokens.size(); ++i) {
    const double f = m_step_level_tokens[i] / total;
    if (!(f > 0)) continue;
    const std::int64_t lu = static_cast<std::int64_t>(std::llround(static_cast<double>(units) * f));
    if (i == 0) {  // the DRAM part: the load path's own copy mechanism
      m_gpus.plan_all(rs, bytes_per_gpu * f, Direction::H2D, path);
      u.resize(rs.size(), path == CopyPath::Kernel ? lu : std::max<std::int64_t>(1, lu));
    } else {
      plan_level(rs, u, i, bytes_per_gpu * f, lu, Direction::H2D);
    }
  }
  return true;
}

void KvStore::account_load(const CopyGroup& c) {
  if (!tiered()) return;
  const std::size_t n = m_hier->levels();
  std::vector<double> bytes(n, 0), t0(n, 0), t1(n, 0);
  std::vector<bool> seen(n, false);
  double g0 = 0, g1 = 0;
  bool any = false;
  for (const TransferRequest& r : c.rs) {
    if (r.dir != Direction::H2D || r.path == CopyPath::Local) return;  // a compute group or store
    if (!m_gpus.owns(r.gpu)) continue;  // another rank's of the step group
    std::size_t i = 0;
    for (std::size_t l = 0; l < n; ++l)
      if (endpoint_of_level(m_hier->level(l)) == r.endpoint) i = l;
    bytes[i] += r.bytes;
    t0[i] = seen[i] ? std::min(t0[i], r.start_s) : r.start_s;
    t1[i] = seen[i] ? std::max(t1[i], r.end_s) : r.end_s;
    seen[i] = true;
    g0 = any ? std::min(g0, r.start_s) : r.start_s;
    g1 = any ? std::max(g1, r.end_s) : r.end_s;
    any = true;
  }
  if (!any) return;
  m_stats.tier_load_span_s += wt(g1 - g0);
  const double gpus = static_cast<double>(m_gpus.tp());
  for (std::size_t i = 0; i < n; ++i) {
    if (!seen[i]) continue;
    m_stats.tier_io[i].loaded_bytes_gpu += w(bytes[i] / gpus);
    m_stats.tier_io[i].load_busy_s += wt(t1[i] - t0[i]);
  }
}

KvStore::InFlight& KvStore::start_write() {
  if (m_spare_writes.empty()) {
    m_writes.emplace_back();
  } else {  // a reaped one, as a new one (issue 24): its node, vectors and events reused
    m_writes.splice(m_writes.end(), m_spare_writes, m_spare_writes.begin());
    CopyGroup& c = m_writes.back().c;
    for (TransferGroup* g : {&c.g, &c.shards}) {
      g->done.cancel();  // what destroying it did: no notification left pending
      g->finished = false;
      g->end_s = 0;
      g->left = 0;
      g->on_finished = nullptr;
    }
    c.gather.clear();
    c.shards_end_s = -1;
    // c.rs keeps its members (their bottleneck buffers): the caller plans them again.
  }
  m_writes.back().start_s = now_s();
  return m_writes.back();
}

void KvStore::write_lower(const TierMoves& m) {
  // One asynchronous group of writes per level (write-through stores and demotions into it).
  for (std::size_t i = 1; i < m.placed.size(); ++i) {
    const std::size_t n = m.placed[i] + m.demoted[i];
    if (n == 0) continue;
    const double bytes = static_cast<double>(n) * m_chunk_bytes_gpu;
    m_stats.tier_io[i].stored_bytes_gpu += w(static_cast<double>(m.placed[i]) * m_chunk_bytes_gpu);
    m_stats.tier_io[i].demoted_bytes_gpu +=
        w(static_cast<double>(m.demoted[i]) * m_chunk_bytes_gpu);
    InFlight& w = start_write();
    std::vector<std::int64_t> u;
    w.c.rs.clear();
    plan_level(w.c.rs, u, i, bytes, static_cast<std::int64_t>(n), Direction::D2H);
    m_gpus.issue(w.c, u, CopyPath::Dma, 0);
  }
}

void KvStore::end_load(const std::vector<RequestState*>& first) {
  if (!tiered() || !m_hier->promote_on_hit()) return;
  // The step's loaded lower-tier chunks, deduplicated in order; those that came through a host
  // bounce buffer (NVMe without GDS) are in DRAM already; the others are copied GPU -> DRAM.
  std::vector<std::uint64_t> bounced, copied;
  std::vector<int> from_b, from_c;
  const bool gds = m_spec.serving.tiers.gds;
  for (RequestState* st : first) {
    if (st->chunk_levels.empty()) continue;
    // A P/D decode engine's reload (ServingEngine::relookup) may hit chunks past the prompt.
    std::vector<std::uint64_t> longer;
    if (st->chunk_levels.size() > keys_of(*st).size())
      longer = chunk_keys(st->seq->req, m_chunk_tokens,
                          static_cast<std::int64_t>(st->chunk_levels.size()) * m_chunk_tokens);
    const std::vector<std::uint64_t>& keys = longer.empty() ? keys_of(*st) : longer;
    const std::int64_t R = st->seq->load_start();
    for (std::size_t j = 0; j < st->chunk_levels.size() && j < keys.size(); ++j) {
      const int l = st->chunk_levels[j];
      const std::int64_t end = static_cast<std::int64_t>(j + 1) * m_chunk_tokens;
      if (l <= 0 || end <= R || m_dram->contains(keys[j])) continue;  // not loaded, or up already
      const bool bounce = m_hier->level(static_cast<std::size_t>(l)) == TierLevel::Nvme && !gds;
      (bounce ? bounced : copied).push_back(keys[j]);
      (bounce ? from_b : from_c).push_back(l);
    }
  }
  const TierMoves mb = m_hier->promote(bounced, from_b);
  const TierMoves mc = m_hier->promote(copied, from_c);
  for (int l : from_b)  // landed in DRAM with the load through the bounce buffer (no copy)
    m_stats.tier_io[static_cast<std::size_t>(l)].promoted_bytes_gpu += w(m_chunk_bytes_gpu);
  if (mc.placed[0] > 0) {
    for (int l : from_c)
      m_stats.tier_io[static_cast<std::size_t>(l)].promoted_bytes_gpu += w(m_chunk_bytes_gpu);
    const double bytes = static_cast<double>(mc.placed[0]) * m_chunk_bytes_gpu;
    m_gpus.start_all(start_write().c, bytes, static_cast<std::int64_t>(mc.placed[0]),
                     Direction::D2H, CopyPath::Dma);
  }
  TierMoves dem = mb;  // write-back: DRAM's victims go down
  for (std::size_t i = 0; i < dem.placed.size(); ++i) {
    dem.placed[i] = 0;
    dem.demoted[i] += mc.demoted[i];
  }
  write_lower(dem);
}

bool KvStore::prefetch(RequestState& st, const std::vector<std::uint64_t>& keys) {
  const TiersSpec& t = m_spec.serving.tiers;
  if (!t.prefetch || !tiered() || st.chunk_levels.empty()) return false;
  m_prefetches.emplace_back();  // in place: its TransferGroup does not move
  Prefetch& ref = m_prefetches.back();
  ref.st = &st;
  std::vector<double> per_level(m_hier->levels(), 0);
  for (std::size_t j = 0; j < st.chunk_levels.size() && j < keys.size(); ++j) {
    const int l = st.chunk_levels[j];
    if (l <= 0) continue;
    ref.keys.push_back(keys[j]);
    ref.from.push_back(l);
    per_level[static_cast<std::size_t>(l)] += 1;
  }
  if (ref.keys.empty()) {
    m_prefetches.pop_back();
    return false;
  }
  std::vector<std::int64_t> u;
  for (std::size_t i = 1; i < per_level.size(); ++i) {
    if (per_level[i] == 0) continue;
    m_stats.tier_io[i].prefetched_bytes_gpu += w(per_level[i] * m_chunk_bytes_gpu);
    plan_level(ref.c.rs, u, i, per_level[i] * m_chunk_bytes_gpu,
               static_cast<std::int64_t>(per_level[i]), Direction::H2D);
  }
  m_gpus.issue(ref.c, u, CopyPath::Dma, 0);
  if (t.admit_while_prefetching) return false;  // enqueued now; its load waits for the chunks
  // Otherwise it joins the queue when its chunks are in DRAM.
  spawn_pooled([this, &ref]() {
    if (!ref.c.g.finished) sc_core::wait(ref.c.g.done);
    reap_prefetches();
    ref.enqueued = true;
    m_hooks.ready(*ref.st);
  });
  return true;
}

void KvStore::reap_prefetches() {
  // A finished prefetch's chunks are in DRAM: placed there, and its request loads them from it.
  for (Prefetch& p : m_prefetches) {
    if (!p.c.g.finished || p.keys.empty()) continue;
    const TierMoves m = m_hier->promote(p.keys, p.from, true);
    TierMoves dem = m;
    for (auto& x : dem.placed) x = 0;
    write_lower(dem);
    for (int& l : p.st->chunk_levels) l = 0;
    p.keys.clear();
  }
}

CopyGroup* KvStore::store(const std::vector<RequestState*>& done,
                          const std::vector<RequestState*>& decoded) {
  const ServingSpec& sv = m_spec.serving;
  if ((done.empty() && decoded.empty()) || sv.effective_store() == StoreMode::None) return nullptr;
  // `requests`, who pays the stack's store_fixed. vLLM's OffloadingConnector stores full blocks
  // only and yields no store job for a request without a new one (_get_reqs_to_store): those
  // that store a block. LMCache's wait_for_save stores every saving request's tokens past its
  // saved prefix, the trailing partial chunk included (which the tier here, whole chunks only,
  // does not place; docs/serving-stacks.md): every request of the step's store.
  const bool full_blocks_only = sv.stack.family == StackFamily::VllmNative;
  std::int64_t stored = 0, requests = 0;
  // Through the hierarchy: DRAM's new chunks are this store's D2H copy; the lower levels'
  // (write-through, demotions) are written asynchronously.
  const auto place = [&](RequestState* st, const std::vector<std::uint64_t>& keys) {
    TierMoves& mv = m_moves;  // its vectors reused (issue 24)
    m_hier->store(keys, mv);
    const std::size_t n = mv.placed[0];
    if (tiered()) write_lower(mv);
    if (n > 0 || !full_blocks_only) ++requests;
    stored += static_cast<std::int64_t>(n);
    st->stored_tokens += static_cast<double>(n) * m_chunk_tokens;
  };
  for (RequestState* st : done) place(st, keys_of(*st));
  for (RequestState* st : decoded) {
    // The chunk this decode step filled (its KV now covers the prompt and the tokens generated
    // so far): [covered - C, covered), which holds generated tokens. A hybrid pool's chunks
    // carry the sliding window and the state of their end, which a decode chunk does not
    // (docs/accounting.md): not stored.
    const std::int64_t covered = st->seq->decode_kv_tokens();
    if (m_hybrid || covered % m_chunk_tokens != 0) continue;
    place(st, {generated_chunk_key(st->seq->req, m_chunk_tokens, covered / m_chunk_tokens - 1)});
  }
  if (stored == 0) return nullptr;
  const double bytes = static_cast<double>(stored) * m_chunk_bytes_gpu;
  m_stats.stored_bytes_gpu += w(bytes);
  // The stack's store software (fixed + one stream sync per chunk), then one DMA per chunk to
  // pinned host memory.
  const double software = stack_store_s(sv.stack, requests, stored);
  m_stats.stack.store_sw_s += wt(software);
  InFlight& w = start_write();
  m_gpus.start_all(w.c, bytes, stored, Direction::D2H, CopyPath::Dma, software);
  return &w.c;
}

void KvStore::reap() {
  while (!m_writes.empty() && m_writes.front().c.g.finished) {
    if (m_hooks.stored) m_hooks.stored(m_writes.front().c, m_writes.front().start_s);
    m_spare_writes.splice(m_spare_writes.end(), m_writes, m_writes.begin());  // start_write's
  }
}

const std::vector<std::uint64_t>& KvStore::keys_of(RequestState& st) const {
  if (st.tier_keys.empty()) {
    if (!m_spare_keys.empty()) {
      st.tier_keys.swap(m_spare_keys.back());
      m_spare_keys.pop_back();
    }
    chunk_keys(st.seq->req, m_chunk_tokens, -1, st.tier_keys);
  }
  return st.tier_keys;
}

void KvStore::finished(RequestState& st) {
  // A tier alone (no levels below it to demote into) never places this request's own chunks
  // again: forget them, so the tier's "ever placed" set stays bounded (issue 24).
  if (!tiered()) {
    const Request& r = st.seq->req;
    const std::int64_t tokens = std::max(r.prompt_tokens(), st.seq->decode_kv_tokens());
    if (tokens / m_chunk_tokens == r.prompt_tokens() / m_chunk_tokens && !st.tier_keys.empty()) {
      // No chunk of generated tokens: its own keys are a tail of the keys already computed.
      const auto n = static_cast<std::int64_t>(st.tier_keys.size());
      m_dram->forget(st.tier_keys, static_cast<std::size_t>(own_chunk_start(r, m_chunk_tokens, n)));
    } else {
      m_dram->forget(own_chunk_keys(r, m_chunk_tokens, tokens));
    }
  }
  if (!m_prefetches.empty())  // (remove_if builds and clears a list of its own every call)
    m_prefetches.remove_if([&st](const Prefetch& p) { return p.st == &st; });
  // Nothing reads its keys after this: their buffer serves a later request's.
  if (st.tier_keys.capacity() != 0 && m_spare_keys.size() < kSpareKeys) {
    m_spare_keys.push_back(std::move(st.tier_keys));
    st.tier_keys.clear();
  }
}

}  // namespace kappasim
