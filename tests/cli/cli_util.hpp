// Helpers shared by the end-to-end CLI tests (they run the built kappasim binary).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// A summary.json figure: its value, NaN when null, -1 when the key is absent.
inline double summary_value(const std::string& json, const std::string& key) {
  const std::string tag = "\"" + key + "\": ";
  const std::size_t at = json.find(tag);
  if (at == std::string::npos) return -1;
  if (json.compare(at + tag.size(), 4, "null") == 0) return std::nan("");
  return std::stod(json.substr(at + tag.size()));
}

// A test file's scratch folder (fresh once per process), the kappasim binary run with its
// stderr there, and files written into it.
class CliScratch {
 public:
  explicit CliScratch(const std::string& tag) : m_dir(fresh_dir(tag)) {}
  const std::filesystem::path& dir() const { return m_dir; }
  Result run(const std::string& args) const {
    return run_shell(KAPPASIM_BIN, args, m_dir / "stderr.txt");
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path p = m_dir / name;
    std::ofstream(p) << text;
    return p.string();
  }

 private:
  std::filesystem::path m_dir;
};

// The number after "key": in a one-row JSON table (a probe's --format json); NaN when absent.
inline double json_field(const std::string& json, const std::string& key) {
  const std::size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(json.substr(at + key.size() + 4));
}

// Column `col` of every row of a requests.csv (no quoted fields in the numeric columns).
inline std::vector<std::string> csv_column(const std::string& csv, const std::string& col) {
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> head;
  std::istringstream h(line);
  for (std::string c; std::getline(h, c, ',');) head.push_back(c);
  std::size_t k = 0;
  while (k < head.size() && head[k] != col) ++k;
  std::vector<std::string> out;
  while (std::getline(in, line)) {
    std::istringstream r(line);
    std::string c;
    for (std::size_t i = 0; i <= k && std::getline(r, c, ','); ++i) {
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace kappasim::test
