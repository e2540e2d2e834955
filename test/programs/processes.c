// Several processes of one program, for `coz run --system` (issue #17):
// one experiment across all of them. Run under
// `coz run --system --fixed-line processes.c:<selected> --fixed-speedup 50`.
//
//   processes pause SECONDS   the parent spins on the `selected` line, a
//                             forked child on another line: the parent's
//                             samples must pause the child (its `paused`).
//   processes kill            the parent counts progress; a child spinning on
//                             `selected` is SIGKILLed at 1.0 s, mid-experiment;
//                             another spins from then on and exits by itself.
//                             Prints "killed-at-ms=N" (since main began).
//   processes late            the parent counts progress for 2 s; a child
//                             exits at 0.2 s (early), another spins on
//                             `selected` from 0.5 s to 1.5 s (late).
//   processes twin SECONDS PATH
//                             a forked child execs PATH (this source built
//                             as another program) with `progress SECONDS`,
//                             and the parent does the same work: the same
//                             line and point in two programs.
//   processes progress SECONDS  counts progress (the `other` line) for SECONDS.
//   processes wake KIND       rounds of: a child spins ~20 ms on `selected`,
//                             then wakes the parent through KIND (pipe,
//                             socketpair or tcp on loopback), which works 3 ms
//                             and prints how much longer than that the round
//                             took from the wake ("KIND: e1 e2 ..." in ms), as
//                             wake_kinds.c does between threads. KIND
//                             full-pipe: the parent blocks writing a page into
//                             a full one-page pipe, and the child's read of a
//                             page makes the room that wakes it. KIND exit or
//                             _exit: the child ends each round, and the
//                             parent's waitpid returns. KIND futex: a raw
//                             FUTEX_WAKE on a word in shared memory. KIND
//                             accept, unix-accept, poll-accept: the child
//                             connects a new socket each round and the
//                             parent's accept returns (loopback TCP, a UNIX
//                             path, a listener on any address polled first).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/futex.h>
#include <coz.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t g_sink;
static double g_start;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(const char* what) {
  perror(what);
  _exit(1);
}

// Spins until `seconds` of this thread's CPU time have passed.
__attribute__((noinline)) static void spin_selected(double seconds) {
  double until = cpu_s() + seconds;
  uint64_t x = g_sink;
  while (cpu_s() < until) {
    for (int i = 0; i < 20000; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + (uint64_t)i;  // @line:selected
  }
  g_sink = x;
}

__attribute__((noinline)) static void spin_other(double seconds) {
  double until = cpu_s() + seconds;
  uint64_t x = g_sink;
  while (cpu_s() < until) {
    for (int i = 0; i < 20000; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + (uint64_t)i;  // @line:other
  }
  g_sink = x;
}

// The parent's progress until `until` (seconds since main began): units of ~2 ms.
static void count_progress_until(double until) {
  while (now_s() - g_start < until) {
    spin_other(0.002);
    COZ_PROGRESS_NAMED("unit");
  }
}

static void reap(pid_t pid, int allow_kill) {
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail("waitpid");
  }
  if (allow_kill && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) return;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "processes: child %d failed (status %d)\n", (int)pid, status);
    _exit(1);
  }
}

static pid_t start_child(void (*body)(double), double arg) {
  pid_t pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    body(arg);
    exit(0);  // not _exit: the runtime writes this process's last records at exit
  }
  return pid;
}

static void spin_forever(double unused) {
  (void)unused;
  for (;;) spin_selected(1.0);
}

static void spin_selected_until(double until) {
  while (now_s() - g_start < until) spin_selected(0.01);
}

static void spin_other_until(double until) {
  while (now_s() - g_start < until) spin_other(0.01);
}

static int run_pause(double seconds) {
  pid_t child = start_child(spin_other_until, seconds);
  // Progress from the start: experiments begun before a point was reached
  // are not recorded, and the tests count this run's experiments.
  while (now_s() - g_start < seconds) {
    spin_selected(0.01);
    COZ_PROGRESS_NAMED("unit");
  }
  reap(child, 0);
  return 0;
}

static int run_kill(void) {
  pid_t victim = start_child(spin_forever, 0);
  count_progress_until(1.0);
  if (kill(victim, SIGKILL) != 0) fail("kill");
  printf("killed-at-ms=%d\n", (int)((now_s() - g_start) * 1000));
  fflush(stdout);
  reap(victim, 1);
  pid_t next = start_child(spin_selected_until, 2.2);
  count_progress_until(2.4);
  reap(next, 0);
  return 0;
}

static int run_late(void) {
  pid_t early = start_child(spin_other_until, 0.2);
  count_progress_until(0.5);
  pid_t late = start_child(spin_selected_until, 1.5);
  count_progress_until(2.0);
  reap(early, 0);
  reap(late, 0);
  return 0;
}

// ---- wakes across processes ------------------------------------------------------

enum { kRounds = 24 };

// The parent's side of a round, once the child has woken it (`woken`, when
// the child woke it): 3 ms of work, a progress point, and how much longer
// than the work the round took from the wake, in ms.
static void end_round(double woken) {
  spin_other(0.003);
  COZ_PROGRESS_NAMED("round");
  printf(" %.2f", (now_s() - woken - 0.003) * 1000);
}

static void write_byte(int fd) {
  char c = 1;
  while (write(fd, &c, 1) != 1) {
    if (errno != EINTR) fail("write");
  }
}

static int read_byte(int fd) {
  char c;
  for (;;) {
    ssize_t r = read(fd, &c, 1);
    if (r == 1) return 1;
    if (r == 0) return 0;
    if (errno != EINTR) fail("read");
  }
}

// The child: per round, waits for the parent's go, spins, wakes the parent
// with the time of the wake (a waiter that pays, pays as it returns).
static void waker(int go, int wake) {
  while (read_byte(go)) {
    spin_selected(0.020);
    double at = now_s();
    while (write(wake, &at, sizeof at) != (ssize_t)sizeof at) {
      if (errno != EINTR) fail("write");
    }
  }
  _exit(0);
}

static double read_time(int fd) {
  double at;
  for (;;) {
    ssize_t r = read(fd, &at, sizeof at);
    if (r == (ssize_t)sizeof at) return at;
    if (r >= 0 || errno != EINTR) fail("read: waker gone");
  }
}

// Two connected descriptors per direction for KIND: [0] the parent's, [1] the child's.
static void connect_pair(const char* kind, int ends[2]) {
  if (strcmp(kind, "pipe") == 0) {
    if (pipe(ends) != 0) fail("pipe");  // [0] reads, [1] writes: the child writes
    return;
  }
  if (strcmp(kind, "socketpair") == 0) {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0) fail("socketpair");
    return;
  }
  if (strcmp(kind, "tcp") == 0) {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (listener < 0 || bind(listener, (struct sockaddr*)&addr, len) != 0 || listen(listener, 1) != 0 ||
        getsockname(listener, (struct sockaddr*)&addr, &len) != 0) {
      fail("tcp listener");
    }
    ends[1] = socket(AF_INET, SOCK_STREAM, 0);
    if (ends[1] < 0 || connect(ends[1], (struct sockaddr*)&addr, len) != 0) fail("connect");
    ends[0] = accept(listener, NULL, NULL);
    if (ends[0] < 0) fail("accept");
    close(listener);
    return;
  }
  fprintf(stderr, "processes: unknown kind %s (pipe, socketpair, tcp)\n", kind);
  _exit(2);
}

// A writer blocked on a full pipe, woken by the reader that makes room.
enum { kPage = 4096 };

static void write_all(int fd, const char* buf, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("write");
    buf += w;
    n -= (size_t)w;
  }
}

static void read_all(int fd, char* buf, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, buf, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail("read");
    buf += r;
    n -= (size_t)r;
  }
}

static int run_full_pipe(void) {
  double* woken_at = mmap(NULL, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  int p[2];
  if (woken_at == MAP_FAILED || pipe(p) != 0 || fcntl(p[1], F_SETPIPE_SZ, kPage) < 0) fail("full pipe");
  static char page[kPage];
  write_all(p[1], page, kPage);  // full: every write of a page blocks until the child reads one
  pid_t child = fork();
  if (child < 0) fail("fork");
  if (child == 0) {
    close(p[1]);
    for (int round = 0; round < kRounds; ++round) {
      spin_selected(0.020);
      *woken_at = now_s();
      read_all(p[0], page, kPage);
    }
    exit(0);
  }
  close(p[0]);
  printf("full-pipe:");
  for (int round = 0; round < kRounds; ++round) {
    write_all(p[1], page, kPage);
    end_round(*woken_at);
  }
  printf("\n");
  close(p[1]);
  reap(child, 0);
  return 0;
}

// Each round a child spins ~20 ms on `selected`, notes the time and ends
// (exit, or _exit without exit handlers); the parent's waitpid returns.
static int run_exit_wake(int hard) {
  double* woken_at = mmap(NULL, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (woken_at == MAP_FAILED) fail("mmap");
  printf("%s:", hard ? "_exit" : "exit");
  for (int round = 0; round < kRounds; ++round) {
    fflush(stdout);  // not again in the child's exit
    pid_t child = fork();
    if (child < 0) fail("fork");
    if (child == 0) {
      spin_selected(0.020);
      *woken_at = now_s();
      if (hard) _exit(0);
      exit(0);
    }
    reap(child, 0);
    end_round(*woken_at);
  }
  printf("\n");
  return 0;
}

// Each round the child spins ~20 ms on `selected`, then wakes the parent
// with a raw FUTEX_WAKE on a word in memory both share (MAP_SHARED, so a
// shared futex: the kernel keys it by the page, not by the process).
static int run_futex_wake(void) {
  struct Shared {
    uint32_t go, done;
    double woken_at;
  };
  struct Shared* sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) fail("mmap");
  pid_t child = fork();
  if (child < 0) fail("fork");
  if (child == 0) {
    for (uint32_t round = 1; round <= kRounds; ++round) {
      while (__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE) < round) syscall(SYS_futex, &sh->go, FUTEX_WAIT, round - 1, NULL, NULL, 0);
      spin_selected(0.020);
      sh->woken_at = now_s();
      __atomic_store_n(&sh->done, round, __ATOMIC_RELEASE);
      syscall(SYS_futex, &sh->done, FUTEX_WAKE, 1, NULL, NULL, 0);
    }
    exit(0);
  }
  printf("futex:");
  for (uint32_t round = 1; round <= kRounds; ++round) {
    __atomic_store_n(&sh->go, round, __ATOMIC_RELEASE);
    syscall(SYS_futex, &sh->go, FUTEX_WAKE, 1, NULL, NULL, 0);
    while (__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE) < round) syscall(SYS_futex, &sh->done, FUTEX_WAIT, round - 1, NULL, NULL, 0);
    end_round(sh->woken_at);
  }
  printf("\n");
  reap(child, 0);
  return 0;
}

// A listener for run_accept_wake: loopback TCP on a port the kernel picks
// (bound to any address for "poll-accept", so the listener's own address is
// not the one clients connect to), or a UNIX socket at a path.
static int listen_for(const char* kind, struct sockaddr_storage* addr, socklen_t* len) {
  if (strcmp(kind, "unix-accept") == 0) {
    struct sockaddr_un* un = (struct sockaddr_un*)addr;
    memset(un, 0, sizeof *un);
    un->sun_family = AF_UNIX;
    snprintf(un->sun_path, sizeof un->sun_path, "/tmp/coz-processes-%d.sock", (int)getpid());
    unlink(un->sun_path);
    // The length a client would pass: the path and its NUL, not the whole structure.
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(un->sun_path) + 1);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0 || bind(s, (struct sockaddr*)un, *len) != 0 || listen(s, 4) != 0) fail("unix listener");
    return s;
  }
  struct sockaddr_in* in = (struct sockaddr_in*)addr;
  memset(in, 0, sizeof *in);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(strcmp(kind, "poll-accept") == 0 ? INADDR_ANY : INADDR_LOOPBACK);
  *len = sizeof *in;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0 || bind(s, (struct sockaddr*)in, *len) != 0 || listen(s, 4) != 0 ||
      getsockname(s, (struct sockaddr*)in, len) != 0) {
    fail("tcp listener");
  }
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // where the child connects
  return s;
}

// Each round the child spins ~20 ms on `selected`, notes the time and
// connects a new socket to the parent's listener; the parent's accept (for
// "poll-accept", a poll on the listener first) returns.
static int run_accept_wake(const char* kind) {
  double* woken_at = mmap(NULL, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (woken_at == MAP_FAILED) fail("mmap");
  struct sockaddr_storage addr;
  socklen_t len;
  int listener = listen_for(kind, &addr, &len);
  pid_t child = fork();
  if (child < 0) fail("fork");
  if (child == 0) {
    close(listener);
    for (int round = 0; round < kRounds; ++round) {
      spin_selected(0.020);
      int s = socket(addr.ss_family, SOCK_STREAM, 0);
      *woken_at = now_s();
      if (s < 0 || connect(s, (struct sockaddr*)&addr, len) != 0) fail("connect");
      read_byte(s);  // the parent closes its end once the round is over
      close(s);
    }
    exit(0);
  }
  printf("%s:", kind);
  for (int round = 0; round < kRounds; ++round) {
    if (strcmp(kind, "poll-accept") == 0) {
      struct pollfd p = {.fd = listener, .events = POLLIN};
      while (poll(&p, 1, -1) != 1) {
        if (errno != EINTR) fail("poll");
      }
    }
    int c = accept(listener, NULL, NULL);
    if (c < 0) fail("accept");
    end_round(*woken_at);
    close(c);
  }
  printf("\n");
  close(listener);
  if (addr.ss_family == AF_UNIX) unlink(((struct sockaddr_un*)&addr)->sun_path);
  reap(child, 0);
  return 0;
}

static int run_wake(const char* kind) {
  if (strstr(kind, "accept") != NULL) return run_accept_wake(kind);
  if (strcmp(kind, "futex") == 0) return run_futex_wake();
  if (strcmp(kind, "full-pipe") == 0) return run_full_pipe();
  if (strcmp(kind, "exit") == 0 || strcmp(kind, "_exit") == 0) return run_exit_wake(kind[0] == '_');
  int go[2], wake[2];
  if (pipe(go) != 0) fail("pipe");
  connect_pair(kind, wake);
  pid_t child = fork();
  if (child < 0) fail("fork");
  if (child == 0) {
    close(go[1]);
    close(wake[0]);
    waker(go[0], wake[1]);
  }
  close(go[0]);
  close(wake[1]);
  printf("%s:", kind);
  for (int round = 0; round < kRounds; ++round) {
    write_byte(go[1]);
    end_round(read_time(wake[0]));
  }
  printf("\n");
  close(go[1]);
  reap(child, 0);
  return 0;
}

static int run_twin(double seconds, const char* twin) {
  pid_t child = fork();
  if (child < 0) fail("fork");
  if (child == 0) {
    char arg[32];
    snprintf(arg, sizeof arg, "%g", seconds);
    execl(twin, twin, "progress", arg, (char*)NULL);
    fail("execl");
  }
  count_progress_until(seconds);
  reap(child, 0);
  return 0;
}

int main(int argc, char** argv) {
  g_start = now_s();
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "pause") == 0 && argc > 2) return run_pause(atof(argv[2]));
  if (strcmp(mode, "kill") == 0) return run_kill();
  if (strcmp(mode, "late") == 0) return run_late();
  if (strcmp(mode, "wake") == 0 && argc > 2) return run_wake(argv[2]);
  if (strcmp(mode, "twin") == 0 && argc > 3) return run_twin(atof(argv[2]), argv[3]);
  if (strcmp(mode, "progress") == 0 && argc > 2) {
    count_progress_until(atof(argv[2]));
    return 0;
  }
  fprintf(stderr, "usage: processes pause SECONDS | kill | late | wake pipe|socketpair|tcp|full-pipe|exit|_exit|futex | twin SECONDS PATH"
                  " | progress SECONDS\n");
  return 2;
}
