#include "log.h"
#include "sys.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include <string>

namespace coz::log {
namespace {
std::atomic<int> g_verbosity{0};

/// Writes to stderr without raising SIGPIPE in the program: when stderr is a
/// pipe whose reader has gone (`coz run -v ... 2>&1 | head`), a line of ours
/// must not kill the program (exit 141); its own writes decide that. The
/// signal is blocked in this thread for the write, and one that the write
/// raised is taken back before the mask is restored. Raw system calls: the
/// runtime interposes the signal-mask calls.
void write_without_sigpipe(const char* p, size_t left) {
  constexpr long kernel_sigset_size = 8;
  const uint64_t pipe_bit = uint64_t{1} << (SIGPIPE - 1);
  uint64_t old_mask = 0, pending = 0;
  sys::raw_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, reinterpret_cast<long>(&pipe_bit),
                    reinterpret_cast<long>(&old_mask), kernel_sigset_size);
  sys::raw_syscall6(SYS_rt_sigpending, reinterpret_cast<long>(&pending), kernel_sigset_size);
  const bool pending_before = (pending & pipe_bit) != 0;  // someone else's: left alone
  bool broken_pipe = false;
  while (left > 0) {
    ssize_t n = sys::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      broken_pipe = n < 0 && errno == EPIPE;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (broken_pipe && !pending_before) {
    timespec no_wait{0, 0};
    sys::raw_syscall6(SYS_rt_sigtimedwait, reinterpret_cast<long>(&pipe_bit), 0, reinterpret_cast<long>(&no_wait),
                      kernel_sigset_size);
  }
  sys::raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&old_mask), 0, kernel_sigset_size);
}
}  // namespace

void set_verbosity(int verbosity) { g_verbosity.store(verbosity, std::memory_order_relaxed); }

bool enabled(Level level) {
  return static_cast<int>(level) <= 1 + g_verbosity.load(std::memory_order_relaxed);
}

void write_line(Level level, std::string_view message) {
  static constexpr std::string_view prefixes[] = {"coz: error: ", "coz: warning: ", "coz: ", "coz: debug: "};
  std::string line{prefixes[static_cast<int>(level)]};
  line.append(message);
  line.push_back('\n');
  // One write so lines from several threads or processes do not interleave.
  write_without_sigpipe(line.data(), line.size());
}

}  // namespace coz::log
