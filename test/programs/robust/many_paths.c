// many_paths: threads that descend a binary tree of calls, each descent
// down a random path, so that samples come from many distinct call stacks
// (2^--depth of them) and many lines; a progress point per descent. After
// --ms the main thread returns from main while the others still work: the
// process exits in the middle of whatever the profiler is doing. With
// --cpu-ms, it returns once the process has used that much CPU time instead
// (or after 20 times as much wall time): as many samples on a loaded machine
// as on a quiet one.
//
//   many_paths [--threads N] [--depth D] [--ms MS | --cpu-ms MS] [--leaf N]
//
// Prints "many_paths descents=N".
#define _GNU_SOURCE
#include <coz.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_depth = 10;
static uint64_t g_leaf = 2000;
static atomic_ulong g_descents;

static double clock_ms(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
static double now_ms(void) { return clock_ms(CLOCK_MONOTONIC); }

static uint64_t leaf(uint64_t x) {
  for (uint64_t i = 0; i < g_leaf; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;
  return x;
}

// One level down per call, by the path's next bit. Levels alternate
// between the even_* and odd_* functions, and each bit picks one of two, so
// consecutive frames are never on the same line (the profile folds a
// recursion on one line into one frame) and each path is a distinct stack.
// The results are combined after each call: no tail calls, every level
// keeps its frame.
static uint64_t odd_a(uint64_t x, int depth, uint64_t path);
static uint64_t odd_b(uint64_t x, int depth, uint64_t path);

__attribute__((noinline)) static uint64_t even_a(uint64_t x, int depth, uint64_t path) {
  if (depth == 0) return leaf(x);
  if (path & 1) return odd_a(x + 1, depth - 1, path >> 1) ^ 1;
  return odd_b(x + 2, depth - 1, path >> 1) ^ 2;
}

__attribute__((noinline)) static uint64_t even_b(uint64_t x, int depth, uint64_t path) {
  if (depth == 0) return leaf(x);
  if (path & 1) return odd_a(x + 3, depth - 1, path >> 1) ^ 3;
  return odd_b(x + 4, depth - 1, path >> 1) ^ 4;
}

__attribute__((noinline)) static uint64_t odd_a(uint64_t x, int depth, uint64_t path) {
  if (depth == 0) return leaf(x);
  if (path & 1) return even_a(x + 5, depth - 1, path >> 1) ^ 5;
  return even_b(x + 6, depth - 1, path >> 1) ^ 6;
}

__attribute__((noinline)) static uint64_t odd_b(uint64_t x, int depth, uint64_t path) {
  if (depth == 0) return leaf(x);
  if (path & 1) return even_a(x + 7, depth - 1, path >> 1) ^ 7;
  return even_b(x + 8, depth - 1, path >> 1) ^ 8;
}

static void* worker(void* arg) {
  uint64_t x = (uintptr_t)arg, rng = 0x9E3779B97F4A7C15ull ^ (uintptr_t)arg;
  for (;;) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    x = even_a(x, g_depth, rng);
    atomic_fetch_add(&g_descents, 1);
    COZ_PROGRESS_NAMED("descent");
  }
  return NULL;
}

int main(int argc, char** argv) {
  int threads = 3;
  double ms = 300, cpu_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--cpu-ms") == 0) cpu_ms = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--depth") == 0) g_depth = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--ms") == 0) ms = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--leaf") == 0) g_leaf = strtoull(argv[i + 1], NULL, 10);
  }
  for (int i = 0; i < threads; ++i) {
    pthread_t t;
    pthread_create(&t, NULL, worker, (void*)(uintptr_t)(i + 1));
    pthread_detach(t);
  }
  const double end = now_ms() + (cpu_ms > 0 ? 20 * cpu_ms : ms);
  const double cpu_end = clock_ms(CLOCK_PROCESS_CPUTIME_ID) + cpu_ms;
  while (now_ms() < end && (cpu_ms <= 0 || clock_ms(CLOCK_PROCESS_CPUTIME_ID) < cpu_end)) {
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
  printf("many_paths descents=%lu\n", (unsigned long)atomic_load(&g_descents));
  return 0;
}
