// The fluid (flow-level) model of data movement: resources with a capacity (units per second)
// and flows that each consume `cost` units of every resource on their path per payload byte.
// Rates are weighted max-min fair, found by progressive filling: all unfrozen flows rise
// together; a resource saturates when Σ cost·rate reaches its capacity and freezes the flows that
// cross it; a flow that reaches its own rate cap freezes there. Rates change only when the set
// of flows changes (start, finish), so a bulk transfer costs two rate recomputations and no
// per-byte or per-packet work.
//
// Pure C++ (no SystemC): systems/flow_fabric drives it from simulated time.
// Deterministic: flows are kept and reported in ascending id order, resources in insertion order.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace kappasim {

class FlowNetwork {
 public:
  using ResourceId = int;
  using FlowId = std::uint64_t;
  struct Use {
    ResourceId resource;
    double cost;  // resource units consumed per payload byte (>= 0)
  };
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  // time_eps_s: a flow whose finish time is within this of `now` counts as finished (the
  // SystemC wrapper passes its time resolution, so a rounded event time never strands a flow).
  explicit FlowNetwork(double time_eps_s = 1e-12);

  ResourceId add_resource(std::string name, double capacity);  // units per second (> 0)
  // Issue 25: a capacity that changes at `now` (a resource shared with another network, whose
  // share an arbiter sets): progresses every flow to `now`, then recomputes the rates.
  void set_capacity(double now, ResourceId r, double capacity);
  // Whether active flow `id` uses resource r.
  bool crosses(FlowId id, ResourceId r) const;

  // Starts a flow of `bytes` payload at `now` (progresses every other flow to `now` first).
  // Uses naming the same resource twice are merged (costs added). A flow with no positive-cost
  // use and no rate cap moves at infinite rate: it is due at `now`.
  FlowId start(double now, const std::vector<Use>& path, double bytes, double rate_cap = kInf);
  // start() without the rate recomputation, for several flows that start at the same `now`:
  // call settle() after the last (issue 24: one recomputation instead of one per flow, same
  // rates, since the rates are a function of the set of active flows alone). Every other call
  // settles first by itself.
  FlowId start_deferred(double now, const std::vector<Use>& path, double bytes,
                        double rate_cap = kInf);
  // A path as start() keeps it: repeated resources merged (costs added), zero costs dropped,
  // in order of first appearance; std::logic_error for a bad resource or cost.
  void merge_path(const std::vector<Use>& path, std::vector<Use>& merged) const;
  // start_deferred() of a path merge_path() gave (issue 24: a caller that starts many flows on
  // one path merges it once).
  FlowId start_deferred_merged(double now, const std::vector<Use>& merged, double bytes,
                               double rate_cap = kInf);
  // The same for a merged path that the caller keeps, unchanged, for the network's lifetime (the
  // flow fabric's host routes): flows started on such paths are known by the paths' addresses,
  // so a group of them that starts again on the same paths is found in the memo without
  // comparing the paths (issue 24).
  FlowId start_deferred_shared(double now, const std::vector<Use>& merged, double bytes,
                               double rate_cap = kInf);
  void settle() {
    if (m_dirty && !settle_disjoint()) recompute();
  }
  // Progresses every flow at its current rate up to `now` (>= the last time seen).
  void advance(double now);
  // Absolute time of the earliest finish; +inf when no flow is active.
  double next_finish() const;
  // Progresses to `now`, removes the flows finished by then and returns them (ascending id);
  // rates are recomputed when any finished.
  std::vector<FlowId> finish_due(double now);
  // The same into `done` (cleared first): no vector per call (issue 24).
  void finish_due(double now, std::vector<FlowId>& done);
  // Seconds a flow moved with each resource as its bottleneck (-1: its rate cap), in order of
  // first appearance.
  using BoundTimes = std::vector<std::pair<ResourceId, double>>;
  // The same, each finished flow's bottleneck times handed over in `bounds`, parallel to `done`
  // (bounds[k] is done[k]'s; `bounds` is grown to done's size, never shrunk, and its vectors are
  // swapped with the flows' buffers, which a later flow reuses): nothing is kept for
  // take_bottleneck_times (issue 24: the flow fabric takes every finished flow's at once; they
  // were filed by id and looked up again: 2.7% of a 10,000-request Vidur run's simulation
  // thread).
  void finish_due(double now, std::vector<FlowId>& done, std::vector<BoundTimes>& bounds);

  double rate(FlowId id) const;  // payload bytes/s; 0 for a flow that is not active
  bool active(FlowId id) const { return find(id) != nullptr; }
  std::size_t active_count() const { return m_live; }
  double remaining(FlowId id) const;  // payload bytes left; 0 when not active

  double carried(ResourceId r) const;    // units carried so far
  double busy_time(ResourceId r) const;  // seconds during which some flow loaded it
  double load(ResourceId r) const;       // units/s right now (Σ cost·rate)
  double capacity(ResourceId r) const;
  const std::string& name(ResourceId r) const;
  std::size_t resources() const { return m_res.size(); }
  double now() const { return m_now; }
  // Rate recomputations done so far (each costs O(flows × path length × rounds)): the full
  // ones, over every active flow. incremental_updates(): changes of the flow set settled without
  // one (see "Disjoint changes" below).
  std::uint64_t recomputations() const { return m_recomputes; }
  std::uint64_t incremental_updates() const { return m_incremental; }

  // ---- bottlenecks (issue 12 item 10) ----
  // The resource that froze an active flow's rate in the last progressive filling (the first
  // saturated resource on its path), or -1 when its own rate cap (or nothing) set it.
  ResourceId bottleneck(FlowId id) const;
  // For a finished flow: the seconds it moved with each resource as its bottleneck (-1: its rate
  // cap), in order of first appearance. Handed over once (then forgotten); empty for a flow that
  // is unknown, still active, already taken, or finished by the finish_due overload with
  // `bounds` (which hands them over itself).
  std::vector<std::pair<ResourceId, double>> take_bottleneck_times(FlowId id);
  // The same into `out` (its buffer swapped with the network's). Empty when not known.
  void take_bottleneck_times(FlowId id, std::vector<std::pair<ResourceId, double>>& out);

 private:
  struct Resource {
    std::string name;
    double capacity;
    double carried = 0;
    double busy = 0;
    double load = 0;
    int flows = 0;        // active flows crossing it (started ones included before settle())
    bool listed = false;  // in m_loaded
  };
  struct Flow {
    FlowId id = 0;
    std::vector<Use> path;  // its own merged path (empty when `shared` holds it)
    double bytes;
    double remaining;
    double rate_cap;
    double rate = 0;
    ResourceId bound = -1;                               // bottleneck() of this flow
    std::vector<std::pair<ResourceId, double>> bound_s;  // seconds moved per bottleneck
    bool leaving = false;                                // finish_due: in this batch
    const std::vector<Use>* shared = nullptr;            // start_deferred_shared's path
    // The flow's merged path: its own (`path`), or the caller's kept one.
    const std::vector<Use>& uses() const { return shared ? *shared : path; }
  };
  // std::logic_error unless bytes is finite and >= 0 and rate_cap > 0 (a start's arguments).
  static void check_start(double bytes, double rate_cap);
  // The slot a starting flow takes (m_flows[m_live], made when none is free), its arguments
  // checked (check_start).
  Flow& next_slot(double bytes, double rate_cap);
  // start_deferred's common part: the flow in slot m_live (its path set) joins at `now`.
  FlowId join(double now, double bytes, double rate_cap);
  // The active flow `id`, or nullptr (binary search: m_flows is in ascending id order).
  Flow* find(FlowId id);
  const Flow* find(FlowId id) const;
  void check(ResourceId r) const;
  void recompute();
  // Progressive filling over `flows` alone (id order), on the resources they cross: their
  // rates, bottlenecks, and those resources' loads. recompute() is fill() over every flow.
  void fill(std::vector<Flow*>& flows);
  // fill() of one flow whose path crosses each resource once, without the rounds' vectors;
  // false (nothing done) when a resource repeats.
  bool fill_one(Flow& f);
  // Disjoint changes (issue 24): flows that share no resource with the others (a compute step's
  // HBM flows alone on their GPUs) join or leave without a recomputation of the others when
  // no fill level of theirs lies within progressive filling's tie tolerance of another's
  // (equal levels allowed when joining; when leaving, only for a flow alone on its resources at
  // its own level). Then the full recomputation gives the same bits: false when it must run.
  bool settle_disjoint();
  // settle_disjoint's check that the joining flows are alone on their resources, then their
  // rates (fill_alone); false, nothing set, when they are not alone.
  bool settle_alone(std::vector<Flow*>& joining);
  // fill() of flows alone on their resources depends on nothing but their paths, their rate caps
  // and those resources' capacities: a group of flows that starts again on the same paths (a
  // step's KV stores, one per GPU, every step) gets the rates, bottlenecks and loads the first
  // one computed (issue 24: the same bits without the progressive filling). fill_alone() is
  // fill() through that memo; set_capacity() empties it.
  void fill_alone(std::vector<Flow*>& flows);
  struct FillMemo {
    // The flows' shared paths (start_deferred_shared), when every one had one, else empty; and
    // then every resource they cross with the number of their paths that cross it.
    std::vector<const std::vector<Use>*> shared;
    std::vector<std::pair<std::size_t, int>> crossings;
    std::vector<Use> uses;           // the flows' paths, one after another
    std::vector<std::size_t> lens;   // each flow's path length
    std::vector<double> caps;        // each flow's rate cap
    std::vector<double> rates;       // what fill() gave: each flow's rate and bottleneck,
    std::vector<ResourceId> bounds;  //   and the loads of the resources they cross, in the
    std::vector<std::pair<std::size_t, double>> loads;  // order fill() visited them
  };
  std::vector<FillMemo> m_fill_memo;
  std::size_t m_fill_next = 0;  // the entry a miss replaces next
  std::size_t m_fill_hit = 0;   // the entry the last hit found
  // The first memo entry `same` accepts, the one that matched last tried first (a run's groups
  // come back in turn: issue 24), or nullptr; a match becomes the one tried first next time.
  template <class Same>
  FillMemo* find_memo(Same same) {
    for (std::size_t e = 0; e < m_fill_memo.size(); ++e) {
      const std::size_t at = e == 0 ? m_fill_hit : (e == m_fill_hit ? 0 : e);
      if (at < m_fill_memo.size() && same(m_fill_memo[at])) {
        m_fill_hit = at;
        return &m_fill_memo[at];
      }
    }
    return nullptr;
  }
  // The memo entry of `flows` by their shared paths and rate caps (every flow started by
  // start_deferred_shared), or nullptr.
  FillMemo* shared_memo(const std::vector<Flow*>& flows);
  // Sets the flows' rates and bottlenecks and their resources' loads from memo entry m.
  void apply_memo(FillMemo& m, std::vector<Flow*>& flows);
  bool leave_disjoint();
  // Whether some rate in `a` lies within the tie tolerance of a different rate in `b`.
  static bool near_tie(const std::vector<double>& a, const std::vector<double>& b);
  // Whether `f` is alone on its resources, at the rate progressive filling gives it alone.
  bool alone_at_own_level(const Flow& f) const;
  double eps(double now) const;
  double finish_time(const Flow& f) const;

  std::vector<Resource> m_res;
  // Every resource with load > 0 (and some whose load has dropped to 0 since, dropped at the
  // next advance()): advance() credits busy time to these alone (issue 24: it visited every
  // resource of the topology, a third of its time in an expert-parallel sweep).
  std::vector<ResourceId> m_loaded;
  // The active flows in ascending id order are m_flows[0, m_live); the slots after them are
  // finished flows' storage, kept so that a new flow reuses their vectors' buffers (issue 24:
  // was a std::map, a node and a path vector allocated per flow).
  std::vector<Flow> m_flows;
  std::size_t m_live = 0;
  FlowId m_next_id = 1;
  double m_now = 0;
  double m_time_eps;
  std::uint64_t m_recomputes = 0;
  std::uint64_t m_incremental = 0;
  bool m_dirty = false;       // flows started by start_deferred() since the last recompute()
  FlowId m_pending_from = 0;  // while m_dirty: the first of them (ids ascend)
  // Finished flows' bottleneck times not yet taken, by ascending id: a vector, not a map (no
  // node per flow; the fabric takes each right after finish_due, so it stays short).
  std::vector<std::pair<FlowId, BoundTimes>> m_done_bounds;
  std::size_t m_done_head = 0;       // m_done_bounds' entries before it were taken (issue 24)
  std::vector<BoundTimes> m_handed;  // finish_due(now, done)'s bounds, filed in m_done_bounds
  decltype(m_done_bounds)::iterator done_bounds_of(FlowId id);
  void drop_done_bounds(decltype(m_done_bounds)::iterator it);
  struct Scratch {  // recompute()'s working vectors, kept between calls (issue 24)
    std::vector<double> residual, weight, level;
    std::vector<char> saturated, seen;  // seen: fill()'s and fill_one's marks, all 0 between
    std::vector<std::size_t> used;
    std::vector<Flow*> unfrozen, still, part;
    std::vector<double> rates_in, rates_out;
    std::vector<ResourceId> left;
    std::vector<int> count;
    std::vector<std::size_t> batch;  // finish_due: slot indices
  } m_scratch;
};

}  // namespace kappasim
