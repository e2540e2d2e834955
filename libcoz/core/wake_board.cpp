#include "wake_board.h"

namespace coz {
namespace {

constexpr uint64_t in_progress = WakeBoard::slot_in_progress;
constexpr uint64_t empty = WakeBoard::slot_empty;

uint64_t pack(WakeKind kind, int target) {
  return (uint64_t{static_cast<uint32_t>(kind)} << 32) | static_cast<uint32_t>(target);
}

}  // namespace

void WakeBoard::post(WakeKind kind, int target, uint64_t channel) {
  uint64_t seq = next_.fetch_add(1, std::memory_order_acq_rel);
  Slot& slot = slots_[seq % capacity];
  // A post owns the slot from the claim to the publish. Two posts can meet
  // on one slot when a whole ring of others went by while one was between
  // its sequence number and its publish (preempted). They used to write
  // the fields together: the later one published, the earlier one then
  // wrote a field of its own under the later one's number, and a reader
  // took a record of two posts (a target that was not the waker's). Now a
  // post that finds the slot claimed, or holding a newer record, drops its
  // record: the waiter it would have reached pays its delay instead.
  uint64_t current = slot.seq.load(std::memory_order_relaxed);
  do {
    if (current == in_progress || (current != empty && current > seq)) return;
  } while (!slot.seq.compare_exchange_weak(current, in_progress, std::memory_order_acquire,
                                           std::memory_order_relaxed));
  // Readers that loaded a field written after the claim must see the claim
  // when they check the sequence number again (read()).
  std::atomic_thread_fence(std::memory_order_release);
  slot.kind_and_target.store(pack(kind, target), std::memory_order_relaxed);
  slot.channel.store(channel, std::memory_order_relaxed);
  slot.seq.store(seq, std::memory_order_release);
}

bool WakeBoard::read(uint64_t seq, WakeRecord& out) const {
  const Slot& slot = slots_[seq % capacity];
  if (slot.seq.load(std::memory_order_acquire) != seq) return false;
  uint64_t packed = slot.kind_and_target.load(std::memory_order_relaxed);
  out.channel = slot.channel.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (slot.seq.load(std::memory_order_relaxed) != seq) return false;  // overwritten while we read
  out.kind = static_cast<WakeKind>(packed >> 32);
  out.target = static_cast<int>(static_cast<uint32_t>(packed));
  return true;
}

}  // namespace coz
