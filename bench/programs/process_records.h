// What the programs of several processes (proc_*.cpp) share: 8-byte
// records through pipes and sockets, errors that end the process, and
// children reaped.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>

namespace coz_programs {

// _exit, not exit: a forked child must not flush the parent's stdio buffers.
inline void check(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    _exit(1);
  }
}

// One 8-byte record: true, or false at end of file. Retries EINTR (the
// profiler's signals may interrupt a blocked read) and short reads. Two
// readers may share a pipe: a record written whole (under PIPE_BUF) is read
// whole.
inline bool read_record(int fd, uint64_t& value) {
  char* p = reinterpret_cast<char*>(&value);
  size_t got = 0;
  while (got < sizeof value) {
    const ssize_t r = read(fd, p + got, sizeof value - got);
    if (r < 0 && errno == EINTR) continue;
    check(r >= 0, "read");
    if (r == 0) {
      check(got == 0, "read: record cut short");
      return false;
    }
    got += size_t(r);
  }
  return true;
}

inline void write_record(int fd, uint64_t value) {
  ssize_t r;
  do r = write(fd, &value, sizeof value);
  while (r < 0 && errno == EINTR);
  check(r == sizeof value, "write");
}

// Waits for the child `pid`; a child that failed fails the program.
inline void reap(const char* program, pid_t pid, const char* who) {
  int status;
  pid_t r;
  do r = waitpid(pid, &status, 0);
  while (r < 0 && errno == EINTR);
  check(r == pid, "waitpid");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s: the %s process failed (wait status %d)\n", program, who, status);
    _exit(1);
  }
}

}  // namespace coz_programs
