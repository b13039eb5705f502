// Helpers shared by the end-to-end CLI tests (they run the built kappasim binary).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

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

// Runs the kappasim binary through the shell with `args` (shell-quoted by the caller); stderr goes
// to `err_file` and is read back.
inline Result run_shell(const std::string& bin, const std::string& args,
                        const std::filesystem::path& err_file) {
  const std::string cmd = bin + " " + args + " 2>" + err_file.string();
  Result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(err_file);
  return r;
}

}  // namespace kappasim::test
