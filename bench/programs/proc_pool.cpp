// proc_pool: a pre-forked pool of two worker PROCESSES (issue #17, whole-
// system mode), fed accept-queue style: the parent runs dispatch_work
// (0.1 ms) per item and writes an 8-byte record into one pipe that both
// workers read (a record is written atomically, so each read takes one
// whole item); a worker runs serve_work (0.8 ms) and writes the result into
// a second pipe, back to the parent, which counts a COZ_PROGRESS per served
// item and keeps at most 4 items in flight. The two workers alone would
// serve an item every 0.4 ms, but with the parent's 0.1 ms the pool needs
// 0.9 ms of CPU an item on two cores: an item takes ~0.45 ms, and both lines
// count by their CPU time. Halving serve_work leaves 0.5 ms of CPU an item
// (0.25 ms, 44% saved); halving dispatch_work 0.85 ms (5.6% saved).
// Measured (time saved, median of 3 alternated pairs, variant/base wall
// 0.562 and 0.946 on the 2-core VM): serve_work 43.8%, dispatch_work 5.4%.
//
// Variants: -DHALVE_SERVE_WORK (real ~44%), -DHALVE_DISPATCH_WORK (~5.5%).
// Usage: proc_pool [-n ITEMS] [--exit-status N]; default ~3.5 s.
#include <coz.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

#ifdef HALVE_DISPATCH_WORK
constexpr uint64_t kDispatchSteps = kStepsPerMs / 20;
#else
constexpr uint64_t kDispatchSteps = kStepsPerMs / 10;
#endif
#ifdef HALVE_SERVE_WORK
constexpr uint64_t kServeSteps = kStepsPerMs * 4 / 10;
#else
constexpr uint64_t kServeSteps = kStepsPerMs * 8 / 10;
#endif
constexpr int kWorkers = 2;
constexpr uint64_t kMaxInFlight = 4;
// Times above are in kStepsPerMs's reference ms; the 2-core bench VM runs
// ~1.5x slower, so an item takes ~0.67 ms there: ~3.5 s.
constexpr uint64_t kDefaultItems = 5'300;

volatile uint64_t g_seed = 0x1234;

__attribute__((noinline)) uint64_t dispatch_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:dispatch_work
  return x;
}

__attribute__((noinline)) uint64_t serve_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:serve_work
  return x;
}

// _exit, not exit: a forked child must not flush the parent's stdio buffers.
void check(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    _exit(1);
  }
}

// One 8-byte record: true, or false at end of file. Retries EINTR (the
// profiler's signals may interrupt a blocked read). A pipe never returns
// part of a record here (every write is one whole record, under PIPE_BUF),
// which is what lets two workers share one.
bool read_record(int fd, uint64_t& value) {
  ssize_t r;
  do r = read(fd, &value, sizeof value);
  while (r < 0 && errno == EINTR);
  check(r == 0 || r == sizeof value, "read");
  return r == sizeof value;
}

void write_record(int fd, uint64_t value) {
  ssize_t r;
  do r = write(fd, &value, sizeof value);
  while (r < 0 && errno == EINTR);
  check(r == sizeof value, "write");
}

// Waits for the child `pid`; a child that failed fails the program.
void reap(pid_t pid) {
  int status;
  pid_t r;
  do r = waitpid(pid, &status, 0);
  while (r < 0 && errno == EINTR);
  check(r == pid, "waitpid");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "proc_pool: a worker process failed (wait status %d)\n", status);
    _exit(1);
  }
}

// Serves items until the parent closes the work pipe.
[[noreturn]] void worker(int work, int done) {
  for (uint64_t item; read_record(work, item);) write_record(done, serve_work(item, kServeSteps));
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultItems);
  const coz_programs::Stopwatch stopwatch;

  int work[2], done[2];  // parent -> workers, workers -> parent
  check(pipe(work) == 0 && pipe(done) == 0, "pipe");
  pid_t workers[kWorkers];
  for (pid_t& pid : workers) {
    pid = fork();
    check(pid >= 0, "fork");
    if (pid == 0) {
      close(work[1]);
      close(done[0]);
      worker(work[0], done[1]);
    }
  }
  close(work[0]);
  close(done[1]);

  uint64_t x = g_seed, dispatched = 0, served = 0;
  while (served < args.n) {
    if (dispatched < args.n && dispatched - served < kMaxInFlight) {
      x = dispatch_work(x + dispatched, kDispatchSteps);
      write_record(work[1], x);
      ++dispatched;
      continue;
    }
    uint64_t result;
    check(read_record(done[0], result), "read result: workers gone");
    x ^= result;
    ++served;
    COZ_PROGRESS_NAMED("item served");  // @line:item_served
  }
  close(work[1]);
  for (pid_t pid : workers) reap(pid);

  std::printf("proc_pool items=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(x));
  std::fprintf(stderr, "proc_pool: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
