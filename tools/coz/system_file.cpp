#include "system_file.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "system_shared.h"

namespace coz::cli {

std::string system_run_profile(const std::string& path, std::string& error) {
  coz::SystemShared* shared = coz::map_system_shared(path.c_str(), error);
  if (!shared) return "";
  std::string output(shared->output_path, strnlen(shared->output_path, sizeof shared->output_path));
  coz::unmap_system_shared(shared);
  if (output.empty()) error = fmt::format("{} names no profile", path);
  return output;
}

std::string start_system_run(const std::string& name, const std::string& output_path, std::string& error) {
  std::string path = coz::create_system_shared(name, output_path, error);
  if (path.empty()) return "";
  const pid_t program = getpid();
  // Close-on-exec, so the program never has it; the remover inherits it.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, program, 0));
  if (pidfd < 0) {
    error = fmt::format("cannot watch the program for the end of the run: {}", std::strerror(errno));
    unlink(path.c_str());
    return "";
  }
  pid_t middle = fork();
  if (middle < 0) {
    error = fmt::format("cannot start the process that removes {}: {}", path, std::strerror(errno));
    unlink(path.c_str());
    close(pidfd);
    return "";
  }
  if (middle == 0) {
    // The middle process exits at once: the remover is nobody's child, and
    // holds none of the program's descriptors (its pipes must see their end).
    if (fork() != 0) _exit(0);
    for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGPIPE, SIGTTOU}) signal(sig, SIG_IGN);
    const auto kept = static_cast<unsigned>(pidfd);
    if (kept > 0) syscall(SYS_close_range, 0u, kept - 1, 0u);
    syscall(SYS_close_range, kept + 1, ~0u, 0u);
    pollfd p{pidfd, POLLIN, 0};
    while (poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    unlink(path.c_str());
    _exit(0);
  }
  close(pidfd);
  int status = 0;
  while (waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  return path;
}

}  // namespace coz::cli
