// kappasim validate [--dir DIR] [--out FILE.md] [--check] [-j N]: runs every validation row
// (experiments/validation/*.yaml, core/validation.hpp) and writes the table of measured against
// simulated values (docs/validation.md is its output). Each row's command runs in its own
// process (this binary, fork+exec: one SystemC simulation per process), started in the folder of
// the row's file so it may name YAML files beside it. Bad rows or a failing
// command: exit 2 before anything is written. --check: exit 1 when a ratio is out of its band.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "apps/kappasim/cli.hpp"
#include "core/output.hpp"
#include "core/validation.hpp"

#ifndef KAPPASIM_SOURCE_DIR
#define KAPPASIM_SOURCE_DIR "."
#endif

namespace kappasim::cli {

namespace {

namespace fs = std::filesystem;

std::string self_path() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}

std::string read_all(int fd) {
  std::string s;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0)
      s.append(buf, static_cast<std::size_t>(n));
    else if (n == 0)
      break;
    else if (errno != EINTR)
      break;
  }
  return s;
}

// Runs `exe argv...`: stdout through a pipe, stderr into an unlinked temporary file (so neither
// can block the other).
CommandOutput run_child(const std::string& exe, const std::vector<std::string>& args,
                        const std::string& cwd) {
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  std::FILE* err_file = std::tmpfile();
  if (!err_file) throw std::runtime_error(std::string("tmpfile failed: ") + std::strerror(errno));
  std::vector<std::string> full = {exe};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int err_fd = ::fileno(err_file);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // Child: async-signal-safe calls only until exec.
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  CommandOutput o;
  o.out = read_all(out_pipe[0]);
  ::close(out_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::fflush(err_file);
  ::lseek(err_fd, 0, SEEK_SET);
  o.err = read_all(err_fd);
  std::fclose(err_file);
  return o;
}

}  // namespace

int cmd_validate(const std::vector<std::string>& args) {
  std::string dir = (fs::path(KAPPASIM_SOURCE_DIR) / "experiments" / "validation").string();
  std::string out, areas;
  bool check = false;
  int jobs = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  po::options_description desc(
      "kappasim validate: run every validation row (published measurement + the kappasim command "
      "that reproduces it) and write the measured-vs-simulated table\n"
      "Usage: kappasim validate [--dir DIR] [--area A[,B]] [--out FILE.md] [--check] [-j N]\n"
      "Options");
  desc.add_options()("dir", po::value(&dir),
                     "folder of row files *.yaml (default: the source tree's "
                     "experiments/validation)")("out", po::value(&out),
                                                "write the Markdown table here (default: stdout)")(
      "area", po::value(&areas),
      "only the rows of these areas, comma-separated: link, compute, serving (default: all)")(
      "check", po::bool_switch(&check), "exit 1 when any ratio is outside its band")(
      "jobs,j", po::value(&jobs),
      "commands run at once, each its own process (default: one per core, at most 4)")("help,h",
                                                                                       "this help");
  auto vm = parse("validate", args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (jobs < 1) throw InputError("--jobs: expected at least 1, got " + std::to_string(jobs));
  std::vector<ValidationRow> rows = read_validation_dir(dir);
  if (!areas.empty()) {
    std::set<std::string> keep;
    std::stringstream list(areas);
    for (std::string a; std::getline(list, a, ',');) {
      if (a != "link" && a != "compute" && a != "serving")
        throw InputError("--area: '" + a + "' is not one of link, compute, serving");
      keep.insert(a);
    }
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&](const ValidationRow& r) { return !keep.count(r.area); }),
               rows.end());
  }
  const std::string exe = self_path();
  std::vector<ValidationResult> results;
  // Rows that share a command (the ratio rows of one benchmark and their baselines) run it once:
  // a command's output is a pure function of its argv and folder (same inputs, same bytes). The
  // distinct commands run first, `jobs` at a time (each its own process); the rows then read
  // their outputs in file order, so the table does not depend on the job count.
  using Key = std::pair<std::string, std::vector<std::string>>;
  std::map<Key, CommandOutput> ran;
  std::vector<Key> todo;
  for (const ValidationRow& r : rows)
    for (auto& a : row_commands(r)) {
      Key k{row_folder(r), std::move(a)};
      if (ran.emplace(k, CommandOutput{}).second) todo.push_back(std::move(k));
    }
  {
    std::vector<CommandOutput> outs(todo.size());
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> workers;
    std::mutex failed_mutex;
    std::string failed;  // a worker's exception (fork or pipe failure), rethrown below
    for (int w = 0; w < std::min<int>(jobs, static_cast<int>(todo.size())); ++w)
      workers.emplace_back([&] {
        for (std::size_t i = next++; i < todo.size(); i = next++) try {
            outs[i] = run_child(exe, todo[i].second, todo[i].first);
          } catch (const std::exception& e) {
            const std::lock_guard<std::mutex> lock(failed_mutex);
            failed = e.what();
          }
      });
    for (auto& t : workers) t.join();
    if (!failed.empty()) throw std::runtime_error(failed);
    for (std::size_t i = 0; i < todo.size(); ++i) ran[todo[i]] = std::move(outs[i]);
  }
  for (const ValidationRow& r : rows)
    results.push_back(
        evaluate_row(r, [&](const std::vector<std::string>& a, const std::string& cwd) {
          const auto key = std::make_pair(cwd, a);
          auto it = ran.find(key);
          if (it == ran.end()) it = ran.emplace(key, run_child(exe, a, cwd)).first;
          return it->second;
        }));
  const std::string md = validation_markdown(results, "kappasim validate --out docs/validation.md");
  if (out.empty())
    std::cout << md;
  else
    write_file_atomic(out, md);
  int bad = 0, known = 0;
  for (const auto& r : results) {
    if (r.row.known_gap) {
      ++known;
      if (!r.in_band) continue;  // expected: the named mechanism is missing
      ++bad;
      std::cerr << "kappasim validate: " << r.row.loc.str() << ": row '" << r.row.id << "': ratio "
                << r.ratio << " is inside its band [" << r.row.band_lo << ", " << r.row.band_hi
                << "] but the row says known_gap: true; drop the flag\n";
      continue;
    }
    if (r.in_band) continue;
    ++bad;
    std::cerr << "kappasim validate: " << r.row.loc.str() << ": row '" << r.row.id << "': ratio "
              << r.ratio << " outside its band [" << r.row.band_lo << ", " << r.row.band_hi
              << "]\n";
  }
  std::cerr << "kappasim validate: " << results.size() << " rows, " << bad << " failing (" << known
            << " marked known_gap)\n";
  return check && bad > 0 ? 1 : 0;
}

}  // namespace kappasim::cli
