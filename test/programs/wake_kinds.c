// Who pays for the delays that accrued while a thread waited?
//
// For each way one thread can wait for another (a pipe, an eventfd, a
// socket, epoll, poll, select, accept, a signal, a file lock, C11 threads;
// a pipe read at a number that was a non-blocking descriptor once)
// and for waits the outside world ends (a child process, a timer), rounds
// of: the waiter blocks; the waker spins ~20 ms on the line marked
// `selected` (run under `coz run --fixed-line <that line> --fixed-speedup 50`,
// every sample there credits a delay that every other thread owes); then the
// wake. After waking, the waiter works 3 ms of CPU time (its samples pay
// whatever it still owes) and reports how much longer than that the round
// took from the wake, less the time it waited for a core: the "extra" ms.
//
// A waiter woken by another thread of the program claims the waker's credit
// and pays nothing: extra ~0. A waiter woken from outside pays the ~10 ms
// (50% of 20 ms) that accrued while it slept, unless the round ran in a 0%
// experiment (a quarter of them) or straddled two experiments.
//
// Usage: wake_kinds [KIND...]   (default: all). Prints "KIND: e1 e2 ..." (ms).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 16
#define SPIN_MS 20
#define WORK_MS 3

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/// How long the calling thread has waited for a core, in ns (the second field
/// of its schedstat file; 0 where the kernel has none). A round's extra leaves
/// it out: a pause the runtime makes is a sleep, while a waiter that is runnable
/// but waits behind other work (a busy machine, a neighbouring test) is not
/// paying a delay. Read through a descriptor opened once per kind, after its
/// setup, so no kind's numbering of descriptors moves.
static uint64_t run_delay_ns(int schedstat_fd) {
  char buf[128];
  if (schedstat_fd < 0) return 0;
  ssize_t n = pread(schedstat_fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  buf[n] = 0;
  unsigned long long on_cpu = 0, waited = 0;
  if (sscanf(buf, "%llu %llu", &on_cpu, &waited) != 2) return 0;
  return waited;
}

static volatile uint64_t g_sink;

/// The line the experiments speed up: the waker's work before each wake.
__attribute__((noinline)) static void spin_selected(uint64_t ms) {
  uint64_t end = now_ns() + ms * 1000000ull, x = 1;
  while (now_ns() < end) for (int i = 0; i < 1000; ++i) x = x * 6364136223846793005ull + 1; // @line:selected
  g_sink = x;
}

/// The waiter's own work after waking: CPU time, so its samples pay what it owes.
__attribute__((noinline)) static void work_after_wake(void) {
  uint64_t end = thread_cpu_ns() + WORK_MS * 1000000ull, x = 1;
  while (thread_cpu_ns() < end) for (int i = 0; i < 1000; ++i) x = x * 2862933555777941757ull + 3; // @line:after_wake
  g_sink = x;
}

static void die(const char* what) {
  perror(what);
  exit(1);
}

// ---- one kind = how the waiter waits, and how it is woken -----------------------

struct kind {
  const char* name;
  void (*setup)(void);
  void (*wait)(void);  // the waiter: blocks until woken
  void (*wake)(void);  // the waker, after spinning; NULL: woken from outside (outside_at says when)
  void (*teardown)(void);
};

static int g_fd[4] = {-1, -1, -1, -1};
static int g_epfd = -1;
static pthread_t g_waiter;
static volatile uint64_t* g_shared;  // [0]: when the outside world woke the waiter (ns)
static char g_path[108];
static mtx_t g_mtx;
static cnd_t g_cnd;
static int g_cnd_flag;

static void close_all(void) {
  for (int i = 0; i < 4; ++i) {
    if (g_fd[i] >= 0) close(g_fd[i]);
    g_fd[i] = -1;
  }
  if (g_epfd >= 0) close(g_epfd);
  g_epfd = -1;
}

static void read_one(int fd) {
  char c;
  if (read(fd, &c, 1) != 1) die("read");
}

static void write_one(int fd) {
  char c = 'x';
  if (write(fd, &c, 1) != 1) die("write");
}

// pipes
static void setup_pipe(void) { if (pipe(g_fd) != 0) die("pipe"); }
static void wait_read_pipe(void) { read_one(g_fd[0]); }
static void wake_write_pipe(void) { write_one(g_fd[1]); }
static void wait_readv_pipe(void) {
  char c;
  struct iovec v = {&c, 1};
  if (readv(g_fd[0], &v, 1) != 1) die("readv");
}
static void wake_writev_pipe(void) {
  char c = 'x';
  struct iovec v = {&c, 1};
  if (writev(g_fd[1], &v, 1) != 1) die("writev");
}

// eventfds
static void setup_eventfd(void) { if ((g_fd[0] = eventfd(0, 0)) < 0) die("eventfd"); }
static void wait_read_eventfd(void) {
  uint64_t v;
  if (read(g_fd[0], &v, sizeof v) != sizeof v) die("read eventfd");
}
static void wake_write_eventfd(void) {
  uint64_t v = 1;
  if (write(g_fd[0], &v, sizeof v) != sizeof v) die("write eventfd");
}
static void wait_eventfd_read(void) {
  eventfd_t v;
  if (eventfd_read(g_fd[0], &v) != 0) die("eventfd_read");
}
static void wake_eventfd_write(void) { if (eventfd_write(g_fd[0], 1) != 0) die("eventfd_write"); }

// sockets
static void setup_socketpair(void) { if (socketpair(AF_UNIX, SOCK_STREAM, 0, g_fd) != 0) die("socketpair"); }
static void wait_recv_socket(void) {
  char c;
  if (recv(g_fd[0], &c, 1, 0) != 1) die("recv");
}
static void wake_send_socket(void) {
  char c = 'x';
  if (send(g_fd[1], &c, 1, 0) != 1) die("send");
}
static void wait_recvmsg_socket(void) {
  char c;
  struct iovec v = {&c, 1};
  struct msghdr m = {0};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  if (recvmsg(g_fd[0], &m, 0) != 1) die("recvmsg");
}
static void wake_sendmsg_socket(void) {
  char c = 'x';
  struct iovec v = {&c, 1};
  struct msghdr m = {0};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  if (sendmsg(g_fd[1], &m, 0) != 1) die("sendmsg");
}

// blocking again: a read on a descriptor that was non-blocking once (the
// runtime then skips the wait's bracket) must be a wait again once the
// number is reused or the flag cleared
static void nonblocking(int fd, int on) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) != 0) die("fcntl");
}
/// A pipe at the numbers of a non-blocking socketpair, closed.
static void setup_pipe_over_nonblocking(void) {
  int s[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s) != 0) die("socketpair");
  nonblocking(s[0], 1);
  nonblocking(s[1], 1);
  close(s[0]);
  close(s[1]);
  setup_pipe();
  if (g_fd[0] != s[0] && g_fd[0] != s[1]) die("pipe at a new number");
}
/// A pipe made non-blocking, then blocking again.
static void setup_pipe_setfl_cleared(void) {
  setup_pipe();
  nonblocking(g_fd[0], 1);
  nonblocking(g_fd[0], 0);
}
static void setup_pipe_fionbio_cleared(void) {
  setup_pipe();
  int on = 1, off = 0;
  if (ioctl(g_fd[0], FIONBIO, &on) != 0 || ioctl(g_fd[0], FIONBIO, &off) != 0) die("ioctl");
}
/// A pipe's read end dup2'ed over a non-blocking socket's number.
static void setup_pipe_dup2_over_nonblocking(void) {
  int s[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0) die("socketpair");
  nonblocking(s[0], 1);
  setup_pipe();
  if (dup2(g_fd[0], s[0]) != s[0]) die("dup2");
  close(g_fd[0]);
  close(s[1]);
  g_fd[0] = s[0];
}

/// A loopback TCP connection: g_fd[0] the accepted end (the waiter's), g_fd[1] the client's.
static void setup_tcp(void) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (listener < 0 || bind(listener, (struct sockaddr*)&a, sizeof a) != 0 || listen(listener, 4) != 0 ||
      getsockname(listener, (struct sockaddr*)&a, &len) != 0)
    die("tcp listener");
  g_fd[1] = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(g_fd[1], (struct sockaddr*)&a, sizeof a) != 0) die("connect");
  if ((g_fd[0] = accept(listener, NULL, NULL)) < 0) die("accept");
  close(listener);
}
static void wait_recvfrom_tcp(void) {
  char c;
  if (recvfrom(g_fd[0], &c, 1, 0, NULL, NULL) != 1) die("recvfrom");
}

/// accept: g_fd[2] a listening UNIX socket; each wake connects a new client.
static void setup_unix_listener(void) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(g_path, sizeof g_path, "/tmp/wake_kinds.%d.sock", (int)getpid());
  strcpy(a.sun_path, g_path);
  unlink(g_path);
  g_fd[2] = socket(AF_UNIX, SOCK_STREAM, 0);
  if (g_fd[2] < 0 || bind(g_fd[2], (struct sockaddr*)&a, sizeof a) != 0 || listen(g_fd[2], 4) != 0) die("unix listener");
}
static void wait_accept_unix(void) {
  int fd = accept(g_fd[2], NULL, NULL);
  if (fd < 0) die("accept");
  close(fd);
}
/// A listener found ready by poll, as event loops wait for connections.
static void wait_poll_accept_unix(void) {
  struct pollfd p = {.fd = g_fd[2], .events = POLLIN};
  while (poll(&p, 1, -1) != 1) {
    if (errno != EINTR) die("poll");
  }
  wait_accept_unix();
}
static void wake_connect_unix(void) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  strcpy(a.sun_path, g_path);
  if (g_fd[3] >= 0) close(g_fd[3]);
  g_fd[3] = socket(AF_UNIX, SOCK_STREAM, 0);
  if (connect(g_fd[3], (struct sockaddr*)&a, sizeof a) != 0) die("connect unix");
}
static void teardown_unix_listener(void) {
  close_all();
  unlink(g_path);
}

// readiness: epoll (with a pointer as user data), poll, select
static void setup_epoll_pipe(void) {
  setup_pipe();
  fcntl(g_fd[0], F_SETFL, O_NONBLOCK);
  g_epfd = epoll_create1(0);
  struct epoll_event e = {.events = EPOLLIN, .data.ptr = &g_fd[0]};
  if (g_epfd < 0 || epoll_ctl(g_epfd, EPOLL_CTL_ADD, g_fd[0], &e) != 0) die("epoll_ctl");
}
static void drain(int fd) {
  char buf[16];
  while (read(fd, buf, sizeof buf) > 0) {
  }
}
static void wait_epoll(void) {
  struct epoll_event e;
  if (epoll_wait(g_epfd, &e, 1, -1) != 1 || e.data.ptr != &g_fd[0]) die("epoll_wait");
  drain(g_fd[0]);
}
static void wait_epoll_pwait(void) {
  struct epoll_event e;
  if (epoll_pwait(g_epfd, &e, 1, -1, NULL) != 1) die("epoll_pwait");
  drain(g_fd[0]);
}
static void setup_epoll_eventfd(void) {
  setup_eventfd();
  g_epfd = epoll_create1(0);
  struct epoll_event e = {.events = EPOLLIN, .data.u64 = 0xfeedull};
  if (g_epfd < 0 || epoll_ctl(g_epfd, EPOLL_CTL_ADD, g_fd[0], &e) != 0) die("epoll_ctl");
}
static void wait_epoll_eventfd(void) {
  struct epoll_event e;
  if (epoll_wait(g_epfd, &e, 1, -1) != 1) die("epoll_wait");
  wait_read_eventfd();
}
static void wait_poll_socket(void) {
  struct pollfd p = {.fd = g_fd[0], .events = POLLIN};
  if (poll(&p, 1, -1) != 1) die("poll");
  wait_recv_socket();
}
static void wait_ppoll_pipe(void) {
  struct pollfd p = {.fd = g_fd[0], .events = POLLIN};
  if (ppoll(&p, 1, NULL, NULL) != 1) die("ppoll");
  read_one(g_fd[0]);
}
static void wait_select_pipe(void) {
  fd_set r;
  FD_ZERO(&r);
  FD_SET(g_fd[0], &r);
  if (select(g_fd[0] + 1, &r, NULL, NULL, NULL) != 1) die("select");
  read_one(g_fd[0]);
}
static void wait_pselect_eventfd(void) {
  fd_set r;
  FD_ZERO(&r);
  FD_SET(g_fd[0], &r);
  if (pselect(g_fd[0] + 1, &r, NULL, NULL, NULL, NULL) != 1) die("pselect");
  wait_read_eventfd();
}

// signals (SIGUSR1 blocked everywhere but where the waiter waits for it)
static void on_usr1(int sig) { (void)sig; }
static void setup_signal(void) {
  struct sigaction sa = {0};
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
}
static void wait_sigsuspend(void) {
  sigset_t none;
  sigemptyset(&none);
  sigsuspend(&none);
}
static void wait_sigwait(void) {
  sigset_t set;
  int sig;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  if (sigwait(&set, &sig) != 0) die("sigwait");
}
static void wake_pthread_kill(void) { pthread_kill(g_waiter, SIGUSR1); }
static void wake_kill(void) { kill(getpid(), SIGUSR1); }  // the waiter is the one thread not blocking it

// file locks: two open file descriptions of one file conflict, even in one process
static void setup_file_lock(void) {
  snprintf(g_path, sizeof g_path, "/tmp/wake_kinds.%d.lock", (int)getpid());
  g_fd[0] = open(g_path, O_RDWR | O_CREAT, 0600);
  g_fd[1] = open(g_path, O_RDWR);
  if (g_fd[0] < 0 || g_fd[1] < 0) die("open lock file");
}
static void teardown_file_lock(void) {
  close_all();
  unlink(g_path);
}
static void lock_before_flock(void) { if (flock(g_fd[1], LOCK_EX) != 0) die("flock"); }
static void wait_flock(void) {
  if (flock(g_fd[0], LOCK_EX) != 0) die("flock wait");
  flock(g_fd[0], LOCK_UN);
}
static void wake_flock(void) { flock(g_fd[1], LOCK_UN); }
static struct flock whole_file(short type) {
  struct flock l = {.l_type = type, .l_whence = SEEK_SET};
  return l;
}
static void lock_before_ofd(void) {
  struct flock l = whole_file(F_WRLCK);
  if (fcntl(g_fd[1], F_OFD_SETLK, &l) != 0) die("F_OFD_SETLK");
}
static void wait_ofd_lock(void) {
  struct flock l = whole_file(F_WRLCK);
  if (fcntl(g_fd[0], F_OFD_SETLKW, &l) != 0) die("F_OFD_SETLKW");
  l = whole_file(F_UNLCK);
  fcntl(g_fd[0], F_OFD_SETLK, &l);
}
static void wake_ofd_unlock(void) {
  struct flock l = whole_file(F_UNLCK);
  fcntl(g_fd[1], F_OFD_SETLK, &l);
}

// C11 threads
static void setup_c11(void) {
  mtx_init(&g_mtx, mtx_plain);
  cnd_init(&g_cnd);
  g_cnd_flag = 0;
}
static void wait_cnd(void) {
  mtx_lock(&g_mtx);
  while (!g_cnd_flag) cnd_wait(&g_cnd, &g_mtx);
  g_cnd_flag = 0;
  mtx_unlock(&g_mtx);
}
static void wake_cnd(void) {
  mtx_lock(&g_mtx);
  g_cnd_flag = 1;
  cnd_signal(&g_cnd);
  mtx_unlock(&g_mtx);
}
static void lock_before_mtx(void) { mtx_lock(&g_mtx); }
static void wait_mtx(void) {
  mtx_lock(&g_mtx);
  mtx_unlock(&g_mtx);
}
static void wake_mtx(void) { mtx_unlock(&g_mtx); }

// the outside world: a child process writes to a pipe; a timer; a child exits
static pid_t g_child = -1;
static void setup_child_writer(void) {
  setup_pipe();
  if (pipe(&g_fd[2]) != 0) die("pipe");
  g_child = fork();
  if (g_child < 0) die("fork");
  if (g_child == 0) {  // waits for "go", sleeps SPIN_MS, notes the time, writes
    close(g_fd[0]);
    close(g_fd[3]);  // the parent's end: its close ends the loop
    char c;
    while (read(g_fd[2], &c, 1) == 1) {
      struct timespec ts = {0, SPIN_MS * 1000000L};
      nanosleep(&ts, NULL);
      g_shared[0] = now_ns();
      write_one(g_fd[1]);
    }
    _exit(0);
  }
}
static void wait_child_pipe(void) {
  write_one(g_fd[3]);
  read_one(g_fd[0]);
}
static void teardown_child_writer(void) {
  close_all();
  waitpid(g_child, NULL, 0);
}
static void setup_timerfd(void) { if ((g_fd[0] = timerfd_create(CLOCK_MONOTONIC, 0)) < 0) die("timerfd"); }
static void wait_timerfd(void) {
  struct itimerspec t = {.it_value = {0, SPIN_MS * 1000000L}};
  g_shared[0] = now_ns() + SPIN_MS * 1000000ull;
  timerfd_settime(g_fd[0], 0, &t, NULL);
  uint64_t expirations;
  if (read(g_fd[0], &expirations, sizeof expirations) != sizeof expirations) die("read timerfd");
}
/// Forked before the round starts (a fork under the profiler takes a while):
/// the child waits for "go", sleeps SPIN_MS, notes the time and exits.
static pid_t g_sleeper = -1;
static void fork_sleeper(void) {
  if (pipe(g_fd) != 0) die("pipe");
  g_sleeper = fork();
  if (g_sleeper < 0) die("fork");
  if (g_sleeper == 0) {
    close(g_fd[1]);
    char c;
    if (read(g_fd[0], &c, 1) != 1) _exit(1);
    struct timespec ts = {0, SPIN_MS * 1000000L};
    nanosleep(&ts, NULL);
    g_shared[0] = now_ns();
    _exit(0);
  }
  close(g_fd[0]);
  g_fd[0] = -1;
}
static void wait_child_exit(void) {
  write_one(g_fd[1]);
  close(g_fd[1]);
  g_fd[1] = -1;
  if (waitpid(g_sleeper, NULL, 0) != g_sleeper) die("waitpid");
}

static void nothing(void) {}

static const struct kind g_kinds[] = {
    {"read_pipe", setup_pipe, wait_read_pipe, wake_write_pipe, close_all},
    {"readv_pipe", setup_pipe, wait_readv_pipe, wake_writev_pipe, close_all},
    {"read_eventfd", setup_eventfd, wait_read_eventfd, wake_write_eventfd, close_all},
    {"eventfd_read", setup_eventfd, wait_eventfd_read, wake_eventfd_write, close_all},
    {"recv_socketpair", setup_socketpair, wait_recv_socket, wake_send_socket, close_all},
    {"recvmsg_socketpair", setup_socketpair, wait_recvmsg_socket, wake_sendmsg_socket, close_all},
    {"recvfrom_tcp", setup_tcp, wait_recvfrom_tcp, wake_send_socket, close_all},
    {"accept_unix", setup_unix_listener, wait_accept_unix, wake_connect_unix, teardown_unix_listener},
    {"poll_accept_unix", setup_unix_listener, wait_poll_accept_unix, wake_connect_unix, teardown_unix_listener},
    {"epoll_pipe", setup_epoll_pipe, wait_epoll, wake_write_pipe, close_all},
    {"epoll_pwait_pipe", setup_epoll_pipe, wait_epoll_pwait, wake_write_pipe, close_all},
    {"epoll_eventfd", setup_epoll_eventfd, wait_epoll_eventfd, wake_eventfd_write, close_all},
    {"poll_socketpair", setup_socketpair, wait_poll_socket, wake_send_socket, close_all},
    {"ppoll_pipe", setup_pipe, wait_ppoll_pipe, wake_write_pipe, close_all},
    {"select_pipe", setup_pipe, wait_select_pipe, wake_write_pipe, close_all},
    {"pselect_eventfd", setup_eventfd, wait_pselect_eventfd, wake_write_eventfd, close_all},
    {"sigsuspend", setup_signal, wait_sigsuspend, wake_pthread_kill, nothing},
    {"sigwait", setup_signal, wait_sigwait, wake_kill, nothing},
    {"flock", setup_file_lock, wait_flock, wake_flock, teardown_file_lock},
    {"ofd_lock", setup_file_lock, wait_ofd_lock, wake_ofd_unlock, teardown_file_lock},
    {"c11_cnd", setup_c11, wait_cnd, wake_cnd, nothing},
    {"c11_mtx", setup_c11, wait_mtx, wake_mtx, nothing},
    {"read_pipe_over_nonblocking", setup_pipe_over_nonblocking, wait_read_pipe, wake_write_pipe, close_all},
    {"read_pipe_setfl_cleared", setup_pipe_setfl_cleared, wait_read_pipe, wake_write_pipe, close_all},
    {"read_pipe_fionbio_cleared", setup_pipe_fionbio_cleared, wait_read_pipe, wake_write_pipe, close_all},
    {"read_pipe_dup2_over_nonblocking", setup_pipe_dup2_over_nonblocking, wait_read_pipe, wake_write_pipe,
     close_all},
    // woken from outside: these pay
    {"outside_child_pipe", setup_child_writer, wait_child_pipe, NULL, teardown_child_writer},
    {"outside_timerfd", setup_timerfd, wait_timerfd, NULL, close_all},
    {"outside_waitpid", nothing, wait_child_exit, NULL, nothing},
};

// ---- the rounds ---------------------------------------------------------------

static const struct kind* g_kind;
static pthread_barrier_t g_round;
static volatile uint64_t g_woken_at;
static double g_extra_ms[ROUNDS];

/// Kinds whose waker must hold something before the waiter starts to wait.
static void before_round(void) {
  if (g_kind->wait == wait_flock) lock_before_flock();
  if (g_kind->wait == wait_ofd_lock) lock_before_ofd();
  if (g_kind->wait == wait_mtx) lock_before_mtx();
}

static void* waker(void* arg) {
  (void)arg;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, NULL);
  for (int r = 0; r < ROUNDS; ++r) {
    before_round();
    pthread_barrier_wait(&g_round);
    spin_selected(SPIN_MS);
    if (g_kind->wake) {
      g_woken_at = now_ns();
      g_kind->wake();
    }
    pthread_barrier_wait(&g_round);
  }
  return NULL;
}

static void run_kind(const struct kind* k) {
  g_kind = k;
  k->setup();
  g_waiter = pthread_self();
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  // sigsuspend and sigwait: the signal must stay pending until the waiter waits.
  pthread_sigmask(SIG_BLOCK, &usr1, NULL);
  pthread_barrier_init(&g_round, NULL, 2);
  const int schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  pthread_t w;
  if (pthread_create(&w, NULL, waker, NULL) != 0) die("pthread_create");
  for (int r = 0; r < ROUNDS; ++r) {
    if (k->wait == wait_child_exit) fork_sleeper();
    pthread_barrier_wait(&g_round);
    const uint64_t waited_before = run_delay_ns(schedstat_fd);
    k->wait();
    uint64_t woken_at = k->wake ? g_woken_at : g_shared[0];
    work_after_wake();
    const uint64_t waited_for_core = run_delay_ns(schedstat_fd) - waited_before;
    double ms = ((double)(now_ns() - woken_at) - (double)waited_for_core) / 1e6 - WORK_MS;
    g_extra_ms[r] = ms > 0 ? ms : 0;
    pthread_barrier_wait(&g_round);
  }
  pthread_join(w, NULL);
  pthread_barrier_destroy(&g_round);
  if (schedstat_fd >= 0) close(schedstat_fd);
  k->teardown();
  printf("%s:", k->name);
  for (int r = 0; r < ROUNDS; ++r) printf(" %.2f", g_extra_ms[r]);
  printf("\n");
  fflush(stdout);
}

int main(int argc, char** argv) {
  g_shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (g_shared == MAP_FAILED) die("mmap");
  size_t n = sizeof g_kinds / sizeof g_kinds[0];
  for (size_t i = 0; i < n; ++i) {
    int wanted = argc == 1;
    for (int a = 1; a < argc; ++a) wanted |= strcmp(argv[a], g_kinds[i].name) == 0;
    if (wanted) run_kind(&g_kinds[i]);
  }
  return 0;
}
