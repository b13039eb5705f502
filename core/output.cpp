#include "core/output.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "core/error.hpp"

namespace kappasim {

bool read_text_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

namespace fs = std::filesystem;

IoError file_error(const std::string& what, int err) {
  const bool bad_path = err == ENOENT || err == ENOTDIR || err == EISDIR || err == ENAMETOOLONG;
  return IoError(what + ": " + std::strerror(err), bad_path ? 2 : 4);
}

namespace {

// A temporary sibling written whole, made durable first when `sync`, then renamed over `path`.
void write_through_temporary(const std::string& path, const std::string& content, bool sync) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw file_error("cannot write '" + path + "'", errno);
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw file_error("cannot write '" + path + "'", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if ((sync && ::fsync(fd) != 0) || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw file_error("cannot write '" + path + "'", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw file_error("cannot write '" + path + "'", err);
  }
}

bool g_fsync_writes = true;  // set_fsync_writes

}  // namespace

void set_fsync_writes(bool on) { g_fsync_writes = on; }

void write_file_atomic(const std::string& path, const std::string& content) {
  write_through_temporary(path, content, g_fsync_writes);
}

void write_file_replace(const std::string& path, const std::string& content) {
  write_through_temporary(path, content, false);
}

namespace {

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// A folder that cannot be created because a file stands on its path is a bad --out (exit 2);
// anything else (permission, a full disk) is the machine's (exit 4).
[[noreturn]] void throw_create_error(const std::string& what, const std::error_code& ec) {
  if (ec == std::errc::not_a_directory || ec == std::errc::file_exists)
    throw InputError(what + ": " + ec.message());
  throw IoError(what + ": " + ec.message());
}

bool process_gone(long pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

// Folders written before the marker existed: a run's config.yaml, a report's report.md, a sweep's
// sweep.yaml, each as kappasim writes it (first line), so rerunning into them keeps working.
static bool written_by_older_kappasim(const std::string& dir) {
  auto starts = [&](const char* file, const std::string& head) {
    std::ifstream in(fs::path(dir) / file, std::ios::binary);
    std::string first(head.size(), '\0');
    return in && in.read(first.data(), static_cast<std::streamsize>(first.size())) && first == head;
  };
  std::error_code ec;
  return starts("config.yaml", "# effective configuration of this run (kappasim") ||
         starts("report.md", "# kappasim") || fs::exists(fs::path(dir) / "sweep.yaml", ec);
}

void check_output_dir(const std::string& dir, bool force, const std::string& option) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec))
    throw InputError(option + ": '" + dir + "' exists and is not a folder");
  if (force || fs::exists(fs::path(dir) / kOutputMarker, ec)) return;
  if (written_by_older_kappasim(dir)) return;
  if (fs::is_empty(dir, ec) && !ec) return;
  throw InputError(option + ": '" + dir + "' is not empty and was not written by kappasim (no " +
                   kOutputMarker +
                   " in it); kappasim would replace or overwrite its files. Use an "
                   "empty or new folder, or --force to write there anyway");
}

void claim_output_dir(const std::string& dir, bool force, const std::string& option) {
  check_output_dir(dir, force, option);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw_create_error(option + ": cannot create '" + dir + "'", ec);
  // Written in place, not through a temporary: sharded runners claim the same folder at once,
  // and one must never see another's temporary file as a user's file. Its existence is the mark.
  const fs::path marker = fs::path(dir) / kOutputMarker;
  if (!fs::exists(marker, ec)) {
    std::ofstream out(marker, std::ios::binary | std::ios::app);
    out << "kappasim output folder\n";
    out.flush();
    if (!out) throw file_error("cannot write '" + marker.string() + "'", errno);
  }
}

std::string staging_root(const std::string& dir) { return dir + ".partial"; }

int remove_stale_staging(const std::string& dir) {
  // Only the output's own staging folder is read (one stat when it is absent, the usual case):
  // the cost never grows with how many entries the output's parent holds (issue 24).
  const fs::path root(staging_root(dir));
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(root, ec))) return 0;
  const std::string host = this_host();
  int removed = 0;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool old = name.compare(0, 4, "old-") == 0;
    const std::string digits = old ? name.substr(4) : name;
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::error_code e;
    if (!it->is_directory(e) || it->is_symlink(e)) continue;
    bool ours = false;
    std::string text;
    if (read_text_file((it->path() / kStagingMarker).string(), text)) {
      ours = text == host + " " + digits + "\n";
    } else if (old) {
      // A folder moved aside by commit() (it held the output marker), not yet removed.
      ours = fs::exists(it->path() / kOutputMarker, e);
    }
    if (ours && process_gone(std::stol(digits))) {
      fs::remove_all(it->path(), e);
      if (!e) ++removed;
    }
  }
  fs::remove(root, ec);  // only when empty: another run's staging may be in it
  return removed;
}

OutputDir::OutputDir(std::string dir, bool force) : m_dir(std::move(dir)) {
  while (m_dir.size() > 1 && m_dir.back() == '/') m_dir.pop_back();
  if (m_dir.empty()) throw InputError("--out: an output folder is required");
  std::error_code ec;
  // The folder is replaced whole on commit, which cannot happen to the current folder or one
  // above it (rename fails with EBUSY: issue 26.14). A bad --out, said before anything runs.
  {
    const fs::path target = fs::weakly_canonical(fs::absolute(m_dir, ec), ec);
    const fs::path cwd = fs::current_path(ec);
    if (!ec && !target.empty()) {
      auto t = target.begin();
      auto c = cwd.begin();
      while (t != target.end() && c != cwd.end() && *t == *c) ++t, ++c;
      if (t == target.end())
        throw InputError("--out: '" + m_dir +
                         "' is the current folder or one above it; kappasim replaces its output "
                         "folder whole, so name a folder inside it (e.g. --out results)");
    }
  }
  check_output_dir(m_dir, force);
  fs::path parent = fs::path(m_dir).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) throw_create_error("--out: cannot create '" + parent.string() + "'", ec);
  }
  remove_stale_staging(m_dir);
  const std::string root = staging_root(m_dir);
  m_staging = root + "/" + std::to_string(::getpid());
  fs::remove_all(m_staging, ec);
  // Another run into the same folder removes the (then empty) staging root when it finishes:
  // created again if it went between the two calls.
  for (int attempt = 0; attempt < 100; ++attempt) {
    ec.clear();
    fs::create_directories(root, ec);
    if (!ec) fs::create_directory(m_staging, ec);
    if (ec != std::errc::no_such_file_or_directory) break;
  }
  if (ec) throw IoError("--out: cannot create '" + m_staging + "': " + ec.message());
  // Not fsynced (issue 24: two of a short run's five fsyncs): the folder is in use only while
  // this process lives; after an OS crash an empty staging marker leaves the folder to the user
  // (remove_stale_staging removes only what it recognises), and commit() writes the output
  // marker again, fsynced, before the folder goes into place.
  write_file_replace((fs::path(m_staging) / kStagingMarker).string(),
                     this_host() + " " + std::to_string(::getpid()) + "\n");
  write_file_replace((fs::path(m_staging) / kOutputMarker).string(), "kappasim output folder\n");
}

OutputDir::~OutputDir() {
  if (m_ahead.joinable()) m_ahead.join();  // before its folder goes
  if (m_committed) return;
  std::error_code ec;
  fs::remove_all(m_staging, ec);
  fs::remove(staging_root(m_dir), ec);  // only when empty
}

std::string OutputDir::staging_path(const std::string& relative) const {
  return (fs::path(m_staging) / relative).string();
}

void OutputDir::write(const std::string& relative, const std::string& content) {
  fs::path p = fs::path(m_staging) / relative;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  if (ec) throw IoError("cannot create '" + p.parent_path().string() + "': " + ec.message());
  write_file_atomic(p.string(), content);
}

namespace {

constexpr const char* kMarkerHead = "kappasim output folder\n";
constexpr const char* kManifestHead =
    "files written by kappasim (a rerun replaces these and keeps any other):\n";

// Every file under `dir` (relative, generic form; symlinks and other non-folders count as files),
// without the markers.
std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    if (it->is_directory(e) && !it->is_symlink(e)) continue;
    const std::string rel = fs::relative(it->path(), dir, e).generic_string();
    if (e || rel == kOutputMarker || rel == kStagingMarker) continue;
    out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The manifest of a folder's marker: the files kappasim wrote there. False for a marker written
// before manifests existed (or by claim_output_dir): every file is then taken to be kappasim's.
bool read_manifest(const fs::path& dir, std::set<std::string>& files) {
  std::string text;
  if (!read_text_file((dir / kOutputMarker).string(), text)) return false;
  const auto at = text.find(kManifestHead);
  if (at == std::string::npos) return false;
  std::istringstream in(text.substr(at + std::string(kManifestHead).size()));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) files.insert(line);
  return true;
}

// The output marker of a folder holding `files` (files_under's order).
std::string marker_text(const std::vector<std::string>& files) {
  std::string marker = std::string(kMarkerHead) + kManifestHead;
  for (const std::string& f : files) marker += f + "\n";
  return marker;
}

}  // namespace

void OutputDir::write_now(const Files& files, const std::vector<std::string>& manifest) {
  for (const auto& [relative, content] : files) write(relative, content);
  const std::string marker = marker_text(manifest);
  write_file_atomic((fs::path(m_staging) / kOutputMarker).string(), marker);
  m_ahead_marker = marker;  // only once it is written
}

void OutputDir::write_ahead(Files files, std::vector<std::string> manifest) {
  write_ahead([files = std::move(files)]() mutable { return std::move(files); },
              std::move(manifest));
}

void OutputDir::write_ahead(std::function<Files()> make, std::vector<std::string> manifest) {
  if (m_ahead.joinable() || !m_ahead_marker.empty() || m_ahead_error)
    throw std::logic_error("OutputDir::write_ahead: called twice ('" + m_dir + "')");
  // Shared with the thread: still the caller's should no thread start.
  const auto work = std::make_shared<std::pair<std::function<Files()>, std::vector<std::string>>>(
      std::move(make), std::move(manifest));
  try {
    m_ahead = std::thread([this, work] {
      try {
        write_now(work->first(), work->second);
      } catch (...) {
        m_ahead_error = std::current_exception();
      }
    });
  } catch (const std::system_error&) {  // no thread to be had: made and written here
    write_now(work->first(), work->second);
  }
}

void OutputDir::finish_ahead() {
  if (m_ahead.joinable()) m_ahead.join();
  if (m_ahead_error) std::rethrow_exception(m_ahead_error);
}

void OutputDir::commit() {
  finish_ahead();
  std::error_code ec;
  const std::string old = staging_root(m_dir) + "/old-" + std::to_string(::getpid());
  const bool had = fs::exists(m_dir, ec);
  // Issue 26.3: the marker lists the files this run wrote; files the user added to a folder
  // kappasim wrote (not in its previous manifest) move into the new folder instead of being
  // deleted with the old one. One whose name kappasim now writes itself is kept as NAME.user-kept.
  const std::vector<std::string> written = files_under(m_staging);  // without the markers
  std::set<std::string> previous;
  if (had && read_manifest(m_dir, previous)) {
    for (const std::string& rel : files_under(m_dir)) {
      if (previous.count(rel)) continue;
      fs::path dest = fs::path(m_staging) / rel;
      if (fs::exists(fs::symlink_status(dest, ec))) {
        dest += ".user-kept";
        m_renamed_user_files.push_back(rel);
      }
      fs::create_directories(dest.parent_path(), ec);
      fs::rename(fs::path(m_dir) / rel, dest, ec);
      if (ec)
        throw IoError("cannot keep your file '" + (fs::path(m_dir) / rel).string() +
                      "' in the new results: " + ec.message() + " (nothing was replaced)");
      m_kept_user_files.push_back(rel);
    }
  }
  const std::string marker = marker_text(written);
  if (marker != m_ahead_marker)  // write_ahead's, unless the files turned out otherwise
    write_file_atomic((fs::path(m_staging) / kOutputMarker).string(), marker);
  if (had) {
    fs::rename(m_dir, old, ec);
    if (ec) throw IoError("cannot replace '" + m_dir + "': " + ec.message());
  }
  fs::rename(m_staging, m_dir, ec);
  if (ec) {
    if (had) fs::rename(old, m_dir, ec);
    throw IoError("cannot move results into '" + m_dir + "': " + ec.message());
  }
  m_committed = true;
  // The staging marker goes only once the folder is in place: a run killed between the renames
  // leaves a staging folder a later run still recognises as kappasim's (issue 26.13).
  fs::remove(fs::path(m_dir) / kStagingMarker, ec);
  if (had) fs::remove_all(old, ec);
  // Issue 26.13: a run killed just before this one started may still have been dying then
  // (SIGKILL waits for an fsync to return), so its staging folder was kept; it is gone now.
  remove_stale_staging(m_dir);
}

}  // namespace kappasim
