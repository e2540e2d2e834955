/* lib_malloc: pipeline.cpp's structure (producer -> bounded queue (pthread
 * mutex + condition variables) -> consumer, one COZ_PROGRESS_NAMED("item
 * consumed") per consumed item) in C, with the consumer's work all inside
 * glibc's allocator: its marked line frees a random one of SLOTS live blocks
 * and allocates a new one of a random size (16 B to 4 KiB, skewed towards
 * small ones), CHURN_OPS times per item. Blocks are freed in a different
 * order than allocated, over ~60 tcache size classes of 7 blocks each and a
 * sixth past the tcache (1 KiB): malloc and free really work (tcache, fast
 * and unsorted bins, splitting, coalescing), in the main arena.
 *
 * malloc and free are on the one marked line (one loop), so halving that line
 * halves both. GCC cannot pair them up and elide them: every block is stored
 * in the global g_slots (freed by a later iteration, or at exit) and written
 * to. The in-scope arithmetic on the line (a random number per operation,
 * the stores) is ~10% of its samples, the PLT stubs ~2%.
 *
 * The consumer's per-item work is ~3x the producer's: speeding churn_work up
 * by s helps by s (up to s = 2/3), speeding produce_work up does nothing.
 * Per item: produce_work 0.15 ms, churn_work ~0.5 ms.
 * Variants: -DHALVE_CHURN_WORK (CHURN_OPS / 2: real speedup ~50%),
 * -DHALVE_PRODUCE_WORK (~0%). Ground truth: test/integration/library_time_test.cpp.
 * Usage: lib_malloc [-n ITEMS] [--exit-status N]; default ~4 s. */
#include <coz.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STEPS_PER_MS 600000ULL /* as kStepsPerMs in program_common.h */
#ifdef HALVE_PRODUCE_WORK
#define PRODUCE_STEPS (STEPS_PER_MS * 15 / 200)
#else
#define PRODUCE_STEPS (STEPS_PER_MS * 15 / 100)
#endif
#define FULL_CHURN_OPS 9600 /* free + malloc pairs: ~0.5 ms on the reference machine */
#ifdef HALVE_CHURN_WORK
#define CHURN_OPS (FULL_CHURN_OPS / 2)
#else
#define CHURN_OPS FULL_CHURN_OPS
#endif
#define SLOTS 1024 /* live blocks: ~1 MiB in all */
#define DEFAULT_ITEMS 8000 /* 0.5 ms per item: ~4 s */
#define QUEUE_CAPACITY 16

static volatile uint64_t g_seed = 0x1234;
static unsigned char* g_slots[SLOTS];

__attribute__((noinline)) static uint64_t produce_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i; // @line:produce_work
  return x;
}

/* A random slot (top 10 bits of r) and size: 16 + (0..4095 >> 0..7). */
#define SLOT_OF(r) ((size_t)((r) >> 54))
#define SIZE_OF(r) (16 + ((((size_t)(r) >> 20) & 4095) >> ((r) >> 40 & 7)))

__attribute__((noinline)) static uint64_t churn_work(uint64_t r) {
  uint64_t sum = 0;
  for (int k = 0; k < CHURN_OPS; ++k) { r = r * 6364136223846793005ULL + 1442695040888963407ULL; free(g_slots[SLOT_OF(r)]); g_slots[SLOT_OF(r)] = malloc(SIZE_OF(r)); g_slots[SLOT_OF(r)][0] = (unsigned char)k; sum += g_slots[SLOT_OF(r) ^ 1][0]; } // @line:churn_work
  return sum;
}

/* A bounded queue of items: pthread mutex + two condition variables. */
static struct {
  pthread_mutex_t mutex;
  pthread_cond_t not_empty, not_full;
  uint64_t items[QUEUE_CAPACITY];
  size_t head, size;
} g_queue = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0};

static void queue_push(uint64_t item) {
  pthread_mutex_lock(&g_queue.mutex);
  while (g_queue.size == QUEUE_CAPACITY) pthread_cond_wait(&g_queue.not_full, &g_queue.mutex);
  g_queue.items[(g_queue.head + g_queue.size++) % QUEUE_CAPACITY] = item;
  pthread_mutex_unlock(&g_queue.mutex);
  pthread_cond_signal(&g_queue.not_empty);
}

static uint64_t queue_pop(void) {
  pthread_mutex_lock(&g_queue.mutex);
  while (g_queue.size == 0) pthread_cond_wait(&g_queue.not_empty, &g_queue.mutex);
  const uint64_t item = g_queue.items[g_queue.head];
  g_queue.head = (g_queue.head + 1) % QUEUE_CAPACITY;
  --g_queue.size;
  pthread_mutex_unlock(&g_queue.mutex);
  pthread_cond_signal(&g_queue.not_full);
  return item;
}

static uint64_t g_items;

static void* producer(void* unused) {
  (void)unused;
  uint64_t x = g_seed;
  for (uint64_t i = 0; i < g_items; ++i) {
    x = produce_work(x, PRODUCE_STEPS);
    queue_push(x);
  }
  return NULL;
}

/* Usage: lib_malloc [-n ITEMS] [--exit-status N] (as program_common.h's parse_args). */
static void parse_args(int argc, char** argv, uint64_t* items, int* exit_status) {
  for (int i = 1; i < argc; ++i) {
    char* end = NULL;
    if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
      *items = strtoull(argv[++i], &end, 10);
    } else if (strcmp(argv[i], "--exit-status") == 0 && i + 1 < argc) {
      *exit_status = (int)strtol(argv[++i], &end, 10);
    } else {
      fprintf(stderr, "%s: unknown argument '%s' (usage: %s [-n UNITS] [--exit-status N])\n", argv[0], argv[i],
              argv[0]);
      exit(2);
    }
    if (end == NULL || *end != '\0') {
      fprintf(stderr, "%s: bad number '%s'\n", argv[0], argv[i]);
      exit(2);
    }
  }
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  int exit_status = 0;
  g_items = DEFAULT_ITEMS;
  parse_args(argc, argv, &g_items, &exit_status);
  const double start = now_s();

  for (size_t j = 0; j < SLOTS; ++j) {
    g_slots[j] = malloc(16 + j % 1024);
    g_slots[j][0] = (unsigned char)j;
  }

  pthread_t thread;
  if (pthread_create(&thread, NULL, producer, NULL) != 0) return 1;
  uint64_t checksum = 0;
  for (uint64_t i = 0; i < g_items; ++i) {
    checksum = checksum * 31 + churn_work(queue_pop());
    COZ_PROGRESS_NAMED("item consumed"); // @line:item_consumed
  }
  pthread_join(thread, NULL);
  for (size_t j = 0; j < SLOTS; ++j) free(g_slots[j]);

  printf("lib_malloc items=%llu checksum=%016llx\n", (unsigned long long)g_items, (unsigned long long)checksum);
  fprintf(stderr, "lib_malloc: elapsed=%.3f s\n", now_s() - start);
  return exit_status;
}
