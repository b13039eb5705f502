// Moved: the sweep runner is the library sweeps/runner/runner.hpp (run_sweep, SweepOptions,
// checked_jobs; same names and signatures). This forwarding header stays only until
// cmd_reproduce.cpp (moving to report/) includes the new path; delete it then.
#pragma once

#include "sweeps/runner/runner.hpp"
