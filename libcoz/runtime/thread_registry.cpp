#include "thread_registry.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>

#include <vector>

#include "breakpoints.h"
#include "core_use.h"
#include "descriptors.h"
#include "go_wait.h"
#include "no_destroy.h"
#include "log.h"
#include "real.h"
#include "runtime.h"
#include "reentrancy.h"
#include "sampler.h"
#include "unwinder.h"
#include "signal_stack.h"

namespace coz {
namespace {

using detail::tls_thread;
std::atomic<int> g_live_threads{0};
FutexLock g_list_lock;
NoDestroy<std::vector<ThreadState*>> g_thread_list;  // registered threads (no fixed-size table)
std::vector<ThreadState*>& g_threads = g_thread_list.value;
// Threads registered since a reader last took them into g_threads: a stack
// linked through ThreadState::next_arrival, pushed without a lock.
std::atomic<ThreadState*> g_arrivals{nullptr};

// /proc/self/stat (open_process_stat); set where no other thread runs,
// read by the profiler thread, which is started after.
int g_process_stat = -1;

pthread_key_t g_exit_key;
pthread_once_t g_exit_key_once = PTHREAD_ONCE_INIT;

void on_thread_exit(void*) { unregister_current_thread(); }

void make_exit_key() { pthread_key_create(&g_exit_key, &on_thread_exit); }

/// The runtime's sample signals (sample_signal.h).
sigset_t sample_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sample_signal);
  if (sample_signal_installed(trap_signal)) sigaddset(&set, trap_signal);
  return set;
}

/// A program may block every signal in its threads; sampling needs ours.
void unblock_sample_signals() {
  sigset_t set = sample_signal_set();
  real::functions().pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void record_stack_bounds(ThreadState& t) {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* base = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &base, &size) == 0) {
    t.stack_low = reinterpret_cast<uintptr_t>(base);
    t.stack_high = t.stack_low + size;
  }
  pthread_attr_destroy(&attr);
}

void push_arrival(ThreadState* t) {
  ThreadState* head = g_arrivals.load(std::memory_order_relaxed);
  do {
    t->next_arrival = head;
  } while (!g_arrivals.compare_exchange_weak(head, t, std::memory_order_release, std::memory_order_relaxed));
}

/// Moves the arrivals into the list; under g_list_lock.
void take_arrivals() {
  for (ThreadState* t = g_arrivals.exchange(nullptr, std::memory_order_acquire); t != nullptr; t = t->next_arrival) {
    g_threads.push_back(t);
  }
}

/// Takes `t` out of the list, where it may have arrived since the last
/// reader; under g_list_lock.
void leave_list(ThreadState* t) {
  take_arrivals();
  auto it = std::find(g_threads.begin(), g_threads.end(), t);
  if (it == g_threads.end()) return;
  *it = g_threads.back();
  g_threads.pop_back();
}

}  // namespace

LockedThreadList::LockedThreadList() {
  g_list_lock.lock();
  take_arrivals();
  begin_ = g_threads.data();
  end_ = begin_ + g_threads.size();
}

LockedThreadList::~LockedThreadList() { g_list_lock.unlock(); }

// Never inlined: a sample whose walk passes through this function or
// unregister_current_thread is of the runtime's work (is_runtime_work in sampler.cpp).
[[gnu::noinline]] void register_current_thread(uint64_t creator_local) {
  Runtime* rt = runtime();
  if (!rt || tls_thread) return;
  RuntimeSection section;
  auto* t = new ThreadState;
  t->tid = sys::gettid();
  t->wait_draws ^= static_cast<uint64_t>(t->tid) * 0xff51afd7ed558ccdu;  // threads draw apart
  if (t->wait_draws == 0) t->wait_draws = 1;
  record_stack_bounds(*t);
  rt->ledger.start_thread(t->ledger, creator_local);
  pthread_once(&g_exit_key_once, &make_exit_key);
  pthread_setspecific(g_exit_key, t);  // non-null value: the destructor runs at thread exit
  install_signal_stack(*t);  // before its first sample
  // In a Go program, a stack for its futex calls (go_wait.h), whose entry
  // reads it at the ThreadState's own address: not given if it were elsewhere.
  if (static_cast<GoCallStack*>(t) == reinterpret_cast<GoCallStack*>(t)) give_go_call_stack(*t);
  unblock_sample_signals();
  tls_thread = t;
  g_live_threads.fetch_add(1, std::memory_order_relaxed);
  if (rt->sampling_enabled) start_sampling(*t, rt->config);
  std::string error;
  if (rt->breakpoints.count > 0 && !open_thread_breakpoints(rt->breakpoints, *t, error)) {
    static std::atomic<bool> warned{false};
    log::warn_once(warned, "{}", error);
  }
  open_core_use_file(*t);
  push_arrival(t);  // no lock: see thread_list_lock()
}

FutexLock& thread_list_lock() { return g_list_lock; }

int live_thread_count() { return g_live_threads.load(std::memory_order_acquire); }

void reset_live_threads_after_fork() {
  g_live_threads.store(tls_thread ? 1 : 0, std::memory_order_release);
  FutexGuard guard(g_list_lock);
  take_arrivals();
  // The threads' schedstat files name the parent's threads.
  for (ThreadState* t : g_threads) close_core_use_file(*t);
  g_threads.clear();  // only the forking thread exists here
  if (tls_thread) g_threads.push_back(tls_thread);
}

[[gnu::noinline]] void unregister_current_thread() {
  ThreadState* t = tls_thread;
  Runtime* rt = runtime();
  if (!t) return;
  RuntimeSection section;
  // A thread that exits wakes its joiner: pay first, as any waker does.
  if (rt) rt->ledger.catch_up(t->ledger);
  {
    // Leaving the list and handing over the breakpoint counts happen
    // together, so the profiler's sums never lose or double a thread's visits.
    SignalsDeferred deferred;  // under the lock the exit's last records take
    FutexGuard guard(g_list_lock);
    leave_list(t);
    if (rt) close_thread_breakpoints(rt->breakpoints, *t);
  }
  close_core_use_file(*t);  // no reader can see it now
  stop_sampling(*t);
  tls_thread = nullptr;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  remove_signal_stack(*t);  // a signal from now on runs its handler on the thread's stack
  take_go_call_stack(*t);
  delete t;
  g_live_threads.fetch_sub(1, std::memory_order_acq_rel);
}

void move_current_thread_to_timer_if_wanted() {
  ThreadState* t = tls_thread;
  if (!t || !t->timer_wanted.load(std::memory_order_relaxed)) return;
  // The child of a vfork() runs on its parent's thread state: the move is
  // the parent thread's to make (a timer for its tid cannot be made here).
  if (sys::gettid() != t->tid) return;
  SignalsDeferred deferred;
  FutexGuard guard(g_list_lock);
  move_to_timer(*t);
}

void thread_pre_block() {
  ThreadState* t = tls_thread;
  Runtime* rt = runtime();
  if (t && rt) rt->ledger.pre_block(t->ledger);
}

void thread_post_block(bool skip) {
  ThreadState* t = tls_thread;
  Runtime* rt = runtime();
  if (t && rt) rt->ledger.post_block(t->ledger, skip);
}

void thread_pre_lock_wait(uint64_t now_ns) {
  ThreadState* t = tls_thread;
  Runtime* rt = runtime();
  if (t && rt) rt->ledger.pre_lock_wait(t->ledger, now_ns);
}

void thread_post_lock_wait(uint64_t now_ns) {
  ThreadState* t = tls_thread;
  Runtime* rt = runtime();
  if (!t || !rt) return;
  rt->ledger.post_lock_wait(t->ledger, now_ns);
  t->lock_waits.store(t->lock_waits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void thread_count_program_wait(uint64_t ns) {
  ThreadState* t = tls_thread;
  if (t && t->sorting_waits.load(std::memory_order_relaxed)) count_wait_origin(*t, false, ns);
}

namespace {

uint64_t next_draw(uint64_t& state) {  // xorshift64
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

}  // namespace

void record_blocked(WaitKind kind, uint64_t ns, const void* caller) {
  constexpr uint64_t min_blocked_ns = 10'000;  // shorter: the wait did not really block
  Runtime* rt = runtime();
  ThreadState* t = tls_thread;
  if (!rt || !t || ns < min_blocked_ns) return;
  // The program called the wait itself (or through an inlined layer, such
  // as std::mutex::lock): the wrapper's return address is the site. A
  // lookup, no walk: after a mutex wait this runs with the lock held, and a
  // walk there (~1 us, cold after the context switch) tripled the critical
  // section of a 64-thread program (+16% run time, sampling alone).
  if (caller) {
    if (SourceLine* site = rt->lines.find(reinterpret_cast<uintptr_t>(caller) - 1)) {
      rt->blocked.add(site, kind, ns);
      return;
    }
  }
  // Called through a library (libstdc++'s condition_variable::wait, glib):
  // the site is a few frames further up, found by walking. Walks are
  // sampled by blocked time, as CPU time is: a wait is walked with
  // probability ns / period (always when longer) and stands for 1/p such
  // waits, so each site's time and count are right on average, at a cost of
  // at most one walk per sample period of blocked time.
  if (t->stack_high == 0) return;
  const uint64_t period = rt->config.sample_period_ns;
  uint64_t weighted_ns = ns, count = 1;
  if (ns < period) {
    if (next_draw(t->wait_draws) % period >= ns) return;
    weighted_ns = period;
    count = period / ns + (next_draw(t->wait_draws) % ns < period % ns ? 1 : 0);  // 1/p, rounded at random
  }
  // The walk is the sampling path's (no allocation, no lock), not
  // backtrace(), which may allocate or lock in libgcc, where a program's
  // allocator wrapped in a pthread mutex would wait for the very mutex this
  // thread holds.
  constexpr size_t max_frames = 8;
  UnwindFrame frames[max_frames];
  UnwindStop stop;
  const UnwindRegisters regs = current_registers();
  const StackMemory stack = StackMemory::live(regs.sp, t->stack_high);
  const size_t depth = unwind(rt->frames.tables(), regs, stack, frames, max_frames, stop);
  SourceLine* site = nullptr;
  for (size_t i = 1; i < depth && !site; ++i) site = rt->lines.find(frames[i].pc);
  rt->blocked.add(site, kind, weighted_ns, count);
}

void open_process_stat() {
  // In a table of the runtime's own, the profiler thread opens it there; a
  // number from the parent's own table means nothing in a forked child.
  if (!descriptors::usable_here()) {
    g_process_stat = -1;
    return;
  }
  if (g_process_stat >= 0) descriptors::close_own(g_process_stat);
  long fd = sys::raw_syscall6(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/self/stat"), O_RDONLY | O_CLOEXEC);
  g_process_stat = fd >= 0 ? descriptors::adopt(static_cast<int>(fd)) : -1;
}

std::optional<ProcessThreads> read_process_threads() {
  char buf[1024];
  if (g_process_stat < 0) return std::nullopt;
  // From offset 0, a /proc file is generated anew.
  long n = sys::raw_syscall6(SYS_pread64, g_process_stat, reinterpret_cast<long>(buf), sizeof buf - 1, 0);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  return parse_process_stat(buf);
}

void seal_current_thread() {
  if (in_runtime()) return;  // the runtime's own thread, or one sealed already
  ThreadState* t = tls_thread;
  Runtime* rt = runtime();
  if (t && rt) {
    RuntimeSection section;
    rt->ledger.pre_block(t->ledger);  // from now on as if blocked: it owes nothing, and never pays
    {
      SignalsDeferred deferred;
      FutexGuard guard(g_list_lock);
      leave_list(t);
      close_thread_breakpoints(rt->breakpoints, *t);
    }
    stop_sampling(*t);
    // A sample signal already on its way would run the handler, whose
    // system calls strict mode punishes with SIGKILL: it stays pending.
    sigset_t sample = sample_signal_set();
    sys::raw_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, reinterpret_cast<long>(&sample), 0, 8);
  }
  RuntimeSection::enter_for_good();  // its calls pass straight through the wrappers from now on
  detail::tls_sealed = true;         // and the runtime makes none of its own on it (reentrancy.h)
}

uint64_t thread_local_delay() {
  ThreadState* t = tls_thread;
  if (t) return t->ledger.local.load(std::memory_order_relaxed);
  Runtime* rt = runtime();
  return rt ? rt->ledger.global() : 0;
}

}  // namespace coz
