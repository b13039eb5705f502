// Trace replay. Three formats, one row per request:
//  - jsonl (kappasim): {"arrival_s": 0.5, "prefix_tokens": K, "new_tokens": T,
//    "sequence_id": 7, "extends_sequence": false, "output_tokens": 1}; the last three optional.
//  - csv (kappasim): a header naming the columns (any order) arrival_s, prefix_tokens,
//    new_tokens [, sequence_id, extends_sequence, output_tokens]; an empty optional cell takes
//    the default.
//  - mooncake (kvcache-ai/Mooncake): {"timestamp": ms, "input_length": n, "output_length": m,
//    "hash_ids": [...]}, one hash per 512-token block: block_hashes = hash_ids,
//    block_tokens = 512, prefix_tokens = 0, new_tokens = input_length (the KV tier finds what is
//    cached at run time through the chunk keys), arrival_s = timestamp / 1000.
// Arrival times are multiplied by time_scale. Blank lines are skipped. A bad row (bad JSON or
// CSV, a missing, negative, non-integer or wrongly typed field, an unknown key in a kappasim
// row or CSV header, arrival going
// backwards, token counts outside T in [1, 10^7], K in [0, 10^7], hash_ids not
// ceil(input_length / 512) long) is an InputError "FILE:LINE: what was wrong; expected ...".
//
// validate_trace() reads the file once, checking every row a run would use, before anything is
// simulated; TraceSource then replays it lazily (memory bounded by one line).
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/request.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {

inline constexpr int kMooncakeBlockTokens = 512;
// The longest trace row (issue 12, item 9): a Mooncake row for a 1M-token prompt holds ~2000
// hash ids (~20 kB); 1 MiB leaves room for any real row and stops a file without newlines.
inline constexpr std::size_t kMaxTraceLineBytes = std::size_t{1} << 20;

// The file a trace spec names: absolute paths stay, relative ones are taken from base_dir.
std::string resolve_trace_path(const TraceSpec& spec, const std::string& base_dir);

struct TraceSummary {
  std::int64_t requests = 0;
  double first_arrival_s = 0;
  double last_arrival_s = 0;
  std::int64_t prefix_tokens = 0;  // sums over the rows
  std::int64_t new_tokens = 0;
};

class TraceSource : public WorkloadSource {
 public:
  // Opens the file (InputError naming workload.trace.path if it cannot be opened; for csv the
  // header is read and checked here).
  TraceSource(const TraceSpec& spec, const std::string& base_dir = "");
  bool next(Request& out) override;
  std::string describe() const override;
  const std::string& file() const { return m_file; }

 private:
  // The next non-blank row (BOM and CR removed): a view of the block being read or of m_row,
  // valid until the next call.
  bool read_line(std::string_view& line);
  bool getline_bounded(std::string_view& line);
  [[noreturn]] void fail(const std::string& msg) const;
  void parse_jsonl(std::string_view line, Request& r);
  void parse_mooncake(std::string_view line, Request& r);
  void parse_csv(std::string_view line, Request& r);
  void check_tokens(Request& r) const;

  TraceSpec m_spec;
  std::string m_file;
  InternedName m_label;  // Request::workload
  std::ifstream m_in;
  std::vector<char> m_buf;  // the block being read (getline_bounded)
  std::size_t m_pos = 0, m_end = 0;
  bool m_eof = false;
  std::string m_row;  // a row that crosses blocks, gathered (its capacity kept between rows)
  int m_line = 0;
  std::int64_t m_produced = 0;
  double m_last_arrival = 0;
  std::vector<std::string> m_columns;  // csv header
};

// Streams the whole trace (up to spec.limit rows) once and throws InputError on the first bad
// row; returns what it read.
TraceSummary validate_trace(const TraceSpec& spec, const std::string& base_dir = "");

}  // namespace kappasim
