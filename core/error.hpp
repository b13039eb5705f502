// Errors that reach the user. Every error names where the bad input is (file:line:column, the
// config key, the CLI option) and what was expected; the CLI turns them into exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace kappasim {

// A position in an input: a YAML file, a command-line --set, a trace line.
struct SourceLoc {
  std::string file;  // file path, or a description such as "--set a.b=c"
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based; 0 when unknown
  std::string str() const {
    std::string s = file.empty() ? std::string("<input>") : file;
    if (line > 0) s += ":" + std::to_string(line);
    if (line > 0 && column > 0) s += ":" + std::to_string(column);
    return s;
  }
};

// Bad user input (config, preset, trace, command line): exit code 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& msg) : std::runtime_error(msg) {}
  InputError(const SourceLoc& loc, const std::string& msg)
      : std::runtime_error(loc.str() + ": " + msg) {}
};

}  // namespace kappasim
