// kappasim reproduce --out DIR [--quick] [-j N]: the κ paper's analysis end to end, on the
// analytic model and on the simulator, plus the architecture studies, into DIR/report.md with
// tables and figures (gnuplot scripts next to their CSV data in DIR/figures/).
//
// This file is the command line only: options, the output folder's claim, and the two runners
// the report needs (each sweep through the sweep runner, each Eq. 6 probe as a child kappasim).
// The report itself, one file per section with explicit inputs and outputs, is the report/
// library (report/reproduce.hpp; docs/report.md lists the sections).
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "apps/kappasim/analysis_eval.hpp"
#include "apps/kappasim/cli.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
#include "core/shared_memo.hpp"
#include "report/reproduce.hpp"
#include "sweeps/runner/runner.hpp"

#ifndef KAPPASIM_SOURCE_DIR
#define KAPPASIM_SOURCE_DIR "."
#endif

namespace kappasim::cli {

namespace fs = std::filesystem;

namespace {

// reproduce's pool of sweeps (issue 24): sweep::run_sweeps in a forked child of this process
// (still warm, no simulation run: what `sweep` forks its points from), so that the report's
// sections, and the sweeps it generates, run here meanwhile. The child reports each sweep as it
// is merged on a pipe ("INDEX CODE CPU FIRST LAST"), then "end WALL"; its error, if any, goes to
// stderr as kappasim's would, and its exit code says which (2 bad input, 4 I/O, 1 other).
// PR_SET_PDEATHSIG: a killed reproduce takes the pool with it (and the pool its points).
class PoolProcess final : public report::SweepPool {
 public:
  explicit PoolProcess(const std::vector<sweep::SweepOptions>& all) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
    // One table of pure-function answers for the pool and this process's own sweeps (they would
    // each map their own in run_sweeps otherwise).
    kappasim::SharedMemo::share();
    try {
      m_pid = sweep::fork_tied_child();
    } catch (...) {
      ::close(fds[0]);
      ::close(fds[1]);
      throw;
    }
    if (m_pid == 0) {
      ::close(fds[0]);
      ::_exit(serve(all, fds[1]));
    }
    ::close(fds[1]);
    m_fd = fds[0];
  }
  ~PoolProcess() override {
    if (m_pid > 0) {  // not finished (an error in the report): stopped with its points
      ::kill(m_pid, SIGKILL);
      reap();
    }
    if (m_fd >= 0) ::close(m_fd);
  }
  PoolProcess(const PoolProcess&) = delete;
  PoolProcess& operator=(const PoolProcess&) = delete;

  report::PooledSweep wait(std::size_t index) override {
    while (m_got.find(index) == m_got.end())
      if (!read_line()) fail("before its sweep " + std::to_string(index) + " was merged");
    return m_got[index];
  }
  double finish() override {
    while (!m_ended)
      if (!read_line()) fail("before its end");
    const int status = reap();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_with(status, "at its end");
    return m_wall_s;
  }

 private:
  static int serve(const std::vector<sweep::SweepOptions>& all, int fd) {
    const auto send = [fd](const std::string& line) {
      std::size_t done = 0;
      while (done < line.size()) {
        const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) ::_exit(4);  // reproduce is gone (PR_SET_PDEATHSIG is on its way)
        done += static_cast<std::size_t>(n);
      }
    };
    int code = 0;
    try {
      const auto t0 = std::chrono::steady_clock::now();
      sweep::run_sweeps(all, [&send](std::size_t i, const sweep::SweepRun& r) {
        char line[192];
        std::snprintf(line, sizeof line, "%zu %d %.9g %.9g %.9g\n", i, r.code, r.cpu_s,
                      r.first_start_s, r.last_end_s);
        send(line);
      });
      char line[64];
      std::snprintf(line, sizeof line, "end %.9g\n",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      send(line);
    } catch (const std::exception&) {
      code = report_current_exception();
    }
    sweep::flush_stdio();
    return code;
  }
  // One line from the pool; false at its end of file.
  bool read_line() {
    std::size_t nl;
    while ((nl = m_in.find('\n')) == std::string::npos) {
      char buf[4096];
      const ssize_t n = ::read(m_fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      m_in.append(buf, static_cast<std::size_t>(n));
    }
    std::stringstream ss(m_in.substr(0, nl));
    m_in.erase(0, nl + 1);
    std::string first;
    ss >> first;
    if (first == "end") {
      ss >> m_wall_s;
      m_ended = true;
    } else {
      report::PooledSweep p;
      ss >> p.code >> p.cpu_s >> p.first_start_s >> p.last_end_s;
      m_got[std::stoul(first)] = p;
    }
    return true;
  }
  int reap() {
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
    m_pid = -1;
    return status;
  }
  [[noreturn]] void fail(const std::string& when) {
    const int status = m_pid > 0 ? reap() : 0;
    fail_with(status, when);
  }
  // The pool's error is on stderr already (its own kappasim: error: line): thrown with its class.
  [[noreturn]] static void fail_with(int status, const std::string& when) {
    const std::string what =
        "reproduce: the pool of sweeps ended " +
        (WIFSIGNALED(status) ? "by signal " + std::to_string(WTERMSIG(status))
                             : "with exit code " + std::to_string(WEXITSTATUS(status))) +
        " " + when + " (its error, if any, is above)";
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) throw InputError(what);
    if (WIFEXITED(status) && WEXITSTATUS(status) >= 3) throw IoError(what, WEXITSTATUS(status));
    throw std::runtime_error(what);
  }

  pid_t m_pid = -1;
  int m_fd = -1;
  std::string m_in;
  std::map<std::size_t, report::PooledSweep> m_got;
  bool m_ended = false;
  double m_wall_s = 0;
};

}  // namespace

int cmd_reproduce(const std::vector<std::string>& args) {
  report::ReproduceOptions R;
  R.experiments = (fs::path(KAPPASIM_SOURCE_DIR) / "experiments").string();
  int jobs = 0;
  bool force = false;
  po::options_description desc(
      "kappasim reproduce: the κ paper's analysis end to end on the analytic model and the\n"
      "simulator, plus the architecture studies -> DIR/report.md (tables, figures, data).\n"
      "Sweeps run resumably into DIR/sweeps/; rerunning continues where a killed run stopped.\n"
      "Usage: kappasim reproduce --out DIR [--quick] [-j N]\nOptions");
  desc.add_options()("out,o", po::value(&R.out),
                     "output folder (kept between runs: sweeps resume)")(
      "quick", po::bool_switch(&R.quick),
      "small sweeps (CI): every section, fewer points and requests")(
      "force", po::bool_switch(&force),
      "write into DIR even if it holds files kappasim did not write")(
      "quiet,q", po::bool_switch(&R.quiet), "print nothing on success (errors still go to stderr)")(
      "jobs,j", po::value(&jobs), "points run at once (default: the number of cores)")(
      "experiments", po::value(&R.experiments),
      "folder holding reproduce/ and studies/ sweep specs")("help,h", "this help");
  auto vm = parse("reproduce", args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (R.out.empty()) throw InputError("kappasim reproduce: --out DIR is required");
  if (vm.count("jobs")) sweep::checked_jobs(jobs);
  R.jobs = jobs;
  if (!fs::is_directory(fs::path(R.experiments) / "reproduce"))
    throw InputError("--experiments: " + R.experiments +
                     " has no reproduce/ folder of sweep specs");
  claim_output_dir(R.out, force);  // refuses a user's non-empty folder (core/output)

  // Each sweep resumably, with this command's -j, --quick and --quiet.
  const auto options = [&](const std::string& spec, const std::string& out_dir) {
    sweep::SweepOptions o;
    o.spec_path = spec;
    o.out_dir = out_dir;
    o.jobs = jobs;
    o.quick = R.quick;
    o.quiet = R.quiet;
    o.fork_points = true;  // points in forked children of this warm process (no simulation here)
    return o;
  };
  const report::SweepRunner run_sweep = [&](const std::string& spec, const std::string& out_dir) {
    return sweep::run_sweep(options(spec, out_dir));
  };
  // The sweeps of experiments/ through one pool (sweep::run_sweeps) in a child process, with
  // the same options, while the report goes on (PoolProcess above).
  const report::SweepPoolRunner pool =
      [&](const std::vector<std::pair<std::string, std::string>>& specs_and_dirs)
      -> std::unique_ptr<report::SweepPool> {
    std::vector<sweep::SweepOptions> all;
    for (const auto& [spec, out_dir] : specs_and_dirs) all.push_back(options(spec, out_dir));
    return std::make_unique<PoolProcess>(all);
  };
  // Each Eq. 6 probe as a child `kappasim probe ...` (apps/kappasim/analysis_eval).
  const report::ProbeRunner probe = [](const std::vector<std::string>& a,
                                       const std::string& pointer, const std::string& work_file,
                                       const std::string& what) {
    return run_command_value(a, {}, pointer, work_file, what);
  };
  const std::string report = report::write_reproduce_report(R, run_sweep, probe, pool);
  if (!R.quiet) std::cout << "report: " << report << "\n";
  return 0;
}

}  // namespace kappasim::cli
