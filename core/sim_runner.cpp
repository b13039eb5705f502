#include "core/sim_runner.hpp"

#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <systemc>

namespace kappasim {
namespace {
const std::function<void()>* g_build = nullptr;
std::optional<double> g_until;
std::exception_ptr g_error;
bool g_ran = false;
}  // namespace

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
  if (rc != 0) throw std::runtime_error("SystemC simulation failed (sc_main returned " +
                                        std::to_string(rc) + ")");
}

}  // namespace kappasim

// SystemC's entry point, reached only through run_simulation().
int sc_main(int, char**) {
  using namespace sc_core;
  sc_report_handler::set_actions(SC_WARNING, SC_THROW);
  sc_report_handler::set_actions(SC_INFO, SC_DO_NOTHING);
  try {
    if (kappasim::g_build) (*kappasim::g_build)();
    if (kappasim::g_until)
      sc_start(sc_time(*kappasim::g_until, SC_SEC));
    else
      sc_start();
  } catch (...) {
    kappasim::g_error = std::current_exception();
  }
  return 0;
}
