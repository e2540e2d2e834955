/* lib_zlib: pipeline.cpp's structure (producer -> bounded queue (pthread
 * mutex + condition variables) -> consumer, one COZ_PROGRESS_NAMED("item
 * consumed") per consumed item) in C, with the consumer's work all inside
 * zlib: its marked line compresses CHUNKS chunks of pseudo-text (words from a
 * small vocabulary: ~3x compressible) with compress2 at level 6. Debian's
 * libz.so.1 has no debug information and no frame pointers, so only an
 * unwinder that reads its .eh_frame finds the line that called it.
 *
 * The chunks are all of the same size and taken from different places of one
 * text, so the variant that compresses CHUNKS / 2 of them does half the work
 * (compress2's set-up per call, a 64 KiB memset and a few mallocs, halves
 * with the calls).
 *
 * The consumer's per-item work is ~3x the producer's: speeding compress_work
 * up by s helps by s (up to s = 2/3), speeding produce_work up does nothing.
 * Per item: produce_work 0.15 ms, compress_work ~0.5 ms.
 * Variants: -DHALVE_COMPRESS_WORK (half the chunks: real speedup ~50%),
 * -DHALVE_PRODUCE_WORK (~0%). Ground truth: test/integration/library_time_test.cpp.
 * Usage: lib_zlib [-n ITEMS] [--exit-status N]; default ~4 s. */
#include <coz.h>

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define STEPS_PER_MS 600000ULL /* as kStepsPerMs in program_common.h */
#ifdef HALVE_PRODUCE_WORK
#define PRODUCE_STEPS (STEPS_PER_MS * 15 / 200)
#else
#define PRODUCE_STEPS (STEPS_PER_MS * 15 / 100)
#endif
#define FULL_CHUNKS 4
#ifdef HALVE_COMPRESS_WORK
#define CHUNKS (FULL_CHUNKS / 2)
#else
#define CHUNKS FULL_CHUNKS
#endif
#define CHUNK_BYTES 3200 /* 4 compress2 calls of 3200 bytes: ~0.5 ms on the reference machine */
#define TEXT_BYTES (1 << 20)
#define DEFAULT_ITEMS 8000 /* 0.5 ms per item: ~4 s */
#define QUEUE_CAPACITY 16

static volatile uint64_t g_seed = 0x1234;
static unsigned char g_text[TEXT_BYTES];
static unsigned char g_out[FULL_CHUNKS][CHUNK_BYTES + CHUNK_BYTES / 8 + 64]; /* > compressBound(CHUNK_BYTES) */
static uLongf g_out_bytes[FULL_CHUNKS];

__attribute__((noinline)) static uint64_t produce_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i; // @line:produce_work
  return x;
}

/* Chunk k of item x starts at a pseudo-random place of the text. */
#define CHUNK_AT(x, k) (g_text + (((x) >> 20) + (uint64_t)(k) * 7919 * 64) % (TEXT_BYTES - CHUNK_BYTES))

__attribute__((noinline)) static uint64_t compress_work(uint64_t x) {
  int status = Z_OK;
  for (int k = 0; k < CHUNKS; ++k) status |= compress2(g_out[k], (g_out_bytes[k] = sizeof g_out[k], &g_out_bytes[k]), CHUNK_AT(x, k), CHUNK_BYTES, 6); // @line:compress_work
  if (status != Z_OK) {
    fprintf(stderr, "lib_zlib: compress2 failed (%d)\n", status);
    exit(1);
  }
  uint64_t sum = 0;
  for (int k = 0; k < CHUNKS; ++k) sum += g_out_bytes[k] * 131 + g_out[k][g_out_bytes[k] / 2];
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

/* Usage: lib_zlib [-n ITEMS] [--exit-status N] (as program_common.h's parse_args). */
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

  /* compress2 allocates ~270 KB of state per call and frees it: by default
   * glibc then trims the heap (its top chunk passes the 128 KiB trim
   * threshold) and the next call faults the pages back in, zeroed: 19 page
   * faults per call, and more of the consumer's time in the kernel than in
   * zlib. Without trimming, the line's time is zlib's own. */
  mallopt(M_TRIM_THRESHOLD, 64 << 20);

  /* Pseudo-text: random words of a 128-word vocabulary (two of 8 syllables,
   * with or without a final n), space-separated. */
  static const char* const syllables[8] = {"ka", "lo", "mi", "ne", "su", "ta", "ro", "vi"};
  uint64_t r = g_seed;
  for (size_t at = 0; at < TEXT_BYTES;) {
    r = r * 6364136223846793005ULL + 1442695040888963407ULL;
    const char* word[3] = {syllables[(r >> 33) & 7], syllables[(r >> 36) & 7], (r >> 39) & 1 ? "n " : " "};
    for (int w = 0; w < 3; ++w)
      for (const char* c = word[w]; *c != '\0' && at < TEXT_BYTES; ++c) g_text[at++] = (unsigned char)*c;
  }

  pthread_t thread;
  if (pthread_create(&thread, NULL, producer, NULL) != 0) return 1;
  uint64_t checksum = 0;
  for (uint64_t i = 0; i < g_items; ++i) {
    checksum = checksum * 31 + compress_work(queue_pop());
    COZ_PROGRESS_NAMED("item consumed"); // @line:item_consumed
  }
  pthread_join(thread, NULL);

  printf("lib_zlib items=%llu checksum=%016llx\n", (unsigned long long)g_items, (unsigned long long)checksum);
  fprintf(stderr, "lib_zlib: elapsed=%.3f s\n", now_s() - start);
  return exit_status;
}
