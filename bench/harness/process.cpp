#include "process.h"

#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace coz_bench {
namespace {

int temp_fd() {
  char path[] = "/tmp/coz_bench_output_XXXXXX";
  const int fd = mkstemp(path);
  if (fd >= 0) unlink(path);
  return fd;
}

std::string read_all(int fd) {
  std::string text;
  lseek(fd, 0, SEEK_SET);
  std::array<char, 65536> buffer;
  ssize_t n;
  while ((n = read(fd, buffer.data(), buffer.size())) > 0) text.append(buffer.data(), size_t(n));
  return text;
}

}  // namespace

std::string RunResult::describe() const {
  if (timed_out) return "timeout";
  if (stopped_by_watch) return "stopped";
  if (!exited) return "signal " + std::to_string(status);
  return "exit " + std::to_string(status);
}

RunResult run_process(const std::vector<std::string>& argv, const RunOptions& options) {
  RunResult result;
  // Output goes to unlinked temporary files (no pipes to drain while timing).
  const int err_fd = temp_fd();
  const int out_fd = options.capture_stdout ? temp_fd() : open("/dev/null", O_RDWR);
  if (err_fd < 0 || out_fd < 0) {
    result.stderr_text = "cannot create a temporary file";
    return result;
  }

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    // A session of its own: one process group, so a timeout kills the
    // profiler's children too, and its own scheduler autogroup. With
    // CONFIG_SCHED_AUTOGROUP (Debian's default) nice only weighs threads
    // within one autogroup, so the group itself gets the niceness as well.
    setsid();
    if (options.nice != 0) {
      const int fd = open("/proc/self/autogroup", O_WRONLY);
      if (fd >= 0) {
        const std::string value = std::to_string(options.nice);
        if (write(fd, value.data(), value.size()) < 0) {
          // kernels without autogroups: nice alone still helps
        }
        close(fd);
      }
      setpriority(PRIO_PROCESS, 0, options.nice);
    }
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(126);
    const int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    for (const std::string& e : options.env) putenv(const_cast<char*>(e.c_str()));
    execvp(args[0], args.data());
    dprintf(2, "exec %s failed\n", args[0]);
    _exit(127);
  }
  if (pid < 0) {
    close(err_fd);
    close(out_fd);
    result.stderr_text = "fork failed";
    return result;
  }

  // Block (no polling: the harness must not steal CPU from what it measures)
  // until the child exits or the timeout passes; a pidfd makes both one poll.
  // A watched run wakes every watch_interval_s to call the watcher.
  int status = 0;
  const int pid_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pid_fd >= 0) {
    const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    pollfd pfd{pid_fd, POLLIN, 0};
    for (;;) {
      const double left = options.timeout_s - elapsed();
      if (left <= 0) {
        result.timed_out = true;
        break;
      }
      const double wait_s = options.watch ? std::min(left, options.watch_interval_s) : left;
      const int ready = poll(&pfd, 1, static_cast<int>(wait_s * 1000) + 1);
      if (ready < 0 && errno != EINTR) break;
      if (ready > 0) break;
      if (options.watch && options.watch(elapsed())) {
        result.stopped_by_watch = true;
        break;
      }
    }
    if (result.timed_out || result.stopped_by_watch) kill(-pid, SIGKILL);
    close(pid_fd);
  }
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) {
    result.exited = !result.timed_out;
    result.status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.status = WTERMSIG(status);
  }

  result.stderr_text = read_all(err_fd);
  if (options.capture_stdout) result.stdout_text = read_all(out_fd);
  close(err_fd);
  close(out_fd);
  return result;
}

double find_number(const std::string& text, const std::string& key) {
  const std::string needle = key + "=";
  const size_t pos = text.rfind(needle);
  if (pos == std::string::npos) return -1.0;
  return std::strtod(text.c_str() + pos + needle.size(), nullptr);
}

std::string shell_output(const std::string& command) {
  std::string out;
  FILE* f = popen(command.c_str(), "r");
  if (!f) return out;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), f)) > 0) out.append(buffer.data(), n);
  pclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace coz_bench
