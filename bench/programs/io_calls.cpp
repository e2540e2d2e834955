// io_calls: the cost of the interposed I/O calls on a program's own path,
// one thread, nothing ever blocking. For each kind, a loop of calls timed
// with CLOCK_MONOTONIC; prints "io_calls: KIND=NS" (ns per call) on stderr.
//
//   pipe      write 1 byte to a pipe, read it back (ns per call: per write or read)
//   eventfd   eventfd_write 1, eventfd_read it back
//   file_write write 64 bytes to a regular file (rewound every 4,096 writes)
//   file_read read 64 bytes from a regular file (rewound likewise)
//   epoll     epoll_wait on one descriptor that is always ready, timeout 0
//   epoll_wait_ready   the same with no timeout (-1): an event loop's turn
//             when work is waiting, which returns at once but could block
//   socket_nonblocking  sendmsg 16 bytes on a non-blocking socketpair, read
//             them back (an event loop's request and reply: memcached's)
//
// The loops are the lines a --fixed-line run selects (@line:pipe_loop), so
// that during an experiment the thread credits itself and never pauses:
// what is measured is the wrapper, not the delays.
// Usage: io_calls [-n CALLS]; default 400,000 per kind.
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "program_common.h"

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    std::exit(1);
  }
}

void report(const char* kind, uint64_t start, uint64_t calls) {
  std::fprintf(stderr, "io_calls: %s=%.1f\n", kind, static_cast<double>(now_ns() - start) / static_cast<double>(calls));
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, 400'000);
  const uint64_t n = args.n;
  char byte = 'x';
  char buf[64] = {};

  int p[2];
  check(pipe(p) == 0, "pipe");
  uint64_t start = now_ns();
  for (uint64_t i = 0; i < n; ++i) check(write(p[1], &byte, 1) == 1 && read(p[0], &byte, 1) == 1, "pipe"); // @line:pipe_loop
  report("pipe", start, 2 * n);

  int efd = eventfd(0, 0);
  check(efd >= 0, "eventfd");
  eventfd_t value;
  start = now_ns();
  for (uint64_t i = 0; i < n; ++i) check(eventfd_write(efd, 1) == 0 && eventfd_read(efd, &value) == 0, "eventfd"); // @line:eventfd_loop
  report("eventfd", start, 2 * n);

  char path[] = "/tmp/io_calls.XXXXXX";
  int fd = mkstemp(path);
  check(fd >= 0, "mkstemp");
  unlink(path);
  start = now_ns();
  for (uint64_t i = 0; i < n; ++i) { check(write(fd, buf, sizeof buf) == sizeof buf, "write"); if (i % 4096 == 4095) lseek(fd, 0, SEEK_SET); } // @line:file_write_loop
  report("file_write", start, n);
  start = now_ns();
  for (uint64_t i = 0; i < n; ++i) { if (i % 4096 == 0) lseek(fd, 0, SEEK_SET); check(read(fd, buf, sizeof buf) == sizeof buf, "read"); } // @line:file_read_loop
  report("file_read", start, n);

  check(write(p[1], &byte, 1) == 1, "pipe");  // ready to read from now on (level-triggered)
  int ep = epoll_create1(0);
  epoll_event ready = {};
  ready.events = EPOLLIN;
  ready.data.u64 = 42;
  check(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ready) == 0, "epoll");
  start = now_ns();
  for (uint64_t i = 0; i < n; ++i) check(epoll_wait(ep, &ready, 1, 0) == 1, "epoll_wait"); // @line:epoll_loop
  report("epoll", start, n);
  start = now_ns();
  for (uint64_t i = 0; i < n; ++i) check(epoll_wait(ep, &ready, 1, -1) == 1, "epoll_wait"); // @line:epoll_wait_ready_loop
  report("epoll_wait_ready", start, n);

  int sv[2];
  check(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  for (int end : sv) check(fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) == 0, "fcntl");
  iovec request = {buf, 16};
  msghdr message = {};
  message.msg_iov = &request;
  message.msg_iovlen = 1;
  start = now_ns();
  for (uint64_t i = 0; i < n; ++i) check(sendmsg(sv[0], &message, 0) == 16 && read(sv[1], buf, sizeof buf) == 16, "socket"); // @line:socket_nonblocking_loop
  report("socket_nonblocking", start, 2 * n);
  return 0;
}
