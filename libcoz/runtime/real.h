// The table of real libc functions behind our wrappers, generated from one list.
//
// Each entry is typed with decltype(&::name). Required entries must resolve or
// the runtime stops with a clear message; optional ones (newer glibc
// additions) may be missing, and their wrappers are then never reached.
#pragma once

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

// The checked variants that -D_FORTIFY_SOURCE builds call; glibc declares
// them only in fortified compilations.
extern "C" {
ssize_t __read_chk(int fd, void* buf, size_t count, size_t buflen);
ssize_t __recv_chk(int fd, void* buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void* buf, size_t len, size_t buflen, int flags, struct sockaddr* from,
                       socklen_t* from_len);
int __poll_chk(struct pollfd* fds, nfds_t nfds, int timeout, size_t fds_len);
int __ppoll_chk(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout, const sigset_t* mask,
                size_t fds_len);
}

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
  X(sigwaitinfo, true, nullptr)                                \
  X(sigtimedwait, true, nullptr)                               \
  X(signalfd, true, nullptr)                                   \
  X(kill, true, nullptr)                                       \
  X(sigaction, true, nullptr)                                  \
  X(signal, true, nullptr)                                     \
  X(sigaltstack, true, nullptr)                                \
  X(dlopen, true, nullptr)                                     \
  X(close, true, nullptr)                                      \
  X(closefrom, false, nullptr)                                 \
  X(dup2, true, nullptr)                                       \
  X(dup3, true, nullptr)                                       \
  X(prctl, true, nullptr)                                      \
  X(execve, true, nullptr)                                     \
  X(execv, true, nullptr)                                      \
  X(execvp, true, nullptr)                                     \
  X(execvpe, true, nullptr)                                    \
  X(fexecve, true, nullptr)                                    \
  X(execveat, false, nullptr)                                  \
  COZ_REAL_IO_FUNCTIONS(X)                                     \
  COZ_REAL_C11_FUNCTIONS(X)

// interpose_io.cpp
#define COZ_REAL_IO_FUNCTIONS(X)                               \
  X(read, true, nullptr)                                       \
  X(__read_chk, true, nullptr)                                 \
  X(readv, true, nullptr)                                      \
  X(recv, true, nullptr)                                       \
  X(__recv_chk, true, nullptr)                                 \
  X(recvfrom, true, nullptr)                                   \
  X(__recvfrom_chk, true, nullptr)                             \
  X(recvmsg, true, nullptr)                                    \
  X(recvmmsg, true, nullptr)                                   \
  X(eventfd_read, true, nullptr)                               \
  X(accept, true, nullptr)                                     \
  X(accept4, true, nullptr)                                    \
  X(epoll_wait, true, nullptr)                                 \
  X(epoll_pwait, true, nullptr)                                \
  X(epoll_pwait2, false, nullptr)                              \
  X(epoll_ctl, true, nullptr)                                  \
  X(poll, true, nullptr)                                       \
  X(__poll_chk, true, nullptr)                                 \
  X(ppoll, true, nullptr)                                      \
  X(__ppoll_chk, true, nullptr)                                \
  X(select, true, nullptr)                                     \
  X(pselect, true, nullptr)                                    \
  X(write, true, nullptr)                                      \
  X(writev, true, nullptr)                                     \
  X(send, true, nullptr)                                       \
  X(sendto, true, nullptr)                                     \
  X(sendmsg, true, nullptr)                                    \
  X(sendmmsg, true, nullptr)                                   \
  X(eventfd_write, true, nullptr)                              \
  X(connect, true, nullptr)                                    \
  X(listen, true, nullptr)                                     \
  X(sigsuspend, true, nullptr)                                 \
  X(pause, true, nullptr)                                      \
  X(sigqueue, true, nullptr)                                   \
  X(pthread_sigqueue, true, nullptr)                           \
  X(waitpid, true, nullptr)                                    \
  X(wait, true, nullptr)                                       \
  X(wait4, true, nullptr)                                      \
  X(waitid, true, nullptr)                                     \
  X(flock, true, nullptr)                                      \
  X(fcntl, true, nullptr)                                      \
  X(fcntl64, false, nullptr)                                   \
  X(ioctl, true, nullptr)

// C11 threads (interpose.cpp): glibc implements them on its internal
// pthread aliases, which never reach the pthread wrappers.
#define COZ_REAL_C11_FUNCTIONS(X)                              \
  X(thrd_create, false, nullptr)                               \
  X(thrd_join, false, nullptr)                                 \
  X(mtx_lock, false, nullptr)                                  \
  X(mtx_timedlock, false, nullptr)                             \
  X(mtx_unlock, false, nullptr)                                \
  X(cnd_wait, false, nullptr)                                  \
  X(cnd_timedwait, false, nullptr)                             \
  X(cnd_signal, false, nullptr)                                \
  X(cnd_broadcast, false, nullptr)

struct Table {
#define COZ_REAL_DECLARE(name, required, version) decltype(&::name) name = nullptr;
  COZ_REAL_FUNCTIONS(COZ_REAL_DECLARE)
#undef COZ_REAL_DECLARE
};

namespace detail {
inline Table g_table;
inline std::atomic<bool> g_resolved{false};
/// Looks every function up (several threads may at once: they store the same values).
void resolve();
}  // namespace detail

/// The resolved table. Resolves on first use (any thread, any time, also
/// before the runtime's constructor ran); resolution is idempotent. Inline:
/// every wrapper calls it.
inline const Table& functions() {
  if (!detail::g_resolved.load(std::memory_order_acquire)) detail::resolve();
  return detail::g_table;
}

}  // namespace coz::real
