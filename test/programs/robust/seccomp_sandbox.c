/* seccomp_sandbox: confines itself with a seccomp filter, as sandboxes do,
 * then works; the runtime must keep the program alive whatever the filter.
 *
 * Usage: seccomp_sandbox --filter FILTER [--ms MS] [--execs N]
 *   FILTER: permissive     allows every call (the runtime keeps sampling)
 *           no-sigreturn   an allow-list without rt_sigreturn, as OpenSSH's
 *                          pre-authentication sandbox (SIGSYS for the rest)
 *           no-ioctl       ioctl answered with EPERM, as man-db's sandbox
 *                          for col and groff
 *   Works MS ms (default 300) under the filter; with --execs N, first forks
 *   N children that each install the filter and exec /bin/true, and counts
 *   those that did not exit 0. Prints "seccomp_sandbox done children_failed=K". */
#include <coz.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define ALLOW_NR(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define CHECK_ARCH                                                                 \
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),        \
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),               \
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)

static struct sock_filter permissive[] = {CHECK_ARCH, BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};

/* What this program itself needs after confinement, and nothing else. */
static struct sock_filter no_sigreturn[] = {
    CHECK_ARCH,
    LOAD_NR,
    ALLOW_NR(__NR_clock_gettime),
    ALLOW_NR(__NR_write),
    ALLOW_NR(__NR_exit_group),
    ALLOW_NR(__NR_exit),
    ALLOW_NR(__NR_futex),
    ALLOW_NR(__NR_newfstatat),
    ALLOW_NR(__NR_fstat),
    ALLOW_NR(__NR_brk),
    ALLOW_NR(__NR_mmap),
    ALLOW_NR(__NR_munmap),
    ALLOW_NR(__NR_getrandom),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};

static struct sock_filter no_ioctl[] = {
    CHECK_ARCH,
    LOAD_NR,
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

static struct sock_fprog chosen;

static void confine(void) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &chosen) != 0) {
    fprintf(stderr, "seccomp_sandbox: cannot install the filter: %s\n", strerror(errno));
    exit(3);
  }
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  const char* filter = NULL;
  long ms = 300, execs = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc) filter = argv[++i];
    else if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) ms = atol(argv[++i]);
    else if (strcmp(argv[i], "--execs") == 0 && i + 1 < argc) execs = atol(argv[++i]);
    else {
      fprintf(stderr, "seccomp_sandbox: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
#define CHOOSE(name) \
  if (filter && strcmp(filter, #name) == 0) chosen = (struct sock_fprog){sizeof name / sizeof name[0], name};
  CHOOSE(permissive)
  if (filter && strcmp(filter, "no-sigreturn") == 0) {
    chosen = (struct sock_fprog){sizeof no_sigreturn / sizeof no_sigreturn[0], no_sigreturn};
  }
  if (filter && strcmp(filter, "no-ioctl") == 0) chosen = (struct sock_fprog){sizeof no_ioctl / sizeof no_ioctl[0], no_ioctl};
  if (!chosen.filter) {
    fprintf(stderr, "usage: seccomp_sandbox --filter permissive|no-sigreturn|no-ioctl [--ms MS] [--execs N]\n");
    return 2;
  }

  int failed = 0;
  for (long i = 0; i < execs; ++i) {
    pid_t child = fork();
    if (child == 0) {
      confine();
      /* Work first, so that the exec comes while the sampler runs. */
      volatile uint64_t sink = 0;
      for (double end = now_ms() + 20; now_ms() < end;) sink += 1;
      execl("/bin/true", "true", (char*)NULL);
      _exit(127);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }

  /* stdout is written before the filter: an allow-list keeps write anyway. */
  confine();
  volatile uint64_t sink = 0;
  uint64_t x = 1;
  for (double end = now_ms() + (double)ms; now_ms() < end;) {
    for (int i = 0; i < 100000; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + (uint64_t)i;  // @line:sandboxed_work
    COZ_PROGRESS_NAMED("sandboxed");
  }
  sink = x;
  printf("seccomp_sandbox done children_failed=%d\n", failed);
  fflush(stdout);
  return 0;
}
