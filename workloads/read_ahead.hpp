// A trace read on a second thread while the run simulates (issue 24). One thread reads and checks
// every row of the trace, once, and hands the rows to the run in batches; before, the run read
// the whole trace to check it (validate_trace), then again to simulate it, both on the run's own
// thread: a tenth of a 100,000-request run's time.
//
// What the run sees is exactly what TraceSource gives: the same requests in the same order, and
// a bad row's error (the same InputError, naming the file and line) where TraceSource would
// throw it, after the rows before it. A run that stops before the end (workload limits) calls
// finish(), which reads and checks the rest, as validate_trace did, and throws a bad row's error
// or "the trace has no rows". Nothing here depends on timing: the rows are produced in file order
// and the thread holds at most kBatches batches ahead, so memory stays bounded.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "workloads/trace_reader.hpp"

namespace kappasim {

class ReadAheadTrace final : public WorkloadSource {
 public:
  static constexpr std::size_t kBatch = 512;  // rows handed over at a time
  static constexpr std::size_t kBatches = 4;  // batches read ahead at most
  // The first batch's rows, read by the constructor on the caller's thread; each batch after,
  // the thread's, holds twice its predecessor's, up to kBatch (the run waits for the thread's
  // first batch once it has taken the constructor's: 512 rows read first kept it waiting).
  static constexpr std::size_t kFirstBatch = 16;
  static_assert(kFirstBatch >= 1 && kFirstBatch <= kBatch, "the first batch is a batch");

  // Opens the trace as TraceSource(spec, base_dir) does (its errors thrown here), reads the first
  // batch (a bad row's error kept for the run to meet where TraceSource would throw it) and, when
  // the trace goes on past it, starts the reading thread; without a thread to be had, the rows are
  // read on the caller's (as before).
  ReadAheadTrace(const TraceSpec& spec, const std::string& base_dir);
  ~ReadAheadTrace() override;
  ReadAheadTrace(const ReadAheadTrace&) = delete;
  ReadAheadTrace& operator=(const ReadAheadTrace&) = delete;

  bool next(Request& out) override;
  std::string describe() const override { return m_describe; }
  // Reads and checks the rows the run did not take; throws the first bad row's error (or an
  // empty trace's), whether the run reached it or not. Call once the run is over, and before
  // reporting an error of the run's own: a bad trace is reported first, as validate_trace did.
  void finish();

 private:
  struct Batch {
    std::vector<Request> rows;
    std::size_t n = 0;  // rows[0, n) are this batch's
  };
  void read_all();             // the thread's body
  bool fill(Batch& b);         // up to kBatch rows from m_src; false at the end
  void fail_if_empty() const;  // "the trace has no rows", as validate_trace

  std::unique_ptr<TraceSource> m_src;
  std::string m_describe;
  std::int64_t m_rows = 0;  // rows read from m_src (the thread's, or the caller's without one)
  std::size_t m_batch = kFirstBatch;  // the next batch's rows (the thread's)
  // Shared with the thread under m_mu.
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::deque<Batch> m_full;    // read, in order
  std::vector<Batch> m_empty;  // taken, to fill again
  bool m_ended = false;        // the thread read its last row (or failed)
  bool m_discard = false;      // finish(): rows read from now on are checked and dropped
  bool m_stop = false;         // the destructor: stop reading
  std::exception_ptr m_error;  // the row the thread failed on (after the rows before it)
  std::thread m_thread;
  // The caller's.
  Batch m_cur;
  std::size_t m_at = 0;  // next row of m_cur
  bool m_finished = false;
};

}  // namespace kappasim
