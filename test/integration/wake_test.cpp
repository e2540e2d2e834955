// Integration tests: who pays the delays that accrued while a thread waited,
// for every way one thread of a program waits for another through the
// kernel (test/programs/wake_kinds.c): pipes, eventfds, sockets, accept,
// epoll, poll, select, signals, file locks, C11 threads; and for waits that
// the outside world ends (a child process writing, a timer, a child's exit).
//
// Each round, the waker spins 20 ms on the selected line (fixed at 50%, so
// ~10 ms of delay accrue that every other thread owes), then wakes the
// waiter, which then works 3 ms and reports the "extra" ms the round took
// beyond that, less the time it waited for a core. (Counted in, a busy
// machine read as paying: with two spinning processes beside it, kinds woken
// by the program paid in 105 to 186 of 416 rounds, at this commit and before
// the runtime read cores alike; left out, 0 to 1.) Woken by a thread of the program, the waiter claims the
// waker's credit: extra ~0.1 ms in every round. Woken from outside, it pays
// the ~10 ms, except in 0% experiments (a quarter) and rounds cut by an
// experiment's end: half of the rounds on average, with a wide spread.
//
// Against the runtime of commit 33317f7 (no descriptor waits interposed,
// C11 threads reaching no wrapper, sigwait always paying) the first test
// fails for all 21 kinds woken by a program thread: each paid in 5 to 12
// of its 16 rounds, as if woken from outside (the waiter's samples after
// the wake paid what accrued while it slept).
//
// Four kinds read a pipe at a number that was a non-blocking descriptor
// once (closed and reused, dup2'ed over, or its flag cleared by F_SETFL or
// FIONBIO): the runtime skips the wait bracket of a call that cannot block
// (interpose_io.cpp), and must know these can. With a runtime that never
// cleared a mark, the four paid in 11 to 14 of their 16 rounds.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <sstream>

#include "harness.h"

namespace coz_itest {
namespace {

// A round that paid: ~10 ms extra; one that claimed: ~0.1 ms. In the timer
// fallback too: its CPU-time timers fire on the scheduler tick (4 ms at
// HZ=250), so a 20 ms spin takes ~5 signals, but each says how many periods
// went by (si_overrun) and counts for them all. When each counted as one,
// a round that paid showed ~2.5 ms: every delay a quarter of its size.
constexpr double paid_ms = 3.0;

struct Rounds {
  int total = 0;
  int paid = 0;
};

std::map<std::string, Rounds> parse(const std::string& out) {
  std::map<std::string, Rounds> kinds;
  for (const std::string& line : lines_of(out)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    Rounds r;
    std::istringstream extras(line.substr(colon + 1));
    for (double ms; extras >> ms;) {
      ++r.total;
      if (ms > paid_ms) ++r.paid;
    }
    kinds[line.substr(0, colon)] = r;
  }
  return kinds;
}

class WakeTest : public ::testing::Test {
 protected:
  /// coz run's options that fix the selected line at 50%, and `extra` first.
  static std::vector<std::string> fixed_line_options(std::vector<std::string> extra = {}) {
    for (const std::string& o : {std::string("--fixed-line"), marked_line("wake_kinds.c", "selected"),
                                 std::string("--fixed-speedup"), std::string("50")})
      extra.push_back(o);
    return extra;
  }

  /// Every kind's rounds from profiled runs of `command`, run again while
  /// its payers are wrong and a hypervisor took more than max_steal_share
  /// of the machine (again_under_steal). `check` looks at each run's output.
  std::map<std::string, Rounds> payers(const std::string& what, const std::vector<std::string>& options,
                                       const std::vector<std::string>& command,
                                       const std::function<void(const ProcessResult&)>& check = {}) {
    std::map<std::string, Rounds> kinds;
    again_under_steal(what, [&](int) {
      ProcessResult result = coz_run(scratch_.file("profile.coz"), options, command, scratch_);
      EXPECT_TRUE(result.exited && result.exit_status == 0) << describe(result);
      if (check) check(result);
      kinds = parse(result.out);
      const std::optional<analysis::Profile> profile = read_profile(scratch_.file("profile.coz"));
      return AttemptVerdict{payer_problems(kinds).empty(), profile ? profile->sampling.steal_share() : 0.0};
    });
    return kinds;
  }

  // Woken from outside, a round pays unless it ran in a 0% experiment or
  // straddled two (experiments last 40-50 ms, a round ~30 ms). Over 11 runs
  // on 2 cores a kind paid in 3 to 15 of its 16 rounds, the three kinds
  // together in 16 to 33 of 48: one kind alone is too noisy to hold to a
  // count, so the test holds each kind to one paid round and the three
  // together to 10. A runtime that let outside wakes claim credit pays in
  // none of them. What is wrong with the payers, one line each; empty when
  // they are right.
  static std::string payer_problems(const std::map<std::string, Rounds>& kinds) {
    if (kinds.size() != 29u) return "every kind must report: " + std::to_string(kinds.size()) + " of 29 did\n";
    std::string problems;
    int outside_paid = 0;
    int program_paid = 0;
    for (const auto& [kind, rounds] : kinds) {
      if (rounds.total != 16) problems += kind + ": " + std::to_string(rounds.total) + " rounds, not 16\n";
      if (kind.rfind("outside_", 0) == 0) {
        outside_paid += rounds.paid;
        if (rounds.paid < 1) problems += kind + ": woken from outside, it must pay what accrued while it slept\n";
      } else {
        // A round may straddle an experiment's start (its debt is then
        // forgiven or not, by timing), or be slowed by the machine: a kind
        // paid in 0 or 1 of its 16 rounds here, once 2 (readv_pipe, timer
        // fallback, in a fresh-clone run). The bug this guards against paid
        // in 5 to 12 rounds of every kind.
        if (rounds.paid > 2) {
          problems += kind + ": paid in " + std::to_string(rounds.paid) +
                      " rounds (at most 2): woken by a thread of the program, it must claim the waker's credit\n";
        }
        program_paid += rounds.paid;
      }
    }
    if (program_paid > 8) {
      problems += "woken by a thread of the program, waiters must claim the waker's credit: " +
                  std::to_string(program_paid) + " rounds paid of 26 kinds x 16 (at most 8)\n";
    }
    if (outside_paid < 10) {
      problems += "woken from outside, waiters must pay what accrued while they slept: " +
                  std::to_string(outside_paid) + " rounds paid (at least 10)\n";
    }
    return problems;
  }

  void expect_right_payers(const std::map<std::string, Rounds>& kinds) {
    const std::string problems = payer_problems(kinds);
    EXPECT_TRUE(problems.empty()) << problems;
  }

  TempDir scratch_;
};

// Its rounds are ~30 ms; in a burst of steal time a round woken by the
// program paid 3 times where at most 2 may (stop 46, 4.5% steal): a run
// whose payers are wrong while a hypervisor took more than max_steal_share
// of the machine runs again (again_under_steal).
TEST_F(WakeTest, WaiterWokenByProgramThreadClaimsCreditAndOutsidePays) {
  expect_right_payers(payers("wake_kinds", fixed_line_options(), {WAKE_KINDS_EXE}));
}

// The timer fallback (perf_event refused): samples come from CPU-time timers,
// whose signals can arrive inside a system call; no wait may fail with EINTR
// because of them (wake_kinds exits 1 on any failed call). Its payers are
// held as above, and like them run again when a hypervisor's steal may have
// made them wrong: CI failed here with 16 rounds paid of 416 (ppoll_pipe 3,
// select_pipe 4), and on this VM runs under ~7% steal paid in 10 to 15.
TEST_F(WakeTest, TimerFallbackNeverInterruptsWaits) {
  expect_right_payers(payers("wake_kinds under the timer fallback", fixed_line_options({"-b", "*/wake_kinds"}),
                             {NO_PERF_LAUNCHER_EXE, WAKE_KINDS_EXE}, [](const ProcessResult& result) {
                               EXPECT_NE(result.err.find("CPU-time timers"), std::string::npos) << result.err;
                             }));
}

}  // namespace
}  // namespace coz_itest
