// The interposed calls of threads and their synchronisation (pthread, C11
// threads, futexes, sleeps, signals); interpose_io.cpp holds the waits and
// wakes through descriptors. Each wrapper has one of three shapes (wait.h):
// catch up before waking someone; pre-block / call / post-block around a
// wait (skipping the delays that accrued while blocked only when another
// thread ended the wait); or pass-through with a small adjustment. See
// delay.h for why.
#include <errno.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <linux/io_uring.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>

#include "descriptors.h"
#include "mirrored_calls.h"
#include "real.h"
#include "runtime.h"
#include "sampler.h"
#include "seccomp_filter.h"
#include "signal_stack.h"
#include "thread_registry.h"
#include "channels.h"
#include "exit_signals.h"
#include "reentrancy.h"
#include "wait.h"

using coz::catch_up;
using coz::KernelWait;
using coz::Wait;
using coz::WakeKind;
using coz::wake_through_kernel;
using coz::real::functions;

namespace {

/// Whether another thread holds the mutex now (glibc's lock word: 0 when
/// free, for every mutex kind). Only a hint: it may change at once.
bool held_by_someone(const pthread_mutex_t* mutex) {
  return __atomic_load_n(&mutex->__data.__lock, __ATOMIC_RELAXED) != 0;
}

struct ThreadStart {
  void* (*fn)(void*);
  void* arg;
  uint64_t creator_local;
};

void* thread_trampoline(void* p) {
  ThreadStart start = *static_cast<ThreadStart*>(p);
  std::free(p);
  coz::register_current_thread(start.creator_local);
  return start.fn(start.arg);  // unregistered by a key destructor, also on pthread_exit
}

struct C11Start {
  thrd_start_t fn;
  void* arg;
};

void* c11_trampoline(void* p) {
  C11Start start = *static_cast<C11Start*>(p);
  std::free(p);
  return reinterpret_cast<void*>(static_cast<intptr_t>(start.fn(start.arg)));
}

/// Keeps the sample signals deliverable whatever mask the program sets.
const sigset_t* without_sample_signals(int how, const sigset_t* set, sigset_t& copy) {
  if (!set || how == SIG_UNBLOCK) return set;
  bool copied = false;
  for (int sig : coz::sample_signals) {
    if (!sigismember(set, sig) || !coz::sample_signal_installed(sig)) continue;
    if (!copied) copy = *set;
    copied = true;
    sigdelset(&copy, sig);
  }
  return copied ? &copy : set;
}

/// The kernel's one-word signal mask without the sample signals.
uint64_t without_sample_signals(uint64_t mask) {
  for (int sig : coz::sample_signals) {
    if (coz::sample_signal_installed(sig)) mask &= ~(1ull << (sig - 1));
  }
  return mask;
}

/// sigtimedwait (sigwaitinfo, sigwait: `timeout` null) that never returns
/// the runtime's sample signal: a thread that blocks it with the raw
/// rt_sigprocmask (the wrappers below keep it deliverable) would take the
/// runtime's samples for signals of its own. One that comes is dropped (its
/// sample stays in the ring for the next drain) and the wait goes on, for
/// what is left of the timeout.
int wait_for_program_signal(const sigset_t* set, siginfo_t* info, const struct timespec* timeout) {
  auto ns = [](const struct timespec& ts) {
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
  };
  const uint64_t deadline = timeout ? coz::sys::monotonic_ns() + ns(*timeout) : 0;
  for (;;) {
    struct timespec left = {};
    if (timeout) {
      uint64_t now = coz::sys::monotonic_ns();
      uint64_t rest = deadline > now ? deadline - now : 0;
      left = {static_cast<time_t>(rest / 1'000'000'000u), static_cast<long>(rest % 1'000'000'000u)};
    }
    int sig = functions().sigtimedwait(set, info, timeout ? &left : nullptr);
    if (!coz::sample_signal_installed(sig) || !coz::is_runtime_signal(sig, info)) return sig;
  }
}

/// seccomp strict mode, entered through prctl or seccomp(2): only read,
/// write, _exit and sigreturn remain (seal_current_thread).
bool enters_strict_mode(long number, long a1, long a2) {
  return (number == SYS_prctl && a1 == PR_SET_SECCOMP && a2 == SECCOMP_MODE_STRICT) ||
         (number == SYS_seccomp && a1 == SECCOMP_SET_MODE_STRICT);
}

/// The filter a prctl or seccomp(2) call installs, or null.
const sock_fprog* installed_filter(long number, long a1, long a2, long a3) {
  if (number == SYS_prctl && a1 == PR_SET_SECCOMP && a2 == SECCOMP_MODE_FILTER) {
    return reinterpret_cast<const sock_fprog*>(a3);
  }
  if (number == SYS_seccomp && a1 == SECCOMP_SET_MODE_FILTER) return reinterpret_cast<const sock_fprog*>(a3);
  return nullptr;
}

/// Before a call that confines the thread: where strict mode, or a filter
/// that refuses one of the runtime's own calls (seccomp_filter.h), would
/// end the program at its next sample, the thread stops taking part first.
/// (A filter with SECCOMP_FILTER_FLAG_TSYNC confines the other threads too:
/// only this one is sealed.)
void before_confinement(long number, long a1, long a2, long a3) {
  if (enters_strict_mode(number, a1, a2)) {
    coz::seal_current_thread();
    return;
  }
  const sock_fprog* filter = installed_filter(number, a1, a2, a3);
  if (filter && !coz::in_runtime() && !coz::seccomp::runtime_calls_allowed(*filter)) coz::seal_current_thread();
}

bool is_futex_lock(int op) { return op == FUTEX_LOCK_PI || op == FUTEX_LOCK_PI2; }
bool is_futex_wait(int op) { return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET || op == FUTEX_WAIT_REQUEUE_PI; }
bool is_futex_wake(int op) {
  return op == FUTEX_WAKE || op == FUTEX_WAKE_BITSET || op == FUTEX_REQUEUE || op == FUTEX_CMP_REQUEUE ||
         op == FUTEX_WAKE_OP || op == FUTEX_UNLOCK_PI;
}

}  // namespace

extern "C" {

// ---- threads ---------------------------------------------------------------

/// A new thread inherits its creator's local delay: it owes nothing from before it existed.
int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*), void* arg) {
  if (!coz::runtime() || coz::in_runtime()) return functions().pthread_create(thread, attr, fn, arg);
  catch_up();
  auto* start = static_cast<ThreadStart*>(std::malloc(sizeof(ThreadStart)));
  if (!start) return EAGAIN;
  *start = ThreadStart{fn, arg, coz::thread_local_delay()};
  int err = functions().pthread_create(thread, attr, &thread_trampoline, start);
  if (err != 0) std::free(start);
  return err;
}

/// Woken by the exiting thread, which paid its delays before exiting.
int pthread_join(pthread_t thread, void** result) {
  Wait w(coz::WaitKind::Join);
  int err = functions().pthread_join(thread, result);
  w.done(true);
  return err;
}

/// Joined (woken by the exiting thread) or timed out (pays).
int pthread_timedjoin_np(pthread_t thread, void** result, const struct timespec* abstime) {
  Wait w(coz::WaitKind::Join);
  int err = functions().pthread_timedjoin_np(thread, result, abstime);
  w.done(err == 0);
  return err;
}

/// As pthread_timedjoin_np.
int pthread_clockjoin_np(pthread_t thread, void** result, clockid_t clock, const struct timespec* abstime) {
  Wait w(coz::WaitKind::Join);
  int err = functions().pthread_clockjoin_np(thread, result, clock, abstime);
  w.done(err == 0);
  return err;
}

// ---- mutexes ---------------------------------------------------------------

/// Acquired: either free, or handed over by an unlocker that caught up.
/// Held by another thread, the wait absorbs our debt (Entry::QueueWithDebt);
/// free, we pay first, as before any call that may block.
int pthread_mutex_lock(pthread_mutex_t* mutex) {
  // Taken without blocking, there is no wait to time, record or credit:
  // the Wait's two clock reads on every uncontended lock were 14% of
  // SQLite's point queries here (its mutexes are taken several times per
  // query). trylock is not interposed: it is the real one.
  // With nothing to pay, try at once: reading the lock word first made a
  // contended mutex's cache line come twice (shared, then exclusive), 2.4%
  // of mutex_crowd's time. With delays to pay, only a free mutex is worth
  // paying for and trying; a held one's queue absorbs the debt (below).
  const bool may_owe = coz::delays_possible();
  if (!may_owe || !held_by_someone(mutex)) {
    if (may_owe) coz::catch_up_if_owed();
    if (int err = pthread_mutex_trylock(mutex); err != EBUSY) return err;
  }
  Wait w(coz::WaitKind::Mutex, held_by_someone(mutex) ? Wait::Entry::QueueWithDebt : Wait::Entry::PayFirst);
  int err = functions().pthread_mutex_lock(mutex);
  w.done(true);
  return err;
}

/// Acquired (from an unlocker that caught up) or timed out (pays).
int pthread_mutex_timedlock(pthread_mutex_t* mutex, const struct timespec* abstime) {
  Wait w(coz::WaitKind::Mutex);
  int err = functions().pthread_mutex_timedlock(mutex, abstime);
  w.done(err == 0);
  return err;
}

/// As pthread_mutex_timedlock.
int pthread_mutex_clocklock(pthread_mutex_t* mutex, clockid_t clock, const struct timespec* abstime) {
  Wait w(coz::WaitKind::Mutex);
  int err = functions().pthread_mutex_clocklock(mutex, clock, abstime);
  w.done(err == 0);
  return err;
}

/// Unlocking may wake a waiter: pay first.
int pthread_mutex_unlock(pthread_mutex_t* mutex) {
  catch_up();
  return functions().pthread_mutex_unlock(mutex);
}

// ---- condition variables -----------------------------------------------------

/// Woken by a signaller that caught up (spurious wake-ups are rare and cheap to misattribute).
int pthread_cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex) {
  Wait w(coz::WaitKind::Cond);
  int err = functions().pthread_cond_wait(cond, mutex);
  w.done(true);
  return err;
}

/// Signalled (skip) or timed out (pays).
int pthread_cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex, const struct timespec* abstime) {
  Wait w(coz::WaitKind::Cond);
  int err = functions().pthread_cond_timedwait(cond, mutex, abstime);
  w.done(err == 0);
  return err;
}

/// std::condition_variable::wait_for/wait_until (libstdc++ 11+) land here.
int pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                           const struct timespec* abstime) {
  Wait w(coz::WaitKind::Cond);
  int err = functions().pthread_cond_clockwait(cond, mutex, clock, abstime);
  w.done(err == 0);
  return err;
}

/// Wakes a waiter: pay first.
int pthread_cond_signal(pthread_cond_t* cond) {
  catch_up();
  return functions().pthread_cond_signal(cond);
}

/// Wakes all waiters: pay first.
int pthread_cond_broadcast(pthread_cond_t* cond) {
  catch_up();
  return functions().pthread_cond_broadcast(cond);
}

// ---- read-write locks --------------------------------------------------------

/// Acquired from an unlocker that caught up.
int pthread_rwlock_rdlock(pthread_rwlock_t* lock) {
  Wait w(coz::WaitKind::RwLock);
  int err = functions().pthread_rwlock_rdlock(lock);
  w.done(true);
  return err;
}

/// Acquired from an unlocker that caught up.
int pthread_rwlock_wrlock(pthread_rwlock_t* lock) {
  Wait w(coz::WaitKind::RwLock);
  int err = functions().pthread_rwlock_wrlock(lock);
  w.done(true);
  return err;
}

/// Acquired (skip) or timed out (pays).
int pthread_rwlock_timedrdlock(pthread_rwlock_t* lock, const struct timespec* abstime) {
  Wait w(coz::WaitKind::RwLock);
  int err = functions().pthread_rwlock_timedrdlock(lock, abstime);
  w.done(err == 0);
  return err;
}

/// Acquired (skip) or timed out (pays).
int pthread_rwlock_timedwrlock(pthread_rwlock_t* lock, const struct timespec* abstime) {
  Wait w(coz::WaitKind::RwLock);
  int err = functions().pthread_rwlock_timedwrlock(lock, abstime);
  w.done(err == 0);
  return err;
}

/// Acquired (skip) or timed out (pays).
int pthread_rwlock_clockrdlock(pthread_rwlock_t* lock, clockid_t clock, const struct timespec* abstime) {
  Wait w(coz::WaitKind::RwLock);
  int err = functions().pthread_rwlock_clockrdlock(lock, clock, abstime);
  w.done(err == 0);
  return err;
}

/// Acquired (skip) or timed out (pays).
int pthread_rwlock_clockwrlock(pthread_rwlock_t* lock, clockid_t clock, const struct timespec* abstime) {
  Wait w(coz::WaitKind::RwLock);
  int err = functions().pthread_rwlock_clockwrlock(lock, clock, abstime);
  w.done(err == 0);
  return err;
}

/// May wake waiters: pay first.
int pthread_rwlock_unlock(pthread_rwlock_t* lock) {
  catch_up();
  return functions().pthread_rwlock_unlock(lock);
}

// ---- barriers and semaphores ---------------------------------------------------

/// The last thread to arrive wakes the others: everyone pays before arriving.
int pthread_barrier_wait(pthread_barrier_t* barrier) {
  catch_up();
  Wait w(coz::WaitKind::Barrier);
  int err = functions().pthread_barrier_wait(barrier);
  w.done(true);
  return err;
}

/// Woken by a poster that caught up; an EINTR came from outside (pays).
int sem_wait(sem_t* sem) {
  Wait w(coz::WaitKind::Sem);
  int ret = functions().sem_wait(sem);
  w.done(ret == 0);
  return ret;
}

/// Posted (skip) or timed out (pays).
int sem_timedwait(sem_t* sem, const struct timespec* abstime) {
  Wait w(coz::WaitKind::Sem);
  int ret = functions().sem_timedwait(sem, abstime);
  w.done(ret == 0);
  return ret;
}

/// Posted (skip) or timed out (pays).
int sem_clockwait(sem_t* sem, clockid_t clock, const struct timespec* abstime) {
  Wait w(coz::WaitKind::Sem);
  int ret = functions().sem_clockwait(sem, clock, abstime);
  w.done(ret == 0);
  return ret;
}

/// Wakes a waiter: pay first.
int sem_post(sem_t* sem) {
  catch_up();
  return functions().sem_post(sem);
}

// ---- raw system calls through syscall(): futexes (C++20 atomic waits,
// hand-rolled locks), futex_waitv, io_uring_enter, signalfd, tgkill ----------

/// FUTEX_WAIT woken by FUTEX_WAKE (skip) or not blocking at all (EAGAIN,
/// skip); FUTEX_LOCK_PI acquired from an unlocker that caught up; a timeout
/// or signal pays. Wakes pay first. io_uring_enter: a submission may wake a
/// thread waiting on the same ring; a wait for completions claims it.
/// close, close_range, dup2 and dup3 pass the runtime's descriptors by, as
/// their wrappers do.
/// signalfd: never reports the sample signal (see the signalfd wrapper).
long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
  long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
  va_end(ap);
  auto real = [&] { return functions().syscall(number, a1, a2, a3, a4, a5, a6); };
  before_confinement(number, a1, a2, a3);
  if (number == SYS_prctl || number == SYS_capset) {
    // Looked at once the kernel took the call: capset's header is read only then.
    long ret = real();
    if (ret == 0 && coz::changes_thread_capabilities(number, a1, a2)) {
      coz::mirror_on_profiler_thread(number, a1, a2, a3, a4, a5);
    }
    return ret;
  }
  switch (number) {
    case SYS_futex: {
      int op = static_cast<int>(a2) & FUTEX_CMD_MASK;
      if (is_futex_wake(op)) catch_up();
      if (is_futex_lock(op)) {
        Wait w(coz::WaitKind::Mutex);
        long ret = real();
        w.done(ret == 0);
        return ret;
      }
      if (!is_futex_wait(op)) return real();
      Wait w(coz::WaitKind::Futex);
      long ret = real();
      w.done(ret == 0 || errno == EAGAIN);
      return ret;
    }
    case SYS_futex_waitv: {
      Wait w(coz::WaitKind::Futex);
      long ret = real();
      w.done(ret >= 0 || errno == EAGAIN);
      return ret;
    }
    case SYS_io_uring_enter: {
      int ring = static_cast<int>(a1);
      if (a2 > 0) wake_through_kernel(WakeKind::RingSubmit, ring);
      bool waits = (a4 & IORING_ENTER_GETEVENTS) && a3 > 0;
      if (!waits) return real();
      KernelWait w(coz::WaitKind::Io);
      long ret = real();
      w.done([ring](const coz::WakeRecord& r) { return !r.foreign && r.kind == WakeKind::RingSubmit && r.target == ring; });
      return ret;
    }
    case SYS_execve:
    case SYS_execveat: {
      coz::ExecWindow window;  // interpose_exec.cpp says why
      return real();
    }
    case SYS_close:
      return close(static_cast<int>(a1));
    case SYS_close_range:
      return close_range(static_cast<unsigned>(a1), static_cast<unsigned>(a2), static_cast<int>(a3));
    case SYS_dup2:
      return dup2(static_cast<int>(a1), static_cast<int>(a2));
    case SYS_dup3:
      return dup3(static_cast<int>(a1), static_cast<int>(a2), static_cast<int>(a3));
    case SYS_signalfd:
    case SYS_signalfd4: {  // as the signalfd wrapper; the kernel's mask is one word
      if (!a2 || a3 != sizeof(uint64_t)) return real();
      uint64_t mask = without_sample_signals(*reinterpret_cast<const uint64_t*>(a2));
      return functions().syscall(number, a1, reinterpret_cast<long>(&mask), a3, a4, a5, a6);
    }
    case SYS_tgkill:
    case SYS_tkill: {
      bool ours = number == SYS_tkill || a1 == coz::sys::getpid();
      if (ours) wake_through_kernel(WakeKind::Signal, static_cast<int>(number == SYS_tkill ? a1 : a2));
      else catch_up();
      return real();
    }
    default:
      return real();
  }
}

// ---- sleeping: woken by time, so the delays that accrued meanwhile are paid ----

/// Woken by time: pays.
int nanosleep(const struct timespec* request, struct timespec* remaining) {
  Wait w(coz::WaitKind::Sleep);
  int ret = functions().nanosleep(request, remaining);
  w.done(false);
  return ret;
}

/// Woken by time: pays.
int clock_nanosleep(clockid_t clock, int flags, const struct timespec* request, struct timespec* remaining) {
  Wait w(coz::WaitKind::Sleep);
  int err = functions().clock_nanosleep(clock, flags, request, remaining);
  w.done(false);
  return err;
}

/// Woken by time: pays.
int usleep(useconds_t usec) {
  Wait w(coz::WaitKind::Sleep);
  int ret = functions().usleep(usec);
  w.done(false);
  return ret;
}

/// Woken by time: pays.
unsigned int sleep(unsigned int seconds) {
  Wait w(coz::WaitKind::Sleep);
  unsigned int left = functions().sleep(seconds);
  w.done(false);
  return left;
}

// ---- signals ---------------------------------------------------------------------

/// Claims the credit of a signal a thread of this process sent; else pays.
int sigwait(const sigset_t* set, int* sig) {
  KernelWait w(coz::WaitKind::Signal);
  siginfo_t info;
  int ret;
  do ret = wait_for_program_signal(set, &info, nullptr);
  while (ret < 0 && errno == EINTR);  // sigwait is never interrupted (glibc's loops too)
  int err = ret > 0 ? 0 : errno;
  if (ret > 0) *sig = ret;
  int tid = coz::sys::gettid();
  w.done([tid](const coz::WakeRecord& r) { return coz::signal_reaches(r, tid); });
  return err;
}

/// Skip only when a thread of this process sent the signal (it caught up in kill/pthread_kill).
int sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  siginfo_t local;
  siginfo_t* out = info ? info : &local;
  Wait w(coz::WaitKind::Signal);
  int ret = wait_for_program_signal(set, out, nullptr);
  w.done(ret > 0 && out->si_pid == coz::sys::getpid());
  return ret;
}

/// As sigwaitinfo; a timeout pays.
int sigtimedwait(const sigset_t* set, siginfo_t* info, const struct timespec* timeout) {
  siginfo_t local;
  siginfo_t* out = info ? info : &local;
  Wait w(coz::WaitKind::Signal);
  int ret = wait_for_program_signal(set, out, timeout);
  w.done(ret > 0 && out->si_pid == coz::sys::getpid());
  return ret;
}

/// Never reports the sample signals: a thread that blocks them with the raw
/// rt_sigprocmask would read the runtime's samples as its own signals, and
/// a signalfd cannot tell them apart (the cost: a program cannot read its
/// own SIGSTKFLT, nor SIGTRAP where the runtime samples with it, from a
/// signalfd).
int signalfd(int fd, const sigset_t* mask, int flags) {
  sigset_t copy;
  return functions().signalfd(fd, without_sample_signals(SIG_BLOCK, mask, copy), flags);
}

/// Sending a signal may wake a thread in sigwait or sigsuspend: pay first, leave the credit.
int pthread_kill(pthread_t thread, int sig) {
  wake_through_kernel(WakeKind::Signal, 0);
  return functions().pthread_kill(thread, sig);
}

/// As pthread_kill when the signal is for this process; else pays first only.
int kill(pid_t pid, int sig) {
  if (pid == 0 || pid == coz::sys::getpid()) wake_through_kernel(WakeKind::Signal, 0);
  else catch_up();
  return functions().kill(pid, sig);
}

/// The program may block all signals; the sample signal stays deliverable.
int pthread_sigmask(int how, const sigset_t* set, sigset_t* old) {
  sigset_t copy;
  return functions().pthread_sigmask(how, without_sample_signals(how, set, copy), old);
}

/// As pthread_sigmask.
int sigprocmask(int how, const sigset_t* set, sigset_t* old) {
  sigset_t copy;
  return functions().sigprocmask(how, without_sample_signals(how, set, copy), old);
}

/// The sample signal stays the runtime's; the program's disposition for it
/// is kept and honoured (sample_signal.h). The exit signals the runtime
/// stands in for read as SIG_DFL (exit_signals.h).
int sigaction(int sig, const struct sigaction* action, struct sigaction* old) {
  int result;
  if (coz::exit_signal_sigaction(sig, action, old, result)) return result;
  if (coz::sample_signal_installed(sig)) return coz::program_sample_sigaction(sig, action, old);
  return functions().sigaction(sig, action, old);
}

/// As sigaction.
sighandler_t signal(int sig, sighandler_t handler) {
  struct sigaction action = {}, previous = {};
  action.sa_handler = handler;
  action.sa_flags = SA_RESTART;  // signal()'s BSD semantics, as glibc gives them
  int result;
  if (coz::exit_signal_sigaction(sig, &action, &previous, result)) return result == 0 ? previous.sa_handler : SIG_ERR;
  if (!coz::sample_signal_installed(sig)) return functions().signal(sig, handler);
  coz::program_sample_sigaction(sig, &action, &previous);
  return previous.sa_handler;
}

/// The program's alternate stack stays its own; the runtime's is never
/// reported (signal_stack.h).
int sigaltstack(const stack_t* ss, stack_t* old) {
  coz::ThreadState* t = coz::current_thread();
  return t ? coz::program_sigaltstack(*t, ss, old) : functions().sigaltstack(ss, old);
}

// ---- C11 threads: glibc builds them on internal pthread aliases, which never ----
// reach the wrappers above; same semantics as their pthread counterparts.

/// Registered as pthread_create's threads are: a thrd_t is a pthread_t, and
/// the start function's int travels as the thread's result, as in glibc.
int thrd_create(thrd_t* thread, thrd_start_t fn, void* arg) {
  if (!coz::runtime() || coz::in_runtime()) return functions().thrd_create(thread, fn, arg);
  auto* start = static_cast<C11Start*>(std::malloc(sizeof(C11Start)));
  if (!start) return thrd_nomem;
  *start = C11Start{fn, arg};
  int err = pthread_create(reinterpret_cast<pthread_t*>(thread), nullptr, &c11_trampoline, start);
  if (err != 0) std::free(start);
  return err == 0 ? thrd_success : err == EAGAIN ? thrd_nomem : thrd_error;
}

/// Woken by the exiting thread, which paid its delays before exiting.
int thrd_join(thrd_t thread, int* result) {
  Wait w(coz::WaitKind::Join);
  int ret = functions().thrd_join(thread, result);
  w.done(true);
  return ret;
}

/// As pthread_mutex_lock (an mtx_t is a pthread mutex).
int mtx_lock(mtx_t* mutex) {
  auto* m = reinterpret_cast<pthread_mutex_t*>(mutex);
  if (!held_by_someone(m)) {  // free: as pthread_mutex_lock
    coz::catch_up();
    if (int ret = mtx_trylock(mutex); ret != thrd_busy) return ret;
  }
  Wait w(coz::WaitKind::Mutex, held_by_someone(m) ? Wait::Entry::QueueWithDebt : Wait::Entry::PayFirst);
  int ret = functions().mtx_lock(mutex);
  w.done(true);
  return ret;
}

/// Acquired (from an unlocker that caught up) or timed out (pays).
int mtx_timedlock(mtx_t* __restrict mutex, const struct timespec* __restrict abstime) {
  Wait w(coz::WaitKind::Mutex);
  int ret = functions().mtx_timedlock(mutex, abstime);
  w.done(ret == thrd_success);
  return ret;
}

/// Unlocking may wake a waiter: pay first.
int mtx_unlock(mtx_t* mutex) {
  catch_up();
  return functions().mtx_unlock(mutex);
}

/// Woken by a signaller that caught up.
int cnd_wait(cnd_t* cond, mtx_t* mutex) {
  Wait w(coz::WaitKind::Cond);
  int ret = functions().cnd_wait(cond, mutex);
  w.done(true);
  return ret;
}

/// Signalled (skip) or timed out (pays).
int cnd_timedwait(cnd_t* __restrict cond, mtx_t* __restrict mutex, const struct timespec* __restrict abstime) {
  Wait w(coz::WaitKind::Cond);
  int ret = functions().cnd_timedwait(cond, mutex, abstime);
  w.done(ret == thrd_success);
  return ret;
}

/// Wakes a waiter: pay first.
int cnd_signal(cnd_t* cond) {
  catch_up();
  return functions().cnd_signal(cond);
}

/// Wakes all waiters: pay first.
int cnd_broadcast(cnd_t* cond) {
  catch_up();
  return functions().cnd_broadcast(cond);
}

// ---- descriptors: the runtime's own are not the program's to close or replace --------
// (descriptors.h). /proc/self/fd lists them, and programs close what it lists
// (crashpad, daemonizers, descriptor-leak checkers): a close succeeds, as if
// the runtime had reopened the file at once at the same number. Duplicating
// one, or over one, fails with EBADF, as for a number above the program's
// limit, where they are.

/// Passes the runtime's descriptors by: closed, as far as the program can tell.
int close(int fd) {
  if (coz::descriptors::is_runtime(fd)) return 0;
  int ret = functions().close(fd);
  coz::forget_channel(fd);  // after: a channel learned meanwhile is the closed object's
  return ret;
}

/// Closes the program's descriptors in the range, around the runtime's.
int close_range(unsigned int first, unsigned int last, int flags) {
  int ret = coz::descriptors::close_range_except_runtime(first, last, flags);
  if (!(flags & CLOSE_RANGE_CLOEXEC)) coz::forget_channels(first, last);
  return ret;
}

/// As close_range to the end. Where the kernel has no close_range (before
/// 5.9): one close each up to the runtime's highest descriptor, then the C
/// library's own closefrom.
void closefrom(int low) {
  const unsigned first = low < 0 ? 0u : static_cast<unsigned>(low);
  if (coz::descriptors::close_range_except_runtime(first, ~0u, 0) == 0 || errno != ENOSYS) {
    coz::forget_channels(first, ~0u);
    return;
  }
  int past = static_cast<int>(first);
  for (int fd = coz::descriptors::next_runtime(first, ~0u); fd >= 0;
       fd = coz::descriptors::next_runtime(static_cast<unsigned>(fd) + 1, ~0u)) {
    for (int i = past; i < fd; ++i) functions().close(i);
    past = fd + 1;
  }
  functions().closefrom(past);
  coz::forget_channels(first, ~0u);
}

/// Never over, nor from, one of the runtime's descriptors.
int dup2(int fd, int target) {
  if (coz::descriptors::is_runtime(fd) || coz::descriptors::is_runtime(target)) return errno = EBADF, -1;
  int ret = functions().dup2(fd, target);
  coz::forget_channel(target);
  return ret;
}

/// As dup2.
int dup3(int fd, int target, int flags) {
  if (coz::descriptors::is_runtime(fd) || coz::descriptors::is_runtime(target)) return errno = EBADF, -1;
  int ret = functions().dup3(fd, target, flags);
  coz::forget_channel(target);
  return ret;
}

// ---- seccomp ------------------------------------------------------------------------

/// Strict mode leaves a thread read, write, _exit and sigreturn: the runtime
/// must make no other call on it (its sample handler's would kill it).
int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
  unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
  va_end(ap);
  before_confinement(SYS_prctl, option, static_cast<long>(a2), static_cast<long>(a3));
  int ret = functions().prctl(option, a2, a3, a4, a5);
  if (ret == 0 && coz::changes_thread_capabilities(SYS_prctl, option, static_cast<long>(a2))) {
    coz::mirror_on_profiler_thread(SYS_prctl, option, static_cast<long>(a2), static_cast<long>(a3),
                                   static_cast<long>(a4), static_cast<long>(a5));
  }
  return ret;
}

// ---- capabilities ------------------------------------------------------------------

/// glibc's capset is the bare system call, made here; raised or kept
/// capabilities are then the profiler thread's too (mirrored_calls.h).
int capset(cap_user_header_t header, const cap_user_data_t data) {
  long ret = coz::sys::raw_syscall6(SYS_capset, reinterpret_cast<long>(header), reinterpret_cast<long>(data));
  if (ret < 0) return errno = static_cast<int>(-ret), -1;
  const long h = reinterpret_cast<long>(header), d = reinterpret_cast<long>(data);
  if (coz::changes_thread_capabilities(SYS_capset, h, d)) coz::mirror_on_profiler_thread(SYS_capset, h, d);
  return 0;
}

// ---- libraries loaded at run time ------------------------------------------------

/// A library in scope that the program loads later becomes selectable too.
void* dlopen(const char* file, int mode) {
  void* handle = functions().dlopen(file, mode);
  if (handle && !coz::in_runtime()) coz::on_library_loaded();
  return handle;
}

}  // extern "C"
