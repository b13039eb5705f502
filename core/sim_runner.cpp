#include "core/sim_runner.hpp"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <systemc>

#include "core/error.hpp"

namespace kappasim {
namespace {
const std::function<void()>* g_build = nullptr;
std::optional<double> g_until;
std::exception_ptr g_error;
bool g_ran = false;
bool g_hit_limit = false;
}  // namespace

void sim_fail(std::exception_ptr e) {
  // No sc_stop() here: stopping from inside a process's coroutine stack leaves AddressSanitizer's
  // stack bookkeeping broken for the throw that follows (a false stack-buffer-overflow). The
  // caller's process ends instead; what is already in flight drains, and run_simulation
  // rethrows once the kernel is idle (or at the time limit).
  if (!g_error) g_error = std::move(e);
}

double sim_now_s() { return sc_core::sc_time_stamp().to_seconds(); }

void run_simulation(const std::function<void()>& build, std::optional<double> until_s) {
  if (g_ran) throw std::logic_error("run_simulation: one SystemC simulation per process");
  g_ran = true;
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  g_build = &build;
  g_until = until_s;
  g_error = nullptr;
  static char name[] = "kappasim";
  char* argv[] = {name, nullptr};
  int rc = sc_core::sc_elab_and_sim(1, argv);
  g_build = nullptr;
  if (g_error) std::rethrow_exception(g_error);
  if (g_hit_limit)
    throw InputError("simulated time: the run had not ended at the simulator's time limit of " +
                     std::to_string(static_cast<int>(kSimTimeLimitDays)) +
                     " days (SystemC's 64-bit time at its 1 ps resolution reaches 2^63 ps = "
                     "106.75 days); expected a shorter run: fewer requests (workload.requests), "
                     "a higher workload.rate, a smaller trace time_scale, or smaller transfers");
  if (rc != 0)
    throw std::runtime_error("SystemC simulation failed (sc_main returned " + std::to_string(rc) +
                             ")");
}

}  // namespace kappasim

// SystemC's entry point, reached only through run_simulation().
int sc_main(int, char**) {
  using namespace sc_core;
  sc_report_handler::set_actions(SC_WARNING, SC_THROW);
  sc_report_handler::set_actions(SC_INFO, SC_DO_NOTHING);
  try {
    if (kappasim::g_build) (*kappasim::g_build)();
    // Never past the time base's reach; stop when no event is left (SC_EXIT_ON_STARVATION),
    // so the final time is the last event's, as with a plain sc_start().
    const double until =
        std::min(kappasim::g_until.value_or(kappasim::kSimTimeLimitS), kappasim::kSimTimeLimitS);
    sc_start(sc_time(until, SC_SEC), SC_EXIT_ON_STARVATION);
    kappasim::g_hit_limit =
        (!kappasim::g_until || *kappasim::g_until >= kappasim::kSimTimeLimitS) &&
        sc_pending_activity();
  } catch (...) {
    kappasim::g_error = std::current_exception();
  }
  return 0;
}
