#include "log.h"
#include "sys.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include <set>
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
// Where messages go instead of stderr (send_to_side_file); set once, from
// the runtime's constructor (which may run before this library's dynamic
// initializers), before any other thread exists. Never freed: the runtime's
// last messages come from its destructor, after the statics' (which would
// have sent them back to the stderr they must stay out of).
const std::string* g_side_file = nullptr;
int g_side_file_reader = 0;  // the run's first process, which shows and removes the file

/// Appends `line` to the side file in one write (O_APPEND: the lines of
/// several processes do not interleave), creating it while the process that
/// shows it lives. Opened for each message and closed again: messages are
/// few, and a descriptor kept open would be one more of the runtime's in the
/// program's table.
void append_to_side_file(const std::string& line) {
  const long path = reinterpret_cast<long>(g_side_file->c_str());
  long fd = sys::raw_syscall6(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd == -ENOENT) {
    // (kill(0, 0) would ask about the process group: no reader known, create.)
    const long alive = g_side_file_reader > 0 ? sys::raw_syscall6(SYS_kill, g_side_file_reader, 0) : 0;
    if (alive != 0 && alive != -EPERM) return;  // the run's first process has exited: nobody would show it
    fd = sys::raw_syscall6(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  }
  if (fd < 0) return;
  sys::raw_syscall6(SYS_write, fd, reinterpret_cast<long>(line.data()), static_cast<long>(line.size()));
  sys::raw_syscall6(SYS_close, fd);
}
}  // namespace

std::string file_identity(int fd) {
  struct stat st{};
  if (sys::raw_syscall6(SYS_fstat, fd, reinterpret_cast<long>(&st)) != 0) return {};
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

void send_to_side_file(std::string path, int run_pid) {
  g_side_file_reader = run_pid;
  g_side_file = new std::string(std::move(path));
}

void relay_side_file(const std::string& path) {
  const long fd = sys::raw_syscall6(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path.c_str()), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::string text;
  char buf[4096];
  for (long n; (n = sys::raw_syscall6(SYS_read, fd, reinterpret_cast<long>(buf), sizeof buf)) > 0;) {
    text.append(buf, static_cast<size_t>(n));
  }
  sys::raw_syscall6(SYS_close, fd);
  sys::raw_syscall6(SYS_unlink, reinterpret_cast<long>(path.c_str()));
  std::set<std::string_view> seen;
  std::string out;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (!line.empty() && seen.insert(line).second) out.append(line).push_back('\n');
    start = end + 1;
  }
  if (!out.empty()) write_without_sigpipe(out.data(), out.size());
}

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
  if (g_side_file != nullptr) return append_to_side_file(line);
  write_without_sigpipe(line.data(), line.size());
}

}  // namespace coz::log
