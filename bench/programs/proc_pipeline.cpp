// proc_pipeline: a three-stage pipeline of PROCESSES joined by pipes
// (issue #17, whole-system mode). The parent is stage A: it runs
// produce_work (0.1 ms) per item and writes an 8-byte record into pipe 1;
// forked stage B reads it, runs transform_work (0.5 ms) and writes into
// pipe 2; forked stage C reads it, runs consume_work (0.05 ms) and counts a
// COZ_PROGRESS. The stages overlap, so an item takes as long as the slowest
// stage, B. Each pipe holds one page (512 records): with the default 64 KiB
// A would run through all its items at once, crowding B off a core.
// The three stages need 0.65 ms of CPU an item, 0.4 once B's work is halved:
// under the two cores either way (0.5 and 0.25 ms an item), so the stage
// times, not the CPU, set the pace. Halving transform_work saves half of
// B's time (50%); halving consume_work changes nothing (C idles most of
// each item). (A first design, 0.2 / 0.5 / 0.1 ms, needed more than two
// cores once B was halved: there, a line's real effect is partly the CPU it
// frees for the other processes, which no virtual speedup can emulate; see
// bench/RESULTS.md.)
//
// Measured (time saved, variant/base wall, medians of 3-5 alternated pairs
// on the 2-core VM): transform_work 48.5% (0.515), consume_work -1% (1.010).
//
// Variants: -DHALVE_TRANSFORM_WORK (real ~50%), -DHALVE_CONSUME_WORK (~0%).
// Usage: proc_pipeline [-n ITEMS] [--exit-status N]; default ~3.5 s.
#include <coz.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>

#include "process_records.h"
#include "program_common.h"

namespace {

using coz_programs::check;
using coz_programs::kStepsPerMs;
using coz_programs::read_record;
using coz_programs::write_record;

constexpr uint64_t kProduceSteps = kStepsPerMs / 10;
#ifdef HALVE_TRANSFORM_WORK
constexpr uint64_t kTransformSteps = kStepsPerMs * 25 / 100;
#else
constexpr uint64_t kTransformSteps = kStepsPerMs * 5 / 10;
#endif
#ifdef HALVE_CONSUME_WORK
constexpr uint64_t kConsumeSteps = kStepsPerMs / 40;
#else
constexpr uint64_t kConsumeSteps = kStepsPerMs / 20;
#endif
// Times above are in kStepsPerMs's reference ms; the 2-core bench VM runs
// ~1.5x slower, so an item takes ~0.8 ms there: ~3.5 s.
constexpr uint64_t kDefaultItems = 4'500;

volatile uint64_t g_seed = 0x1234;
volatile uint64_t g_sink = 0;  // keeps stage C's work from being optimised away

__attribute__((noinline)) uint64_t produce_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:produce_work
  return x;
}

__attribute__((noinline)) uint64_t transform_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:transform_work
  return x;
}

__attribute__((noinline)) uint64_t consume_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 30)) * 0xd6e8feb86659fd93ULL + i;  // @line:consume_work
  return x;
}

// Each stage ends when its input reaches end of file, which closes its
// output and so ends the next stage.
[[noreturn]] void transform_stage(int in, int out) {
  for (uint64_t item; read_record(in, item);) write_record(out, transform_work(item, kTransformSteps));
  _exit(0);
}

[[noreturn]] void consume_stage(int in) {
  uint64_t sum = 0;
  for (uint64_t item; read_record(in, item);) {
    sum = consume_work(sum + item, kConsumeSteps);
    COZ_PROGRESS_NAMED("item done");  // @line:item_done
  }
  g_sink = sum;
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultItems);
  const coz_programs::Stopwatch stopwatch;

  int first[2], second[2];  // A -> B, B -> C
  check(pipe(first) == 0 && pipe(second) == 0, "pipe");
  check(fcntl(first[1], F_SETPIPE_SZ, 4096) >= 0 && fcntl(second[1], F_SETPIPE_SZ, 4096) >= 0, "F_SETPIPE_SZ");
  const pid_t transform = fork();
  check(transform >= 0, "fork");
  if (transform == 0) {
    close(first[1]);
    close(second[0]);
    transform_stage(first[0], second[1]);
  }
  const pid_t consume = fork();
  check(consume >= 0, "fork");
  if (consume == 0) {
    close(first[0]);
    close(first[1]);
    close(second[1]);
    consume_stage(second[0]);
  }
  close(first[0]);
  close(second[0]);
  close(second[1]);

  uint64_t x = g_seed;
  for (uint64_t i = 0; i < args.n; ++i) {
    x = produce_work(x + i, kProduceSteps);
    write_record(first[1], x);
  }
  close(first[1]);
  coz_programs::reap("proc_pipeline", transform, "transform");
  coz_programs::reap("proc_pipeline", consume, "consume");

  std::printf("proc_pipeline items=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(x));
  std::fprintf(stderr, "proc_pipeline: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
