#include "core/output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError("cannot write '" + path + "': " + std::strerror(errno));
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw InputError("cannot write '" + path + "': " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw InputError("cannot write '" + path + "': " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw InputError("cannot write '" + path + "': " + std::strerror(err));
  }
}

OutputDir::OutputDir(std::string dir) : m_dir(std::move(dir)) {
  while (m_dir.size() > 1 && m_dir.back() == '/') m_dir.pop_back();
  if (m_dir.empty()) throw InputError("--out: an output folder is required");
  std::error_code ec;
  if (fs::exists(m_dir, ec) && !fs::is_directory(m_dir, ec))
    throw InputError("--out: '" + m_dir + "' exists and is not a folder");
  fs::path parent = fs::path(m_dir).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) throw InputError("--out: cannot create '" + parent.string() + "': " + ec.message());
  }
  m_staging = m_dir + ".partial-" + std::to_string(::getpid());
  fs::remove_all(m_staging, ec);
  fs::create_directory(m_staging, ec);
  if (ec) throw InputError("--out: cannot create '" + m_staging + "': " + ec.message());
}

OutputDir::~OutputDir() {
  if (m_committed) return;
  std::error_code ec;
  fs::remove_all(m_staging, ec);
}

std::string OutputDir::staging_path(const std::string& relative) const {
  return (fs::path(m_staging) / relative).string();
}

void OutputDir::write(const std::string& relative, const std::string& content) {
  fs::path p = fs::path(m_staging) / relative;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  if (ec) throw InputError("cannot create '" + p.parent_path().string() + "': " + ec.message());
  write_file_atomic(p.string(), content);
}

void OutputDir::commit() {
  std::error_code ec;
  const std::string old = m_dir + ".old-" + std::to_string(::getpid());
  const bool had = fs::exists(m_dir, ec);
  if (had) {
    fs::rename(m_dir, old, ec);
    if (ec) throw InputError("cannot replace '" + m_dir + "': " + ec.message());
  }
  fs::rename(m_staging, m_dir, ec);
  if (ec) {
    if (had) fs::rename(old, m_dir, ec);
    throw InputError("cannot move results into '" + m_dir + "': " + ec.message());
  }
  m_committed = true;
  if (had) fs::remove_all(old, ec);
}

}  // namespace kappasim
