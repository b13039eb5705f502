#include "report/sweeps.hpp"

#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <utility>

#include "core/error.hpp"

namespace kappasim::report {

namespace fs = std::filesystem;

SweepSource::SweepSource(std::string out, std::string experiments, bool quick, bool quiet,
                         SweepRunner run)
    : m_out(std::move(out)),
      m_experiments(std::move(experiments)),
      m_quick(quick),
      m_quiet(quiet),
      m_run(std::move(run)) {}

std::string SweepSource::sweep_dir(const std::string& name) const {
  return (fs::path(m_out) / "sweeps" / (m_quick ? name + "-quick" : name)).string();
}

SweepData SweepSource::run(const std::string& rel) {
  const std::string spec = (fs::path(m_experiments) / rel).string();
  if (!fs::exists(spec)) throw InputError(spec + ": sweep spec not found (--experiments DIR?)");
  SweepData d;
  d.name = fs::path(rel).stem().string();
  d.dir = sweep_dir(d.name);
  if (!m_quiet) std::cerr << "reproduce: sweep " << rel << " -> " << d.dir << "\n";
  const int rc = m_run(spec, d.dir);
  if (rc != 0 && rc != 3)
    throw std::runtime_error("sweep " + rel + " ended with exit code " + std::to_string(rc));
  d.table = read_results(d.dir);
  const ResultsTable& t = d.table;
  std::size_t bad = 0;
  for (std::size_t r = 0; r < t.rows.size(); ++r) bad += t.ok(r) ? 0 : 1;
  if (bad > 0)
    m_problems.push_back(rel + ": " + std::to_string(bad) + " of " + std::to_string(t.rows.size()) +
                         " points did not complete, each with its reason (see " +
                         fs::relative(d.dir, m_out).string() + "/results.csv, column error)");
  return d;
}

}  // namespace kappasim::report
