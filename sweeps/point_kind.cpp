#include "sweeps/point_kind.hpp"

#include <stdexcept>

#include "core/table.hpp"

namespace kappasim::sweep {

KindRegistry& kinds() {
  static KindRegistry registry;
  return registry;
}

namespace {
bool matches(const std::string& pattern, const std::string& name) {
  const std::size_t star = pattern.find('*');
  if (star == std::string::npos) return pattern == name;
  const std::size_t tail = pattern.size() - star - 1;
  return name.size() > star + tail && name.compare(0, star, pattern, 0, star) == 0 &&
         name.compare(name.size() - tail, tail, pattern, star + 1, tail) == 0;
}
}  // namespace

bool declares(const PointKind& kind, const std::string& metric) {
  for (const KindColumn& c : kind.columns)
    if (matches(c.name, metric)) return true;
  return false;
}

void check_declared(const PointKind& kind, const PointResult& result) {
  if (kind.columns.empty()) return;
  for (const auto& [name, value] : result.metrics)
    if (!declares(kind, name))
      throw std::logic_error("sweep kind '" + kind.name + "' wrote column '" + name +
                             "', which it does not declare (PointKind::columns)");
}

std::vector<std::vector<std::string>> kind_column_rows() {
  std::vector<std::vector<std::string>> rows;
  for (const PointKind& k : kinds().all())
    for (const KindColumn& c : k.columns) rows.push_back({k.name, c.name, c.unit, c.doc});
  return rows;
}

std::string kind_columns_markdown() {
  std::vector<std::vector<std::string>> rows = kind_column_rows();
  for (auto& r : rows) r[1] = "`" + r[1] + "`";
  return markdown_table(kKindColumnHeader, rows);
}

}  // namespace kappasim::sweep
