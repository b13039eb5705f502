// Writing results so that a failed or killed run never leaves a half-written file: every file
// is written to a temporary sibling and renamed into place; an output folder is assembled in a
// staging folder and swapped in whole.
#pragma once

#include <string>

namespace kappasim {

// Reads a whole file into `out`; false (and `out` untouched) when it cannot be opened.
bool read_text_file(const std::string& path, std::string& out);

// Writes `content` to `path` atomically (temp file in the same folder, fsync, rename).
// Throws InputError naming the path when it cannot be written.
void write_file_atomic(const std::string& path, const std::string& content);

// Collects the files of one output folder in "<dir>.partial-<pid>" and, on commit(), replaces
// <dir> with it. Destroyed without commit (an error, an exception), it removes the staging
// folder and leaves any previous <dir> untouched.
class OutputDir {
 public:
  explicit OutputDir(std::string dir);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  // Writes a file (relative path) into the staging folder.
  void write(const std::string& relative, const std::string& content);
  std::string staging_path(const std::string& relative) const;
  void commit();
  const std::string& dir() const { return m_dir; }

 private:
  std::string m_dir;
  std::string m_staging;
  bool m_committed = false;
};

}  // namespace kappasim
