// The runtime's own descriptors: placed above the program's limit, and
// passed by when the program closes ranges of descriptors.
#include "descriptors.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <sys/wait.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "profile_writer.h"

namespace coz {
namespace {

bool is_open(int fd) { return fcntl(fd, F_GETFD) >= 0; }

/// Runs the test body under a soft descriptor limit of `soft` (the hard one
/// unchanged), restored afterwards.
class DescriptorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved_), 0);
    if (saved_.rlim_max < 256) GTEST_SKIP() << "the hard descriptor limit is below 256";
    rlimit low = saved_;
    low.rlim_cur = 64;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  }
  void TearDown() override { setrlimit(RLIMIT_NOFILE, &saved_); }
  rlimit saved_{};
};

TEST_F(DescriptorsTest, AdoptedDescriptorsLiveAboveTheLimitWhichStaysAsItWas) {
  int fd = descriptors::adopt(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_GE(fd, 64) << "at or above the soft limit, where the program allocates nothing";
  EXPECT_TRUE(descriptors::is_runtime(fd));
  EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  rlimit now{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, 64u) << "the program sees the limit it set";
  EXPECT_EQ(now.rlim_max, saved_.rlim_max);
  // The program's own descriptors are below it, and not the runtime's.
  int own = open("/dev/null", O_RDONLY);
  ASSERT_GE(own, 0);
  EXPECT_LT(own, 64);
  EXPECT_FALSE(descriptors::is_runtime(own));
  close(own);
  descriptors::close_own(fd);
  EXPECT_FALSE(descriptors::is_runtime(fd));
  EXPECT_FALSE(is_open(fd));
}

TEST_F(DescriptorsTest, CloseRangeClosesEverythingButTheRuntimes) {
  int ours[3];
  for (int& fd : ours) fd = descriptors::adopt(open("/dev/null", O_RDONLY | O_CLOEXEC));
  // The program's descriptors just below the runtime's, and (it raised its
  // limit) one among them. Only numbers from 56 up are closed: the test
  // process's own descriptors are below.
  int file = open("/dev/null", O_RDONLY);
  int theirs = fcntl(file, F_DUPFD, 56);
  close(file);
  ASSERT_TRUE(theirs >= 56 && theirs < 64) << theirs;
  rlimit high = saved_;
  high.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &high), 0);
  int among = fcntl(theirs, F_DUPFD, ours[0]);
  ASSERT_GT(among, ours[0]);
  EXPECT_EQ(descriptors::next_runtime(56, ~0u), ours[0]);
  EXPECT_EQ(descriptors::next_runtime(static_cast<unsigned>(ours[2]) + 1, ~0u), -1);

  ASSERT_EQ(descriptors::close_range_except_runtime(56, ~0u, 0), 0);
  EXPECT_FALSE(is_open(theirs));
  EXPECT_FALSE(is_open(among));
  for (int fd : ours) EXPECT_TRUE(is_open(fd)) << fd;
  for (int fd : ours) descriptors::close_own(fd);
  EXPECT_EQ(descriptors::next_runtime(56, ~0u), -1);
}

TEST(Descriptors, NotAdoptedNumbersAreNotTheRuntimes) {
  EXPECT_FALSE(descriptors::is_runtime(-1));
  EXPECT_FALSE(descriptors::is_runtime(0));
  EXPECT_FALSE(descriptors::is_runtime(1 << 30));
}

/// Drops CAP_SYS_RESOURCE from this process (a forked child of the test):
/// without it a hard limit cannot be raised, as for a user.
bool drop_sys_resource() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  data[CAP_SYS_RESOURCE / 32].effective &= ~(1u << (CAP_SYS_RESOURCE % 32));
  data[CAP_SYS_RESOURCE / 32].permitted &= ~(1u << (CAP_SYS_RESOURCE % 32));
  return syscall(SYS_capset, &header, data) == 0;
}

/// How many descriptors this thread's table can still take.
int open_until_full(std::vector<int>& fds) {
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fds.push_back(fd);
  return static_cast<int>(fds.size());
}

/// In a child whose hard limit is its soft one and cannot be raised: the
/// runtime's table of its own, and a profile only its thread writes.
/// Returns what went wrong, or an empty string.
std::string own_table_in_child(const std::string& profile) {
  if (!drop_sys_resource()) return "cannot drop CAP_SYS_RESOURCE";
  rlimit tight{32, 32};
  if (setrlimit(RLIMIT_NOFILE, &tight) != 0) return "cannot lower the limit";
  unsigned long limit = 0;
  if (!descriptors::decide_table(limit) || !descriptors::own_table()) return "no own table under a hard limit";
  if (limit != 32) return "decide_table saw another limit";
  ProfileWriter writer;
  std::string error;
  if (!writer.open(profile, error)) return error;
  writer.write_runtime(7);  // from a thread that cannot use the runtime's table: kept for its thread
  std::string problem;
  int runtime_fds = 0;
  std::thread keeper([&] {
    if (!descriptors::enter_own_table() || !descriptors::in_own_table()) {
      problem = "enter_own_table failed";
      return;
    }
    writer.flush();
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (descriptors::adopt(fd) != fd || descriptors::is_runtime(fd)) problem = "adopt moved a descriptor of the own table";
    std::vector<int> fds;
    runtime_fds = open_until_full(fds);
    // Room again before the thread ends: UBSan checks a vtable through a pipe.
    for (int opened : fds) close(opened);
  });
  keeper.join();
  if (!problem.empty()) return problem;
  if (descriptors::in_own_table() || descriptors::usable_here()) return "the main thread counts as the own table's";
  // The runtime's table filled up to the limit, and the program's still has all its numbers.
  std::vector<int> fds;
  const int program_fds = open_until_full(fds);
  if (runtime_fds < 25 || program_fds < 25) {
    return "tables not apart: the runtime's took " + std::to_string(runtime_fds) + ", the program's " +
           std::to_string(program_fds);
  }
  for (int fd : fds) close(fd);
  std::ifstream in(profile);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text != "runtime\ttime=7\n") return "the profile holds \"" + text + "\"";
  return "";
}

TEST(Descriptors, UnderAHardLimitTheRuntimesFilesLiveInATableOfItsOwn) {
  char path[] = "/tmp/coz_descriptors_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t child = fork();
  if (child == 0) {
    close(pipe_fds[0]);
    std::string problem = own_table_in_child(path);
    ssize_t ignored = write(pipe_fds[1], problem.data(), problem.size());
    (void)ignored;
    _exit(problem.empty() ? 0 : 1);
  }
  close(pipe_fds[1]);
  std::string problem;
  char buf[256];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) problem.append(buf, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  unlink(path);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << problem;
}

}  // namespace
}  // namespace coz
