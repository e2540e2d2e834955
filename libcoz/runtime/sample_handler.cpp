// The sampler's signal side: everything that runs in the sample signal
// handler (taking a sample, recording it, settling the period, paying the
// delays owed, judging whether a thread should move to another sampler),
// and the drain of a thread's ring, which the handler and the profiler
// thread both do. sampler.cpp starts, moves and stops the samplers.
#include "sample_handler.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <cerrno>
#include <cstring>

#include "breakpoints.h"
#include "unwinder.h"
#include "sample_policy.h"
#include "futex_lock.h"
#include "signal_stack.h"
#include "sampler.h"

namespace coz {

// ---------------------------------------------------------------------------
// Signal context. Everything in this namespace runs inside the sample signal
// handler: no allocation, no locks that wait, no exceptions, no stdio.
// ---------------------------------------------------------------------------
namespace signal_safe {
namespace {

/// Sets a perf_event's sample period (the kernel restarts its countdown).
/// A raw system call: async-signal-safe, and ioctl is not re-entered.
bool set_period(int perf_fd, uint64_t period) {
  return sys::raw_syscall6(SYS_ioctl, perf_fd, PERF_EVENT_IOC_PERIOD, reinterpret_cast<long>(&period)) == 0;
}

/// Stops the perf_event from signalling its thread on each sample (O_ASYNC off).
void stop_signals(int perf_fd) { sys::raw_syscall6(SYS_fcntl, perf_fd, F_SETFL, 0, 0, 0, 0); }

/// How many times faster than the configured period user-time samplers
/// sample now (Config::delay_sampling_rate during experiments, else 1).
uint64_t short_period_rate(const Runtime& rt) {
  return sample_policy::short_period_rate(rt.config.sample_period_ns, rt.sample_period_ns.load(std::memory_order_relaxed));
}

/// Whether this sample enters the profile's counts (sample_policy.h).
bool counted_in_profile(const Runtime& rt, ThreadState& t) {
  return sample_policy::counted_in_profile(short_period_rate(rt), t.short_period_samples);
}

void on_sample_signal(int, siginfo_t*, void* context);

/// Whether `frame` is in the runtime's own object (libcoz.so): its
/// interposed pthread_cond_wait, pthread_mutex_lock... stand between a
/// line and the library function it called.
bool in_runtime_object(const UnwindFrame& frame) {
  const auto here = reinterpret_cast<uint64_t>(&on_sample_signal);
  return frame.table && here >= frame.table->base && here < frame.table->end;
}

/// Whether `frame` is in one of the runtime's functions that mark its own
/// work: the sample handler (draining, walking, paying delays) and a
/// thread's sampler set-up and tear-down. Those samples belong to no line of
/// the program; through the handler's signal frame, the walk would go on to
/// the interrupted line and charge it with the handler's time.
bool is_runtime_work(const UnwindFrame& frame) {
  const uint64_t own[] = {reinterpret_cast<uint64_t>(&on_sample_signal),
                          reinterpret_cast<uint64_t>(&register_current_thread),
                          reinterpret_cast<uint64_t>(&unregister_current_thread)};
  if (!in_runtime_object(frame)) return false;
  return std::find(std::begin(own), std::end(own), frame.table->function_start(frame.pc)) != std::end(own);
}

/// Walks a sample's stack and finds its frames in scope: frames[0] is the
/// line the sample is attributed to (the first in-scope frame up the real
/// call stack, so that time inside a library counts for the line that called
/// it); all of them make its folded stack, where each in-scope line is
/// followed (on the inner side) by the out-of-scope function it called, if
/// the walk passed through one. Counts why the walk ended. Nullopt for a
/// sample of the runtime's own work: one of its frames (is_runtime_work)
/// before any in-scope line.
/// `walk`: where the walk's frames go (Config::max_unwind_frames of them).
std::optional<size_t> stack_frames(Runtime& rt, const UnwindRegisters& regs, const StackMemory& stack,
                                   UnwindFrame* walk, StackFrame (&frames)[StackTable::max_frames],
                                   uint64_t weight) {
  UnwindStop stop;
  size_t depth = unwind(rt.frames.tables(), regs, stack, walk, Config::max_unwind_frames, stop);
  size_t n = 0;
  SourceLine* last_line = nullptr;
  const UnwindFrame* callee = nullptr;  // outermost out-of-scope frame since the last in-scope one
  for (size_t i = 0; i < depth && n < StackTable::max_frames; ++i) {
    const UnwindFrame& frame = walk[i];
    SourceLine* line = rt.lines.find(frame.pc);
    if (!line) {
      if (!last_line && is_runtime_work(frame)) return std::nullopt;
      // The callee named is the library's function, never our wrapper around it.
      if (!in_runtime_object(frame)) callee = &frame;
      continue;
    }
    if (callee && callee->table && n + 2 <= StackTable::max_frames) {
      if (uint64_t start = callee->table->function_start(callee->pc)) frames[n++] = StackTable::function_frame(start);
    }
    callee = nullptr;
    if (line != last_line) frames[n++] = StackTable::line_frame(line);
    last_line = line;
  }
  if (n == StackTable::max_frames && stop != UnwindStop::Outermost) stop = UnwindStop::Outermost;  // deep enough
  if (weight) rt.stats.unwind_stops[static_cast<size_t>(stop)].fetch_add(weight, std::memory_order_relaxed);
  return n;
}

/// Whether a sample stands at one of the runtime's hardware breakpoints
/// (`--progress`/`--latency` lines). The debug exception stops the thread
/// right at the breakpoint's address, and samples land there: the trap's
/// own kernel time, and signal-mode samples whose signal waited for the
/// trap's return to user mode. Neither is the line's work: on nghttpd under
/// load, 33% of the samples landed on the counted line, whose code is one
/// compare. They count nowhere (the CPU-time coverage shows them missing).
bool in_breakpoint_trap(const Runtime& rt, const UnwindRegisters& regs) {
  for (int i = 0; i < rt.breakpoints.count; ++i) {
    if (regs.ip == rt.breakpoints.address[i]) return true;
  }
  return false;
}

/// Counts a sample of thread `t`, and credits its delay if it is in the
/// selected line. Samples of the runtime's own work count nowhere.
/// `source`: the sampler that took it. `walk`: room for the walk, the
/// thread's own unless another thread walks its sample (the profiler
/// thread, for the per-CPU rings). `periods`: how many periods of the
/// thread's CPU time the sample stands for (a timer's, see on_sample_signal).
void record_sample(Runtime& rt, ThreadState& t, const UnwindRegisters& regs, const StackMemory& stack,
                   SampleSource source = SampleSource::UserTime, UnwindFrame* walk = nullptr, uint64_t periods = 1) {
  // A kernel-time sampler's sample stands for `weight` configured periods
  // (kernel_period_ns): each counts that many times, and credits the
  // delays of `weight` x `rate` user samples.
  const bool kernel_sampler = source == SampleSource::KernelTime;
  const bool in_kernel = source != SampleSource::UserTime;
  // A CPU-time timer keeps the configured period while the others sample
  // faster (set_sample_period): each of its samples counts, and credits
  // the delays of `periods` x rate samples at the period in force.
  const bool timer = t.timer_mode;
  const uint64_t kernel_weight = kernel_sampler ? g_kernel_weight.load(std::memory_order_relaxed) : 0;
  // How many samples at the period in force this one credits (asked only of those that credit).
  auto credits = [&]() -> uint64_t {
    return kernel_sampler ? short_period_rate(rt) * kernel_weight : timer ? short_period_rate(rt) * periods : periods;
  };
  if (in_breakpoint_trap(rt, regs)) {
    // The trap's time is the runtime's: virtually removed (credit_trap_sample).
    if (uint64_t delay = rt.ledger.credit_trap_sample(t.ledger, credits())) rt.points.note_delay_credit(delay);
    return;
  }
  const uint64_t weight = kernel_sampler ? kernel_weight : timer || counted_in_profile(rt, t) ? periods : 0;
  StackFrame frames[StackTable::max_frames];
  std::optional<size_t> walked = stack_frames(rt, regs, stack, walk ? walk : t.unwind_frames, frames, weight);
  if (!walked) return;
  const size_t depth = *walked;
  rt.stats.samples.fetch_add(weight, std::memory_order_relaxed);
  if (in_kernel) rt.stats.kernel_samples.fetch_add(weight, std::memory_order_relaxed);
  SourceLine* line = nullptr;
  for (size_t i = 0; i < depth && !line; ++i) line = StackTable::line_of(frames[i]);
  if (!line) {
    rt.stats.unattributed.fetch_add(weight, std::memory_order_relaxed);
    if (in_kernel) rt.stats.unattributed_kernel.fetch_add(weight, std::memory_order_relaxed);
    return;
  }
  rt.stacks.add(frames, depth, weight);
  rt.lines.count_samples(*line, weight);

  SourceLine* selected = rt.experiment.selected.load(std::memory_order_acquire);
  if (selected == line->experiment_unit()) {
    // Every sample credits its delay (the ledger's delay per sample matches the period in force).
    rt.experiment.selected_samples.fetch_add(weight, std::memory_order_relaxed);
    if (uint64_t delay = rt.ledger.credit_sample(t.ledger, credits())) rt.points.note_delay_credit(delay);
  }
}

/// Answers of follows_syscall by address, direct-mapped: a server's kernel
/// time returns to user mode at a few dozen places, and the system call
/// that reads the code took 9% of nghttpd's profiler thread (its whole-CPU
/// samples). An entry is the address shifted left by two, with bit 1 the
/// answer and bit 0 set; lock-free, since handlers ask too. A library
/// unloaded and another mapped at the same address may be answered wrong
/// for a sample or so: a system call's time taken as user time there.
std::atomic<uint64_t> g_follows_syscall_cache[256];

/// Whether the instruction before `ip` is `syscall` (0f 05). Read with
/// process_vm_readv, which fails cleanly where the library that held `ip`
/// was unloaded since the sample.
bool follows_syscall(uint64_t ip) {
  std::atomic<uint64_t>& cached = g_follows_syscall_cache[(ip ^ (ip >> 8)) % 256];
  const uint64_t entry = cached.load(std::memory_order_relaxed);
  if (entry >> 2 == ip && (entry & 1)) return (entry & 2) != 0;
  unsigned char code[2] = {};
  iovec local{code, sizeof code};
  iovec remote{reinterpret_cast<void*>(ip - sizeof code), sizeof code};
  long n = sys::raw_syscall6(SYS_process_vm_readv, sys::getpid(), reinterpret_cast<long>(&local), 1,
                             reinterpret_cast<long>(&remote), 1, 0);
  if (n != static_cast<long>(sizeof code)) return false;  // not cached: the code may be mapped later
  const bool answer = code[0] == 0x0f && code[1] == 0x05;
  cached.store(ip << 2 | (answer ? 2 : 0) | 1, std::memory_order_relaxed);
  return answer;
}

/// A sample record, laid out for sample_type = IP | REGS_USER | STACK_USER
/// (start_sampling): u64 ip; u64 abi; u64 regs[3] (bp, sp, ip: the mask's
/// bit order) unless abi is NONE; u64 size; u8 data[size]; u64 dyn_size
/// (how much of data the kernel could copy) when size > 0. `with_tid`: the
/// per-CPU rings' records, with TID too (u32 pid, u32 tid after ip).
/// `source`: the sampler that took it, and whether in the kernel.
void handle_perf_sample(Runtime& rt, ThreadState& t, const perf_event_header& h, SampleSource source,
                        bool with_tid = false, UnwindFrame* walk = nullptr) {
  const auto* p = reinterpret_cast<const uint8_t*>(&h + 1);
  const auto* end = reinterpret_cast<const uint8_t*>(&h) + h.size;
  auto take = [&](uint64_t& v) {
    if (end - p < static_cast<ptrdiff_t>(sizeof v)) return false;
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return true;
  };
  uint64_t ip, pid_tid, abi, size = 0, dyn_size = 0;
  UnwindRegisters regs;
  if (!take(ip) || (with_tid && !take(pid_tid)) || !take(abi)) return;
  if (abi == PERF_SAMPLE_REGS_ABI_NONE) {
    regs.ip = ip;  // no user registers (cannot happen for a user thread's user-mode sample)
  } else if (!take(regs.bp) || !take(regs.sp) || !take(regs.ip)) {
    return;
  }
  // A sample of the handler itself, on the thread's own signal stack
  // (signal_stack.h): the runtime's work, which the walk would find too
  // (is_runtime_work), dropped without it. At the shortest periods the
  // handler is sampled as often as the program, and these walks made it
  // longer still.
  if (on_signal_stack(t, regs.sp)) return;
  const uint8_t* data = nullptr;
  if (take(size) && size > 0 && end - p >= static_cast<ptrdiff_t>(size)) {
    data = p;
    p += size;
    if (!take(dyn_size)) dyn_size = 0;
  }
  if (source != SampleSource::UserTime) {
    // Only the time inside system calls: the rest of the kernel's time on a
    // thread's behalf was mostly the sampler's own (delivering its signal,
    // softirqs on the way back to user mode), and charged to the interrupted
    // line it inflated that line's delays: lib_memcpy's copy line at 50% was
    // predicted +60% (+48% with user time only; truth +49.9%). Page faults
    // go unsampled with it.
    if (!follows_syscall(regs.ip)) return;
    regs.after_syscall = true;
  }
  record_sample(rt, t, regs, StackMemory::copy(regs.sp, data, std::min(size, dyn_size)), source, walk);
}
/// Consumes thread `t`'s ring; returns how many samples of its user time
/// it found. Does nothing when another consumer holds the ring: its records
/// are left to that one. The kernel-time sampler writes to the same ring
/// (start_kernel_sampling); its samples are those taken in kernel mode.
uint32_t drain_ring(Runtime& rt, ThreadState& t) {
  if (t.draining.exchange(true, std::memory_order_acquire)) return 0;
  uint32_t user_samples = 0;
  t.ring.drain(
      [&](const perf_event_header& h) {
        if (h.type == PERF_RECORD_SAMPLE) {
          const bool in_kernel = (h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
          user_samples += !in_kernel;
          handle_perf_sample(rt, t, h, in_kernel ? SampleSource::KernelTime : SampleSource::UserTime);
        } else if (h.type == PERF_RECORD_LOST) {
          const auto* body = reinterpret_cast<const uint64_t*>(&h + 1);  // u64 id; u64 lost
          rt.stats.lost.fetch_add(body[1], std::memory_order_relaxed);
          if (t.kernel_event_id != 0 && body[0] == t.kernel_event_id) {
            rt.stats.lost_kernel.fetch_add(body[1], std::memory_order_relaxed);
          }
        }
      },
      t.scratch, sizeof t.scratch);
  t.draining.store(false, std::memory_order_release);
  return user_samples;
}

/// After the thread's first sample (which came after a random phase, see
/// first_period) or a hurried one (hurry_next_sample), its sampler takes the
/// period in force; after a first sample taken later than its phase, first
/// the period that puts the next sample back on the phase. In a quiet run,
/// the sample that settles the period is the last one the thread is
/// signalled for. Only from the thread's signal handler.
void settle_period(Runtime& rt, ThreadState& t) {
  if (t.regular_period.load(std::memory_order_acquire) || t.perf_fd < 0) return;
  uint64_t period = rt.sample_period_ns.load(std::memory_order_relaxed);
  uint64_t delay = std::exchange(t.phase_delay_ns, 0);
  if (delay > 0 && delay < period) {
    set_period(t.perf_fd, period - delay);  // regular_period stays false: the next sample sets `period`
    return;
  }
  set_period(t.perf_fd, period);
  t.regular_period.store(true, std::memory_order_release);
  if (rt.quiet_sampling && !t.trap_mode.load(std::memory_order_relaxed)) stop_signals(t.perf_fd);
}

/// The period counts the program's CPU time, not the handler's. At
/// --period 10us the handler took longer than a period (hrtimer interrupts,
/// 4 KiB stack copies and signal delivery in this virtual machine, walks
/// under load), so samples of the handler itself kept it running: a 40 ms
/// program took 20 s and more, and the handler's own samples filled the
/// ring (thousands lost). Below this period the handler pauses its sampler
/// while it runs and restarts the countdown as it leaves, so that the next
/// sample comes a whole period of the program's time later: two ioctls, 3
/// us each here (that program: 0.1 s, as at 1 ms, instead of up to 0.6 s
/// with only the restart, and ~0 samples lost instead of thousands). Above
/// it, the handler is short next to the period.
constexpr uint64_t pause_below_period_ns = 100'000;
constexpr uint64_t paused_period_ns = 1'000'000'000;

/// Pauses the sampler of the thread whose handler runs; true if it did.
bool pause_own_sampler(ThreadState& t) {
  if (!t.regular_period.load(std::memory_order_acquire)) return false;  // settle_period sets it now
  return set_period(t.perf_fd, paused_period_ns);
}

/// Pauses the sampler of the thread whose handler runs, at short periods;
/// true if it did.
bool pause_sampler(Runtime& rt, ThreadState& t) {
  if (rt.sample_period_ns.load(std::memory_order_relaxed) >= pause_below_period_ns) return false;
  return pause_own_sampler(t);
}

/// As the handler that paused the sampler leaves: a whole period from now.
void resume_sampler(Runtime& rt, ThreadState& t) {
  // A hurried period (hurry_next_sample) set meanwhile stays; the next sample settles it.
  if (!t.regular_period.load(std::memory_order_acquire)) return;
  uint64_t period = rt.sample_period_ns.load(std::memory_order_relaxed);
  set_period(t.perf_fd, period);
  // The profiler thread may have changed every thread's period meanwhile (set_sample_period).
  uint64_t now_in_force = rt.sample_period_ns.load(std::memory_order_relaxed);
  if (now_in_force != period) set_period(t.perf_fd, now_in_force);
}

/// Pays what the thread owes from its sample handler, with its sampler
/// paused meanwhile unless `already_paused`, and counts what the payment
/// cost besides its sleep as paid.
///
/// Why the pause: a sleep costs the thread CPU time in the kernel (~20 us
/// a 0.2 ms slice in this VM), which its sampler counts. A thread that paid
/// in every handler took extra samples, each a trap, a signal and a handler
/// (~35 us here), out of its own time. At 95% of a line that keeps another
/// core busy, where a thread pays 19 times what it runs, that made
/// spinner's line, truly without effect, read -9% to -21% on this VM. The
/// two ioctls cost ~20 us together here: counted as paid, or a thread that
/// pays at every sample falls behind by them each time.
uint64_t pay_from_handler(Runtime& rt, ThreadState& t, bool already_paused) {
  if (!rt.ledger.would_pay_from_signal(t.ledger)) return 0;
  const uint64_t start = sys::monotonic_ns();
  const bool paused = !already_paused && pause_own_sampler(t);
  const uint64_t slept = rt.ledger.pay_from_signal(t.ledger);
  if (paused) resume_sampler(rt, t);
  const uint64_t spent = sys::monotonic_ns() - start;
  if (spent > slept) rt.ledger.count_as_paid(t.ledger, spent - slept);
  return slept;
}

/// The registers of the interrupted context.
UnwindRegisters registers_of(const void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  UnwindRegisters regs;
  regs.ip = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  regs.sp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RSP]);
  regs.bp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RBP]);
  return regs;
}

/// Whether `bounds` (a g's first two words: runtime.g.stack.lo and .hi,
/// src/runtime/runtime2.go) look like a Go stack that holds sp: a power of
/// two from 2 KiB to 1 GiB, aligned to 2 KiB.
bool holds_go_stack(const uint64_t (&bounds)[2], uint64_t sp) {
  const uint64_t size = bounds[1] - bounds[0];
  constexpr uint64_t smallest = 2048, largest = uint64_t{1} << 30;
  return bounds[1] > bounds[0] && size >= smallest && size <= largest && (size & (size - 1)) == 0 &&
         bounds[0] % smallest == 0 && sp >= bounds[0] && sp < bounds[1];
}

// A Go program's (go_binary.h), and where its threads keep their g: the
// offset from the thread pointer, 0 if unknown (a binary built with
// -ldflags=-s has no runtime.tlsg).
bool g_go_program = false;
int64_t g_go_g_tls_offset = 0;

/// The bounds of the goroutine stack the interrupted code runs on, in a Go
/// program: a goroutine's stack lives in Go's heap, not in the thread's
/// stack, and a walk bounded by the thread's stopped at its first read.
/// The running goroutine's g is in the thread's TLS slot runtime.tlsg,
/// which Go sets at every switch (0 in a thread Go never ran on), and a g
/// is never freed: two plain loads, no system call on the sampling path.
/// Without the slot's offset, R14, where Go's internal ABI keeps g (amd64,
/// Go 1.17 and later), read through process_vm_readv, which fails rather
/// than faults where R14 holds no address (Go's assembly uses it for its
/// own). Elsewhere a stack that is not the thread's (a coroutine's, an
/// alternate signal stack) stays bounded by the thread's.
bool goroutine_stack(const UnwindRegisters& regs, const void* context, uint64_t& low, uint64_t& high) {
  if (!g_go_program) return false;
  uint64_t bounds[2] = {0, 0};
  if (g_go_g_tls_offset != 0) {
    uint64_t thread_pointer = 0;
    __asm__("mov %%fs:0, %0" : "=r"(thread_pointer));  // the TCB's pointer to itself (x86-64 glibc)
    uint64_t g = 0;
    std::memcpy(&g, reinterpret_cast<const void*>(thread_pointer + static_cast<uint64_t>(g_go_g_tls_offset)), sizeof g);
    if (g == 0 || g % 8 != 0) return false;
    std::memcpy(bounds, reinterpret_cast<const void*>(g), sizeof bounds);
  } else {
    const auto* uc = static_cast<const ucontext_t*>(context);
    const uint64_t g = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_R14]);
    if (g == 0 || g % 8 != 0) return false;
    iovec local{bounds, sizeof bounds};
    iovec remote{reinterpret_cast<void*>(g), sizeof bounds};
    if (sys::raw_syscall6(SYS_process_vm_readv, sys::getpid(), reinterpret_cast<long>(&local), 1,
                          reinterpret_cast<long>(&remote), 1, 0) != static_cast<long>(sizeof bounds)) {
      return false;
    }
  }
  if (!holds_go_stack(bounds, regs.sp)) return false;
  low = bounds[0];
  high = bounds[1];
  return true;
}

/// Timer fallback and trap mode: the registers from the interrupted
/// context, and the live stack it runs on, within its bounds (never a wild
/// read): the thread's, or a goroutine's (goroutine_stack).
void handle_live_sample(Runtime& rt, ThreadState& t, const UnwindRegisters& regs, const void* context,
                        SampleSource source = SampleSource::UserTime, uint64_t periods = 1) {
  uint64_t low = t.stack_low, high = t.stack_high;  // goroutine_stack changes them only where it finds one
  if (regs.sp < low || regs.sp >= high) goroutine_stack(regs, context, low, high);
  record_sample(rt, t, regs, StackMemory::live(low, high), source, nullptr, periods);
}

/// How many periods a CPU-time timer's signal stands for. Such a timer
/// fires on the scheduler tick (every 4 ms at HZ=250), not when its period
/// ends: at 1 ms, each signal came with 3 periods gone by unsignalled
/// (si_overrun), and counted as one sample, so every experiment inserted a
/// quarter of its delays and predicted a quarter of the speedup. Capped: a
/// signal held back for long (the runtime's own deferral, a mask of the
/// program's) arrives with many, which are the thread's CPU time all the
/// same, but one stack should not weigh that much of it.
uint64_t timer_periods(const siginfo_t* info) {
  constexpr int max_overrun = 63;
  return 1 + static_cast<uint64_t>(std::clamp(info->si_overrun, 0, max_overrun));
}

/// Whether a trap that interrupted the thread at `regs` was taken inside a
/// system call: its signal then arrives as the call returns to user mode,
/// just after the `syscall` instruction (0f 05). Only asked where the traps
/// take kernel time (g_trap_kernel). The code is read in place where `ip`
/// is in an object the frame tables know (mapped readable and executable
/// by the loader) and its two bytes before are on the same page; anywhere
/// else (the vDSO, generated code) with process_vm_readv, which fails
/// cleanly. A trap taken in the kernel outside a system call (a page
/// fault, an interrupt) cannot be told from one taken in user mode at the
/// same place, and counts as that.
bool trap_in_syscall(const Runtime& rt, UnwindRegisters& regs) {
  constexpr uint64_t page = 4096;
  bool in_syscall = false;
  if (regs.ip % page >= 2 && rt.frames.tables().find(regs.ip - 2)) {
    const auto* code = reinterpret_cast<const unsigned char*>(regs.ip - 2);
    in_syscall = code[0] == 0x0f && code[1] == 0x05;
  } else {
    in_syscall = follows_syscall(regs.ip);
  }
  regs.after_syscall = in_syscall;
  return in_syscall;
}

/// Where a live sample (a trap's, or a timer's for a thread that left its
/// trap event) landed: where the traps take the kernel's time, the kernel
/// raises both as the thread returns to user mode, so one taken in a system
/// call lands just after it (trap_in_syscall, which notes it in `regs`).
SampleSource live_sample_source(const Runtime& rt, UnwindRegisters& regs) {
  const bool in_syscall = g_trap_kernel.load(std::memory_order_relaxed) && trap_in_syscall(rt, regs);
  return in_syscall ? SampleSource::PeriodInSyscall : SampleSource::UserTime;
}

/// Once per sample_policy::switch_check_samples samples of a thread in trap
/// mode: whether it switches too often for its event (switch_verdict), and
/// whether it should sort its waits by who could end them until the next look.
/// The thread trades the event for a CPU-time timer as its next wait ends
/// (move_current_thread_to_timer_if_wanted): timer_create and a close
/// under the thread list's lock do not belong in a signal handler.
///
/// Only where the traps take the kernel's time (g_trap_kernel: Linux 6.1 and
/// later, x86-64): there a CPU-time timer cuts no call short either, since
/// the kernel handles its expiry as the thread returns to user mode
/// (POSIX_CPU_TIMERS_TASK_WORK, which x86 kernels select; this one has
/// it). kernel_waits' 1 MiB pipe writes and polls over 4,096 descriptors,
/// its threads on timers: no short write, no EINTR, 6 runs.
void check_switch_rate(const Runtime& rt, ThreadState& t) {
  if (rt.config.timer_switch_rate == 0 || !g_trap_kernel.load(std::memory_order_relaxed)) return;
  if (++t.samples_since_switch_check < sample_policy::switch_check_samples) return;
  t.samples_since_switch_check = 0;
  rusage usage{};
  if (sys::raw_syscall6(SYS_getrusage, RUSAGE_THREAD, reinterpret_cast<long>(&usage)) != 0) return;
  auto us = [](const timeval& tv) {
    return static_cast<uint64_t>(tv.tv_sec) * 1'000'000u + static_cast<uint64_t>(tv.tv_usec);
  };
  const sample_policy::SwitchStretch now{
      .switches = static_cast<uint64_t>(usage.ru_nvcsw + usage.ru_nivcsw),
      .voluntary = static_cast<uint64_t>(usage.ru_nvcsw),
      .lock_waits = t.lock_waits.load(std::memory_order_relaxed),
      .delay_sleeps = t.ledger.sleeps.load(std::memory_order_relaxed),
      .outside_waits = t.outside_waits.load(std::memory_order_relaxed),
      .program_waits = t.program_waits.load(std::memory_order_relaxed),
      .cpu_ns = (us(usage.ru_utime) + us(usage.ru_stime)) * 1000,
  };
  const sample_policy::SwitchStretch& then = t.at_switch_check;
  // At a period shortened for an experiment, 32 samples may be too short a
  // stretch (16 ms at 0.5 ms): the next look covers more.
  if (now.cpu_ns - then.cpu_ns < sample_policy::switch_check_min_cpu_ns) return;
  const sample_policy::SwitchStretch stretch{
      .switches = now.switches - then.switches,
      .voluntary = now.voluntary - then.voluntary,
      .lock_waits = now.lock_waits - then.lock_waits,
      .delay_sleeps = now.delay_sleeps - then.delay_sleeps,
      .outside_waits = now.outside_waits - then.outside_waits,
      .program_waits = now.program_waits - then.program_waits,
      .cpu_ns = now.cpu_ns - then.cpu_ns,
  };
  const auto verdict = sample_policy::switch_verdict(
      stretch, {.any = rt.config.timer_switch_rate,
                .outside = outside_switch_rate(rt),
                .hardly_waiting = rt.config.timer_switch_rate_outside});
  const bool to_whole_cpu = verdict == sample_policy::SwitchVerdict::MoveToWholeCpu;
  const bool to_timer = verdict == sample_policy::SwitchVerdict::MoveToTimer;
  t.looks_saying_move = (to_whole_cpu || to_timer) ? t.looks_saying_move + 1 : 0;
  const bool moves = t.looks_saying_move >= sample_policy::looks_before_a_move;
  // A look that would move it to the whole-CPU events, but not yet, keeps
  // its waits sorted: the next look must find them the outside's again.
  t.sorting_waits.store(verdict == sample_policy::SwitchVerdict::SortWaits || (to_whole_cpu && !moves),
                        std::memory_order_relaxed);
  if (moves) {
    if (to_whole_cpu) t.whole_cpu_wanted.store(true, std::memory_order_relaxed);
    t.timer_wanted.store(true, std::memory_order_relaxed);
  }
  t.at_switch_check = now;
}

/// A sample of a sampler without a ring (trap_sampler_attr): taken where
/// the signal interrupted the thread.
///
/// A trap arrives late (TRAP_PERF_FLAG_ASYNC) when the thread blocked
/// SIGTRAP as it was raised. Raised while this handler ran (it blocks every
/// signal), it arrives as the handler returns: the runtime's work, counted
/// nowhere, as the ring samples on the signal stack are. Any other comes a
/// period of CPU time or more after the last handler (less the handler's
/// own time), held back by a mask of the C library's or the program's
/// (pthread_create blocks every signal around `clone`, whose kernel time
/// the traps sample where g_trap_kernel), and arrives where they unblock
/// it, in the same call: counted there. Half a period tells them apart.
/// (The place is no guide: a loop creating threads unblocks at the same ip
/// and sp each time, and those traps were dropped, 60% of its samples.)
void handle_trap(Runtime& rt, ThreadState& t, siginfo_t* info, void* context) {
  t.in_sample_handler.store(true, std::memory_order_relaxed);  // for watch_trap_delivery
  t.signals_taken.fetch_add(1, std::memory_order_release);
  const bool handlers_own = trap_arrived_late(info) && sys::monotonic_ns() - t.trap_handler_left_ns <
                                                            rt.sample_period_ns.load(std::memory_order_relaxed) / 2;
  const bool paused = pause_sampler(rt, t);
  settle_period(rt, t);
  UnwindRegisters regs = registers_of(context);
  if (!handlers_own) {
    const SampleSource source = live_sample_source(rt, regs);  // notes regs.after_syscall first
    handle_live_sample(rt, t, regs, context, source);
    check_switch_rate(rt, t);
  }
  pay_from_handler(rt, t, paused);
  if (paused) resume_sampler(rt, t);
  t.trap_handler_left_ns = sys::monotonic_ns();
  t.in_sample_handler.store(false, std::memory_order_release);
}

void on_sample_signal(int sig, siginfo_t* info, void* context) {
  if (!is_runtime_signal(sig, info)) {
    if (sig == trap_signal) {
      Runtime* rt = runtime();
      if (rt && claim_breakpoint_trap(rt->breakpoints, info, context)) return;
    }
    deliver_to_program(sig, info, context);  // kill, raise, sigqueue, int3... from the program
    return;
  }
  int saved_errno = errno;
  Runtime* rt = runtime();
  ThreadState* t = current_thread();
  if (sig == trap_signal) {
    // None for a thread whose sampler has stopped: a trap already on its way.
    if (rt && t && t->trap_mode.load(std::memory_order_acquire)) handle_trap(*rt, *t, info, context);
  } else if (rt && t && t->timer_mode) {
    // A thread the whole-CPU rings sample: its timer only pays its delays.
    if (!t->sampled_by_cpus.load(std::memory_order_relaxed) || !whole_cpu_open()) {
      UnwindRegisters regs = registers_of(context);
      const SampleSource source = live_sample_source(*rt, regs);  // notes regs.after_syscall first
      handle_live_sample(*rt, *t, regs, context, source, timer_periods(info));
    }
    rt->ledger.pay_from_signal(t->ledger);
  } else if (rt && t) {
    t->in_sample_handler.store(true, std::memory_order_relaxed);  // for watch_signal_delivery
    t->signals_taken.fetch_add(1, std::memory_order_release);
    const bool paused = pause_sampler(*rt, *t);
    settle_period(*rt, *t);  // first: a hurried period would go on sampling the drain
    drain_ring(*rt, *t);
    pay_from_handler(*rt, *t, paused);
    if (paused) resume_sampler(*rt, *t);
    t->in_sample_handler.store(false, std::memory_order_release);
  }
  errno = saved_errno;
}

}  // namespace
}  // namespace signal_safe

// ---------------------------------------------------------------------------
// What sampler.cpp calls (sample_handler.h).
// ---------------------------------------------------------------------------
namespace sample_handler {

bool set_period(int perf_fd, uint64_t period) { return signal_safe::set_period(perf_fd, period); }

void stop_signals(int perf_fd) { signal_safe::stop_signals(perf_fd); }

void handle_perf_sample(Runtime& rt, ThreadState& t, const perf_event_header& h, SampleSource source, bool with_tid,
                        UnwindFrame* walk) {
  signal_safe::handle_perf_sample(rt, t, h, source, with_tid, walk);
}

uint32_t drain_ring(Runtime& rt, ThreadState& t) { return signal_safe::drain_ring(rt, t); }

void on_sample_signal(int sig, siginfo_t* info, void* context) { signal_safe::on_sample_signal(sig, info, context); }

void set_go_program(int64_t g_tls_offset) {
  signal_safe::g_go_g_tls_offset = g_tls_offset;
  signal_safe::g_go_program = true;
}

}  // namespace sample_handler

}  // namespace coz
