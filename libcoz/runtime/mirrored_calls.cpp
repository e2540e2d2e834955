#include "mirrored_calls.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <atomic>

#include "futex_lock.h"
#include "reentrancy.h"
#include "sampler.h"
#include "sys.h"

namespace coz {
namespace {

/// One call at a time: asked by a program thread, made by the profiler
/// thread. What capset points to is copied here, so that a caller that
/// gave up waiting leaves nothing dangling.
struct Mailbox {
  FutexLock callers;  // serializes the program's threads
  std::atomic<int> state{0};  // idle, asked, done
  long number = 0;
  long args[5] = {};
  __user_cap_header_struct header{};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
};
constexpr int idle = 0, asked = 1, done = 2;
constexpr uint64_t wait_limit_ns = 1'000'000'000;

Mailbox g_mailbox;

}  // namespace

bool changes_thread_capabilities(long number, long a1, long a2) {
  if (number == SYS_prctl) return a1 == PR_SET_KEEPCAPS || a1 == PR_SET_SECUREBITS;
  if (number != SYS_capset || a1 == 0) return false;
  // On the calling thread only: pid 0, or its own tid.
  const int pid = reinterpret_cast<const __user_cap_header_struct*>(a1)->pid;
  return a2 != 0 && (pid == 0 || pid == sys::gettid());
}

void mirror_on_profiler_thread(long number, long a1, long a2, long a3, long a4, long a5) {
  // A program that drops privileges first thing may do so before the
  // profiler thread it started has run: wait for it to have a tid.
  const uint64_t deadline = sys::monotonic_ns() + wait_limit_ns;
  int profiler = profiler_thread_tid();
  for (; profiler == -1 && sys::monotonic_ns() < deadline; profiler = profiler_thread_tid()) sys::sleep_ns(200'000);
  if (profiler <= 0 || profiler == sys::gettid()) return;
  RuntimeSection section;
  FutexGuard guard(g_mailbox.callers);
  if (number == SYS_capset) {  // the profiler thread's own: pid 0
    g_mailbox.header = *reinterpret_cast<const __user_cap_header_struct*>(a1);
    g_mailbox.header.pid = 0;
    // Version 1 has one data struct; versions 2 and 3 two.
    const int words = g_mailbox.header.version == _LINUX_CAPABILITY_VERSION_1 ? 1 : _LINUX_CAPABILITY_U32S_3;
    for (int i = 0; i < words; ++i) g_mailbox.data[i] = reinterpret_cast<const __user_cap_data_struct*>(a2)[i];
    a1 = reinterpret_cast<long>(&g_mailbox.header);
    a2 = reinterpret_cast<long>(g_mailbox.data);
  }
  g_mailbox.number = number;
  long args[5] = {a1, a2, a3, a4, a5};
  for (int i = 0; i < 5; ++i) g_mailbox.args[i] = args[i];
  g_mailbox.state.store(asked, std::memory_order_release);
  // The profiler thread looks at each wake-up (at most idle_wake_ns apart).
  while (g_mailbox.state.load(std::memory_order_acquire) != done && sys::monotonic_ns() < deadline) {
    sys::sleep_ns(200'000);
  }
  g_mailbox.state.store(idle, std::memory_order_release);  // a late answer is dropped
}

void serve_mirrored_call() {
  if (g_mailbox.state.load(std::memory_order_acquire) != asked) return;
  const long* a = g_mailbox.args;
  sys::raw_syscall6(g_mailbox.number, a[0], a[1], a[2], a[3], a[4]);
  int expected = asked;
  g_mailbox.state.compare_exchange_strong(expected, done, std::memory_order_acq_rel);
}

}  // namespace coz
