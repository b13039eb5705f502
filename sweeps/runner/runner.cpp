// The sweep runner (sweeps/runner/runner.hpp): the sweep folder (sweep.yaml, locks, resume), the
// process pool that fork+execs one process per point, the merge, and `sweep collect`.
// Moved out of apps/kappasim/cmd_sweep.cpp unchanged in behaviour (tests/cli/sweep_cli_test.cpp,
// tests/slurm). Files are written atomically, so a killed sweep resumes where it stopped.
#include "sweeps/runner/runner.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/glibc_malloc.hpp"
#include "core/heap_drain.hpp"
#include "core/output.hpp"
#include "core/preset_warm.hpp"
#include "core/shared_memo.hpp"
#include "core/units.hpp"
#include "sweeps/aggregate.hpp"
#include "sweeps/point_kind.hpp"
#include "sweeps/runner/runner_internal.hpp"

namespace kappasim::sweep {

namespace {

using Clock = std::chrono::steady_clock;

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGHUP:
      return "SIGHUP";
    case SIGTRAP:
      return "SIGTRAP";
    default:
      return "signal " + std::to_string(sig);
  }
}

std::vector<std::string> tail_lines(const std::string& path, std::size_t max_lines) {
  std::string text;
  read_text_file(path, text);
  if (text.size() > 8192) text = text.substr(text.size() - 8192);
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);)
    if (!line.empty()) lines.push_back(line);
  if (lines.size() > max_lines)
    lines.erase(lines.begin(), lines.end() - static_cast<long>(max_lines));
  return lines;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// ---- inputs.txt (written by run_point, sweeps/runner/point.cpp) ------------------------------
// The first input of a finished point whose content differs now (or "" when none does). A
// point without inputs.txt (run by an older kappasim) counts as changed: its inputs are unknown.
std::string changed_input(const std::string& pdir) {
  std::string text;
  if (!read_text_file(pdir + "/inputs.txt", text)) return "no inputs.txt (inputs unknown)";
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.find(' ');
    if (sp == std::string::npos) return "malformed inputs.txt";
    const std::string hash = line.substr(0, sp), key = line.substr(sp + 1);
    const std::optional<std::string> now = current_input_hash(key);
    if (!now) return key + " is gone";
    if (*now != hash) return key + " changed";
  }
  return "";
}

// ---- the sweep folder -----------------------------------------------------------------------

struct SweepDir {
  std::string dir;  // absolute
  std::string points_dir() const { return dir + "/points"; }
  std::string point_dir(const Point& p, std::size_t total) const {
    return points_dir() + "/" + point_name(p.index, total);
  }
};

std::string sweep_yaml(const SweepSpec& s, const std::string& spec_path) {
  ConfigNode root = ConfigNode::make_map();
  auto text = [](const std::string& v) {
    ConfigNode n = ConfigNode::make_scalar(v);
    n.quoted = true;
    return n;
  };
  root.set("hash", text(spec_hash(s)));
  root.set("spec_path", text(spec_path));
  root.set("base_dir", text(s.base_dir));
  root.set("quick", ConfigNode::make_scalar(s.quick ? "true" : "false"));
  root.set("spec", resolved_tree(s));
  return "# kappasim sweep: the resolved spec of this folder (a rerun with another spec is "
         "refused)\n" +
         emit_yaml(root);
}

struct Recorded {
  std::string hash, spec_path, base_dir, name;
  bool quick = false;
  ConfigNode spec;
};

std::optional<Recorded> read_sweep_yaml(const std::string& dir) {
  const std::string path = dir + "/sweep.yaml";
  if (!fs::exists(path)) return std::nullopt;
  ConfigNode root = load_yaml_file(path);
  Recorded r;
  auto get = [&](const char* key) -> const ConfigNode& {
    const ConfigNode* n = root.is_map() ? root.find(key) : nullptr;
    if (!n)
      throw InputError(root.loc,
                       std::string("sweep.yaml: missing '") + key + "' (not a sweep folder?)");
    return *n;
  };
  r.hash = get("hash").scalar;
  r.spec_path = get("spec_path").scalar;
  r.base_dir = get("base_dir").scalar;
  r.quick = get("quick").scalar == "true";
  r.spec = get("spec");
  if (const ConfigNode* n = r.spec.find("name")) r.name = n->scalar;
  return r;
}

// Writes DIR/sweep.yaml, or checks that the one there records the same spec.
void claim_dir(const SweepDir& d, const SweepSpec& s, const std::string& spec_path, bool force) {
  std::error_code ec;
  if (fs::exists(d.dir, ec) && !fs::is_directory(d.dir, ec))
    throw InputError("--out: '" + d.dir + "' exists and is not a folder");
  // A folder with sweep.yaml is a sweep folder (older ones have no marker); any other non-empty
  // folder must be kappasim's (core/output).
  if (!fs::exists(d.dir + "/sweep.yaml", ec)) claim_output_dir(d.dir, force);
  fs::create_directories(d.points_dir(), ec);
  if (ec) throw IoError("--out: cannot create '" + d.points_dir() + "': " + ec.message());
  const std::string hash = spec_hash(s);
  if (auto rec = read_sweep_yaml(d.dir)) {
    if (rec->hash != hash)
      throw InputError("--out " + d.dir + " holds sweep '" + rec->name + "' (spec hash " +
                       rec->hash + ", from " + rec->spec_path + (rec->quick ? ", --quick" : "") +
                       "), but " + spec_path + " is sweep '" + s.name + "' (spec hash " + hash +
                       (s.quick ? ", --quick" : "") +
                       "): use another --out folder, or remove this one to start over");
    return;
  }
  write_file_atomic(d.dir + "/sweep.yaml", sweep_yaml(s, spec_path));
}

// Keeps two runners off the same points: an unsharded runner holds DIR/.lock exclusively, a
// sharded one holds it shared plus DIR/.lock-I-of-N exclusively. flock: released when the
// process ends, however it ends (a SIGKILLed runner leaves no stale lock). A lock belongs to
// the open file, so the runner's forked children (its zygote, the points it forks) hold it with
// it until they exit: a SIGKILLed runner's folder stays locked until they have died too
// (PR_SET_PDEATHSIG), so a rerun cannot start while they may still write. O_CLOEXEC: a
// process a point execs does not inherit it.
class RunnerLock {
 public:
  RunnerLock(const std::string& dir, int shard_i, int shard_n) {
    take(dir + "/.lock", shard_n == 1 ? LOCK_EX : LOCK_SH, dir, shard_i, shard_n);
    if (shard_n > 1)
      take(dir + "/.lock-" + std::to_string(shard_i) + "-of-" + std::to_string(shard_n), LOCK_EX,
           dir, shard_i, shard_n);
  }
  ~RunnerLock() {
    for (int fd : m_fds) ::close(fd);
  }
  RunnerLock(const RunnerLock&) = delete;
  RunnerLock& operator=(const RunnerLock&) = delete;

 private:
  void take(const std::string& path, int mode, const std::string& dir, int i, int n) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw InputError("--out: cannot create the lock file '" + path +
                       "': " + std::strerror(errno));
    m_fds.push_back(fd);
    if (::flock(fd, mode | LOCK_NB) != 0)
      throw InputError(
          "--out " + dir + ": another kappasim sweep is running " +
          (n > 1 ? "shard " + std::to_string(i) + "/" + std::to_string(n) + " of this sweep"
                 : "in this folder") +
          " (or an unsharded run holds it); wait for it to end, or use another --out");
  }
  std::vector<int> m_fds;
};

// Merges when every point has a result or error file. Returns the missing point ids. `read`
// (if given) receives the records read, one per point in `points`' order (empty when some are
// missing).
std::vector<std::size_t> try_merge(const SweepDir& d, const SweepSpec& s,
                                   const std::vector<Point>& points, MergedResults* merged,
                                   std::vector<PointRecord>* read = nullptr) {
  std::vector<PointRecord> records;
  std::vector<std::size_t> missing;
  records.reserve(points.size());
  for (const auto& p : points) {
    auto r = read_point_record(d.point_dir(p, points.size()));
    if (!r) {
      missing.push_back(p.index);
      records.emplace_back();
    } else {
      records.push_back(std::move(*r));
    }
  }
  if (!missing.empty()) return missing;
  MergedResults m = merge_results(s, points, records);
  write_file_atomic(d.dir + "/results.csv", m.csv);
  write_file_atomic(d.dir + "/results.jsonl", m.jsonl);
  if (merged) *merged = std::move(m);
  if (read) *read = std::move(records);
  return missing;
}

std::string id_list(const std::vector<std::size_t>& ids, std::size_t max = 50) {
  std::string out;
  for (std::size_t i = 0; i < ids.size() && i < max; ++i)
    out += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > max) out += ", ... (" + std::to_string(ids.size()) + " in all)";
  return out;
}

// ---- progress -------------------------------------------------------------------------------

class Progress {
 public:
  Progress(bool quiet, std::size_t total)
      : m_quiet(quiet), m_tty(::isatty(2) == 1), m_total(total) {
    m_start = m_last = Clock::now();
  }
  void update(std::size_t done, std::size_t failed, bool final) {
    if (m_quiet) return;
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - m_last).count();
    if (!final && !m_tty && since < 10) return;
    if (!final && m_tty && since < 0.1) return;
    m_last = now;
    const double elapsed = std::chrono::duration<double>(now - m_start).count();
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    char buf[256];
    const double eta = rate > 0 ? static_cast<double>(m_total - done) / rate : 0;
    std::snprintf(buf, sizeof buf, "sweep: %zu/%zu points, %.1f points/s, ETA %.0f s, %zu failed",
                  done, m_total, rate, eta, failed);
    if (m_tty) {
      std::cerr << "\r" << buf << "\x1b[K" << (final ? "\n" : "") << std::flush;
    } else {
      std::cerr << buf << "\n";
    }
  }

 private:
  bool m_quiet, m_tty;
  std::size_t m_total;
  Clock::time_point m_start, m_last;
};

// SIGCHLD blocked while the pool runs (sigtimedwait waits for it), restored afterwards.
class ChildSignals {
 public:
  ChildSignals() {
    ::signal(SIGCHLD, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &s, &m_old);
  }
  ~ChildSignals() { ::sigprocmask(SIG_SETMASK, &m_old, nullptr); }
  const sigset_t& old() const { return m_old; }

 private:
  sigset_t m_old;
};

struct Running {
  std::size_t slot;  // the unit it runs (index into run_sweeps' units)
  Clock::time_point start;
  // A batch of points run one after another by one child (a kind with PointKind::batch): their
  // slots in order, and the pipe on which the child reports "K CODE WALL" for each point done.
  std::vector<std::size_t> batch;
  int pipe_fd = -1;
};

// The exit code `kappasim sweep point` would give for this point, its message on stderr (what
// main() prints): 2 for bad input, the IoError's code, 1 otherwise.
int run_point_code(const PointRunOptions& po) {
  try {
    run_point(po);
    return 0;
  } catch (const std::exception&) {
    return report_current_exception();
  }
}

// ---- the zygote (issue 24) ----------------------------------------------------------------------
// A child forked once per sweep, before its first point, that forks the sweep's points in its
// place: the runner then shares its pages with one process instead of with every point, so it
// takes no copy-on-write fault after each fork (≈ 165 per point, the runner's own writes), and
// the points are the same processes as before (a fork of the same warm state, the same files).
// The runner sends "SLOT\n" on a socket (MSG_NOSIGNAL: a dead zygote is an error to handle, not
// a SIGPIPE); the zygote answers "SLOT STATUS\n" with the point's wait status when it ends, or
// "SLOT fork ERRNO\n". Kill safety is a chain of PR_SET_PDEATHSIG: a killed runner takes the
// zygote with it, and a dead zygote its points. The zygote waits for every point it forked
// before it exits, so getrusage(RUSAGE_CHILDREN) of the runner counts the points' CPU once the
// runner has reaped the zygote (report/sweeps.cpp's CPU per sweep).
class Zygote {
 public:
  // Forks the zygote; `point(slot)` is what a point's process runs (its exit code) and
  // `err_path(slot)` its stderr file. `mask` is the signal mask the points run with.
  Zygote(const std::function<int(std::size_t)>& point,
         const std::function<std::string(std::size_t)>& err_path, const sigset_t& mask) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::runtime_error(std::string("socketpair failed: ") + std::strerror(errno));
    try {
      m_pid = fork_tied_child();
    } catch (...) {
      ::close(sv[0]);
      ::close(sv[1]);
      throw;
    }
    if (m_pid == 0) {
      ::close(sv[0]);
      serve(sv[1], point, err_path, mask);
    }
    ::close(sv[1]);
    m_fd = sv[0];
  }
  ~Zygote() {
    // Normal end: close() was called. Otherwise (an exception in the runner) the zygote and its
    // points are stopped, as the runner's own exit would stop them.
    if (m_pid > 0) {
      ::kill(m_pid, SIGKILL);
      int status = 0;
      while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    if (m_fd >= 0) ::close(m_fd);
  }
  Zygote(const Zygote&) = delete;
  Zygote& operator=(const Zygote&) = delete;

  pid_t pid() const { return m_pid; }
  int fd() const { return m_fd; }
  bool alive() const { return m_pid > 0; }
  // Asks for `slot` to be run; false when the zygote is gone (the caller forks it itself).
  bool start(std::size_t slot) {
    const std::string line = std::to_string(slot) + "\n";
    return m_pid > 0 && ::send(m_fd, line.data(), line.size(), MSG_NOSIGNAL) ==
                            static_cast<ssize_t>(line.size());
  }
  // A point ended: its slot, its wait status (or -1 - errno for a failed fork) and the CPU time
  // of its process and the processes it waited for (wait4).
  struct Report {
    std::size_t slot = 0;
    int status = 0;
    double cpu_s = 0;
  };
  // The reports received so far.
  std::vector<Report> reports() {
    char buf[4096];
    for (ssize_t n; (n = ::recv(m_fd, buf, sizeof buf, MSG_DONTWAIT)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      m_in.append(buf, static_cast<std::size_t>(n));
    }
    std::vector<Report> out;
    for (std::size_t nl; (nl = m_in.find('\n')) != std::string::npos; m_in.erase(0, nl + 1)) {
      std::stringstream ss(m_in.substr(0, nl));
      Report r;
      std::string what;
      int value = 0;
      long long cpu_us = 0;
      if (!(ss >> r.slot >> what)) continue;
      if (what == "fork" && ss >> value) {
        r.status = -1 - value;
      } else {
        r.status = std::atoi(what.c_str());
        if (ss >> cpu_us) r.cpu_s = 1e-6 * static_cast<double>(cpu_us);
      }
      out.push_back(r);
    }
    return out;
  }
  // The runner reaped the zygote (it died): no more points go to it.
  void died() { m_pid = -1; }
  // No more points: the zygote exits once its points have ended; waits for it.
  void close() {
    if (m_pid <= 0) return;
    ::shutdown(m_fd, SHUT_WR);
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
    m_pid = -1;
  }

 private:
  [[noreturn]] static void serve(int fd, const std::function<int(std::size_t)>& point,
                                 const std::function<std::string(std::size_t)>& err_path,
                                 const sigset_t& mask) {
    const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) ::_exit(4);
    ::dup2(null_fd, 0);
    ::dup2(null_fd, 1);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);  // blocked since ChildSignals: read through a signalfd
    const int sfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) ::_exit(4);
#if KAPPASIM_GLIBC_MALLOC
    // glibc's malloc consolidates its fast bins (free small chunks) on a point's first large
    // allocation and sorts its unsorted chunks into bins on a miss: every point walked and
    // rewrote the same inherited chunks, copy-on-write pages included (malloc_consolidate and
    // _int_malloc, 11% of a short sweep's samples). The trim consolidates once here (and gives
    // back the free pages). Then the zygote takes every free chunk left below the heap's top
    // (core/heap_drain.hpp): a point's allocations come from untouched pages, densely, instead
    // of from chunks scattered over pages the zygote wrote, each first write a copy
    // (docs/benchmarks.md, "2026-12-05 05:40 UTC"). Addresses are no output: the files are the
    // same.
    ::malloc_trim(0);
    (void)drain_free_heap();
#endif
    std::map<pid_t, std::size_t> points;
    std::string in;
    bool eof = false;
    auto report = [fd](const std::string& line) {
      if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size()))
        ::_exit(4);  // the runner is gone (PR_SET_PDEATHSIG is on its way)
    };
    while (!eof || !points.empty()) {
      pollfd fds[2] = {{sfd, POLLIN, 0}, {eof ? -1 : fd, POLLIN, 0}};
      if (::poll(fds, 2, 1000) < 0 && errno != EINTR) ::_exit(4);
      signalfd_siginfo info;
      while (::read(sfd, &info, sizeof info) > 0) {
      }
      for (int status = 0;;) {
        rusage usage{};
        const pid_t pid = ::wait4(-1, &status, WNOHANG, &usage);
        if (pid <= 0) break;
        const auto it = points.find(pid);
        if (it == points.end()) continue;
        const long long cpu_us =
            (static_cast<long long>(usage.ru_utime.tv_sec) + usage.ru_stime.tv_sec) * 1000000 +
            usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
        report(std::to_string(it->second) + " " + std::to_string(status) + " " +
               std::to_string(cpu_us) + "\n");
        points.erase(it);
      }
      if (eof || !(fds[1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) eof = true;
      if (n > 0) in.append(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = in.find('\n')) != std::string::npos; in.erase(0, nl + 1)) {
        const std::size_t slot = std::stoul(in.substr(0, nl));
        const pid_t pid = fork_tied();
        if (pid < 0) {
          report(std::to_string(slot) + " fork " + std::to_string(errno) + "\n");
          continue;
        }
        if (pid > 0) {
          points[pid] = slot;
          continue;
        }
        // The point: what the runner's own forked child runs (run_sweep's launch).
        ::close(fd);
        ::close(sfd);
        const int err_fd = ::open(err_path(slot).c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (err_fd < 0) ::_exit(4);
        ::dup2(err_fd, 2);
        ::close(err_fd);
        ::close(null_fd);
        ::sigprocmask(SIG_SETMASK, &mask, nullptr);
        const int code = point(slot);
        exit_child(code);
      }
    }
    ::_exit(0);
  }

  pid_t m_pid = -1;
  int m_fd = -1;
  std::string m_in;
};

}  // namespace

pid_t fork_tied() {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Async-signal-safe calls only: a child that goes on to exec relies on it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before the request took hold
  }
  return pid;
}

void flush_stdio() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
}

void exit_child(int code) {
  flush_stdio();
  ::_exit(code);
}

int fork_tied_child() {
  flush_stdio();
  const pid_t pid = fork_tied();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  return pid;
}

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}

std::string kind_list() {
  std::string out;
  for (const auto& n : kinds().names()) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none registered" : out;
}

const PointKind& find_kind(const std::string& name) {
  return kinds().value(name, "--kind");  // unknown: the registry's did-you-mean InputError
}

std::string absolute_path(const std::string& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  std::string s = ec ? p : a.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool known_kind(const std::string& name) { return kinds().find(name) != nullptr; }

int checked_jobs(int jobs) {
  if (jobs < 1 || jobs > 4096)
    throw InputError(
        "-j/--jobs: expected 1 to 4096 points at once (leave it out for one per core), got " +
        std::to_string(jobs));
  return jobs;
}

namespace {

// ---- the pool (issue 24) --------------------------------------------------------------------
// One sweep of a pool: its spec, its folder (claimed and locked), the points this invocation
// runs, and what they cost. The points point into `points`: a Job is never moved once opened.
struct Job {
  SweepOptions opts;
  int shard_i = 0, shard_n = 1;
  std::vector<std::string> preset_dirs;
  SweepSpec spec;
  std::vector<Point> points;
  std::size_t total = 0;
  SweepDir d;
  std::optional<RunnerLock> lock;
  std::vector<const Point*> mine, todo;
  std::size_t batch_size = 1;
  std::size_t left = 0;  // points of todo without a record of this run yet
  bool ended = false;
  std::size_t index = 0;  // in run_sweeps' list
  SweepRun run;
};

// Everything before the first point: the options checked, the spec read and expanded, the
// folder claimed and locked, and the points this invocation runs (those with result.json are
// done already, and so are invalid ones unless retry_invalid; failed ones run again; a done
// point whose presets or preset files changed since, inputs.txt issue 12.11, runs again).
std::unique_ptr<Job> open_job(const SweepOptions& opts) {
  if (opts.spec_path.empty()) throw InputError("kappasim sweep: a SPEC file is required");
  if (opts.out_dir.empty()) throw InputError("kappasim sweep: --out DIR is required");
  auto job = std::make_unique<Job>();
  Job& j = *job;
  j.opts = opts;
  if (opts.jobs != 0) checked_jobs(opts.jobs);  // 0: one per core
  if (opts.shard) {
    j.shard_i = opts.shard->first;
    j.shard_n = opts.shard->second;
    if (j.shard_n < 1 || j.shard_i < 0 || j.shard_i >= j.shard_n)
      throw InputError("--shard: expected I/N with 0 <= I < N, got " + std::to_string(j.shard_i) +
                       "/" + std::to_string(j.shard_n));
  }
  // --preset-dir before the spec is read (its points may name those presets).
  for (const auto& pd : opts.preset_dirs) {
    j.preset_dirs.push_back(absolute_path(pd));
    PresetRegistry::instance().add_directory(j.preset_dirs.back());
  }
  const std::string spec_path = absolute_path(opts.spec_path);
  j.spec = load_sweep_spec(spec_path, opts.quick, known_kind);
  j.points = expand(j.spec);
  j.total = j.points.size();
  j.d = SweepDir{absolute_path(opts.out_dir)};
  claim_dir(j.d, j.spec, spec_path, opts.force);
  j.lock.emplace(j.d.dir, j.shard_i, j.shard_n);

  std::size_t stale = 0;
  std::string stale_example;
  for (const auto& p : j.points) {
    if (static_cast<int>(p.index % static_cast<std::size_t>(j.shard_n)) != j.shard_i) continue;
    j.mine.push_back(&p);
    const std::string pdir = j.d.point_dir(p, j.total);
    if (fs::exists(pdir + "/result.json")) {
      const auto rec = read_point_record(pdir);
      if (rec && !rec->damaged) {  // a damaged result.json is run again
        const std::string changed = changed_input(pdir);
        if (changed.empty()) continue;
        if (stale++ == 0) stale_example = point_name(p.index, j.total) + ": " + changed;
        j.todo.push_back(&p);
        continue;
      }
    }
    if (!opts.retry_invalid && fs::exists(pdir + "/error.json")) {
      const auto rec = read_point_record(pdir);
      if (rec && rec->status == "invalid") continue;
    }
    j.todo.push_back(&p);
  }
  j.left = j.todo.size();
  j.run.points_run = j.todo.size();
  const int jobs = opts.jobs != 0
                       ? opts.jobs
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (!opts.quiet)
    std::cerr << "sweep " << j.spec.name << ": " << j.total << " points"
              << (j.shard_n > 1
                      ? ", shard " + std::to_string(j.shard_i) + "/" + std::to_string(j.shard_n) +
                            " has " + std::to_string(j.mine.size())
                      : std::string())
              << ", " << (j.mine.size() - j.todo.size()) << " done before, " << j.todo.size()
              << " to run on "
              << std::min<std::size_t>(static_cast<std::size_t>(jobs),
                                       std::max<std::size_t>(j.todo.size(), 1))
              << " workers\n";
  if (!opts.quiet && stale > 0)
    std::cerr << "sweep " << j.spec.name << ": " << stale << " finished point"
              << (stale > 1 ? "s" : "")
              << " run again because a preset or file they read changed since (" << stale_example
              << ")\n";
  return job;
}

// Everything after the last point: the merge (when every point of the sweep, other shards'
// included, has a record), the summary, and the exit code over this invocation's points.
void end_job(Job& j) {
  j.ended = true;
  MergedResults merged;
  std::vector<PointRecord> records;  // every point's, when the merge read them all
  const std::vector<std::size_t> missing = try_merge(j.d, j.spec, j.points, &merged, &records);
  std::vector<std::size_t> bad;
  std::vector<std::string> bad_msgs;
  for (const Point* p : j.mine) {
    // The merge's record (read once, issue 24), or, with other shards' points missing, its own.
    const std::size_t at = static_cast<std::size_t>(p - j.points.data());
    std::optional<PointRecord> own;
    const PointRecord* r = nullptr;
    if (records.size() == j.points.size()) {
      r = &records[at];
    } else if ((own = read_point_record(j.d.point_dir(*p, j.total)))) {
      r = &*own;
    }
    if (r && r->status != "ok") {
      bad.push_back(p->index);
      bad_msgs.push_back(r->status + ": " + r->error);
    }
  }
  if (!j.opts.quiet) {
    std::cerr << "sweep " << j.spec.name << ": " << (j.mine.size() - bad.size()) << " of "
              << j.mine.size() << " points ok";
    if (!bad.empty()) std::cerr << ", " << bad.size() << " invalid or failed";
    std::cerr << "\n";
    for (std::size_t i = 0; i < bad.size() && i < 20; ++i)
      std::cerr << "  point " << bad[i] << " (" << point_name(bad[i], j.total) << ") "
                << bad_msgs[i] << "\n";
    if (bad.size() > 20) std::cerr << "  ... (" << bad.size() << " in all; see results.csv)\n";
    // issue 26 item 21: the points that warned (a tier that overflows), as `kappasim run` would.
    if (missing.empty()) std::cerr << warned_summary(merged, j.points.size());
    if (missing.empty())
      std::cerr << "results in " << j.d.dir << "/results.csv and results.jsonl\n";
    else
      std::cerr << missing.size()
                << " points of other shards not done yet; the last shard to finish "
                << "merges, or run: kappasim sweep collect " << shell_quote(j.d.dir) << "\n";
  }
  j.run.code = bad.empty() ? 0 : 3;
  j.lock.reset();  // the folder is free for another runner as soon as it is merged
}

// What one process (a point, or a batch of points) of the pool runs: the points `slots` of
// `job`, in order.
struct Unit {
  Job* job;
  std::vector<std::size_t> slots;
};

double cpu_seconds(const rusage& u) {
  const auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace

int run_sweep(const SweepOptions& opts) { return run_sweeps({opts}).front().code; }

std::vector<SweepRun> run_sweeps(const std::vector<SweepOptions>& sweeps, const SweepEnded& ended) {
  if (sweeps.empty()) return {};
  // The pool's options are the first sweep's (the others must agree: one pool, one way to run).
  const SweepOptions& opts = sweeps.front();
  for (const SweepOptions& o : sweeps)
    if (o.jobs != opts.jobs || o.exe != opts.exe || o.fork_points != opts.fork_points ||
        o.zygote != opts.zygote || o.quiet != opts.quiet)
      throw std::invalid_argument(
          "run_sweeps: the sweeps of one pool need the same jobs, exe, fork_points, zygote "
          "and quiet");
  // Every sweep opened (and its folder claimed and locked) before any point runs: a bad spec or
  // a busy folder stops the whole pool before it starts.
  std::vector<std::unique_ptr<Job>> all;
  for (const SweepOptions& o : sweeps) {
    all.push_back(open_job(o));
    all.back()->index = all.size() - 1;
  }
  // A sweep merged and summed up: the caller hears of it at once (its index, what it did).
  const auto end = [&](Job& j) {
    end_job(j);
    if (ended) ended(j.index, j.run);
  };
  const int jobs = opts.jobs != 0
                       ? opts.jobs
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  const auto t0 = Clock::now();
  const auto since_start = [&t0] {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  const std::string exe = opts.exe.empty() ? self_exe() : opts.exe;
  const bool in_process = opts.fork_points && opts.exe.empty();
  // Forked points share the answers of pure functions (SharedMemo, issue 24): mapped before the
  // first fork (a no-op in a process that has it already, such as a capacity point's probes).
  if (in_process) SharedMemo::share();
  const std::size_t workers = static_cast<std::size_t>(jobs);
  std::size_t todo_total = 0;
  for (const auto& j : all) {
    todo_total += j->todo.size();
    // Points of a batch kind go to each forked child in batches: enough batches for every
    // worker to get several (the last ones end together), at most 64 points each.
    const PointKind* kind = kinds().find(j->spec.kind);
    if (in_process && kind && kind->batch)
      j->batch_size = std::clamp<std::size_t>(j->todo.size() / (workers * 4), 1, 64);
  }
  // The units, in the sweeps' order and each sweep's points' order.
  std::vector<Unit> units;
  for (const auto& j : all)
    for (std::size_t next = 0; next < j->todo.size();) {
      Unit u{j.get(), {}};
      while (next < j->todo.size() && u.slots.size() < j->batch_size) u.slots.push_back(next++);
      units.push_back(std::move(u));
    }
  // A sweep every point of which was done before ends now (the pool's other sweeps may take a
  // while); the last one open ends after the pool, as a single sweep always has.
  const auto open_count = [&all] {
    return static_cast<std::size_t>(
        std::count_if(all.begin(), all.end(), [](const auto& j) { return !j->ended; }));
  };
  for (auto& j : all)
    if (j->left == 0 && open_count() > 1) end(*j);

  Progress progress(opts.quiet, todo_total);
  std::size_t next = 0, done = 0, failed = 0;
  std::map<pid_t, Running> running;
  std::map<std::size_t, Running> zrunning;  // units the zygote runs, by unit
  {
    ChildSignals signals;
    std::optional<Zygote> zygote;
    std::size_t zygote_units = 0;  // units that existed when the zygote was forked
    // The point's folder, point.yaml and command.txt (what its process would be run with).
    auto prepare = [&](const Job& j, std::size_t slot) {
      const Point& p = *j.todo[slot];
      const std::string pdir = j.d.point_dir(p, j.total);
      std::error_code ec;
      fs::remove_all(pdir, ec);  // a retry starts clean
      fs::create_directories(pdir, ec);
      if (ec) throw IoError("cannot create '" + pdir + "': " + ec.message());
      write_file_replace(pdir + "/point.yaml", emit_yaml(point_config(j.spec, p)));
      std::vector<std::string> args = {exe,
                                       "sweep",
                                       "point",
                                       "--kind",
                                       j.spec.kind,
                                       "--config",
                                       pdir + "/point.yaml",
                                       "--base-dir",
                                       j.spec.base_dir,
                                       "--seed",
                                       std::to_string(p.seed),
                                       "--out",
                                       pdir};
      for (const auto& pd : j.preset_dirs) {
        args.push_back("--preset-dir");
        args.push_back(pd);
      }
      std::string cmd;
      // The environment's preset path too, so the line reruns the point alone (issue 12.11).
      if (const char* env_path = std::getenv("KAPPASIM_PRESET_PATH"); env_path && *env_path)
        cmd = "KAPPASIM_PRESET_PATH=" + shell_quote(env_path);
      for (const auto& a : args) cmd += (cmd.empty() ? "" : " ") + shell_quote(a);
      write_file_replace(pdir + "/command.txt", cmd + "\n");
      return args;
    };
    auto point_options = [&](const Job& j, std::size_t slot) {
      const Point& p = *j.todo[slot];
      PointRunOptions po;
      po.kind = j.spec.kind;
      po.config = j.d.point_dir(p, j.total) + "/point.yaml";
      po.base_dir = j.spec.base_dir;
      po.out = j.d.point_dir(p, j.total);
      po.seed = p.seed;
      po.preset_dirs = j.preset_dirs;
      return po;
    };
    // A unit of one point: to the zygote, or forked here.
    auto launch = [&](std::size_t unit) {
      const Job& j = *units[unit].job;
      const std::size_t slot = units[unit].slots.front();
      const std::string pdir = j.d.point_dir(*j.todo[slot], j.total);
      std::vector<std::string> args = prepare(j, slot);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      const std::string err_path = pdir + "/stderr.txt";
      if (zygote && zygote->alive() && unit < zygote_units) {
        // stderr.txt created here, so that a folder that cannot be written fails as below.
        const int fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) throw IoError("cannot write '" + err_path + "': " + std::strerror(errno));
        ::close(fd);
        if (zygote->start(unit)) {
          zrunning[unit] = Running{unit, Clock::now(), {}, -1};
          return;
        }
        // The zygote is gone: this point is forked here (its death is handled when reaped).
      }
      const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
      if (err_fd < 0 || null_fd < 0)
        throw IoError("cannot write '" + err_path + "': " + std::strerror(errno));
      PointRunOptions po;
      if (in_process) {
        po = point_options(j, slot);
        // Nothing buffered in this process may be written twice by the child.
        flush_stdio();
      }
      const pid_t pid = fork_tied();
      if (pid == 0 && in_process) {
        // Child: `kappasim sweep point` in this already warm process (what main() would print
        // and return for it: exit 2 for bad input, the IoError's code, 1 otherwise).
        ::dup2(null_fd, 0);
        ::dup2(null_fd, 1);
        ::dup2(err_fd, 2);
        ::close(err_fd);
        ::close(null_fd);
        ::sigprocmask(SIG_SETMASK, &signals.old(), nullptr);
        const int code = run_point_code(po);
        exit_child(code);
      }
      if (pid < 0) {
        ::close(err_fd);
        ::close(null_fd);
        throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
      }
      if (pid == 0) {
        // Child: async-signal-safe calls only until exec.
        ::dup2(null_fd, 0);
        ::dup2(null_fd, 1);
        ::dup2(err_fd, 2);
        ::sigprocmask(SIG_SETMASK, &signals.old(), nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
      }
      ::close(err_fd);
      ::close(null_fd);
      running[pid] = Running{unit, Clock::now(), {}, -1};
    };
    // Several points of a batch kind in one forked child, one after another (issue 24): each
    // with its own stderr.txt, result.json / inputs.txt from run_point, and its exit code and
    // wall time reported on a pipe, so that each is recorded as if it had had its own process.
    auto launch_batch = [&](std::size_t unit) {
      const Job& j = *units[unit].job;
      const std::vector<std::size_t>& slots = units[unit].slots;
      for (std::size_t slot : slots) prepare(j, slot);
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
      flush_stdio();
      const pid_t pid = fork_tied();
      if (pid == 0) {
        ::close(fds[0]);
        const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0) ::_exit(4);
        ::dup2(null_fd, 0);
        ::dup2(null_fd, 1);
        ::close(null_fd);
        ::sigprocmask(SIG_SETMASK, &signals.old(), nullptr);
        for (std::size_t k = 0; k < slots.size(); ++k) {
          const auto t0 = Clock::now();
          const PointRunOptions po = point_options(j, slots[k]);
          const std::string err_path = po.out + "/stderr.txt";
          const int err_fd =
              ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
          if (err_fd < 0) ::_exit(4);
          std::cerr.flush();
          ::dup2(err_fd, 2);
          ::close(err_fd);
          const int code = run_point_code(po);
          flush_stdio();
          const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
          char line[64];
          const int n = std::snprintf(line, sizeof line, "%zu %d %.9f\n", k, code, wall);
          if (n <= 0 || ::write(fds[1], line, static_cast<std::size_t>(n)) != n) ::_exit(4);
        }
        ::_exit(0);
      }
      ::close(fds[1]);
      if (pid < 0) {
        ::close(fds[0]);
        throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
      }
      running[pid] = Running{unit, Clock::now(), slots, fds[0]};
    };
    // Points of a batch that died: run again, each alone (a unit of its own, forked here).
    std::vector<std::size_t> alone;
    auto finish = [&](Job& j, std::size_t slot, int status, double wall) {
      const Point& p = *j.todo[slot];
      const std::string pdir = j.d.point_dir(p, j.total);
      const bool has_result = fs::exists(pdir + "/result.json");
      const auto rec = has_result ? read_point_record(pdir) : std::nullopt;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && rec && !rec->damaged;
      write_file_replace(pdir + "/timing.json", "{\"wall_time_s\": " + format_number(wall) + "}\n");
      ++done;
      if (!ok) {
        ++failed;
        PointError e;
        e.stderr_tail = tail_lines(pdir + "/stderr.txt", 20);
        std::string kappasim_line;
        for (const auto& l : e.stderr_tail)
          if (l.rfind("kappasim: ", 0) == 0)
            kappasim_line = l.substr(l.rfind("kappasim: error: ", 0) == 0 ? 17 : 10);
        replace_all(kappasim_line, pdir + "/", "");
        if (WIFSIGNALED(status)) {
          e.status = "failed";
          e.signal_name = signal_name(WTERMSIG(status));
          e.message = "killed by " + e.signal_name;
        } else {
          e.exit_code = WEXITSTATUS(status);
          e.status = e.exit_code == 2 ? "invalid" : "failed";
          if (e.exit_code == 0)
            e.message =
                rec ? "exited 0 with a " + rec->error : "exited 0 without writing result.json";
          else
            e.message =
                kappasim_line.empty() ? "exit code " + std::to_string(e.exit_code) : kappasim_line;
        }
        if (has_result) fs::remove(pdir + "/result.json");
        write_file_replace(pdir + "/error.json", error_json(e));  // as result.json
      }
      progress.update(done, failed, false);
      j.run.last_end_s = since_start();
      // The sweep's last point: merged now, while the pool runs the other sweeps' points (the
      // last sweep open ends after the pool, as a single sweep always has).
      if (--j.left == 0 && open_count() > 1) end(j);
    };
    auto started = [&](std::size_t unit) {
      SweepRun& r = units[unit].job->run;
      if (r.first_start_s < 0) r.first_start_s = since_start();
    };
    auto reap = [&](pid_t pid, int status, const rusage& usage) {
      auto it = running.find(pid);
      if (it == running.end()) return;
      const Running r = it->second;
      const double wall = std::chrono::duration<double>(Clock::now() - r.start).count();
      running.erase(it);
      Job& j = *units[r.slot].job;
      j.run.cpu_s += cpu_seconds(usage);
      if (r.batch.empty()) {
        finish(j, units[r.slot].slots.front(), status, wall);
        return;
      }
      // The child has exited, so the pipe holds all it reported (a batch is at most 64 short
      // lines, well within a pipe's buffer: the child never blocked on it).
      std::string text;
      char buf[4096];
      for (ssize_t n; (n = ::read(r.pipe_fd, buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        text.append(buf, static_cast<std::size_t>(n));
      }
      ::close(r.pipe_fd);
      std::vector<std::optional<std::pair<int, double>>> got(r.batch.size());
      std::stringstream ss(text);
      double reported = 0;
      for (std::size_t k; ss >> k;) {
        int code = 0;
        double w = 0;
        if (!(ss >> code >> w) || k >= got.size()) break;
        got[k] = std::make_pair(code, w);
        reported += w;
      }
      bool died = false;
      for (std::size_t k = 0; k < r.batch.size(); ++k) {
        if (got[k]) {
          finish(j, r.batch[k], (got[k]->first & 0xff) << 8, got[k]->second);
        } else if (!died) {
          // The point the child was running when it died: its status is the child's.
          died = true;
          finish(j, r.batch[k], status, std::max(0.0, wall - reported));
        } else {
          units.push_back(Unit{&j, {r.batch[k]}});
          alone.push_back(units.size() - 1);
        }
      }
    };
    // Forked points inherit the presets parsed instead of each parsing its own
    // (core/preset_warm.hpp).
    if (in_process && todo_total > 0) parse_all_presets();
    // Single points go through a zygote (above) unless the options say otherwise.
    const bool any_single = std::any_of(units.begin(), units.end(),
                                        [](const Unit& u) { return u.job->batch_size == 1; });
    if (in_process && opts.zygote && any_single) {
      zygote_units = units.size();
      zygote.emplace(
          [&](std::size_t unit) {
            return run_point_code(point_options(*units[unit].job, units[unit].slots.front()));
          },
          [&](std::size_t unit) {
            const Job& j = *units[unit].job;
            return j.d.point_dir(*j.todo[units[unit].slots.front()], j.total) + "/stderr.txt";
          },
          signals.old());
    }
    // SIGCHLD (blocked since ChildSignals) through a descriptor, so that the pool waits on it
    // and on the zygote's socket at once. Opened after the zygote's fork: the zygote has its own.
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    const int sfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) throw std::runtime_error(std::string("signalfd failed: ") + std::strerror(errno));
    struct CloseFd {
      int fd;
      ~CloseFd() { ::close(fd); }
    } close_sfd{sfd};
    // The zygote's reports: each point ended (or could not be forked).
    auto zygote_reports = [&] {
      bool any = false;
      for (const Zygote::Report& rep : zygote->reports()) {
        const auto it = zrunning.find(rep.slot);
        if (it == zrunning.end()) continue;
        const double wall = std::chrono::duration<double>(Clock::now() - it->second.start).count();
        zrunning.erase(it);
        if (rep.status < 0)
          throw std::runtime_error(std::string("fork failed: ") + std::strerror(-1 - rep.status));
        Job& j = *units[rep.slot].job;
        j.run.cpu_s += rep.cpu_s;
        finish(j, units[rep.slot].slots.front(), rep.status, wall);
        any = true;
      }
      return any;
    };
    const std::size_t planned = units.size();  // units[planned..] are points run again alone
    auto launch_next = [&] {
      std::size_t unit = 0;
      if (!alone.empty()) {
        unit = alone.front();
        alone.erase(alone.begin());
      } else {
        unit = next++;
      }
      started(unit);
      // A batch kind's planned units are batches (of one, the last, as well); a point run again
      // alone is forked here by itself.
      if (units[unit].job->batch_size > 1 && unit < planned)
        launch_batch(unit);
      else
        launch(unit);
    };
    while (next < planned || !alone.empty() || !running.empty() || !zrunning.empty()) {
      while ((next < planned || !alone.empty()) && running.size() + zrunning.size() < workers)
        launch_next();
      bool any = false;
      // This runner's own children only (the zygote, the points and batches it forked): its
      // caller may have children of its own (reproduce's pool process, issue 24).
      std::vector<pid_t> children;
      if (zygote && zygote->alive()) children.push_back(zygote->pid());
      for (const auto& r : running) children.push_back(r.first);
      for (const pid_t child : children) {
        int status = 0;
        rusage usage{};
        pid_t pid = 0;
        while ((pid = ::wait4(child, &status, WNOHANG, &usage)) < 0 && errno == EINTR) {
        }
        if (pid != child) continue;
        if (zygote && pid == zygote->pid()) {
          // The zygote died (killed from outside): what it reported stands; the points it was
          // running died with it (PR_SET_PDEATHSIG) and run again, each forked here.
          zygote->died();
          zygote_reports();
          for (const auto& z : zrunning) alone.push_back(z.first);
          zrunning.clear();
          any = true;
          continue;
        }
        reap(pid, status, usage);
        any = true;
      }
      if (zygote && zygote_reports()) any = true;
      if (any || (running.empty() && zrunning.empty())) continue;
      // Wait for a child of this process to end (SIGCHLD) or the zygote to report.
      pollfd fds[2] = {{sfd, POLLIN, 0},
                       {zygote && zygote->alive() ? zygote->fd() : -1, POLLIN, 0}};
      ::poll(fds, 2, 1000);
      signalfd_siginfo info;
      while (::read(sfd, &info, sizeof info) > 0) {
      }
      progress.update(done, failed, false);
    }
    if (zygote) zygote->close();
  }
  if (todo_total > 0) progress.update(done, failed, true);
  for (auto& j : all)
    if (!j->ended) end(*j);
  std::vector<SweepRun> out;
  for (const auto& j : all) out.push_back(j->run);
  return out;
}

int collect_sweep(const CollectOptions& o) {
  if (o.dir.empty()) throw InputError("kappasim sweep collect: a sweep folder DIR is required");
  SweepDir d{absolute_path(o.dir)};
  auto rec = read_sweep_yaml(d.dir);
  if (!rec)
    throw InputError("kappasim sweep collect: '" + o.dir +
                     "' has no sweep.yaml (not a sweep folder)");
  const SweepSpec spec = parse_sweep_spec(rec->spec, rec->base_dir, rec->quick, nullptr);
  if (spec_hash(spec) != rec->hash)
    throw InputError(d.dir +
                     "/sweep.yaml: the recorded spec does not match its hash (edited by hand?)");
  const std::vector<Point> points = expand(spec);
  MergedResults merged;
  const auto missing = try_merge(d, spec, points, &merged);
  if (!missing.empty()) {
    std::cerr << "kappasim: sweep collect: " << missing.size() << " of " << points.size()
              << " points have no result yet: " << id_list(missing, 1000) << "\n";
    return 3;
  }
  if (o.aggregate) {
    // Replicates and intervals (issue 11.1): a pure function of results.csv (sweeps/aggregate).
    const SweepTable table = parse_csv(merged.csv, d.dir + "/results.csv");
    const Aggregated agg = aggregate_table(table, config_columns(spec, table),
                                           {"point", "replicate", "seed", "status", "error"});
    write_file_atomic(d.dir + "/aggregate.csv", agg.csv);
    write_file_atomic(d.dir + "/aggregate.json", agg.json);
    if (!o.quiet) std::cerr << "aggregates in " << d.dir << "/aggregate.csv and aggregate.json\n";
  }
  if (!o.baseline.empty()) {
    const SweepTable table = parse_csv(merged.csv, d.dir + "/results.csv");
    write_file_atomic(d.dir + "/paired.csv",
                      paired_table(table, config_columns(spec, table),
                                   {"point", "replicate", "seed", "status", "error"},
                                   parse_baseline(o.baseline)));
    if (!o.quiet)
      std::cerr << "paired differences against " << o.baseline << " in " << d.dir
                << "/paired.csv\n";
  }
  if (!o.quiet) {
    std::cerr << "sweep " << spec.name << ": " << (points.size() - merged.not_ok.size()) << " of "
              << points.size() << " points ok";
    if (!merged.not_ok.empty()) std::cerr << "; invalid or failed: " << id_list(merged.not_ok);
    std::cerr << "\n" << warned_summary(merged, points.size());
    std::cerr << "results in " << d.dir << "/results.csv and results.jsonl\n";
  }
  return merged.not_ok.empty() ? 0 : 3;
}

}  // namespace kappasim::sweep
