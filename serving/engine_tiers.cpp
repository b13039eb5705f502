// The serving engine's KV tiers below host DRAM (issue 14; docs/serving-engine.md "Tier
// hierarchy"): lookups through KvHierarchy (serving/kv_hierarchy), loads of lower-tier chunks
// as transfers whose other end is the tier's device (TransferRequest::endpoint Cxl / Nvme /
// Remote), issued in the same group as the step's DRAM copies by whichever load path strategy
// runs (so they share the fabric with the DRAM loads), stores per write policy, promotions,
// demotions and prefetch as transfers too.
//
// Mechanisms and their sources (LMCache 0.3.x StorageManager; kv-stack-mechanisms.md):
//  - a lower-tier chunk is read by DMA (CopyEngine): the drive's or the expander's reads, or
//    LocalDiskBackend's read into a host buffer then the copy up. NVMe without GDS goes through
//    a host bounce buffer (the fabric's Nvme path with direct = false), with GDS straight into
//    GPU memory (direct = serving.tiers.gds);
//  - each GPU's share of a level is spread over the level's devices: with at least as many
//    devices as GPUs, GPU k stripes over devices d with d mod tp = k; with fewer, GPU k uses
//    device k mod devices (each rank's LMCache instance has its own files / region);
//  - promotion (StorageManager.get writes a non-CPU hit back into LocalCPUBackend): an NVMe hit
//    read through the bounce buffer is already in DRAM (no copy); a CXL, remote or GDS hit is
//    copied from the GPU (where it just landed) to DRAM, asynchronously;
//  - write-through lower stores (batched_put's submits to the other backends, asynchronous in
//    LMCache) and write-back demotions are asynchronous writes to the level's devices.
// Ignored / charged approximately (the fabric carries only GPU-ended transfers): a DRAM->device
// copy (write-through from the DRAM copy, a demotion, a prefetch into DRAM) is issued as a
// transfer between a GPU of the replica and the device, so it also crosses that GPU's host link
// (an overcharge of that link by those bytes; the device and DRAM sides are right).
#include <algorithm>
#include <cmath>

#include "core/sim_runner.hpp"
#include "serving/engine.hpp"

namespace kappasim {

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

void ServingEngine::init_tiers() {
  const ServingSpec& sv = m_spec.serving;
  const TiersSpec& t = sv.tiers;
  std::vector<KvHierarchy::Level> lower;
  if (t.enabled()) {
    t.validate_against(m_spec.system, "serving.tiers");
    if (sv.kv_buffer.enabled())
      throw InputError(
          "serving.tiers: tiers below DRAM are not simulated together with serving.kv_buffer");
    if (t.cxl_capacity_bytes > 0) lower.push_back({TierLevel::Cxl, t.cxl_capacity_bytes});
    if (t.nvme_capacity_bytes > 0) lower.push_back({TierLevel::Nvme, t.nvme_capacity_bytes});
    if (t.remote_capacity_bytes > 0) lower.push_back({TierLevel::Remote, t.remote_capacity_bytes});
    for (const auto& lv : lower) {  // the back end carries each tier's transfers (one check)
      TransferRequest probe;
      probe.endpoint = endpoint_of_level(lv.level);
      m_link->check_carries(probe, "serving.tiers");
    }
  }
  m_hier =
      std::make_unique<KvHierarchy>(*m_tier, lower, m_tp * m_bkv_gpu, t.write, t.promote_on_hit);
  if (tiered()) m_stats.tier_io.assign(m_hier->levels(), EngineStats::TierIo{});
}

void ServingEngine::note_levels(std::uint64_t id, const std::vector<int>& at) {
  if (std::any_of(at.begin(), at.end(), [](int l) { return l > 0; })) m_chunk_levels[id] = at;
}

std::vector<int> ServingEngine::devices_for(std::size_t level, int gpu) const {
  int n = 1;
  switch (m_hier->level(level)) {
    case TierLevel::Cxl:
      n = m_spec.system.cxl_devices;
      break;
    case TierLevel::Nvme:
      n = m_spec.system.nvme_drives;
      break;
    default:
      n = 1;
  }
  if (n < 1) n = 1;
  std::vector<int> d;
  if (n >= m_tp) {
    for (int i = gpu; i < n; i += m_tp) d.push_back(i);
  } else {
    d.push_back(gpu % n);
  }
  return d;
}

void ServingEngine::split_step_levels(const std::vector<Sequence*>& first) {
  // Each loading sequence moves prompt tokens [R, R + K): every hit chunk's overlap with that
  // range is loaded from the level that served the chunk.
  m_step_level_tokens.assign(m_hier->levels(), 0);
  for (const Sequence* s : first) {
    const std::int64_t R = recompute_of(s->req.id), K = s->cached_tokens;
    const auto f = m_chunk_levels.find(s->req.id);
    if (f == m_chunk_levels.end()) {
      m_step_level_tokens[0] += static_cast<double>(K);
      continue;
    }
    const std::vector<int>& at = f->second;
    for (std::size_t j = 0; j < at.size(); ++j) {
      const std::int64_t a = static_cast<std::int64_t>(j) * m_chunk_tokens;
      const std::int64_t lo = std::max(a, R), hi = std::min(a + m_chunk_tokens, R + K);
      if (hi > lo)
        m_step_level_tokens[static_cast<std::size_t>(at[j])] += static_cast<double>(hi - lo);
    }
  }
}

void ServingEngine::plan_level(std::vector<TransferRequest>& rs, std::vector<std::int64_t>& units,
                               std::size_t level, double bytes_per_gpu, std::int64_t units_per_gpu,
                               Direction dir) const {
  const TierLevel l = m_hier->level(level);
  for (int k = 0; k < m_tp; ++k) {
    const std::vector<int> devs = devices_for(level, k);
    const double n = static_cast<double>(devs.size());
    for (int d : devs) {
      TransferRequest r;
      r.gpu = k;
      r.dir = dir;
      r.path = CopyPath::Dma;
      r.bytes = bytes_per_gpu / n;
      r.endpoint = endpoint_of_level(l);
      r.endpoint_index = d;
      r.direct = l == TierLevel::Nvme && m_spec.serving.tiers.gds;
      // One I/O per chunk shard (LocalDiskBackend: one file per chunk per rank).
      if (l == TierLevel::Nvme) r.io_bytes = m_chunk_bytes_gpu;
      rs.push_back(r);
      units.push_back(std::max<std::int64_t>(
          1, static_cast<std::int64_t>(std::ceil(static_cast<double>(units_per_gpu) / n))));
    }
  }
}

void ServingEngine::issue(CopyGroup& c, const std::vector<std::int64_t>& units, CopyPath dram_path,
                          double delay_s) {
  // c.rs is complete before the first start: the back end holds pointers into it.
  for (std::size_t i = 0; i < c.rs.size(); ++i) {
    TransferRequest& r = c.rs[i];
    const std::size_t k = static_cast<std::size_t>(r.gpu);
    if (r.endpoint == Endpoint::HostDram && dram_path == CopyPath::Kernel) {
      SmPool& sms = m_gpus[k]->sm_pool();
      m_copy_kernels[k]->start(r, units[i], c.g, delay_s, &sms, m_spec.system.gpu.sm_count);
    } else {
      m_dma[k]->start(r, units[i], c.g, delay_s);
    }
  }
}

bool ServingEngine::start_tiered(CopyGroup& c, double bytes_per_gpu, std::int64_t units,
                                 CopyPath path, double delay_s) {
  double total = 0, lower = 0;
  for (std::size_t i = 0; i < m_step_level_tokens.size(); ++i) {
    total += m_step_level_tokens[i];
    if (i > 0) lower += m_step_level_tokens[i];
  }
  if (!(lower > 0) || !(total > 0)) return false;
  c.rs.clear();
  std::vector<std::int64_t> u;
  for (std::size_t i = 0; i < m_step_level_tokens.size(); ++i) {
    const double f = m_step_level_tokens[i] / total;
    if (!(f > 0)) continue;
    const std::int64_t lu = static_cast<std::int64_t>(std::llround(static_cast<double>(units) * f));
    if (i == 0) {  // the DRAM part: as start_all issues it (the load path's own copy mechanism)
      for (int k = 0; k < m_tp; ++k) {
        TransferRequest r;
        r.gpu = k;
        r.dir = Direction::H2D;
        r.path = path;
        r.bytes = bytes_per_gpu * f;
        c.rs.push_back(r);
        u.push_back(path == CopyPath::Kernel ? lu : std::max<std::int64_t>(1, lu));
      }
    } else {
      plan_level(c.rs, u, i, bytes_per_gpu * f, lu, Direction::H2D);
    }
  }
  issue(c, u, path, delay_s);
  return true;
}

void ServingEngine::account_tier_loads(const CopyGroup& c) {
  std::vector<double> bytes(m_hier->levels(), 0), t0(m_hier->levels(), 0), t1(m_hier->levels(), 0);
  std::vector<bool> seen(m_hier->levels(), false);
  double g0 = 0, g1 = 0;
  bool any = false;
  for (const TransferRequest& r : c.rs) {
    if (r.dir != Direction::H2D || r.path == CopyPath::Local) return;  // a compute group or store
    std::size_t i = 0;
    for (std::size_t l = 0; l < m_hier->levels(); ++l)
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
  m_stats.tier_load_span_s += g1 - g0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (!seen[i]) continue;
    m_stats.tier_io[i].loaded_bytes_gpu += bytes[i] / m_tp;
    m_stats.tier_io[i].load_busy_s += t1[i] - t0[i];
  }
}

void ServingEngine::write_lower(const TierMoves& m) {
  // One asynchronous group of writes per level (write-through stores and demotions into it).
  for (std::size_t i = 1; i < m.placed.size(); ++i) {
    const std::size_t n = m.placed[i] + m.demoted[i];
    if (n == 0) continue;
    const double bytes = static_cast<double>(n) * m_chunk_bytes_gpu;
    m_stats.tier_io[i].stored_bytes_gpu += static_cast<double>(m.placed[i]) * m_chunk_bytes_gpu;
    m_stats.tier_io[i].demoted_bytes_gpu += static_cast<double>(m.demoted[i]) * m_chunk_bytes_gpu;
    m_stores.emplace_back();
    Store& st = m_stores.back();
    st.start_s = now();
    std::vector<std::int64_t> u;
    plan_level(st.c.rs, u, i, bytes, static_cast<std::int64_t>(n), Direction::D2H);
    issue(st.c, u, CopyPath::Dma, 0);
  }
}

void ServingEngine::promote_loaded(const std::vector<Sequence*>& first) {
  if (!m_hier->promote_on_hit()) return;
  // The step's loaded lower-tier chunks, deduplicated in order; those that came through a host
  // bounce buffer (NVMe without GDS) are in DRAM already; the others are copied GPU -> DRAM.
  std::vector<std::uint64_t> bounced, copied;
  std::vector<int> from_b, from_c;
  const bool gds = m_spec.serving.tiers.gds;
  for (const Sequence* s : first) {
    const auto f = m_chunk_levels.find(s->req.id);
    if (f == m_chunk_levels.end()) continue;
    const std::vector<std::uint64_t> keys = chunk_keys(s->req, m_chunk_tokens);
    const std::int64_t R = recompute_of(s->req.id);
    for (std::size_t j = 0; j < f->second.size() && j < keys.size(); ++j) {
      const int l = f->second[j];
      const std::int64_t end = static_cast<std::int64_t>(j + 1) * m_chunk_tokens;
      if (l <= 0 || end <= R || m_tier->contains(keys[j])) continue;  // not loaded, or up already
      const bool bounce = m_hier->level(static_cast<std::size_t>(l)) == TierLevel::Nvme && !gds;
      (bounce ? bounced : copied).push_back(keys[j]);
      (bounce ? from_b : from_c).push_back(l);
    }
  }
  const TierMoves mb = m_hier->promote(bounced, from_b);
  const TierMoves mc = m_hier->promote(copied, from_c);
  for (int l : from_b)  // landed in DRAM with the load through the bounce buffer (no copy)
    m_stats.tier_io[static_cast<std::size_t>(l)].promoted_bytes_gpu += m_chunk_bytes_gpu;
  if (mc.placed[0] > 0) {
    for (int l : from_c)
      m_stats.tier_io[static_cast<std::size_t>(l)].promoted_bytes_gpu += m_chunk_bytes_gpu;
    const double bytes = static_cast<double>(mc.placed[0]) * m_chunk_bytes_gpu;
    m_stores.emplace_back();
    Store& st = m_stores.back();
    st.start_s = now();
    start_all(st.c, bytes, static_cast<std::int64_t>(mc.placed[0]), Direction::D2H, CopyPath::Dma);
  }
  TierMoves dem = mb;  // write-back: DRAM's victims go down
  for (std::size_t i = 0; i < dem.placed.size(); ++i) {
    dem.placed[i] = 0;
    dem.demoted[i] += mc.demoted[i];
  }
  write_lower(dem);
}

// ---- prefetch (serving.tiers.prefetch) ----
bool ServingEngine::start_prefetch(std::uint64_t id, const std::vector<std::uint64_t>& keys) {
  const TiersSpec& t = m_spec.serving.tiers;
  if (!t.prefetch || !tiered()) return false;
  const auto f = m_chunk_levels.find(id);
  if (f == m_chunk_levels.end()) return false;
  auto p = std::make_unique<Prefetch>();
  std::vector<double> per_level(m_hier->levels(), 0);
  for (std::size_t j = 0; j < f->second.size() && j < keys.size(); ++j) {
    const int l = f->second[j];
    if (l <= 0) continue;
    p->keys.push_back(keys[j]);
    p->from.push_back(l);
    per_level[static_cast<std::size_t>(l)] += 1;
  }
  if (p->keys.empty()) return false;
  std::vector<std::int64_t> u;
  for (std::size_t i = 1; i < per_level.size(); ++i) {
    if (per_level[i] == 0) continue;
    m_stats.tier_io[i].prefetched_bytes_gpu += per_level[i] * m_chunk_bytes_gpu;
    plan_level(p->c.rs, u, i, per_level[i] * m_chunk_bytes_gpu,
               static_cast<std::int64_t>(per_level[i]), Direction::H2D);
  }
  issue(p->c, u, CopyPath::Dma, 0);
  Prefetch& ref = *p;
  m_prefetch.emplace(id, std::move(p));
  if (t.admit_while_prefetching) return false;  // enqueued now; its load waits for the chunks
  // Otherwise it joins the queue when its chunks are in DRAM.
  sc_core::sc_spawn([this, id, &ref]() {
    if (!ref.c.g.finished) sc_core::wait(ref.c.g.done);
    reap_prefetches();
    auto it = m_live.find(id);
    if (it == m_live.end()) return;
    try {
      m_sched->enqueue(it->second.seq.get(), now());
    } catch (const InputError&) {
      sim_fail(std::current_exception());
    }
    ref.enqueued = true;
    m_work.notify(sc_core::SC_ZERO_TIME);
  });
  return true;
}

void ServingEngine::reap_prefetches() {
  // A finished prefetch's chunks are in DRAM: placed there, and its request loads them from it.
  for (auto& [id, p] : m_prefetch) {
    if (!p->c.g.finished || p->keys.empty()) continue;
    const TierMoves m = m_hier->promote(p->keys, p->from, true);
    TierMoves dem = m;
    for (auto& x : dem.placed) x = 0;
    write_lower(dem);
    auto f = m_chunk_levels.find(id);
    if (f != m_chunk_levels.end())
      for (int& l : f->second) l = 0;
    p->keys.clear();
  }
}

void ServingEngine::wait_prefetch(const std::vector<Sequence*>& first) {
  // admit_while_prefetching: a request admitted before its prefetch landed waits for it here
  // (its load then reads DRAM); charged to the step's link wait.
  const double t0 = now();
  for (const Sequence* s : first) {
    const auto f = m_prefetch.find(s->req.id);
    if (f == m_prefetch.end()) continue;
    if (!f->second->c.g.finished) sc_core::wait(f->second->c.g.done);
  }
  reap_prefetches();
  for (const Sequence* s : first) m_prefetch.erase(s->req.id);
  m_step_time.load_wait_s += now() - t0;
}

}  // namespace kappasim
