// Redirecting one of a Go program's assembly functions to the runtime's own
// code: runtime.exit (go_exit.h) and runtime.futex (go_wait.h) are raw
// system calls that pass by the C library, which is where the runtime
// otherwise meets a program.
#pragma once

#include <cstddef>
#include <cstdint>

namespace coz {

/// Replaces the first 12 bytes of the function at `address` in memory with
/// a jump to `target` (movabs, jmp *%rax: %rax is free in Go's ABI0), only
/// if the function's code is `expected` (`size` bytes, at least 12); false,
/// and nothing changed, otherwise. At start-up, before the Go program runs.
bool redirect_go_function(uint64_t address, const unsigned char* expected, size_t size, const void* target);

}  // namespace coz
