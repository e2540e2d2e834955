#include "seccomp_filter.h"

#include <linux/audit.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <signal.h>
#include <time.h>

#include <cstddef>

namespace coz::seccomp {
namespace {

constexpr uint32_t kill_process = SECCOMP_RET_KILL_PROCESS;

/// The bytes the filter reads (struct seccomp_data): nr, arch, ip, args.
struct CallData {
  int32_t nr;
  uint32_t arch;
  uint64_t instruction_pointer;
  uint64_t args[6];
};
static_assert(sizeof(CallData) == 64, "struct seccomp_data's layout");

/// The kernel's checks (seccomp_check_filter) run at load; a program that
/// fails them is refused there. Here the same program is only run: anything
/// it could not do is treated as the worst answer.
uint32_t run(const sock_fprog& filter, const CallData& data) {
  if (!filter.filter || filter.len == 0 || filter.len > BPF_MAXINSNS) return kill_process;
  uint32_t a = 0, x = 0;
  uint32_t scratch[BPF_MEMWORDS] = {};
  auto word_at = [&](uint32_t offset, uint32_t& out) {
    if (offset % 4 != 0 || offset + 4 > sizeof data) return false;
    __builtin_memcpy(&out, reinterpret_cast<const char*>(&data) + offset, 4);
    return true;
  };
  for (uint32_t pc = 0; pc < filter.len; ++pc) {
    const sock_filter& in = filter.filter[pc];
    const uint32_t k = in.k;
    switch (in.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (!word_at(k, a)) return kill_process;
        break;
      case BPF_LD | BPF_W | BPF_LEN: a = sizeof data; break;
      case BPF_LDX | BPF_W | BPF_LEN: x = sizeof data; break;
      case BPF_LD | BPF_IMM: a = k; break;
      case BPF_LDX | BPF_IMM: x = k; break;
      case BPF_LD | BPF_MEM:
        if (k >= BPF_MEMWORDS) return kill_process;
        a = scratch[k];
        break;
      case BPF_LDX | BPF_MEM:
        if (k >= BPF_MEMWORDS) return kill_process;
        x = scratch[k];
        break;
      case BPF_ST:
        if (k >= BPF_MEMWORDS) return kill_process;
        scratch[k] = a;
        break;
      case BPF_STX:
        if (k >= BPF_MEMWORDS) return kill_process;
        scratch[k] = x;
        break;
      case BPF_MISC | BPF_TAX: x = a; break;
      case BPF_MISC | BPF_TXA: a = x; break;
      case BPF_ALU | BPF_ADD | BPF_K: a += k; break;
      case BPF_ALU | BPF_ADD | BPF_X: a += x; break;
      case BPF_ALU | BPF_SUB | BPF_K: a -= k; break;
      case BPF_ALU | BPF_SUB | BPF_X: a -= x; break;
      case BPF_ALU | BPF_MUL | BPF_K: a *= k; break;
      case BPF_ALU | BPF_MUL | BPF_X: a *= x; break;
      case BPF_ALU | BPF_DIV | BPF_K:
        if (k == 0) return kill_process;
        a /= k;
        break;
      case BPF_ALU | BPF_DIV | BPF_X:
        if (x == 0) return kill_process;  // the kernel's BPF returns 0 here; no filter relies on it
        a /= x;
        break;
      case BPF_ALU | BPF_MOD | BPF_K:
        if (k == 0) return kill_process;
        a %= k;
        break;
      case BPF_ALU | BPF_MOD | BPF_X:
        if (x == 0) return kill_process;
        a %= x;
        break;
      case BPF_ALU | BPF_AND | BPF_K: a &= k; break;
      case BPF_ALU | BPF_AND | BPF_X: a &= x; break;
      case BPF_ALU | BPF_OR | BPF_K: a |= k; break;
      case BPF_ALU | BPF_OR | BPF_X: a |= x; break;
      case BPF_ALU | BPF_XOR | BPF_K: a ^= k; break;
      case BPF_ALU | BPF_XOR | BPF_X: a ^= x; break;
      case BPF_ALU | BPF_LSH | BPF_K: a = k < 32 ? a << k : 0; break;
      case BPF_ALU | BPF_LSH | BPF_X: a = x < 32 ? a << x : 0; break;
      case BPF_ALU | BPF_RSH | BPF_K: a = k < 32 ? a >> k : 0; break;
      case BPF_ALU | BPF_RSH | BPF_X: a = x < 32 ? a >> x : 0; break;
      case BPF_ALU | BPF_NEG: a = 0u - a; break;
      case BPF_JMP | BPF_JA:
        if (k >= filter.len - pc - 1) return kill_process;
        pc += k;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
      case BPF_JMP | BPF_JEQ | BPF_X:
      case BPF_JMP | BPF_JGT | BPF_K:
      case BPF_JMP | BPF_JGT | BPF_X:
      case BPF_JMP | BPF_JGE | BPF_K:
      case BPF_JMP | BPF_JGE | BPF_X:
      case BPF_JMP | BPF_JSET | BPF_K:
      case BPF_JMP | BPF_JSET | BPF_X: {
        const uint32_t operand = BPF_SRC(in.code) == BPF_X ? x : k;
        bool taken = false;
        switch (BPF_OP(in.code)) {
          case BPF_JEQ: taken = a == operand; break;
          case BPF_JGT: taken = a > operand; break;
          case BPF_JGE: taken = a >= operand; break;
          case BPF_JSET: taken = (a & operand) != 0; break;
        }
        const uint32_t offset = taken ? in.jt : in.jf;
        if (offset >= filter.len - pc - 1) return kill_process;
        pc += offset;
        break;
      }
      case BPF_RET | BPF_K: return k;
      case BPF_RET | BPF_A: return a;
      default: return kill_process;  // not an instruction seccomp accepts
    }
  }
  return kill_process;  // fell off the end: the kernel refuses such a program
}

/// A call the runtime makes on a program thread, with the arguments a filter
/// may look at (descriptors and addresses are the program's to choose: 0).
struct RuntimeCall {
  int number;
  uint64_t args[6];
};

// sample_handler.cpp, sys.h (tight_sleep_ns), sampler.cpp, wait.cpp, delay payments.
const RuntimeCall runtime_calls[] = {
    {SYS_rt_sigreturn, {}},
    {SYS_clock_nanosleep, {CLOCK_MONOTONIC, TIMER_ABSTIME}},
    {SYS_clock_nanosleep, {CLOCK_MONOTONIC, 0}},
    {SYS_prctl, {PR_GET_TIMERSLACK}},
    {SYS_prctl, {PR_SET_TIMERSLACK, 1}},
    {SYS_ioctl, {0, PERF_EVENT_IOC_PERIOD}},
    {SYS_ioctl, {0, PERF_EVENT_IOC_ENABLE}},
    {SYS_ioctl, {0, PERF_EVENT_IOC_DISABLE}},
    {SYS_futex, {0, FUTEX_WAIT_PRIVATE}},
    {SYS_futex, {0, FUTEX_WAKE_PRIVATE}},
    {SYS_rt_sigprocmask, {SIG_BLOCK}},
    {SYS_rt_sigprocmask, {SIG_SETMASK}},
    {SYS_gettid, {}},
    {SYS_getpid, {}},
    {SYS_process_vm_readv, {}},
    {SYS_getrusage, {static_cast<uint64_t>(RUSAGE_THREAD)}},
    {SYS_close, {}},
};

}  // namespace

uint32_t action_for(const sock_fprog& filter, uint32_t arch, int number, const uint64_t (&args)[6],
                    uint64_t instruction_pointer) {
  CallData data{number, arch, instruction_pointer, {}};
  for (int i = 0; i < 6; ++i) data.args[i] = args[i];
  return run(filter, data) & SECCOMP_RET_ACTION_FULL;
}

bool runtime_calls_allowed(const sock_fprog& filter) {
  for (const RuntimeCall& call : runtime_calls) {
    const uint32_t action = action_for(filter, AUDIT_ARCH_X86_64, call.number, call.args);
    if (action != SECCOMP_RET_ALLOW && action != SECCOMP_RET_LOG) return false;
  }
  return true;
}

}  // namespace coz::seccomp
