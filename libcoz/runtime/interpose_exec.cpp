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

/// Calls `exec(argv, envp)` with the arguments of an execl-style call:
/// `first`, then those in `ap` up to the null pointer, in an array on this
/// frame's stack, as glibc builds them. `with_envp`: the pointer after the
/// null one is the environment (execle).
template <typename Exec>
int exec_with_list(const char* first, va_list ap, bool with_envp, Exec exec) {
  size_t count = 1;  // `first`, null or not
  if (first) {
    va_list counting;
    va_copy(counting, ap);
    while (va_arg(counting, char*)) ++count;
    va_end(counting);
  }
  auto** argv = static_cast<char**>(alloca((count + 1) * sizeof(char*)));
  argv[0] = const_cast<char*>(first);
  for (size_t i = 1; i < count; ++i) argv[i] = va_arg(ap, char*);
  argv[count] = nullptr;
  if (first) va_arg(ap, char*);  // the null pointer that ends the list
  char* const* envp = with_envp ? va_arg(ap, char* const*) : nullptr;
  return exec(argv, envp);
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

/// execl, execlp and execle: the arguments into an array, then the v-form
/// (ours, which stops the sampler).
int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  int ret = exec_with_list(arg, ap, false, [&](char* const* argv, char* const*) { return execv(path, argv); });
  va_end(ap);
  return ret;
}

int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  int ret = exec_with_list(arg, ap, false, [&](char* const* argv, char* const*) { return execvp(file, argv); });
  va_end(ap);
  return ret;
}

int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  int ret =
      exec_with_list(arg, ap, true, [&](char* const* argv, char* const* envp) { return execve(path, argv, envp); });
  va_end(ap);
  return ret;
}

}  // extern "C"
