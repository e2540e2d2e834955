// PerfRing's record walk, without a kernel: the ring is a memfd mapped twice,
// once by the PerfRing under test and once by the test, which writes records
// and moves data_head as the kernel does.
#include "perf_ring.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace coz {
namespace {

constexpr unsigned data_pages = 1;

/// The kernel's side of one ring: writes whole records at data_head.
class FakeKernel {
 public:
  FakeKernel() {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    fd_ = memfd_create("perf_ring_test", 0);
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(ftruncate(fd_, static_cast<off_t>(page_ * (1 + data_pages))), 0);
    void* p = mmap(nullptr, page_ * (1 + data_pages), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    EXPECT_NE(p, MAP_FAILED);
    meta_ = static_cast<perf_event_mmap_page*>(p);
    data_ = static_cast<unsigned char*>(p) + page_;
  }
  ~FakeKernel() {
    munmap(meta_, page_ * (1 + data_pages));
    close(fd_);
  }
  int fd() const { return fd_; }
  size_t data_size() const { return page_ * data_pages; }
  uint64_t tail() const { return meta_->data_tail; }

  /// Writes a record of `size` bytes (header included) whose body bytes are
  /// all `fill`, wrapping around the end as the kernel does; `publish`:
  /// moves data_head past it.
  void write(uint16_t size, unsigned char fill, bool publish = true) {
    std::vector<unsigned char> record(size, fill);
    perf_event_header h{PERF_RECORD_SAMPLE, 0, size};
    std::memcpy(record.data(), &h, std::min<size_t>(sizeof h, size));
    for (size_t i = 0; i < record.size(); ++i) data_[(written_ + i) % data_size()] = record[i];
    written_ += size;
    if (publish) meta_->data_head = written_;
  }
  /// Writes `n` raw bytes (a header that lies) and publishes them.
  void write_raw(const void* bytes, size_t n) {
    for (size_t i = 0; i < n; ++i) data_[(written_ + i) % data_size()] = static_cast<const unsigned char*>(bytes)[i];
    written_ += n;
    meta_->data_head = written_;
  }
  void publish() { meta_->data_head = written_; }
  /// Starts writing at `offset` bytes into the ring, as if that much had been written and read.
  void skip_to(uint64_t offset) {
    written_ = offset;
    meta_->data_head = offset;
    meta_->data_tail = offset;
  }

 private:
  size_t page_ = 0;
  int fd_ = -1;
  perf_event_mmap_page* meta_ = nullptr;
  unsigned char* data_ = nullptr;
  uint64_t written_ = 0;
};

struct Seen {
  uint16_t size;
  unsigned char fill;  // the body's first byte (every body byte is the same)
  bool whole;          // every body byte is `fill`
};

std::vector<Seen> drain(PerfRing& ring, size_t scratch_size = 256) {
  std::vector<unsigned char> scratch(scratch_size);
  std::vector<Seen> seen;
  ring.drain(
      [&](const perf_event_header& h) {
        const auto* body = reinterpret_cast<const unsigned char*>(&h + 1);
        const size_t n = h.size - sizeof h;
        bool whole = true;
        for (size_t i = 1; i < n; ++i) whole = whole && body[i] == body[0];
        seen.push_back({h.size, n ? body[0] : static_cast<unsigned char>(0), whole});
      },
      scratch.data(), scratch.size());
  return seen;
}

class PerfRingTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(ring.map(kernel.fd(), data_pages)); }
  FakeKernel kernel;
  PerfRing ring;
};

TEST_F(PerfRingTest, RecordsComeOutOldestFirstAndTheSpaceIsHandedBack) {
  kernel.write(24, 1);
  kernel.write(40, 2);
  kernel.write(16, 3);
  EXPECT_EQ(ring.unread_bytes(), 80u);
  const std::vector<Seen> seen = drain(ring);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].size, 24);
  EXPECT_EQ(seen[0].fill, 1);
  EXPECT_EQ(seen[1].size, 40);
  EXPECT_EQ(seen[1].fill, 2);
  EXPECT_EQ(seen[2].fill, 3);
  EXPECT_EQ(kernel.tail(), 80u);
  EXPECT_EQ(ring.unread_bytes(), 0u);
  EXPECT_TRUE(drain(ring).empty());
}

TEST_F(PerfRingTest, ARecordThatWrapsAroundTheEndComesOutWhole) {
  kernel.skip_to(kernel.data_size() - 20);  // the next record's header fits, its body does not
  kernel.write(64, 7);
  kernel.write(24, 8);
  const std::vector<Seen> seen = drain(ring);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].size, 64);
  EXPECT_EQ(seen[0].fill, 7);
  EXPECT_TRUE(seen[0].whole) << "copied to the scratch buffer in one piece";
  EXPECT_EQ(seen[1].fill, 8);
  EXPECT_EQ(kernel.tail(), kernel.data_size() - 20 + 88);
}

TEST_F(PerfRingTest, ARecordWhoseHeaderWrapsComesOutWhole) {
  kernel.skip_to(kernel.data_size() - 4);  // the header itself is split
  kernel.write(32, 9);
  const std::vector<Seen> seen = drain(ring);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].size, 32);
  EXPECT_TRUE(seen[0].whole);
}

TEST_F(PerfRingTest, AWrappingRecordLargerThanTheScratchIsSkippedNotMisread) {
  kernel.skip_to(kernel.data_size() - 16);
  kernel.write(512, 5);
  kernel.write(24, 6);
  const std::vector<Seen> seen = drain(ring, /*scratch_size=*/256);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].fill, 6) << "the record after it still comes out";
  EXPECT_EQ(kernel.tail(), kernel.data_size() - 16 + 536);
}

TEST_F(PerfRingTest, ARecordNotYetPublishedWaitsForTheNextDrain) {
  kernel.write(24, 1);
  kernel.write(48, 2, /*publish=*/false);
  std::vector<Seen> seen = drain(ring);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(kernel.tail(), 24u);
  kernel.publish();
  seen = drain(ring);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].fill, 2);
  EXPECT_EQ(kernel.tail(), 72u);
}

// data_head past a header whose size says more than was published: the walk
// stops before it (the kernel never publishes half a record; a ring that
// says so is not read past its head).
TEST_F(PerfRingTest, AHeaderLongerThanWhatWasPublishedIsNotRead) {
  kernel.write(24, 1);
  perf_event_header lying{PERF_RECORD_SAMPLE, 0, 200};
  kernel.write_raw(&lying, sizeof lying);
  const std::vector<Seen> seen = drain(ring);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(kernel.tail(), 24u);
}

TEST_F(PerfRingTest, AHeaderSmallerThanAHeaderStopsTheWalk) {
  perf_event_header broken{PERF_RECORD_SAMPLE, 0, 4};
  kernel.write_raw(&broken, sizeof broken);
  kernel.write(24, 1);
  EXPECT_TRUE(drain(ring).empty()) << "no size to step by: nothing after it can be trusted";
  EXPECT_EQ(kernel.tail(), 0u);
}

TEST_F(PerfRingTest, UnmappedRingDrainsNothing) {
  kernel.write(24, 1);
  ring.unmap();
  EXPECT_EQ(ring.unread_bytes(), 0u);
  EXPECT_TRUE(drain(ring).empty());
}

}  // namespace
}  // namespace coz
