// The GPU's streaming multiprocessors as a shared resource. Compute kernels run at the fraction
// of SMs that copy kernels (LMCache's zero-copy load path) leave free; a copy kernel acquires
// SMs for its duration. Pure counters; the SystemC components read and update them.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

namespace kappasim {

class SmPool {
 public:
  explicit SmPool(int total) : m_total(total), m_free(total) {
    if (total < 1) throw std::logic_error("SmPool: need at least one SM");
  }
  int total() const { return m_total; }
  int free() const { return m_free; }
  // Takes up to n SMs (never the last one: compute keeps at least one) and returns how many.
  int acquire(int n) {
    int got = n < m_free - 1 ? n : m_free - 1;
    if (got < 0) got = 0;
    m_free -= got;
    if (got > 0 && m_on_change) m_on_change();
    return got;
  }
  void release(int n) {
    if (n < 0 || m_free + n > m_total) throw std::logic_error("SmPool: release of unowned SMs");
    m_free += n;
    if (n > 0 && m_on_change) m_on_change();
  }
  // Called after every acquire or release that moved SMs (GpuCompute notifies its sms_changed
  // event: compute running beside a copy kernel re-times itself then).
  void set_on_change(std::function<void()> f) { m_on_change = std::move(f); }
  double compute_fraction() const { return static_cast<double>(m_free) / m_total; }

 private:
  int m_total;
  int m_free;
  std::function<void()> m_on_change;
};

}  // namespace kappasim
