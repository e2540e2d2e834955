// The perf_event ring buffer of one thread: the kernel writes sample records
// at data_head, we consume them and hand space back through data_tail.
#pragma once

#include <linux/perf_event.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace coz {

class PerfRing {
 public:
  PerfRing() = default;
  ~PerfRing() { unmap(); }
  PerfRing(const PerfRing&) = delete;
  PerfRing& operator=(const PerfRing&) = delete;

  /// Maps 1 + data_pages pages of `fd` (data_pages a power of two).
  bool map(int fd, unsigned data_pages);
  void unmap();
  bool mapped() const { return meta_ != nullptr; }

  struct Mapping {
    void* address;
    size_t size;
  };
  /// Forgets the mapping without unmapping it, for someone else to unmap later.
  Mapping release();

  /// Bytes of records written and not consumed yet.
  uint64_t unread_bytes() const {
    if (!meta_) return 0;
    uint64_t head = std::atomic_ref<__u64>(meta_->data_head).load(std::memory_order_acquire);
    uint64_t tail = std::atomic_ref<__u64>(meta_->data_tail).load(std::memory_order_relaxed);
    return head - tail;
  }

  /// Calls f(const perf_event_header&) for each complete record, oldest first.
  /// A record that wraps around the end of the buffer is copied to `scratch`
  /// (records longer than scratch_size are skipped). Async-signal-safe.
  template <typename F>
  void drain(F&& f, unsigned char* scratch, size_t scratch_size) {
    if (!meta_) return;
    uint64_t head = std::atomic_ref<__u64>(meta_->data_head).load(std::memory_order_acquire);
    uint64_t tail = meta_->data_tail;
    while (tail + sizeof(perf_event_header) <= head) {
      size_t offset = tail & (data_size_ - 1);
      auto* header = reinterpret_cast<const perf_event_header*>(data_ + offset);
      perf_event_header h;
      copy_out(offset, &h, sizeof h);
      if (h.size < sizeof h || tail + h.size > head) break;  // corrupt or incomplete
      if (offset + h.size <= data_size_) {
        f(*header);
      } else if (h.size <= scratch_size) {
        copy_out(offset, scratch, h.size);
        f(*reinterpret_cast<const perf_event_header*>(scratch));
      }
      tail += h.size;
    }
    std::atomic_ref<__u64>(meta_->data_tail).store(tail, std::memory_order_release);
  }

 private:
  void copy_out(size_t offset, void* to, size_t size) const;

  perf_event_mmap_page* meta_ = nullptr;
  unsigned char* data_ = nullptr;
  size_t data_size_ = 0;
  size_t map_size_ = 0;
};

}  // namespace coz
