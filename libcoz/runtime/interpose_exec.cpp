// The exec calls: the calling thread's sampler stops before the process
// image is replaced, and samples again if the exec fails.
//
// Why: where the traps sample the time in the kernel (sampler.cpp,
// g_trap_kernel), a trap taken during the exec's own work in the kernel
// (loading the new image takes milliseconds) is raised as the thread
// returns to user mode, which is then in the new image. The event itself
// goes at the exec (remove_on_exec), but not a trap already raised, and
// the new image has SIGTRAP at its default action: a launcher that execs
// its program (a seccomp wrapper, a shell's exec) was killed by SIGTRAP.
//
// glibc's execl, execlp, execle, execv, execvp and execvpe reach the
// kernel through its internal __execve, never through execve: each is
// wrapped. posix_spawn, system and popen exec in a child task that has no
// sampler of its own.
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include <alloca.h>

#include "real.h"
#include "sampler.h"

using coz::ExecWindow;
using coz::real::functions;

namespace {

/// The arguments of an execl-style call, from `first` to the null pointer,
/// into `argv` (room for `count` + 1). `envp`: the pointer after the null
/// one (execle), if asked for.
void collect_arguments(const char* first, va_list ap, size_t count, char** argv, char* const** envp) {
  argv[0] = const_cast<char*>(first);
  for (size_t i = 1; i <= count; ++i) argv[i] = va_arg(ap, char*);
  if (envp) *envp = va_arg(ap, char* const*);
}

/// How many arguments follow `first` up to and including the null pointer.
size_t count_arguments(const char* first, va_list ap) {
  size_t count = 0;
  if (!first) return 0;
  while (va_arg(ap, char*)) ++count;
  return count + 1;
}

}  // namespace

extern "C" {

int execve(const char* path, char* const argv[], char* const envp[]) {
  ExecWindow window;
  return functions().execve(path, argv, envp);
}

int execv(const char* path, char* const argv[]) {
  ExecWindow window;
  return functions().execv(path, argv);
}

int execvp(const char* file, char* const argv[]) {
  ExecWindow window;
  return functions().execvp(file, argv);
}

int execvpe(const char* file, char* const argv[], char* const envp[]) {
  ExecWindow window;
  return functions().execvpe(file, argv, envp);
}

int fexecve(int fd, char* const argv[], char* const envp[]) {
  ExecWindow window;
  return functions().fexecve(fd, argv, envp);
}

int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  if (!functions().execveat) {
    errno = ENOSYS;
    return -1;
  }
  ExecWindow window;
  return functions().execveat(dirfd, path, argv, envp, flags);
}

/// execl, execlp and execle as glibc builds them: the arguments into an
/// array on the stack, then the v-form (ours, which stops the sampler).
int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const size_t count = count_arguments(arg, ap);
  va_end(ap);
  auto** argv = static_cast<char**>(alloca((count + 1) * sizeof(char*)));
  va_start(ap, arg);
  collect_arguments(arg, ap, count, argv, nullptr);
  va_end(ap);
  if (count == 0) argv[0] = nullptr;
  return execv(path, argv);
}

int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const size_t count = count_arguments(arg, ap);
  va_end(ap);
  auto** argv = static_cast<char**>(alloca((count + 1) * sizeof(char*)));
  va_start(ap, arg);
  collect_arguments(arg, ap, count, argv, nullptr);
  va_end(ap);
  if (count == 0) argv[0] = nullptr;
  return execvp(file, argv);
}

int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const size_t count = count_arguments(arg, ap);
  va_end(ap);
  auto** argv = static_cast<char**>(alloca((count + 1) * sizeof(char*)));
  char* const* envp = nullptr;
  va_start(ap, arg);
  if (count == 0) {
    argv[0] = nullptr;
    envp = va_arg(ap, char* const*);  // after the null pointer that was `arg`
  } else {
    collect_arguments(arg, ap, count, argv, &envp);
  }
  va_end(ap);
  return execve(path, argv, envp);
}

}  // extern "C"
