/* exec_chain: a process that replaces its image with itself again and again,
 * through each of the exec calls in turn (execv, execl, execlp, execle,
 * execve, execvp, execvpe, fexecve, syscall(SYS_execve)). Each image works
 * ~2 ms of CPU time first, so that it is sampled, the last one ~200 ms. Where the profiler samples
 * the time in the kernel, a sample of an exec's own work in the kernel must
 * not reach the next image, where SIGTRAP has its default action
 * (test/integration/ownership_signals_test.cpp).
 *
 * Usage: exec_chain [--left N] (default 36: four times through the calls)
 *        exec_chain --vfork N
 *
 * Prints "exec_chain done" from the last image and exits 0. With --vfork,
 * the process instead starts N children with vfork(), each of which execs
 * this program with --noop (which exits at once), then works ~200 ms of CPU
 * time itself: a child of vfork() runs on its parent's memory, and must not
 * stop the parent's sampler on its way to exec. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static volatile uint64_t g_sink;

static uint64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Starts `children` children with vfork(), each execv'ing `self --noop`. */
static int vfork_children(const char* self, long children) {
  for (long i = 0; i < children; ++i) {
    pid_t child = vfork();
    if (child == 0) {
      char* args[] = {(char*)self, "--noop", NULL};
      execv(self, args);
      _exit(127);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  }
  return 0;
}

int main(int argc, char** argv) {
  long left = 36, vforks = -1;
  if (argc == 2 && strcmp(argv[1], "--noop") == 0) {
    return 0;
  } else if (argc == 3 && strcmp(argv[1], "--left") == 0) {
    left = atol(argv[2]);
  } else if (argc == 3 && strcmp(argv[1], "--vfork") == 0) {
    vforks = atol(argv[2]);
    left = 0;
  } else if (argc != 1) {
    fprintf(stderr, "usage: %s [--left N | --vfork N]\n", argv[0]);
    return 2;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return perror("readlink"), 2;
  self[n] = '\0';
  if (vforks >= 0 && vfork_children(self, vforks) != 0) return fprintf(stderr, "exec_chain: a child failed\n"), 2;

  uint64_t x = (uint64_t)left;
  const uint64_t work_ns = left == 0 ? 200000000 : 2000000;
  for (uint64_t end = cpu_ns() + work_ns; cpu_ns() < end;) {
    for (int i = 0; i < 1000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;  // @line:work
  }
  g_sink = x;
  if (left == 0) {
    printf("exec_chain done\n");
    return 0;
  }

  char next[32];
  snprintf(next, sizeof next, "%ld", left - 1);
  char* args[] = {self, "--left", next, NULL};
  switch (left % 9) {
    case 0: execv(self, args); break;
    case 1: execl(self, self, "--left", next, (char*)NULL); break;
    case 2: execlp(self, self, "--left", next, (char*)NULL); break;
    case 3: execle(self, self, "--left", next, (char*)NULL, environ); break;
    case 4: execve(self, args, environ); break;
    case 5: execvp(self, args); break;
    case 6: execvpe(self, args, environ); break;
    case 7: {
      int fd = open(self, O_RDONLY | O_CLOEXEC);
      if (fd < 0) return perror("open"), 2;
      fexecve(fd, args, environ);
      break;
    }
    case 8: syscall(SYS_execve, self, args, environ); break;
  }
  perror("exec");
  return 2;
}
