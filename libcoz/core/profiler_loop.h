// The profiler thread's timing and its watch on the program's threads,
// behind a clock and a thread census that tests replace (the runtime's are
// the monotonic clock, the thread registry and /proc/self/stat). The
// experiment sequence itself stays in runtime/profiler.cpp; what it waits
// for and when it decides that the program is gone are here.
#pragma once

#include <cstdint>
#include <optional>

namespace coz {

/// Time as the profiler thread sees it.
class LoopClock {
 public:
  virtual ~LoopClock() = default;
  virtual uint64_t now_ns() = 0;
  virtual void sleep_ns(uint64_t ns) = 0;
};

/// The process's threads as the kernel counts them (/proc/self/stat).
struct ProcessThreads {
  bool main_exited = false;  // the main thread is gone (a zombie until the last thread leaves)
  int others = 0;            // threads alive besides the main thread (the runtime's included)
  int main_status = 0;       // what the main thread left, in waitpid's form
};

/// Parses the text of /proc/self/stat; nullopt when it is not one. Field 3
/// is the state, 20 the number of threads, 52 the exit code (Linux 3.5+),
/// all of the main thread's in the process's own stat file. No allocation.
std::optional<ProcessThreads> parse_process_stat(const char* text);

/// Who is left of the program.
class ThreadCensus {
 public:
  virtual ~ThreadCensus() = default;
  /// Program threads the runtime still counts: a thread leaves this count
  /// through glibc's thread exit, not through a raw SYS_exit.
  virtual int registered_threads() = 0;
  /// The kernel's view; nullopt when it cannot be read.
  virtual std::optional<ProcessThreads> process_threads() = 0;
};

/// Notices that the main thread left without exit() (a raw SYS_exit, or a
/// kill under seccomp strict mode) while no other program thread is left:
/// the process would have ended then, but the thread registry still counts
/// the main thread, and the profiler thread (which blocks every signal)
/// would keep it alive forever, not even ended by SIGTERM. One read of the
/// census per check (/proc/self/stat: ~20 us here), at most every
/// `check_interval_ns`.
class MainExitWatch {
 public:
  static constexpr uint64_t check_interval_ns = 50'000'000;  // how late the process may end
  static constexpr int runtime_threads = 1;                   // the profiler thread

  MainExitWatch(LoopClock& clock, ThreadCensus& census) : clock_(clock), census_(census) {}

  /// True from the first check that found the main thread gone and only the
  /// runtime's threads left, while the registry still counts some thread.
  bool main_left_alone();
  /// What the last check found, without checking again.
  bool found_left_alone() const { return left_alone_; }
  /// Another program thread was still alive after the main thread left: the
  /// process ends when that one does, with its status.
  bool main_outlived() const { return main_outlived_; }
  /// The main thread's status (waitpid's form), once main_left_alone().
  int main_status() const { return main_status_; }

 private:
  LoopClock& clock_;
  ThreadCensus& census_;
  uint64_t next_check_ns_ = 0;
  bool left_alone_ = false;
  bool main_outlived_ = false;
  int main_status_ = 0;
};

/// Waits up to `ns` in steps of at most `step_ns`: before each step,
/// returns false once `stop()` holds and true once `done()` does; each step
/// runs `work()`, then sleeps what is left of the step (the step counts from
/// before the work, so the work takes part of it, not more). True at the
/// deadline.
template <typename Stop, typename Done, typename Work>
bool wait_in_steps(LoopClock& clock, uint64_t ns, uint64_t step_ns, Stop stop, Done done, Work work) {
  const uint64_t deadline = clock.now_ns() + ns;
  for (;;) {
    if (stop()) return false;
    if (done()) return true;
    const uint64_t now = clock.now_ns();
    if (now >= deadline) return true;
    work();
    const uint64_t next = now + step_ns < deadline ? now + step_ns : deadline;
    const uint64_t after = clock.now_ns();
    if (next > after) clock.sleep_ns(next - after);
  }
}

}  // namespace coz
