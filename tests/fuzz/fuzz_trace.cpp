// libFuzzer target: the trace readers (kappasim JSONL, kappasim CSV, Mooncake JSONL).
//
// The input is a trace file's contents. It is written to a temporary file (the readers take a
// path) and read in each of the three formats, as `kappasim run` does: validate_trace() first,
// then every row through TraceSource, with time_scale 1 and with a limit of 3 rows.
//
// Contract: only InputError may escape; every row a reader yields obeys the documented limits
// (T in [1, 10^7], K and output tokens in [0, 10^7], finite arrival >= 0, non-decreasing, a
// Mooncake row one hash per 512-token block); validate_trace and TraceSource agree on the row
// count. Anything else, a crash, a hang or a sanitizer report is a finding.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "workloads/trace_reader.hpp"
#include "workloads/workload_spec.hpp"

namespace {

using namespace kappasim;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_trace: %s\n", what.c_str());
  std::abort();
}

const std::string& trace_file() {
  static const std::string path = [] {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path dir =
        fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    return (dir / ("kappasim-fuzz-trace-" + std::to_string(::getpid()) + ".txt")).string();
  }();
  static const bool cleanup = [] { return std::atexit([] { ::unlink(path.c_str()); }) == 0; }();
  (void)cleanup;
  return path;
}

void read_as(TraceFormat format, std::int64_t limit) {
  TraceSpec spec;
  spec.path = trace_file();
  spec.format = format;
  spec.limit = limit;
  std::int64_t validated = -1;
  try {
    validated = validate_trace(spec).requests;
  } catch (const InputError&) {
  }
  std::int64_t rows = 0;
  try {
    TraceSource src(spec);
    Request r;
    double last = 0;
    while (src.next(r)) {
      ++rows;
      if (r.new_tokens < 1 || r.new_tokens > kMaxTokens) finding("new_tokens out of range");
      if (r.prefix_tokens < 0 || r.prefix_tokens > kMaxTokens)
        finding("prefix_tokens out of range");
      if (r.output_tokens < 0 || r.output_tokens > kMaxTokens)
        finding("output_tokens out of range");
      if (!std::isfinite(r.arrival_s) || r.arrival_s < 0) finding("arrival not finite or negative");
      if (r.arrival_s < last) finding("arrival went backwards");
      last = r.arrival_s;
      if (format == TraceFormat::Mooncake &&
          static_cast<std::int64_t>(r.block_hashes.size()) !=
              (r.new_tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens)
        finding("a Mooncake row with the wrong number of block hashes");
      if (limit > 0 && rows > limit) finding("the reader went past its limit");
    }
    // The whole trace was read without an error: validate_trace must have accepted it too
    // (unless it had no rows, which validate_trace rejects).
    if (rows > 0 && validated != rows) finding("validate_trace and TraceSource disagree");
  } catch (const InputError&) {
    if (validated >= 0) finding("validate_trace accepted a trace that TraceSource rejects");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(trace_file(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) finding("cannot write the temporary trace file " + trace_file());
  }
  for (TraceFormat f : {TraceFormat::Jsonl, TraceFormat::Csv, TraceFormat::Mooncake}) {
    read_as(f, 0);
    read_as(f, 3);
  }
  return 0;
}
