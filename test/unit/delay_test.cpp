// The delay ledger: credit, debt, skipping on wake-up, catching up before waking.
#include "delay.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>

#include "sys.h"

namespace coz {
namespace {

// A fake sleep that records requests and "sleeps" exactly (or with a fixed oversleep).
uint64_t g_slept_total = 0;
uint64_t g_oversleep = 0;
uint64_t fake_sleep(uint64_t ns) {
  g_slept_total += ns + g_oversleep;
  return ns + g_oversleep;
}

class DelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_slept_total = 0;
    g_oversleep = 0;
    ledger.start_thread(a, 0);
    ledger.start_thread(b, 0);
  }
  DelayLedger ledger{&fake_sleep};
  ThreadLedger a, b;
};

TEST_F(DelayTest, NoExperimentNoDelay) {
  ledger.credit_sample(a);
  EXPECT_EQ(ledger.global(), 0u);
  EXPECT_EQ(ledger.pay(b), 0u);
}

TEST_F(DelayTest, SelectedSampleCreditsItselfAndDelaysOthers) {
  ledger.begin_experiment(500);
  ledger.credit_sample(a);
  ledger.credit_sample(a);
  EXPECT_EQ(ledger.global(), 1000u);
  EXPECT_EQ(ledger.owed(a), 0u) << "the sampled thread never pauses for its own samples";
  EXPECT_EQ(ledger.owed(b), 1000u);
  EXPECT_EQ(ledger.pay(b), 1000u);
  EXPECT_EQ(ledger.owed(b), 0u);
  EXPECT_EQ(ledger.total_paused(), 1000u);
}

// A sample in a --progress breakpoint's trap is the runtime's time: removed
// as if sped up by 100%, in 0% experiments too, never between experiments.
TEST_F(DelayTest, TrapSamplesCreditTheirWholePeriodInEveryExperiment) {
  EXPECT_EQ(ledger.credit_trap_sample(a, 1), 0u) << "between experiments";
  ledger.begin_experiment(0, 500);  // a 0% experiment
  EXPECT_EQ(ledger.credit_trap_sample(a, 2), 1000u);
  EXPECT_EQ(ledger.credit_sample(a), 0u) << "its line's samples credit nothing at 0%";
  EXPECT_EQ(ledger.owed(a), 0u) << "the trapped thread never pauses for its own traps";
  EXPECT_EQ(ledger.owed(b), 1000u);
  ledger.end_experiment();
  EXPECT_EQ(ledger.credit_trap_sample(a, 1), 0u) << "after the experiment";
  ledger.begin_experiment(250);  // no breakpoints: no trap credit
  EXPECT_EQ(ledger.credit_trap_sample(a, 1), 0u);
}

// A timer's or a kernel sampler's sample stands for several at the period
// in force: credited at once, as that many would be.
TEST_F(DelayTest, ASampleStandingForSeveralCreditsThemAtOnce) {
  ledger.begin_experiment(250);
  EXPECT_EQ(ledger.credit_sample(a, 4), 1000u);
  EXPECT_EQ(ledger.owed(b), 1000u);
  EXPECT_EQ(ledger.credit_sample(a, 0), 0u);
}

TEST_F(DelayTest, TwoThreadsInTheLineEachPayForTheOther) {
  // Both run the selected line: each saves d, so each is delayed by the other's d.
  ledger.begin_experiment(300);
  ledger.credit_sample(a);
  ledger.credit_sample(b);
  EXPECT_EQ(ledger.owed(a), 300u);
  EXPECT_EQ(ledger.owed(b), 300u);
}

TEST_F(DelayTest, OversleepIsCreditedSoErrorDoesNotAccumulate) {
  ledger.begin_experiment(100);
  g_oversleep = 60;
  ledger.credit_sample(a);
  EXPECT_EQ(ledger.pay(b), 160u);
  ledger.credit_sample(a);  // global 200, b has paid 160
  EXPECT_EQ(ledger.owed(b), 40u);
  ledger.credit_sample(a);
  ledger.credit_sample(a);  // global 400; b 160 -> owes 240
  g_oversleep = 0;
  EXPECT_EQ(ledger.pay(b), 240u);
}

// A handler pauses its sampler around a payment (~20 us of ioctls in a VM);
// that time counts as paid, like oversleep, or a thread that pays at every
// sample falls behind by it each time.
TEST_F(DelayTest, PaymentOverheadCountsAsPaid) {
  ledger.begin_experiment(1000);
  ledger.credit_sample(a);
  EXPECT_TRUE(ledger.would_pay_from_signal(b));
  EXPECT_EQ(ledger.pay_from_signal(b), 1000u);
  ledger.count_as_paid(b, 20);
  EXPECT_EQ(ledger.total_paused(), 1020u);
  EXPECT_FALSE(ledger.would_pay_from_signal(b));
  ledger.credit_sample(a);  // global 2000; b has paid 1020
  EXPECT_EQ(ledger.owed(b), 980u);
}

// A handler asks before pausing its sampler for a payment: not while the
// thread is inside ledger code or blocked (pay_from_signal would not pay).
TEST_F(DelayTest, NoPaymentFromASignalWhileBlocked) {
  ledger.begin_experiment(1000);
  ledger.pre_block(b);
  ledger.credit_sample(a);
  EXPECT_FALSE(ledger.would_pay_from_signal(b));
  EXPECT_EQ(ledger.pay_from_signal(b), 0u);
}

TEST_F(DelayTest, DebtIsPaidBeforeBlockingNotAfterWaking) {
  ledger.begin_experiment(1000);
  ledger.credit_sample(a);  // b owes 1000 for work before the wait
  ledger.pre_block(b);
  EXPECT_EQ(g_slept_total, 1000u) << "paid before the call: after it, b might hold a contended lock";
  EXPECT_EQ(ledger.owed(b), 0u);
}

TEST_F(DelayTest, WokenByAnotherThreadSkipsDelaysWhileBlocked) {
  ledger.begin_experiment(1000);
  ledger.credit_sample(a);  // b owes 1000 before blocking: paid in pre_block
  ledger.pre_block(b);
  ledger.credit_sample(a);  // accrued while b was blocked
  ledger.credit_sample(a);
  g_slept_total = 0;
  ledger.post_block(b, /*skip=*/true);
  EXPECT_EQ(g_slept_total, 0u) << "the waker paid for the time b was blocked";
  EXPECT_EQ(ledger.owed(b), 0u);
}

// A sample taken before a thread blocked can be credited after it did: the
// kernel-time samples and the rings the profiler thread drains arrive late.
// That credit is the thread's own, in its local count and in the global one;
// skipping "what accrued while blocked" must not count it a second time. It
// did: the thread stood ahead of the virtual clock by the late credit, its
// excess grew with each one, and the threads it then created inherited it
// and paid nothing (fork_join's main thread, credited for thread creation:
// 1.6 ms ahead after 4000 rounds, and every later experiment's right-hand
// thread ran unpaused, +400% "measured" at 90% for a +50% line).
TEST_F(DelayTest, OwnCreditWhileBlockedIsNotSkippedTwice) {
  ledger.begin_experiment(100);
  ledger.pre_block(b);
  ledger.credit_sample(b);  // b's sample from before the wait, credited late
  ledger.credit_sample(a);
  ledger.credit_sample(a);  // global 300
  ledger.post_block(b, /*skip=*/true);
  EXPECT_EQ(b.local.load(), 300u) << "b stands where the virtual clock stands, no further";
  ledger.credit_sample(a);
  EXPECT_EQ(ledger.owed(b), 100u);
}

TEST_F(DelayTest, LockWaitAbsorbsTheDebtCarriedIn) {
  ledger.begin_experiment(1000);
  ledger.credit_sample(a);  // b owes 1000 when it finds the lock held
  ledger.pre_lock_wait(b, /*now_ns=*/10'000);
  EXPECT_EQ(g_slept_total, 0u) << "b queues at once instead of pausing first";
  EXPECT_TRUE(ledger.settled(b)) << "a thread queued on a lock is not in debt";
  ledger.credit_sample(a);  // the holder, in the line, credits 1000 more while b waits
  ledger.post_lock_wait(b, /*now_ns=*/10'000 + 3'000);
  // Queued 3000 ns, of which 1000 were the holder's credited pause: 2000 of
  // virtual time, more than the 1000 b carried in. Nothing is left to pay.
  EXPECT_EQ(g_slept_total, 0u);
  EXPECT_EQ(ledger.owed(b), 0u);
}

TEST_F(DelayTest, ShortLockWaitLeavesTheRestOfTheDebt) {
  ledger.begin_experiment(1000);
  ledger.credit_sample(a);
  ledger.credit_sample(a);  // b carries 2000 in
  ledger.pre_lock_wait(b, 50'000);
  ledger.post_lock_wait(b, 50'000 + 500);  // the lock came free after 500 ns
  EXPECT_EQ(g_slept_total, 1500u) << "the wait absorbed 500 of the 2000";
  EXPECT_EQ(ledger.owed(b), 0u);
}

TEST_F(DelayTest, LockWaitDebtFromAnEarlierExperimentIsForgiven) {
  ledger.begin_experiment(1000);
  ledger.credit_sample(a);
  ledger.pre_lock_wait(b, 0);
  ledger.end_experiment();
  ledger.begin_experiment(1000);
  ledger.post_lock_wait(b, 100);
  EXPECT_EQ(g_slept_total, 0u);
  EXPECT_EQ(ledger.owed(b), 0u);
}

TEST_F(DelayTest, WokenByTimeoutPaysDelaysWhileBlocked) {
  ledger.begin_experiment(1000);
  ledger.pre_block(b);
  ledger.credit_sample(a);
  ledger.credit_sample(a);
  ledger.post_block(b, /*skip=*/false);
  EXPECT_EQ(g_slept_total, 2000u);
}

TEST_F(DelayTest, CatchUpBeforeWakingPaysTheWakersDebt) {
  ledger.begin_experiment(700);
  ledger.credit_sample(b);
  ledger.catch_up(a);
  EXPECT_EQ(g_slept_total, 700u);
  EXPECT_EQ(ledger.owed(a), 0u);
}

TEST_F(DelayTest, DebtFromAnEarlierExperimentIsForgiven) {
  ledger.begin_experiment(1000);
  ledger.credit_sample(a);
  ledger.end_experiment();
  EXPECT_EQ(ledger.owed(b), 1000u) << "still owed until the next experiment starts";
  ledger.begin_experiment(0);
  EXPECT_EQ(ledger.owed(b), 0u);
}

TEST_F(DelayTest, SkipAcrossExperimentsKeepsOnlyTheNewExperimentsShare) {
  ledger.begin_experiment(1000);
  ledger.pre_block(b);
  ledger.credit_sample(a);
  ledger.end_experiment();
  ledger.begin_experiment(1000);
  ledger.credit_sample(a);
  ledger.post_block(b, /*skip=*/false);  // timed out: pays what accrued in *this* experiment
  EXPECT_EQ(g_slept_total, 1000u);
}

TEST_F(DelayTest, NewThreadStartsWhereItsCreatorStood) {
  ledger.begin_experiment(1000);
  ledger.credit_sample(a);
  ledger.credit_sample(a);
  ThreadLedger child;
  ledger.start_thread(child, a.local.load());
  EXPECT_EQ(ledger.owed(child), 0u);
  ledger.start_thread(child, b.local.load());
  EXPECT_EQ(ledger.owed(child), 2000u) << "a thread created by an indebted thread inherits the debt";
}

TEST_F(DelayTest, SignalHandlerDoesNotPayWhileThreadIsInsideLedger) {
  ledger.begin_experiment(1000);
  ledger.credit_sample(a);
  b.busy.store(true);
  EXPECT_EQ(ledger.pay_from_signal(b), 0u);
  b.busy.store(false);
  EXPECT_EQ(ledger.pay_from_signal(b), 1000u);
}

TEST_F(DelayTest, SignalHandlerDoesNotPayWhileThreadIsBlocked) {
  // A sample signal that reaches a thread inside a blocking call must not
  // pay: the wake-up skips those delays (or post_block pays them). Paying
  // here too put the thread ahead of the virtual clock for good, and every
  // thread it created after inherited the lead.
  ledger.begin_experiment(1000);
  ledger.pre_block(b);
  ledger.credit_sample(a);
  EXPECT_EQ(ledger.pay_from_signal(b), 0u);
  ledger.post_block(b, /*skip=*/true);
  EXPECT_EQ(g_slept_total, 0u);
  EXPECT_EQ(b.local.load(), ledger.global()) << "in step with the virtual clock, not ahead of it";
}

TEST_F(DelayTest, SettledWhenPaidUpOrBlocked) {
  ledger.begin_experiment(1000);
  EXPECT_TRUE(ledger.settled(b));
  ledger.credit_sample(a);
  EXPECT_TRUE(ledger.settled(a));
  EXPECT_FALSE(ledger.settled(b));
  ledger.pre_block(b);  // pays, then blocks
  ledger.credit_sample(a);
  EXPECT_TRUE(ledger.settled(b)) << "a blocked thread skips what accrues, or pays it when it wakes";
  ledger.post_block(b, /*skip=*/true);
  EXPECT_TRUE(ledger.settled(b));
}

// A sleep during whose first two calls another thread is sampled in the
// selected line (it keeps running the line while the payer sleeps).
DelayLedger* g_ledger = nullptr;
ThreadLedger* g_runner = nullptr;
int g_sleep_calls = 0;
uint64_t sleep_while_line_runs(uint64_t ns) {
  if (g_sleep_calls++ < 2) g_ledger->credit_sample(*g_runner);
  return fake_sleep(ns);
}

TEST(DelayPayAll, CatchUpAlsoPaysWhatAccruedWhileItPaid) {
  DelayLedger ledger{&sleep_while_line_runs};
  ThreadLedger runner, waker;
  ledger.start_thread(runner, 0);
  ledger.start_thread(waker, 0);
  g_ledger = &ledger;
  g_runner = &runner;
  g_sleep_calls = 0;
  g_slept_total = 0;
  ledger.begin_experiment(1000);
  ledger.credit_sample(runner);
  ledger.catch_up(waker);
  EXPECT_EQ(ledger.global(), 3000u);
  EXPECT_EQ(ledger.owed(waker), 0u) << "wakes its waiter only once level with the clock";
  EXPECT_EQ(g_slept_total, 3000u);
  EXPECT_EQ(g_sleep_calls, 3);
}

TEST_F(DelayTest, ZeroSpeedupExperimentInsertsNothing) {
  ledger.begin_experiment(0);
  for (int i = 0; i < 10; ++i) ledger.credit_sample(a);
  EXPECT_EQ(ledger.global(), 0u);
  EXPECT_EQ(ledger.pay(b), 0u);
}

// Woken by a thread of the program (a write to a pipe it read, found on the
// WakeBoard, or a pthread call): the waiter skips everything that accrued
// until it returned, the wait for a core after the wake included.
TEST_F(DelayTest, WokenByTheProgramSkipsWhatAccruedUntilItReturned) {
  ledger.begin_experiment(500);
  ledger.pre_block(b);
  ledger.credit_sample(a);
  ledger.credit_sample(a);  // a's work before the wake
  ledger.credit_sample(a);  // after the wake, while b waits for a core a holds
  EXPECT_TRUE(ledger.accrued_while_blocked(b));
  ledger.post_block(b, /*skip=*/true);
  EXPECT_EQ(g_slept_total, 0u);
  EXPECT_EQ(ledger.owed(b), 0u);
  ledger.credit_sample(a);
  EXPECT_EQ(ledger.owed(b), 500u) << "what accrues after the return is owed in full";
}

// Woken from outside (no record reached it): pays everything that accrued.
TEST_F(DelayTest, WokenFromOutsidePaysEverythingThatAccrued) {
  ledger.begin_experiment(500);
  ledger.pre_block(b);
  ledger.credit_sample(a);
  ledger.credit_sample(a);
  ledger.post_block(b, /*skip=*/false);
  EXPECT_EQ(g_slept_total, 1000u);
}

// A thread that overslept its payment before blocking stands ahead of the
// clock; woken by the program, it keeps that lead, as it would had it not
// blocked (OversleepIsCreditedSoErrorDoesNotAccumulate).
TEST_F(DelayTest, WokenByTheProgramKeepsTheWaitersOwnLead) {
  ledger.begin_experiment(500);
  ledger.credit_sample(a);
  g_oversleep = 60;
  ledger.pre_block(b);  // pays 500 + 60: stands 60 ahead
  g_oversleep = 0;
  ledger.credit_sample(a);
  ledger.post_block(b, /*skip=*/true);
  EXPECT_EQ(b.local.load(), ledger.global() + 60);
  ledger.credit_sample(a);
  EXPECT_EQ(ledger.owed(b), 440u) << "the lead is taken off what accrues later";
}

TEST_F(DelayTest, NothingAccruedNothingToDecide) {
  ledger.begin_experiment(500);
  ledger.pre_block(b);
  EXPECT_FALSE(ledger.accrued_while_blocked(b));
  EXPECT_FALSE(ledger.delays_outstanding());
  ledger.credit_sample(a);
  EXPECT_TRUE(ledger.delays_outstanding());
  ledger.end_experiment();
  EXPECT_TRUE(ledger.delays_outstanding()) << "owed until the next experiment forgives them";
  ledger.begin_experiment(0);
  EXPECT_FALSE(ledger.delays_outstanding());
}

TEST_F(DelayTest, OutstandingIsTheDebtUntilPaid) {
  ledger.begin_experiment(500);
  ledger.credit_sample(a);
  ledger.credit_sample(a);
  ledger.end_experiment();
  EXPECT_EQ(ledger.outstanding(a), 0u) << "the sampled thread credits itself";
  EXPECT_EQ(ledger.outstanding(b), 1000u);
  EXPECT_FALSE(ledger.settled(b));
  ledger.pay(b);
  EXPECT_EQ(ledger.outstanding(b), 0u);
  EXPECT_TRUE(ledger.settled(b));
}

// A payment of several ms is slept in slices of at most max_sleep_slice_ns
// (a thread idle for ms at a time ran slower afterwards: sys.h), the whole
// of it, and with the thread's own timer slack restored.
//
// The slices are checked where they are computed: how many a real sleep
// takes depends on how late each wakes (a busy machine wakes them late, and
// fewer fit), which a unit test must not depend on.
TEST(TightSleepTest, SlicesEndAtMostOneSliceLaterAndNeverPastThePayment) {
  constexpr uint64_t slice = sys::max_sleep_slice_ns;
  EXPECT_EQ(sys::sleep_slice_end(1'000'000, 5'000'000), 1'000'000 + slice);
  EXPECT_EQ(sys::sleep_slice_end(5'000'000 - slice / 2, 5'000'000), 5'000'000u);
  EXPECT_EQ(sys::sleep_slice_end(5'000'000 - slice, 5'000'000), 5'000'000u);
  uint64_t now = 0, slices = 0;
  while (now < 4'000'000) now = sys::sleep_slice_end(now, 4'000'000), ++slices;
  EXPECT_EQ(slices, 4'000'000 / slice) << "a 4 ms payment on time is that many slices";
}

// A whole payment is slept (a slice that ends early is followed by the
// next), what it returns is time that really passed, and the program's
// timer slack is what it was.
TEST(TightSleepTest, SleepsTheWholePaymentAndRestoresTheSlack) {
  const long slack = prctl(PR_GET_TIMERSLACK);
  const uint64_t start = sys::monotonic_ns();
  const uint64_t slept = sys::tight_sleep_ns(4'000'000);
  const uint64_t passed = sys::monotonic_ns() - start;
  EXPECT_GE(slept, 4'000'000u);
  EXPECT_LE(slept, passed);
  EXPECT_EQ(prctl(PR_GET_TIMERSLACK), slack);
}

}  // namespace
}  // namespace coz
