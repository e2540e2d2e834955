// A bounded load generator for memcached over loopback: C connections, each
// on its own thread, send `set` and `get` requests (text protocol) back to
// back for S seconds, then print the requests completed per second.
//
// Usage: mc_load PORT|unix:PATH CONNECTIONS SECONDS [KEYS]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int g_port;
static const char* g_unix_path;  // "unix:PATH" instead of a port
static double g_seconds;
static int g_keys = 1000;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_to_server(void) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (g_unix_path) {
      int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      struct sockaddr_un u = {.sun_family = AF_UNIX};
      strncpy(u.sun_path, g_unix_path, sizeof u.sun_path - 1);
      if (connect(fd, (struct sockaddr*)&u, sizeof u) == 0) return fd;
      close(fd);
      usleep(50000);
      continue;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr*)&a, sizeof a) == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    close(fd);
    usleep(50000);
  }
  fprintf(stderr, "mc_load: cannot connect to %s\n", g_unix_path ? g_unix_path : "the port");
  exit(1);
}

// Reads until the response ends with `end` (e.g. "END\r\n" or "STORED\r\n").
static int read_response(int fd, const char* end) {
  char buf[4096];
  size_t have = 0, n_end = strlen(end);
  for (;;) {
    ssize_t n = read(fd, buf + have, sizeof buf - have);
    if (n <= 0) return -1;
    have += (size_t)n;
    if (have >= n_end && memcmp(buf + have - n_end, end, n_end) == 0) return 0;
    if (have == sizeof buf) have = 0;  // a long value: keep only the tail
  }
}

static void* client(void* arg) {
  long* done = arg;
  int fd = connect_to_server();
  unsigned seed = (unsigned)(uintptr_t)arg;
  char value[100];
  memset(value, 'v', sizeof value);
  char req[256];
  double end = now() + g_seconds;
  long n = 0;
  while ((n & 63) != 0 || now() < end) {
    int key = (int)(rand_r(&seed) % (unsigned)g_keys);
    int len;
    if (n % 10 == 0) {  // 1 set in 10
      len = snprintf(req, sizeof req, "set key:%d 0 0 %zu\r\n%.*s\r\n", key, sizeof value, (int)sizeof value, value);
      if (write(fd, req, (size_t)len) != len || read_response(fd, "STORED\r\n") != 0) break;
    } else {
      len = snprintf(req, sizeof req, "get key:%d\r\n", key);
      if (write(fd, req, (size_t)len) != len || read_response(fd, "END\r\n") != 0) break;
    }
    ++n;
  }
  close(fd);
  *done = n;
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: mc_load PORT CONNECTIONS SECONDS [KEYS]\n");
    return 2;
  }
  if (strncmp(argv[1], "unix:", 5) == 0) g_unix_path = argv[1] + 5;
  else g_port = atoi(argv[1]);
  int connections = atoi(argv[2]);
  g_seconds = atof(argv[3]);
  if (argc > 4) g_keys = atoi(argv[4]);
  pthread_t threads[64];
  long done[64] = {0};
  if (connections < 1 || connections > 64) return 2;
  double start = now();
  for (int i = 0; i < connections; ++i) pthread_create(&threads[i], NULL, client, &done[i]);
  long total = 0;
  for (int i = 0; i < connections; ++i) {
    pthread_join(threads[i], NULL);
    total += done[i];
  }
  double elapsed = now() - start;
  printf("%ld requests in %.2f s: %.0f requests/s\n", total, elapsed, total / elapsed);
  return 0;
}
