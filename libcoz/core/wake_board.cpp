#include "wake_board.h"

namespace coz {
namespace {

constexpr uint64_t in_progress = ~uint64_t{0};

uint64_t pack(WakeKind kind, int target) {
  return (uint64_t{static_cast<uint32_t>(kind)} << 32) | static_cast<uint32_t>(target);
}

}  // namespace

void WakeBoard::post(WakeKind kind, int target, uint64_t credit) {
  uint64_t seq = next_.fetch_add(1, std::memory_order_acq_rel);
  Slot& slot = slots_[seq % capacity];
  // Readers that see in_progress, or a sequence number other than the one
  // they look for, skip the slot; two posts that wrap onto one slot at once
  // (a full ring in between) leave it in_progress until the later finishes.
  slot.seq.store(in_progress, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot.kind_and_target.store(pack(kind, target), std::memory_order_relaxed);
  slot.credit.store(credit, std::memory_order_relaxed);
  slot.seq.store(seq, std::memory_order_release);
}

bool WakeBoard::read(uint64_t seq, WakeRecord& out) const {
  const Slot& slot = slots_[seq % capacity];
  if (slot.seq.load(std::memory_order_acquire) != seq) return false;
  uint64_t packed = slot.kind_and_target.load(std::memory_order_relaxed);
  out.credit = slot.credit.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (slot.seq.load(std::memory_order_relaxed) != seq) return false;  // overwritten while we read
  out.kind = static_cast<WakeKind>(packed >> 32);
  out.target = static_cast<int>(static_cast<uint32_t>(packed));
  return true;
}

}  // namespace coz
