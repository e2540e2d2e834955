// mutex_malloc: a program with its own allocator, which takes a pthread
// mutex around glibc's (as allocators that wrap another do). Being defined
// in the executable, it serves every allocation in the process, the
// runtime's included. Threads allocate and free for --ms; the lock is
// contended, so waits for it block.
//
// Prints "mutex_malloc allocations=N".
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern void* __libc_malloc(size_t);
extern void __libc_free(void*);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);

static pthread_mutex_t g_heap = PTHREAD_MUTEX_INITIALIZER;

void* malloc(size_t n) {
  pthread_mutex_lock(&g_heap);
  void* p = __libc_malloc(n);
  pthread_mutex_unlock(&g_heap);
  return p;
}

void free(void* p) {
  pthread_mutex_lock(&g_heap);
  __libc_free(p);
  pthread_mutex_unlock(&g_heap);
}

void* calloc(size_t n, size_t size) {
  pthread_mutex_lock(&g_heap);
  void* p = __libc_calloc(n, size);
  pthread_mutex_unlock(&g_heap);
  return p;
}

void* realloc(void* old, size_t n) {
  pthread_mutex_lock(&g_heap);
  void* p = __libc_realloc(old, n);
  pthread_mutex_unlock(&g_heap);
  return p;
}

void* memalign(size_t alignment, size_t n) {
  pthread_mutex_lock(&g_heap);
  void* p = __libc_memalign(alignment, n);
  pthread_mutex_unlock(&g_heap);
  return p;
}

void* aligned_alloc(size_t alignment, size_t n) { return memalign(alignment, n); }

int posix_memalign(void** out, size_t alignment, size_t n) {
  void* p = memalign(alignment, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

static atomic_ulong g_allocations;
static double g_end;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void* churn(void* arg) {
  uint64_t rng = 0x9E3779B97F4A7C15ull ^ (uintptr_t)arg;
  void* kept[64] = {0};
  while (now_ms() < g_end) {
    for (int i = 0; i < 256; ++i) {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      unsigned slot = (unsigned)(rng % 64);
      free(kept[slot]);
      kept[slot] = malloc(16 + rng % 4000);
      if (kept[slot]) memset(kept[slot], 1, 16);
    }
    atomic_fetch_add(&g_allocations, 256);
  }
  for (int i = 0; i < 64; ++i) free(kept[i]);
  return NULL;
}

int main(int argc, char** argv) {
  double ms = 400;
  if (argc > 2 && strcmp(argv[1], "--ms") == 0) ms = atof(argv[2]);
  g_end = now_ms() + ms;
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) pthread_create(&threads[i], NULL, churn, (void*)(uintptr_t)(i + 1));
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  printf("mutex_malloc allocations=%lu\n", (unsigned long)atomic_load(&g_allocations));
  return 0;
}
