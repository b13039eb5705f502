// A streaming writer of the Chrome Trace Event JSON format, which ui.perfetto.dev and
// chrome://tracing open:
//
//   {"traceEvents":[
//   {"name":"process_name","ph":"M","pid":1,"args":{"name":"GPU 0"}},
//   {"name":"prefill","ph":"X","ts":12.5,"dur":840,"pid":1,"tid":1,"args":{"seqs":"3"}},
//   ...
//   ],"displayTimeUnit":"ns"}
//
// Events go straight to the file as they are emitted, so memory is bounded by the number of
// tracks, not of events. Times are given in seconds and written in microseconds (the format's
// unit) as shortest round-trip decimals; pids and tids are assigned in first-use order, so the
// same run gives a byte-identical file. Metadata events name every process and thread and give
// them sort indices in first-use order. Event names, track names and argument values are plain
// strings, JSON-escaped here (argument values are written as JSON strings).
//
// The file is valid JSON only after close(): write it into an OutputDir staging folder so that
// a killed run leaves nothing behind. A default-constructed writer is disabled: every call is a
// no-op (for benchmarks and runs without --trace). No SystemC.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kappasim {

class TraceWriter {
 public:
  using Args = std::vector<std::pair<std::string, std::string>>;

  // Disabled: every call is a no-op, track() returns 0.
  TraceWriter() = default;
  // Opens (truncates) `path` and writes the header; InputError naming the path on failure.
  explicit TraceWriter(const std::string& path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  bool enabled() const { return m_out != nullptr; }

  // A track (one row in the viewer): thread `thread` of process `process`. The same pair gives
  // the same id; the first use writes the name metadata.
  int track(const std::string& process, const std::string& thread);
  // A complete event ("X") on a track from start_s to end_s (std::invalid_argument if
  // end_s < start_s or the track id is unknown).
  void span(int track, const std::string& name, double start_s, double end_s,
            const Args& args = {});
  // A counter sample ("C"): a counter track `name` under process `process`.
  void counter(const std::string& process, const std::string& name, double t_s, double value);
  // An instant event ("i", thread scope) on a track.
  void instant(int track, const std::string& name, double t_s);
  // Writes the closing bracket and closes the file; InputError if the file could not be
  // written. Idempotent. Calls after close() are ignored.
  void close();

  std::uint64_t events_written() const { return m_events; }

 private:
  int process_id(const std::string& process);
  void begin_event();
  void check_open_track(int track) const;

  std::string m_path;
  std::unique_ptr<std::ofstream> m_out;
  std::map<std::string, int> m_pids;  // process name -> pid (1-based)
  std::map<std::pair<std::string, std::string>, int> m_track_ids;
  struct Track {
    int pid;
    int tid;
  };
  std::vector<Track> m_tracks;  // by track id
  int m_next_tid = 1;
  std::uint64_t m_events = 0;
  bool m_closed = false;
};

// Lanes (tracks) for spans that must not overlap on one track, such as whole requests:
// each span goes to the lowest-numbered lane whose spans all end at or before its start, or to
// a new lane. Deterministic (a pure function of the spans in the order given); never puts two
// overlapping spans on one lane, whatever the order (issue 12, item 16: `id % 16` did).
class LaneAssigner {
 public:
  // The lane (0-based) for the span [start_s, end_s].
  int place(double start_s, double end_s);
  int lanes() const { return static_cast<int>(m_end.size()); }

 private:
  std::vector<double> m_end;  // per lane: the latest end of its spans
};

}  // namespace kappasim
