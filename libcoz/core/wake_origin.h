// Who can end a wait on a descriptor: a thread of the program, or only
// something outside it?
//
// A thread that switches often pays its trap event at every switch, and a
// CPU-time timer samples it for nothing there but only on the scheduler's
// tick, crediting several periods' delays at once (sample_policy.h,
// switch_verdict). That lateness matters only to the threads of the program
// that wait on this one; a thread woken by a client over TCP hands its work
// to no one who waits on its delays. So a thread that switches often sorts
// the waits it blocks in by this answer, and one woken mostly from outside
// moves to a timer at a lower rate (COZ_TIMER_SWITCH_RATE_OUTSIDE; off by
// default, docs/lifecycle.md says why).
//
// Told from the kernel object behind the descriptor, never from who really
// woke it (known only in a speedup experiment, from the WakeBoard):
// - a TCP or UDP socket is outside unless its peer's port is one of this
//   process's (a connect of its own, or a port it listens on): a client
//   thread of the program connected over loopback is the program;
// - a listening socket is outside unless this process connected to its port;
// - a terminal or other character device is outside;
// - everything else may be the program's: a pipe, an eventfd, a UNIX socket
//   (a socketpair between threads), an unconnected socket.
// The ports are known by the interposed connect and listen, and are never
// forgotten: a port reused by another process later reads as the program's,
// which only keeps a thread on its trap event, as before this sort.
// Under `coz run --system` the peer may be another process of the run: the
// caller does not sort there.
//
// Each descriptor's kind is learned once (an fstat, up to three socket
// calls) and remembered until the interposed close family forgets it
// (forget_wake_origin, with the channels of channels.h); the ports are
// looked up at every answer, so a connect that comes after the answer was
// first learned is seen. Lock-free, async-signal-safe once learned.
#pragma once

#include <sys/socket.h>

namespace coz {

/// Whether only something outside the program can make `fd` ready (above).
bool woken_only_from_outside(int fd);

/// After a connect of socket `fd` to `addr` (succeeded or under way): its own
/// port is now a peer the program's other sockets may see, and `addr`'s port
/// one of its listeners may be reached by. Forgets what `fd` was.
void note_connect(int fd, const sockaddr* addr, socklen_t addr_len);
/// After `fd` began to listen: its port is the program's.
void note_listen(int fd);

/// After `fd` was closed or replaced; after the descriptors from `first` to
/// `last` (inclusive) were.
void forget_wake_origin(int fd);
void forget_wake_origins(unsigned first, unsigned last);

}  // namespace coz
