#include "go_wait.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <atomic>
#include <cerrno>
#include <utility>

#include "go_patch.h"
#include "sys.h"
#include "wait.h"

extern "C" {
/// The runtime's side of runtime.futex, on the thread's own stack (SysV
/// ABI): the bracketing of syscall(SYS_futex, ...) in interpose.cpp for the
/// two operations Go uses. Returns what the kernel did (-errno on failure),
/// as runtime.futex does.
__attribute__((visibility("hidden"), used)) long coz_go_futex(uint64_t addr, uint64_t op, uint64_t val, uint64_t ts,
                                                            uint64_t addr2, uint64_t val3, const void* caller) {
  auto futex = [&] {
    return coz::sys::raw_syscall6(SYS_futex, static_cast<long>(addr), static_cast<long>(op & 0xffffffff),
                                  static_cast<long>(val & 0xffffffff), static_cast<long>(ts),
                                  static_cast<long>(addr2), static_cast<long>(val3 & 0xffffffff));
  };
  const int command = static_cast<int>(op) & FUTEX_CMD_MASK;
  if (command == FUTEX_WAKE) {
    coz::catch_up();
    return futex();
  }
  if (command != FUTEX_WAIT) return futex();
  coz::Wait wait(coz::WaitKind::Futex, coz::Wait::Entry::PayFirst, caller);
  const long ret = futex();
  // Woken by a FUTEX_WAKE of the program, or not blocked at all (the value
  // had changed): skip; a timeout or a signal pays.
  wait.done(ret == 0 || ret == -EAGAIN);
  return ret;
}
}

// Entered by a jump from runtime.futex, on its Go caller's stack: the
// return address at 0(%rsp), the arguments at 8..40(%rsp) and the result
// at 48(%rsp) (Go's ABI0, which lets a callee clobber every register but
// %rsp). The arguments are loaded once, as the system call takes them (the
// C call gets the fourth in %rcx, and the Go caller's return address as a
// seventh). %r12 keeps the Go stack pointer across the call, %rbx the thread's
// ThreadState (both callee-saved in the C ABI), read from the runtime's TLS
// (initial-exec: the runtime is preloaded, so its TLS is in the static
// block); its GoCallStack is at offset 0 (go_wait.h).
__asm__(R"(
  .text
  .globl coz_go_futex_entry
  .hidden coz_go_futex_entry
  .type coz_go_futex_entry, @function
coz_go_futex_entry:
  movq 8(%rsp), %rdi
  movl 16(%rsp), %esi
  movl 20(%rsp), %edx
  movq 24(%rsp), %r10
  movq 32(%rsp), %r8
  movl 40(%rsp), %r9d
  movq _ZN3coz6detail10tls_threadE@gottpoff(%rip), %r11
  movq %fs:(%r11), %rbx
  testq %rbx, %rbx
  jz 1f
  movq (%rbx), %rax
  testq %rax, %rax
  jz 1f
  cmpq $0, 8(%rbx)
  jne 1f
  movq $1, 8(%rbx)
  movq %rsp, %r12
  movq %rax, %rsp
  subq $16, %rsp
  movq (%r12), %rax
  movq %rax, (%rsp)
  movq %r10, %rcx
  call coz_go_futex
  movq $0, 8(%rbx)
  movq %r12, %rsp
  jmp 2f
1:
  movl $202, %eax
  syscall
2:
  movl %eax, 48(%rsp)
  ret
  .size coz_go_futex_entry, .-coz_go_futex_entry
)");

extern "C" void coz_go_futex_entry();

namespace coz {
namespace {

// runtime.futex (runtime.futex.abi0) as Go's assembler writes it for
// linux/amd64, 40 bytes: load the six arguments from the stack, SYS_futex,
// syscall, store the result, ret.
constexpr unsigned char go_futex_code[40] = {
    0x48, 0x8b, 0x7c, 0x24, 0x08,  // mov 0x8(%rsp),%rdi
    0x8b, 0x74, 0x24, 0x10,        // mov 0x10(%rsp),%esi
    0x8b, 0x54, 0x24, 0x14,        // mov 0x14(%rsp),%edx
    0x4c, 0x8b, 0x54, 0x24, 0x18,  // mov 0x18(%rsp),%r10
    0x4c, 0x8b, 0x44, 0x24, 0x20,  // mov 0x20(%rsp),%r8
    0x44, 0x8b, 0x4c, 0x24, 0x28,  // mov 0x28(%rsp),%r9d
    0xb8, 0xca, 0x00, 0x00, 0x00,  // mov $SYS_futex,%eax
    0x0f, 0x05,                    // syscall
    0x89, 0x44, 0x24, 0x30,        // mov %eax,0x30(%rsp)
    0xc3,                          // ret
};

// Deep enough for a payment's sleep and a wait's records; only the pages
// touched are ever backed.
constexpr size_t call_stack_size = 128 * 1024;

std::atomic<bool> g_redirected{false};

}  // namespace

bool redirect_go_futex(uint64_t address) {
  if (!redirect_go_function(address, go_futex_code, sizeof go_futex_code,
                            reinterpret_cast<const void*>(&coz_go_futex_entry))) {
    return false;
  }
  g_redirected.store(true, std::memory_order_release);
  return true;
}

bool go_futex_redirected() { return g_redirected.load(std::memory_order_acquire); }

void give_go_call_stack(GoCallStack& thread) {
  if (!go_futex_redirected() || thread.go_call_top != 0) return;
  void* base = mmap(nullptr, call_stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return;  // its calls go straight to the kernel
  thread.go_call_busy = 0;
  thread.go_call_top = reinterpret_cast<uint64_t>(base) + call_stack_size;
}

void take_go_call_stack(GoCallStack& thread) {
  const uint64_t top = std::exchange(thread.go_call_top, 0);
  if (top != 0) munmap(reinterpret_cast<void*>(top - call_stack_size), call_stack_size);
}

}  // namespace coz
