// Not compiled. The layers_check self-test (tests/CMakeLists.txt) checks this file as if it were
// core/upward_probe.cpp in the core layer: both includes below run up (core is the bottom layer,
// and pure), so cmake/check_layers.cmake must name both.
#include <systemc>
#include "serving/engine.hpp"
