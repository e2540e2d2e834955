/* fd_budget: how many descriptors a program gets, and which limit it and
 * its children see. Under a small `ulimit -n`, every descriptor the
 * profiler took from the program's range is one the program cannot open.
 *
 * Usage: fd_budget [--files N] [--child]
 *
 * Prints its soft and hard RLIMIT_NOFILE, opens /dev/null up to N times
 * (default 12) and prints how many it got, then a forked child and an
 * exec'ed copy of itself (--child) print the soft limit they see. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void print_limit(const char* who) {
  struct rlimit limit;
  getrlimit(RLIMIT_NOFILE, &limit);
  printf("%s soft=%llu hard=%llu\n", who, (unsigned long long)limit.rlim_cur, (unsigned long long)limit.rlim_max);
  fflush(stdout);
}

int main(int argc, char** argv) {
  int files = 12;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--child") == 0) {
      print_limit("exec");
      return 0;
    }
    if (strcmp(argv[i], "--files") == 0 && i + 1 < argc) files = atoi(argv[++i]);
  }
  print_limit("main");
  int opened = 0;
  const char* error = "";
  for (int i = 0; i < files; ++i) {
    if (open("/dev/null", O_RDONLY | O_CLOEXEC) < 0) {  // the exec'ed child starts with stdio only
      error = strerror(errno);
      break;
    }
    ++opened;
  }
  printf("opened=%d of %d%s%s\n", opened, files, *error ? ": " : "", error);
  fflush(stdout);

  pid_t child = fork();
  if (child == 0) {
    print_limit("fork");
    execl("/proc/self/exe", argv[0], "--child", (char*)NULL);
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
