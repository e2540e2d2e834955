// Built with a sanitizer (test/programs/robust/CMakeLists.txt: sanitized_asan,
// sanitized_tsan): two threads of work and a progress point, then "total N".
// `--race`: the two threads also add to one counter without a lock, a real
// data race that ThreadSanitizer must still report under coz run.
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "coz.h"

static long racy_counter;
static int race;

static long work(long n) {
  volatile long sum = 0;
  for (long i = 0; i < n; ++i) sum += i * i % 7;  // @line:sanitized_work
  return sum;
}

static void* thread_main(void* arg) {
  long* total = arg;
  for (int i = 0; i < 400; ++i) {
    *total += work(60000);  // ~0.1 ms a call here: 20,000 made ~17 samples of 1 ms, a faster CPU fewer
    if (race) racy_counter++;
    COZ_PROGRESS;
  }
  return NULL;
}

int main(int argc, char** argv) {
  race = argc > 1 && strcmp(argv[1], "--race") == 0;
  pthread_t threads[2];
  long totals[2] = {0, 0};
  for (int t = 0; t < 2; ++t) pthread_create(&threads[t], NULL, thread_main, &totals[t]);
  for (int t = 0; t < 2; ++t) pthread_join(threads[t], NULL);
  printf("total %ld\n", totals[0] + totals[1]);
  return 0;
}
