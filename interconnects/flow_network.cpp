#include "interconnects/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kappasim {

namespace {
constexpr double kDoneFraction = 1e-9;       // remaining <= this × bytes counts as finished
constexpr double kTie = 1e-12;               // relative tolerance when comparing fill levels
constexpr std::size_t kFillMemoEntries = 8;  // groups of paths fill_alone() remembers
}  // namespace

FlowNetwork::FlowNetwork(double time_eps_s) : m_time_eps(time_eps_s) {
  if (!(time_eps_s >= 0) || !std::isfinite(time_eps_s))
    throw std::logic_error("FlowNetwork: time epsilon must be finite and >= 0");
}

FlowNetwork::ResourceId FlowNetwork::add_resource(std::string name, double capacity) {
  if (!(capacity > 0) || !std::isfinite(capacity))
    throw std::logic_error("FlowNetwork: resource '" + name + "' needs a finite capacity > 0");
  m_res.push_back(Resource{std::move(name), capacity});
  return static_cast<ResourceId>(m_res.size() - 1);
}

void FlowNetwork::set_capacity(double now, ResourceId r, double capacity) {
  check(r);
  if (!(capacity > 0) || !std::isfinite(capacity))
    throw std::logic_error("FlowNetwork: resource '" + m_res[static_cast<std::size_t>(r)].name +
                           "' needs a finite capacity > 0");
  if (m_res[static_cast<std::size_t>(r)].capacity == capacity) return;
  advance(now);
  m_res[static_cast<std::size_t>(r)].capacity = capacity;
  m_fill_memo.clear();  // its rates were for the old capacity
  m_fill_next = 0;
  m_fill_hit = 0;
  recompute();
}

FlowNetwork::Flow* FlowNetwork::find(FlowId id) {
  const auto end = m_flows.begin() + static_cast<std::ptrdiff_t>(m_live);
  const auto it =
      std::lower_bound(m_flows.begin(), end, id, [](const Flow& f, FlowId k) { return f.id < k; });
  return it != end && it->id == id ? &*it : nullptr;
}

const FlowNetwork::Flow* FlowNetwork::find(FlowId id) const {
  return const_cast<FlowNetwork*>(this)->find(id);
}

bool FlowNetwork::crosses(FlowId id, ResourceId r) const {
  const Flow* f = find(id);
  if (f == nullptr) return false;
  for (const Use& u : f->uses())
    if (u.resource == r) return true;
  return false;
}

void FlowNetwork::check(ResourceId r) const {
  if (r < 0 || static_cast<std::size_t>(r) >= m_res.size())
    throw std::out_of_range("FlowNetwork: no resource " + std::to_string(r));
}

double FlowNetwork::eps(double now) const {
  // The absolute precision of a double near `now` matters for long simulations.
  return std::max(m_time_eps, 16 * std::numeric_limits<double>::epsilon() * std::fabs(now));
}

double FlowNetwork::finish_time(const Flow& f) const {
  if (f.remaining <= kDoneFraction * f.bytes) return m_now;
  if (std::isinf(f.rate)) return m_now;
  if (!(f.rate > 0)) return kInf;
  return m_now + f.remaining / f.rate;
}

FlowNetwork::FlowId FlowNetwork::start(double now, const std::vector<Use>& path, double bytes,
                                       double rate_cap) {
  const FlowId id = start_deferred(now, path, bytes, rate_cap);
  settle();
  return id;
}

void FlowNetwork::merge_path(const std::vector<Use>& path, std::vector<Use>& merged) const {
  merged.clear();
  for (const Use& u : path) {
    check(u.resource);
    if (!(u.cost >= 0) || !std::isfinite(u.cost))
      throw std::logic_error("FlowNetwork::start: cost must be finite and >= 0");
    if (u.cost == 0) continue;
    auto it = std::find_if(merged.begin(), merged.end(),
                           [&](const Use& m) { return m.resource == u.resource; });
    if (it == merged.end())
      merged.push_back(u);
    else
      it->cost += u.cost;
  }
}

void FlowNetwork::check_start(double bytes, double rate_cap) {
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw std::logic_error("FlowNetwork::start: bytes must be finite and >= 0");
  if (!(rate_cap > 0)) throw std::logic_error("FlowNetwork::start: rate cap must be > 0");
}

FlowNetwork::Flow& FlowNetwork::next_slot(double bytes, double rate_cap) {
  check_start(bytes, rate_cap);
  // The first free slot: its vectors' buffers are a finished flow's (issue 24: no allocation).
  if (m_live == m_flows.size()) m_flows.emplace_back();
  return m_flows[m_live];
}

FlowNetwork::FlowId FlowNetwork::start_deferred(double now, const std::vector<Use>& path,
                                                double bytes, double rate_cap) {
  Flow& f = next_slot(bytes, rate_cap);
  // Merge repeated resources, drop zero costs; keep the order of first appearance.
  merge_path(path, f.path);
  f.shared = nullptr;
  return join(now, bytes, rate_cap);
}

FlowNetwork::FlowId FlowNetwork::start_deferred_merged(double now, const std::vector<Use>& merged,
                                                       double bytes, double rate_cap) {
  Flow& f = next_slot(bytes, rate_cap);
  f.path.assign(merged.begin(), merged.end());
  f.shared = nullptr;
  return join(now, bytes, rate_cap);
}

FlowNetwork::FlowId FlowNetwork::start_deferred_shared(double now, const std::vector<Use>& merged,
                                                       double bytes, double rate_cap) {
  Flow& f = next_slot(bytes, rate_cap);
  f.path.clear();  // its path is the caller's (no copy: issue 24)
  f.shared = &merged;
  return join(now, bytes, rate_cap);
}

FlowNetwork::FlowId FlowNetwork::join(double now, double bytes, double rate_cap) {
  advance(now);  // settles and progresses the flows before this one (m_live unchanged)
  const FlowId id = m_next_id++;
  Flow& f = m_flows[m_live++];
  for (const Use& u : f.uses()) ++m_res[u.resource].flows;
  f.id = id;
  f.bytes = f.remaining = bytes;
  f.rate_cap = rate_cap;
  f.rate = 0;
  f.bound = -1;
  f.bound_s.clear();
  f.leaving = false;
  if (!m_dirty) m_pending_from = id;
  m_dirty = true;
  return id;
}

void FlowNetwork::advance(double now) {
  if (now < m_now - eps(m_now)) throw std::logic_error("FlowNetwork::advance: time went backwards");
  if (now <= m_now) return;
  settle();  // rates of flows started by start_deferred() before time moves
  const double dt = now - m_now;
  for (std::size_t i = 0; i < m_live; ++i) {
    Flow& f = m_flows[i];
    // Time moving (until the flow's last byte, if that comes first), credited to its bottleneck.
    if (f.rate > 0 && std::isfinite(f.rate) && f.remaining > 0) {
      const double t = std::min(dt, f.remaining / f.rate);
      const int bound = f.bound;  // a structured binding cannot be captured in C++17 (clang)
      auto b = std::find_if(f.bound_s.begin(), f.bound_s.end(),
                            [bound](const auto& e) { return e.first == bound; });
      if (b == f.bound_s.end())
        f.bound_s.emplace_back(f.bound, t);
      else
        b->second += t;
    }
    double moved = std::isinf(f.rate) ? f.remaining : std::min(f.remaining, f.rate * dt);
    f.remaining -= moved;
    if (f.remaining < 0) f.remaining = 0;
    for (const Use& u : f.uses()) m_res[u.resource].carried += u.cost * moved;
  }
  for (std::size_t i = 0; i < m_loaded.size();) {  // each on its own: the order is no output
    Resource& r = m_res[static_cast<std::size_t>(m_loaded[i])];
    if (r.load > 0) {
      r.busy += dt;
      ++i;
    } else {
      r.listed = false;
      m_loaded[i] = m_loaded.back();
      m_loaded.pop_back();
    }
  }
  m_now = now;
}

double FlowNetwork::next_finish() const {
  if (m_dirty) throw std::logic_error("FlowNetwork::next_finish: settle() first");
  double t = kInf;
  for (std::size_t i = 0; i < m_live; ++i) t = std::min(t, finish_time(m_flows[i]));
  return t;
}

std::vector<FlowNetwork::FlowId> FlowNetwork::finish_due(double now) {
  std::vector<FlowId> done;
  finish_due(now, done);
  return done;
}

void FlowNetwork::finish_due(double now, std::vector<FlowId>& done) {
  finish_due(now, done, m_handed);
  // Filed by id for take_bottleneck_times (ids are never reused).
  for (std::size_t k = 0; k < done.size(); ++k) {
    const auto at = std::lower_bound(
        m_done_bounds.begin() + static_cast<std::ptrdiff_t>(m_done_head), m_done_bounds.end(),
        done[k], [](const auto& e, FlowId id) { return e.first < id; });
    m_done_bounds.emplace(at, done[k], std::move(m_handed[k]));
  }
}

void FlowNetwork::finish_due(double now, std::vector<FlowId>& done,
                             std::vector<BoundTimes>& bounds) {
  settle();
  done.clear();
  // Finish in time order, so flows that end before `now` release their share at the right time.
  while (m_live != 0) {
    const double t = next_finish();
    if (!(t <= now + eps(now))) break;
    const double at = std::min(std::max(t, m_now), std::max(now, m_now));
    advance(at);
    std::vector<std::size_t>& batch = m_scratch.batch;
    batch.clear();
    std::size_t earliest = 0;  // slot indices, in id order
    double earliest_t = kInf;
    const double due = at + eps(at);
    for (std::size_t i = 0; i < m_live; ++i) {
      const double ft = finish_time(m_flows[i]);
      if (ft <= due) batch.push_back(i);
      if (ft < earliest_t) {
        earliest_t = ft;
        earliest = i;
      }
    }
    if (batch.empty()) batch.push_back(earliest);  // rounding: never stall
    std::vector<double>& left_rates = m_scratch.rates_out;
    std::vector<ResourceId>& left_res = m_scratch.left;
    left_rates.clear();
    left_res.clear();
    for (std::size_t i : batch) {
      Flow& f = m_flows[i];
      const FlowId id = f.id;
      // Credit what rounding left, so carried totals equal bytes × cost exactly.
      for (const Use& u : f.uses()) {
        m_res[u.resource].carried += u.cost * f.remaining;
        --m_res[u.resource].flows;
        left_res.push_back(u.resource);
      }
      left_rates.push_back(f.rate);
      if (bounds.size() <= done.size()) bounds.emplace_back();
      bounds[done.size()].swap(f.bound_s);  // the flow's slot keeps the buffer handed in
      f.bound_s.clear();
      f.leaving = true;
      done.push_back(id);
    }
    // The finished flows' slots go after the active ones, whose order is kept.
    std::size_t w = 0;
    for (std::size_t i = 0; i < m_live; ++i) {
      if (m_flows[i].leaving) continue;
      if (w != i) std::swap(m_flows[w], m_flows[i]);
      ++w;
    }
    m_live = w;
    if (!leave_disjoint()) recompute();
  }
  advance(std::max(now, m_now));
  if (!std::is_sorted(done.begin(), done.end())) {  // batches in time order: ids may interleave
    std::vector<std::size_t>& order = m_scratch.batch;
    order.resize(done.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(),
              [&done](std::size_t a, std::size_t b) { return done[a] < done[b]; });
    std::vector<FlowId> ids(done.size());
    std::vector<BoundTimes> times(done.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
      ids[k] = done[order[k]];
      times[k].swap(bounds[order[k]]);
    }
    for (std::size_t k = 0; k < order.size(); ++k) bounds[k].swap(times[k]);
    done.swap(ids);
  }
}

void FlowNetwork::recompute() {
  ++m_recomputes;
  m_dirty = false;
  for (Resource& r : m_res) r.load = 0;
  std::vector<Flow*>& all = m_scratch.part;
  all.clear();
  for (std::size_t i = 0; i < m_live; ++i) all.push_back(&m_flows[i]);
  fill(all);
}

bool FlowNetwork::fill_one(Flow& f) {
  // fill() of one flow, step for step in its arithmetic (a compute step's HBM flow, alone on its
  // GPUs: issue 24): each resource's level is its capacity over the flow's cost (the weight of a
  // resource crossed once), the flow freezes at the lowest, or at its rate cap, at the first
  // round, its bottleneck the first resource at that level within the tie tolerance.
  const std::vector<Use>& path = f.uses();
  // A resource named twice (weights summed) is fill()'s. One pass marks each resource, another
  // clears the marks (issue 24: was every pair compared, 120 pairs for a TP-8 step's path); the
  // marks are fill()'s, all 0 between calls.
  std::vector<char>& once = m_scratch.seen;
  if (once.size() < m_res.size()) once.resize(m_res.size(), 0);
  std::size_t marked = 0;
  while (marked < path.size() && !once[static_cast<std::size_t>(path[marked].resource)])
    once[static_cast<std::size_t>(path[marked++].resource)] = 1;
  for (std::size_t i = 0; i < marked; ++i) once[static_cast<std::size_t>(path[i].resource)] = 0;
  if (marked < path.size()) return false;
  f.rate = 0;
  double level = kInf;
  for (const Use& u : path)
    level = std::min(level,
                     std::max(0.0, m_res[static_cast<std::size_t>(u.resource)].capacity) / u.cost);
  level = std::min(level, f.rate_cap);
  for (const Use& u : path) m_res[static_cast<std::size_t>(u.resource)].load = 0;
  if (std::isinf(level)) {
    f.rate = kInf;
  } else {
    const double tie = level * (1 + kTie);
    f.rate = std::min(level, f.rate_cap);
    f.bound = -1;
    for (const Use& u : path)
      if (std::max(0.0, m_res[static_cast<std::size_t>(u.resource)].capacity) / u.cost <= tie) {
        f.bound = u.resource;
        break;
      }
    for (const Use& u : path) m_res[static_cast<std::size_t>(u.resource)].load += u.cost * f.rate;
  }
  for (const Use& u : path) {
    Resource& res = m_res[static_cast<std::size_t>(u.resource)];
    if (res.load > 0 && !res.listed) {
      res.listed = true;
      m_loaded.push_back(u.resource);
    }
  }
  return true;
}

void FlowNetwork::fill(std::vector<Flow*>& flows) {
  if (flows.size() == 1 && fill_one(*flows.front())) return;
  // Scratch vectors are members, sized once: no allocation per recomputation (issue 24).
  const std::size_t n_res = m_res.size();
  std::vector<double>& residual = m_scratch.residual;
  std::vector<double>& weight = m_scratch.weight;
  residual.resize(n_res);
  weight.resize(n_res);
  std::vector<Flow*>& unfrozen = m_scratch.unfrozen;
  unfrozen.clear();
  for (Flow* f : flows) {
    f->rate = 0;
    unfrozen.push_back(f);
  }
  std::vector<char>& saturated = m_scratch.saturated;
  saturated.resize(n_res, 0);
  // The resources these flows cross: the rounds below visit only these (a topology may hold
  // many idle resources: CXL, NVMe, NVLink and NIC ports; issue 14). Same results: an idle
  // resource has weight 0 and never saturates.
  std::vector<std::size_t>& used = m_scratch.used;
  used.clear();
  {
    std::vector<char>& seen = m_scratch.seen;
    seen.resize(n_res, 0);
    // The first round's weights summed on the way, in the order the rounds sum them.
    for (const Flow* f : unfrozen)
      for (const Use& u : f->uses()) {
        const auto r = static_cast<std::size_t>(u.resource);
        if (!seen[r]) {
          seen[r] = 1;
          used.push_back(r);
          weight[r] = 0.0;
        }
        weight[r] += u.cost;
      }
    for (std::size_t r : used) {
      seen[r] = 0;
      saturated[r] = 0;
      residual[r] = m_res[r].capacity;
      m_res[r].load = 0;
    }
  }
  std::vector<Flow*>& still = m_scratch.still;
  bool summed = true;  // the first round's weights are
  while (!unfrozen.empty()) {
    if (!summed) {
      for (std::size_t r : used) weight[r] = 0.0;
      for (const Flow* f : unfrozen)
        for (const Use& u : f->uses()) weight[u.resource] += u.cost;
    }
    summed = false;
    // Each loaded resource's fill level, computed once a round (issue 24: was divided twice).
    std::vector<double>& at = m_scratch.level;
    at.resize(n_res);
    double level = kInf;
    for (std::size_t r : used)
      if (weight[r] > 0) {
        at[r] = std::max(0.0, residual[r]) / weight[r];
        level = std::min(level, at[r]);
      }
    for (const Flow* f : unfrozen) level = std::min(level, f->rate_cap);
    if (std::isinf(level)) {  // no constraint left: these flows move at infinite rate
      for (Flow* f : unfrozen) f->rate = kInf;
      break;
    }
    const double tie = level * (1 + kTie);
    for (std::size_t r : used) saturated[r] = weight[r] > 0 && at[r] <= tie;
    still.clear();
    for (Flow* f : unfrozen) {
      bool freeze = f->rate_cap <= tie;
      for (const Use& u : f->uses()) freeze = freeze || saturated[u.resource];
      if (!freeze) {
        still.push_back(f);
        continue;
      }
      f->rate = std::min(level, f->rate_cap);
      f->bound = -1;  // the rate cap, unless a saturated resource on the path froze it
      for (const Use& u : f->uses())
        if (saturated[u.resource]) {
          f->bound = u.resource;
          break;
        }
      for (const Use& u : f->uses()) residual[u.resource] -= u.cost * f->rate;
    }
    if (still.size() == unfrozen.size()) {  // cannot happen; guard against an endless loop
      for (Flow* f : still) f->rate = level;
      break;
    }
    unfrozen.swap(still);
  }
  for (const Flow* f : flows)
    if (std::isfinite(f->rate))
      for (const Use& u : f->uses()) m_res[u.resource].load += u.cost * f->rate;
  for (std::size_t r : used) {
    saturated[r] = 0;
    Resource& res = m_res[r];
    if (res.load > 0 && !res.listed) {
      res.listed = true;
      m_loaded.push_back(static_cast<ResourceId>(r));
    }
  }
}

namespace {
// Wider than progressive filling's kTie, so that rounding can never hide a tie.
constexpr double kWindow = 4 * kTie;
bool within_window(double x, double y) {
  return std::fabs(y - x) <= kWindow * std::max(std::fabs(x), std::fabs(y));
}
}  // namespace

bool FlowNetwork::near_tie(const std::vector<double>& a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a[i];
    if (!std::isfinite(x) || (i > 0 && a[i - 1] == x)) continue;
    for (double y : b)
      if (std::isfinite(y) && y != x && within_window(x, y)) return true;
  }
  return false;
}

bool FlowNetwork::alone_at_own_level(const Flow& f) const {
  // Progressive filling gives a flow alone on its resources the level min(capacity / cost, its
  // rate cap) unless another flow's level within the tie tolerance froze it first.
  double level = kInf;
  for (const Use& u : f.uses()) {
    const Resource& r = m_res[static_cast<std::size_t>(u.resource)];
    if (r.flows != 1) return false;
    level = std::min(level, std::max(0.0, r.capacity) / u.cost);
  }
  return std::min(level, f.rate_cap) == f.rate;
}

bool FlowNetwork::settle_disjoint() {
  // The flows started since the last settlement (ids from m_pending_from, in id order) join
  // without touching the others when no resource of theirs carries another flow: progressive
  // filling over all of them runs each group of flows that share no resource on its own, except
  // where two groups' fill levels lie within the tie tolerance (a flow then freezes at the other
  // group's level). Equal levels freeze together at the same value: the same bits.
  std::vector<Flow*>& joining = m_scratch.part;
  joining.clear();
  const auto end = m_flows.begin() + static_cast<std::ptrdiff_t>(m_live);
  for (auto it = std::lower_bound(m_flows.begin(), end, m_pending_from,
                                  [](const Flow&f, FlowId k) { return f.id < k; });
       it != end; ++it)
    joining.push_back(&*it);
  if (joining.empty()) return false;
  if (FillMemo* m = joining.size() > 1 ? shared_memo(joining) : nullptr) {
    // A group seen before on the same shared paths: alone when every resource it crosses
    // carries its flows only (issue 24: the memo's crossings instead of the paths' uses).
    for (const auto& [r, n] : m->crossings)
      if (m_res[r].flows != n) return false;
    apply_memo(*m, joining);
  } else if (!settle_alone(joining)) {
    return false;
  }
  std::vector<double>& in = m_scratch.rates_in;
  std::vector<double>& out = m_scratch.rates_out;
  in.clear();
  out.clear();
  for (const Flow* f : joining) out.push_back(f->rate);
  for (std::size_t i = 0; i < m_live && m_flows[i].id < m_pending_from; ++i)
    in.push_back(m_flows[i].rate);
  if (near_tie(out, in)) return false;  // recompute() overwrites what fill() set
  m_dirty = false;
  ++m_incremental;
  return true;
}

bool FlowNetwork::settle_alone(std::vector<Flow*>& joining) {
  std::vector<int>& mine = m_scratch.count;
  mine.resize(m_res.size(), 0);
  for (const Flow* f : joining)
    for (const Use& u : f->uses()) ++mine[static_cast<std::size_t>(u.resource)];
  // Each resource checked at its first visit and its count emptied there (later visits see 0).
  bool alone = true;
  for (const Flow* f : joining)
    for (const Use& u : f->uses()) {
      const auto r = static_cast<std::size_t>(u.resource);
      if (mine[r] == 0) continue;
      alone = alone && mine[r] == m_res[r].flows;
      mine[r] = 0;
    }
  if (!alone) return false;
  // Their rates alone. A resource's load is a sum over its flows alone: theirs.
  fill_alone(joining);
  return true;
}

FlowNetwork::FillMemo* FlowNetwork::shared_memo(const std::vector<Flow*>& flows) {
  for (const Flow* f : flows)
    if (f->shared == nullptr) return nullptr;
  return find_memo([&flows](const FillMemo& m) {
    if (m.shared.size() != flows.size()) return false;
    for (std::size_t i = 0; i < flows.size(); ++i)
      if (flows[i]->shared != m.shared[i] || flows[i]->rate_cap != m.caps[i]) return false;
    return true;
  });
}

void FlowNetwork::apply_memo(FillMemo& m, std::vector<Flow*>& flows) {
  for (std::size_t i = 0; i < flows.size(); ++i) {
    flows[i]->rate = m.rates[i];
    flows[i]->bound = m.bounds[i];
  }
  for (const auto& [r, load] : m.loads) {  // as fill() leaves them
    Resource& res = m_res[r];
    res.load = load;
    if (res.load > 0 && !res.listed) {
      res.listed = true;
      m_loaded.push_back(static_cast<ResourceId>(r));
    }
  }
}

void FlowNetwork::fill_alone(std::vector<Flow*>& flows) {
  if (flows.size() < 2) {  // one flow's filling is about as cheap as finding it (and a compute
    fill(flows);           // step's flow has a rate cap of its own each step)
    return;
  }
  if (FillMemo* m = find_memo([&flows](const FillMemo& m) {
        if (m.caps.size() != flows.size()) return false;
        bool same = true;
        std::size_t k = 0;
        for (std::size_t i = 0; i < flows.size() && same; ++i) {
          const Flow& f = *flows[i];
          same = f.rate_cap == m.caps[i] && f.uses().size() == m.lens[i];
          for (std::size_t j = 0; same && j < f.uses().size(); ++j, ++k)
            same = f.uses()[j].resource == m.uses[k].resource && f.uses()[j].cost == m.uses[k].cost;
        }
        return same;
      })) {
    apply_memo(*m, flows);
    return;
  }
  fill(flows);
  if (m_fill_memo.size() < kFillMemoEntries) m_fill_memo.emplace_back();
  FillMemo& m = m_fill_memo[m_fill_next];
  m_fill_next = (m_fill_next + 1) % kFillMemoEntries;
  m.shared.clear();
  m.crossings.clear();
  m.uses.clear();
  m.lens.clear();
  m.caps.clear();
  m.rates.clear();
  m.bounds.clear();
  m.loads.clear();
  for (const Flow* f : flows) {
    m.uses.insert(m.uses.end(), f->uses().begin(), f->uses().end());
    m.lens.push_back(f->uses().size());
    m.caps.push_back(f->rate_cap);
    m.rates.push_back(f->rate);
    m.bounds.push_back(f->bound);
  }
  for (std::size_t r : m_scratch.used) m.loads.emplace_back(r, m_res[r].load);  // fill()'s order
  bool shared = true;
  for (const Flow* f : flows) shared = shared && f->shared != nullptr;
  if (!shared) return;
  for (const Flow* f : flows) m.shared.push_back(f->shared);
  // The flows are alone on their resources (settle_disjoint): each one's count is its flows.
  for (const auto& [r, load] : m.loads) m.crossings.emplace_back(r, m_res[r].flows);
}

bool FlowNetwork::leave_disjoint() {
  // The flows just removed (their rates in m_scratch.rates_out, their resources in
  // m_scratch.left) leave the others' rates as they are when none of their resources carries a
  // remaining flow and every remaining flow whose rate lies within the tie tolerance of one of
  // theirs, equal ones included, is alone on its resources at its own level (a flow frozen at
  // another group's level has exactly that level; without that group its own would be a little
  // different).
  if (m_dirty) return false;
  // Their resources' loads go to 0 as they are checked (one pass, issue 24): should one still
  // carry a flow, or the tie check below fail, finish_due's full recomputation sets every load
  // afresh; nothing before it reads them.
  for (ResourceId r : m_scratch.left) {
    Resource& res = m_res[static_cast<std::size_t>(r)];
    if (res.flows != 0) return false;
    res.load = 0;
  }
  const std::vector<double>& out = m_scratch.rates_out;
  for (std::size_t i = 0; i < m_live; ++i) {
    const Flow& f = m_flows[i];
    if (!std::isfinite(f.rate)) continue;
    bool near = false;
    for (double x : out) near = near || (std::isfinite(x) && within_window(x, f.rate));
    if (near && !alone_at_own_level(f)) return false;
  }
  ++m_incremental;
  return true;
}

double FlowNetwork::rate(FlowId id) const {
  const Flow* f = find(id);
  return f == nullptr ? 0.0 : f->rate;
}

FlowNetwork::ResourceId FlowNetwork::bottleneck(FlowId id) const {
  const Flow* f = find(id);
  return f == nullptr ? -1 : f->bound;
}

// A finished flow's entry in m_done_bounds, or its end. Entries before m_done_head were taken.
auto FlowNetwork::done_bounds_of(FlowId id) -> decltype(m_done_bounds)::iterator {
  const auto it = std::lower_bound(m_done_bounds.begin() + static_cast<std::ptrdiff_t>(m_done_head),
                                   m_done_bounds.end(), id,
                                   [](const auto& e, FlowId k) { return e.first < k; });
  return it != m_done_bounds.end() && it->first == id ? it : m_done_bounds.end();
}

// Drops a taken entry: the first one left by moving the head past it (the fabric takes a
// batch's flows in id order, so no entry moves), any other by erasing it.
void FlowNetwork::drop_done_bounds(decltype(m_done_bounds)::iterator it) {
  if (it == m_done_bounds.begin() + static_cast<std::ptrdiff_t>(m_done_head)) {
    if (++m_done_head == m_done_bounds.size()) {
      m_done_bounds.clear();
      m_done_head = 0;
    }
  } else {
    m_done_bounds.erase(it);
  }
}

std::vector<std::pair<FlowNetwork::ResourceId, double>> FlowNetwork::take_bottleneck_times(
    FlowId id) {
  const auto it = done_bounds_of(id);
  if (it == m_done_bounds.end()) return {};
  auto out = std::move(it->second);
  it->second = {};
  drop_done_bounds(it);
  return out;
}

void FlowNetwork::take_bottleneck_times(FlowId id,
                                        std::vector<std::pair<ResourceId, double>>& out) {
  const auto it = done_bounds_of(id);
  if (it == m_done_bounds.end()) {
    out.clear();
    return;
  }
  out.swap(it->second);
  it->second = {};
  drop_done_bounds(it);
}

double FlowNetwork::remaining(FlowId id) const {
  const Flow* f = find(id);
  return f == nullptr ? 0.0 : f->remaining;
}

double FlowNetwork::carried(ResourceId r) const {
  check(r);
  return m_res[r].carried;
}
double FlowNetwork::busy_time(ResourceId r) const {
  check(r);
  return m_res[r].busy;
}
double FlowNetwork::load(ResourceId r) const {
  check(r);
  return m_res[r].load;
}
double FlowNetwork::capacity(ResourceId r) const {
  check(r);
  return m_res[r].capacity;
}
const std::string& FlowNetwork::name(ResourceId r) const {
  check(r);
  return m_res[r].name;
}

}  // namespace kappasim
