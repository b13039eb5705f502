// Helpers shared by the sweep runner's files (sweeps/runner/*.cpp); not an interface.
#pragma once

#include <filesystem>
#include <string>

namespace kappasim::sweep {

namespace fs = std::filesystem;

// `p` made absolute and normalised, without a trailing '/'.
std::string absolute_path(const std::string& p);

}  // namespace kappasim::sweep
