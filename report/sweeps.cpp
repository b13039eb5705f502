#include "report/sweeps.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <utility>

#include "core/error.hpp"

namespace kappasim::report {

namespace fs = std::filesystem;

namespace {

// The CPU time of this process's waited-for children (their own children included).
double children_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_CHILDREN, &u);
  const auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace

SweepSource::SweepSource(std::string out, std::string experiments, bool quick, bool quiet,
                         SweepRunner run, SweepPoolRunner pool)
    : m_out(std::move(out)),
      m_experiments(std::move(experiments)),
      m_quick(quick),
      m_quiet(quiet),
      m_run(std::move(run)),
      m_pool(std::move(pool)) {}

std::string SweepSource::sweep_dir(const std::string& name) const {
  return (fs::path(m_out) / "sweeps" / (m_quick ? name + "-quick" : name)).string();
}

void SweepSource::prefetch(const std::vector<std::string>& rels) {
  if (!m_pool || rels.empty() || m_pool_run) return;
  std::vector<std::pair<std::string, std::string>> jobs;
  for (const std::string& rel : rels) {
    const std::string spec = (fs::path(m_experiments) / rel).string();
    if (!fs::exists(spec)) throw InputError(spec + ": sweep spec not found (--experiments DIR?)");
    jobs.emplace_back(spec, sweep_dir(fs::path(rel).stem().string()));
    m_pooled[rel] = jobs.size() - 1;
  }
  if (!m_quiet)
    std::cerr << "reproduce: " << jobs.size() << " sweeps through one pool of workers\n";
  m_pool_run = m_pool(jobs);
}

double SweepSource::finish_pool() {
  if (!m_pool_run) return m_pool_wall_s;
  m_pool_wall_s = m_pool_run->finish();
  m_pool_run.reset();
  if (!m_quiet) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "reproduce: the pool took %.2f s wall\n", m_pool_wall_s);
    std::cerr << buf;
  }
  return m_pool_wall_s;
}

SweepData SweepSource::run(const std::string& rel) {
  const std::string spec = (fs::path(m_experiments) / rel).string();
  if (!fs::exists(spec)) throw InputError(spec + ": sweep spec not found (--experiments DIR?)");
  SweepData d;
  d.name = fs::path(rel).stem().string();
  d.dir = sweep_dir(d.name);
  if (!m_quiet) std::cerr << "reproduce: sweep " << rel << " -> " << d.dir << "\n";
  // Where reproduce's time goes (issue 24), on stderr only: the sweep's wall time and the CPU
  // time of the processes it ran (its points, and their own children: capacity probes).
  SweepTiming timing;
  timing.name = d.name;
  int rc = 0;
  if (const auto pooled = m_pooled.find(rel); pooled != m_pooled.end() && m_pool_run) {
    // Run by prefetch's pool: waited for and read back (its points' span in the pool, their CPU).
    const PooledSweep p = m_pool_run->wait(pooled->second);
    rc = p.code;
    timing.pooled = true;
    timing.wall_s = p.first_start_s >= 0 ? std::max(0.0, p.last_end_s - p.first_start_s) : 0.0;
    timing.cpu_s = p.cpu_s;
    if (!m_quiet) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "reproduce: sweep %s: run in the pool, its points %.2f s from first start to "
                    "last end, %.2f s CPU in its points\n",
                    d.name.c_str(), timing.wall_s, timing.cpu_s);
      std::cerr << buf;
    }
  } else {
    const double cpu0 = children_cpu_s();
    const auto t0 = std::chrono::steady_clock::now();
    rc = m_run(spec, d.dir);
    timing.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    timing.cpu_s = children_cpu_s() - cpu0;
    if (!m_quiet) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "reproduce: sweep %s: %.2f s wall, %.2f s CPU in its points\n",
                    d.name.c_str(), timing.wall_s, timing.cpu_s);
      std::cerr << buf;
    }
  }
  if (rc != 0 && rc != 3)
    throw std::runtime_error("sweep " + rel + " ended with exit code " + std::to_string(rc));
  d.table = read_results(d.dir);
  timing.points = d.table.rows.size();
  m_timings.push_back(timing);
  const ResultsTable& t = d.table;
  // Why, by class: a point a part cannot hold or run (its weights do not fit the HBM at that TP,
  // or the GPU has no rate for the precision) is infeasible by the hardware, not a failure.
  std::size_t bad = 0, fit = 0, kv = 0, precision = 0;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.ok(r)) continue;
    ++bad;
    const std::string e = t.get(r, "error");
    if (e.find("does not fit on GPU") != std::string::npos)
      ++fit;
    else if (e.find("do not fit the GPUs' KV cache") != std::string::npos)
      ++kv;
    else if (e.find("has no peak rate for precision") != std::string::npos ||
             e.find("needs a GPU that writes FP4") != std::string::npos)
      ++precision;
  }
  if (bad > 0) {
    std::string why;
    const auto add = [&why](std::size_t n, const char* what) {
      if (n > 0) why += (why.empty() ? "" : "; ") + std::to_string(n) + " " + what;
    };
    add(fit, "infeasible: the model's weights do not fit the GPU's HBM at that TP");
    add(kv, "infeasible: the prompt does not fit the GPUs' KV cache");
    add(precision, "infeasible: the GPU has no rate for that precision");
    add(bad - fit - kv - precision, "failed otherwise");
    m_problems.push_back(rel + ": " + std::to_string(bad) + " of " + std::to_string(t.rows.size()) +
                         " points did not complete (" + why + "), each with its reason (see " +
                         fs::relative(d.dir, m_out).string() + "/results.csv, column error)");
  }
  return d;
}

}  // namespace kappasim::report
