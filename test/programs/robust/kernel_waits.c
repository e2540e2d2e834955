/* kernel_waits: system calls that work in the kernel and then wait, where a
 * signal raised during the work would cut the wait short: a blocking write
 * of 1 MiB to a pipe (it copies what fits, then sleeps for room, and a
 * pending signal makes it return a short count), and poll() over many
 * copies of a descriptor that never becomes ready (it scans them all, then
 * sleeps for 1 ms, and a pending signal makes it fail with EINTR, which
 * SA_RESTART does not restart). Where the profiler samples the time in the
 * kernel, its samples land in that work; none may reach the program before
 * the call returns (test/integration/ownership_signals_test.cpp).
 *
 * Usage: kernel_waits [--ms N] (each phase runs ~N ms of wall time; default 400)
 *
 * Prints "kernel_waits writes=W short=S polls=P eintr=E"; exits 0 when
 * S == 0 and E == 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum { kWriteBytes = 1 << 20, kReadBytes = 64 << 10, kMaxPollFds = 4096 };

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int g_pipe[2];

/* Drains the pipe in 64 KiB reads until the writer closes it. */
static void* reader(void* arg) {
  (void)arg;
  static char buffer[kReadBytes];
  for (;;) {
    ssize_t n = read(g_pipe[0], buffer, sizeof buffer);
    if (n == 0) return NULL;
    if (n < 0 && errno != EINTR) {
      perror("read");
      exit(2);
    }
  }
}

int main(int argc, char** argv) {
  long ms = 400;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
      ms = atol(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--ms N]\n", argv[0]);
      return 2;
    }
  }
  const uint64_t phase_ns = (uint64_t)ms * 1000000ull;

  /* Writes: each copies up to the pipe's capacity, sleeps for room, and so on. */
  if (pipe(g_pipe) != 0) return perror("pipe"), 2;
  /* A pipe as large as a write (where the system allows it): each write then
   * copies up to 1 MiB before it waits, where a 64 KiB pipe made the reader
   * do most of the copying and left the writes 40-100 samples, too few for
   * the test to tell a run that sampled them from one that did not. */
  (void)fcntl(g_pipe[1], F_SETPIPE_SZ, kWriteBytes);
  pthread_t drain;
  if (pthread_create(&drain, NULL, reader, NULL) != 0) return 2;
  static char chunk[kWriteBytes];
  memset(chunk, 'x', sizeof chunk);
  long writes = 0, short_writes = 0;
  for (uint64_t end = now_ns() + phase_ns; now_ns() < end; ++writes) {
    ssize_t n = write(g_pipe[1], chunk, sizeof chunk);  // @line:work
    if (n < 0 && errno != EINTR) return perror("write"), 2;
    if (n != (ssize_t)sizeof chunk) ++short_writes;
  }
  close(g_pipe[1]);
  pthread_join(drain, NULL);

  /* Polls: many copies of a read end nobody writes to (poll takes any
   * descriptor several times), within the descriptor limit (poll's bound). */
  int idle[2];
  if (pipe(idle) != 0) return perror("pipe"), 2;
  struct rlimit limit;
  nfds_t count = kMaxPollFds;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < count) count = (nfds_t)limit.rlim_cur;
  static struct pollfd fds[kMaxPollFds];
  for (nfds_t i = 0; i < count; ++i) fds[i] = (struct pollfd){.fd = idle[0], .events = POLLIN};
  long polls = 0, eintr = 0;
  for (uint64_t end = now_ns() + phase_ns; now_ns() < end; ++polls) {
    int ready = poll(fds, count, 1);
    if (ready < 0 && errno == EINTR) ++eintr;
    else if (ready != 0) return perror("poll"), 2;
  }

  printf("kernel_waits writes=%ld short=%ld polls=%ld eintr=%ld\n", writes, short_writes, polls, eintr);
  return short_writes == 0 && eintr == 0 ? 0 : 1;
}
