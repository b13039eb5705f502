#include "core/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace kappasim {

Format parse_format(const std::string& s) {
  if (s == "table") return Format::Table;
  if (s == "csv") return Format::Csv;
  if (s == "json") return Format::Json;
  throw InputError("--format: expected table, csv or json, got '" + s + "'");
}

void Table::add_row(std::vector<Cell> row) {
  if (row.size() != m_columns.size())
    throw std::logic_error("Table::add_row: row has " + std::to_string(row.size()) + " cells for " +
                           std::to_string(m_columns.size()) + " columns");
  m_rows.push_back(std::move(row));
}

Table Table::project(const std::vector<std::string>& names) const {
  std::vector<std::size_t> idx;
  for (const auto& n : names) {
    auto it = std::find(m_columns.begin(), m_columns.end(), n);
    if (it == m_columns.end()) throw std::logic_error("Table::project: no column " + n);
    idx.push_back(static_cast<std::size_t>(it - m_columns.begin()));
  }
  Table t(names);
  for (const auto& r : m_rows) {
    std::vector<Cell> row;
    for (std::size_t i : idx) row.push_back(r[i]);
    t.add_row(std::move(row));
  }
  return t;
}

namespace {
std::string cell_text(const Cell& c, int digits) {
  if (std::holds_alternative<std::monostate>(c)) return digits > 0 ? "-" : "";
  if (auto* s = std::get_if<std::string>(&c)) return *s;
  if (auto* i = std::get_if<std::int64_t>(&c)) return std::to_string(*i);
  if (auto* b = std::get_if<bool>(&c)) return *b ? "true" : "false";
  double v = std::get<double>(c);
  if (digits <= 0) return format_number(v);
  char buf[64];
  // Large numbers with an SI prefix for people ("327.7k", "141.1G", "2P"), below 1e18; from
  // there plain scientific notation ("2.593e+20"): a prefix past P reads badly, and beyond E the
  // mantissa itself went scientific ("2e+17E", issue 26.17).
  static const struct {
    double f;
    const char* p;
  } kSi[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  if (std::fabs(v) >= 1e3 && std::fabs(v) < 1e18 * (1 - 1e-12) && std::isfinite(v)) {
    for (const auto& si : kSi) {
      if (std::fabs(v) >= si.f) {
        std::snprintf(buf, sizeof buf, "%.*g%s", digits, v / si.f, si.p);
        return buf;
      }
    }
  }
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}
}  // namespace

std::string json_escape(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string Table::text(int digits) const {
  std::vector<std::size_t> width(m_columns.size());
  std::vector<std::vector<std::string>> cells;
  for (std::size_t i = 0; i < m_columns.size(); ++i) width[i] = m_columns[i].size();
  for (const auto& r : m_rows) {
    cells.emplace_back();
    for (std::size_t i = 0; i < r.size(); ++i) {
      cells.back().push_back(cell_text(r[i], digits));
      width[i] = std::max(width[i], cells.back().back().size());
    }
  }
  auto line = [&](const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string pad(width[i] - v[i].size(), ' ');
      // Text columns (by the first row's cell) align left, numbers right.
      bool left = !m_rows.empty() && i < m_rows.front().size() &&
                  std::holds_alternative<std::string>(m_rows.front()[i]);
      s += (i ? "  " : "") + (left ? v[i] + pad : pad + v[i]);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(m_columns);
  for (const auto& c : cells) out += line(c);
  return out;
}

std::string Table::csv() const {
  std::string out;
  for (std::size_t i = 0; i < m_columns.size(); ++i)
    out += (i ? "," : "") + csv_field(m_columns[i]);
  out += "\n";
  for (const auto& r : m_rows) {
    for (std::size_t i = 0; i < r.size(); ++i)
      out += (i ? "," : "") + csv_field(cell_text(r[i], 0));
    out += "\n";
  }
  return out;
}

std::string Table::json() const {
  std::string out = "[";
  for (std::size_t j = 0; j < m_rows.size(); ++j) {
    out += j ? ",\n  {" : "\n  {";
    const auto& r = m_rows[j];
    for (std::size_t i = 0; i < r.size(); ++i) {
      out += (i ? ", " : "") + json_escape(m_columns[i]) + ": ";
      const Cell& c = r[i];
      if (std::holds_alternative<std::monostate>(c)) {
        out += "null";
      } else if (auto* s = std::get_if<std::string>(&c)) {
        out += json_escape(*s);
      } else if (auto* d = std::get_if<double>(&c)) {
        out += std::isfinite(*d) ? format_number(*d) : "null";
      } else {
        out += cell_text(c, 0);
      }
    }
    out += "}";
  }
  out += m_rows.empty() ? "]\n" : "\n]\n";
  return out;
}

std::string markdown_table(const std::vector<std::string>& header,
                           const std::vector<std::vector<std::string>>& rows, MdAlign align) {
  auto esc = [](const std::string& s) {
    std::string o;
    for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
    return o;
  };
  std::string out = "|";
  for (const auto& h : header) out += " " + esc(h) + " |";
  out += "\n|";
  for (std::size_t i = 0; i < header.size(); ++i)
    out += align == MdAlign::FirstLeftRestRight && i > 0 ? "---:|" : "---|";
  out += "\n";
  for (const auto& r : rows) {
    out += "|";
    for (std::size_t i = 0; i < header.size(); ++i)
      out += " " + esc(i < r.size() ? r[i] : "") + " |";
    out += "\n";
  }
  return out;
}

std::string Table::render(Format f) const {
  switch (f) {
    case Format::Table:
      return text();
    case Format::Csv:
      return csv();
    case Format::Json:
      return json();
  }
  return {};
}

}  // namespace kappasim
