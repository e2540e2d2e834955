// fork_sleepers: a multithreaded program that forks children that sleep.
//
// Four threads keep doing what a server's threads do: work down a deep
// recursion (so the profiler has samples and stacks to write),
// short sleeps, a contended mutex, short threads started and joined.
// Meanwhile the main thread forks --forks children one after the other;
// each child sleeps in short steps (usleep), starts and joins threads, and
// exits with status 0. A child that has not exited within --child-ms is
// killed and counted as hung.
//
// Prints "fork_sleepers forks=N ok=K hung=H" and exits 0 when every child
// exited with status 0 in time, 1 otherwise.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int g_stop;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t g_sink;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void spin(uint64_t n) {
  uint64_t x = g_sink;
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;
  g_sink = x;
}

/// Work at the bottom of a recursion `depth` calls deep.
__attribute__((noinline)) static uint64_t descend(uint64_t x, int depth, uint64_t path) {
  if (depth == 0) {
    spin(3000);
    return x + g_sink;
  }
  uint64_t y;
  if (path & 1) {
    y = descend(x + 1, depth - 1, path >> 1);
  } else {
    y = descend(x + 2, depth - 1, path >> 1);
  }
  return y ^ (uint64_t)depth;  // not a tail call: every level keeps its frame
}

static void* nothing(void* arg) { return arg; }

static void short_thread(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, nothing, NULL) == 0) pthread_join(t, NULL);
}

/// A parent thread: works, sleeps, contends for the mutex, starts short threads.
static void* busy(void* arg) {
  uint64_t path = (uintptr_t)arg;
  while (!atomic_load(&g_stop)) {
    path = path * 6364136223846793005ULL + 1442695040888963407ULL;
    g_sink += descend(path, 10, path >> 20);
    usleep(50);
    pthread_mutex_lock(&g_lock);
    spin(2000);
    pthread_mutex_unlock(&g_lock);
    short_thread();
  }
  return NULL;
}

/// What each child does: sleeps in steps, starts threads, exits 0.
static void child(void) {
  for (int i = 0; i < 20; ++i) {
    usleep(200);
    short_thread();
  }
  exit(0);
}

/// 0: exited with status 0 within `limit_ms`; 1: any other ending; 2: hung (killed).
static int reap(pid_t pid, double limit_ms) {
  const double deadline = now_ms() + limit_ms;
  int status = 0;
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
    if (done < 0 && errno != EINTR) return 1;
    if (now_ms() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return 2;
    }
    usleep(1000);
  }
}

int main(int argc, char** argv) {
  int forks = 12;
  double child_ms = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--forks") == 0) forks = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--child-ms") == 0) child_ms = atof(argv[i + 1]);
  }
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) pthread_create(&threads[i], NULL, busy, (void*)(uintptr_t)(i + 1));
  usleep(20000);  // the threads are busy before the first fork
  int ok = 0, hung = 0;
  for (int i = 0; i < forks; ++i) {
    pid_t pid = fork();
    if (pid == 0) child();
    if (pid < 0) continue;
    int outcome = reap(pid, child_ms);
    ok += outcome == 0;
    hung += outcome == 2;
    usleep(2000);
  }
  atomic_store(&g_stop, 1);
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  printf("fork_sleepers forks=%d ok=%d hung=%d\n", forks, ok, hung);
  return ok == forks ? 0 : 1;
}
