// What a Go program's binary says about whether the runtime can work in it
// (issue #52; ../shared/GO-FACTS.md).
#pragma once

#include <cstdint>

#include "elf_file.h"

namespace coz {

/// Go's toolchain built it: the linker's "Go" build-id note (.note.go.buildid).
bool is_go_program(const ElfFile& file);

/// A Go program linked without runtime/cgo, though dynamically linked (Go
/// 1.19's -linkmode=external, say): Go then starts its threads and sets its
/// signal handlers with raw system calls, so the runtime never sees the
/// threads, and Go's handler replaces the runtime's and takes its samples
/// for signals of the program's own (SIGTRAP is fatal to Go: it exits with
/// "SIGTRAP: trace trap"). With runtime/cgo both go through the C library,
/// whose pthread_create the program then imports.
bool is_go_program_without_cgo(const ElfFile& file);

/// Where a thread running Go code keeps its current goroutine's g: its
/// offset from the thread pointer (%fs), from the TLS symbol runtime.tlsg
/// of the executable (x86-64's variant II layout: the executable's block
/// ends at the thread pointer). Go's internal ABI also keeps g in R14, but
/// Go's assembly (sha256's, say) uses R14 for its own. 0 if unknown.
int64_t go_g_tls_offset(const ElfFile& file);

/// The file address of the Go assembly function `name` (runtime.exit, Go's
/// raw exit_group; runtime.futex): its ABI0 body, `name`.abi0, in releases
/// with the register ABI. 0 if the symbols do not say (a binary built with
/// -ldflags=-s).
uint64_t go_assembly_function(const ElfFile& file, const std::string& name);

}  // namespace coz
