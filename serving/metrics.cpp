#include "serving/metrics.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/table.hpp"
#include "core/units.hpp"
#include "serving/stat_catalog.hpp"

namespace kappasim {
namespace {

template <class Int>
void append_integer(std::string& s, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}

// Whether a requests.csv with the decode / prefix-cache columns has column family d.
bool has_column(const StatDecl& d, bool decode, bool prefix_cache) {
  return (d.when != StatWhen::Decode || decode) &&
         (d.when != StatWhen::PrefixCache || prefix_cache);
}

// One row: the declared columns' cells, comma-separated (the decode columns with `decode`, the
// prefix cache's with `prefix_cache`).
void append_row(std::string& s, const RequestRecord& r, bool decode, bool prefix_cache) {
  bool first = true;
  for (const StatDecl& d : requests_csv_stats()) {
    if (!has_column(d, decode, prefix_cache)) continue;
    for (const StatKey& k : d.keys) {
      if (!first) s += ',';
      first = false;
      k.cell(s, r);
    }
  }
}

}  // namespace

void append_csv_int(std::string& s, std::int64_t v) { append_integer(s, v); }
void append_csv_uint(std::string& s, std::uint64_t v) { append_integer(s, v); }
void append_csv_number(std::string& s, double v) {
  if (!std::isfinite(v)) return;
  if (v == std::floor(v) && std::fabs(v) < 1e16) {
    if (v == 0 && std::signbit(v)) {
      s += "-0";
      return;
    }
    append_integer(s, static_cast<std::int64_t>(v));
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}
void append_csv_text(std::string& s, const std::string& f) {
  const bool edge_space = !f.empty() && (f.front() == ' ' || f.back() == ' ');
  if (!edge_space && f.find_first_of(",\"\r\n") == std::string::npos)
    s += f;
  else
    s += csv_field(f);
}

// ---- requests.csv ---------------------------------------------------------------------------

namespace {
constexpr std::size_t kBuffer = std::size_t{1} << 16;  // requests.csv's stream buffer, bytes
}  // namespace

const char* RequestsCsvWriter::header(bool decode, bool prefix_cache) {
  static const std::array<std::string, 4> h = [] {  // index: decode + 2 · prefix_cache
    std::array<std::string, 4> s;
    for (int with = 0; with < 4; ++with)
      for (const StatDecl& d : requests_csv_stats())
        if (has_column(d, (with & 1) != 0, (with & 2) != 0))
          for (const StatKey& k : d.keys) s[with] += (s[with].empty() ? "" : ",") + k.name;
    return s;
  }();
  return h[(decode ? 1 : 0) + (prefix_cache ? 2 : 0)].c_str();
}

std::string RequestsCsvWriter::row(const RequestRecord& r, bool decode, bool prefix_cache) {
  std::string s;
  s.reserve(256);
  append_row(s, r, decode, prefix_cache);
  return s;
}

RequestsCsvWriter::RequestsCsvWriter(const std::string& path, bool decode, bool prefix_cache)
    : m_path(path),
      m_decode(decode),
      m_prefix_cache(prefix_cache),
      m_buffer(std::make_unique<char[]>(kBuffer)),
      m_out(std::make_unique<std::ofstream>()) {
  m_out->rdbuf()->pubsetbuf(m_buffer.get(), kBuffer);  // before open (libstdc++ honours it then)
  m_out->open(path, std::ios::binary | std::ios::trunc);
  if (!*m_out) throw file_error("cannot write requests file '" + path + "'", errno);
  *m_out << header(decode, prefix_cache) << '\n';
}

RequestsCsvWriter::~RequestsCsvWriter() {
  if (m_out && m_out->is_open()) m_out->close();
}

void RequestsCsvWriter::write(const RequestRecord& r) {
  if (!m_out || !m_out->is_open())
    throw std::logic_error("RequestsCsvWriter::write after close ('" + m_path + "')");
  thread_local std::string line;  // reused: no allocation per row
  line.clear();
  append_row(line, r, m_decode, m_prefix_cache);
  line += '\n';
  m_out->write(line.data(), static_cast<std::streamsize>(line.size()));
  ++m_rows;
}

void RequestsCsvWriter::close() {
  if (!m_out || !m_out->is_open()) return;
  m_out->flush();
  bool ok = static_cast<bool>(*m_out);
  m_out->close();
  if (!ok || !*m_out) throw file_error("cannot write requests file '" + m_path + "'", errno);
}

// ---- summary --------------------------------------------------------------------------------

SummaryBuilder::SummaryBuilder(double relative_accuracy) : m_a(relative_accuracy) {}

void SummaryBuilder::add_request(const RequestRecord& r) {
  Accumulators& a = m_a;
  ++a.requests;
  a.ttft.add(r.ttft_s);
  a.front_end_sum += r.front_end_s;
  a.tier_request_sum += r.tier_request_s;
  a.queue.add(r.queue_s);
  a.kappa.add(r.kappa_ratio);
  a.kappa_link.add(r.kappa_link_ratio);
  a.max_wait_s = std::max(a.max_wait_s, r.queue_s);
  a.last_first_token_s = std::max(a.last_first_token_s, r.arrival_s + r.ttft_s);
  a.last_arrival_s = std::max(a.last_arrival_s, r.arrival_s);
  a.load_sum += r.load_s;
  a.compute_sum += r.compute_s;
  if (r.compute_s > 0) {
    a.poh_sum += r.load_s / r.compute_s;
    ++a.poh_n;
  }
  double service = r.load_s + r.compute_s;
  if (service > 0) {
    double x = r.ttft_s / service;
    a.slow_sum += x;
    a.slow_sq += x * x;
    ++a.slow_n;
  }
  a.cached_tokens += static_cast<double>(r.cached_tokens);
  a.hbm_hit_tokens += static_cast<double>(r.hbm_hit_tokens);
  a.computed_tokens += static_cast<double>(r.computed_tokens);
  a.bytes_loaded += r.bytes_loaded;
  a.bytes_stored += r.bytes_stored;
  a.bytes_buffer += r.bytes_from_buffer;
  a.recomputed_tokens += static_cast<double>(r.recomputed_tokens);
  a.last_finish_s = std::max(a.last_finish_s, r.arrival_s + std::max(r.ttft_s, r.e2e_s));
  a.time_sum += r.time;
  a.e2e.add(r.e2e_s);
  if (r.output_tokens > 1) a.tpot.add(r.tpot_s);
  a.output_tokens += static_cast<double>(r.output_tokens);
  a.preemptions += r.preemptions;
  a.preempted_kv_tokens += static_cast<double>(r.preempted_kv_tokens);
  if (r.meets_slo) ++a.met_slo;
}

void SummaryBuilder::add_itl(double gap_s) { m_a.itl.add(gap_s); }
void SummaryBuilder::merge_itl(const SummaryBuilder& other) { m_a.itl.merge(other.m_a.itl); }

void SummaryBuilder::add_step(const StepRecord& s) {
  Accumulators& a = m_a;
  ++a.steps;
  a.step_tokens += static_cast<double>(s.tokens);
  if (s.budget > 0) {
    a.budget_frac_sum += static_cast<double>(s.tokens) / static_cast<double>(s.budget);
    ++a.budget_n;
  }
  a.vram_sum += s.vram_used_fraction;
  a.seqs_sum += s.seqs;
  a.step_time_sum += s.end_s - s.start_s;
}

namespace {

// The engine's own figures (`given`, e.g. Totals::extra) must be exactly `declared` (names, in
// order).
void check_engine_figures(const std::vector<std::pair<std::string, double>>& given,
                          const std::vector<std::string>& declared, const char* what) {
  for (std::size_t i = 0; i < given.size() || i < declared.size(); ++i) {
    const std::string got = i < given.size() ? given[i].first : std::string("(nothing)");
    const std::string want = i < declared.size() ? declared[i] : std::string("(nothing)");
    if (got != want)
      throw std::logic_error(std::string("summary: ") + what + " figure " + std::to_string(i + 1) +
                             " is '" + got + "', declared '" + want +
                             "' (serving/stat_catalog.cpp)");
  }
}

}  // namespace

std::vector<std::pair<std::string, double>> SummaryBuilder::figures(const Totals& t) const {
  const SummaryInputs in{m_a, t};
  std::vector<std::pair<std::string, double>> f;
  f.reserve(128);
  bool extra_done = false, tiers_done = false;
  for (const StatDecl& d : summary_stats()) {
    switch (d.when) {
      case StatWhen::Always:
        for (const StatKey& k : d.keys) f.emplace_back(k.name, k.value(in));
        break;
      case StatWhen::Replica:  // the layout's figures (issue 14), all or none
        if (!extra_done && !t.extra.empty()) {
          check_engine_figures(t.extra, replica_stat_names(), "replica");
          f.insert(f.end(), t.extra.begin(), t.extra.end());
        }
        extra_done = true;
        break;
      case StatWhen::Tiers:  // per tier level (issue 14), every field of each level in order
        if (!tiers_done && !t.tier_levels.empty()) {
          const std::vector<std::string> fields = tier_level_stat_fields();
          std::vector<std::string> declared;
          for (std::size_t i = 0; i < t.tier_levels.size(); i += fields.size()) {
            // the level is the part of the i-th name between "tiers_" and its first field
            const std::string& n = t.tier_levels[i].first;
            const std::string tail = "_" + fields.front();
            const std::string level = n.rfind("tiers_", 0) == 0 && n.size() > 6 + tail.size()
                                          ? n.substr(6, n.size() - 6 - tail.size())
                                          : std::string("?");
            for (const std::string& fld : fields) declared.push_back("tiers_" + level + "_" + fld);
          }
          check_engine_figures(t.tier_levels, declared, "tier level");
          check_summary_declared(t.tier_levels);  // known level names only
          f.insert(f.end(), t.tier_levels.begin(), t.tier_levels.end());
        }
        tiers_done = true;
        break;
      case StatWhen::Decode:  // decode runs only (serving.decode)
        if (t.decode)
          for (const StatKey& k : d.keys) f.emplace_back(k.name, k.value(in));
        break;
      case StatWhen::EndToEnd:  // end-to-end TTFT only (serving.ttft)
        if (t.end_to_end)
          for (const StatKey& k : d.keys) f.emplace_back(k.name, k.value(in));
        break;
      case StatWhen::ShardKv:  // serving.replicated_kv: shard_allgather only
        if (t.kv_shard)
          for (const StatKey& k : d.keys) f.emplace_back(k.name, k.value(in));
        break;
      case StatWhen::ClosedLoop:  // closed-loop clients only (workload.concurrency)
        if (t.concurrency > 0)
          for (const StatKey& k : d.keys) f.emplace_back(k.name, k.value(in));
        break;
      case StatWhen::PrefixCache:  // serving.prefix_caching only
        if (t.prefix_cache)
          for (const StatKey& k : d.keys) f.emplace_back(k.name, k.value(in));
        break;
      case StatWhen::Cluster:  // Cluster::figures appends them
      case StatWhen::Disagg:
        break;
    }
  }
  return f;
}

std::string SummaryBuilder::to_json(const Totals& t) const { return summary_json(figures(t)); }

std::string summary_json(const std::vector<std::pair<std::string, double>>& f) {
  check_summary_declared(f);
  std::string out = "{\n";
  for (std::size_t i = 0; i < f.size(); ++i) {
    out += "  " + json_escape(f[i].first) + ": ";
    out += std::isfinite(f[i].second) ? format_number(f[i].second) : std::string("null");
    out += i + 1 < f.size() ? ",\n" : "\n";
  }
  return out + "}\n";
}

}  // namespace kappasim
