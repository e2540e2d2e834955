#include "thread_registry.h"

#include <execinfo.h>
#include <pthread.h>
#include <signal.h>

#include <vector>

#include "breakpoints.h"
#include "no_destroy.h"
#include "log.h"
#include "real.h"
#include "runtime.h"
#include "sampler.h"
#include "signal_stack.h"

namespace coz {
namespace {

thread_local ThreadState* tls_thread = nullptr;
std::atomic<int> g_live_threads{0};
FutexLock g_list_lock;
NoDestroy<std::vector<ThreadState*>> g_thread_list;  // registered threads (no fixed-size table)
std::vector<ThreadState*>& g_threads = g_thread_list.value;

pthread_key_t g_exit_key;
pthread_once_t g_exit_key_once = PTHREAD_ONCE_INIT;

void on_thread_exit(void*) { unregister_current_thread(); }

void make_exit_key() { pthread_key_create(&g_exit_key, &on_thread_exit); }

/// A program may block every signal in its threads; sampling needs ours.
void unblock_sample_signal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sample_signal);
  real::functions().pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace

ThreadState* current_thread() { return tls_thread; }

// Never inlined: a sample whose walk passes through this function or
// unregister_current_thread is of the runtime's work (is_runtime_work in sampler.cpp).
[[gnu::noinline]] void register_current_thread(uint64_t creator_local) {
  Runtime* rt = runtime();
  if (!rt || tls_thread) return;
  auto* t = new ThreadState;
  t->tid = sys::gettid();
  rt->ledger.start_thread(t->ledger, creator_local);
  pthread_once(&g_exit_key_once, &make_exit_key);
  pthread_setspecific(g_exit_key, t);  // non-null value: the destructor runs at thread exit
  install_signal_stack(*t);  // before its first sample
  unblock_sample_signal();
  tls_thread = t;
  g_live_threads.fetch_add(1, std::memory_order_relaxed);
  if (rt->sampling_enabled) start_sampling(*t, rt->config);
  std::string error;
  if (rt->breakpoints.count > 0 && !open_thread_breakpoints(rt->breakpoints, *t, error)) {
    static std::atomic<bool> warned{false};
    log::warn_once(warned, "{}", error);
  }
  FutexGuard guard(g_list_lock);
  g_threads.push_back(t);
}

FutexLock& thread_list_lock() { return g_list_lock; }
ThreadState* const* thread_list_begin() { return g_threads.data(); }
ThreadState* const* thread_list_end() { return g_threads.data() + g_threads.size(); }

int live_thread_count() { return g_live_threads.load(std::memory_order_acquire); }

void reset_live_threads_after_fork() {
  g_live_threads.store(tls_thread ? 1 : 0, std::memory_order_release);
  new (&g_list_lock) FutexLock();  // another thread may have held it at fork time
  g_threads.clear();              // only the forking thread exists here
  if (tls_thread) g_threads.push_back(tls_thread);
}

[[gnu::noinline]] void unregister_current_thread() {
  ThreadState* t = tls_thread;
  Runtime* rt = runtime();
  if (!t) return;
  // A thread that exits wakes its joiner: pay first, as any waker does.
  if (rt) rt->ledger.catch_up(t->ledger);
  {
    // Leaving the list and handing over the breakpoint counts happen
    // together, so the profiler's sums never lose or double a thread's visits.
    FutexGuard guard(g_list_lock);
    for (size_t i = 0; i < g_threads.size(); ++i) {
      if (g_threads[i] == t) {
        g_threads[i] = g_threads.back();
        g_threads.pop_back();
        break;
      }
    }
    if (rt) close_thread_breakpoints(rt->breakpoints, *t);
  }
  stop_sampling(*t);
  tls_thread = nullptr;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  remove_signal_stack(*t);  // a signal from now on runs its handler on the thread's stack
  delete t;
  g_live_threads.fetch_sub(1, std::memory_order_acq_rel);
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
  if (t && rt) rt->ledger.post_lock_wait(t->ledger, now_ns);
}

void thread_catch_up() {
  ThreadState* t = tls_thread;
  Runtime* rt = runtime();
  if (t && rt) rt->ledger.catch_up(t->ledger);
}

void record_blocked(WaitKind kind, uint64_t ns) {
  constexpr uint64_t min_blocked_ns = 10'000;  // shorter: the wait did not really block
  Runtime* rt = runtime();
  if (!rt || !tls_thread || ns < min_blocked_ns) return;
  // A signal handler's own wait (a read in a handler) that interrupted this
  // very function would deadlock on the table's lock or on backtrace()'s
  // loader lock: its record is dropped.
  static thread_local bool recording = false;
  if (recording) return;
  recording = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // The wait site is a few frames up (this function, the wrapper, maybe a
  // C++ library layer, then the program); unwinding is the cost here.
  void* frames[6];
  int depth = backtrace(frames, 6);  // unwinds through .eh_frame: no frame pointers needed
  SourceLine* site = nullptr;
  for (int i = 1; i < depth && !site; ++i) site = rt->lines.find(reinterpret_cast<uintptr_t>(frames[i]) - 1);
  rt->blocked.add(site, kind, ns);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  recording = false;
}

uint64_t thread_local_delay() {
  ThreadState* t = tls_thread;
  if (t) return t->ledger.local.load(std::memory_order_relaxed);
  Runtime* rt = runtime();
  return rt ? rt->ledger.global() : 0;
}

}  // namespace coz
