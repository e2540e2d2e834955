#include "profiler_loop.h"

#include <cstdlib>
#include <cstring>

namespace coz {

std::optional<ProcessThreads> parse_process_stat(const char* text) {
  // "pid (comm) state ...": comm may hold spaces and parentheses, so the
  // fields are counted from the last ')'.
  const char* p = std::strrchr(text, ')');
  if (!p) return std::nullopt;
  ProcessThreads threads;
  long threads_alive = -1;
  for (int field = 2; *p; ++p) {
    if (*p != ' ') continue;
    ++field;
    if (field == 3) threads.main_exited = p[1] == 'Z' || p[1] == 'X';
    if (field == 20) threads_alive = std::strtol(p + 1, nullptr, 10);
    if (field == 52) threads.main_status = static_cast<int>(std::strtol(p + 1, nullptr, 10));
  }
  if (threads_alive < 1) return std::nullopt;
  threads.others = static_cast<int>(threads_alive) - 1;  // the main thread counts until the process ends
  return threads;
}

bool MainExitWatch::main_left_alone() {
  if (left_alone_) return true;
  const uint64_t now = clock_.now_ns();
  if (now < next_check_ns_) return false;
  next_check_ns_ = now + check_interval_ns;
  std::optional<ProcessThreads> threads = census_.process_threads();
  if (!threads || !threads->main_exited) return false;
  if (threads->others > runtime_threads) {
    main_outlived_ = true;
    return false;
  }
  // Every registered thread left through glibc (main with pthread_exit):
  // the registry's count says so, and glibc ends the process (exit(0), with
  // the program's atexit handlers) when the profiler thread returns.
  if (census_.registered_threads() == 0) return false;
  main_status_ = threads->main_status;
  left_alone_ = true;
  return true;
}

}  // namespace coz
