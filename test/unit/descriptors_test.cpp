// The runtime's own descriptors: placed above the program's limit, and
// passed by when the program closes ranges of descriptors.
#include "descriptors.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

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

}  // namespace
}  // namespace coz
