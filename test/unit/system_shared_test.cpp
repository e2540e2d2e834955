// What the processes of a `coz run --system` run share (system_shared.h):
// the file's creation and mapping, its tables, and two ledgers, in two
// processes, sharing one set of counts.
#include "system_shared.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cstdlib>
#include <vector>
#include <string>

namespace coz {
namespace {

uint64_t exact_sleep(uint64_t ns) { return ns; }

class SystemSharedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/coz-shm-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    setenv("COZ_SHM_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (!path_.empty()) unlink(path_.c_str());
    rmdir(dir_.c_str());
    unsetenv("COZ_SHM_DIR");
  }
  SystemShared* create_and_map(const std::string& name = "") {
    std::string error;
    path_ = create_system_shared(name, "/some/profile.coz", error);
    EXPECT_FALSE(path_.empty()) << error;
    SystemShared* shared = map_system_shared(path_.c_str(), error);
    EXPECT_NE(shared, nullptr) << error;
    return shared;
  }
  std::string dir_, path_;
};

TEST_F(SystemSharedTest, CreatedPrivateMappedWholeAndNamingTheProfile) {
  SystemShared* shared = create_and_map("shop");
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(path_, dir_ + "/coz-system-shop");
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_STREQ(shared->output_path, "/some/profile.coz");
  EXPECT_EQ(shared->leader.load(), 0);
  EXPECT_EQ(shared->experiment_seq.load(), 0u);
  unmap_system_shared(shared);
  // Never over an existing file (a planted name), and only valid names.
  std::string error;
  EXPECT_EQ(create_system_shared("shop", "", error), "");
  EXPECT_NE(error.find("cannot create"), std::string::npos) << error;
  EXPECT_EQ(system_shared_path("../etc"), "");
  EXPECT_EQ(system_shared_path(""), "");
  EXPECT_EQ(system_shared_path(".hidden"), "");
}

TEST_F(SystemSharedTest, AFileOfAnotherSizeIsRefused) {
  std::string other = dir_ + "/coz-system-other";
  FILE* f = fopen(other.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("not a run", f);
  fclose(f);
  std::string error;
  EXPECT_EQ(map_system_shared(other.c_str(), error), nullptr);
  EXPECT_NE(error.find("not this version's"), std::string::npos) << error;
  unlink(other.c_str());
  EXPECT_EQ(map_system_shared((dir_ + "/missing").c_str(), error), nullptr);
}

// One point per name and program, whichever process of that program asks
// for it; another program's point of the same name is another point.
TEST_F(SystemSharedTest, APointIsOneCounterWhoeverAsksForIt) {
  SystemShared* shared = create_and_map();
  ASSERT_NE(shared, nullptr);
  ProgressPoints mine, theirs, other_program;
  mine.share(&shared->points, " [server]");
  theirs.share(&shared->points, " [server]");
  other_program.share(&shared->points, " [client]");
  coz_counter_t* a = mine.get_counter(COZ_COUNTER_TYPE_THROUGHPUT, "request");
  coz_counter_t* b = theirs.get_counter(COZ_COUNTER_TYPE_THROUGHPUT, "request");
  EXPECT_EQ(a, b);
  EXPECT_NE(other_program.get_counter(COZ_COUNTER_TYPE_THROUGHPUT, "request"), a);
  // A latency point's begin and end are two counters; a throughput point of the same name is another.
  coz_counter_t* begin = theirs.get_counter(COZ_COUNTER_TYPE_BEGIN, "request");
  EXPECT_NE(begin, a);
  // The leader sees points only another process created, by their whole names.
  ProgressPoints leader;
  leader.share(&shared->points, " [launcher]");
  leader.import_shared();
  std::vector<std::string> names;
  leader.for_each([&](ProgressPoint& p) { names.push_back(p.name); });
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"request [client]", "request [server]", "request [server]"}));
  unmap_system_shared(shared);
}

TEST_F(SystemSharedTest, LinesAreFoundByName) {
  SystemShared* shared = create_and_map();
  ASSERT_NE(shared, nullptr);
  SharedLine* a = shared->lines.find_or_claim("/src/a.c:12");
  SharedLine* b = shared->lines.find_or_claim("/src/b.c:7");
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(shared->lines.find_or_claim("/src/a.c:12"), a);
  EXPECT_EQ(shared->lines.size(), 2u);
  EXPECT_EQ(shared->lines.find_or_claim(std::string(SharedLine::name_size, 'x')), nullptr);  // too long to share
  unmap_system_shared(shared);
}

TEST_F(SystemSharedTest, AnExecdImageTakesOverItsPidsSlot) {
  SystemShared* shared = create_and_map();
  ASSERT_NE(shared, nullptr);
  ProcessSlot* before = register_process(*shared, 4242);
  ProcessSlot* other = register_process(*shared, 4343);
  ProcessSlot* after = register_process(*shared, 4242);  // the same pid, a new image
  ASSERT_TRUE(before && other && after);
  EXPECT_EQ(before->state.load(), ProcessSlot::Exited);
  EXPECT_EQ(other->state.load(), ProcessSlot::Live);
  EXPECT_EQ(after->state.load(), ProcessSlot::Live);
  unmap_system_shared(shared);
}

// The first process to join leads, whoever's profiler thread asks first;
// its next image (after an exec) still does.
TEST_F(SystemSharedTest, TheFirstProcessToJoinLeads) {
  SystemShared* shared = create_and_map();
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(claim_vacant_lead(*shared, 4242), LeadClaim::Claimed);
  EXPECT_EQ(claim_vacant_lead(*shared, 4343), LeadClaim::Taken);  // its child, or a --join
  EXPECT_EQ(claim_vacant_lead(*shared, 4242), LeadClaim::AlreadyOurs);
  EXPECT_EQ(shared->leader.load(), 4242);
  shared->leader.store(0);  // given up at exit
  EXPECT_EQ(claim_vacant_lead(*shared, 4343), LeadClaim::Claimed);
  unmap_system_shared(shared);
}

TEST_F(SystemSharedTest, AProcessesFateTellsAnExitFromAKill) {
  EXPECT_EQ(process_fate(getpid()), ProcessFate::Running);
  auto zombie_fate = [](pid_t child) {
    for (int i = 0; i < 400 && process_fate(child) == ProcessFate::Running; ++i) usleep(5000);
    return process_fate(child);
  };
  pid_t exited = fork();
  if (exited == 0) _exit(3);  // no exit handler runs: the runtime writes nothing, yet it just left
  EXPECT_EQ(zombie_fate(exited), ProcessFate::Exited);
  pid_t killed = fork();
  if (killed == 0) {
    for (;;) pause();
  }
  kill(killed, SIGKILL);
  EXPECT_EQ(zombie_fate(killed), ProcessFate::Killed);
  int status;
  waitpid(exited, &status, 0);
  waitpid(killed, &status, 0);
  // Reaped: what ended it cannot be told any more.
  EXPECT_EQ(process_fate(exited), ProcessFate::Killed);
  EXPECT_FALSE(process_alive(killed));
}

// Two processes, two ledgers, one set of counts: a sample credited in the
// child puts the parent's thread in debt.
TEST_F(SystemSharedTest, ACreditInOneProcessIsOwedInTheOther) {
  SystemShared* shared = create_and_map();
  ASSERT_NE(shared, nullptr);
  DelayLedger parent_ledger{&exact_sleep};
  parent_ledger.share_counts(&shared->ledger);
  ThreadLedger parent_thread;
  parent_ledger.start_thread(parent_thread, 0);
  parent_ledger.begin_experiment(250'000);
  pid_t child = fork();
  if (child == 0) {
    DelayLedger child_ledger{&exact_sleep};
    child_ledger.share_counts(&shared->ledger);
    ThreadLedger child_thread;
    child_ledger.start_thread(child_thread, 0);
    for (int i = 0; i < 4; ++i) child_ledger.credit_sample(child_thread);
    _exit(child_ledger.owed(child_thread) == 0 ? 0 : 1);  // it credits itself
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(parent_ledger.owed(parent_thread), 1'000'000u);
  EXPECT_EQ(parent_ledger.pay(parent_thread), 1'000'000u);
  EXPECT_EQ(parent_ledger.total_paused(), 1'000'000u);
  unmap_system_shared(shared);
}

}  // namespace
}  // namespace coz
