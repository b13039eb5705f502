// FlowNetwork: weighted max-min fair sharing by progressive filling. Expectations by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "interconnects/flow_network.hpp"

namespace kappasim {
namespace flow_network_test {
namespace {

using Use = FlowNetwork::Use;

TEST(FlowNetwork, OneFlowAloneTakesBytesOverCapacity) {
  FlowNetwork n;
  auto r = n.add_resource("link", 10.0);
  auto f = n.start(0.0, {{r, 1.0}}, 100.0);
  EXPECT_DOUBLE_EQ(n.rate(f), 10.0);
  EXPECT_DOUBLE_EQ(n.next_finish(), 10.0);
  EXPECT_TRUE(n.finish_due(9.999).empty());
  EXPECT_EQ(n.finish_due(10.0), std::vector<FlowNetwork::FlowId>{f});
  EXPECT_FALSE(n.active(f));
  EXPECT_TRUE(std::isinf(n.next_finish()));
  EXPECT_DOUBLE_EQ(n.carried(r), 100.0);
}

TEST(FlowNetwork, TwoFlowsShareOneResourceEqually) {
  FlowNetwork n;
  auto r = n.add_resource("link", 10.0);
  auto a = n.start(0.0, {{r, 1.0}}, 100.0);
  auto b = n.start(0.0, {{r, 1.0}}, 100.0);
  EXPECT_DOUBLE_EQ(n.rate(a), 5.0);
  EXPECT_DOUBLE_EQ(n.rate(b), 5.0);
  EXPECT_DOUBLE_EQ(n.next_finish(), 20.0);
  auto done = n.finish_due(20.0);
  EXPECT_EQ(done, (std::vector<FlowNetwork::FlowId>{a, b}));
}

TEST(FlowNetwork, CostTwoHalvesThePayloadRate) {
  FlowNetwork n;
  auto r = n.add_resource("link", 10.0);
  auto f = n.start(0.0, {{r, 2.0}}, 100.0);
  EXPECT_DOUBLE_EQ(n.rate(f), 5.0);
  EXPECT_DOUBLE_EQ(n.load(r), 10.0);
  n.finish_due(20.0);
  EXPECT_DOUBLE_EQ(n.carried(r), 200.0);  // 100 B × cost 2
}

TEST(FlowNetwork, RepeatedResourceCostsAdd) {
  FlowNetwork n;
  auto r = n.add_resource("dram", 12.0);
  auto f = n.start(0.0, {{r, 1.0}, {r, 2.0}}, 30.0);
  EXPECT_DOUBLE_EQ(n.rate(f), 4.0);  // 12 / (1 + 2)
}

TEST(FlowNetwork, MaxMinWithABottleneckElsewhere) {
  FlowNetwork n;
  auto r1 = n.add_resource("r1", 10.0);
  auto r2 = n.add_resource("r2", 2.0);
  auto a = n.start(0.0, {{r1, 1.0}}, 1000.0);
  auto b = n.start(0.0, {{r1, 1.0}, {r2, 1.0}}, 1000.0);
  EXPECT_DOUBLE_EQ(n.rate(b), 2.0);  // r2 saturates first (level 2 < 5)
  EXPECT_DOUBLE_EQ(n.rate(a), 8.0);  // A takes what r1 has left
}

TEST(FlowNetwork, WeightedSharingEqualisesPayloadRates) {
  // A costs 1, B costs 3 on a 12 units/s resource: equal payload rates x with 4x = 12.
  FlowNetwork n;
  auto r = n.add_resource("r", 12.0);
  auto a = n.start(0.0, {{r, 1.0}}, 100.0);
  auto b = n.start(0.0, {{r, 3.0}}, 100.0);
  EXPECT_DOUBLE_EQ(n.rate(a), 3.0);
  EXPECT_DOUBLE_EQ(n.rate(b), 3.0);
}

TEST(FlowNetwork, RateCapFreezesAFlowAndFreesTheRest) {
  FlowNetwork n;
  auto r = n.add_resource("r", 10.0);
  auto a = n.start(0.0, {{r, 1.0}}, 100.0, 3.0);
  EXPECT_DOUBLE_EQ(n.rate(a), 3.0);
  auto b = n.start(0.0, {{r, 1.0}}, 100.0);
  EXPECT_DOUBLE_EQ(n.rate(a), 3.0);
  EXPECT_DOUBLE_EQ(n.rate(b), 7.0);
}

TEST(FlowNetwork, FinishOrderAndTimesByHand) {
  // Cap 10: A (10 B) and B (30 B) at 5 each; A ends at 2 s; B's last 20 B then run at 10: 4 s.
  FlowNetwork n;
  auto r = n.add_resource("r", 10.0);
  auto a = n.start(0.0, {{r, 1.0}}, 10.0);
  auto b = n.start(0.0, {{r, 1.0}}, 30.0);
  EXPECT_DOUBLE_EQ(n.next_finish(), 2.0);
  EXPECT_EQ(n.finish_due(2.0), std::vector<FlowNetwork::FlowId>{a});
  EXPECT_DOUBLE_EQ(n.rate(b), 10.0);
  EXPECT_DOUBLE_EQ(n.remaining(b), 20.0);
  EXPECT_DOUBLE_EQ(n.next_finish(), 4.0);
  EXPECT_EQ(n.finish_due(4.0), std::vector<FlowNetwork::FlowId>{b});
  EXPECT_DOUBLE_EQ(n.carried(r), 40.0);
  EXPECT_DOUBLE_EQ(n.busy_time(r), 4.0);
}

TEST(FlowNetwork, StaggeredStart) {
  // A: 100 B from 0 at 10; at 5 s B (25 B) joins: both at 5; B ends at 10 s; A has 25 B left at
  // 10 → 12.5 s.
  FlowNetwork n;
  auto r = n.add_resource("r", 10.0);
  auto a = n.start(0.0, {{r, 1.0}}, 100.0);
  auto b = n.start(5.0, {{r, 1.0}}, 25.0);
  EXPECT_DOUBLE_EQ(n.remaining(a), 50.0);
  EXPECT_DOUBLE_EQ(n.next_finish(), 10.0);
  // One call past both finishes processes them in time order.
  auto done = n.finish_due(20.0);
  EXPECT_EQ(done, (std::vector<FlowNetwork::FlowId>{a, b}));
  EXPECT_DOUBLE_EQ(n.carried(r), 125.0);
  EXPECT_DOUBLE_EQ(n.busy_time(r), 12.5);
}

TEST(FlowNetwork, ZeroBytesAndUnconstrainedFlowsFinishAtOnce) {
  FlowNetwork n;
  auto r = n.add_resource("r", 10.0);
  auto a = n.start(1.0, {{r, 1.0}}, 0.0);
  auto b = n.start(1.0, {}, 50.0);
  EXPECT_DOUBLE_EQ(n.next_finish(), 1.0);
  EXPECT_EQ(n.finish_due(1.0), (std::vector<FlowNetwork::FlowId>{a, b}));
}

TEST(FlowNetwork, RejectsBadInput) {
  FlowNetwork n;
  EXPECT_THROW(n.add_resource("r", 0.0), std::logic_error);
  auto r = n.add_resource("r", 1.0);
  EXPECT_THROW(n.start(0.0, {{r + 1, 1.0}}, 1.0), std::out_of_range);
  EXPECT_THROW(n.start(0.0, {{r, -1.0}}, 1.0), std::logic_error);
  EXPECT_THROW(n.start(0.0, {{r, 1.0}}, -1.0), std::logic_error);
  n.start(5.0, {{r, 1.0}}, 1.0);
  EXPECT_THROW(n.advance(4.0), std::logic_error);
}

TEST(FlowNetwork, ManyRandomFlowsAllFinishAndConserveBytes) {
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  FlowNetwork n;
  const int R = 12;
  std::vector<double> cap(R);
  for (int i = 0; i < R; ++i) {
    cap[i] = 1e9 * (1 + 9 * u(rng));
    n.add_resource("r" + std::to_string(i), cap[i]);
  }
  struct Spec {
    double t, bytes, rate_cap;
    std::vector<Use> path;
  };
  std::vector<Spec> specs;
  std::vector<double> expect(R, 0.0);
  double last_start = 0;
  for (int k = 0; k < 1000; ++k) {
    Spec s;
    s.t = 1e-3 * u(rng);
    s.bytes = 1e3 + 1e6 * u(rng);
    s.rate_cap = u(rng) < 0.2 ? 1e8 * (1 + u(rng)) : FlowNetwork::kInf;
    const int hops = 1 + static_cast<int>(3 * u(rng));
    for (int h = 0; h < hops; ++h) {
      const int r = static_cast<int>(R * u(rng)) % R;
      const double c = 0.5 + 1.5 * u(rng);
      s.path.push_back({r, c});
      expect[r] += c * s.bytes;
    }
    last_start = std::max(last_start, s.t);
    specs.push_back(std::move(s));
  }
  std::sort(specs.begin(), specs.end(), [](const Spec& a, const Spec& b) { return a.t < b.t; });
  std::size_t next = 0, finished = 0;
  double now = 0;
  for (int guard = 0; guard < 100000 && finished < specs.size(); ++guard) {
    const double ts = next < specs.size() ? specs[next].t : FlowNetwork::kInf;
    const double tf = n.next_finish();
    if (ts <= tf) {
      now = ts;
      n.start(now, specs[next].path, specs[next].bytes, specs[next].rate_cap);
      ++next;
    } else {
      now = tf;
      finished += n.finish_due(now).size();
    }
  }
  ASSERT_EQ(finished, specs.size());
  EXPECT_EQ(n.active_count(), 0u);
  // Bytes sent == bytes received: every resource carried exactly Σ bytes × cost.
  double bound = 0;
  for (int r = 0; r < R; ++r) {
    EXPECT_NEAR(n.carried(r), expect[r], 1e-9 * expect[r]) << "resource " << r;
    bound = std::max(bound, expect[r] / cap[r]);
    EXPECT_LE(n.busy_time(r), now * (1 + 1e-12));
  }
  EXPECT_GE(now, bound * (1 - 1e-9));  // no resource can carry faster than its capacity
  EXPECT_GT(now, last_start);
}

// Issue 24: flows that share no resource with the others (a compute step's HBM flows alone on
// their GPUs) join and leave without a recomputation of everyone's rates.
TEST(FlowNetwork, FlowsAloneOnTheirResourcesNeedNoRecomputation) {
  FlowNetwork n;
  std::vector<FlowNetwork::ResourceId> hbm;
  for (int g = 0; g < 8; ++g) hbm.push_back(n.add_resource("hbm" + std::to_string(g), 4.0));
  std::vector<FlowNetwork::FlowId> ids;
  for (int g = 0; g < 8; ++g) ids.push_back(n.start_deferred(0.0, {{hbm[g], 2.0}}, 10.0 + g));
  n.settle();
  EXPECT_EQ(n.recomputations(), 0u);
  EXPECT_EQ(n.incremental_updates(), 1u);
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(n.rate(ids[g]), 2.0);  // capacity / cost
    EXPECT_EQ(n.load(hbm[g]), 4.0);
    EXPECT_EQ(n.bottleneck(ids[g]), hbm[g]);
  }
  // The first finishes at 10 / 2 = 5 s; the others keep their rates.
  EXPECT_EQ(n.finish_due(5.0), std::vector<FlowNetwork::FlowId>{ids[0]});
  EXPECT_EQ(n.recomputations(), 0u);
  EXPECT_EQ(n.load(hbm[0]), 0.0);
  EXPECT_EQ(n.rate(ids[1]), 2.0);
  // A flow crossing a busy resource is recomputed with everyone: the two share hbm1 at costs 2
  // and 1, so progressive filling gives both 4 / (2 + 1).
  auto shared = n.start(5.0, {{hbm[1], 1.0}}, 100.0);
  EXPECT_EQ(n.recomputations(), 1u);
  EXPECT_DOUBLE_EQ(n.rate(shared), 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(n.rate(ids[1]), 4.0 / 3.0);
}

// Progressive filling freezes every flow whose resource saturates within a relative 1e-12 of the
// current fill level, even across groups of flows that share nothing. A flow that joins or leaves
// alone on its resources keeps that rule: the near tie is settled by the full recomputation.
TEST(FlowNetwork, NearTiesAcrossDisjointFlowsFreezeTogetherAsInAFullRecomputation) {
  FlowNetwork n;
  const double c = 1.0 + 5e-13;  // within the tie tolerance of 1.0
  auto a = n.add_resource("a", 1.0);
  auto b = n.add_resource("b", c);
  auto fa = n.start(0.0, {{a, 1.0}}, 1.0);
  auto fb = n.start(0.0, {{b, 1.0}}, 10.0);
  EXPECT_EQ(n.rate(fa), 1.0);
  EXPECT_EQ(n.rate(fb), 1.0);  // frozen with fa at fa's level, not c
  EXPECT_EQ(n.recomputations(), 1u);
  // fa leaves: fb alone fills its resource.
  EXPECT_EQ(n.finish_due(1.0), std::vector<FlowNetwork::FlowId>{fa});
  EXPECT_EQ(n.rate(fb), c);
  EXPECT_EQ(n.recomputations(), 2u);
}

// Random flows on many resources, most of them alone: after every start and finish the rates,
// bottlenecks and loads are those of a network that recomputes everything every time.
TEST(FlowNetwork, DisjointUpdatesGiveTheFullRecomputationsBits) {
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // `full` also routes every flow through one resource of vast capacity: it never saturates (its
  // fill level is ~1e290), so the rates are the same, but no flow is ever alone there and every
  // change is a full recomputation.
  FlowNetwork inc, full;
  const int R = 40;
  for (int i = 0; i < R; ++i) {
    // A few capacities repeat exactly, a few differ by less than the tie tolerance.
    const double cap = i % 5 == 0 ? 1e9 : i % 5 == 1 ? 1e9 * (1 + 3e-13) : 1e9 * (1 + u(rng));
    inc.add_resource("r" + std::to_string(i), cap);
    full.add_resource("r" + std::to_string(i), cap);
  }
  const auto shared = full.add_resource("shared", 1e300);
  std::vector<FlowNetwork::FlowId> ids;
  double now = 0;
  for (int k = 0; k < 3000; ++k) {
    const double tf = inc.next_finish();
    const double ts = now + 1e-4 * u(rng);
    if (ts < tf) {
      now = ts;
      const int group = 1 + static_cast<int>(4 * u(rng));
      for (int m = 0; m < group; ++m) {
        std::vector<Use> path{{static_cast<int>(R * u(rng)) % R, u(rng) < 0.5 ? 1.0 : 2.0}};
        if (u(rng) < 0.2) path.push_back({static_cast<int>(R * u(rng)) % R, 1.0});
        const double bytes = 1e3 + 1e5 * u(rng);
        const double cap = u(rng) < 0.1 ? 5e8 : FlowNetwork::kInf;
        const auto id = inc.start_deferred(now, path, bytes, cap);
        path.push_back({shared, 1.0});
        ASSERT_EQ(full.start_deferred(now, path, bytes, cap), id);
        ids.push_back(id);
      }
      inc.settle();
      full.settle();
    } else {
      now = tf;
      ASSERT_EQ(inc.finish_due(now), full.finish_due(now));
    }
    ASSERT_EQ(inc.active_count(), full.active_count());
    for (auto id : ids) {
      if (!full.active(id)) continue;
      ASSERT_EQ(inc.rate(id), full.rate(id)) << "flow " << id << " step " << k;
      ASSERT_EQ(inc.bottleneck(id), full.bottleneck(id));
    }
    for (int r = 0; r < R; ++r) ASSERT_EQ(inc.load(r), full.load(r)) << "resource " << r;
  }
  EXPECT_GT(inc.incremental_updates(), 100u);  // the disjoint path was taken
  EXPECT_GT(inc.recomputations(), 100u);       // and so was the full one
  EXPECT_GT(full.recomputations(), inc.recomputations() + 100);
}

// Issue 24: a group of flows alone on their resources that starts again on the same paths (a
// step's KV stores, one per GPU) takes its rates from the first group's filling; a capacity
// change forgets them. By hand: two flows through a link of 10 units/s share it at 5 each; the
// same pair again: 5 each; the link set to 20 while idle: 10 each.
TEST(FlowNetwork, RepeatedGroupsTakeTheirRatesFromTheFirstFillingUntilACapacityChanges) {
  FlowNetwork n;
  const auto link = n.add_resource("link", 10);
  const auto a = n.add_resource("a", 100), b = n.add_resource("b", 100);
  double now = 0;
  const double finish[] = {2, 4, 5};  // 10 bytes at 5, at 5, at 10
  int round = 0;
  for (double cap : {10.0, 10.0, 20.0}) {
    if (cap != n.capacity(link)) n.set_capacity(now, link, cap);
    const auto x = n.start_deferred(now, {{link, 1}, {a, 1}}, 10);
    const auto y = n.start_deferred(now, {{link, 1}, {b, 1}}, 10);
    n.settle();
    EXPECT_EQ(n.rate(x), cap / 2);
    EXPECT_EQ(n.rate(y), cap / 2);
    EXPECT_EQ(n.bottleneck(x), link);
    EXPECT_EQ(n.load(link), cap);
    now = n.next_finish();
    EXPECT_DOUBLE_EQ(now, finish[round++]);
    EXPECT_EQ(n.finish_due(now).size(), 2u);
    EXPECT_EQ(n.load(link), 0.0);
  }
  EXPECT_EQ(n.recomputations(), 1u);  // set_capacity's; the groups joined on their own
}

// The same bits as the full recomputation when groups repeat (the memo answers most of them) and
// capacities change between them. `shared`: the groups start on paths the caller keeps
// (start_deferred_shared: the memo finds them by address), and now and then a background flow
// starts on one of their resources just before them, so that they are not alone.
void repeated_groups_give_the_full_recomputations_bits(bool shared) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  FlowNetwork inc, full;
  const int R = 6;
  for (int i = 0; i < R; ++i) {
    const double cap = 1e9 * (1 + u(rng));
    inc.add_resource("r" + std::to_string(i), cap);
    full.add_resource("r" + std::to_string(i), cap);
  }
  const auto extra = full.add_resource("shared", 1e300);
  // Three group templates: 2-4 flows over a few resources each, costs 1 or 2, some capped. The
  // paths merged (start_deferred_shared takes merged paths) and never changed after.
  std::vector<std::vector<std::pair<std::vector<Use>, double>>> templates;
  for (int t = 0; t < 3; ++t) {
    std::vector<std::pair<std::vector<Use>, double>> g;
    const int flows = 2 + t;
    for (int f = 0; f < flows; ++f) {
      std::vector<Use> path{{static_cast<int>(R * u(rng)) % R, u(rng) < 0.5 ? 1.0 : 2.0}};
      const int other = static_cast<int>(R * u(rng)) % R;
      if (other != path[0].resource) path.push_back({other, 1.0});
      g.emplace_back(path, u(rng) < 0.3 ? 4e8 : FlowNetwork::kInf);
    }
    templates.push_back(g);
  }
  double now = 0;
  std::vector<FlowNetwork::FlowId> ids;
  int crowded = 0;
  for (int k = 0; k < 600; ++k) {
    if (inc.active_count() == 0) {  // a group starts alone, from a template
      if (k % 5 == 0) {             // now and then a capacity changes
        const int r = static_cast<int>(R * u(rng)) % R;
        const double cap = 1e9 * (1 + u(rng));
        inc.set_capacity(now, r, cap);
        full.set_capacity(now, r, cap);
      }
      if (shared && u(rng) < 0.3) {  // a background flow on one resource: the group is not alone
        const std::vector<Use> bg{{static_cast<int>(R * u(rng)) % R, 1.0}};
        const double bytes = 1e3 + 1e5 * u(rng);
        ids.push_back(inc.start(now, bg, bytes));
        std::vector<Use> p = bg;
        p.push_back({extra, 1.0});
        ASSERT_EQ(full.start(now, p, bytes), ids.back());
        ++crowded;
      }
      for (const auto& [path, cap] : templates[static_cast<std::size_t>(3 * u(rng)) % 3]) {
        const double bytes = 1e3 + 1e5 * u(rng);
        ids.push_back(shared ? inc.start_deferred_shared(now, path, bytes, cap)
                             : inc.start_deferred(now, path, bytes, cap));
        std::vector<Use> p = path;
        p.push_back({extra, 1.0});
        ASSERT_EQ(full.start_deferred(now, p, bytes, cap), ids.back());
      }
      inc.settle();
      full.settle();
    } else {
      now = inc.next_finish();
      ASSERT_EQ(inc.finish_due(now), full.finish_due(now));
    }
    for (auto id : ids) {
      if (!full.active(id)) continue;
      ASSERT_EQ(inc.rate(id), full.rate(id)) << "flow " << id << " step " << k;
      ASSERT_EQ(inc.bottleneck(id), full.bottleneck(id));
    }
    for (int r = 0; r < R; ++r) ASSERT_EQ(inc.load(r), full.load(r)) << "resource " << r;
  }
  EXPECT_GT(inc.incremental_updates(), 200u);
  if (shared) {
    EXPECT_GT(crowded, 20);
  }
}

TEST(FlowNetwork, RepeatedGroupsGiveTheFullRecomputationsBits) {
  repeated_groups_give_the_full_recomputations_bits(false);
}

// Issue 24: groups on kept paths are found in the memo by address; the same bits still, crowded
// or alone.
TEST(FlowNetwork, RepeatedGroupsOnSharedPathsGiveTheFullRecomputationsBits) {
  repeated_groups_give_the_full_recomputations_bits(true);
}

// Issue 24: finished flows' bottleneck times are kept until taken, in any order. By hand: a link
// of 30 units/s, three flows of 10 bytes start at 0 and share it at 10 each: all three finish at
// 1 s, each bound by the link for 1 s. Taken middle first, then last, then first; each once. A
// fourth flow of 10 bytes alone at 1 s runs at 30: due at 1 + 1/3 s, bound for 1/3 s.
TEST(FlowNetwork, BottleneckTimesAreTakenOnceInAnyOrder) {
  FlowNetwork n;
  const auto link = n.add_resource("link", 30.0);
  const auto a = n.start(0.0, {{link, 1.0}}, 10.0);
  const auto b = n.start(0.0, {{link, 1.0}}, 10.0);
  const auto c = n.start(0.0, {{link, 1.0}}, 10.0);
  std::vector<FlowNetwork::FlowId> done;
  n.finish_due(1.0, done);
  EXPECT_EQ(done.size(), 3u);
  std::vector<std::pair<FlowNetwork::ResourceId, double>> times;
  for (const auto id : {b, c, a}) {
    n.take_bottleneck_times(id, times);
    ASSERT_EQ(times.size(), 1u) << "flow " << id;
    EXPECT_EQ(times[0].first, link);
    EXPECT_DOUBLE_EQ(times[0].second, 1.0);
  }
  for (const auto id : {a, b, c}) {
    n.take_bottleneck_times(id, times);  // handed over once
    EXPECT_TRUE(times.empty()) << "flow " << id;
  }
  const auto d = n.start(1.0, {{link, 1.0}}, 10.0);
  EXPECT_DOUBLE_EQ(n.next_finish(), 1.0 + 1.0 / 3);
  n.finish_due(n.next_finish(), done);
  EXPECT_EQ(done, (std::vector<FlowNetwork::FlowId>{d}));
  const auto t = n.take_bottleneck_times(d);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].first, link);
  EXPECT_DOUBLE_EQ(t[0].second, 1.0 / 3);
  EXPECT_TRUE(n.take_bottleneck_times(d).empty());
}

// Issue 24: finished flows' slots are reused by later flows (their vectors' buffers kept). A
// flow that starts after an earlier one finished in the middle of the id order still sits in id
// order, with its own path and bytes. By hand: link 10 units/s, flows of 10 (a), 40 (b), 10 (c)
// bytes start at 0: 10/3 each; a and c finish at 3 (10 bytes each), b has 30 left and runs at 10
// alone. d (20 bytes, cost 2 on the link, a second resource of 100 units/s at cost 1) starts at
// 4: b has 20 left; b and d share the link: b + 2d = 10, each flow's rate equal: 10/3 each.
// Both need 20 / (10/3) = 6 s: due at 10. The into-variants give what the returning ones do.
TEST(FlowNetwork, FinishedSlotsAreReusedInIdOrder) {
  FlowNetwork n;
  const auto link = n.add_resource("link", 10.0), other = n.add_resource("other", 100.0);
  const auto a = n.start(0.0, {{link, 1.0}}, 10.0);
  const auto b = n.start(0.0, {{link, 1.0}}, 40.0);
  const auto c = n.start(0.0, {{link, 1.0}}, 10.0);
  std::vector<FlowNetwork::FlowId> done;
  n.finish_due(3.0, done);
  EXPECT_EQ(done, (std::vector<FlowNetwork::FlowId>{a, c}));
  std::vector<std::pair<FlowNetwork::ResourceId, double>> times{{7, 7.0}};
  n.take_bottleneck_times(a, times);
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].first, link);
  EXPECT_DOUBLE_EQ(times[0].second, 3.0);
  n.take_bottleneck_times(a, times);  // handed over once
  EXPECT_TRUE(times.empty());
  EXPECT_EQ(n.active_count(), 1u);
  EXPECT_DOUBLE_EQ(n.rate(b), 10.0);
  const auto d = n.start(4.0, {{link, 1.0}, {other, 1.0}, {link, 1.0}}, 20.0);
  EXPECT_GT(d, c);
  EXPECT_EQ(n.active_count(), 2u);
  EXPECT_DOUBLE_EQ(n.remaining(b), 20.0);
  EXPECT_DOUBLE_EQ(n.remaining(d), 20.0);
  EXPECT_DOUBLE_EQ(n.rate(b), 10.0 / 3);
  EXPECT_DOUBLE_EQ(n.rate(d), 10.0 / 3);
  EXPECT_TRUE(n.crosses(d, other));
  EXPECT_FALSE(n.crosses(b, other));
  EXPECT_DOUBLE_EQ(n.next_finish(), 10.0);
  n.finish_due(10.0, done);
  EXPECT_EQ(done, (std::vector<FlowNetwork::FlowId>{b, d}));
  EXPECT_EQ(n.active_count(), 0u);
  EXPECT_DOUBLE_EQ(n.carried(link), 10.0 + 40.0 + 10.0 + 2 * 20.0);
  EXPECT_DOUBLE_EQ(n.carried(other), 20.0);
  EXPECT_EQ(n.take_bottleneck_times(c).size(), 1u);
}

// Issue 24: finish_due with `bounds` hands each finished flow's bottleneck times over beside its
// id, in id order even when a later flow finished first, and keeps none for
// take_bottleneck_times. By hand: a link of 10 units/s; a (100 bytes) and then b (10 bytes) start
// at 0 and share it at 5 each; b is done at 2 s, a has 90 left and runs alone at 10: done at
// 11 s, bound by the link all along. One call at 20 s finishes b first, then a. A second round
// (c, 10 bytes alone: 1 s) reuses the handed-back vectors, whatever they held.
TEST(FlowNetwork, FinishDueHandsBottleneckTimesOverInIdOrder) {
  FlowNetwork n;
  const auto link = n.add_resource("link", 10.0);
  const auto a = n.start(0.0, {{link, 1.0}}, 100.0);
  const auto b = n.start(0.0, {{link, 1.0}}, 10.0);
  std::vector<FlowNetwork::FlowId> done;
  std::vector<FlowNetwork::BoundTimes> bounds;
  n.finish_due(20.0, done, bounds);
  ASSERT_EQ(done, (std::vector<FlowNetwork::FlowId>{a, b}));
  ASSERT_GE(bounds.size(), 2u);
  ASSERT_EQ(bounds[0].size(), 1u);
  EXPECT_EQ(bounds[0][0].first, link);
  EXPECT_DOUBLE_EQ(bounds[0][0].second, 11.0);
  ASSERT_EQ(bounds[1].size(), 1u);
  EXPECT_EQ(bounds[1][0].first, link);
  EXPECT_DOUBLE_EQ(bounds[1][0].second, 2.0);
  EXPECT_TRUE(n.take_bottleneck_times(a).empty());  // handed over already
  EXPECT_TRUE(n.take_bottleneck_times(b).empty());
  bounds[0] = {{7, 7.0}, {8, 8.0}};  // what a taker leaves in a vector it hands back
  const auto c = n.start(20.0, {{link, 1.0}}, 10.0);
  n.finish_due(21.0, done, bounds);
  ASSERT_EQ(done, (std::vector<FlowNetwork::FlowId>{c}));
  ASSERT_EQ(bounds[0].size(), 1u);
  EXPECT_EQ(bounds[0][0].first, link);
  EXPECT_DOUBLE_EQ(bounds[0][0].second, 1.0);
}

}  // namespace
}  // namespace flow_network_test
}  // namespace kappasim
