#include "workloads/trace_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/sim_time_limit.hpp"
#include "core/units.hpp"

namespace kappasim {

namespace {

using json = nlohmann::json;

// A kappasim row's keys; FastJsonlRow knows each by its first letter (all different).
constexpr std::string_view kJsonlKeyNames[] = {"arrival_s",   "prefix_tokens",    "new_tokens",
                                               "sequence_id", "extends_sequence", "output_tokens"};
const std::vector<std::string> kJsonlKeys(std::begin(kJsonlKeyNames), std::end(kJsonlKeyNames));
constexpr bool first_letters_differ() {
  for (std::size_t i = 0; i < std::size(kJsonlKeyNames); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (kJsonlKeyNames[i][0] == kJsonlKeyNames[j][0]) return false;
  return true;
}
static_assert(first_letters_differ(), "FastJsonlRow::read_key picks a key by its first letter");

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string basename_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  return "an object";
}

// Text of a JSON value for messages, shortened. Lists and objects are not dumped: dump() recurses
// once per nesting level, and a row may nest a value 10^5 levels deep (a stack overflow).
std::string show(const json& v) {
  if (v.is_array()) return v.empty() ? "[]" : "[...]";
  if (v.is_object()) return v.empty() ? "{}" : "{...}";
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

}  // namespace

std::string resolve_trace_path(const TraceSpec& spec, const std::string& base_dir) {
  if (spec.path.empty() || spec.path[0] == '/' || base_dir.empty()) return spec.path;
  return base_dir.back() == '/' ? base_dir + spec.path : base_dir + "/" + spec.path;
}

TraceSource::TraceSource(const TraceSpec& spec, const std::string& base_dir)
    : m_spec(spec), m_file(resolve_trace_path(spec, base_dir)) {
  if (m_spec.path.empty()) throw InputError("workload.trace.path: no trace file given");
  if (!(m_spec.time_scale > 0) || !std::isfinite(m_spec.time_scale))
    throw InputError("workload.trace.time_scale: must be a finite number > 0, got " +
                     format_number(m_spec.time_scale));
  {
    // A device or pipe (/dev/zero) would be read forever (issue 12, item 9).
    std::error_code ec;
    const auto st = std::filesystem::status(m_file, ec);
    if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
      throw InputError("workload.trace.path: '" + m_file +
                       "' is not a regular file (a folder, device or pipe)");
  }
  m_in.open(m_file, std::ios::binary);
  if (!m_in)
    throw InputError("workload.trace.path: cannot open trace file '" + m_file + "'" +
                     (m_file != m_spec.path ? " (the path is taken from the config file's folder)"
                                            : std::string()));
  m_label = "trace:" + basename_of(m_file);
  if (m_spec.format == TraceFormat::Csv) {
    std::string_view first;
    if (!read_line(first))
      fail(
          "empty CSV trace; expected a header line naming the columns "
          "arrival_s,prefix_tokens,new_tokens[,sequence_id,extends_sequence,output_tokens]");
    const std::string header(first);
    std::string cell;
    std::size_t pos = 0;
    for (;;) {
      const auto comma = header.find(',', pos);
      cell = trim(header.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
      bool known = false;
      for (const auto& k : kJsonlKeys) known = known || k == cell;
      if (!known) {
        const std::string near = nearest(cell, kJsonlKeys);
        fail("unknown CSV column \"" + cell + "\"" +
             (near.empty() ? std::string() : "; did you mean \"" + near + "\"?") +
             " Expected a header of arrival_s,prefix_tokens,new_tokens[,sequence_id,"
             "extends_sequence,output_tokens]");
      }
      for (const auto& c : m_columns)
        if (c == cell) fail("CSV column \"" + cell + "\" appears twice in the header");
      m_columns.push_back(cell);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    for (const char* need : {"arrival_s", "prefix_tokens", "new_tokens"}) {
      bool found = false;
      for (const auto& c : m_columns) found = found || c == need;
      if (!found)
        fail(std::string("the CSV header lacks the column \"") + need +
             "\"; expected arrival_s,prefix_tokens,new_tokens[,sequence_id,extends_sequence,"
             "output_tokens]");
    }
  }
}

std::string TraceSource::describe() const {
  static const char* const names[] = {"kappasim JSONL", "kappasim CSV", "Mooncake JSONL"};
  return std::string(names[static_cast<int>(m_spec.format)]) + " trace " + m_file +
         (m_spec.time_scale != 1 ? ", time x" + format_number(m_spec.time_scale) : std::string()) +
         (m_spec.limit > 0 ? ", first " + std::to_string(m_spec.limit) + " rows" : std::string());
}

void TraceSource::fail(const std::string& msg) const {
  throw InputError(SourceLoc{m_file, m_line, 0}, msg);
}

// std::getline with a bound: a row longer than kMaxTraceLineBytes is an error, not a hang that
// grows memory (a file without newlines). The file is read in blocks and each row found with
// memchr (issue 24: a character at a time through the streambuf was a tenth of the reading); a
// row wholly inside the block is returned as a view of it (issue 24: no copy), one that crosses
// blocks is gathered in m_row.
bool TraceSource::getline_bounded(std::string_view& out) {
  if (m_pos != m_end) {
    const char* b = m_buf.data() + m_pos;
    const std::size_t avail = m_end - m_pos;
    if (const void* nl = std::memchr(b, '\n', avail)) {  // shorter than a block: within the bound
      const auto n = static_cast<std::size_t>(static_cast<const char*>(nl) - b);
      m_pos += n + 1;
      out = std::string_view(b, n);
      return true;
    }
  }
  std::string& line = m_row;
  line.clear();
  for (;;) {
    if (m_pos == m_end) {
      if (m_eof) {
        m_in.setstate(std::ios::eofbit);
        out = line;
        return !line.empty();
      }
      if (m_buf.empty()) m_buf.resize(std::size_t{1} << 16);
      const std::streamsize got =
          m_in.rdbuf()->sgetn(m_buf.data(), static_cast<std::streamsize>(m_buf.size()));
      m_pos = 0;
      m_end = got > 0 ? static_cast<std::size_t>(got) : 0;
      m_eof = m_end == 0;
      continue;
    }
    const char* b = m_buf.data() + m_pos;
    const std::size_t avail = m_end - m_pos;
    const void* nl = std::memchr(b, '\n', avail);
    const std::size_t n = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - b) : avail;
    if (line.size() + n > kMaxTraceLineBytes) {
      line.append(b, kMaxTraceLineBytes - line.size());
      throw InputError(SourceLoc{m_file, m_line + 1, 0},
                       "a trace row is longer than " + std::to_string(kMaxTraceLineBytes >> 10) +
                           " KiB (is this a trace file? it begins \"" + excerpt(line, 40) + "\")");
    }
    if (line.empty() && nl) {  // the whole row in this block (a fresh one)
      m_pos += n + 1;
      out = std::string_view(b, n);
      return true;
    }
    line.append(b, n);
    m_pos += n;
    if (nl) {
      ++m_pos;
      out = line;
      return true;
    }
  }
}

bool TraceSource::read_line(std::string_view& line) {
  while (getline_bounded(line)) {
    ++m_line;
    if (m_line == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // UTF-8 BOM
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t\r\n") != std::string_view::npos) return true;
  }
  if (m_in.bad()) fail("read error");
  return false;
}

bool TraceSource::next(Request& out) {
  if (m_spec.limit > 0 && m_produced >= m_spec.limit) return false;
  std::string_view line;
  if (!read_line(line)) return false;
  Request r;
  switch (m_spec.format) {
    case TraceFormat::Jsonl:
      parse_jsonl(line, r);
      break;
    case TraceFormat::Csv:
      parse_csv(line, r);
      break;
    case TraceFormat::Mooncake:
      parse_mooncake(line, r);
      break;
  }
  // r.arrival_s holds the trace's own time in seconds here.
  if (r.arrival_s < m_last_arrival)
    fail("arrival time " + format_number(r.arrival_s) + " s is earlier than the previous row's " +
         format_number(m_last_arrival) + " s; expected rows in non-decreasing arrival order");
  m_last_arrival = r.arrival_s;
  r.arrival_s *= m_spec.time_scale;
  if (r.arrival_s > kSimTimeLimitS)  // cannot be simulated (core/sim_runner.hpp)
    fail("arrival time " + sim_time_limit_message(r.arrival_s) +
         "; expected arrivals (after time_scale) within it");
  r.id = static_cast<std::uint64_t>(++m_produced);
  r.workload = m_label;
  out = std::move(r);
  return true;
}

void TraceSource::check_tokens(Request& r) const {
  if (r.new_tokens < 1 || r.new_tokens > kMaxTokens)
    fail("new tokens " + std::to_string(r.new_tokens) + " out of range; expected 1 to " +
         std::to_string(kMaxTokens));
  if (r.prefix_tokens < 0 || r.prefix_tokens > kMaxTokens)
    fail("prefix tokens " + std::to_string(r.prefix_tokens) + " out of range; expected 0 to " +
         std::to_string(kMaxTokens));
  // At least one: the prefill itself produces the first output token.
  if (r.output_tokens < 1 || r.output_tokens > kMaxTokens)
    fail("output tokens " + std::to_string(r.output_tokens) + " out of range; expected 1 to " +
         std::to_string(kMaxTokens) + " (the prefill produces the first)");
}

// ---- JSON rows -------------------------------------------------------------------------------

namespace {

// Field readers: each returns false when the key is absent, throws (via fail) when it is bad.
template <class Fail>
const json* field(const json& row, const char* key, bool required, Fail&& fail) {
  const auto it = row.find(key);
  if (it == row.end() || it->is_null()) {
    if (required) fail(std::string("missing \"") + key + "\"");
    return nullptr;
  }
  return &*it;
}

template <class Fail>
double json_seconds(const json& v, const char* key, Fail&& fail) {
  if (!v.is_number())
    fail(std::string("\"") + key + "\" is " + type_name(v) + " (" + show(v) +
         "); expected a number >= 0");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0)
    fail(std::string("\"") + key + "\" is " + show(v) + "; expected a number >= 0");
  return x;
}

template <class Fail>
std::int64_t json_count(const json& v, const char* key, Fail&& fail) {
  if (!v.is_number())
    fail(std::string("\"") + key + "\" is " + type_name(v) + " (" + show(v) +
         "); expected a whole number of tokens");
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(kMaxTokens))
      fail(std::string("\"") + key + "\" is " + show(v) + "; expected at most " +
           std::to_string(kMaxTokens));
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < 0)
      fail(std::string("\"") + key + "\" is negative (" + show(v) +
           "); expected a whole number >= 0");
    return i;
  }
  const double x = v.get<double>();
  if (!std::isfinite(x) || x != std::floor(x))
    fail(std::string("\"") + key + "\" is " + show(v) + "; expected a whole number of tokens");
  if (x < 0)
    fail(std::string("\"") + key + "\" is negative (" + show(v) +
         "); expected a whole number >= 0");
  if (x > static_cast<double>(kMaxTokens))
    fail(std::string("\"") + key + "\" is " + show(v) + "; expected at most " +
         std::to_string(kMaxTokens));
  return static_cast<std::int64_t>(x);
}

template <class Fail>
std::uint64_t json_id(const json& v, const char* key, Fail&& fail) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    fail(std::string("\"") + key + "\" is negative (" + show(v) +
         "); expected a whole number >= 0");
  }
  if (v.is_number_float()) {
    const double x = v.get<double>();
    if (std::isfinite(x) && x == std::floor(x) && x >= 0 && x < 9007199254740992.0)
      return static_cast<std::uint64_t>(x);
  }
  fail(std::string("\"") + key + "\" is " + (v.is_number() ? show(v) : type_name(v)) +
       "; expected a whole number >= 0");
  return 0;
}

template <class Fail>
json parse_object(const std::string& line, Fail&& fail) {
  json row;
  // Issue 26.17: a key given twice in one object is an error, as in YAML configs (nlohmann keeps
  // the last one silently). The callback sees every key with the depth of its object.
  std::vector<std::vector<std::string>> keys;  // per open object
  std::string duplicate;
  const json::parser_callback_t cb = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) keys.emplace_back();
    if (ev == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (ev == json::parse_event_t::key && !keys.empty() && parsed.is_string()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      auto& seen = keys.back();
      if (duplicate.empty() && std::find(seen.begin(), seen.end(), k) != seen.end()) duplicate = k;
      seen.push_back(k);
    }
    return true;
  };
  try {
    row = json::parse(line, cb);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    std::string what = e.what();
    const auto close = what.find("] ");
    if (close != std::string::npos) what = what.substr(close + 2);
    fail("not valid JSON (" + what + "); expected one JSON object per line");
  }
  if (!duplicate.empty())
    fail("duplicate key \"" + excerpt(duplicate) + "\" in the row (each key at most once)");
  if (!row.is_object())
    fail("the row is " + type_name(row) + "; expected one JSON object per line");
  return row;
}

// A kappasim jsonl row read without building a json value (issue 24: nlohmann::json was a
// quarter of a 10k-request run, the file being read twice). It takes only rows it is sure of: one
// flat object whose keys are kJsonlKeys spelled plainly (no escapes), each at most once, whose
// values are JSON numbers, true, false or null that pass the checks parse_jsonl makes. Anything
// else, a bad row included, returns false and the row goes to the full parser, which accepts or
// rejects it with its own message; so both accept the same rows and give the same values.
class FastJsonlRow {
 public:
  explicit FastJsonlRow(std::string_view line)
      : m_p(line.data()), m_end(line.data() + line.size()) {}

  // The row's fields into r (only when the whole row is accepted; r is left as it was else).
  bool read(Request& r) {
    if (!scan()) return false;
    if (m_present & 1u) r.arrival_s = m_row.arrival_s;
    if (m_present & 2u) r.prefix_tokens = m_row.prefix_tokens;
    if (m_present & 4u) r.new_tokens = m_row.new_tokens;
    if (m_present & 8u) r.sequence_id = m_row.sequence_id;
    if (m_present & 16u) r.extends_sequence = m_row.extends_sequence;
    if (m_present & 32u) r.output_tokens = m_row.output_tokens;
    return true;
  }

 private:
  // The values of the keys given (m_present), as parse_jsonl's full parser reads them.
  struct Row {
    double arrival_s = 0;
    std::int64_t prefix_tokens = 0, new_tokens = 0, output_tokens = 0;
    std::uint64_t sequence_id = 0;
    bool extends_sequence = false;
  };

  bool scan() {
    std::uint8_t seen = 0;
    ws();
    if (!eat('{')) return false;
    ws();
    if (eat('}')) return false;  // no keys: the required ones are missing
    for (;;) {
      const int key = read_key();
      if (key < 0 || (seen & (1u << key))) return false;
      seen = static_cast<std::uint8_t>(seen | (1u << key));
      ws();
      if (!eat(':')) return false;
      ws();
      if (!read_value(key)) return false;
      ws();
      if (eat(',')) {
        ws();
        continue;
      }
      if (!eat('}')) return false;
      break;
    }
    ws();
    // Required: arrival_s, prefix_tokens, new_tokens (a null one counts as missing).
    return m_p == m_end && (m_present & 7u) == 7u;
  }

  enum class NumKind { Unsigned, Integer, Float };
  struct Num {
    NumKind kind = NumKind::Unsigned;
    std::uint64_t u = 0;
    std::int64_t i = 0;
    double d = 0;
  };

  void ws() {
    while (m_p != m_end && (*m_p == ' ' || *m_p == '\t' || *m_p == '\n' || *m_p == '\r')) ++m_p;
  }
  bool eat(char c) {
    if (m_p == m_end || *m_p != c) return false;
    ++m_p;
    return true;
  }
  bool digit() const { return m_p != m_end && *m_p >= '0' && *m_p <= '9'; }
  template <std::size_t N>
  bool literal(const char (&word)[N]) {  // N − 1 characters: a constant-length compare
    if (static_cast<std::size_t>(m_end - m_p) < N - 1 || std::memcmp(m_p, word, N - 1) != 0)
      return false;
    m_p += N - 1;
    return true;
  }

  // The index of the key in kJsonlKeys, or -1 (unknown, escaped or not a plain string). The keys
  // begin with different letters: the first one picks the only candidate, which must follow in
  // full and be closed by the quote (issue 24: no scan and compare with every key).
  int read_key() {
    if (!eat('"') || m_p == m_end) return -1;
    switch (*m_p) {
      case kJsonlKeyNames[0][0]:
        return key<0>();
      case kJsonlKeyNames[1][0]:
        return key<1>();
      case kJsonlKeyNames[2][0]:
        return key<2>();
      case kJsonlKeyNames[3][0]:
        return key<3>();
      case kJsonlKeyNames[4][0]:
        return key<4>();
      case kJsonlKeyNames[5][0]:
        return key<5>();
      default:
        return -1;
    }
  }
  // K when kJsonlKeyNames[K] and its closing quote follow, else -1.
  template <int K>
  int key() {
    constexpr std::string_view name = kJsonlKeyNames[K];
    if (static_cast<std::size_t>(m_end - m_p) <= name.size() ||
        std::memcmp(m_p, name.data(), name.size()) != 0 || m_p[name.size()] != '"')
      return -1;
    m_p += name.size() + 1;
    return K;
  }

  // A JSON number as nlohmann::json holds it: a whole number without sign, fraction or exponent
  // unsigned, with a minus sign signed (both up to 18 digits here; longer ones go to the full
  // parser), else a double (correctly rounded, as strtod).
  bool read_number(Num& n) {
    const char* b = m_p;
    const bool neg = eat('-');
    if (!digit()) return false;
    if (*m_p == '0') {
      ++m_p;
    } else {
      while (digit()) ++m_p;
    }
    const char* int_end = m_p;
    bool is_float = false;
    const char* frac_end = nullptr;
    if (eat('.')) {
      if (!digit()) return false;
      while (digit()) ++m_p;
      is_float = true;
      frac_end = m_p;
    }
    bool exponent = false;
    if (m_p != m_end && (*m_p == 'e' || *m_p == 'E')) {
      ++m_p;
      if (m_p != m_end && (*m_p == '+' || *m_p == '-')) ++m_p;
      if (!digit()) return false;
      while (digit()) ++m_p;
      is_float = true;
      exponent = true;
    }
    if (!is_float) {
      const char* d = b + (neg ? 1 : 0);
      if (int_end - d > 18) return false;
      std::uint64_t v = 0;
      for (; d != int_end; ++d) v = v * 10 + static_cast<std::uint64_t>(*d - '0');
      if (neg) {
        n.kind = NumKind::Integer;
        n.i = -static_cast<std::int64_t>(v);
      } else {
        n.kind = NumKind::Unsigned;
        n.u = v;
      }
      return true;
    }
    n.kind = NumKind::Float;
    if (frac_end && !exponent && frac_end - b - (neg ? 2 : 1) <= 15 && frac_end - int_end <= 23) {
      // Clinger's fast path (issue 24): at most 15 digits, at most 22 after the point, no
      // exponent. The digits and the power of ten are both exact doubles, so one division is
      // correctly rounded: the value std::from_chars gives.
      static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                          1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                          1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
      std::uint64_t w = 0;
      for (const char* d = b + (neg ? 1 : 0); d != int_end; ++d)
        w = w * 10 + static_cast<std::uint64_t>(*d - '0');
      for (const char* d = int_end + 1; d != frac_end; ++d)
        w = w * 10 + static_cast<std::uint64_t>(*d - '0');
      const double v = static_cast<double>(w) / kPow10[frac_end - int_end - 1];
      n.d = neg ? -v : v;
      return true;
    }
    const auto res = std::from_chars(b, m_p, n.d);
    return res.ec == std::errc() && res.ptr == m_p && std::isfinite(n.d);
  }

  static double as_double(const Num& n) {
    return n.kind == NumKind::Unsigned  ? static_cast<double>(n.u)
           : n.kind == NumKind::Integer ? static_cast<double>(n.i)
                                        : n.d;
  }
  // json_count's accepted values.
  static bool count(const Num& n, std::int64_t& out) {
    if (n.kind == NumKind::Unsigned) {
      if (n.u > static_cast<std::uint64_t>(kMaxTokens)) return false;
      out = static_cast<std::int64_t>(n.u);
      return true;
    }
    if (n.kind == NumKind::Integer) {
      if (n.i < 0) return false;
      out = n.i;
      return true;
    }
    const double x = n.d;
    if (!std::isfinite(x) || x != std::floor(x) || x < 0 || x > static_cast<double>(kMaxTokens))
      return false;
    out = static_cast<std::int64_t>(x);
    return true;
  }
  // json_id's accepted values.
  static bool id(const Num& n, std::uint64_t& out) {
    if (n.kind == NumKind::Unsigned) {
      out = n.u;
      return true;
    }
    if (n.kind == NumKind::Integer) return false;
    const double x = n.d;
    if (!(std::isfinite(x) && x == std::floor(x) && x >= 0 && x < 9007199254740992.0)) return false;
    out = static_cast<std::uint64_t>(x);
    return true;
  }

  // The value of kJsonlKeys[key] into r (null: absent, as field() takes it).
  bool read_value(int key) {
    if (m_p != m_end && *m_p == 'n') return literal("null");
    Row& r = m_row;
    if (key == 4) {  // extends_sequence
      if (literal("true"))
        r.extends_sequence = true;
      else if (literal("false"))
        r.extends_sequence = false;
      else
        return false;
      m_present |= 1u << key;
      return true;
    }
    Num n;
    if (!read_number(n)) return false;
    switch (key) {
      case 0: {  // arrival_s
        const double x = as_double(n);
        if (!std::isfinite(x) || x < 0) return false;
        r.arrival_s = x;
        break;
      }
      case 1:
        if (!count(n, r.prefix_tokens)) return false;
        break;
      case 2:
        if (!count(n, r.new_tokens)) return false;
        break;
      case 3:
        if (!id(n, r.sequence_id)) return false;
        break;
      default:  // 5: output_tokens
        if (!count(n, r.output_tokens)) return false;
        break;
    }
    m_present |= 1u << key;
    return true;
  }

  const char* m_p;
  const char* m_end;
  unsigned m_present = 0;  // keys given a non-null value (bit k: kJsonlKeys[k])
  Row m_row;
};

}  // namespace

void TraceSource::parse_jsonl(std::string_view line, Request& r) {
  if (FastJsonlRow(line).read(r)) {
    check_tokens(r);
    return;
  }
  auto bad = [this](const std::string& m) { fail(m); };
  const json row = parse_object(std::string(line), bad);
  for (const auto& item : row.items()) {
    bool known = false;
    for (const auto& k : kJsonlKeys) known = known || k == item.key();
    if (!known) {
      const std::string near = nearest(item.key(), kJsonlKeys);
      fail("unknown key \"" + item.key() + "\"" +
           (near.empty() ? std::string() : "; did you mean \"" + near + "\"?") +
           " Expected arrival_s, prefix_tokens, new_tokens and optionally sequence_id, "
           "extends_sequence, output_tokens");
    }
  }
  r.arrival_s = json_seconds(*field(row, "arrival_s", true, bad), "arrival_s", bad);
  r.prefix_tokens = json_count(*field(row, "prefix_tokens", true, bad), "prefix_tokens", bad);
  r.new_tokens = json_count(*field(row, "new_tokens", true, bad), "new_tokens", bad);
  if (const json* v = field(row, "sequence_id", false, bad))
    r.sequence_id = json_id(*v, "sequence_id", bad);
  if (const json* v = field(row, "extends_sequence", false, bad)) {
    if (!v->is_boolean())
      fail("\"extends_sequence\" is " + type_name(*v) + " (" + show(*v) +
           "); expected true or false");
    r.extends_sequence = v->get<bool>();
  }
  if (const json* v = field(row, "output_tokens", false, bad))
    r.output_tokens = json_count(*v, "output_tokens", bad);
  check_tokens(r);
}

void TraceSource::parse_mooncake(std::string_view line, Request& r) {
  auto bad = [this](const std::string& m) { fail(m); };
  const json row =
      parse_object(std::string(line), bad);  // other keys are ignored (the format may grow)
  r.arrival_s = json_seconds(*field(row, "timestamp", true, bad), "timestamp", bad) / 1000.0;
  r.new_tokens = json_count(*field(row, "input_length", true, bad), "input_length", bad);
  r.prefix_tokens = 0;
  r.output_tokens = json_count(*field(row, "output_length", true, bad), "output_length", bad);
  check_tokens(r);
  const json& ids = *field(row, "hash_ids", true, bad);
  if (!ids.is_array())
    fail("\"hash_ids\" is " + type_name(ids) + "; expected a list of block hashes (whole numbers)");
  const std::int64_t blocks = (r.new_tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
  if (static_cast<std::int64_t>(ids.size()) != blocks)
    fail("\"hash_ids\" has " + std::to_string(ids.size()) + " entries for input_length " +
         std::to_string(r.new_tokens) + "; expected ceil(" + std::to_string(r.new_tokens) + " / " +
         std::to_string(kMooncakeBlockTokens) + ") = " + std::to_string(blocks) +
         " (one hash per 512-token block)");
  r.block_hashes.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i)
    r.block_hashes.push_back(json_id(ids[i], ("hash_ids[" + std::to_string(i) + "]").c_str(), bad));
  r.block_tokens = kMooncakeBlockTokens;
}

// ---- CSV rows --------------------------------------------------------------------------------

void TraceSource::parse_csv(std::string_view text, Request& r) {
  const std::string line(text);
  std::vector<std::string> cells;
  std::size_t pos = 0;
  for (;;) {
    const auto comma = line.find(',', pos);
    cells.push_back(
        trim(line.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (cells.size() != m_columns.size())
    fail("the row has " + std::to_string(cells.size()) + " cells; expected " +
         std::to_string(m_columns.size()) + " as in the header");
  for (std::size_t c = 0; c < cells.size(); ++c) {
    const std::string& col = m_columns[c];
    const std::string& cell = cells[c];
    const bool required = col == "arrival_s" || col == "prefix_tokens" || col == "new_tokens";
    if (cell.empty()) {
      if (required) fail("empty " + col + "; expected a value");
      continue;
    }
    if (col == "extends_sequence") {
      if (cell == "true" || cell == "1")
        r.extends_sequence = true;
      else if (cell == "false" || cell == "0")
        r.extends_sequence = false;
      else
        fail("extends_sequence is \"" + cell + "\"; expected true, false, 1 or 0");
      continue;
    }
    if (col == "sequence_id") {
      if (cell.find_first_not_of("0123456789") != std::string::npos)
        fail("sequence_id is \"" + cell + "\"; expected a whole number >= 0");
      errno = 0;
      const unsigned long long v = std::strtoull(cell.c_str(), nullptr, 10);
      if (errno == ERANGE) fail("sequence_id \"" + cell + "\" does not fit in 64 bits");
      r.sequence_id = static_cast<std::uint64_t>(v);
      continue;
    }
    char* end = nullptr;
    // Decimal only (issue 26.17): strtod would read "0x10" as 16 and "infinity" as inf.
    const bool decimal = cell.find_first_not_of("0123456789+-.eE") == std::string::npos;
    const double x = decimal ? std::strtod(cell.c_str(), &end) : 0;
    if (!decimal || end == cell.c_str() || *end != '\0' || !std::isfinite(x))
      fail(col + " is \"" + cell + "\"; expected a number" +
           (decimal ? "" : " in decimal digits (no hexadecimal, inf or nan)"));
    if (x < 0) fail(col + " is negative (" + cell + "); expected a value >= 0");
    if (col == "arrival_s") {
      r.arrival_s = x;
      continue;
    }
    if (x != std::floor(x)) fail(col + " is " + cell + "; expected a whole number of tokens");
    if (x > static_cast<double>(kMaxTokens))
      fail(col + " is " + cell + "; expected at most " + std::to_string(kMaxTokens));
    const auto n = static_cast<std::int64_t>(x);
    if (col == "prefix_tokens")
      r.prefix_tokens = n;
    else if (col == "new_tokens")
      r.new_tokens = n;
    else
      r.output_tokens = n;
  }
  check_tokens(r);
}

TraceSummary validate_trace(const TraceSpec& spec, const std::string& base_dir) {
  TraceSource src(spec, base_dir);
  TraceSummary s;
  Request r;
  while (src.next(r)) {
    if (s.requests == 0) s.first_arrival_s = r.arrival_s;
    s.last_arrival_s = r.arrival_s;
    ++s.requests;
    s.prefix_tokens += r.prefix_tokens;
    s.new_tokens += r.new_tokens;
  }
  if (s.requests == 0)
    throw InputError(SourceLoc{src.file(), 0, 0},
                     "the trace has no rows; expected at least one request");
  return s;
}

}  // namespace kappasim
