// End-to-end tests of `kappasim sweep` (docs/sweeps.md): merged results byte-identical for any
// number of workers, resume without rerunning finished points, SIGKILL + rerun, crashing points
// reported while the rest finish, shards + collect, Slurm array variables, and the quoting of
// the generated sbatch script and command.txt against hostile paths. Small selftest / kappa
// points only: the suite stays fast on two cores.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_util.hpp"

namespace sweep_cli_test {
namespace {
namespace fs = std::filesystem;

using kappasim::test::Result;

using kappasim::test::slurp;

fs::path scratch() {
  static const fs::path d = kappasim::test::fresh_dir("sweep");
  return d;
}

const char* kClearedEnv[] = {"SLURM_ARRAY_TASK_ID",  "SLURM_ARRAY_TASK_COUNT",
                             "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP",
                             "SLURM_CPUS_PER_TASK",  "JOB_COMPLETION_INDEX",
                             "KAPPASIM_SHARDS"};

// Starts argv (no shell) in `cwd` with the sharding variables cleared and `env` set; stdout and
// stderr go to files. Returns the pid.
pid_t start(const std::vector<std::string>& argv,
            const std::map<std::string, std::string>& env = {}, const fs::path& cwd = scratch()) {
  const std::string out = (scratch() / "out.txt").string(), err = (scratch() / "err.txt").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const char* k : kClearedEnv) ::unsetenv(k);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  return pid;
}

Result finish(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(scratch() / "out.txt");
  r.err = slurp(scratch() / "err.txt");
  return r;
}

Result kappasim(std::vector<std::string> args, const std::map<std::string, std::string>& env = {},
                const fs::path& cwd = scratch()) {
  args.insert(args.begin(), KAPPASIM_BIN);
  return finish(start(args, env, cwd));
}

fs::path write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Six selftest points: x = 1..3 times (fail none, sleep 0 s) and (fail invalid, sleep 0.01 s).
const char* kSixBody = R"(name: six
kind: selftest
config: {x: 0}
seed: 5
axes:
  - key: x
    values: [1, 2, 3]
  - zip:
      - {key: fail, values: [none, invalid], label: mode}
      - {key: sleep, values: [0 s, 0.01 s]}
)";

std::string spec_file(const std::string& name, const std::string& body) {
  return write(scratch() / name / "spec.yaml", body).string();
}

TEST(SweepCli, MergedResultsAreByteIdenticalForOneAndTwoWorkers) {
  const std::string spec = spec_file("jobs", kSixBody);
  const fs::path a = scratch() / "jobs" / "j1", b = scratch() / "jobs" / "j2";
  Result r1 = kappasim({"sweep", spec, "--out", a.string(), "-j", "1", "--quiet"});
  Result r2 = kappasim({"sweep", spec, "--out", b.string(), "-j", "2", "--quiet"});
  EXPECT_EQ(r1.code, 3) << r1.err;  // the `invalid` points
  EXPECT_EQ(r2.code, 3) << r2.err;
  const std::string csv = slurp(a / "results.csv");
  EXPECT_EQ(csv, slurp(b / "results.csv"));
  EXPECT_EQ(slurp(a / "results.jsonl"), slurp(b / "results.jsonl"));
  // Values by hand: x = 2 with fail none -> x2 = 4; the invalid point names the key's position.
  std::stringstream ss(csv);
  std::string header, line;
  std::getline(ss, header);
  EXPECT_EQ(header,
            "point,x,mode,sleep,sleep_s,seed,status,error,metric.x,x2");  // sleep_s: the SI column
                                                                          // of a quantity axis
  std::vector<std::string> rows;
  while (std::getline(ss, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_TRUE(rows[2].rfind("2,2,none,0 s,", 0) == 0) << rows[2];
  EXPECT_TRUE(has(rows[2], ",ok,,2,4")) << rows[2];
  EXPECT_TRUE(has(rows[5], ",invalid,point.yaml:")) << rows[5];
  EXPECT_TRUE(has(rows[5], "invalid input on request")) << rows[5];
  EXPECT_FALSE(has(csv, a.string()));  // no per-folder paths in merged files
  // The aggregate is a function of results.csv alone: byte-identical for -j1 and -j2 too.
  EXPECT_EQ(kappasim({"sweep", "collect", a.string(), "--aggregate", "-q"}).code, 3);
  EXPECT_EQ(kappasim({"sweep", "collect", b.string(), "--aggregate", "-q"}).code, 3);
  EXPECT_EQ(slurp(a / "aggregate.csv"), slurp(b / "aggregate.csv"));
  EXPECT_EQ(slurp(a / "aggregate.json"), slurp(b / "aggregate.json"));
  EXPECT_TRUE(has(slurp(a / "aggregate.csv"), "x2_mean")) << slurp(a / "aggregate.csv");
}

TEST(SweepCli, RerunSkipsFinishedAndInvalidPointsAndRetriesInvalidOnRequest) {
  const std::string spec = spec_file("resume", kSixBody);
  const fs::path d = scratch() / "resume" / "out";
  ASSERT_EQ(kappasim({"sweep", spec, "--out", d.string(), "-j", "2"}).code, 3);
  const std::string before = slurp(d / "results.csv");
  struct stat st0 {};
  ASSERT_EQ(::stat((d / "points/p000000/result.json").c_str(), &st0), 0);
  Result r = kappasim({"sweep", spec, "--out", d.string(), "-j", "2"});
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(has(r.err, "6 points, 6 done before, 0 to run")) << r.err;  // invalid ones recur
  r = kappasim({"sweep", spec, "--out", d.string(), "-j", "2", "--retry-invalid"});
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(has(r.err, "6 points, 3 done before, 3 to run")) << r.err;  // the 3 invalid rerun
  struct stat st1 {};
  ASSERT_EQ(::stat((d / "points/p000000/result.json").c_str(), &st1), 0);
  EXPECT_EQ(st0.st_ino, st1.st_ino);  // untouched
  EXPECT_EQ(st0.st_mtim.tv_nsec, st1.st_mtim.tv_nsec);
  EXPECT_EQ(slurp(d / "results.csv"), before);

  // Another spec into the same folder is refused, naming both.
  const std::string other = spec_file("resume2", std::string(kSixBody).replace(6, 3, "sev"));
  Result bad = kappasim({"sweep", other, "--out", d.string()});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(has(bad.err, "holds sweep 'six'") && has(bad.err, "is sweep 'sev'")) << bad.err;
}

TEST(SweepCli, SigkillThenRerunLosesNothingAndMergesTheSame) {
  std::string body =
      "name: slow\nkind: selftest\nconfig: {x: 0, sleep: 0.15 s}\naxes:\n"
      "  - {key: x, values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}\n";
  // 16 points of 0.15 s on 2 workers: after the third is done ~1 s of points is left, so a
  // loaded machine (the poll below descheduled for a while) still kills the sweep midway.
  constexpr int kPoints = 16;
  const auto point = [](int i) {
    std::string n = std::to_string(i);
    return "p" + std::string(6 - n.size(), '0') + n;
  };
  const std::string spec = spec_file("kill", body);
  const fs::path ref = scratch() / "kill" / "ref", d = scratch() / "kill" / "out";
  ASSERT_EQ(kappasim({"sweep", spec, "--out", ref.string(), "-j", "2", "-q"}).code, 0);

  const pid_t pid = start({KAPPASIM_BIN, "sweep", spec, "--out", d.string(), "-j", "2", "-q"});
  // Wait (polling, no timing assertion) until some points have finished, then SIGKILL.
  auto finished = [&] {
    int n = 0;
    for (int i = 0; i < kPoints; ++i) n += fs::exists(d / "points" / point(i) / "result.json");
    return n;
  };
  for (int i = 0; i < 2000 && finished() < 3; ++i) ::usleep(10000);
  ::kill(pid, SIGKILL);
  finish(pid);
  const int done = finished();
  ASSERT_GE(done, 3);
  ASSERT_LT(done, kPoints) << "the sweep finished before it was killed; nothing was tested";
  EXPECT_FALSE(fs::exists(d / "results.csv"));
  std::map<int, ino_t> inodes;
  for (int i = 0; i < kPoints; ++i) {
    struct stat st {};
    if (::stat((d / "points" / point(i) / "result.json").c_str(), &st) == 0) inodes[i] = st.st_ino;
  }
  // The runner's children (its zygote, the points) inherited its folder's lock and die with it
  // (PR_SET_PDEATHSIG) a moment later: on a loaded machine the rerun may find the folder still
  // locked ("wait for it to end"), so it is retried until they have.
  Result r = kappasim({"sweep", spec, "--out", d.string(), "-j", "2"});
  for (int i = 0; i < 500 && r.code == 2 && has(r.err, "another kappasim sweep is running"); ++i) {
    ::usleep(10000);
    r = kappasim({"sweep", spec, "--out", d.string(), "-j", "2"});
  }
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.err, std::to_string(inodes.size()) + " done before")) << r.err;
  for (const auto& [i, ino] : inodes) {
    struct stat st {};
    ::stat((d / "points" / point(i) / "result.json").c_str(), &st);
    EXPECT_EQ(st.st_ino, ino) << "point " << i << " was rerun";
  }
  EXPECT_EQ(slurp(d / "results.csv"), slurp(ref / "results.csv"));
  EXPECT_EQ(slurp(d / "results.jsonl"), slurp(ref / "results.jsonl"));
}

// Issue 24: the points are forked by a zygote, the runner's one child. Killed from outside, its
// running points die with it (PR_SET_PDEATHSIG) and run again, forked by the runner: nothing is
// lost or recorded as failed, and the results are the same.
TEST(SweepCli, AKilledZygotesPointsRunAgainAndMergeTheSame) {
  const std::string body =
      "name: zyg\nkind: selftest\nconfig: {x: 0, sleep: 0.15 s}\naxes:\n"
      "  - {key: x, values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}\n";
  constexpr int kPoints = 16;
  const std::string spec = spec_file("zygote", body);
  const fs::path ref = scratch() / "zygote" / "ref", d = scratch() / "zygote" / "out";
  ASSERT_EQ(kappasim({"sweep", spec, "--out", ref.string(), "-j", "2", "-q"}).code, 0);
  const pid_t pid = start({KAPPASIM_BIN, "sweep", spec, "--out", d.string(), "-j", "2", "-q"});
  auto finished = [&] {
    int n = 0;
    for (int i = 0; i < kPoints; ++i) {
      const std::string num = std::to_string(i);
      n +=
          fs::exists(d / "points" / ("p" + std::string(6 - num.size(), '0') + num) / "result.json");
    }
    return n;
  };
  // The runner's child (its parent pid in /proc/PID/stat, after the command's closing paren).
  auto child_of = [](pid_t parent) -> pid_t {
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const std::string stat = slurp(e.path() / "stat");
      const auto paren = stat.rfind(')');
      if (paren == std::string::npos) continue;
      std::stringstream ss(stat.substr(paren + 1));
      std::string state;
      long ppid = 0;
      if (ss >> state >> ppid && ppid == parent) return static_cast<pid_t>(std::stol(name));
    }
    return -1;
  };
  for (int i = 0; i < 2000 && finished() < 3; ++i) ::usleep(10000);
  const pid_t zygote = child_of(pid);
  ASSERT_GT(zygote, 0);
  ASSERT_LT(finished(), kPoints) << "the sweep finished before the kill; nothing was tested";
  ::kill(zygote, SIGKILL);
  const Result r = finish(pid);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(finished(), kPoints);
  EXPECT_EQ(slurp(d / "results.csv"), slurp(ref / "results.csv"));
  EXPECT_EQ(slurp(d / "results.jsonl"), slurp(ref / "results.jsonl"));
}

TEST(SweepCli, TwoRunnersOnTheSamePointsAreRefusedShardsAreNot) {
  std::string body =
      "name: busy\nkind: selftest\nconfig: {x: 0, sleep: 0.2 s}\naxes:\n"
      "  - {key: x, values: [1, 2, 3, 4, 5, 6]}\n";
  const std::string spec = spec_file("busy", body);
  const fs::path d = scratch() / "busy" / "out";
  const pid_t pid = start({KAPPASIM_BIN, "sweep", spec, "--out", d.string(), "-j", "1", "-q"});
  // Wait until the first runner has claimed the folder (its first point exists).
  for (int i = 0; i < 2000 && !fs::exists(d / "points" / "p000000" / "point.yaml"); ++i)
    ::usleep(10000);
  Result second = kappasim({"sweep", spec, "--out", d.string(), "-j", "1"});
  Result shard = kappasim({"sweep", spec, "--out", d.string(), "-j", "1", "--shard", "1/2"});
  const bool first_still_running = ::waitpid(pid, nullptr, WNOHANG) == 0;
  finish(pid);
  ASSERT_TRUE(first_still_running)
      << "the first sweep ended before the others started; nothing was tested";
  EXPECT_EQ(second.code, 2);
  EXPECT_TRUE(has(second.err, "another kappasim sweep is running in this folder")) << second.err;
  EXPECT_EQ(shard.code, 2);  // the unsharded runner holds every point
  // Two different shards of one sweep run side by side; a second runner of the same shard not.
  const fs::path e = scratch() / "busy" / "sharded";
  const pid_t s0 =
      start({KAPPASIM_BIN, "sweep", spec, "--out", e.string(), "-j", "1", "-q", "--shard", "0/2"});
  for (int i = 0; i < 2000 && !fs::exists(e / "points" / "p000000" / "point.yaml"); ++i)
    ::usleep(10000);
  Result s0b = kappasim({"sweep", spec, "--out", e.string(), "-j", "1", "--shard", "0/2"});
  const bool s0_still_running = ::waitpid(s0, nullptr, WNOHANG) == 0;
  Result s1 = kappasim({"sweep", spec, "--out", e.string(), "-j", "1", "-q", "--shard", "1/2"});
  finish(s0);
  ASSERT_TRUE(s0_still_running)
      << "shard 0/2 ended before the second runner started; nothing was tested";
  EXPECT_EQ(s1.code, 0) << s1.err;
  EXPECT_EQ(s0b.code, 2);
  EXPECT_TRUE(has(s0b.err, "shard 0/2")) << s0b.err;
  EXPECT_TRUE(fs::exists(e / "results.csv"));
}

// On a terminal the progress is one line rewritten in place (\r, erase to end of line); on a pipe
// it is plain lines (the other tests' stderr).
TEST(SweepCli, ProgressIsALiveLineOnATerminal) {
  const std::string spec = spec_file("tty",
                                     "name: tty\nkind: selftest\nconfig: {x: 0, sleep: 0.15 s}\n"
                                     "axes:\n  - {key: x, values: [1, 2, 3, 4]}\n");
  const fs::path d = scratch() / "tty" / "out";
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl(KAPPASIM_BIN, KAPPASIM_BIN, "sweep", spec.c_str(), "--out", d.c_str(), "-j", "1",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child has exited and the terminal is closed
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_TRUE(has(out, "\r")) << out;
  EXPECT_TRUE(has(out, "\x1b[K")) << out;
  EXPECT_TRUE(has(out, "4/4 points")) << out;
  EXPECT_TRUE(has(out, "points/s")) << out;
}

TEST(SweepCli, CrashingPointsAreReportedWhileTheOthersFinish) {
  const std::string spec = spec_file("crash", R"(name: crash
kind: selftest
config: {x: 3}
axes:
  - key: fail
    values: [none, segv, abort, exit, invalid, none]
)");
  const fs::path d = scratch() / "crash" / "out";
  Result r = kappasim({"sweep", spec, "--out", d.string(), "-j", "2"});
  EXPECT_EQ(r.code, 3) << r.err;
  const std::string csv = slurp(d / "results.csv");
  std::vector<std::string> rows;
  std::stringstream ss(csv);
  for (std::string l; std::getline(ss, l);) rows.push_back(l);
  ASSERT_EQ(rows.size(), 7u) << csv;
  EXPECT_TRUE(has(rows[1], ",ok,,3,9")) << rows[1];
  EXPECT_TRUE(has(rows[2], ",failed,")) << rows[2];
  EXPECT_TRUE(has(rows[3], ",failed,killed by SIGABRT")) << rows[3];
  EXPECT_TRUE(has(rows[4], ",failed,exit code 1")) << rows[4];
  EXPECT_TRUE(has(rows[5], ",invalid,")) << rows[5];
  EXPECT_TRUE(has(rows[6], ",ok,,3,9")) << rows[6];
  EXPECT_TRUE(has(slurp(d / "points/p000004/error.json"), "\"exit_code\": 2"));
  EXPECT_TRUE(has(r.err, "point 2 (p000002) failed: killed by SIGABRT")) << r.err;
}

TEST(SweepCli, ShardsPlusCollectEqualTheUnshardedSweep) {
  const std::string spec = spec_file("shard", kSixBody);
  const fs::path ref = scratch() / "shard" / "ref", d = scratch() / "shard" / "out";
  kappasim({"sweep", spec, "--out", ref.string(), "-q"});
  Result s0 = kappasim({"sweep", spec, "--out", d.string(), "--shard", "0/2"});
  EXPECT_EQ(s0.code, 0);  // points 0, 2, 4: all ok
  EXPECT_TRUE(has(s0.err, "kappasim sweep collect")) << s0.err;
  EXPECT_FALSE(fs::exists(d / "results.csv"));
  EXPECT_TRUE(fs::exists(d / "points/p000000/result.json"));
  EXPECT_FALSE(fs::exists(d / "points/p000001"));
  Result c = kappasim({"sweep", "collect", d.string()});
  EXPECT_EQ(c.code, 3);
  EXPECT_TRUE(has(c.err, "3 of 6 points have no result yet: 1, 3, 5")) << c.err;
  // Points 1, 3, 5 are the invalid ones: exit 3; the last shard to finish merges.
  EXPECT_EQ(kappasim({"sweep", spec, "--out", d.string(), "--shard", "1/2", "-q"}).code, 3);
  EXPECT_EQ(slurp(d / "results.csv"), slurp(ref / "results.csv"));
  fs::remove(d / "results.csv");
  c = kappasim({"sweep", "collect", d.string()});
  EXPECT_EQ(c.code, 3);  // merged; some points invalid
  EXPECT_EQ(slurp(d / "results.csv"), slurp(ref / "results.csv"));
  EXPECT_EQ(slurp(d / "results.jsonl"), slurp(ref / "results.jsonl"));
  for (const char* bad : {"2/2", "1", "a/2", "0/0", "-1/2"}) {
    Result b = kappasim({"sweep", spec, "--out", d.string(), "--shard", bad});
    EXPECT_EQ(b.code, 2) << bad;
    EXPECT_TRUE(has(b.err, "--shard")) << b.err;
  }
}

TEST(SweepCli, SlurmAndKubernetesVariablesPickTheShard) {
  const std::string spec = spec_file("slurm", kSixBody);
  const fs::path d = scratch() / "slurm" / "out";
  // An array 5-7 (min 5): task 6 is shard 1 of 3 -> points 1 and 4.
  kappasim({"sweep", spec, "--out", d.string(), "-q"}, {{"SLURM_ARRAY_TASK_ID", "6"},
                                                        {"SLURM_ARRAY_TASK_COUNT", "3"},
                                                        {"SLURM_ARRAY_TASK_MIN", "5"}});
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(fs::exists(d / "points" / ("p00000" + std::to_string(i))), i % 3 == 1) << i;
  const fs::path k = scratch() / "slurm" / "k8s";
  kappasim({"sweep", spec, "--out", k.string(), "-q", "--shards", "2"},
           {{"JOB_COMPLETION_INDEX", "0"}});
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(fs::exists(k / "points" / ("p00000" + std::to_string(i))), i % 2 == 0) << i;
  Result no_count = kappasim({"sweep", spec, "--out", k.string()}, {{"JOB_COMPLETION_INDEX", "1"}});
  EXPECT_EQ(no_count.code, 2);
  EXPECT_TRUE(has(no_count.err, "--shards N or KAPPASIM_SHARDS")) << no_count.err;
  Result bad = kappasim({"sweep", spec, "--out", d.string()},
                        {{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "3"}});
  EXPECT_EQ(bad.code, 2);
}

TEST(SweepCli, SlurmScriptAndCommandTxtCarryHostilePathsLiterally) {
  const std::string weird = "we ird'\"$(touch pwned)`touch pwned2`;touch pwned3";
  const fs::path base = scratch() / "hostile";
  const fs::path spec =
      write(base / weird / "spec.yaml",
            "name: hostile\nkind: selftest\naxes:\n  - {key: x, values: [1, 2]}\n");
  const fs::path out = base / (weird + "-out");
  const fs::path script = base / "job.sbatch";
  Result e = kappasim({"sweep", "emit", "slurm", spec.string(), "--out", out.string(), "--tasks",
                       "1", "--job-name", "a b$(x);`y`", "--script", script.string()},
                      {}, base);
  ASSERT_EQ(e.code, 0) << e.err;
  const std::string text = slurp(script);
  EXPECT_TRUE(has(text, "#SBATCH --array=0-0\n")) << text;
  EXPECT_TRUE(has(text, "#SBATCH --job-name=a_b__x___y_\n")) << text;
  EXPECT_TRUE(has(text, "#SBATCH --cpus-per-task=1\n")) << text;
  for (std::size_t at = text.find("#SBATCH"); at != std::string::npos;
       at = text.find("#SBATCH", at + 1))
    EXPECT_FALSE(has(text.substr(at, text.find('\n', at) - at), "we ird"))
        << "a user path in an #SBATCH line";
  EXPECT_TRUE(has(text, "-j \"${SLURM_CPUS_PER_TASK:-1}\"")) << text;

  Result run = finish(start(
      {"/bin/bash", script.string()},
      {{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "1"}, {"SLURM_CPUS_PER_TASK", "1"}},
      base));
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(fs::exists(out / "results.csv")) << run.err;
  // command.txt reruns its point by hand, through a shell, with the same literal paths.
  const fs::path p0 = out / "points" / "p000000";
  fs::remove(p0 / "result.json");
  Result again = finish(start({"/bin/bash", (p0 / "command.txt").string()}, {}, base));
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_TRUE(fs::exists(p0 / "result.json"));
  for (const auto& f : fs::recursive_directory_iterator(scratch()))
    EXPECT_FALSE(f.path().filename().string().rfind("pwned", 0) == 0) << f.path();
  for (const char* f : {"pwned", "pwned2", "pwned3"})
    EXPECT_FALSE(fs::exists(fs::current_path() / f));

  // A sweep name outside [A-Za-z0-9._-] is refused before anything runs.
  const fs::path bad = write(base / "badname.yaml", "name: \"x$(touch pwned)\"\nkind: selftest\n");
  Result b = kappasim({"sweep", bad.string(), "--out", (base / "bad-out").string()}, {}, base);
  EXPECT_EQ(b.code, 2);
  EXPECT_TRUE(has(b.err, "badname.yaml:1:7")) << b.err;
  EXPECT_FALSE(fs::exists(base / "bad-out"));
  // Options that would land in #SBATCH lines are checked.
  Result t = kappasim(
      {"sweep", "emit", "slurm", spec.string(), "--out", out.string(), "--time", "1:00\n#SBATCH x"},
      {}, base);
  EXPECT_EQ(t.code, 2);
}

TEST(SweepCli, BadSpecsExitTwoNamingThePosition) {
  const std::string spec =
      spec_file("empty", "name: empty\nkind: selftest\naxes:\n  - key: x\n    values: []\n");
  Result r = kappasim({"sweep", spec, "--out", (scratch() / "empty" / "out").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "spec.yaml:5:13: axis 'x' has no values")) << r.err;
  EXPECT_FALSE(fs::exists(scratch() / "empty" / "out"));
  const std::string kind = spec_file("kind", "name: k\nkind: selftst\n");
  r = kappasim({"sweep", kind, "--out", (scratch() / "kind" / "out").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "spec.yaml:2:7: unknown point kind 'selftst'; did you mean 'selftest'?"))
      << r.err;
}

TEST(SweepCli, KappaPointsPointsListingAndUnknownAxisKeysAsInvalidPoints) {
  const std::string spec = spec_file("kappa", R"(name: kap
kind: kappa
config: {model: llama-3.1-70b, system: h100}
axes:
  - {key: serving.tp, values: [1, 8], label: tp}
)");
  Result pts = kappasim({"sweep", "points", spec});
  EXPECT_EQ(pts.code, 0) << pts.err;
  EXPECT_TRUE(pts.out.rfind("point,folder,tp,seed\n0,p000000,1,", 0) == 0) << pts.out;
  const fs::path d = scratch() / "kappa" / "out";
  Result r = kappasim({"sweep", spec, "--out", d.string(), "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  // Llama-3.1-70B: B_kv = 2 (K, V) · 80 layers · 8 KV heads · 128 · 2 B = 327680 B per token.
  const std::string csv = slurp(d / "results.csv");
  EXPECT_TRUE(has(csv, ",327680,")) << csv;
  // An axis key the kind does not know is no spec error: every point is invalid with the message.
  const std::string typo = spec_file("kappa-typo", R"(name: typo
kind: kappa
config: {model: llama-3.1-70b, system: h100}
axes:
  - {key: serving.tpp, values: [1, 8]}
)");
  Result t = kappasim({"sweep", typo, "--out", (scratch() / "kappa-typo" / "out").string(), "-q"});
  EXPECT_EQ(t.code, 3);
  const std::string tcsv = slurp(scratch() / "kappa-typo" / "out" / "results.csv");
  EXPECT_TRUE(has(tcsv, ",invalid,\"point.yaml:")) << tcsv;
  EXPECT_TRUE(has(tcsv, "unknown key 'tpp'")) << tcsv;
  EXPECT_TRUE(has(tcsv, "did you mean 'tp'?")) << tcsv;
  Result kinds = kappasim({"sweep", "kinds"});
  for (const char* k : {"run", "kappa", "selftest"}) EXPECT_TRUE(has(kinds.out, k));
}

// Issue 24: an analytic kind's points run in batches, several to one forked child; each point
// still gets its own folder's files and its own status, as if it had had its own process.
TEST(SweepCli, BatchedKappaPointsKeepEachPointsFilesAndStatus) {
  const std::string spec = spec_file("batch", R"(name: batch
kind: kappa
config: {model: llama-3.1-70b, system: h100, T: 1}
axes:
  - {key: system, values: [h100, no-such-system, b200]}
  - {key: K, values: [1, 2, 3, 4, 5, 6, 7, 8]}
)");
  const fs::path a = scratch() / "batch" / "j1", b = scratch() / "batch" / "j2";
  Result r1 = kappasim({"sweep", spec, "--out", a.string(), "-j", "1", "-q"});
  Result r2 = kappasim({"sweep", spec, "--out", b.string(), "-j", "2", "-q"});
  EXPECT_EQ(r1.code, 3) << r1.err;  // the 8 points on the unknown system
  EXPECT_EQ(r2.code, 3) << r2.err;
  EXPECT_EQ(slurp(a / "results.csv"), slurp(b / "results.csv"));
  const std::string csv = slurp(b / "results.csv");
  // Llama-3.1-70B: B_kv = 2 (K, V) · 80 layers · 8 KV heads · 128 · 2 B = 327680 B per token.
  EXPECT_TRUE(has(csv, ",327680,")) << csv;
  for (int i = 0; i < 24; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "p%06d", i);
    const fs::path p = b / "points" / name;
    EXPECT_TRUE(fs::exists(p / "command.txt")) << name;
    EXPECT_TRUE(fs::exists(p / "timing.json")) << name;
    EXPECT_TRUE(has(slurp(p / "command.txt"), "--out " + p.string())) << name;
    if (i >= 8 && i < 16) {  // system no-such-system: invalid, with its own message and stderr
      EXPECT_FALSE(fs::exists(p / "result.json")) << name;
      const std::string err = slurp(p / "error.json");
      EXPECT_TRUE(has(err, "\"status\": \"invalid\"")) << err;
      EXPECT_TRUE(has(err, "\"exit_code\": 2")) << err;
      EXPECT_TRUE(has(slurp(p / "stderr.txt"), (p / "point.yaml").string())) << name;
      EXPECT_TRUE(has(slurp(p / "stderr.txt"), "unknown system preset 'no-such-system'")) << name;
    } else {
      EXPECT_TRUE(has(slurp(p / "result.json"), "\"status\": \"ok\"")) << name;
      EXPECT_FALSE(fs::exists(p / "error.json")) << name;
      EXPECT_EQ(slurp(p / "stderr.txt"), "") << name;
      EXPECT_TRUE(has(slurp(p / "inputs.txt"), "preset system ")) << name;
    }
  }
}

// ---- issue 12.11 / 11.1 (sweeps helper): preset files, --preset-dir, content check, aggregate
// ----

// The value of column `col` in data row `row` (0-based) of a CSV without quoted commas.
std::string csv_cell(const std::string& csv, std::size_t row, const std::string& col) {
  std::stringstream ss(csv);
  std::string line;
  std::getline(ss, line);
  std::vector<std::string> header;
  {
    std::stringstream hs(line);
    for (std::string f; std::getline(hs, f, ',');) header.push_back(f);
  }
  for (std::size_t r = 0; r <= row; ++r) std::getline(ss, line);
  std::stringstream ls(line);
  std::vector<std::string> cells;
  for (std::string f; std::getline(ls, f, ',');) cells.push_back(f);
  for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i)
    if (header[i] == col) return cells[i];
  return "<no column " + col + ">";
}

TEST(SweepCli, PresetFilesPresetDirAndAnEditedPresetRerunsItsPoints) {
  // κ_crit by hand (Eq. 6), Llama-3.1-8B on h100 (PCIe 5 x16), BF16:
  //   F_pf · B / (B_kv · C) = 16 060 522 496 · 63.0153846e9 / (131 072 · 989e12) = 7.80729;
  //   a GPU with twice the BF16 peak: 3.90364.
  const fs::path root = scratch() / "presetfiles";
  write(root / "pd" / "gpus" / "mygpu.yaml", "preset: h100-sxm5\n");
  write(root / "spec" / "gpus" / "filegpu.yaml", "preset: h100-sxm5\n");
  const std::string spec = write(root / "spec" / "spec.yaml", R"(name: pf
kind: kappa
config: {model: llama-3.1-8b, system: h100}
replicates: 2
axes:
  - {key: system.gpu, values: [mygpu, gpus/filegpu.yaml], label: gpu}
)")
                               .string();
  const fs::path out = root / "out";
  Result r = kappasim(
      {"sweep", spec, "--out", out.string(), "-q", "--preset-dir", (root / "pd").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string csv = slurp(out / "results.csv");
  for (std::size_t row = 0; row < 4; ++row)
    EXPECT_NEAR(std::stod(csv_cell(csv, row, "kappa_crit")), 7.80729, 1e-4);
  // command.txt names the preset folder; point.yaml names the file by its absolute path; the
  // line reruns the point alone, from another folder.
  const std::string cmd = slurp(out / "points" / "p000002" / "command.txt");
  EXPECT_TRUE(has(cmd, "--preset-dir " + fs::absolute(root / "pd").lexically_normal().string()))
      << cmd;
  EXPECT_TRUE(
      has(slurp(out / "points" / "p000002" / "point.yaml"),
          fs::absolute(root / "spec" / "gpus" / "filegpu.yaml").lexically_normal().string()));
  const std::string cmd0 = slurp(out / "points" / "p000000" / "command.txt");
  EXPECT_EQ(std::system(("cd / && " + cmd0.substr(0, cmd0.size() - 1) + " 2>/dev/null").c_str()), 0)
      << cmd0;
  // Editing the user preset reruns exactly the points that read it.
  write(root / "pd" / "gpus" / "mygpu.yaml",
        "preset: h100-sxm5\npeak_flops: {bf16: {value: 1978 TFLOP/s, assumption: \"2x\"}}\n");
  r = kappasim({"sweep", spec, "--out", out.string(), "--preset-dir", (root / "pd").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "2 finished points run again because a preset or file they read changed"))
      << r.err;
  EXPECT_TRUE(has(r.err, "preset gpu mygpu changed")) << r.err;
  csv = slurp(out / "results.csv");
  EXPECT_NEAR(std::stod(csv_cell(csv, 0, "kappa_crit")), 3.90364, 1e-4);
  EXPECT_NEAR(std::stod(csv_cell(csv, 2, "kappa_crit")), 7.80729, 1e-4);
  // And editing the preset file by path reruns the other two.
  write(root / "spec" / "gpus" / "filegpu.yaml",
        "preset: h100-sxm5\npeak_flops: {bf16: {value: 1978 TFLOP/s, assumption: \"2x\"}}\n");
  r = kappasim({"sweep", spec, "--out", out.string(), "--preset-dir", (root / "pd").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "2 finished points run again")) << r.err;
  EXPECT_TRUE(has(r.err, "filegpu.yaml changed")) << r.err;
  EXPECT_NEAR(std::stod(csv_cell(slurp(out / "results.csv"), 3, "kappa_crit")), 3.90364, 1e-4);
  // Unchanged inputs: nothing reruns.
  r = kappasim({"sweep", spec, "--out", out.string(), "--preset-dir", (root / "pd").string()});
  EXPECT_TRUE(has(r.err, "4 done before, 0 to run")) << r.err;
  // Replicates aggregate per configuration: identical analytic replicates, sd 0, n 2.
  Result c = kappasim({"sweep", "collect", out.string(), "--aggregate", "-q"});
  ASSERT_EQ(c.code, 0) << c.err;
  const std::string agg = slurp(out / "aggregate.csv");
  EXPECT_EQ(csv_cell(agg, 0, "gpu"), "mygpu");
  EXPECT_EQ(csv_cell(agg, 0, "ok"), "2");
  EXPECT_NEAR(std::stod(csv_cell(agg, 0, "kappa_crit_mean")), 3.90364, 1e-4);
  EXPECT_EQ(csv_cell(agg, 0, "kappa_crit_sd"), "0");
  EXPECT_EQ(csv_cell(agg, 0, "kappa_crit_n"), "2");
  EXPECT_TRUE(has(slurp(out / "aggregate.json"), "\"confidence\": 0.95"))
      << slurp(out / "aggregate.json");
}

TEST(SweepCli, BlankKappaCritIsExplainedByLinkNeverBinds) {
  // A GPU at 1e-3 of the H100's FLOP/s: Eq. 6 puts κ_crit at 7.807 / 1e-3 ≈ 7 807, beyond
  // the grid's κ_max (≈ 7 700 for T = 512 in the KV cache), so load never reaches compute and
  // κ_crit_simulated is blank, with link_never_binds = 1. The stock GPU crosses: 0.
  const std::string spec = spec_file("neverbinds", R"(name: nb
kind: kappa-crit
config: {model: llama-3.1-8b, system: h100, measure: {t: 512, points: 8}}
axes:
  - {key: system.gpu.scale.flops, values: [0.001, 1], label: flops_scale}
)");
  const fs::path out = scratch() / "neverbinds" / "out";
  Result r = kappasim({"sweep", spec, "--out", out.string(), "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = slurp(out / "results.csv");
  EXPECT_EQ(csv_cell(csv, 0, "kappa_crit_simulated"), "");
  EXPECT_EQ(csv_cell(csv, 0, "link_never_binds"), "1");
  EXPECT_EQ(csv_cell(csv, 0, "link_binds_from_start"), "0");
  EXPECT_GT(std::stod(csv_cell(csv, 0, "kappa_crit_analytic_peak")),
            std::stod(csv_cell(csv, 0, "kappa_max")));
  EXPECT_NE(csv_cell(csv, 1, "kappa_crit_simulated"), "");
  EXPECT_EQ(csv_cell(csv, 1, "link_never_binds"), "0");
}

}  // namespace
}  // namespace sweep_cli_test

// ---- issue 12: damaged results, I/O errors, a user's folder (items 5 and 6) -------------------
namespace sweep_cli_test {
namespace {

// A truncated result.json and one holding `{}` are not ok: the merge reports them failed, and a
// rerun runs exactly those points again (before: skipped forever, `{}` merged as ok).
TEST(SweepCli, DamagedResultJsonIsReportedAndRunAgain) {
  const std::string spec = spec_file("damaged", kSixBody);
  const fs::path d = scratch() / "damaged" / "out";
  ASSERT_EQ(kappasim({"sweep", spec, "--out", d.string(), "-j", "2", "--quiet"}).code, 3);
  const std::string good = slurp(d / "results.csv");
  const std::string p0 = slurp(d / "points/p000000/result.json");
  ASSERT_TRUE(has(p0, "\"status\": \"ok\"")) << p0;
  write(d / "points/p000000/result.json", p0.substr(0, p0.size() / 2));  // truncated
  ASSERT_TRUE(has(slurp(d / "points/p000002/result.json"), "\"status\": \"ok\""));
  write(d / "points/p000002/result.json", "{}");
  Result c = kappasim({"sweep", "collect", d.string()});
  EXPECT_EQ(c.code, 3);
  const std::string damaged = slurp(d / "results.csv");
  std::stringstream ss(damaged);
  std::string line;
  std::getline(ss, line);
  std::getline(ss, line);
  EXPECT_TRUE(has(line, ",failed,")) << line;  // point 0: unreadable
  std::getline(ss, line);
  std::getline(ss, line);
  EXPECT_TRUE(has(line, ",failed,") && has(line, "damaged result.json")) << line;  // point 2: `{}`
  Result r = kappasim({"sweep", spec, "--out", d.string(), "-j", "2"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(has(r.err, "6 points, 4 done before, 2 to run")) << r.err;
  EXPECT_EQ(slurp(d / "results.csv"), good);
}

// A full disk (stood in for by a file size limit, as in cli_test) is exit code 4 with the
// system's reason, not 2 (bad input).
TEST(SweepCli, AWriteErrorExitsFourWithTheSystemsReason) {
  const std::string spec = spec_file("efbig", kSixBody);
  const fs::path d = scratch() / "efbig" / "out";
  const fs::path err = scratch() / "efbig" / "stderr.txt";
  // stderr goes through a pipe to a file written outside the limit; the exit code is echoed.
  const std::string cmd = "((trap '' XFSZ; ulimit -f 0; exec " + std::string(KAPPASIM_BIN) +
                          " sweep " + spec + " --out " + d.string() +
                          " -j 1 --quiet) 2>&1; echo \"exit=$?\") | cat >" + err.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string msg = slurp(err);
  EXPECT_TRUE(has(msg, "exit=4")) << msg;
  EXPECT_TRUE(has(msg, "File too large")) << msg;  // strerror(EFBIG)
}

// A folder with the user's files is refused (exit 2, the files kept) unless --force.
TEST(SweepCli, AUsersNonEmptyFolderIsRefusedUnlessForce) {
  const std::string spec = spec_file("userdir", kSixBody);
  const fs::path d = scratch() / "userdir" / "mine";
  write(d / "notes.txt", "mine");
  Result r = kappasim({"sweep", spec, "--out", d.string(), "-j", "2", "--quiet"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(
      has(r.err, "--out: '" + d.string() + "' is not empty and was not written by kappasim"))
      << r.err;
  EXPECT_FALSE(fs::exists(d / "points"));
  EXPECT_EQ(slurp(d / "notes.txt"), "mine");
  r = kappasim({"sweep", spec, "--out", d.string(), "-j", "2", "--quiet", "--force"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(slurp(d / "notes.txt"), "mine");
  // Now it is kappasim's: a rerun needs no --force.
  EXPECT_EQ(kappasim({"sweep", spec, "--out", d.string(), "-j", "2", "--quiet"}).code, 3);
}

// -j 0 and -j 100000 get one message.
TEST(SweepCli, JobsOutOfRangeHaveOneMessage) {
  const std::string spec = spec_file("jobs-range", kSixBody);
  const fs::path d = scratch() / "jobs-range" / "out";
  Result a = kappasim({"sweep", spec, "--out", d.string(), "-j", "0"});
  Result b = kappasim({"sweep", spec, "--out", d.string(), "-j", "100000"});
  EXPECT_EQ(a.code, 2);
  EXPECT_EQ(b.code, 2);
  const std::string expect = "-j/--jobs: expected 1 to 4096 points at once";
  EXPECT_TRUE(has(a.err, expect + " (leave it out for one per core), got 0")) << a.err;
  EXPECT_TRUE(has(b.err, expect + " (leave it out for one per core), got 100000")) << b.err;
}

}  // namespace
}  // namespace sweep_cli_test
