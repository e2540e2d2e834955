/* fd_reuse: a program that closes every descriptor it did not open itself,
 * then opens its own files, as daemons and sandboxes do at start-up. The
 * numbers it closes may be the profiler's; the numbers it opens next are
 * the lowest free ones, so any descriptor number the profiler kept and
 * acts on later (writing records, ioctl, fcntl, close at thread exit)
 * would now be one of the program's files.
 *
 * Usage: fd_reuse DIR [--threads N] [--files N] [--ms MS]
 *                     [--close none|loop|range|syscall|closefrom|procfd] [--reopen 1]
 *
 *   1. starts N threads (their samplers are opened now), which wait;
 *   2. closes every descriptor from 3 up: one close() each up to
 *      sysconf(_SC_OPEN_MAX) (loop), close_range(3, ~0U, 0) (range), the
 *      same through syscall() (syscall), closefrom(3), or one close() for
 *      each number /proc/self/fd lists (procfd, as crashpad and fd-leak
 *      checkers do: a failed close is printed);
 *   3. opens DIR/file.0 .. file.{N-1} with O_APPEND | O_NONBLOCK;
 *   4. the threads and main work MS ms each (samples, experiments); with
 *      --reopen 1, main's work is opening and closing DIR/probe over and
 *      over: each open must get the lowest free number, the one after the
 *      files, however the profiler's work meanwhile (a descriptor of its
 *      own opened even for a moment would take that number);
 *   5. main joins the threads, checks each file still has its flags, writes
 *      one line to each, and reads each back: it must hold that line only.
 *
 * Prints "fds=FIRST-LAST flags-kept=K written=W foreign=F" (after
 * "renumbered=R" with --reopen: opens that got another number) and exits 0, or
 * prints what went wrong ("write file.3: Bad file descriptor") and exits 1. */
#define _GNU_SOURCE
#include <coz.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 64
#define MAX_THREADS 64

static pthread_barrier_t g_started, g_opened;
static long g_ms = 400;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU work for `ms` ms, a progress point every ~1 ms. */
static uint64_t work(long ms) {
  uint64_t x = 1;
  double end = now_ms() + (double)ms;
  while (now_ms() < end) {
    for (int i = 0; i < 100000; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + (uint64_t)i;  // @line:fd_work
    COZ_PROGRESS_NAMED("fd_reuse");
  }
  return x;
}

/* Opens and closes `path` for `ms` ms; returns how many opens did not get
 * `expected`, the lowest free number. */
static long reopen(const char* path, int expected, long ms) {
  long renumbered = 0;
  double end = now_ms() + (double)ms;
  for (long i = 0; now_ms() < end; ++i) {
    int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);  // @line:fd_reopen
    if (fd != expected) ++renumbered;
    if (fd >= 0) close(fd);
    if (i % 1000 == 999) COZ_PROGRESS_NAMED("fd_reuse");
  }
  return renumbered;
}

static void* thread_main(void* arg) {
  (void)arg;
  pthread_barrier_wait(&g_started);
  pthread_barrier_wait(&g_opened);
  static volatile uint64_t sink;
  sink = work(g_ms);
  return NULL;
}

static void close_from_3(const char* how) {
  if (strcmp(how, "loop") == 0) {
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < max; ++fd) close((int)fd);
  } else if (strcmp(how, "range") == 0) {
    if (close_range(3, ~0U, 0) != 0) perror("close_range");
  } else if (strcmp(how, "syscall") == 0) {
    if (syscall(SYS_close_range, 3, ~0U, 0) != 0) perror("syscall(close_range)");
  } else if (strcmp(how, "closefrom") == 0) {
    closefrom(3);
  } else if (strcmp(how, "procfd") == 0) {
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return perror("/proc/self/fd");
    int listed[4096], n = 0;
    for (struct dirent* e; (e = readdir(dir)) != NULL && n < 4096;) {
      int fd = atoi(e->d_name);
      if (e->d_name[0] != '.' && fd >= 3 && fd != dirfd(dir)) listed[n++] = fd;
    }
    closedir(dir);
    for (int i = 0; i < n; ++i) {
      if (close(listed[i]) != 0) fprintf(stderr, "fd_reuse: close %d: %s\n", listed[i], strerror(errno));
    }
  } else if (strcmp(how, "none") != 0) {
    fprintf(stderr, "fd_reuse: unknown --close %s\n", how);
    exit(2);
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fd_reuse DIR [--threads N] [--files N] [--ms MS] [--close HOW] [--reopen 1]\n");
    return 2;
  }
  const char* dir = argv[1];
  int threads = 0, files = 1, reopening = 0;
  const char* how = "range";
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--files") == 0) files = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--ms") == 0) g_ms = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--close") == 0) how = argv[i + 1];
    else if (strcmp(argv[i], "--reopen") == 0) reopening = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "fd_reuse: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (threads < 0 || threads > MAX_THREADS || files < 1 || files > MAX_FILES) return 2;

  pthread_barrier_init(&g_started, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&g_opened, NULL, (unsigned)threads + 1);
  pthread_t tids[MAX_THREADS];
  for (int i = 0; i < threads; ++i) pthread_create(&tids[i], NULL, thread_main, NULL);
  pthread_barrier_wait(&g_started);

  close_from_3(how);
  int fds[MAX_FILES];
  char paths[MAX_FILES][4096];
  for (int i = 0; i < files; ++i) {
    snprintf(paths[i], sizeof paths[i], "%s/file.%d", dir, i);
    fds[i] = open(paths[i], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fds[i] < 0) {
      printf("open file.%d: %s\n", i, strerror(errno));
      return 1;
    }
  }
  pthread_barrier_wait(&g_opened);
  static volatile uint64_t sink;
  if (reopening) {
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/probe", dir);
    printf("renumbered=%ld\n", reopen(probe, fds[files - 1] + 1, g_ms));
  } else {
    sink = work(g_ms);
  }
  for (int i = 0; i < threads; ++i) pthread_join(tids[i], NULL);

  int kept = 0, written = 0, foreign = 0, status = 0;
  for (int i = 0; i < files; ++i) {
    int flags = fcntl(fds[i], F_GETFL);
    if (flags >= 0 && (flags & O_APPEND) && (flags & O_NONBLOCK)) {
      ++kept;
    } else {
      printf("file.%d lost its flags: %s\n", i, flags < 0 ? strerror(errno) : "O_APPEND or O_NONBLOCK cleared");
      status = 1;
    }
    char line[64];
    int n = snprintf(line, sizeof line, "file.%d\n", i);
    if (write(fds[i], line, (size_t)n) == n) {
      ++written;
    } else {
      printf("write file.%d: %s\n", i, strerror(errno));
      status = 1;
    }
    /* The file must hold the program's line and nothing else. */
    FILE* in = fopen(paths[i], "r");
    char content[65536];
    size_t got = in ? fread(content, 1, sizeof content, in) : 0;
    if (in) fclose(in);
    if (got != (size_t)n || memcmp(content, line, (size_t)n) != 0) {
      size_t shown = got < 120 ? got : 120;
      printf("file.%d holds %zu bytes that are not the program's: %.*s\n", i, got, (int)shown, content);
      ++foreign;
      status = 1;
    }
  }
  printf("fds=%d-%d flags-kept=%d written=%d foreign=%d\n", fds[0], fds[files - 1], kept, written, foreign);
  return status;
}
