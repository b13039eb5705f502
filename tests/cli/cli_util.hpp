// Helpers shared by the end-to-end CLI tests (they run the built kappasim binary).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kappasim::test {

// What a kappasim run gave: exit code (-1 if it did not exit normally), stdout, stderr.
struct Result {
  int code = -1;
  std::string out, err;
};

// The whole file, or "" when it cannot be read.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh, empty folder <tmp>/kappasim-<tag>-<pid> for one test process.
inline std::filesystem::path fresh_dir(const std::string& tag) {
  namespace fs = std::filesystem;
  fs::path p = fs::temp_directory_path() / ("kappasim-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

}  // namespace kappasim::test
