#include "perf_ring.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace coz {

bool PerfRing::map(int fd, unsigned data_pages) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t size = page * (1 + data_pages);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return false;
  data_ = static_cast<unsigned char*>(p) + page;
  data_size_ = page * data_pages;
  map_size_ = size;
  // meta_ last: a sample signal arriving now (the thread's other sampler is
  // already running) drains only a ring that is whole.
  std::atomic_signal_fence(std::memory_order_release);
  meta_ = static_cast<perf_event_mmap_page*>(p);
  return true;
}

void PerfRing::unmap() {
  void* mapped = meta_;
  meta_ = nullptr;
  std::atomic_signal_fence(std::memory_order_release);
  if (mapped) munmap(mapped, map_size_);
  data_ = nullptr;
}

PerfRing::Mapping PerfRing::release() {
  Mapping m{meta_, map_size_};
  meta_ = nullptr;
  std::atomic_signal_fence(std::memory_order_release);
  data_ = nullptr;
  return m;
}

void PerfRing::copy_out(size_t offset, void* to, size_t size) const {
  size_t first = data_size_ - offset;
  if (size <= first) {
    std::memcpy(to, data_ + offset, size);
  } else {
    std::memcpy(to, data_ + offset, first);
    std::memcpy(static_cast<unsigned char*>(to) + first, data_, size - first);
  }
}

}  // namespace coz
