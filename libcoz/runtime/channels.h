// Which descriptor a wake reached: does a write, connect or unlock on
// descriptor W (a WakeBoard record) end a wait on descriptor R?
//
// Decided by the kernel objects behind the numbers, asked only after a wait
// during which delays accrued (outside speedup experiments, never; in one
// on a busy line, nearly every wait), never on the write path. W is named
// by what channel_id remembers of it, so that checking a record costs a
// load once W is known (a system call per record cost memcached ~9% of its
// throughput in speedup experiments):
// - the same number, when R is neither a pipe nor a socket (an eventfd, an
//   io_uring, a file lock's file);
// - a pipe: both ends have the same inode on pipefs;
// - a connected socket: W's local and peer addresses are R's peer and
//   local ones (TCP and UDP on loopback exactly; UNIX sockets by path, and
//   unnamed ones, such as a socketpair's, match any unnamed pair: the
//   nearest the kernel tells without sock_diag);
// - a file lock: the same inode;
// - a listening socket (in accept, or found ready by poll or epoll_wait):
//   a connect to its own address, by port or path (connect_target_id).
// A descriptor closed or reused before the check does not match: the
// waiter pays, as if woken from outside.
#pragma once

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cstdint>

#include "futex_lock.h"
#include "wake_board.h"

namespace coz {

/// What a waiter knows about the descriptor it waited on, looked up once.
class WaitedChannel {
 public:
  explicit WaitedChannel(int fd);
  /// Whether `record` (a write, connect, unlock or ring submission) reached
  /// this descriptor. A foreign record (another process's, `coz run
  /// --system`) by its channel id alone; a connect, when this is a
  /// listening socket, by the address it connected to, which is this one's
  /// own (another process's connect names it: its socket has no name yet).
  bool reached_by(const WakeRecord& record) const;

  /// How the kind of descriptor is kept in the low bits of a remembered name.
  static constexpr uint64_t pipe_code = 1, socket_code = 2, other_code = 3;

 private:
  int fd_;
  /// The far end's name as channel_id gives it (a socket's peer and local
  /// addresses; else the inode), without the low bits that hold the Type.
  uint64_t channel_id_ = 0;
  enum class Type : uint64_t { Unknown = 0, Pipe = pipe_code, Socket = socket_code, Other = other_code };
  Type type_ = Type::Unknown;
};

/// The kernel object a wake through descriptor `fd` goes through, named the
/// same in every process: a pipe, FIFO, eventfd or locked file by its inode;
/// a connected socket by its local and peer addresses (which its peer knows
/// the other way round). 0 when it cannot be told. Names each record a
/// waiter checks, and goes on the board of `coz run --system`, whose
/// processes cannot look at each other's descriptors. Remembered per
/// descriptor (descriptor_memo.h) until forget_channel says it was closed.
uint64_t channel_id(int fd);
/// What a `connect` to `addr` posts on the board of `coz run --system`:
/// the address it connects to, by family and port for TCP and UDP (the
/// listener may be bound to any address, and an IPv4 client of an IPv6
/// listener is seen there as a mapped address) and by path for UNIX
/// sockets. The connecting socket has no name yet: its wake comes before
/// the call binds it. 0 for other families and unnamed addresses.
uint64_t connect_target_id(const sockaddr* addr, socklen_t len);
/// After `fd` was closed, replaced (dup2, dup3) or returned by accept; with
/// what wake_origin.h and nonblocking_set.h learned of it.
void forget_channel(int fd);
/// After the descriptors from `first` to `last` (inclusive) were closed.
void forget_channels(unsigned first, unsigned last);

/// After the kernel said whether `fd` is non-blocking (nonblocking_set.h).
void note_nonblocking(int fd, bool nonblocking);
/// Whether a call on `fd` cannot block: the program made it non-blocking,
/// as far as the runtime saw (nonblocking_set.h). No wait bracket then.
bool never_blocks(int fd);

/// A thread's own signals: whether `record` is a signal to the thread `tid`
/// or to its whole process.
bool signal_reaches(const WakeRecord& record, int tid);

// ---- epoll: which descriptor an event's user data stands for ----------------
// epoll_wait returns the program's `data` (often a pointer), not the
// descriptor; epoll_ctl's wrapper notes which descriptor each one names.

void epoll_registered(int epfd, int op, int fd, const epoll_event* event);
/// The descriptor registered in `epfd` with `data`; -1 if unknown (then the
/// caller may try data.fd, which libevent and libuv use).
int epoll_descriptor(int epfd, uint64_t data);
/// The registry's lock, for the runtime's fork handlers (runtime.cpp), which
/// hold every lock of the runtime across fork(). The registrations stay in
/// a child: it inherits the epoll descriptors.
FutexLock& epoll_registry_lock();

}  // namespace coz
