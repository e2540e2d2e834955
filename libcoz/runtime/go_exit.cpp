#include "go_exit.h"

#include <sys/syscall.h>

#include "go_patch.h"
#include "sys.h"

namespace coz {
namespace {

// runtime.exit (runtime.exit.abi0) as Go's assembler writes it for
// linux/amd64 (src/runtime/sys_linux_amd64.s), 12 bytes:
//   mov 0x8(%rsp),%edi; mov $SYS_exit_group,%eax; syscall; ret
constexpr unsigned char go_exit_code[12] = {0x8b, 0x7c, 0x24, 0x08, 0xb8, 0xe7, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3};

void (*g_finish)() = nullptr;

}  // namespace
}  // namespace coz

// The exit path's own stack, and whether a thread took it. Hidden: the
// trampoline below reaches them RIP-relative.
extern "C" {
__attribute__((visibility("hidden"))) alignas(64) unsigned char coz_go_exit_stack[256 * 1024];
__attribute__((visibility("hidden"))) int coz_go_exiting = 0;

/// On the exit path's stack: the profile's last records, then the end.
__attribute__((visibility("hidden"), noreturn, used)) void coz_go_exit(int status) {
  if (coz::g_finish) coz::g_finish();
  for (;;) coz::sys::raw_syscall6(SYS_exit_group, status);
}
}

// Entered by a jump from runtime.exit, on the Go caller's stack: the return
// address at 0(%rsp), the status at 8(%rsp) (Go's ABI0). The first thread
// switches to the exit path's stack and finishes; one that exits meanwhile
// waits for it, which ends the whole process.
__asm__(R"(
  .text
  .globl coz_go_exit_entry
  .hidden coz_go_exit_entry
  .type coz_go_exit_entry, @function
coz_go_exit_entry:
  movl 8(%rsp), %edi
  movl $1, %eax
  xchgl %eax, coz_go_exiting(%rip)
  testl %eax, %eax
  jnz 1f
  leaq coz_go_exit_stack+262144(%rip), %rsp
  call coz_go_exit
1:
  movl $34, %eax
  syscall
  jmp 1b
  .size coz_go_exit_entry, .-coz_go_exit_entry
)");

extern "C" void coz_go_exit_entry();

namespace coz {

bool redirect_go_exit(uint64_t address, void (*finish)()) {
  g_finish = finish;  // before the jump: a thread may exit at once
  return redirect_go_function(address, go_exit_code, sizeof go_exit_code, reinterpret_cast<const void*>(&coz_go_exit_entry));
}

}  // namespace coz
