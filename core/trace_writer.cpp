#include "core/trace_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/error.hpp"
#include "core/table.hpp"
#include "core/units.hpp"

namespace kappasim {
namespace {

// json_escape returns the quoted JSON string.
std::string quoted(const std::string& s) { return json_escape(s); }

// A JSON number; non-finite values (never valid JSON) become 0.
std::string num(double v) { return std::isfinite(v) ? format_number(v) : std::string("0"); }

std::string micros(double t_s) { return num(t_s * 1e6); }

}  // namespace

TraceWriter::TraceWriter(const std::string& path)
    : m_path(path),
      m_out(std::make_unique<std::ofstream>(path, std::ios::binary | std::ios::trunc)) {
  if (!*m_out) throw file_error("cannot write trace file '" + path + "'", errno);
  *m_out << "{\"traceEvents\":[";
}

TraceWriter::~TraceWriter() {
  // No closing bracket here: an unfinished trace stays invalid JSON, on purpose.
  if (m_out) m_out->close();
}

void TraceWriter::begin_event() {
  *m_out << (m_events == 0 ? "\n" : ",\n");
  ++m_events;
}

int TraceWriter::process_id(const std::string& process) {
  auto it = m_pids.find(process);
  if (it != m_pids.end()) return it->second;
  int pid = static_cast<int>(m_pids.size()) + 1;
  m_pids.emplace(process, pid);
  begin_event();
  *m_out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << pid
         << ",\"args\":{\"name\":" << quoted(process) << "}}";
  begin_event();
  *m_out << "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" << pid
         << ",\"args\":{\"sort_index\":" << pid << "}}";
  return pid;
}

int TraceWriter::track(const std::string& process, const std::string& thread) {
  if (!enabled() || m_closed) return 0;
  auto key = std::make_pair(process, thread);
  auto it = m_track_ids.find(key);
  if (it != m_track_ids.end()) return it->second;
  int pid = process_id(process);
  int tid = m_next_tid++;
  int id = static_cast<int>(m_tracks.size());
  m_tracks.push_back({pid, tid});
  m_track_ids.emplace(key, id);
  begin_event();
  *m_out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":" << tid
         << ",\"args\":{\"name\":" << quoted(thread) << "}}";
  begin_event();
  *m_out << "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":" << tid
         << ",\"args\":{\"sort_index\":" << tid << "}}";
  return id;
}

void TraceWriter::check_open_track(int track) const {
  if (track < 0 || static_cast<std::size_t>(track) >= m_tracks.size())
    throw std::invalid_argument("TraceWriter: unknown track id " + std::to_string(track));
}

void TraceWriter::span(int track, const std::string& name, double start_s, double end_s,
                       const Args& args) {
  if (!enabled() || m_closed) return;
  check_open_track(track);
  if (end_s < start_s)
    throw std::invalid_argument("TraceWriter::span '" + name + "': end before start");
  const Track& t = m_tracks[static_cast<std::size_t>(track)];
  begin_event();
  *m_out << "{\"name\":" << quoted(name) << ",\"ph\":\"X\",\"ts\":" << micros(start_s)
         << ",\"dur\":" << num((end_s - start_s) * 1e6) << ",\"pid\":" << t.pid
         << ",\"tid\":" << t.tid;
  if (!args.empty()) {
    *m_out << ",\"args\":{";
    for (std::size_t i = 0; i < args.size(); ++i)
      *m_out << (i ? "," : "") << quoted(args[i].first) << ":" << quoted(args[i].second);
    *m_out << "}";
  }
  *m_out << "}";
}

void TraceWriter::counter(const std::string& process, const std::string& name, double t_s,
                          double value) {
  if (!enabled() || m_closed) return;
  int pid = process_id(process);
  begin_event();
  *m_out << "{\"name\":" << quoted(name) << ",\"ph\":\"C\",\"ts\":" << micros(t_s)
         << ",\"pid\":" << pid << ",\"args\":{" << quoted(name) << ":" << num(value) << "}}";
}

void TraceWriter::instant(int track, const std::string& name, double t_s) {
  if (!enabled() || m_closed) return;
  check_open_track(track);
  const Track& t = m_tracks[static_cast<std::size_t>(track)];
  begin_event();
  *m_out << "{\"name\":" << quoted(name) << ",\"ph\":\"i\",\"ts\":" << micros(t_s)
         << ",\"pid\":" << t.pid << ",\"tid\":" << t.tid << ",\"s\":\"t\"}";
}

void TraceWriter::close() {
  if (!enabled() || m_closed) return;
  m_closed = true;
  *m_out << "\n],\"displayTimeUnit\":\"ns\"}\n";
  m_out->flush();
  bool ok = static_cast<bool>(*m_out);
  m_out->close();
  if (!ok || !*m_out) throw file_error("cannot write trace file '" + m_path + "'", errno);
}

int LaneAssigner::place(double start_s, double end_s) {
  for (std::size_t i = 0; i < m_end.size(); ++i)
    if (m_end[i] <= start_s) {
      m_end[i] = std::max(m_end[i], end_s);
      return static_cast<int>(i);
    }
  m_end.push_back(end_s);
  return static_cast<int>(m_end.size() - 1);
}

}  // namespace kappasim
