// The interposed calls through which threads wait for and wake each other
// with descriptors, signals and child processes. Same shapes as
// interpose.cpp (wait.h), with one addition: a wake through the kernel
// leaves a record on the WakeBoard (its credit), and a wait claims it, skipping
// what accrued while it waited, only if the record reached the descriptor
// it waited on (channels.h). A separate
// file because these wrappers share that matching, which the pthread ones
// never need.
//
// Most of these calls never block for long, and most waits end with no
// delay accrued: then nothing is matched (KernelWait::done), and a wrapper
// costs two clock reads and a few atomic operations. A call that cannot
// block at all (a descriptor the program made non-blocking, MSG_DONTWAIT,
// a zero timeout) is no wait: no bracket (cannot_block). On the write
// side, nothing is posted outside experiments that insert delays.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "channels.h"
#include "real.h"
#include "sys.h"
#include "wait.h"
#include "wake_origin.h"

using coz::KernelWait;
using coz::WaitedChannel;
using coz::WaitKind;
using coz::WakeKind;
using coz::WakeRecord;
using coz::wake_through_kernel;
using coz::real::functions;

namespace {

/// Ends a wait on one descriptor for data (or a connection): claims a wake
/// that reached it. Not another reader's read, which ends no such wait.
void done_on(KernelWait& wait, int fd) {
  wait.sort([fd] { return coz::woken_only_from_outside(fd); });
  wait.done([&, channel = std::optional<WaitedChannel>()](const WakeRecord& record) mutable {
    if (record.kind == WakeKind::Read) return false;
    if (!channel) channel.emplace(fd);  // looked up once, and only if there is a record to check
    return channel->reached_by(record);
  });
}

/// Ends a write, which blocks while the pipe or socket is full: claims the
/// read at the other end that made room.
void done_writing(KernelWait& wait, int fd) {
  wait.done([&, channel = std::optional<WaitedChannel>()](const WakeRecord& record) mutable {
    if (record.kind != WakeKind::Read) return false;
    if (!channel) channel.emplace(fd);
    return channel->reached_by(record);
  });
}

/// Ends a wait on several descriptors (poll, select, epoll): claims a wake
/// that reached any of those that became ready. The first `max_channels`
/// are checked: enough for the wakes that end a wait.
class ReadySet {
 public:
  static constexpr int max_channels = 16;
  void add(int fd) {
    if (count_ < max_channels && fd >= 0) fds_[count_++] = fd;
  }
  /// Whether `record` made one of them ready (to read: room to write is no one's hand-off).
  bool reached_by(const WakeRecord& record) {
    if (record.kind == WakeKind::Read) return false;
    for (int i = 0; i < count_; ++i) {
      if (!channels_[i]) channels_[i].emplace(fds_[i]);
      if (channels_[i]->reached_by(record)) return true;
    }
    return false;
  }
  /// Whether only the outside could have made them ready (wake_origin.h).
  bool all_from_outside() const {
    for (int i = 0; i < count_; ++i) {
      if (!coz::woken_only_from_outside(fds_[i])) return false;
    }
    return count_ > 0;
  }
  void done(KernelWait& wait) {
    if (count_ == 0) return wait.done_from_outside();
    wait.sort([&] { return all_from_outside(); });
    wait.done([&](const WakeRecord& record) { return reached_by(record); });
  }

 private:
  int fds_[max_channels];
  std::optional<WaitedChannel> channels_[max_channels];
  int count_ = 0;
};

/// epoll_wait's: which descriptor each event stands for is looked up in the
/// registry (under its lock, which every thread's epoll_wait shares) only
/// when the wait must be decided: an event loop on every request otherwise.
void done_on_events(KernelWait& wait, int epfd, const epoll_event* events, int n) {
  if (n <= 0) return wait.done_from_outside();
  std::optional<ReadySet> ready;
  auto look_up = [&] {
    ready.emplace();
    for (int i = 0; i < n; ++i) {
      int fd = coz::epoll_descriptor(epfd, events[i].data.u64);
      ready->add(fd >= 0 ? fd : events[i].data.fd);  // unregistered through us: libevent and libuv keep the fd there
    }
  };
  // Sorting is for a few threads that switch often, for a stretch: they
  // look up every wait's descriptors.
  wait.sort([&] {
    look_up();
    return ready->all_from_outside();
  });
  wait.done([&](const WakeRecord& record) {
    if (!ready) look_up();
    return ready->reached_by(record);
  });
}

void done_on_pollfds(KernelWait& wait, const pollfd* fds, nfds_t n, int ready_count) {
  ReadySet ready;
  for (nfds_t i = 0; ready_count > 0 && i < n; ++i) {
    if (fds[i].revents != 0) ready.add(fds[i].fd);
  }
  ready.done(wait);
}

void done_on_fdsets(KernelWait& wait, int nfds, const fd_set* read, const fd_set* except, int ready_count) {
  ReadySet ready;
  for (int fd = 0; ready_count > 0 && fd < nfds && fd < FD_SETSIZE; ++fd) {
    if ((read && FD_ISSET(fd, read)) || (except && FD_ISSET(fd, except))) ready.add(fd);
  }
  ready.done(wait);
}

/// Whether a call on `fd` cannot block: the program made the descriptor
/// non-blocking (nonblocking_set.h) or asked this call not to wait
/// (MSG_DONTWAIT). Such a call is the thread's own work, not a wait: no
/// bracket, no clock read. Its wakes still pay first and leave their credit.
bool cannot_block(int fd, int flags = 0) { return (flags & MSG_DONTWAIT) != 0 || coz::never_blocks(fd); }

/// A poll that returns at once (a zero timeout) as cannot_block.
bool returns_at_once(int timeout_ms) { return timeout_ms == 0; }
bool returns_at_once(const struct timespec* timeout) {
  return timeout && timeout->tv_sec == 0 && timeout->tv_nsec == 0;
}
bool returns_at_once(const struct timeval* timeout) { return timeout && timeout->tv_sec == 0 && timeout->tv_usec == 0; }

/// accept's and accept4's new descriptor `fd` (or -1): a number closed
/// where the runtime could not see it (forget_channel clears its mark too),
/// now a socket that is non-blocking only if accept4 asked (plain accept's
/// socket is blocking on Linux).
int accepted(int fd, int flags) {
  coz::forget_channel(fd);
  if (flags & SOCK_NONBLOCK) coz::note_nonblocking(fd, true);
  return fd;
}

/// A signal ended the wait: claims a signal a thread of this process sent.
void done_on_signal(KernelWait& wait) {
  int tid = coz::sys::gettid();
  wait.done([tid](const WakeRecord& record) { return coz::signal_reaches(record, tid); });
}

/// fcntl's lock commands: F_SETLKW waits; an unlock may wake a waiter.
bool is_lock_wait(int cmd) { return cmd == F_SETLKW || cmd == F_OFD_SETLKW; }
bool is_unlock(int cmd, void* arg) {
  return (cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW) && arg &&
         static_cast<const struct flock*>(arg)->l_type == F_UNLCK;
}

/// fcntl, seen by the runtime: the lock commands as above, and what the
/// kernel says of O_NONBLOCK (F_SETFL, F_GETFL: nonblocking_set.h).
template <typename Fcntl>
int fcntl_seen(Fcntl real_fcntl, int fd, int cmd, void* arg) {
  if (cmd == F_SETFL || cmd == F_GETFL) {
    int ret = real_fcntl(fd, cmd, arg);
    if (ret >= 0) {
      const auto flags = cmd == F_GETFL ? ret : static_cast<int>(reinterpret_cast<intptr_t>(arg));
      coz::note_nonblocking(fd, (flags & O_NONBLOCK) != 0);
    }
    return ret;
  }
  if (is_unlock(cmd, arg)) {
    wake_through_kernel(WakeKind::Unlock, fd);
    return real_fcntl(fd, cmd, arg);
  }
  if (!is_lock_wait(cmd)) return real_fcntl(fd, cmd, arg);
  KernelWait w(WaitKind::FileLock);
  int ret = real_fcntl(fd, cmd, arg);
  if (ret == 0) {
    done_on(w, fd);
  } else {
    w.done_from_outside();
  }
  return ret;
}

}  // namespace

extern "C" {

// ---- reads: woken by a write from a thread of the program, or from outside ----

/// Woken by a write to this descriptor (claims the writer's credit) or from
/// outside (pays). A read also makes room for a writer blocked on a full
/// pipe or socket: it leaves its credit first, as a write does.
ssize_t read(int fd, void* buf, size_t count) {
  wake_through_kernel(WakeKind::Read, fd);  // may make room for a blocked writer
  if (cannot_block(fd)) return functions().read(fd, buf, count);
  KernelWait w(WaitKind::Io);
  ssize_t ret = functions().read(fd, buf, count);
  done_on(w, fd);
  return ret;
}

/// As read (-D_FORTIFY_SOURCE builds call this one).
ssize_t __read_chk(int fd, void* buf, size_t count, size_t buflen) {
  wake_through_kernel(WakeKind::Read, fd);  // may make room for a blocked writer
  if (cannot_block(fd)) return functions().__read_chk(fd, buf, count, buflen);
  KernelWait w(WaitKind::Io);
  ssize_t ret = functions().__read_chk(fd, buf, count, buflen);
  done_on(w, fd);
  return ret;
}

/// As read.
ssize_t readv(int fd, const struct iovec* iov, int iovcnt) {
  wake_through_kernel(WakeKind::Read, fd);  // may make room for a blocked writer
  if (cannot_block(fd)) return functions().readv(fd, iov, iovcnt);
  KernelWait w(WaitKind::Io);
  ssize_t ret = functions().readv(fd, iov, iovcnt);
  done_on(w, fd);
  return ret;
}

/// As read.
ssize_t recv(int fd, void* buf, size_t len, int flags) {
  wake_through_kernel(WakeKind::Read, fd);  // may make room for a blocked writer
  if (cannot_block(fd, flags)) return functions().recv(fd, buf, len, flags);
  KernelWait w(WaitKind::Io);
  ssize_t ret = functions().recv(fd, buf, len, flags);
  done_on(w, fd);
  return ret;
}

/// As read.
ssize_t __recv_chk(int fd, void* buf, size_t len, size_t buflen, int flags) {
  wake_through_kernel(WakeKind::Read, fd);  // may make room for a blocked writer
  if (cannot_block(fd, flags)) return functions().__recv_chk(fd, buf, len, buflen, flags);
  KernelWait w(WaitKind::Io);
  ssize_t ret = functions().__recv_chk(fd, buf, len, buflen, flags);
  done_on(w, fd);
  return ret;
}

/// As read.
ssize_t recvfrom(int fd, void* buf, size_t len, int flags, struct sockaddr* from, socklen_t* from_len) {
  wake_through_kernel(WakeKind::Read, fd);  // may make room for a blocked writer
  if (cannot_block(fd, flags)) return functions().recvfrom(fd, buf, len, flags, from, from_len);
  KernelWait w(WaitKind::Io);
  ssize_t ret = functions().recvfrom(fd, buf, len, flags, from, from_len);
  done_on(w, fd);
  return ret;
}

/// As read.
ssize_t __recvfrom_chk(int fd, void* buf, size_t len, size_t buflen, int flags, struct sockaddr* from,
                       socklen_t* from_len) {
  wake_through_kernel(WakeKind::Read, fd);
  if (cannot_block(fd, flags)) return functions().__recvfrom_chk(fd, buf, len, buflen, flags, from, from_len);
  KernelWait w(WaitKind::Io);
  ssize_t ret = functions().__recvfrom_chk(fd, buf, len, buflen, flags, from, from_len);
  done_on(w, fd);
  return ret;
}

/// As read.
ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  wake_through_kernel(WakeKind::Read, fd);  // may make room for a blocked writer
  if (cannot_block(fd, flags)) return functions().recvmsg(fd, msg, flags);
  KernelWait w(WaitKind::Io);
  ssize_t ret = functions().recvmsg(fd, msg, flags);
  done_on(w, fd);
  return ret;
}

/// As read.
int recvmmsg(int fd, struct mmsghdr* vec, unsigned int vlen, int flags, struct timespec* timeout) {
  wake_through_kernel(WakeKind::Read, fd);  // may make room for a blocked writer
  if (cannot_block(fd, flags)) return functions().recvmmsg(fd, vec, vlen, flags, timeout);
  KernelWait w(WaitKind::Io);
  int ret = functions().recvmmsg(fd, vec, vlen, flags, timeout);
  done_on(w, fd);
  return ret;
}

/// As read (glibc's eventfd_read does not go through read).
int eventfd_read(int fd, eventfd_t* value) {
  if (cannot_block(fd)) return functions().eventfd_read(fd, value);
  KernelWait w(WaitKind::Io);
  int ret = functions().eventfd_read(fd, value);
  done_on(w, fd);
  return ret;
}

/// Woken by a connect from a thread of the program (claims its credit) or from outside (pays).
int accept(int fd, struct sockaddr* addr, socklen_t* addr_len) {
  if (cannot_block(fd)) return accepted(functions().accept(fd, addr, addr_len), 0);
  KernelWait w(WaitKind::Io);
  int ret = accepted(functions().accept(fd, addr, addr_len), 0);
  done_on(w, fd);  // the listener: a connect to its address ended the wait
  return ret;
}

/// As accept.
int accept4(int fd, struct sockaddr* addr, socklen_t* addr_len, int flags) {
  if (cannot_block(fd)) return accepted(functions().accept4(fd, addr, addr_len, flags), flags);
  KernelWait w(WaitKind::Io);
  int ret = accepted(functions().accept4(fd, addr, addr_len, flags), flags);
  done_on(w, fd);  // the listener: a connect to its address ended the wait
  return ret;
}

// ---- readiness: woken through any of the descriptors that became ready ----------

/// Claims the credit of a write that made one of the returned descriptors ready.
int epoll_wait(int epfd, struct epoll_event* events, int max_events, int timeout) {
  if (returns_at_once(timeout)) return functions().epoll_wait(epfd, events, max_events, timeout);
  KernelWait w(WaitKind::Poll);
  int ret = functions().epoll_wait(epfd, events, max_events, timeout);
  done_on_events(w, epfd, events, ret);
  return ret;
}

/// As epoll_wait.
int epoll_pwait(int epfd, struct epoll_event* events, int max_events, int timeout, const sigset_t* mask) {
  if (returns_at_once(timeout)) return functions().epoll_pwait(epfd, events, max_events, timeout, mask);
  KernelWait w(WaitKind::Poll);
  int ret = functions().epoll_pwait(epfd, events, max_events, timeout, mask);
  done_on_events(w, epfd, events, ret);
  return ret;
}

/// As epoll_wait.
int epoll_pwait2(int epfd, struct epoll_event* events, int max_events, const struct timespec* timeout,
                 const sigset_t* mask) {
  if (returns_at_once(timeout)) return functions().epoll_pwait2(epfd, events, max_events, timeout, mask);
  KernelWait w(WaitKind::Poll);
  int ret = functions().epoll_pwait2(epfd, events, max_events, timeout, mask);
  done_on_events(w, epfd, events, ret);
  return ret;
}

/// Notes which descriptor each registration's user data stands for (channels.h).
int epoll_ctl(int epfd, int op, int fd, struct epoll_event* event) {
  int ret = functions().epoll_ctl(epfd, op, fd, event);
  if (ret == 0) coz::epoll_registered(epfd, op, fd, event);
  return ret;
}

/// As epoll_wait.
int poll(struct pollfd* fds, nfds_t nfds, int timeout) {
  if (returns_at_once(timeout)) return functions().poll(fds, nfds, timeout);
  KernelWait w(WaitKind::Poll);
  int ret = functions().poll(fds, nfds, timeout);
  done_on_pollfds(w, fds, nfds, ret);
  return ret;
}

/// As poll.
int __poll_chk(struct pollfd* fds, nfds_t nfds, int timeout, size_t fds_len) {
  if (returns_at_once(timeout)) return functions().__poll_chk(fds, nfds, timeout, fds_len);
  KernelWait w(WaitKind::Poll);
  int ret = functions().__poll_chk(fds, nfds, timeout, fds_len);
  done_on_pollfds(w, fds, nfds, ret);
  return ret;
}

/// As poll.
int ppoll(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout, const sigset_t* mask) {
  if (returns_at_once(timeout)) return functions().ppoll(fds, nfds, timeout, mask);
  KernelWait w(WaitKind::Poll);
  int ret = functions().ppoll(fds, nfds, timeout, mask);
  done_on_pollfds(w, fds, nfds, ret);
  return ret;
}

/// As poll.
int __ppoll_chk(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout, const sigset_t* mask,
                size_t fds_len) {
  if (returns_at_once(timeout)) return functions().__ppoll_chk(fds, nfds, timeout, mask, fds_len);
  KernelWait w(WaitKind::Poll);
  int ret = functions().__ppoll_chk(fds, nfds, timeout, mask, fds_len);
  done_on_pollfds(w, fds, nfds, ret);
  return ret;
}

/// As epoll_wait, over the read and exception sets (a write set's readiness is
/// room to write, which no thread of the program hands over).
int select(int nfds, fd_set* read, fd_set* write, fd_set* except, struct timeval* timeout) {
  if (returns_at_once(timeout)) return functions().select(nfds, read, write, except, timeout);
  KernelWait w(WaitKind::Poll);
  int ret = functions().select(nfds, read, write, except, timeout);
  done_on_fdsets(w, nfds, read, except, ret);
  return ret;
}

/// As select.
int pselect(int nfds, fd_set* read, fd_set* write, fd_set* except, const struct timespec* timeout,
            const sigset_t* mask) {
  if (returns_at_once(timeout)) return functions().pselect(nfds, read, write, except, timeout, mask);
  KernelWait w(WaitKind::Poll);
  int ret = functions().pselect(nfds, read, write, except, timeout, mask);
  done_on_fdsets(w, nfds, read, except, ret);
  return ret;
}

// ---- writes: wake whoever reads the other end ----------------------------------------

/// May wake a reader of this descriptor: pay first, leave the credit. Then
/// a wait: a full pipe or socket blocks it until a reader makes room
/// (WakeKind::Read), whose credit it claims; without one, it pays what
/// accrued meanwhile, as a running thread would.
ssize_t write(int fd, const void* buf, size_t count) {
  wake_through_kernel(WakeKind::Write, fd);
  if (cannot_block(fd)) return functions().write(fd, buf, count);
  KernelWait w(WaitKind::Io, KernelWait::Timing::Untimed);
  ssize_t ret = functions().write(fd, buf, count);
  done_writing(w, fd);
  return ret;
}

/// As write.
ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  wake_through_kernel(WakeKind::Write, fd);
  if (cannot_block(fd)) return functions().writev(fd, iov, iovcnt);
  KernelWait w(WaitKind::Io, KernelWait::Timing::Untimed);
  ssize_t ret = functions().writev(fd, iov, iovcnt);
  done_writing(w, fd);
  return ret;
}

/// As write.
ssize_t send(int fd, const void* buf, size_t len, int flags) {
  wake_through_kernel(WakeKind::Write, fd);
  if (cannot_block(fd, flags)) return functions().send(fd, buf, len, flags);
  KernelWait w(WaitKind::Io, KernelWait::Timing::Untimed);
  ssize_t ret = functions().send(fd, buf, len, flags);
  done_writing(w, fd);
  return ret;
}

/// As write.
ssize_t sendto(int fd, const void* buf, size_t len, int flags, const struct sockaddr* to, socklen_t to_len) {
  wake_through_kernel(WakeKind::Write, fd);
  if (cannot_block(fd, flags)) return functions().sendto(fd, buf, len, flags, to, to_len);
  KernelWait w(WaitKind::Io, KernelWait::Timing::Untimed);
  ssize_t ret = functions().sendto(fd, buf, len, flags, to, to_len);
  done_writing(w, fd);
  return ret;
}

/// As write.
ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  wake_through_kernel(WakeKind::Write, fd);
  if (cannot_block(fd, flags)) return functions().sendmsg(fd, msg, flags);
  KernelWait w(WaitKind::Io, KernelWait::Timing::Untimed);
  ssize_t ret = functions().sendmsg(fd, msg, flags);
  done_writing(w, fd);
  return ret;
}

/// As write.
int sendmmsg(int fd, struct mmsghdr* vec, unsigned int vlen, int flags) {
  wake_through_kernel(WakeKind::Write, fd);
  return functions().sendmmsg(fd, vec, vlen, flags);
}

/// As write (glibc's eventfd_write does not go through write).
int eventfd_write(int fd, eventfd_t value) {
  wake_through_kernel(WakeKind::Write, fd);
  return functions().eventfd_write(fd, value);
}

/// Wakes a thread in accept: pay first, leave the credit. After the call,
/// the ports it joined are the program's (wake_origin.h).
int connect(int fd, const struct sockaddr* addr, socklen_t addr_len) {
  coz::wake_through_connect(fd, addr, addr_len);
  int ret = functions().connect(fd, addr, addr_len);
  if (ret == 0 || errno == EINPROGRESS) {
    int saved = errno;
    coz::note_connect(fd, addr, addr_len);
    errno = saved;
  }
  return ret;
}

/// Its port is the program's (wake_origin.h): a client thread of the program
/// connected to it is no outside.
int listen(int fd, int backlog) {
  int ret = functions().listen(fd, backlog);
  if (ret == 0) coz::note_listen(fd);
  return ret;
}

// ---- signals: woken by a signal that a thread of this process sent ---------------------

/// Claims the credit of a signal sent by a thread of this process; else pays.
int sigsuspend(const sigset_t* mask) {
  KernelWait w(WaitKind::Signal);
  int ret = functions().sigsuspend(mask);
  done_on_signal(w);
  return ret;
}

/// As sigsuspend.
int pause() {
  KernelWait w(WaitKind::Signal);
  int ret = functions().pause();
  done_on_signal(w);
  return ret;
}

/// Wakes a thread waiting for a signal: pay first, leave the credit.
int sigqueue(pid_t pid, int sig, const union sigval value) {
  if (pid == coz::sys::getpid()) wake_through_kernel(WakeKind::Signal, 0);
  else coz::catch_up();
  return functions().sigqueue(pid, sig, value);
}

/// As sigqueue.
int pthread_sigqueue(pthread_t thread, int sig, const union sigval value) {
  wake_through_kernel(WakeKind::Signal, 0);
  return functions().pthread_sigqueue(thread, sig, value);
}

// ---- child processes: another process ends the wait --------------------------------

namespace {
/// Ends a wait for a child: under `coz run --system`, a child of the run
/// that exited left its credit (wake_parent_at_exit), which the waiter
/// claims; any other child is the outside world: pays.
void done_waiting_for(KernelWait& w, pid_t child) {
  if (child > 0) w.done([child](const coz::WakeRecord& r) { return coz::is_exit_of(r, child); });
  else w.done_from_outside();
}
}  // namespace

/// Woken by a child's exit.
pid_t waitpid(pid_t pid, int* status, int options) {
  KernelWait w(WaitKind::Child);
  pid_t ret = functions().waitpid(pid, status, options);
  done_waiting_for(w, ret);
  return ret;
}

/// As waitpid.
pid_t wait(int* status) {
  KernelWait w(WaitKind::Child);
  pid_t ret = functions().wait(status);
  done_waiting_for(w, ret);
  return ret;
}

/// As waitpid.
pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  KernelWait w(WaitKind::Child);
  pid_t ret = functions().wait4(pid, status, options, usage);
  done_waiting_for(w, ret);
  return ret;
}

/// As waitpid (WNOWAIT or not: the child's exit ended the wait either way).
int waitid(idtype_t idtype, id_t id, siginfo_t* info, int options) {
  KernelWait w(WaitKind::Child);
  int ret = functions().waitid(idtype, id, info, options);
  done_waiting_for(w, ret == 0 && info ? info->si_pid : 0);
  return ret;
}

/// A process that ends without exit handlers (as a forked child often must,
/// to leave its parent's stdio buffers alone) still ends its parent's wait.
void _exit(int status) {
  coz::leave_system_at_exit();
  for (;;) coz::sys::raw_syscall6(SYS_exit_group, status);
}

/// As _exit.
void _Exit(int status) {
  coz::leave_system_at_exit();
  for (;;) coz::sys::raw_syscall6(SYS_exit_group, status);
}

// ---- file locks: woken by an unlock from a thread of the program, or another process ----

/// A blocking lock claims the credit of an unlock of the same file; an unlock pays first.
int flock(int fd, int operation) {
  if (operation & LOCK_UN) {
    wake_through_kernel(WakeKind::Unlock, fd);
    return functions().flock(fd, operation);
  }
  if (operation & LOCK_NB) return functions().flock(fd, operation);
  KernelWait w(WaitKind::FileLock);
  int ret = functions().flock(fd, operation);
  if (ret == 0) {
    done_on(w, fd);
  } else {
    w.done_from_outside();
  }
  return ret;
}

/// F_SETLKW as flock; other commands pass through. Every command's argument
/// is an int or a pointer: passed on as a pointer-sized value.
int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return fcntl_seen(functions().fcntl, fd, cmd, arg);
}

/// As fcntl (what -D_FILE_OFFSET_BITS=64 builds call).
int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  auto real_fcntl = functions().fcntl64 ? functions().fcntl64 : functions().fcntl;
  return fcntl_seen(real_fcntl, fd, cmd, arg);
}

}  // extern "C"
