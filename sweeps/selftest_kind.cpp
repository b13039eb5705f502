// The `selftest` sweep kind: tests the sweep machinery itself. {x, sleep?, fail?} -> {x, x2};
// it can sleep (progress, locks, -j) and fail on purpose (exit, abort, SIGSEGV, an input error)
// so the runner's error records are tested without a simulation. Pure: no SystemC.
#include <time.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>

#include "core/config.hpp"
#include "sweeps/point_kind.hpp"

namespace kappasim::sweep {

namespace {

enum class Fail { None, Exit, Abort, Segv, Invalid };

// workload.seed, so that an axis on the seed can be tested without a simulation (issue 26 item 8).
struct SelftestWorkload {
  std::uint64_t seed = 0;
  template <class V>
  void visit(V& v) {
    v.integer("seed", seed, opt("a seed (the point's seed is the metric)", Range::NonNegative));
  }
  void validate(const std::string&) const {}
};

struct SelftestSpec {
  double x = 0;
  SelftestWorkload workload;
  double sleep_s = 0;
  Fail fail = Fail::None;
  template <class V>
  void visit(V& v) {
    v.number("x", x, req("the value echoed back (x, x2 = x·x)", Range::Any));
    v.quantity("sleep", sleep_s, dim::time,
               opt("time to sleep before answering", Range::NonNegative));
    v.choice("fail", fail,
             {{"none", Fail::None},
              {"exit", Fail::Exit},
              {"abort", Fail::Abort},
              {"segv", Fail::Segv},
              {"invalid", Fail::Invalid}},
             opt("how to fail on purpose"));
    v.object("workload", workload, opt("{seed}: ignored but for the metric point_seed_*"));
  }
  void validate(const std::string&) const {}
};

PointResult selftest_point(const ConfigNode& config, const PointContext& ctx) {
  const SelftestSpec s = read_config<SelftestSpec>(config, "");
  if (s.sleep_s > 0) {
    timespec ts;
    ts.tv_sec = static_cast<time_t>(s.sleep_s);
    ts.tv_nsec = static_cast<long>((s.sleep_s - static_cast<double>(ts.tv_sec)) * 1e9);
    while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
  switch (s.fail) {
    case Fail::None:
      break;
    case Fail::Exit:
      std::_Exit(1);
    case Fail::Abort:
      std::abort();
    case Fail::Segv:
      std::raise(SIGSEGV);
      std::_Exit(1);  // a SIGSEGV handler (a sanitizer) returned
    case Fail::Invalid:
      throw InputError(config.find("fail") ? config.find("fail")->loc : config.loc,
                       "selftest: invalid input on request (fail: invalid)");
  }
  PointResult r;
  r.metrics = {{"x", s.x}, {"x2", s.x * s.x}};
  // With a workload: the point's seed in two exact halves (a double holds 53 bits).
  if (config.find("workload")) {
    r.metrics.emplace_back("point_seed_hi", static_cast<double>(ctx.seed >> 32));
    r.metrics.emplace_back("point_seed_lo", static_cast<double>(ctx.seed & 0xffffffffULL));
  }
  return r;
}

const KindRegistration kSelftestKind{
    {"selftest",
     "tests the sweep machinery: {x, sleep, fail: none|exit|abort|segv|invalid, workload: "
     "{seed}} -> {x, x2, point_seed_hi, point_seed_lo}",
     selftest_point,
     false,
     true,
     {{"x", "1", "the config's x"},
      {"x2", "1", "x squared"},
      {"point_seed_hi", "1", "with a workload: the point's seed, its upper 32 bits"},
      {"point_seed_lo", "1", "with a workload: its lower 32 bits"}}}};

}  // namespace

}  // namespace kappasim::sweep
