// spawn_pooled (core/pooled_spawn.hpp): a job handed to a pooled worker runs at the point of
// the evaluation phase where a thread sc_spawn'ed for it would, so the other processes keep
// their order; ended workers are reused. The expected orders follow SystemC's scheduling rules
// (IEEE 1666-2011 §4.2: a process spawned or woken by an immediate notification becomes
// runnable in the current evaluation phase, after those made runnable before it), not a run.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "core/pooled_spawn.hpp"
#include "core/sim_runner.hpp"

namespace kappasim {
namespace pooled_spawn_test {
namespace {

using Spawn = std::function<void(std::function<void()>)>;

// One round at the current time: the driver starts two jobs (one waits 1 ns), wakes a waiting
// thread by an immediate notification, starts a third job, then logs and yields.
void round(std::vector<std::string>& log, sc_core::sc_event& wake, const Spawn& spawn) {
  log.push_back("drv-start");
  spawn([&log] {
    log.push_back("x0");
    sc_core::wait(1, sc_core::SC_NS);
    log.push_back("x1");
  });
  spawn([&log] { log.push_back("y0"); });
  wake.notify();
  spawn([&log] { log.push_back("z0"); });
  log.push_back("drv-end");
}

TEST(PooledSpawn, JobsRunWhereSpawnedThreadsWouldAndWorkersAreReused) {
  std::vector<std::string> plain, pooled;
  std::vector<std::string>* log = &plain;
  std::size_t workers_after_first = 0, workers_after_second = 0;
  std::unique_ptr<sc_core::sc_event> wake_event;
  run_simulation([&] {
    wake_event = std::make_unique<sc_core::sc_event>("wake");
    sc_core::sc_event* wake = wake_event.get();
    sc_core::sc_spawn([&log, wake] {
      for (;;) {
        sc_core::wait(*wake);
        log->push_back("w");
      }
    });
    sc_core::sc_spawn([&, wake] {
      const Spawn by_spawn = [](std::function<void()> f) { sc_core::sc_spawn(std::move(f)); };
      const Spawn by_pool = [](std::function<void()> f) { spawn_pooled(std::move(f)); };
      round(plain, *wake, by_spawn);
      sc_core::wait(10, sc_core::SC_NS);
      log = &pooled;
      round(pooled, *wake, by_pool);  // three new workers
      sc_core::wait(5, sc_core::SC_NS);
      workers_after_first = pooled_spawn_detail::pool().all.size();
      round(pooled, *wake, by_pool);  // the same three, idle again
      sc_core::wait(5, sc_core::SC_NS);
      workers_after_second = pooled_spawn_detail::pool().all.size();
    });
  });
  // The driver runs to its wait; then, in the order they became runnable: x, y, the woken
  // waiter, z; x's second half 1 ns later.
  const std::vector<std::string> once = {"drv-start", "drv-end", "x0", "y0", "w", "z0", "x1"};
  EXPECT_EQ(plain, once);
  std::vector<std::string> twice = once;
  twice.insert(twice.end(), once.begin(), once.end());
  EXPECT_EQ(pooled, twice);
  EXPECT_EQ(workers_after_first, 3u);
  EXPECT_EQ(workers_after_second, 3u);
}

}  // namespace
}  // namespace pooled_spawn_test
}  // namespace kappasim
