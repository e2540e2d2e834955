/* tracer: runs a program under ptrace, as a debugger does (gdb's `run`):
 * the child asks to be traced and execs PROGRAM; every signal that stops it
 * but the exec's own SIGTRAP is one a debugger would stop at and report
 * ("received signal ?, Unknown signal"), and is passed on.
 *
 * Usage: tracer PROGRAM [ARGS...]
 * Prints "tracer stops=N" (the stops a debugger would report) and exits with
 * the program's exit status. */
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: tracer PROGRAM [ARGS...]\n");
    return 2;
  }
  pid_t child = fork();
  if (child == 0) {
    ptrace(PTRACE_TRACEME, 0, NULL, NULL);
    execv(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0, stops = 0, exec_seen = 0;
  while (waitpid(child, &status, 0) == child && WIFSTOPPED(status)) {
    int sig = WSTOPSIG(status);
    if (sig == SIGTRAP && !exec_seen) {
      exec_seen = 1;
      sig = 0;
    } else {
      ++stops;
    }
    ptrace(PTRACE_CONT, child, NULL, (void*)(long)sig);
  }
  printf("tracer stops=%d\n", stops);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
