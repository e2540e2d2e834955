// forker: processes made while the profiler runs.
//
//   --work                 only work (two threads, --ms), then exit: what exec'd/spawned children run
//   --children N           fork N children without exec; each works --ms with its own threads
//   --exec-self            fork, and the child execs this program with --work
//   --spawn-self           posix_spawn this program with --work
//   --spawn PATH           posix_spawn PATH (no arguments) and wait for it
//   --system               system() a shell that echoes, posix_spawn /bin/true
//   --ms MS                work per process (default 600)
//   --write-ms MS          forked children first spend MS writing 1 MiB blocks to an
//                          unlinked temporary file: time in system calls
//   --exit-status N        the parent's exit status
//
// The parent works too, prints "forker parent done children=N failed=K" and
// exits with --exit-status; forked children print "forker child pid=P".
#include <coz.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include <cerrno>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "robust_common.h"

extern char** environ;

namespace {

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t fork_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:fork_work
  return x;
}

/// Two threads of 0.25 ms work units with a progress point, for `ms` of wall time.
void work_for(uint64_t ms) {
  const double end = robust::now_ms() + static_cast<double>(ms);
  auto loop = [end] {
    uint64_t x = g_seed;
    while (robust::now_ms() < end) {
      x = fork_work(x, robust::kStepsPerMs / 4);
      COZ_PROGRESS_NAMED("unit");
    }
    g_seed = x;
  };
  std::thread helper(loop);
  loop();
  helper.join();
}

/// `ms` of wall time writing 1 MiB blocks: nearly all of it in the kernel.
void write_for(uint64_t ms) {
  char path[] = "/tmp/forker-write-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return;
  unlink(path);
  static char block[1 << 20];
  const double end = robust::now_ms() + static_cast<double>(ms);
  while (robust::now_ms() < end) {
    if (pwrite(fd, block, sizeof block, 0) < 0) break;  // @line:fork_write
  }
  close(fd);
}

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

pid_t spawn(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
  return pid;
}

std::string self_exe() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  const robust::Options options(
      argc, argv,
      {"--work", "--children=", "--exec-self", "--spawn-self", "--spawn=", "--system", "--ms=", "--write-ms=", "--exit-status="});
  const uint64_t ms = options.number("--ms", 600);
  if (options.has("--work")) {
    work_for(ms);
    return 0;
  }

  std::vector<pid_t> children;
  int failed = 0;
  const std::string ms_text = std::to_string(ms);
  if (options.has("--children")) {
    const uint64_t n = options.number("--children", 1);
    for (uint64_t i = 0; i < n; ++i) {
      std::fflush(nullptr);
      const pid_t pid = fork();
      if (pid == 0) {
        robust::say("forker child pid=" + std::to_string(getpid()) + "\n");
        write_for(options.number("--write-ms", 0));
        work_for(ms);
        std::exit(0);  // a normal exit: atexit handlers and destructors run, as in any child
      }
      if (pid < 0) ++failed;
      else children.push_back(pid);
    }
  }
  if (options.has("--exec-self")) {
    std::fflush(nullptr);
    const std::string self = self_exe();
    const pid_t pid = fork();
    if (pid == 0) {
      execl(self.c_str(), self.c_str(), "--work", "--ms", ms_text.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    children.push_back(pid);
  }
  if (options.has("--spawn-self")) children.push_back(spawn({self_exe(), "--work", "--ms", ms_text}));
  if (options.has("--spawn")) children.push_back(spawn({options.text("--spawn")}));
  if (options.has("--system")) {
    std::fflush(nullptr);
    if (std::system("echo hello-from-shell") != 0) ++failed;
    if (std::system("exec /bin/true") != 0) ++failed;
    children.push_back(spawn({"/bin/true"}));
  }

  work_for(ms);
  for (const pid_t pid : children) {
    if (pid < 0 || wait_for(pid) != 0) ++failed;
  }
  robust::say("forker parent done children=" + std::to_string(children.size()) + " failed=" + std::to_string(failed) +
              "\n");
  return static_cast<int>(options.number("--exit-status", 0));
}
