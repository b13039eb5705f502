#include "serving/metrics.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/table.hpp"
#include "core/units.hpp"
#include "serving/stat_catalog.hpp"

namespace kappasim {
namespace {

// Room a number's cell may take: std::to_chars' longest double ("-2.2250738585072014e-308", 24
// bytes) or int64 (20), with slack.
constexpr std::size_t kNumberRoom = 32;

char* put_int(char* p, std::int64_t v) { return std::to_chars(p, p + kNumberRoom, v).ptr; }

}  // namespace

// Numbers formatted lately (issue 24: a third of a Vidur requests.csv's non-integer cells repeat
// one formatted shortly before, a step's shared times in the next request's row or t_queue_s
// after queue_s, and std::to_chars was most of a row's cost): the bytes std::to_chars gave for
// the same bits, copied. Direct-mapped by the bits; a slot holds its value's whole text.
struct CsvNumberCache {
  struct Slot {
    std::uint64_t bits = 0;
    std::size_t len = 0;  // 0: empty
    char text[kNumberRoom];
  };
  std::array<Slot, 256> slots{};
};

namespace {

// p has kNumberRoom bytes.
char* put_number(char* p, double v, CsvNumberCache* cache) {
  if (!std::isfinite(v)) return p;
  if (v == std::floor(v) && std::fabs(v) < 1e16) {
    if (v == 0 && std::signbit(v)) {
      *p++ = '-';
      *p++ = '0';
      return p;
    }
    return put_int(p, static_cast<std::int64_t>(v));
  }
  if (!cache) return std::to_chars(p, p + kNumberRoom, v).ptr;
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  CsvNumberCache::Slot& s = cache->slots[(bits * 0x9E3779B97F4A7C15ULL) >> 56];
  if (s.len != 0 && s.bits == bits) {
    std::memcpy(p, s.text, kNumberRoom);  // the whole slot: p has the room
    return p + s.len;
  }
  char* end = std::to_chars(p, p + kNumberRoom, v).ptr;
  s.bits = bits;
  s.len = static_cast<std::size_t>(end - p);
  std::memcpy(s.text, p, s.len);
  return end;
}

// An RFC 4180 field: as it is, or quoted (core/csv) when it holds a comma, quote, CR or LF or
// begins or ends with a space. At most 2 · size + 2 bytes.
char* put_text(char* p, const std::string& f) {
  const bool edge_space = !f.empty() && (f.front() == ' ' || f.back() == ' ');
  if (!edge_space && f.find_first_of(",\"\r\n") == std::string::npos) {
    if (!f.empty()) std::memcpy(p, f.data(), f.size());
    return p + f.size();
  }
  const std::string q = csv_field(f);
  std::memcpy(p, q.data(), q.size());
  return p + q.size();
}

// Whether a requests.csv with the decode / prefix-cache columns has column family d.
bool has_column(const StatDecl& d, bool decode, bool prefix_cache) {
  return (d.when != StatWhen::Decode || decode) &&
         (d.when != StatWhen::PrefixCache || prefix_cache);
}

// The declared columns' cells (the decode columns with `decode`, the prefix cache's with
// `prefix_cache`), in order; built once per set.
const std::vector<CsvCell>& csv_cells(bool decode, bool prefix_cache) {
  static const std::array<std::vector<CsvCell>, 4> cells = [] {  // decode + 2 · prefix_cache
    std::array<std::vector<CsvCell>, 4> c;
    for (int with = 0; with < 4; ++with)
      for (const StatDecl& d : requests_csv_stats())
        if (has_column(d, (with & 1) != 0, (with & 2) != 0))
          for (const StatKey& k : d.keys) {
            if (k.cell.empty())
              throw std::logic_error("requests.csv column '" + k.name + "' has no cell");
            c[with].push_back(k.cell);
          }
    return c;
  }();
  return cells[(decode ? 1 : 0) + (prefix_cache ? 2 : 0)];
}

// The bytes a row of `cells` may take for r, separators included.
std::size_t row_room(const std::vector<CsvCell>& cells, const RequestRecord& r) {
  std::size_t n = 0;
  for (const CsvCell& c : cells)
    n += 1 + (c.kind == CsvCell::Kind::Text ? 2 * (r.*c.text).size() + 2 : kNumberRoom);
  return n;
}

// One row (no newline) at p, which has row_room() bytes; returns its end. `cache`: may be null.
char* put_row(char* p, const std::vector<CsvCell>& cells, const RequestRecord& r,
              CsvNumberCache* cache) {
  bool first = true;
  for (const CsvCell& c : cells) {
    if (!first) *p++ = ',';
    first = false;
    switch (c.kind) {
      case CsvCell::Kind::Unsigned:
        p = std::to_chars(p, p + kNumberRoom, r.*c.u).ptr;
        break;
      case CsvCell::Kind::Integer:
        p = put_int(p, r.*c.i);
        break;
      case CsvCell::Kind::Small:
        p = put_int(p, r.*c.small);
        break;
      case CsvCell::Kind::Number:
        p = put_number(p, r.*c.d, cache);
        break;
      case CsvCell::Kind::Time:
        p = put_number(p, r.time.*c.time, cache);
        break;
      case CsvCell::Kind::Text:
        p = put_text(p, r.*c.text);
        break;
      case CsvCell::Kind::None:
        break;
    }
  }
  return p;
}

}  // namespace

// ---- requests.csv ---------------------------------------------------------------------------

namespace {
constexpr std::size_t kBuffer = std::size_t{1} << 16;  // requests.csv's row buffer, bytes
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
  const std::vector<CsvCell>& cells = csv_cells(decode, prefix_cache);
  std::string s(row_room(cells, r), '\0');
  s.resize(static_cast<std::size_t>(put_row(s.data(), cells, r, nullptr) - s.data()));
  return s;
}

RequestsCsvWriter::RequestsCsvWriter(const std::string& path, bool decode, bool prefix_cache)
    : m_path(path),
      m_cells(&csv_cells(decode, prefix_cache)),
      m_buf(kBuffer),
      m_numbers(std::make_unique<CsvNumberCache>()),
      m_out(std::make_unique<std::ofstream>()) {
  // Unbuffered: the rows reach it in blocks of up to kBuffer bytes, one write call each.
  m_out->rdbuf()->pubsetbuf(nullptr, 0);  // before open (libstdc++ honours it then)
  m_out->open(path, std::ios::binary | std::ios::trunc);
  if (!*m_out) throw file_error("cannot write requests file '" + path + "'", errno);
  const char* h = header(decode, prefix_cache);
  const std::size_t n = std::strlen(h);
  if (n + 1 > m_buf.size()) m_buf.resize(n + 1);
  std::memcpy(m_buf.data(), h, n);
  m_buf[n] = '\n';
  m_len = n + 1;
}

// The second thread: batches of records go to it through `full` and come back through `empty`
// to be filled again (their records assigned over, so their strings' buffers are reused: no
// allocation per row once a batch has been round once). Two batches in flight at most: the
// simulation waits when the thread is that far behind, so memory stays bounded.
struct RequestsCsvWriter::Formatter {
  struct Batch {
    std::vector<RequestRecord> rows;
    std::size_t n = 0;  // rows[0, n) are this batch's
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Batch> full;     // to format, in order
  std::vector<Batch> empty;   // formatted, to fill again
  Batch filling;              // the simulation's
  std::size_t in_flight = 0;  // batches handed over and not back yet
  bool closing = false;
  std::exception_ptr error;  // what the thread threw (close() rethrows it)
  std::thread thread;
};

RequestsCsvWriter::~RequestsCsvWriter() {
  if (m_formatter) {
    try {
      close();
    } catch (...) {  // a destructor does not throw; close() reports the error when called
    }
    return;
  }
  if (m_out && m_out->is_open()) {
    flush_rows();
    m_out->close();
  }
}

void RequestsCsvWriter::flush_rows() {
  if (m_len > 0) m_out->write(m_buf.data(), static_cast<std::streamsize>(m_len));
  m_len = 0;
}

void RequestsCsvWriter::format(const RequestRecord& r) {
  const std::size_t room = row_room(*m_cells, r) + 1;
  if (m_buf.size() - m_len < room) {
    flush_rows();
    if (m_buf.size() < room) m_buf.resize(room);  // a row longer than the buffer (long text)
  }
  char* p = put_row(m_buf.data() + m_len, *m_cells, r, m_numbers.get());
  *p++ = '\n';
  m_len = static_cast<std::size_t>(p - m_buf.data());
}

void RequestsCsvWriter::start_formatter(Formatter* f) {
  f->thread = std::thread([this, f] {
    std::unique_lock<std::mutex> lock(f->mu);
    for (;;) {
      f->cv.wait(lock, [f] { return f->closing || !f->full.empty(); });
      if (f->full.empty()) break;  // closing, nothing left
      Formatter::Batch batch = std::move(f->full.front());
      f->full.pop_front();
      lock.unlock();
      if (!f->error) {
        try {
          for (std::size_t i = 0; i < batch.n; ++i) format(batch.rows[i]);
        } catch (...) {
          f->error = std::current_exception();
        }
      }
      lock.lock();
      batch.n = 0;
      f->empty.push_back(std::move(batch));
      --f->in_flight;
      f->cv.notify_all();
    }
  });
}

void RequestsCsvWriter::write(const RequestRecord& r) {
  if (!m_out || !m_out->is_open())
    throw std::logic_error("RequestsCsvWriter::write after close ('" + m_path + "')");
  ++m_rows;
  if (!m_formatter) {
    format(r);
    if (m_rows != kFormatterAfter) return;  // (past it only when no thread could start)
    // From the next row on, the thread formats; the rows so far reach the stream first.
    flush_rows();
    m_formatter = std::make_unique<Formatter>();
    Formatter* f = m_formatter.get();
    try {
      start_formatter(f);
    } catch (const std::system_error&) {  // no thread to be had: this one formats, as before
      m_formatter.reset();
    }
    return;
  }
  Formatter& f = *m_formatter;
  Formatter::Batch& b = f.filling;
  if (b.rows.capacity() == 0) b.rows.reserve(kFormatterBatch);
  if (b.n < b.rows.size())
    b.rows[b.n] = r;
  else
    b.rows.push_back(r);
  if (++b.n < kFormatterBatch) return;
  std::unique_lock<std::mutex> lock(f.mu);
  f.cv.wait(lock, [&f] { return f.in_flight < 2; });
  f.full.push_back(std::move(b));
  ++f.in_flight;
  b = Formatter::Batch{};
  if (!f.empty.empty()) {  // one back from the thread: filled again
    b = std::move(f.empty.back());
    f.empty.pop_back();
  }
  lock.unlock();
  f.cv.notify_all();
}

void RequestsCsvWriter::close() {
  if (!m_out || !m_out->is_open()) return;
  if (m_formatter) {
    Formatter& f = *m_formatter;
    {
      std::lock_guard<std::mutex> lock(f.mu);
      if (f.filling.n > 0) {
        f.full.push_back(std::move(f.filling));
        ++f.in_flight;
      }
      f.closing = true;
    }
    f.cv.notify_all();
    f.thread.join();  // it formats what is left first
    const std::exception_ptr error = f.error;
    m_formatter.reset();
    if (error) {
      m_out->close();
      std::rethrow_exception(error);
    }
  }
  flush_rows();
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
  const double finish_s = r.arrival_s + std::max(r.ttft_s, r.e2e_s);
  a.last_finish_s = std::max(a.last_finish_s, finish_s);
  a.arrivals.add(r.arrival_s);
  a.finishes.add(finish_s);
  a.time_sum += r.time;
  a.e2e.add_like(r.e2e_s, a.ttft);  // prefill only: the TTFT itself, its bucket known
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
