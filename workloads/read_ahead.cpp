#include "workloads/read_ahead.hpp"

#include <algorithm>
#include <system_error>
#include <utility>

#include "core/error.hpp"

namespace kappasim {

ReadAheadTrace::ReadAheadTrace(const TraceSpec& spec, const std::string& base_dir)
    : m_src(std::make_unique<TraceSource>(spec, base_dir)), m_describe(m_src->describe()) {
  // The first batch here, on the caller's thread (issue 24: the run's first arrival waited for a
  // thread to start, make its heap and read them, ≈ 1 ms under strace); the thread reads on from
  // the next row. A trace that ends in it (or a bad row in it) needs no thread.
  bool more = false;
  try {
    more = fill(m_cur);
  } catch (...) {  // handed to the run after the rows before it, as the thread would
    m_error = std::current_exception();
  }
  if (!more) {
    m_ended = true;
    return;
  }
  try {
    m_thread = std::thread([this] { read_all(); });
  } catch (const std::system_error&) {  // no thread to be had: next() reads on the caller's
  }
}

ReadAheadTrace::~ReadAheadTrace() {
  if (!m_thread.joinable()) return;
  {
    const std::lock_guard<std::mutex> hold(m_mu);
    m_stop = true;
  }
  m_cv.notify_all();
  m_thread.join();
}

bool ReadAheadTrace::fill(Batch& b) {
  b.n = 0;
  const std::size_t rows = m_batch;
  m_batch = std::min(kBatch, 2 * m_batch);
  while (b.n < rows) {
    if (b.rows.size() <= b.n) b.rows.emplace_back();
    if (!m_src->next(b.rows[b.n])) return false;
    ++b.n;
    ++m_rows;
  }
  return true;
}

void ReadAheadTrace::read_all() {
  Batch b;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(m_mu);
      m_cv.wait(lock, [this] { return m_stop || m_discard || m_full.size() < kBatches; });
      if (m_stop) return;
      if (b.rows.empty() && !m_empty.empty()) {  // a batch the run has taken, to fill again
        b = std::move(m_empty.back());
        m_empty.pop_back();
      }
    }
    bool more = false;
    std::exception_ptr error;
    try {
      more = fill(b);  // outside the lock: the run takes rows meanwhile
    } catch (...) {    // the rows before the bad one are handed over first
      error = std::current_exception();
    }
    {
      const std::lock_guard<std::mutex> hold(m_mu);
      if (b.n > 0 && !m_discard) {
        m_full.push_back(std::move(b));
        b = Batch{};
      }
      if (!more) {
        m_error = error;
        m_ended = true;
      }
    }
    m_cv.notify_all();
    if (!more) return;
  }
}

bool ReadAheadTrace::next(Request& out) {
  if (m_at < m_cur.n) {
    out = std::move(m_cur.rows[m_at++]);
    return true;
  }
  if (!m_thread.joinable()) {  // read here, as TraceSource
    if (m_ended) {             // the constructor's batch held the last row, or a bad one
      if (m_error) std::rethrow_exception(m_error);
      return false;
    }
    if (m_finished || !m_src->next(out)) return false;
    ++m_rows;
    return true;
  }
  std::unique_lock<std::mutex> lock(m_mu);
  if (m_cur.n > 0) {  // taken: back to the thread to fill again
    m_cur.n = 0;
    m_empty.push_back(std::move(m_cur));
    m_cur = Batch{};
  }
  m_at = 0;
  m_cv.wait(lock, [this] { return !m_full.empty() || m_ended; });
  if (m_full.empty()) {
    if (m_error) std::rethrow_exception(m_error);
    return false;
  }
  m_cur = std::move(m_full.front());
  m_full.pop_front();
  lock.unlock();
  m_cv.notify_all();  // room for another batch
  out = std::move(m_cur.rows[m_at++]);
  return true;
}

void ReadAheadTrace::fail_if_empty() const {
  if (m_rows == 0)
    throw InputError(SourceLoc{m_src->file(), 0, 0},
                     "the trace has no rows; expected at least one request");
}

void ReadAheadTrace::finish() {
  if (m_finished) {
    if (m_error) std::rethrow_exception(m_error);
    fail_if_empty();
    return;
  }
  m_finished = true;
  if (m_thread.joinable()) {
    {
      std::unique_lock<std::mutex> lock(m_mu);
      m_discard = true;  // the rest is read and checked, not kept
      m_full.clear();
      m_cv.notify_all();
      m_cv.wait(lock, [this] { return m_ended; });
    }
    m_thread.join();
  } else if (!m_ended) {
    try {
      Request r;
      while (m_src->next(r)) ++m_rows;
    } catch (...) {
      m_error = std::current_exception();
    }
  }
  if (m_error) std::rethrow_exception(m_error);
  fail_if_empty();
}

}  // namespace kappasim
