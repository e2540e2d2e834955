// The stack walk on real stacks of this test process: through glibc (built
// without frame pointers), through a signal frame, from a copy of the stack
// as the kernel takes it, and where it must stop.
#include "unwinder.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "object_frames.h"

namespace coz {
namespace {

ObjectFrames& frames() {
  static ObjectFrames* f = [] {
    auto* o = new ObjectFrames;
    char exe[4096] = {};
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    o->add_loaded(n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string("?"), "/usr/lib/debug");
    return o;
  }();
  return *f;
}

struct StackBounds {
  uint64_t low = 0, high = 0;
};

StackBounds this_thread_stack() {
  pthread_attr_t attr;
  StackBounds b;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return b;
  void* base = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &base, &size) == 0) {
    b.low = reinterpret_cast<uint64_t>(base);
    b.high = b.low + size;
  }
  pthread_attr_destroy(&attr);
  return b;
}

enum class Source { Live, Copy, ShortCopy };

struct Walk {
  std::vector<UnwindFrame> frames;
  UnwindStop stop = UnwindStop::DepthLimit;
};

/// Walks the stack from inside this function (its frame must be live while
/// the walk reads it), from the live stack or a copy of its top as perf
/// takes one, into `walk`. Given the stack's `bounds` and `walk.frames`
/// already sized, it allocates nothing and reads no file, as a signal
/// handler must (ThreadSanitizer checks).
__attribute__((noinline)) void walk_from_here(Source source, Walk& walk, const StackBounds* bounds = nullptr) {
  UnwindRegisters regs;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(regs.ip), "=r"(regs.sp), "=r"(regs.bp));
  static thread_local uint8_t copy[8192];
  const StackBounds stack = bounds ? *bounds : this_thread_stack();
  StackMemory memory = StackMemory::live(stack.low, stack.high);
  if (source != Source::Live) {
    size_t size = source == Source::Copy ? sizeof copy : 16;
    size = std::min<size_t>(size, stack.high - regs.sp);
    std::memcpy(copy, reinterpret_cast<const void*>(regs.sp), size);
    memory = StackMemory::copy(regs.sp, copy, size);
  }
  if (walk.frames.empty()) walk.frames.resize(64);
  size_t n = unwind(frames().tables(), regs, memory, walk.frames.data(), walk.frames.size(), walk.stop);
  walk.frames.resize(n);  // smaller: no allocation
}

/// Whether some frame of the walk is inside `function`.
bool passes_through(const Walk& walk, const void* function) {
  for (const auto& f : walk.frames) {
    if (f.table && f.table->function_start(f.pc) == reinterpret_cast<uint64_t>(function)) return true;
  }
  return false;
}

std::string describe(const Walk& walk) {
  std::string out = std::to_string(walk.frames.size()) + " frames, stop " + unwind_stop_name(walk.stop) + ":";
  for (const auto& f : walk.frames) {
    out += "\n  " + (f.table ? frames().function_name(f.table->function_start(f.pc)) : std::string("?"));
  }
  return out;
}

// ---- a walk from inside glibc's qsort, which has no frame pointers ----

Walk g_walk;
Source g_source;

int compare_and_walk(const void* a, const void* b) {
  if (g_walk.frames.empty()) walk_from_here(g_source, g_walk);
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

__attribute__((noinline)) void sort_something() {
  int values[64];
  for (int i = 0; i < 64; ++i) values[i] = (i * 37) % 64;
  qsort(values, 64, sizeof values[0], compare_and_walk);
  asm volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
}

Walk walk_through_qsort(Source source) {
  g_walk = Walk{};
  g_source = source;
  sort_something();
  return g_walk;
}

TEST(Unwinder, WalksThroughLibcToTheCallerOfQsort) {
  Walk walk = walk_through_qsort(Source::Live);
  EXPECT_TRUE(passes_through(walk, reinterpret_cast<const void*>(&compare_and_walk))) << describe(walk);
  EXPECT_TRUE(passes_through(walk, reinterpret_cast<const void*>(&sort_something))) << describe(walk);
  // main, then __libc_start_call_main and _start, whose CFI ends the stack.
  EXPECT_EQ(walk.stop, UnwindStop::Outermost) << describe(walk);
}

TEST(Unwinder, WalksTheSameFromACopyOfTheStack) {
  Walk live = walk_through_qsort(Source::Live);
  Walk copied = walk_through_qsort(Source::Copy);
  ASSERT_GE(copied.frames.size(), 4u) << describe(copied);
  EXPECT_TRUE(passes_through(copied, reinterpret_cast<const void*>(&sort_something))) << describe(copied);
  // Frame for frame the same, up to walk_through_qsort (its callers are two
  // lines of this test, so their return addresses differ).
  const auto common = reinterpret_cast<uint64_t>(&walk_through_qsort);
  for (size_t i = 0; i < copied.frames.size() && i < live.frames.size(); ++i) {
    EXPECT_EQ(copied.frames[i].pc, live.frames[i].pc) << "frame " << i << "\n" << describe(copied);
    if (live.frames[i].table && live.frames[i].table->function_start(live.frames[i].pc) == common) break;
  }
}

TEST(Unwinder, StopsWhereTheCopyEnds) {
  Walk walk = walk_through_qsort(Source::ShortCopy);
  EXPECT_EQ(walk.stop, UnwindStop::Unreadable) << describe(walk);
  EXPECT_FALSE(passes_through(walk, reinterpret_cast<const void*>(&sort_something))) << describe(walk);
}

TEST(Unwinder, StopsAtTheDepthLimit) {
  UnwindRegisters regs;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(regs.ip), "=r"(regs.sp), "=r"(regs.bp));
  StackBounds bounds = this_thread_stack();
  UnwindFrame out[3];
  UnwindStop stop;
  EXPECT_EQ(unwind(frames().tables(), regs, StackMemory::live(bounds.low, bounds.high), out, 3, stop), 3u);
  EXPECT_EQ(stop, UnwindStop::DepthLimit);
}

TEST(Unwinder, StopsWithoutCallFrameInformation) {
  UnwindRegisters regs{0x1000, 0, 0};  // no object is mapped there
  UnwindFrame out[4];
  UnwindStop stop;
  EXPECT_EQ(unwind(frames().tables(), regs, StackMemory::live(0, 0), out, 4, stop), 1u);
  EXPECT_EQ(stop, UnwindStop::NoCfi);
  EXPECT_EQ(out[0].table, nullptr);
}

// ---- hand-made call-frame information: rules real code needs rarely ----

/// One object at [0x10000, 0x11000): a function at 0x10000 whose epilogue
/// has popped rbp at 0x10010 (CFA = rsp + 8, the rule still says "rbp saved
/// at CFA - 16"), a gap without CFI at 0x10100 (a system-call stub's last
/// instructions, as glibc's clone3), and an outermost caller at 0x10800.
const FrameTables& hand_made_tables() {
  static FrameTables tables;
  if (tables.size() > 0) return tables;
  FrameTable table;
  table.base = 0x10000;
  table.end = 0x11000;
  table.rows = {{0x000, 16, -16, CfaRule::Sp, 0},
                {0x010, 8, -16, CfaRule::Sp, 0},
                {0x100, 0, FrameRow::kBpUnchanged, CfaRule::None, 0},
                {0x800, 8, FrameRow::kBpUnchanged, CfaRule::Sp, FrameRow::kOutermost}};
  table.function_starts = {0x000, 0x800};
  table.function_ends = {0x100, 0x1000};
  tables.add(std::move(table));
  tables.publish();
  return tables;
}

TEST(Unwinder, AnEpilogueThatPoppedRbpKeepsItsValue) {
  const FrameTables& tables = hand_made_tables();
  const uint64_t stack[2] = {0x10801, 0};  // rsp -> the return address
  UnwindRegisters regs{0x10010, 0x7000, 0x1234};
  UnwindFrame out[4];
  UnwindStop stop;
  ASSERT_EQ(unwind(tables, regs, StackMemory::copy(0x7000, reinterpret_cast<const uint8_t*>(stack), sizeof stack), out,
                   4, stop),
            2u);
  EXPECT_EQ(stop, UnwindStop::Outermost);
  EXPECT_EQ(out[1].pc, 0x10800u);  // the return address, minus one
}

TEST(Unwinder, ASystemCallStubWithoutCfiReturnsToTheAddressOnTopOfTheStack) {
  const FrameTables& tables = hand_made_tables();
  const uint64_t stack[2] = {0x10801, 0};
  UnwindRegisters regs{0x10102, 0x7000, 0x1234};
  UnwindFrame out[4];
  UnwindStop stop;
  StackMemory memory = StackMemory::copy(0x7000, reinterpret_cast<const uint8_t*>(stack), sizeof stack);
  EXPECT_EQ(unwind(tables, regs, memory, out, 4, stop), 1u);  // not entered by a system call: no guess
  EXPECT_EQ(stop, UnwindStop::NoCfi);
  regs.after_syscall = true;
  ASSERT_EQ(unwind(tables, regs, memory, out, 4, stop), 2u);
  EXPECT_EQ(stop, UnwindStop::Outermost);
  EXPECT_EQ(out[1].pc, 0x10800u);
  const uint64_t no_code[2] = {0x5000, 0};  // a new thread's empty stack, or a signal frame: no code there
  EXPECT_EQ(unwind(tables, regs, StackMemory::copy(0x7000, reinterpret_cast<const uint8_t*>(no_code), sizeof no_code),
                   out, 4, stop),
            1u);
  EXPECT_EQ(stop, UnwindStop::NoCfi);
}

// ---- through a signal frame (glibc's __restore_rt) ----

Walk g_signal_walk;
StackBounds g_signal_bounds;

void walk_in_handler(int) {
  walk_from_here(Source::Live, g_signal_walk, &g_signal_bounds);
  asm volatile("" ::: "memory");  // not a tail call: the walk must see this frame
}

__attribute__((noinline)) void raise_a_signal() {
  raise(SIGUSR2);
  asm volatile("" ::: "memory");
}

TEST(Unwinder, WalksThroughASignalFrame) {
  struct sigaction sa {}, old {};
  sa.sa_handler = walk_in_handler;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
  g_signal_bounds = this_thread_stack();  // what the handler may not do itself
  g_signal_walk.frames.resize(64);
  (void)frames();
  raise_a_signal();
  sigaction(SIGUSR2, &old, nullptr);
  EXPECT_TRUE(passes_through(g_signal_walk, reinterpret_cast<const void*>(&walk_in_handler))) << describe(g_signal_walk);
  EXPECT_TRUE(passes_through(g_signal_walk, reinterpret_cast<const void*>(&raise_a_signal)))
      << describe(g_signal_walk);
  EXPECT_EQ(g_signal_walk.stop, UnwindStop::Outermost) << describe(g_signal_walk);
}

// ---- a thread's stack ends at clone's outermost frame ----

void* walk_on_thread(void* out) {
  walk_from_here(Source::Live, *static_cast<Walk*>(out));
  asm volatile("" ::: "memory");
  return nullptr;
}

TEST(Unwinder, AThreadsWalkEndsAtItsFirstFrame) {
  Walk walk;
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, nullptr, walk_on_thread, &walk), 0);
  pthread_join(thread, nullptr);
  EXPECT_TRUE(passes_through(walk, reinterpret_cast<const void*>(&walk_on_thread))) << describe(walk);
  EXPECT_EQ(walk.stop, UnwindStop::Outermost) << describe(walk);
  EXPECT_LE(walk.frames.size(), 6u) << describe(walk);  // here, walk_on_thread, start_thread, clone3
}

// ---- names of the functions a walk passes through ----

TEST(ObjectFrames, NamesLibraryFunctionsWithTheirLibrary) {
  Walk walk = walk_through_qsort(Source::Live);
  bool named_libc = false;
  for (const auto& f : walk.frames) {
    if (!f.table) continue;
    std::string name = frames().function_name(f.table->function_start(f.pc));
    if (name.size() > 12 && name.compare(name.size() - 12, 12, " [libc.so.6]") == 0) named_libc = true;
  }
  EXPECT_TRUE(named_libc) << describe(walk);
  std::string mine = frames().function_name(reinterpret_cast<uint64_t>(&sort_something));
  EXPECT_NE(mine.find("sort_something"), std::string::npos) << mine;
  EXPECT_NE(mine.find(" [unwinder_test]"), std::string::npos) << mine;
}

}  // namespace
}  // namespace coz
