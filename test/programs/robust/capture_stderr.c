/* capture_stderr: runs a program twice with its stderr captured through a
 * pipe, as Python's subprocess.run(capture_output=True) and node's
 * spawnSync do, and prints what each run wrote there: the runtime's own
 * lines must not be among them (issue #51).
 *
 * Usage: capture_stderr PROGRAM [ARGS...]
 * Prints "captured N bytes: TEXT" per run and exits with the last run's status. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int run_captured(char** argv) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return 125;
  pid_t child = fork();
  if (child == 0) {
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(pipe_fds[1]);
  char text[4096];
  size_t length = 0;
  ssize_t n;
  while ((n = read(pipe_fds[0], text + length, sizeof text - 1 - length)) > 0) length += (size_t)n;
  close(pipe_fds[0]);
  text[length] = '\0';
  printf("captured %zu bytes: %s\n", length, text);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: capture_stderr PROGRAM [ARGS...]\n");
    return 2;
  }
  run_captured(argv + 1);
  return run_captured(argv + 1);
}
