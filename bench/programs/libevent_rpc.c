/* libevent_rpc: a libevent event loop (Debian's libevent, out of scope)
 * serving a worker thread over a socketpair. Each round the worker runs
 * produce_work (0.4 ms), sends a request and blocks in recv for the reply;
 * the main thread's event loop (event_base_dispatch, epoll inside libevent)
 * calls on_request, which runs handle_work (0.2 ms) and sends the reply;
 * the worker counts a COZ_PROGRESS. Nothing overlaps: halving produce_work
 * saves 0.2 of 0.6 ms per round (33.3%), halving handle_work 0.1 (16.7%).
 *
 * Variants: -DHALVE_PRODUCE_WORK (real ~33.3%), -DHALVE_HANDLE_WORK (~16.7%).
 * Usage: libevent_rpc [-n ROUNDS]; default ~4 s. */
#include <coz.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define STEPS_PER_MS 600000ull /* as test/programs/program_common.h */
#ifdef HALVE_PRODUCE_WORK
#define PRODUCE_STEPS (STEPS_PER_MS * 2 / 10)
#else
#define PRODUCE_STEPS (STEPS_PER_MS * 4 / 10)
#endif
#ifdef HALVE_HANDLE_WORK
#define HANDLE_STEPS (STEPS_PER_MS / 10)
#else
#define HANDLE_STEPS (STEPS_PER_MS * 2 / 10)
#endif

static volatile uint64_t g_seed = 0x1234;
static uint64_t g_rounds = 6600; /* 0.6 ms per round: ~4 s */
static int g_sockets[2];         /* [0] the loop's end, [1] the worker's */
static uint64_t g_handled;

__attribute__((noinline)) static uint64_t produce_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i; // @line:produce_work
  return x;
}

__attribute__((noinline)) static uint64_t handle_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i; // @line:handle_work
  return x;
}

static void die(const char* what) {
  perror(what);
  exit(1);
}

static void on_request(evutil_socket_t fd, short what, void* arg) {
  struct event_base* base = arg;
  uint64_t request;
  ssize_t got = recv(fd, &request, sizeof request, 0);
  if (got == 0) {  /* the worker is done */
    event_base_loopbreak(base);
    return;
  }
  if (got != sizeof request) return;
  g_handled = handle_work(g_handled + request, HANDLE_STEPS);
  if (send(fd, &g_handled, sizeof g_handled, 0) != sizeof g_handled) die("send reply");
}

static void* worker(void* arg) {
  uint64_t x = g_seed;
  for (uint64_t i = 0; i < g_rounds; ++i) {
    x = produce_work(x + i, PRODUCE_STEPS);
    if (send(g_sockets[1], &x, sizeof x, 0) != sizeof x) die("send request");
    uint64_t reply;
    if (recv(g_sockets[1], &reply, sizeof reply, MSG_WAITALL) != sizeof reply) die("recv reply");
    x ^= reply;
    COZ_PROGRESS_NAMED("reply"); // @line:reply
  }
  shutdown(g_sockets[1], SHUT_WR);
  *(uint64_t*)arg = x;
  return NULL;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) g_rounds = strtoull(argv[++i], NULL, 10);
    else {
      fprintf(stderr, "usage: %s [-n ROUNDS]\n", argv[0]);
      return 2;
    }
  }
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, g_sockets) != 0) die("socketpair");
  evutil_make_socket_nonblocking(g_sockets[0]);
  struct event_base* base = event_base_new();
  struct event* request = event_new(base, g_sockets[0], EV_READ | EV_PERSIST, on_request, NULL);
  if (!base || !request) die("libevent");
  event_assign(request, base, g_sockets[0], EV_READ | EV_PERSIST, on_request, base);
  event_add(request, NULL);

  uint64_t result = 0;
  pthread_t t;
  if (pthread_create(&t, NULL, worker, &result) != 0) die("pthread_create");
  event_base_dispatch(base);
  pthread_join(t, NULL);
  event_free(request);
  event_base_free(base);

  clock_gettime(CLOCK_MONOTONIC, &end);
  printf("libevent_rpc rounds=%llu checksum=%016llx\n", (unsigned long long)g_rounds, (unsigned long long)result);
  fprintf(stderr, "libevent_rpc: elapsed=%.3f s\n",
          (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9);
  return 0;
}
