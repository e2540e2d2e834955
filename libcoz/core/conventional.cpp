#include "conventional.h"

namespace coz {

namespace {
/// A 64-bit mix (splitmix64's finalizer): keys that differ in a few bits
/// land far apart.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

void StackTable::add(const StackFrame* frames, size_t depth, uint64_t count) {
  if (depth == 0 || count == 0) return;
  if (depth > max_frames) depth = max_frames;
  uint64_t key = 1469598103934665603ull;  // FNV-1a over the frame addresses
  for (size_t i = 0; i < depth; ++i) {
    key ^= frames[i];
    key *= 1099511628211ull;
  }
  key ^= depth;
  if (key == 0) key = 1;
  // Not the key itself: frame addresses are multiples of 8, so the key's
  // low bits depend on the depth alone, and deep stacks crowded into an
  // eighth of the slots (2,870 of 9,575 samples kept, 2,168 stacks stored).
  const uint64_t home = mix(key);
  for (size_t probe = 0; probe < max_probes; ++probe) {
    const size_t index = (home + probe) % slot_count;
    Slot& slot = slots_[index];
    uint64_t seen = slot.key.load(std::memory_order_acquire);
    if (seen == 0) {
      if (slot.key.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) {
        slot.depth = static_cast<uint32_t>(depth);
        for (size_t i = 0; i < depth; ++i) slot.frames[i] = frames[i];
        slot.ready.store(true, std::memory_order_release);
        slot.count.fetch_add(count, std::memory_order_relaxed);
        claimed_.add(index);
        return;
      }
    }
    if (seen == key) {
      if (!slot.ready.load(std::memory_order_acquire)) break;  // being filled right now
      slot.count.fetch_add(count, std::memory_order_relaxed);
      return;
    }
  }
  dropped_.fetch_add(count, std::memory_order_relaxed);
}

std::vector<std::pair<std::string, uint64_t>> StackTable::take_new(
    const std::function<std::string(uint64_t)>& function_name) {
  std::vector<std::pair<std::string, uint64_t>> out;
  // Two takers reading `reported` before either wrote it would both take
  // the same samples (and one could set it back below the other's).
  FutexGuard guard(take_lock_);
  claimed_.for_each([&](size_t index) {
    Slot& slot = slots_[index];
    uint64_t count = slot.count.load(std::memory_order_relaxed);
    if (count == slot.reported) return;
    std::string folded;
    for (size_t i = slot.depth; i-- > 0;) {  // outermost first
      if (!folded.empty()) folded += ';';
      StackFrame f = slot.frames[i];
      if (SourceLine* line = line_of(f)) folded += line->name();
      else folded += function_name(f / 2);
    }
    out.emplace_back(std::move(folded), count - slot.reported);
    slot.reported = count;
  });
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

void BlockedTable::add(SourceLine* site, WaitKind kind, uint64_t ns, uint64_t count) {
  // User addresses are below 2^47: shifted by 4 bits, the kind fits beside the site.
  static_assert(static_cast<int>(WaitKind::FileLock) < 16, "a wait kind takes 4 bits of the key");
  const uint64_t key = ((reinterpret_cast<uintptr_t>(site) << 4) | static_cast<uint64_t>(kind)) + 1;
  const uint64_t home = mix(key);
  for (size_t probe = 0; probe < max_probes; ++probe) {
    const size_t index = (home + probe) % slot_count;
    Slot& slot = slots_[index];
    uint64_t seen = slot.key.load(std::memory_order_acquire);
    if (seen == 0 && slot.key.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) {
      seen = key;
      claimed_.add(index);
    }
    if (seen == key) {
      slot.ns.fetch_add(ns, std::memory_order_relaxed);
      slot.count.fetch_add(count, std::memory_order_relaxed);
      return;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<BlockedTable::Entry> BlockedTable::take_new() {
  std::vector<Entry> out;
  FutexGuard guard(take_lock_);
  claimed_.for_each([&](size_t index) {
    Slot& slot = slots_[index];
    const uint64_t key = slot.key.load(std::memory_order_acquire);
    // A wait being added may be in `count` and not yet in `ns` (or the other
    // way round): the next call takes the rest.
    const uint64_t count = slot.count.load(std::memory_order_relaxed);
    const uint64_t ns = slot.ns.load(std::memory_order_relaxed);
    if (count == slot.reported_count && ns == slot.reported_ns) return;
    const auto* site = reinterpret_cast<SourceLine*>((key - 1) >> 4);
    out.push_back({site ? site->name() : "?", static_cast<WaitKind>((key - 1) & 15), ns - slot.reported_ns,
                   count - slot.reported_count});
    slot.reported_ns = ns;
    slot.reported_count = count;
  });
  return out;
}

}  // namespace coz
