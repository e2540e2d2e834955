// The runtime's reading of the program's seccomp filters (seccomp_filter.h):
// classic BPF run on the runtime's own calls before a filter takes effect.
#include "seccomp_filter.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <vector>

#include <gtest/gtest.h>

namespace coz::seccomp {
namespace {

sock_filter load(uint32_t offset) { return BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset); }
sock_filter ret(uint32_t action) { return BPF_STMT(BPF_RET | BPF_K, action); }
sock_filter jump_eq(uint32_t k, uint8_t jt, uint8_t jf) { return BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, jt, jf); }

struct Filter {
  std::vector<sock_filter> code;
  sock_fprog program() { return {static_cast<unsigned short>(code.size()), code.data()}; }
};

/// The prologue every real filter has: another architecture is killed.
std::vector<sock_filter> arch_check() {
  return {load(offsetof(seccomp_data, arch)), jump_eq(AUDIT_ARCH_X86_64, 1, 0), ret(SECCOMP_RET_KILL_PROCESS)};
}

/// An allow-list of `allowed` calls, killing the rest.
Filter allow_list(const std::vector<int>& allowed) {
  Filter f{arch_check()};
  f.code.push_back(load(offsetof(seccomp_data, nr)));
  for (int nr : allowed) {
    f.code.push_back(jump_eq(static_cast<uint32_t>(nr), 0, 1));
    f.code.push_back(ret(SECCOMP_RET_ALLOW));
  }
  f.code.push_back(ret(SECCOMP_RET_KILL_PROCESS));
  return f;
}

const std::vector<int> runtime_calls = {SYS_rt_sigreturn, SYS_clock_nanosleep, SYS_prctl,       SYS_ioctl,
                                        SYS_futex,        SYS_rt_sigprocmask,  SYS_gettid,      SYS_getpid,
                                        SYS_process_vm_readv, SYS_getrusage,   SYS_close};

TEST(SeccompFilter, AllowingEverythingLetsTheRuntimeWork) {
  Filter f{arch_check()};
  f.code.push_back(ret(SECCOMP_RET_ALLOW));
  sock_fprog p = f.program();
  EXPECT_TRUE(runtime_calls_allowed(p));
  EXPECT_EQ(action_for(p, AUDIT_ARCH_I386, SYS_read, {}), SECCOMP_RET_KILL_PROCESS) << "the arch is checked";
}

TEST(SeccompFilter, AnAllowListWithTheRuntimesCallsLetsItWork) {
  Filter f = allow_list(runtime_calls);
  sock_fprog p = f.program();
  EXPECT_TRUE(runtime_calls_allowed(p));
  EXPECT_EQ(action_for(p, AUDIT_ARCH_X86_64, SYS_openat, {}), SECCOMP_RET_KILL_PROCESS);
}

// OpenSSH's pre-authentication sandbox: no rt_sigreturn.
TEST(SeccompFilter, AnAllowListWithoutSigreturnDoesNot) {
  std::vector<int> calls(runtime_calls.begin() + 1, runtime_calls.end());
  Filter f = allow_list(calls);
  sock_fprog p = f.program();
  EXPECT_FALSE(runtime_calls_allowed(p));
  EXPECT_EQ(action_for(p, AUDIT_ARCH_X86_64, SYS_rt_sigreturn, {}), SECCOMP_RET_KILL_PROCESS);
}

// man-db's sandbox for col and groff: ioctl answered with an error.
TEST(SeccompFilter, AnErrorForIoctlDoesNot) {
  Filter f{arch_check()};
  f.code.push_back(load(offsetof(seccomp_data, nr)));
  f.code.push_back(jump_eq(SYS_ioctl, 0, 1));
  f.code.push_back(ret(SECCOMP_RET_ERRNO | EPERM));
  f.code.push_back(ret(SECCOMP_RET_ALLOW));
  sock_fprog p = f.program();
  EXPECT_FALSE(runtime_calls_allowed(p));
  EXPECT_EQ(action_for(p, AUDIT_ARCH_X86_64, SYS_ioctl, {}), SECCOMP_RET_ERRNO);
  EXPECT_EQ(action_for(p, AUDIT_ARCH_X86_64, SYS_write, {}), SECCOMP_RET_ALLOW);
}

// Filters look at arguments: ioctl allowed for TCGETS alone refuses the sampler's.
TEST(SeccompFilter, ArgumentsAreTheRuntimesOwn) {
  Filter f{arch_check()};
  f.code.push_back(load(offsetof(seccomp_data, nr)));
  f.code.push_back(jump_eq(SYS_ioctl, 0, 3));
  f.code.push_back(load(offsetof(seccomp_data, args[1])));  // the request's low 32 bits
  f.code.push_back(jump_eq(TCGETS, 1, 0));
  f.code.push_back(ret(SECCOMP_RET_ERRNO | ENOTTY));
  f.code.push_back(ret(SECCOMP_RET_ALLOW));
  sock_fprog p = f.program();
  EXPECT_EQ(action_for(p, AUDIT_ARCH_X86_64, SYS_ioctl, {1, TCGETS}), SECCOMP_RET_ALLOW);
  EXPECT_FALSE(runtime_calls_allowed(p));
}

TEST(SeccompFilter, ScratchMemoryAndArithmeticRun) {
  // nr - 1 stored, loaded back into X, A = X + 1: the call number again.
  Filter f{arch_check()};
  f.code.push_back(load(offsetof(seccomp_data, nr)));
  f.code.push_back(BPF_STMT(BPF_ALU | BPF_SUB | BPF_K, 1));
  f.code.push_back(BPF_STMT(BPF_ST, 3));
  f.code.push_back(BPF_STMT(BPF_LDX | BPF_MEM, 3));
  f.code.push_back(BPF_STMT(BPF_MISC | BPF_TXA, 0));
  f.code.push_back(BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1));
  f.code.push_back(jump_eq(SYS_getpid, 0, 1));
  f.code.push_back(ret(SECCOMP_RET_LOG));
  f.code.push_back(ret(SECCOMP_RET_TRAP));
  sock_fprog p = f.program();
  EXPECT_EQ(action_for(p, AUDIT_ARCH_X86_64, SYS_getpid, {}), SECCOMP_RET_LOG);
  EXPECT_EQ(action_for(p, AUDIT_ARCH_X86_64, SYS_gettid, {}), SECCOMP_RET_TRAP);
}

// What the kernel would refuse to load is taken for the worst answer.
TEST(SeccompFilter, ProgramsTheKernelRefusesAreTheWorst) {
  Filter jump_out{{jump_eq(0, 5, 5), ret(SECCOMP_RET_ALLOW)}};
  Filter no_return{{load(offsetof(seccomp_data, nr))}};
  Filter bad_offset{{load(62), ret(SECCOMP_RET_ALLOW)}};
  Filter bad_memory{{BPF_STMT(BPF_LD | BPF_MEM, 16), ret(SECCOMP_RET_ALLOW)}};
  Filter unknown{{BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0), ret(SECCOMP_RET_ALLOW)}};
  for (Filter* f : {&jump_out, &no_return, &bad_offset, &bad_memory, &unknown}) {
    sock_fprog p = f->program();
    EXPECT_EQ(action_for(p, AUDIT_ARCH_X86_64, SYS_getpid, {}), SECCOMP_RET_KILL_PROCESS);
    EXPECT_FALSE(runtime_calls_allowed(p));
  }
  sock_fprog empty{0, nullptr};
  EXPECT_FALSE(runtime_calls_allowed(empty));
}

}  // namespace
}  // namespace coz::seccomp
