// One tabular result type and its three writers (aligned text, CSV, JSON). Every command that
// prints rows builds a Table; nothing else formats results.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace kappasim {

using Cell = std::variant<std::monostate, std::string, double, std::int64_t, bool>;

enum class Format { Table, Csv, Json };
Format parse_format(const std::string& s);  // InputError on anything else

class Table {
 public:
  explicit Table(std::vector<std::string> columns) : m_columns(std::move(columns)) {}
  void add_row(std::vector<Cell> row);
  // A table of some of the columns, by name (logic_error on an unknown name).
  Table project(const std::vector<std::string>& names) const;
  const std::vector<std::string>& columns() const { return m_columns; }
  const std::vector<std::vector<Cell>>& rows() const { return m_rows; }

  // Aligned columns; doubles with `digits` significant digits.
  std::string text(int digits = 4) const;
  // RFC 4180 CSV with a header; doubles in shortest round-trip form.
  std::string csv() const;
  // A JSON array of objects, one per row; doubles in shortest round-trip form, empty cells null.
  std::string json() const;
  std::string render(Format f) const;

 private:
  std::vector<std::string> m_columns;
  std::vector<std::vector<Cell>> m_rows;
};

std::string json_escape(const std::string& s);

// ---- Markdown (the one GitHub-flavoured Markdown table writer: reports, docs tables) ----------
// Column alignment: Default leaves every column unmarked ("---|"); FirstLeftRestRight marks all
// but the first as right-aligned ("---:|", numbers in `kappasim report`).
enum class MdAlign { Default, FirstLeftRestRight };
// One row per line; '|' in a cell is escaped; a short row is padded with empty cells and cells
// past the header's width are dropped.
std::string markdown_table(const std::vector<std::string>& header,
                           const std::vector<std::vector<std::string>>& rows,
                           MdAlign align = MdAlign::Default);

}  // namespace kappasim
