// Runs a test's body in a forked child, for tests of what a process does to itself or shares
// with processes forked from it (core/shared_memo, core/heap_drain).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

namespace kappasim {
namespace test_util {

// Runs `body` (returning an int: 0 when it passed) in a forked child; its exit code, or 100
// when it did not exit normally.
template <class F>
int in_child(F body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

}  // namespace test_util
}  // namespace kappasim
