// The sweep runner library and what came out of apps/ with it (issue 13.5): the one CSV quoter
// (core/csv), the kind registry (static registration by each domain, sorted listing, errors
// naming the valid kinds) and shard resolution from a given environment (sweeps/runner).
// The process pool itself is exercised end to end by tests/cli/sweep_cli_test.cpp.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/table.hpp"
#include "sweeps/point_kind.hpp"
#include "sweeps/runner/runner.hpp"
#include "sweeps/sweep_results.hpp"

namespace kappasim {
namespace sweep_runner_test {
namespace {

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

// RFC 4180 section 2: fields with a comma, a double quote or a line break are enclosed in double
// quotes, and a double quote inside is written twice. Expected texts written out by hand.
TEST(Csv, QuotesCommasQuotesAndLineBreaksAsRfc4180) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("mid space"), "mid space");  // inner spaces: as is
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");  // say ""hi"" in quotes
  EXPECT_EQ(csv_field("\""), "\"\"\"\"");                    // one quote -> 4 characters
  EXPECT_EQ(csv_field("line1\nline2"), "\"line1\nline2\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
  EXPECT_EQ(csv_field("x,\"y\"\nz"), "\"x,\"\"y\"\"\nz\"");
  // Leading or trailing spaces: quoted, so readers that trim unquoted fields keep them.
  EXPECT_EQ(csv_field(" lead"), "\" lead\"");
  EXPECT_EQ(csv_field("trail "), "\"trail \"");
}

// Every CSV writer goes through the one quoter: Table::csv used to leave edge spaces unquoted
// (sweeps quoted them); a row written by Table reads back field for field through the sweep's
// RFC 4180 reader.
TEST(Csv, TableQuotesLikeTheSweepAndReadsBack) {
  Table t({"name", "note"});
  t.add_row({std::string(" padded"), std::string("a,\"b\"\nc")});
  EXPECT_EQ(t.csv(), "name,note\n\" padded\",\"a,\"\"b\"\"\nc\"\n");
  const sweep::SweepTable back = sweep::parse_csv(t.csv(), "t.csv");
  ASSERT_EQ(back.rows.size(), 1u);
  ASSERT_EQ(back.rows[0].size(), 2u);
  EXPECT_EQ(back.rows[0][0], " padded");
  EXPECT_EQ(back.rows[0][1], "a,\"b\"\nc");
}

TEST(SweepKinds, RegistryListsByNameWhateverTheOrderOfRegistration) {
  sweep::KindRegistry r;
  auto fn = [](const ConfigNode&, const sweep::PointContext&) { return sweep::PointResult{}; };
  for (const char* n : {"zeta", "alpha", "mid", "beta"}) r.add({n, "doc", fn});
  EXPECT_EQ(r.names(), (std::vector<std::string>{"alpha", "beta", "mid", "zeta"}));
  EXPECT_THROW(r.add({"mid", "again", fn}), std::logic_error);
}

// A kind that declares its columns may return no other: a family's '*' stands for any run of
// characters (at least one); a kind without declarations is not checked.
TEST(SweepKinds, DeclaredColumnsAndFamilies) {
  sweep::PointKind k{"k", "doc", [](const ConfigNode&, const sweep::PointContext&) {
                       return sweep::PointResult{};
                     }};
  sweep::PointResult r;
  r.metrics = {{"x", 1}, {"share_link", 0.5}, {"t_queue_s", 0}};
  EXPECT_NO_THROW(sweep::check_declared(k, r));  // declares nothing: not checked
  k.columns = {{"x", "1", "an x"}, {"share_*", "1", "shares"}, {"t_*_s", "s", "times"}};
  EXPECT_TRUE(sweep::declares(k, "share_link"));
  EXPECT_FALSE(sweep::declares(k, "share_"));  // the '*' stands for at least one character
  EXPECT_TRUE(sweep::declares(k, "t_queue_s"));
  EXPECT_FALSE(sweep::declares(k, "t_queue"));
  EXPECT_FALSE(sweep::declares(k, "t_s"));
  EXPECT_FALSE(sweep::declares(k, "y"));
  EXPECT_NO_THROW(sweep::check_declared(k, r));
  r.metrics.emplace_back("y", 2);
  try {
    sweep::check_declared(k, r);
    ADD_FAILURE() << "an undeclared column passed";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("sweep kind 'k' wrote column 'y'"), std::string::npos)
        << e.what();
  }
}

// The pure layers' kinds register themselves (this binary links kappasim_kinds and calls no
// registration function): kappa (models/analytic), design (models/design), selftest (sweeps).
TEST(SweepKinds, DomainsRegisterTheirOwnKinds) {
  for (const char* k : {"kappa", "design", "selftest"})
    EXPECT_NE(sweep::kinds().find(k), nullptr) << k;
  EXPECT_TRUE(sweep::known_kind("selftest"));
  EXPECT_FALSE(sweep::known_kind("selftst"));
  try {
    sweep::find_kind("selftst");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(),
                    "--kind: unknown point kind 'selftst'; did you mean 'selftest'? "
                    "(expected one of "))
        << e.what();
    EXPECT_TRUE(has(e.what(), "design, kappa")) << e.what();  // sorted
    EXPECT_TRUE(has(e.what(), "selftest")) << e.what();
  }
}

// Shards from the environment the caller hands over (run_sweep itself never reads it).
std::optional<std::pair<int, int>> shard_with(const std::string& shard, const std::string& shards,
                                              std::map<std::string, std::string> env) {
  return sweep::resolve_shard(shard, shards, [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(SweepShards, FromOptionSlurmArrayOrIndexedJob) {
  EXPECT_EQ(shard_with("", "", {}), std::nullopt);
  EXPECT_EQ(shard_with("2/5", "", {{"SLURM_ARRAY_TASK_ID", "0"}}),
            std::make_pair(2, 5));  // option first
  // --array=3-9:2 with 4 tasks: task ids 3, 5, 7, 9; id 7 is shard (7 - 3) / 2 = 2 of 4.
  EXPECT_EQ(shard_with("", "",
                       {{"SLURM_ARRAY_TASK_ID", "7"},
                        {"SLURM_ARRAY_TASK_MIN", "3"},
                        {"SLURM_ARRAY_TASK_STEP", "2"},
                        {"SLURM_ARRAY_TASK_COUNT", "4"}}),
            std::make_pair(2, 4));
  EXPECT_EQ(shard_with("", "", {{"JOB_COMPLETION_INDEX", "1"}, {"KAPPASIM_SHARDS", "3"}}),
            std::make_pair(1, 3));
  EXPECT_EQ(shard_with("", "6", {{"JOB_COMPLETION_INDEX", "5"}}), std::make_pair(5, 6));
  EXPECT_EQ(shard_with("", "", {{"SLURM_ARRAY_TASK_ID", ""}}), std::nullopt);  // empty = unset
  EXPECT_THROW(shard_with("1/2", "2", {}), InputError);
  EXPECT_THROW(shard_with("", "",
                          {{"SLURM_ARRAY_TASK_ID", "8"},
                           {"SLURM_ARRAY_TASK_MIN", "3"},
                           {"SLURM_ARRAY_TASK_STEP", "2"},
                           {"SLURM_ARRAY_TASK_COUNT", "4"}}),
               InputError);  // 8 is not on the 3-9:2 grid
  EXPECT_THROW(shard_with("", "", {{"JOB_COMPLETION_INDEX", "3"}, {"KAPPASIM_SHARDS", "3"}}),
               InputError);
  EXPECT_THROW(shard_with("", "", {{"JOB_COMPLETION_INDEX", "0"}}), InputError);  // no count
  EXPECT_THROW(shard_with("", "4", {}), InputError);  // --shards without an Indexed Job
}

// The library runs a sweep for any caller that names the executable to re-exec: this test binary
// cannot run `sweep point` itself, so the points run as `kappasim sweep point` (KAPPASIM_BIN).
// selftest returns x and x2 = x·x: x = 1, 2, 3 give x2 = 1, 4, 9.
TEST(SweepRunner, RunsInProcessWithTheExecutableItIsGiven) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("kappasim-runner-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream spec(dir / "spec.yaml");
    spec << "name: lib\nkind: selftest\naxes:\n  - {key: x, values: [1, 2, 3]}\n";
  }
  sweep::SweepOptions o;
  o.spec_path = (dir / "spec.yaml").string();
  o.out_dir = (dir / "out").string();
  o.jobs = 2;
  o.quiet = true;
  o.exe = KAPPASIM_BIN;
  ASSERT_EQ(sweep::run_sweep(o), 0);
  const sweep::SweepTable t = sweep::read_results_csv(o.out_dir);
  ASSERT_EQ(t.rows.size(), 3u);
  std::size_t x2 = t.columns.size();
  for (std::size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c] == "x2") x2 = c;
  ASSERT_LT(x2, t.columns.size());
  EXPECT_EQ(t.rows[0][x2], "1");
  EXPECT_EQ(t.rows[1][x2], "4");
  EXPECT_EQ(t.rows[2][x2], "9");
  // The point's command line names the executable it was given.
  std::ifstream cmd(fs::path(o.out_dir) / "points" / "p000000" / "command.txt");
  std::string line;
  std::getline(cmd, line);
  EXPECT_EQ(line.rfind(std::string(KAPPASIM_BIN) + " sweep point --kind selftest", 0), 0u) << line;
  // The sbatch script execs the executable it is given too.
  sweep::SlurmOptions so;
  so.spec_path = o.spec_path;
  so.out_dir = o.out_dir;
  so.exe = "/opt/kappasim/bin/kappasim";
  EXPECT_TRUE(has(sweep::slurm_script(so), "\nexec /opt/kappasim/bin/kappasim sweep "))
      << sweep::slurm_script(so);
  fs::remove_all(dir);
}

// Issue 24: points forked in this process (fork_points, selftest registered here) by a zygote
// or by the runner itself record the same results, failures and an input error alike. By hand:
// x = 3 gives x2 = 9; abort() is SIGABRT, _Exit(1) exit code 1, `fail: invalid` exit code 2.
TEST(SweepRunner, ZygoteAndDirectForksRecordTheSameResults) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("kappasim-zygote-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream spec(dir / "spec.yaml");
    spec << "name: forks\nkind: selftest\nconfig: {x: 3}\naxes:\n"
            "  - {key: fail, values: [none, abort, exit, invalid, none]}\n";
  }
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::map<bool, std::string> csv, jsonl;
  for (bool zygote : {true, false}) {
    sweep::SweepOptions o;
    o.spec_path = (dir / "spec.yaml").string();
    o.out_dir = (dir / (zygote ? "zygote" : "direct")).string();
    o.jobs = 2;
    o.quiet = true;
    o.fork_points = true;
    o.zygote = zygote;
    EXPECT_EQ(sweep::run_sweep(o), 3) << "zygote " << zygote;
    csv[zygote] = slurp(fs::path(o.out_dir) / "results.csv");
    jsonl[zygote] = slurp(fs::path(o.out_dir) / "results.jsonl");
    const sweep::SweepTable t = sweep::read_results_csv(o.out_dir);
    ASSERT_EQ(t.rows.size(), 5u);
    std::size_t status = t.columns.size(), error = status, x2 = status;
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      if (t.columns[c] == "status") status = c;
      if (t.columns[c] == "error") error = c;
      if (t.columns[c] == "x2") x2 = c;
    }
    ASSERT_LT(std::max({status, error, x2}), t.columns.size());
    EXPECT_EQ(t.rows[0][status], "ok");
    EXPECT_EQ(t.rows[0][x2], "9");
    EXPECT_EQ(t.rows[1][status], "failed");
    EXPECT_EQ(t.rows[1][error], "killed by SIGABRT");
    EXPECT_EQ(t.rows[2][status], "failed");
    EXPECT_EQ(t.rows[2][error], "exit code 1");
    EXPECT_EQ(t.rows[3][status], "invalid");
    EXPECT_TRUE(has(t.rows[3][error], "invalid input on request")) << t.rows[3][error];
    EXPECT_EQ(t.rows[4][status], "ok");
    EXPECT_TRUE(has(slurp(fs::path(o.out_dir) / "points/p000003/stderr.txt"), "kappasim: error: "));
  }
  EXPECT_EQ(csv[true], csv[false]);
  EXPECT_EQ(jsonl[true], jsonl[false]);
  fs::remove_all(dir);
}

// Issue 24: several sweeps through one pool (run_sweeps, what `reproduce` runs its sweeps with)
// write what each sweep run alone writes: the same results.csv / results.jsonl, the same exit
// code, failures, an input error and a batch kind's points included. By hand: selftest's x2 is
// x·x; the kappa sweep's 8 points on the unknown system are invalid (exit code 3 for it).
namespace fs = std::filesystem;

std::string slurp_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A kind registered without files (PointKind::files: the analytic kinds) gets no staging folder:
// a file in the point's folder named as the staging folder would be is left as it was, where a
// kind with files replaces it with the folder and removes that once empty.
TEST(SweepRunner, AKindWithoutFilesGetsNoStagingFolder) {
  EXPECT_FALSE(sweep::kinds().find("kappa")->files);
  EXPECT_FALSE(sweep::kinds().find("design")->files);
  EXPECT_TRUE(sweep::kinds().find("selftest")->files);
  const fs::path dir = fs::temp_directory_path() / ("kappasim-stage-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const char* kind : {"kappa", "selftest"}) {
    const fs::path out = dir / kind;
    fs::create_directories(out);
    const fs::path decoy = out / ("files.partial-" + std::to_string(::getpid()));
    std::ofstream(decoy) << "left alone";
    std::ofstream(dir / "point.yaml")
        << (std::string(kind) == "kappa" ? "model: llama-3.1-70b\nsystem: h100\nK: 4096\nT: 64\n"
                                         : "x: 3\n");
    sweep::PointRunOptions o;
    o.kind = kind;
    o.config = (dir / "point.yaml").string();
    o.base_dir = dir.string();
    o.out = out.string();
    o.seed = 1;
    sweep::run_point(o);
    EXPECT_TRUE(fs::exists(out / "result.json")) << kind;
    if (std::string(kind) == "kappa") {
      ASSERT_TRUE(fs::is_regular_file(decoy));
      std::ifstream in(decoy);
      EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "left alone");
    } else {
      EXPECT_FALSE(fs::exists(decoy));  // made a folder, then removed: the kind wrote nothing
    }
  }
  fs::remove_all(dir);
}

// Three sweeps: selftest points that fail in each way, a batched kappa sweep (24 points: 3 to
// a batch on 2 workers), and selftest points that sleep `sleep` each.
std::vector<sweep::SweepOptions> three_sweeps(const fs::path& dir, const std::string& out,
                                              const std::string& sleep) {
  fs::create_directories(dir);
  std::ofstream(dir / "fails.yaml")
      << "name: fails\nkind: selftest\nconfig: {x: 3}\naxes:\n"
         "  - {key: fail, values: [none, abort, exit, invalid, none]}\n";
  std::ofstream(dir / "batch.yaml")
      << "name: batch\nkind: kappa\nconfig: {model: llama-3.1-70b, system: h100, T: 1}\naxes:\n"
         "  - {key: system, values: [h100, no-such-system, b200]}\n"
         "  - {key: K, values: [1, 2, 3, 4, 5, 6, 7, 8]}\n";
  std::ofstream(dir / "slow.yaml") << "name: slow\nkind: selftest\nconfig: {x: 0, sleep: " << sleep
                                   << "}\naxes:\n  - {key: x, values: [1, 2, 3, 4, 5, 6, 7, 8]}\n";
  std::vector<sweep::SweepOptions> all;
  for (const char* name : {"fails", "batch", "slow"}) {
    sweep::SweepOptions o;
    o.spec_path = (dir / (std::string(name) + ".yaml")).string();
    o.out_dir = (dir / out / name).string();
    o.jobs = 2;
    o.quiet = true;
    o.fork_points = true;
    all.push_back(o);
  }
  return all;
}

TEST(SweepRunner, APoolOfSweepsWritesWhatEachSweepAloneWrites) {
  const fs::path dir = fs::temp_directory_path() / ("kappasim-pool-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto alone = three_sweeps(dir, "alone", "0 s");
  const auto pooled = three_sweeps(dir, "pool", "0 s");
  std::vector<int> codes;
  for (const auto& o : alone) codes.push_back(sweep::run_sweep(o));
  EXPECT_EQ(codes, (std::vector<int>{3, 3, 0}));
  const std::vector<sweep::SweepRun> runs = sweep::run_sweeps(pooled);
  ASSERT_EQ(runs.size(), 3u);
  const std::size_t points[] = {5, 24, 8};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(runs[i].code, codes[i]) << i;
    EXPECT_EQ(runs[i].points_run, points[i]) << i;
    EXPECT_GE(runs[i].cpu_s, 0.0) << i;
    EXPECT_GE(runs[i].first_start_s, 0.0) << i;
    EXPECT_GE(runs[i].last_end_s, runs[i].first_start_s) << i;
    for (const char* f : {"results.csv", "results.jsonl"})
      EXPECT_EQ(slurp_file(fs::path(pooled[i].out_dir) / f),
                slurp_file(fs::path(alone[i].out_dir) / f))
          << pooled[i].out_dir << "/" << f;
  }
  const sweep::SweepTable t = sweep::read_results_csv(pooled[2].out_dir);
  ASSERT_EQ(t.rows.size(), 8u);
  std::size_t x2 = t.columns.size();
  for (std::size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c] == "x2") x2 = c;
  ASSERT_LT(x2, t.columns.size());
  EXPECT_EQ(t.rows[7][x2], "64");
  // Run again: every point was done (or invalid) before, nothing runs, the same codes.
  const std::vector<sweep::SweepRun> again = sweep::run_sweeps(pooled);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(again[i].code, codes[i]) << i;
  EXPECT_EQ(again[1].first_start_s, -1.0);
  EXPECT_EQ(again[2].first_start_s, -1.0);
  EXPECT_EQ(again[0].points_run, 2u);  // the two failed ones run again (invalid ones do not)
  EXPECT_EQ(again[1].points_run, 0u);
  EXPECT_EQ(again[2].points_run, 0u);
  // One pool, one way to run its points.
  auto mixed = pooled;
  mixed[1].jobs = 1;
  EXPECT_THROW(sweep::run_sweeps(mixed), std::invalid_argument);
  fs::remove_all(dir);
}

// Bad input in any sweep of a pool stops the whole pool before a point runs: the error names the
// bad spec's file and key, and the good sweeps before it have no point run.
TEST(SweepRunner, ABadSpecInAPoolStopsItBeforeAnyPointRuns) {
  const fs::path dir =
      fs::temp_directory_path() / ("kappasim-poolbad-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto pooled = three_sweeps(dir, "pool", "0 s");
  const fs::path bad = dir / "bad.yaml";
  {
    std::ofstream f(bad);
    f << "name: bad\nkind: selftest\naxes:\n  - {key: x, valuez: [1, 2]}\n";
  }
  pooled[1].spec_path = bad.string();
  try {
    sweep::run_sweeps(pooled);
    ADD_FAILURE() << "a pool with a bad spec ran";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "bad.yaml")) << e.what();
  }
  for (const auto& o : pooled) {
    const fs::path points = fs::path(o.out_dir) / "points";
    std::size_t results = 0;
    if (fs::exists(points))
      for (const auto& p : fs::recursive_directory_iterator(points))
        results += p.path().filename() == "result.json";
    EXPECT_EQ(results, 0u) << o.out_dir;
    EXPECT_FALSE(fs::exists(fs::path(o.out_dir) / "results.csv")) << o.out_dir;
  }
  fs::remove_all(dir);
}

// A pool SIGKILLed midway (its zygote and points die with it, PR_SET_PDEATHSIG) resumes: the
// points finished before are not run again, and every sweep's results are those of the sweeps
// run alone.
TEST(SweepRunner, AKilledPoolResumesToWhatEachSweepAloneWrites) {
  const fs::path dir =
      fs::temp_directory_path() / ("kappasim-pool-kill-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto alone = three_sweeps(dir, "alone", "0.15 s");
  const auto pooled = three_sweeps(dir, "pool", "0.15 s");
  for (const auto& o : alone) sweep::run_sweep(o);
  // The slow sweep first in the pool this time: 8 points of 0.15 s on 2 workers (≈ 0.6 s).
  const std::vector<sweep::SweepOptions> order = {pooled[2], pooled[0], pooled[1]};
  auto results = [&] {
    std::map<std::string, ino_t> out;
    for (const auto& o : pooled) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(fs::path(o.out_dir) / "points", ec)) {
        struct stat st {};
        if (::stat((e.path() / "result.json").c_str(), &st) == 0)
          out[e.path().string()] = st.st_ino;
      }
    }
    return out;
  };
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      sweep::run_sweeps(order);
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  for (int i = 0; i < 2000 && results().size() < 3; ++i) ::usleep(10000);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  const std::map<std::string, ino_t> before = results();
  ASSERT_GE(before.size(), 3u);
  ASSERT_FALSE(fs::exists(fs::path(order.back().out_dir) / "results.csv"))
      << "the pool finished before it was killed; nothing was tested";
  // The zygote and the points die with the pool (their folders' locks with them): retried
  // until they have.
  std::vector<sweep::SweepRun> runs;
  for (int i = 0; i < 500; ++i) {
    try {
      runs = sweep::run_sweeps(order);
      break;
    } catch (const InputError& e) {
      if (!has(e.what(), "another kappasim sweep is running")) throw;
      ::usleep(10000);
    }
  }
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].code, 0);
  EXPECT_EQ(runs[1].code, 3);
  EXPECT_EQ(runs[2].code, 3);
  for (const auto& [path, ino] : before) {
    struct stat st {};
    ::stat((fs::path(path) / "result.json").c_str(), &st);
    EXPECT_EQ(st.st_ino, ino) << path << " was run again";
  }
  for (std::size_t i = 0; i < 3; ++i)
    for (const char* f : {"results.csv", "results.jsonl"})
      EXPECT_EQ(slurp_file(fs::path(pooled[i].out_dir) / f),
                slurp_file(fs::path(alone[i].out_dir) / f))
          << pooled[i].out_dir << "/" << f;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sweep_runner_test
}  // namespace kappasim
