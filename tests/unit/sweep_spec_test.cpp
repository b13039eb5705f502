// Sweep specs (sweeps/sweep_spec, sweeps/sweep_results): parsing and its errors, expansion
// order, seeds (checked against an independent FNV-1a + SplitMix64 written here from the
// documented formula), shell quoting, merging and reading results back.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/config.hpp"
#include "sweeps/sweep_results.hpp"
#include "sweeps/sweep_spec.hpp"

namespace kappasim::sweep {
namespace sweep_spec_test {
namespace {

SweepSpec parse(const std::string& yaml, bool quick = false) {
  return parse_sweep_spec(parse_yaml(yaml, "spec.yaml"), ".", quick, nullptr);
}

std::string error_of(const std::string& yaml, bool (*known)(const std::string&) = nullptr) {
  try {
    parse_sweep_spec(parse_yaml(yaml, "spec.yaml"), ".", false, known);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// ---- independent seed formula (docs/sweeps.md) ----
// SplitMix64 (Steele, Lea, Flood 2014): one step of the golden-gamma counter, then its finaliser.
std::uint64_t splitmix_final(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}
std::uint64_t by_label(std::uint64_t base, const std::string& label) {
  return splitmix_final(splitmix_final(base) ^ fnv1a(label));
}
std::uint64_t by_index(std::uint64_t base, std::uint64_t i) {
  return splitmix_final(splitmix_final(base ^ 0x5851f42d4c957f2dULL) + splitmix_final(i));
}

TEST(SweepSpec, ExpansionIsCartesianLastAxisFastestZipTogetherReplicatesInnermost) {
  const SweepSpec s = parse(R"(
name: order
kind: selftest
replicates: 2
axes:
  - key: a
    values: [1, 2]
  - zip:
      - {key: b, values: [x, y, z], label: bee}
      - {key: c, values: [10, 20, 30]}
)");
  EXPECT_EQ(s.axis_labels(), (std::vector<std::string>{"a", "bee", "c"}));
  const auto pts = expand(s);
  ASSERT_EQ(pts.size(), 2u * 3u * 2u);
  // index = ((a * 3) + zip) * 2 + replicate
  const char* expect[][3] = {{"1", "x", "10"}, {"1", "y", "20"}, {"1", "z", "30"},
                             {"2", "x", "10"}, {"2", "y", "20"}, {"2", "z", "30"}};
  for (std::size_t i = 0; i < pts.size(); ++i) {
    EXPECT_EQ(pts[i].index, i);
    EXPECT_EQ(pts[i].replicate, static_cast<std::int64_t>(i % 2));
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(pts[i].labels[static_cast<std::size_t>(k)], expect[i / 2][k]) << i;
  }
  const ConfigNode c = point_config(s, pts[11]);  // 11 = ((a=1)·3 + (zip=2))·2 + (rep=1)
  EXPECT_EQ(c.find("a")->scalar, "2");
  EXPECT_EQ(c.find("b")->scalar, "z");
  EXPECT_EQ(c.find("c")->scalar, "30");
}

TEST(SweepSpec, SeedsFollowTheDocumentedHash) {
  const std::string yaml = R"(
name: seeds
kind: selftest
seed: 42
replicates: 3
axes:
  - {key: x, values: [1, 2]}
  - {key: y, values: [a]}
)";
  const auto common = expand(parse(yaml));
  const std::uint64_t base = by_label(42, "kappasim.sweep");
  for (const auto& p : common)
    EXPECT_EQ(p.seed, by_index(base, static_cast<std::uint64_t>(p.replicate)) >> 1) << p.index;
  // Common random numbers: the same replicate sees the same seed on every axis value.
  EXPECT_EQ(common[0].seed, common[3].seed);
  EXPECT_NE(common[0].seed, common[1].seed);

  std::string per = yaml;
  per.replace(per.find("replicates"), 0, "seed_per_point: true\n");
  const auto pp = expand(parse(per));
  for (const auto& p : pp) {
    const std::string canon = "x=" + std::string(p.labels[0]) + "\ny=" + p.labels[1];
    EXPECT_EQ(p.seed, by_label(by_index(base, static_cast<std::uint64_t>(p.replicate)), canon) >> 1)
        << p.index;
    EXPECT_LT(p.seed, 1ULL << 63);
  }
  EXPECT_NE(pp[0].seed, pp[3].seed);
}

TEST(SweepSpec, RangesAreInclusiveAndTidy) {
  const SweepSpec s = parse(R"(
name: r
kind: selftest
axes:
  - key: z
    range: {from: 0.6, to: 1.4, step: 0.2}
  - key: cap
    log_range: {from: 1 GB, to: 64 GB, points: 7}
  - key: t
    range: {from: 1 ms, to: 3 ms, step: 1 ms}
)");
  EXPECT_EQ(s.axes[0].keys[0].labels, (std::vector<std::string>{"0.6", "0.8", "1", "1.2", "1.4"}));
  EXPECT_EQ(s.axes[1].keys[0].labels,
            (std::vector<std::string>{"1 GB", "2 GB", "4 GB", "8 GB", "16 GB", "32 GB", "64 GB"}));
  EXPECT_EQ(s.axes[2].keys[0].labels, (std::vector<std::string>{"1 ms", "2 ms", "3 ms"}));
  EXPECT_EQ(s.point_count(), 5u * 7u * 3u);
}

TEST(SweepSpec, ErrorsNameTheLineAndWhatWasExpected) {
  const std::string head = "name: e\nkind: selftest\n";
  EXPECT_TRUE(has(error_of(head + "axis: []\n"), "spec.yaml:3:1: unknown key 'axis'"));
  EXPECT_TRUE(has(error_of(head + "axis: []\n"), "did you mean 'axes'?"));
  EXPECT_TRUE(has(error_of(head + "axes:\n  - key: x\n    values: []\n"), "spec.yaml:5:13"));
  EXPECT_TRUE(has(error_of(head + "axes:\n  - key: x\n    values: []\n"), "has no values"));
  EXPECT_TRUE(has(error_of(head + "axes:\n  - key: x\n    range: {from: 2, to: 1, step: 1}\n"),
                  "no points"));
  EXPECT_TRUE(has(error_of(head + "axes:\n  - key: x\n    range: {from: 1, to: 2, step: 0}\n"),
                  "step must be greater than zero"));
  EXPECT_TRUE(has(error_of(head + "axes:\n  - key: x\n    range: {from: 1, to: 2, step: -1}\n"),
                  "step must be greater than zero"));
  EXPECT_TRUE(has(error_of(head + "axes:\n  - key: x\n    range: {from: 1 GB, to: 2, step: 1}\n"),
                  "same unit"));
  EXPECT_TRUE(
      has(error_of(head + "axes:\n  - key: x\n    log_range: {from: 0, to: 2, points: 3}\n"),
          "from must be greater than zero"));
  EXPECT_TRUE(
      has(error_of(head + "axes:\n  - key: x\n    log_range: {from: 1, to: -2, points: 3}\n"),
          "to must be greater than zero"));
  EXPECT_TRUE(
      has(error_of(head + "axes:\n  - key: x\n    log_range: {from: 1, to: 2, points: 1}\n"),
          "points must be at least 2"));
  EXPECT_TRUE(has(
      error_of(head +
               "axes:\n  - zip:\n    - {key: a, values: [1, 2]}\n    - {key: b, values: [1]}\n"),
      "zip group of unequal lengths: 'a' has 2 values, 'b' has 1"));
  EXPECT_TRUE(
      has(error_of(head + "axes:\n  - key: system\n    values: [{gpu: h100}, {gpu: a100}]\n"),
          "need 'labels:'"));
  EXPECT_TRUE(has(error_of(head + "axes:\n  - {key: a, values: [1]}\n  - {key: a, values: [2]}\n"),
                  "spec.yaml:5:11: duplicate axis key 'a'"));
  EXPECT_TRUE(
      has(error_of(head + "axes:\n  - {key: a, values: [1], label: seed}\n"), "already used"));
  EXPECT_TRUE(has(error_of("name: 'a b'\nkind: selftest\n"), "must match [A-Za-z0-9._-]+"));
  EXPECT_TRUE(has(error_of("kind: selftest\n"), "missing required key 'name'"));
  EXPECT_TRUE(has(error_of(head + "replicates: 0\n"), "spec.yaml:3:13"));
  auto only_selftest = [](const std::string& k) { return k == "selftest"; };
  EXPECT_TRUE(has(error_of("name: e\nkind: runn\n", only_selftest),
                  "spec.yaml:2:7: unknown point kind 'runn'"));
  // issue 13.5: the message names the valid kinds (the registry's that the check accepts)
  EXPECT_TRUE(
      has(error_of("name: e\nkind: runn\n", only_selftest), "'runn' (valid kinds: selftest)"));
  EXPECT_TRUE(has(error_of(head + "quick: {axes: {y: [1]}}\naxes:\n  - {key: x, values: [1]}\n"),
                  "(no error)"));
}

TEST(SweepSpec, QuickReplacesAxesAndSetsKeys) {
  const std::string yaml = R"(
name: q
kind: selftest
config: {x: 1, requests: 1000}
axes:
  - key: system
    values: [{gpu: h100}, {gpu: a100}, {gpu: b200}]
    labels: [h100, a100, b200]
  - key: x
    values: [1, 2, 3]
quick:
  set: {requests: 40}
  axes: {x: [2], system: [b200]}
)";
  const SweepSpec full = parse(yaml);
  EXPECT_EQ(full.point_count(), 9u);
  EXPECT_EQ(point_config(full, expand(full)[0]).find("requests")->scalar, "1000");
  const SweepSpec q = parse(yaml, true);
  ASSERT_EQ(q.point_count(), 1u);
  const ConfigNode c = point_config(q, expand(q)[0]);
  EXPECT_EQ(c.find("requests")->scalar, "40");
  EXPECT_EQ(c.find("x")->scalar, "2");
  EXPECT_EQ(c.find("system")->find("gpu")->scalar, "b200");
  EXPECT_EQ(expand(q)[0].labels[0], "b200");
  // Not an axis key: an error, with a suggestion.
  std::string bad = yaml;
  bad.replace(bad.find("axes: {x:"), 9, "axes: {xx:");
  EXPECT_TRUE(has(
      [&] {
        try {
          parse(bad, true);
        } catch (const InputError& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      "'xx' is not an axis key; did you mean 'x'?"));
  // quick.replicates (issue 11.1): 3 replicates of each point in full, 2 under --quick; the
  // replicate index is innermost, so the quick points are (b200, x 2) × replicates 0 and 1.
  std::string rep = yaml;
  rep.replace(rep.find("quick:"), 6, "replicates: 3\nquick:\n  replicates: 2");
  EXPECT_EQ(parse(rep).point_count(), 27u);
  const SweepSpec rq = parse(rep, true);
  ASSERT_EQ(rq.point_count(), 2u);
  EXPECT_EQ(expand(rq)[1].replicate, 1);
  std::string rep0 = yaml;
  rep0.replace(rep0.find("quick:"), 6, "quick:\n  replicates: 0");
  EXPECT_THROW(parse(rep0, true), InputError);
}

TEST(SweepSpec, SetPathReplacesWholeNodesAndRefinesPresets) {
  ConfigNode root = parse_yaml("system: h100\nserving: {tp: 8, kv: {a: 1, b: 2}}\n", "c.yaml");
  set_path(root, "serving.kv", parse_yaml("{c: 3}", "v"));
  EXPECT_EQ(root.find("serving")->find("kv")->find("a"), nullptr);  // replaced, not merged
  EXPECT_EQ(root.find("serving")->find("kv")->find("c")->scalar, "3");
  EXPECT_EQ(root.find("serving")->find("tp")->scalar, "8");
  set_path(root, "system.gpu.hbm_bandwidth", ConfigNode::make_scalar("4 TB/s"));
  EXPECT_EQ(root.find("system")->find("preset")->scalar, "h100");
  EXPECT_EQ(root.find("system")->find("gpu")->find("hbm_bandwidth")->scalar, "4 TB/s");
  set_path(root, "new.deep.key", ConfigNode::make_scalar("1"));
  EXPECT_EQ(root.find("new")->find("deep")->find("key")->scalar, "1");
  set_path(root, "system", ConfigNode::make_scalar("a100"));  // swaps the whole system
  EXPECT_EQ(root.find("system")->scalar, "a100");
}

// A list item by its index (a P/D study's node counts: cluster.nodes.0.count).
TEST(SweepSpec, SetPathIndexesListItems) {
  ConfigNode root = parse_yaml(
      "cluster:\n  nodes:\n    - {name: p, count: 1}\n"
      "    - {name: d, count: 1}\n",
      "c.yaml");
  set_path(root, "cluster.nodes.1.count", ConfigNode::make_scalar("3"));
  EXPECT_EQ(root.find("cluster")->find("nodes")->items.at(1).find("count")->scalar, "3");
  EXPECT_EQ(root.find("cluster")->find("nodes")->items.at(0).find("count")->scalar, "1");
  try {
    set_path(root, "cluster.nodes.2.count", ConfigNode::make_scalar("3"));
    ADD_FAILURE() << "no error for an index past the list";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a list of 2 item(s)"), std::string::npos) << e.what();
  }
  ConfigNode again = parse_yaml("cluster:\n  nodes:\n    - {name: p, count: 1}\n", "c.yaml");
  apply_set(again, "cluster.nodes.0.count=2");  // --set indexes lists the same way
  EXPECT_EQ(again.find("cluster")->find("nodes")->items.at(0).find("count")->scalar, "2");
  EXPECT_EQ(again.find("cluster")->find("nodes")->items.at(0).find("name")->scalar, "p");
}

TEST(SweepSpec, ResolvedSpecReexpandsToTheSamePointsAndHash) {
  for (bool quick : {false, true}) {
    const SweepSpec s = parse(R"(
name: rt
description: "a: quoted, line"
kind: selftest
seed: 7
seed_per_point: true
config: {x: 1, nested: {a: "08", b: [1, 2]}}
axes:
  - key: cap
    log_range: {from: 1 GB, to: 4 GB, points: 3}
  - zip:
      - {key: m, values: [{a: 1}, {a: "2"}], labels: ["one", "2"]}
      - {key: n, values: ["yes", "a b"]}
metrics: [x2]
quick: {set: {x: 5}, axes: {cap: [2 GB]}}
)",
                              quick);
    const SweepSpec r = parse_sweep_spec(parse_yaml(emit_yaml(resolved_tree(s)), "sweep.yaml"), ".",
                                         quick, nullptr);
    EXPECT_EQ(spec_hash(r), spec_hash(s));
    EXPECT_EQ(emit_yaml(resolved_tree(r)), emit_yaml(resolved_tree(s)));
    const auto a = expand(s), b = expand(r);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].seed, b[i].seed);
      EXPECT_EQ(a[i].labels, b[i].labels);
      EXPECT_EQ(emit_yaml(point_config(s, a[i])), emit_yaml(point_config(r, b[i])));
    }
  }
  EXPECT_NE(spec_hash(parse("name: a\nkind: selftest\n")),
            spec_hash(parse("name: b\nkind: selftest\n")));
}

TEST(SweepSpec, ShellQuotingAndPointNames) {
  EXPECT_EQ(shell_quote("plain/path-1.yaml"), "plain/path-1.yaml");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$(touch pwned)`x`;y"), "'$(touch pwned)`x`;y'");
  EXPECT_EQ(point_name(42, 100), "p000042");
  EXPECT_EQ(point_name(42, 1000000), "p000042");
  EXPECT_EQ(point_name(42, 1000001), "p0000042");
}

TEST(SweepResults, MergeColumnsOrderAndQuoting) {
  const SweepSpec s = parse(R"(
name: m
kind: selftest
replicates: 2
axes:
  - {key: x, values: [1, "a,b"], label: ex}
)");
  const auto pts = expand(s);
  std::vector<PointRecord> recs(4);
  recs[0] = {"ok", "", {{"u", 0.1}, {"v", 2.0}}};
  recs[1] = {"ok", "", {{"w", 3.0}, {"u", 1e-5}}};
  recs[2] = {"invalid", "point.yaml:1:1: bad \"x\"", {}};
  recs[3] = {"failed", "killed by SIGSEGV", {}};
  const MergedResults m = merge_results(s, pts, recs);
  const std::string s0 = std::to_string(pts[0].seed), s1 = std::to_string(pts[1].seed);
  EXPECT_EQ(m.csv,
            "point,ex,replicate,seed,status,error,u,v,w\n"
            "0,1,0," +
                s0 +
                ",ok,,0.1,2,\n"
                "1,1,1," +
                s1 +
                ",ok,,1e-05,,3\n"
                "2,\"a,b\",0," +
                s0 +
                ",invalid,\"point.yaml:1:1: bad \"\"x\"\"\",,,\n"
                "3,\"a,b\",1," +
                s1 + ",failed,killed by SIGSEGV,,,\n");
  EXPECT_EQ(m.not_ok, (std::vector<std::size_t>{2, 3}));
  const std::string first = m.jsonl.substr(0, m.jsonl.find('\n'));
  EXPECT_EQ(first, "{\"point\": 0, \"ex\": 1, \"replicate\": 0, \"seed\": " + s0 +
                       ", \"status\": \"ok\", \"error\": null, \"u\": 0.1, \"v\": 2, \"w\": null}");
  const SweepTable t = parse_csv(m.csv, "results.csv");
  EXPECT_EQ(t.columns.size(), 9u);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[2][1], "a,b");
  EXPECT_EQ(t.rows[2][5], "point.yaml:1:1: bad \"x\"");
  EXPECT_EQ(t.rows[1][6], "1e-05");
}

TEST(SweepResults, ResultJsonRoundTripsNumbers) {
  PointResult r;
  r.metrics = {{"a", 0.1}, {"b", 1.0 / 3.0}, {"c", 1e300}};
  EXPECT_EQ(result_json(r),
            "{\n  \"status\": \"ok\",\n  \"metrics\": {\n    \"a\": 0.1,\n    \"b\": "
            "0.3333333333333333,\n    \"c\": 1e+300\n  }\n}\n");
}

}  // namespace
}  // namespace sweep_spec_test
}  // namespace kappasim::sweep
