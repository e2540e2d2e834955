// Whether a seccomp filter the program installs lets the runtime go on
// working on the threads it will confine.
//
// A filter is a classic BPF program the kernel runs on every system call of
// the thread (and of the threads it creates later). The runtime makes
// system calls of its own on the program's threads: the return from its
// sample signal handler (rt_sigreturn), the sleeps that pay delays, the
// sampler's period changes (ioctl). A filter that kills or refuses one of
// them ends the program: OpenSSH's pre-authentication sandbox allows no
// rt_sigreturn (SIGSYS at the first sample), man-db's sandbox answers ioctl
// with an error (the sampler could not be paused before an exec). The
// runtime runs the program's filter here on those calls before it takes
// effect, and where any is not allowed, the thread stops taking part first
// (seal_current_thread: no sampler, no delays).
#pragma once

#include <linux/filter.h>

#include <cstdint>

namespace coz::seccomp {

/// What the filter answers a call: its SECCOMP_RET_* action (the data
/// bits cleared), or SECCOMP_RET_KILL_PROCESS for a program the kernel
/// would refuse (out-of-range jump, no return, bad instruction).
uint32_t action_for(const sock_fprog& filter, uint32_t arch, int number, const uint64_t (&args)[6],
                    uint64_t instruction_pointer = 0);

/// Whether every call the runtime makes on a program thread (x86-64) is
/// allowed (SECCOMP_RET_ALLOW or SECCOMP_RET_LOG) by the filter.
bool runtime_calls_allowed(const sock_fprog& filter);

}  // namespace coz::seccomp
