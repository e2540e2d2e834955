#include "conventional.h"

namespace coz {

void StackTable::add(const StackFrame* frames, size_t depth) {
  if (depth == 0) return;
  if (depth > max_frames) depth = max_frames;
  uint64_t key = 1469598103934665603ull;  // FNV-1a over the frame addresses
  for (size_t i = 0; i < depth; ++i) {
    key ^= frames[i];
    key *= 1099511628211ull;
  }
  key ^= depth;
  if (key == 0) key = 1;
  for (size_t probe = 0; probe < max_probes; ++probe) {
    Slot& slot = slots_[(key + probe) % slot_count];
    uint64_t seen = slot.key.load(std::memory_order_acquire);
    if (seen == 0) {
      if (slot.key.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) {
        slot.depth = static_cast<uint32_t>(depth);
        for (size_t i = 0; i < depth; ++i) slot.frames[i] = frames[i];
        slot.ready.store(true, std::memory_order_release);
        slot.count.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    if (seen == key) {
      if (!slot.ready.load(std::memory_order_acquire)) break;  // being filled right now
      slot.count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::pair<std::string, uint64_t>> StackTable::take_new(
    const std::function<std::string(uint64_t)>& function_name) {
  std::vector<std::pair<std::string, uint64_t>> out;
  // Two takers reading `reported` before either wrote it would both take
  // the same samples (and one could set it back below the other's).
  FutexGuard guard(take_lock_);
  for (Slot& slot : slots_) {
    if (!slot.ready.load(std::memory_order_acquire)) continue;
    uint64_t count = slot.count.load(std::memory_order_relaxed);
    if (count == slot.reported) continue;
    std::string folded;
    for (size_t i = slot.depth; i-- > 0;) {  // outermost first
      if (!folded.empty()) folded += ';';
      StackFrame f = slot.frames[i];
      if (SourceLine* line = line_of(f)) folded += line->name();
      else folded += function_name(f / 2);
    }
    out.emplace_back(std::move(folded), count - slot.reported);
    slot.reported = count;
  }
  return out;
}

const char* wait_kind_name(WaitKind kind) {
  switch (kind) {
    case WaitKind::Mutex: return "mutex";
    case WaitKind::Cond: return "cond";
    case WaitKind::RwLock: return "rwlock";
    case WaitKind::Barrier: return "barrier";
    case WaitKind::Join: return "join";
    case WaitKind::Sem: return "sem";
    case WaitKind::Futex: return "futex";
    case WaitKind::Sleep: return "sleep";
    case WaitKind::Signal: return "signal";
    case WaitKind::Io: return "io";
    case WaitKind::Poll: return "poll";
    case WaitKind::Child: return "child";
    case WaitKind::FileLock: return "flock";
  }
  return "?";
}

void BlockedTable::add(SourceLine* site, WaitKind kind, uint64_t ns) {
  FutexGuard guard(lock_);
  Totals& t = totals_[{site, static_cast<int>(kind)}];
  t.ns += ns;
  t.count += 1;
}

std::vector<BlockedTable::Entry> BlockedTable::take_new() {
  std::map<std::pair<SourceLine*, int>, Totals> taken;
  {
    FutexGuard guard(lock_);
    taken.swap(totals_);
  }
  std::vector<Entry> out;
  for (const auto& [key, totals] : taken) {
    out.push_back({key.first ? key.first->name() : "?", static_cast<WaitKind>(key.second), totals.ns, totals.count});
  }
  return out;
}

}  // namespace coz
