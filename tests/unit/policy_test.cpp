// Scheduler policies and routers as registered implementations (serving/scheduler_policy.hpp,
// serving/router_policy.hpp, core/registry.hpp): the registries list by name, an unknown name is
// an InputError with the valid names and a suggestion, and the new shortest_load policy and the
// three routers decide as their files say, on hand-built queues and hand-built cluster views.
// Every expected order is worked out by hand in the comments.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "serving/paged_kv.hpp"
#include "serving/router_policy.hpp"
#include "serving/scheduler.hpp"
#include "serving/serving_spec.hpp"
#include "tests/cli/cli_util.hpp"

namespace kappasim {
namespace policy_test {
namespace {

Sequence seq(std::uint64_t id, std::int64_t cached, std::int64_t compute) {
  Request r;
  r.id = id;
  r.prefix_tokens = cached;
  r.new_tokens = compute;
  return make_sequence(r, cached);
}

std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

// ---- registries ------------------------------------------------------------------------------

TEST(PolicyRegistry, ListsEverySchedulerPolicyAndRouterByName) {
  EXPECT_EQ(scheduler_policies().names(),
            (std::vector<std::string>{"fair", "fifo", "shortest_load", "utilization"}));
  std::vector<std::string> choices;
  for (const auto& [name, p] : policy_names()) {
    choices.emplace_back(name);
    EXPECT_EQ(policy_name(p), std::string(name));
  }
  EXPECT_EQ(choices, scheduler_policies().names());  // serving.policy accepts exactly these
  EXPECT_EQ(routers().names(),
            (std::vector<std::string>{"cache_aware", "dp_balance", "kappa_aware", "kv_overlap",
                                      "least_loaded", "prefix_scorer", "round_robin",
                                      "weighted_round_robin"}));
  for (const auto* e : scheduler_policies().entries()) EXPECT_NE(e->summary, "");
  // The constants that predate the registry name registered policies.
  for (Policy p : {Policy::Fifo, Policy::UtilizationAware, Policy::Fair})
    EXPECT_NE(scheduler_policies().find(p.name), nullptr) << p;
  for (RouterKind r : {RouterKind::RoundRobin, RouterKind::LeastLoaded, RouterKind::KappaAware})
    EXPECT_NE(routers().find(r.name), nullptr) << r;
}

TEST(PolicyRegistry, UnknownNameListsTheValidOnesAndSuggests) {
  const std::string e = input_error_of([] {
    Scheduler s(SchedulerConfig{1, 1, true, Policy{"fifoo"}, 5});
  });
  EXPECT_NE(e.find("serving.policy: unknown scheduler policy 'fifoo'; did you mean 'fifo'?"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("(expected one of fair, fifo, shortest_load, utilization)"), std::string::npos)
      << e;
  const std::string r = input_error_of([] { make_router(RouterKind{"least_loded"}); });
  EXPECT_NE(r.find("cluster.router: unknown router 'least_loded'; did you mean 'least_loaded'?"),
            std::string::npos)
      << r;
  // Through the config layer, as a user meets it.
  const std::string c = input_error_of(
      [] { read_config<ServingSpec>(parse_yaml("policy: shortest_laod\n", "s.yaml"), "serving"); });
  EXPECT_NE(c.find("s.yaml:1:9"), std::string::npos) << c;
  EXPECT_NE(c.find("did you mean \"shortest_load\""), std::string::npos) << c;
  const ServingSpec ok =
      read_config<ServingSpec>(parse_yaml("policy: shortest_load\n", "s.yaml"), "serving");
  EXPECT_EQ(ok.policy, Policy{"shortest_load"});
}

TEST(PolicyRegistry, DuplicateOrEmptyRegistrationIsAProgrammingError) {
  Registry<SchedulerPolicy> reg("test policy");
  const auto make = []() -> std::unique_ptr<SchedulerPolicy> { return nullptr; };
  reg.add("a", "first", make);
  EXPECT_THROW(reg.add("a", "again", make), std::logic_error);
  EXPECT_THROW(reg.add("", "empty", make), std::logic_error);
  EXPECT_THROW(reg.add("b", "no factory", nullptr), std::logic_error);
  EXPECT_EQ(reg.names(), std::vector<std::string>{"a"});
}

// ---- shortest_load ---------------------------------------------------------------------------

// Queue in arrival order: A (K 8,000), B (K 256), C (K 2,000), D (K 256), 100 compute tokens
// each, max_num_seqs 2, a pool that holds all of them (1000 blocks × 16 tokens).
// Load order: B and D (256, tie → arrival order B then D), C (2,000), A (8,000).
// Step 1 admits B, D (the seats are then full); A and C are passed over (D arrived after them).
// Step 2 admits C, A. fifo would admit A, B and then C, D.
TEST(ShortestLoad, AdmitsFewestCachedTokensFirstTiesInArrivalOrder) {
  Sequence a = seq(1, 8000, 100), b = seq(2, 256, 100), c = seq(3, 2000, 100), d = seq(4, 256, 100);
  PagedKv kv(1000, 16);
  SchedulerConfig cfg;
  cfg.max_num_seqs = 2;
  cfg.policy = Policy{"shortest_load"};
  Scheduler s(cfg);
  for (Sequence* q : {&a, &b, &c, &d}) s.enqueue(q, 0);
  StepPlan p = s.plan(0, kv);
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_EQ(p.items[0].seq, &b);
  EXPECT_EQ(p.items[1].seq, &d);
  EXPECT_EQ(p.load_tokens, 256 + 256);
  EXPECT_EQ(a.credit, 1);
  EXPECT_EQ(c.credit, 1);
  EXPECT_EQ(b.credit, 0);
  s.complete(p, 1, kv);  // B and D finish (100 tokens each, in budget)
  EXPECT_EQ(s.take_finished().size(), 2u);
  p = s.plan(1, kv);
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_EQ(p.items[0].seq, &c);
  EXPECT_EQ(p.items[1].seq, &a);
  EXPECT_EQ(a.credit, 1);  // admitted with C: passed over only in step 1
  EXPECT_EQ(s.waiting(), 0u);
}

// A pool of 100 blocks × 16 tokens. P (K 0, T 1,200: 75 blocks), Q (K 256, T 400: 41 blocks),
// R (K 300, T 50: 22 blocks). Load order P, Q, R: P takes 75 blocks, Q needs 41 of the 25 left
// and is skipped, R needs 22 and is admitted: first-fit in load order, like utilization.
TEST(ShortestLoad, SkipsOneThatDoesNotFitAndAdmitsTheNext) {
  Sequence p1 = seq(1, 0, 1200), q = seq(2, 256, 400), r = seq(3, 300, 50);
  PagedKv kv(100, 16);
  SchedulerConfig cfg;
  cfg.policy = Policy{"shortest_load"};
  Scheduler s(cfg);
  for (Sequence* x : {&p1, &q, &r}) s.enqueue(x, 0);
  const StepPlan p = s.plan(0, kv);
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_EQ(p.items[0].seq, &p1);
  EXPECT_EQ(p.items[1].seq, &r);
  EXPECT_EQ(kv.used_blocks(), 75 + 22);
  EXPECT_EQ(s.waiting(), 1u);
  EXPECT_EQ(q.credit, 1);  // R arrived after Q and went ahead
}

// With equal cached tokens shortest_load is fifo's order (the stable tie-break), though it still
// skips what does not fit where fifo stops.
TEST(ShortestLoad, EqualLoadsKeepArrivalOrder) {
  std::vector<Sequence> v;
  for (std::uint64_t i = 0; i < 5; ++i) v.push_back(seq(i + 1, 512, 100));
  PagedKv kv(1000, 16);
  SchedulerConfig cfg;
  cfg.max_num_seqs = 3;
  cfg.policy = Policy{"shortest_load"};
  Scheduler s(cfg);
  for (auto& x : v) s.enqueue(&x, 0);
  const StepPlan p = s.plan(0, kv);
  ASSERT_EQ(p.items.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(p.items[i].seq, &v[i]);
}

// ---- routers ---------------------------------------------------------------------------------

// A hand-built cluster of three nodes.
struct FakeView : ClusterView {
  std::vector<std::size_t> load, queued;
  std::vector<double> eta;
  std::vector<NodeCache> caches;  // empty: nothing cached, no KV in use
  std::vector<double> caps;       // empty: equal nodes
  std::size_t nodes() const override { return load.size(); }
  std::size_t outstanding(std::size_t i) const override { return load.at(i); }
  std::size_t waiting(std::size_t i) const override { return queued.at(i); }
  double estimated_completion_s(std::size_t i, const Request&) const override { return eta.at(i); }
  NodeCache cache(std::size_t i, const Request&) const override {
    return caches.empty() ? NodeCache{} : caches.at(i);
  }
  double capacity(std::size_t i) const override { return caps.empty() ? 1.0 : caps.at(i); }
};

TEST(Routers, DecideAsDocumented) {
  FakeView v;
  v.load = {3, 1, 1};
  v.queued = {0, 1, 1};
  v.eta = {0.5, 0.7, 0.2};
  const Request r;
  auto rr = make_router(RouterKind::RoundRobin);
  std::vector<std::size_t> seen;
  for (int i = 0; i < 4; ++i) seen.push_back(rr->choose(r, v));
  EXPECT_EQ(seen, (std::vector<std::size_t>{0, 1, 2, 0}));  // whatever the load
  // Fewest outstanding: nodes 1 and 2 tie at 1 → the lower index.
  EXPECT_EQ(make_router(RouterKind::LeastLoaded)->choose(r, v), 1u);
  // Earliest estimated completion: node 2 (0.2 s); a tie goes to the lower index.
  EXPECT_EQ(make_router(RouterKind::KappaAware)->choose(r, v), 2u);
  v.eta = {0.2, 0.7, 0.2};
  EXPECT_EQ(make_router(RouterKind::KappaAware)->choose(r, v), 0u);
  // vLLM's DP balancer, waiting x 4 + running: node 0 scores 0 x 4 + 3 = 3, nodes 1 and 2
  // score 1 x 4 + 0 = 4, so node 0, the most loaded by count, wins.
  EXPECT_EQ(make_router(RouterKind{"dp_balance"})->choose(r, v), 0u);
}

// Two 8-GPU nodes and a 2-GPU node of one GPU kind (section 8.5's pool): nginx's smooth
// weighted round robin, worked by hand for weights 8, 8, 2 (sum 18). Credits after adding the
// weights, pick (first maximum), then minus 18: (8,8,2) → 0 → (-10,8,2); (-2,16,4) → 1 →
// (-2,-2,4); (6,6,6) → 0 → (-12,6,6); (-4,14,8) → 1 → (-4,-4,8); (4,4,10) → 2 → (4,4,-8); ...
// Over 9 picks (half the period): 4, 4 and 1 — shares 8/18, 8/18 and 2/18, whatever the load.
TEST(Routers, WeightedRoundRobinSharesArrivalsByCapacity) {
  FakeView v;
  v.load = {0, 0, 50};  // load is not read
  v.queued = {0, 0, 0};
  v.eta = {9, 9, 0};
  v.caps = {8, 8, 2};
  const Request r;
  auto wrr = make_router(RouterKind{"weighted_round_robin"});
  std::vector<std::size_t> seen;
  for (int i = 0; i < 5; ++i) seen.push_back(wrr->choose(r, v));
  EXPECT_EQ(seen, (std::vector<std::size_t>{0, 1, 0, 1, 2}));
  std::vector<int> count(3, 0);
  for (int i = 0; i < 18 * 10 - 5; ++i) ++count[wrr->choose(r, v)];
  for (std::size_t i : seen) ++count[i];
  EXPECT_EQ(count, (std::vector<int>{80, 80, 20}));
  // Equal capacities: plain round robin.
  FakeView eq;
  eq.load = {0, 0, 0};
  eq.queued = {0, 0, 0};
  eq.eta = {0, 0, 0};
  auto w2 = make_router(RouterKind{"weighted_round_robin"});
  seen.clear();
  for (int i = 0; i < 4; ++i) seen.push_back(w2->choose(r, eq));
  EXPECT_EQ(seen, (std::vector<std::size_t>{0, 1, 2, 0}));
}

TEST(Routers, TheCacheAwareRoutersDecideAsTheirSourcesDefine) {
  // A 1,000-token prompt; three nodes. Node 0 holds 900 of its tokens but is busy (2,000
  // prompt tokens to prefill, 60,000 KV tokens in use of 100,000, 4 waiting); node 1 holds 200
  // and is idle (0 waiting, 10,000 KV tokens used); node 2 holds nothing, idle, emptiest store.
  Request r;
  r.new_tokens = 1000;
  FakeView v;
  v.load = {10, 2, 2};
  v.queued = {4, 0, 0};
  v.eta = {0, 0, 0};
  v.caches = {
      {900, 2000, 60000, 100000, 5e9}, {200, 0, 10000, 100000, 2e9}, {0, 0, 10000, 100000, 1e9}};
  // Dynamo, cost = 1 x (pending + 1000 - cached) + (kv used + 1000):
  //   node 0: 2000 + 100 + 61000 = 63,100; node 1: 0 + 800 + 11000 = 11,800;
  //   node 2: 0 + 1000 + 11000 = 12,000 -> node 1.
  EXPECT_EQ(make_router(RouterKind{"kv_overlap"})->choose(r, v), 1u);
  // llm-d, 3 x prefix + 2 x queue + 2 x free KV, queue score (4 - q) / (4 - 0):
  //   node 0: 3 x 0.9 + 2 x 0 + 2 x 0.4 = 3.5; node 1: 0.6 + 2 + 1.8 = 4.4;
  //   node 2: 0 + 2 + 1.8 = 3.8 -> node 1.
  EXPECT_EQ(make_router(RouterKind{"prefix_scorer"})->choose(r, v), 1u);
  // SGLang: loads 10, 2, 2 differ by 8 <= 64, balanced; the best match 0.9 > 0.3 -> node 0.
  EXPECT_EQ(make_router(RouterKind{"cache_aware"})->choose(r, v), 0u);
  // Imbalanced (100 - 2 > 64 and 100 > 1.5 x 2): the least loaded, node 1 (tie with 2: lower).
  v.load = {100, 2, 2};
  EXPECT_EQ(make_router(RouterKind{"cache_aware"})->choose(r, v), 1u);
  // Balanced, but no match above 0.3 (0.25, 0.2, 0): the emptiest store, node 2.
  v.load = {10, 2, 2};
  v.caches[0].cached_tokens = 250;
  EXPECT_EQ(make_router(RouterKind{"cache_aware"})->choose(r, v), 2u);
  // Dynamo with the cached prefix on an idle node: node 0 idle and holding 900 wins
  // (0 + 100 + 1000 + 1000 = 2,100 vs node 1's 11,800).
  v.caches[0] = {900, 0, 1000, 100000, 5e9};
  EXPECT_EQ(make_router(RouterKind{"kv_overlap"})->choose(r, v), 0u);
}

// `kappasim presets policies` lists the registries (the binary's own, so a policy file the
// linker dropped would be missing here), one row per name, by name within each key.
TEST(PolicyRegistry, PresetsPoliciesListsTheRegistries) {
  const auto dir = kappasim::test::fresh_dir("policies");
  const kappasim::test::Result r =
      kappasim::test::run_shell(KAPPASIM_BIN, "presets policies", dir / "stderr.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> rows;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 13u) << r.out;  // header + 4 policies + 8 routers
  const std::vector<std::string> names = {"fair",          "fifo",        "shortest_load",
                                          "utilization",   "cache_aware", "dp_balance",
                                          "kappa_aware",   "kv_overlap",  "least_loaded",
                                          "prefix_scorer", "round_robin", "weighted_round_robin"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(rows[i + 1].rfind(i < 4 ? "serving.policy" : "cluster.router", 0), 0u) << rows[i + 1];
    EXPECT_NE(rows[i + 1].find(" " + names[i] + " "), std::string::npos) << rows[i + 1];
  }
}

}  // namespace
}  // namespace policy_test
}  // namespace kappasim
