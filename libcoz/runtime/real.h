// The table of real libc functions behind our wrappers, generated from one list.
//
// Each entry is typed with decltype(&::name). Required entries must resolve or
// the runtime stops with a clear message; optional ones (newer glibc
// additions) may be missing, and their wrappers are then never reached.
#pragma once

#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

namespace coz::real {

// X(name, required, glibc symbol version or nullptr for the default)
#define COZ_REAL_FUNCTIONS(X)                                  \
  X(pthread_create, true, nullptr)                             \
  X(pthread_join, true, nullptr)                               \
  X(pthread_timedjoin_np, false, nullptr)                      \
  X(pthread_clockjoin_np, false, nullptr)                      \
  X(pthread_mutex_lock, true, nullptr)                         \
  X(pthread_mutex_timedlock, true, nullptr)                    \
  X(pthread_mutex_clocklock, false, nullptr)                   \
  X(pthread_mutex_unlock, true, nullptr)                       \
  X(pthread_cond_wait, true, "GLIBC_2.3.2")                    \
  X(pthread_cond_timedwait, true, "GLIBC_2.3.2")               \
  X(pthread_cond_clockwait, false, nullptr)                    \
  X(pthread_cond_signal, true, "GLIBC_2.3.2")                  \
  X(pthread_cond_broadcast, true, "GLIBC_2.3.2")               \
  X(pthread_rwlock_rdlock, true, nullptr)                      \
  X(pthread_rwlock_wrlock, true, nullptr)                      \
  X(pthread_rwlock_timedrdlock, true, nullptr)                 \
  X(pthread_rwlock_timedwrlock, true, nullptr)                 \
  X(pthread_rwlock_clockrdlock, false, nullptr)                \
  X(pthread_rwlock_clockwrlock, false, nullptr)                \
  X(pthread_rwlock_unlock, true, nullptr)                      \
  X(pthread_barrier_wait, true, nullptr)                       \
  X(pthread_kill, true, nullptr)                               \
  X(pthread_sigmask, true, nullptr)                            \
  X(sigprocmask, true, nullptr)                                \
  X(sem_wait, true, nullptr)                                   \
  X(sem_timedwait, true, nullptr)                              \
  X(sem_clockwait, false, nullptr)                             \
  X(sem_post, true, nullptr)                                   \
  X(syscall, true, nullptr)                                    \
  X(nanosleep, true, nullptr)                                  \
  X(clock_nanosleep, true, nullptr)                            \
  X(usleep, true, nullptr)                                     \
  X(sleep, true, nullptr)                                      \
  X(sigwait, true, nullptr)                                    \
  X(sigwaitinfo, true, nullptr)                                \
  X(sigtimedwait, true, nullptr)                               \
  X(kill, true, nullptr)                                       \
  X(sigaction, true, nullptr)                                  \
  X(signal, true, nullptr)                                     \
  X(dlopen, true, nullptr)

struct Table {
#define COZ_REAL_DECLARE(name, required, version) decltype(&::name) name = nullptr;
  COZ_REAL_FUNCTIONS(COZ_REAL_DECLARE)
#undef COZ_REAL_DECLARE
};

/// The resolved table. Resolves on first use (any thread, any time, also
/// before the runtime's constructor ran); resolution is idempotent.
const Table& functions();

}  // namespace coz::real
