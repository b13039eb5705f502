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

// At most `max` bytes of `text` for quoting in an error message (issue 12, item 9): control
// characters (newlines, NULs) become '?', a cut UTF-8 sequence is not left half, and "..." marks
// a cut. An error line never echoes a whole file.
inline std::string excerpt(const std::string& text, std::size_t max = 60) {
  std::size_t n = text.size() <= max ? text.size() : max;
  while (n > 0 && n < text.size() && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  std::string out = text.substr(0, n);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  return n < text.size() ? out + "..." : out;
}

// A file could not be read or written for a reason of the machine, not of the input (disk
// full, permission, I/O error): exit code 4, with the operating system's strerror text.
class IoError : public std::runtime_error {
 public:
  explicit IoError(const std::string& msg, int exit_code = 4)
      : std::runtime_error(msg), m_exit_code(exit_code) {}
  // 4, or 2 when the path itself was bad (see file_error).
  int exit_code() const { return m_exit_code; }

 private:
  int m_exit_code;
};

// The error for a failed read or write of `what` with errno `err` (`throw file_error(...)`): a
// path that does not lead to a folder (ENOENT, ENOTDIR, EISDIR, ENAMETOOLONG) is bad input (exit
// 2); anything else (a full disk, EFBIG, permissions, EIO) is the machine's (exit 4). The message
// ends in strerror. (Returned, not thrown inside: a throw from a [[noreturn]] helper called
// after a SystemC simulation trips ASan's stack-use-after-scope check on the stale coroutine
// stack poisoning.)
IoError file_error(const std::string& what, int err);

// The exception being handled, as kappasim's main reports it: "kappasim: error: ..." on stderr
// and 2 for an InputError, the IoError's own code, "kappasim: internal error: ..." and 1 for
// another std::exception (anything else is rethrown). Call it inside a catch block: main, and
// the forked children that run a command's part (a sweep point, reproduce's pool), report alike.
int report_current_exception();

}  // namespace kappasim
