/* no_perf_launcher: runs a program where perf_event_open is denied, as in a
 * container whose seccomp profile forbids it.
 *
 * Usage: no_perf_launcher [--errno EACCES|ENOSYS|EPERM] PROGRAM [ARGS...]
 *
 * Installs a seccomp-bpf filter that makes perf_event_open fail with the
 * errno (default EACCES) and allows every other system call, then execs
 * PROGRAM. The filter survives exec, and so does LD_PRELOAD, so under
 * `coz run --- no_perf_launcher PROGRAM` the runtime loads in PROGRAM and
 * finds perf_event_open refused. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char** argv) {
  int err = EACCES;
  int first = 1;
  if (argc > 2 && strcmp(argv[1], "--errno") == 0) {
    if (strcmp(argv[2], "ENOSYS") == 0) err = ENOSYS;
    else if (strcmp(argv[2], "EPERM") == 0) err = EPERM;
    else if (strcmp(argv[2], "EACCES") != 0) {
      fprintf(stderr, "no_perf_launcher: unknown errno %s\n", argv[2]);
      return 2;
    }
    first = 3;
  }
  if (first >= argc) {
    fprintf(stderr, "usage: no_perf_launcher [--errno EACCES|ENOSYS|EPERM] PROGRAM [ARGS...]\n");
    return 2;
  }

  struct sock_filter filter[] = {
      /* Another architecture's system call numbers mean something else: kill. */
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    perror("no_perf_launcher: PR_SET_NO_NEW_PRIVS");
    return 2;
  }
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    perror("no_perf_launcher: PR_SET_SECCOMP");
    return 2;
  }
  execv(argv[first], argv + first);
  fprintf(stderr, "no_perf_launcher: cannot run %s: %s\n", argv[first], strerror(errno));
  return 127;
}
