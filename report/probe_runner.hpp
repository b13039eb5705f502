// How the report runs a probe (`kappasim probe ...`, one SystemC simulation each): a function the
// caller passes in (kappasim runs each probe as a child process), so the pure report sections
// that hand it on need no simulator.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kappasim::report {

// Runs `kappasim ARGS` and returns the number at JSON pointer `pointer` of its JSON stdout;
// `work_file` is a path prefix for its captured output, `what` prefixes any error. InputError
// when the probe fails or gives no number there.
using ProbeRunner =
    std::function<double(const std::vector<std::string>& args, const std::string& pointer,
                         const std::string& work_file, const std::string& what)>;

}  // namespace kappasim::report
