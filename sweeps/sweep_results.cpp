#include "sweeps/sweep_results.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/output.hpp"
#include "core/table.hpp"
#include "core/units.hpp"

namespace kappasim::sweep {

namespace {

std::string number_or_null(double v) { return std::isfinite(v) ? format_number(v) : "null"; }

// A JSON number literal exactly as written (axis values that are plain numbers).
bool is_json_number(const std::string& s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  if (i < n && s[i] == '-') ++i;
  if (i >= n) return false;
  if (s[i] == '0') {
    ++i;
  } else if (s[i] >= '1' && s[i] <= '9') {
    while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  } else {
    return false;
  }
  if (i < n && s[i] == '.') {
    ++i;
    if (i >= n || !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    if (i >= n || !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  }
  return i == n;
}

}  // namespace

std::string result_json(const PointResult& r) {
  std::string out = "{\n  \"status\": \"ok\",\n  \"metrics\": {";
  for (std::size_t i = 0; i < r.metrics.size(); ++i)
    out += std::string(i ? "," : "") + "\n    " + json_escape(r.metrics[i].first) + ": " +
           number_or_null(r.metrics[i].second);
  out += r.metrics.empty() ? "}" : "\n  }";
  // Only when there are any: a point without warnings writes what it always wrote.
  if (!r.warnings.empty()) {
    out += ",\n  \"warnings\": [";
    for (std::size_t i = 0; i < r.warnings.size(); ++i)
      out += std::string(i ? "," : "") + "\n    " + json_escape(r.warnings[i]);
    out += "\n  ]";
  }
  return out + "\n}\n";
}

std::string error_json(const PointError& e) {
  std::string out =
      "{\n  \"status\": " + json_escape(e.status) + ",\n  \"message\": " + json_escape(e.message);
  if (!e.signal_name.empty()) out += ",\n  \"signal\": " + json_escape(e.signal_name);
  if (e.exit_code >= 0) out += ",\n  \"exit_code\": " + std::to_string(e.exit_code);
  out += ",\n  \"stderr_tail\": [";
  for (std::size_t i = 0; i < e.stderr_tail.size(); ++i)
    out += std::string(i ? "," : "") + "\n    " + json_escape(e.stderr_tail[i]);
  out += e.stderr_tail.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

std::optional<PointRecord> read_point_record(const std::string& point_dir) {
  std::string text;
  PointRecord rec;
  if (read_text_file(point_dir + "/result.json", text)) {
    nlohmann::ordered_json j;
    try {
      j = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      rec.status = "failed";
      rec.damaged = true;
      rec.error = std::string("unreadable result.json: ") + e.what();
      return rec;
    }
    // What result_json writes: {"status": "ok", "metrics": {name: number | null, ...}}.
    // Anything else (a truncated file, `{}`, a string where a number goes) is damaged: the
    // point is not ok, and a rerun runs it again (issue 12, item 6).
    std::string bad;
    if (!j.is_object())
      bad = "not a JSON object";
    else if (!j.contains("status") || j["status"] != "ok")
      bad = "no \"status\": \"ok\"";
    else if (!j.contains("metrics") || !j["metrics"].is_object())
      bad = "no \"metrics\" object";
    else
      for (const auto& [k, v] : j["metrics"].items())
        if (!v.is_number() && !v.is_null() && bad.empty())
          bad = "metric '" + k + "' is neither a number nor null";
    if (bad.empty() && j.contains("warnings")) {
      if (!j["warnings"].is_array())
        bad = "\"warnings\" is not a list";
      else
        for (const auto& w : j["warnings"])
          if (!w.is_string() && bad.empty()) bad = "a warning is not a string";
    }
    if (!bad.empty()) {
      rec.status = "failed";
      rec.damaged = true;
      rec.error = "damaged result.json: " + bad;
      return rec;
    }
    rec.status = "ok";
    for (const auto& [k, v] : j["metrics"].items()) {
      if (v.is_number())
        rec.metrics.emplace_back(k, v.get<double>());
      else
        rec.metrics.emplace_back(k, std::nullopt);
    }
    if (j.contains("warnings"))
      for (const auto& w : j["warnings"]) rec.warnings.push_back(w.get<std::string>());
    return rec;
  }
  if (read_text_file(point_dir + "/error.json", text)) {
    rec.status = "failed";
    try {
      auto j = nlohmann::ordered_json::parse(text);
      if (j.contains("status") && j["status"].is_string())
        rec.status = j["status"].get<std::string>();
      if (j.contains("message") && j["message"].is_string())
        rec.error = j["message"].get<std::string>();
    } catch (const nlohmann::json::exception& e) {
      rec.error = std::string("unreadable error.json: ") + e.what();
    }
    if (rec.status != "invalid") rec.status = "failed";
    return rec;
  }
  return std::nullopt;
}

std::string si_column_unit(const Dimension& d) {
  static const std::vector<std::pair<Dimension, const char*>> kUnits = {
      {dim::bytes, "B"},           {dim::time, "s"},
      {dim::bandwidth, "Bps"},     {dim::flops, "FLOP"},
      {dim::flop_rate, "FLOPps"},  {dim::energy, "J"},
      {dim::power, "W"},           {dim::energy_per_byte, "JpB"},
      {dim::transfer_rate, "Tps"}, {dim::frequency, "Hz"},
      {dim::area, "m2"},           {dim::length, "m"}};
  for (const auto& [dd, u] : kUnits)
    if (dd == d) return u;
  return "";
}

std::string axis_si_column(const AxisKey& k, std::vector<double>* values) {
  if (k.values.empty()) return "";
  std::optional<Dimension> d;
  std::vector<double> vs;
  for (const auto& v : k.values) {
    if (!v.is_scalar()) return "";
    Quantity q;
    try {
      q = parse_quantity(v.scalar);
    } catch (const UnitError&) {
      return "";
    }
    if (d && !(*d == q.dim)) return "";
    d = q.dim;
    vs.push_back(q.value);
  }
  const std::string unit = si_column_unit(*d);
  if (unit.empty()) return "";
  if (values) *values = std::move(vs);
  return k.label + "_" + unit;
}

bool is_axis_si_column(const std::string& label, const std::string& column) {
  if (column.size() <= label.size() + 1 || column.compare(0, label.size() + 1, label + "_") != 0)
    return false;
  const std::string unit = column.substr(label.size() + 1);
  for (const char* u : {"B", "s", "Bps", "FLOP", "FLOPps", "J", "W", "JpB", "Tps", "Hz", "m2", "m"})
    if (unit == u) return true;
  return false;
}

MergedResults merge_results(const SweepSpec& s, const std::vector<Point>& points,
                            const std::vector<PointRecord>& records) {
  MergedResults m;
  std::vector<std::string> metric_names = s.metrics;
  if (metric_names.empty()) {
    std::map<std::string, bool> seen;
    for (const auto& r : records)
      for (const auto& [k, v] : r.metrics)
        if (!seen[k]) {
          seen[k] = true;
          metric_names.push_back(k);
        }
  }
  const std::vector<std::string> labels = s.axis_labels();
  const bool reps = s.replicates > 1;
  // Per axis key (labels order): its SI companion column and values ("" when none).
  std::vector<std::string> si_cols;
  std::vector<std::vector<double>> si_values;
  for (const auto& a : s.axes)
    for (const auto& k : a.keys) {
      si_values.emplace_back();
      si_cols.push_back(axis_si_column(k, &si_values.back()));
    }
  std::vector<std::string> cols = {"point"};
  for (std::size_t a = 0; a < labels.size(); ++a) {
    cols.push_back(labels[a]);
    if (!si_cols[a].empty()) cols.push_back(si_cols[a]);
  }
  if (reps) cols.push_back("replicate");
  for (const char* c : {"seed", "status", "error"}) cols.emplace_back(c);
  // A metric named like an earlier column (selftest echoes its axis x) is written "metric.<name>".
  for (const auto& name : metric_names)
    cols.push_back(std::find(cols.begin(), cols.end(), name) == cols.end() ? name
                                                                           : "metric." + name);
  for (std::size_t i = 0; i < cols.size(); ++i) m.csv += (i ? "," : "") + csv_field(cols[i]);
  m.csv += "\n";

  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const PointRecord& r = records[i];
    if (r.status != "ok") m.not_ok.push_back(p.index);
    if (!r.warnings.empty()) m.warned.emplace_back(p.index, r.warnings.front());
    std::vector<std::string> row = {std::to_string(p.index)};
    std::string json = "{\"point\": " + std::to_string(p.index);
    std::size_t key_index = 0;
    for (std::size_t ax = 0; ax < s.axes.size(); ++ax)
      for (std::size_t kk = 0; kk < s.axes[ax].keys.size(); ++kk, ++key_index) {
        const std::size_t a = key_index;
        row.push_back(p.labels[a]);
        json += ", " + json_escape(labels[a]) + ": " +
                (is_json_number(p.labels[a]) ? p.labels[a] : json_escape(p.labels[a]));
        if (!si_cols[a].empty()) {
          const std::string v = format_number(si_values[a][p.axis_index[ax]]);
          row.push_back(v);
          json += ", " + json_escape(si_cols[a]) + ": " + v;
        }
      }
    if (reps) {
      row.push_back(std::to_string(p.replicate));
      json += ", \"replicate\": " + std::to_string(p.replicate);
    }
    row.push_back(std::to_string(p.seed));
    row.push_back(r.status);
    row.push_back(r.error);
    json += ", \"seed\": " + std::to_string(p.seed) + ", \"status\": " + json_escape(r.status) +
            ", \"error\": " + (r.error.empty() ? std::string("null") : json_escape(r.error));
    for (const auto& name : metric_names) {
      std::optional<double> v;
      for (const auto& [k, x] : r.metrics)
        if (k == name) v = x;
      const bool have = v && std::isfinite(*v);
      row.push_back(have ? format_number(*v) : "");
      json += ", " + json_escape(cols[row.size() - 1]) + ": " + (have ? format_number(*v) : "null");
    }
    if (!r.warnings.empty()) {  // only when there are any (issue 26 item 21)
      json += ", \"warnings\": [";
      for (std::size_t w = 0; w < r.warnings.size(); ++w)
        json += (w ? ", " : "") + json_escape(r.warnings[w]);
      json += "]";
    }
    for (std::size_t c = 0; c < row.size(); ++c) m.csv += (c ? "," : "") + csv_field(row[c]);
    m.csv += "\n";
    m.jsonl += json + "}\n";
  }
  return m;
}

std::string warned_summary(const MergedResults& m, std::size_t total, std::size_t max) {
  if (m.warned.empty()) return "";
  std::string out = std::to_string(m.warned.size()) + " of " + std::to_string(total) +
                    " points warned (each point's result.json: \"warnings\")\n";
  for (std::size_t i = 0; i < m.warned.size() && i < max; ++i)
    out += "  point " + std::to_string(m.warned[i].first) + " (" +
           point_name(m.warned[i].first, total) + "): " + m.warned[i].second + "\n";
  if (m.warned.size() > max)
    out += "  ... (" + std::to_string(m.warned.size()) + " in all; see results.jsonl)\n";
  return out;
}

SweepTable parse_csv(const std::string& text, const std::string& name) {
  SweepTable t;
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> rec;
  std::string field;
  bool in_quotes = false, field_started = false;
  int line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && !field_started) {
      in_quotes = true;
      field_started = true;
    } else if (c == ',') {
      rec.push_back(std::move(field));
      field.clear();
      field_started = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      rec.push_back(std::move(field));
      field.clear();
      field_started = false;
      records.push_back(std::move(rec));
      rec.clear();
      ++line;
    } else {
      field += c;
      field_started = true;
    }
  }
  if (in_quotes)
    throw InputError(name + ":" + std::to_string(line) + ": unterminated quoted field");
  if (field_started || !rec.empty()) {
    rec.push_back(std::move(field));
    records.push_back(std::move(rec));
  }
  if (records.empty()) throw InputError(name + ": empty file (expected a header row)");
  t.columns = std::move(records.front());
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() != t.columns.size())
      throw InputError(name + ": row " + std::to_string(r) + " has " +
                       std::to_string(records[r].size()) + " fields, the header " +
                       std::to_string(t.columns.size()));
    t.rows.push_back(std::move(records[r]));
  }
  return t;
}

SweepTable read_results_csv(const std::string& dir) {
  const std::string path = dir + "/results.csv";
  std::string text;
  if (!read_text_file(path, text))
    throw InputError("cannot read '" + path +
                     "': the sweep has not been merged (kappasim sweep collect " + dir + ")");
  return parse_csv(text, path);
}

}  // namespace kappasim::sweep
