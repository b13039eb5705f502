// Writing results so that a failed or killed run never leaves a half-written file: every file
// is written to a temporary sibling and renamed into place; an output folder is assembled in a
// staging folder and swapped in whole.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kappasim {

// Reads a whole file into `out`; false (and `out` untouched) when it cannot be opened.
bool read_text_file(const std::string& path, std::string& out);

// Writes `content` to `path` atomically (temp file in the same folder, fsync, rename).
// Throws InputError naming the path when it cannot be written.
void write_file_atomic(const std::string& path, const std::string& content);
// The same without the fsync (issue 24: a sweep's points made ~9,600 of them in `reproduce`,
// ~6 s of its wall time on a 2-core VM). A killed process still leaves the old file or the new
// one whole (the page cache outlives it); only an OS crash or power loss soon after may leave
// the file empty or cut short. For files whose reader takes such a file as absent or damaged and
// makes it again: a sweep point's records (a damaged result.json runs the point again), the
// markers of a staging folder in use.
void write_file_replace(const std::string& path, const std::string& content);
// Whether write_file_atomic fsyncs, for the rest of this process (on by default). A sweep point
// turns it off (sweeps/runner/point.cpp): everything it writes lies in its point folder, whose
// result.json, written last, is its record of being done; see docs/sweeps.md, "After a crash".
void set_fsync_writes(bool on);

// ---- Output-folder safety (issue 12, item 5 and 6) ------------------------------------------
// Every folder kappasim writes holds this marker file. A folder that exists, is not empty and
// lacks it belongs to the user: kappasim refuses to write into it (or replace it) unless the
// command was given --force.
inline constexpr const char* kOutputMarker = ".kappasim-output";
// Written into a staging folder "<dir>.partial/<pid>" only while it is being filled (removed
// just before it is renamed into place): "host pid". It tells a later run that a leftover
// staging folder is kappasim's and whose process made it.
inline constexpr const char* kStagingMarker = ".kappasim-staging";
// The folder beside <dir> that holds its runs' staging folders ("<dir>.partial": "<pid>" while
// one is filled, "old-<pid>" for the previous <dir> while it is replaced); removed when empty.
// Stale staging is looked for only there, so the cost does not grow with the parent folder.
std::string staging_root(const std::string& dir);

// InputError naming `option` unless `dir` is absent, empty, or holds kOutputMarker (or `force`).
void check_output_dir(const std::string& dir, bool force, const std::string& option = "--out");
// check_output_dir, then creates `dir` (and its parents) and writes the marker into it: for
// folders that a command fills in place and resumes (sweep, reproduce).
void claim_output_dir(const std::string& dir, bool force, const std::string& option = "--out");
// Removes "<pid>" and "old-<pid>" folders in staging_root(dir) left by a killed kappasim: only
// folders holding kStagingMarker (or, for old-, kOutputMarker) written on this host, whose
// process no longer exists; then the root itself when it is empty. Returns how many were
// removed.
int remove_stale_staging(const std::string& dir);

// Collects the files of one output folder in "<dir>.partial/<pid>" and, on commit(), replaces
// <dir> with it. Destroyed without commit (an error, an exception), it removes the staging
// folder and leaves any previous <dir> untouched. A <dir> that is not kappasim's (see
// check_output_dir) is refused before anything is written, unless `force`.
class OutputDir {
 public:
  explicit OutputDir(std::string dir, bool force = false);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  // Writes a file (relative path) into the staging folder.
  void write(const std::string& relative, const std::string& content);
  // Issue 24: writes `files` (relative path, content), known before the run, into the staging
  // folder on a second thread, fsync included, while the caller runs; and the marker with
  // `manifest`, the files the folder will hold once committed (relative, sorted, the markers
  // aside), so that commit() waits for no fsync of theirs. commit() waits for the thread and
  // throws its error; it writes the marker again only when the folder's files differ from
  // `manifest`. Where no thread can start, the files are written here and now. Once per folder.
  using Files = std::vector<std::pair<std::string, std::string>>;
  void write_ahead(Files files, std::vector<std::string> manifest);
  // The same with the files' contents made on that thread too: `make` runs there, before the
  // files are written (issue 24: a run's effective config, built and emitted as YAML, was ≈ 2.7 M
  // instructions at its start). Whatever `make` reads must stay valid and unchanged until commit()
  // or this object's destruction, both of which wait for it; what it throws, commit() throws.
  void write_ahead(std::function<Files()> make, std::vector<std::string> manifest);
  std::string staging_path(const std::string& relative) const;
  // Replaces <dir>. Files the user added to a previous kappasim <dir> (not in the file list its
  // marker holds) are moved into the new folder, not deleted (issue 26.3).
  void commit();
  const std::string& dir() const { return m_dir; }
  // After commit(): the user's files carried over, and those of them renamed NAME.user-kept
  // because the new results hold a file of the same name.
  const std::vector<std::string>& kept_user_files() const { return m_kept_user_files; }
  const std::vector<std::string>& renamed_user_files() const { return m_renamed_user_files; }

 private:
  void write_now(const Files& files, const std::vector<std::string>& manifest);  // write_ahead's
  void finish_ahead();  // waits for write_ahead's thread; throws its error

  std::string m_dir;
  std::string m_staging;
  bool m_committed = false;
  std::thread m_ahead;               // write_ahead's
  std::exception_ptr m_ahead_error;  // what it threw
  std::string m_ahead_marker;        // the marker it wrote ("": none)
  std::vector<std::string> m_kept_user_files;
  std::vector<std::string> m_renamed_user_files;
};

}  // namespace kappasim
