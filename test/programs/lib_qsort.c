/* lib_qsort: pipeline.cpp's structure (producer -> bounded queue (pthread
 * mutex + condition variables) -> consumer, one COZ_PROGRESS_NAMED("item
 * consumed") per consumed item) in C, with the consumer's work all inside
 * glibc: its marked line sorts kArrays arrays of 16-byte string records with
 * qsort, whose comparator is glibc's own strcmp.
 *
 * Why strcmp as the comparator: qsort calls the comparator from inside libc.
 * A comparator written here would be an in-scope line, the innermost one of
 * most sort samples, so it (not the qsort line) would get those samples; and
 * halving the qsort line (sorting half the arrays) would also halve the
 * comparator's calls, so the real speedup would belong to two lines at once.
 * With strcmp (the records are NUL-terminated strings, so strcmp orders them;
 * calling it through a pointer of qsort's comparator type is the classic C
 * idiom and fine in the x86-64 ABI) every sample of the sort is in libc
 * (qsort -> msort_with_tmp -> strcmp, no frame pointers) and belongs to the
 * one line that called qsort.
 *
 * The arrays are refilled before each sort (on another line, fill_arrays: a
 * memcpy per array, ~1% of the sorting time) from TEMPLATES different
 * shuffled inputs, array k of item i from template (i + k) % TEMPLATES, and
 * the same number of arrays is refilled in every build, so the variant that
 * sorts half the arrays does half the sorting work. Distinct inputs matter:
 * when every array was refilled from one template, the branch predictor
 * learned the merge sort's comparison outcomes of the identical sorts, and
 * 8 sorts per item took 2.3x as long as 4 (a "halved" build 56-60% faster).
 *
 * The consumer's per-item work is ~3x the producer's: speeding sort_work up
 * by s helps by s (up to s = 2/3), speeding produce_work up does nothing.
 * Per item: produce_work 0.15 ms, sort_work ~0.45 ms (kArrays x qsort of
 * kRecords records).
 * Variants: -DHALVE_SORT_WORK (sorts kArrays/2 arrays: real speedup ~50%),
 * -DHALVE_PRODUCE_WORK (~0%). Ground truth: test/integration/library_time_test.cpp.
 * Usage: lib_qsort [-n ITEMS] [--exit-status N]; default ~3.6 s. */
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
#define ARRAYS 8 /* refilled per item */
#ifdef HALVE_SORT_WORK
#define SORTED_ARRAYS (ARRAYS / 2)
#else
#define SORTED_ARRAYS ARRAYS
#endif
#define RECORDS 460 /* per array; 8 sorts of 460: ~0.45 ms on the reference machine */
#define TEMPLATES 16 /* distinct inputs (see the header comment) */
#define RECORD_BYTES 16
#define DEFAULT_ITEMS 8000 /* 0.45 ms per item: ~3.6 s */
#define QUEUE_CAPACITY 16

typedef char record[RECORD_BYTES];
typedef int (*comparator)(const void*, const void*);

static volatile uint64_t g_seed = 0x1234;
static record g_templates[TEMPLATES][RECORDS];
static record g_arrays[ARRAYS][RECORDS];

__attribute__((noinline)) static uint64_t produce_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i; // @line:produce_work
  return x;
}

__attribute__((noinline)) static void fill_arrays(uint64_t item) {
  for (int k = 0; k < ARRAYS; ++k) memcpy(g_arrays[k], g_templates[(item + k) % TEMPLATES], sizeof g_arrays[k]); // @line:fill_arrays
}

/* strcmp itself is the comparator (see the header comment). */
__attribute__((noinline)) static uint64_t sort_work(uint64_t item) {
  fill_arrays(item);
  for (int k = 0; k < SORTED_ARRAYS; ++k) qsort(g_arrays[k], RECORDS, RECORD_BYTES, (comparator)strcmp); // @line:sort_work
  return (uint64_t)(unsigned char)g_arrays[0][RECORDS / 2][1] << 8 ^ (unsigned char)g_arrays[item % ARRAYS][0][2];
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

/* Usage: lib_qsort [-n ITEMS] [--exit-status N] (as program_common.h's parse_args). */
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

  /* Random 15-letter strings sharing a 4-letter prefix (so strcmp looks past
   * the first bytes), in random order. */
  uint64_t r = g_seed;
  for (int t = 0; t < TEMPLATES; ++t) {
    for (int i = 0; i < RECORDS; ++i) {
      memcpy(g_templates[t][i], "rec-", 4);
      for (int j = 4; j < RECORD_BYTES - 1; ++j) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        g_templates[t][i][j] = (char)('a' + (r >> 33) % 26);
      }
      g_templates[t][i][RECORD_BYTES - 1] = '\0';
    }
  }

  pthread_t thread;
  if (pthread_create(&thread, NULL, producer, NULL) != 0) return 1;
  uint64_t checksum = 0;
  for (uint64_t i = 0; i < g_items; ++i) {
    checksum = checksum * 31 + sort_work(queue_pop());
    COZ_PROGRESS_NAMED("item consumed"); // @line:item_consumed
  }
  pthread_join(thread, NULL);

  printf("lib_qsort items=%llu checksum=%016llx\n", (unsigned long long)g_items, (unsigned long long)checksum);
  fprintf(stderr, "lib_qsort: elapsed=%.3f s\n", now_s() - start);
  return exit_status;
}
