#include "unwinder.h"

#include <ucontext.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace coz {

// ---------------------------------------------------------------------------
// Building and publishing the index (start-up, dlopen): may allocate.
// ---------------------------------------------------------------------------

void FrameTables::add(FrameTable table) { tables_.push_back(std::move(table)); }

void FrameTables::publish() {
  auto index = std::make_unique<Index>();
  // Newest first, so that a table added later claims its range from an
  // older one it overlaps (the older library was unloaded).
  std::vector<const FrameTable*> candidates;
  for (auto it = tables_.rbegin(); it != tables_.rend(); ++it) {
    if (it->end > it->base) candidates.push_back(&*it);
  }
  for (const FrameTable* t : candidates) {
    bool overlaps = false;
    for (const FrameTable* kept : index->by_base) overlaps = overlaps || (t->base < kept->end && kept->base < t->end);
    if (!overlaps) index->by_base.push_back(t);
  }
  std::sort(index->by_base.begin(), index->by_base.end(),
            [](const FrameTable* a, const FrameTable* b) { return a->base < b->base; });
  published_.store(index.get(), std::memory_order_release);
  indexes_.push_back(std::move(index));
}

// ---------------------------------------------------------------------------
// Signal context: everything below runs on the sampling path.
// ---------------------------------------------------------------------------

const FrameTable* FrameTables::find(uint64_t pc) const noexcept {
  const Index* index = published_.load(std::memory_order_acquire);
  if (!index || index->by_base.empty()) return nullptr;
  const auto& v = index->by_base;
  // The last table whose base is <= pc.
  size_t lo = 0, hi = v.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid]->base <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return nullptr;
  const FrameTable* t = v[lo - 1];
  return pc < t->end ? t : nullptr;
}

bool StackMemory::read(uint64_t address, uint64_t& value) const noexcept {
  if (address < low_ || address > high_ || high_ - address < sizeof value) return false;
  if (bytes_) {
    std::memcpy(&value, bytes_ + (address - low_), sizeof value);
  } else {
    std::memcpy(&value, reinterpret_cast<const void*>(address), sizeof value);
  }
  return true;
}

const char* unwind_stop_name(UnwindStop stop) {
  switch (stop) {
    case UnwindStop::Outermost: return "complete";
    case UnwindStop::NoCfi: return "no-cfi";
    case UnwindStop::Unreadable: return "unreadable";
    case UnwindStop::BadFrame: return "bad-frame";
    case UnwindStop::DepthLimit: return "depth";
  }
  return "?";
}

namespace {

/// Where the kernel's signal frame keeps the interrupted registers: the
/// trampoline (glibc's __restore_rt) runs with rsp at the ucontext_t.
constexpr uint64_t ucontext_reg(int reg) {
  return offsetof(ucontext_t, uc_mcontext) + offsetof(mcontext_t, gregs) + sizeof(greg_t) * static_cast<uint64_t>(reg);
}

/// The return address of a leaf system-call stub interrupted at its
/// `syscall`: on top of the stack, and accepted only if it lands in code
/// with call-frame information (anything else, such as a new thread's empty
/// stack or a signal frame, ends the walk as before).
bool syscall_stub_return(const FrameTables& tables, uint64_t sp, const StackMemory& stack, uint64_t& ip) noexcept {
  uint64_t return_address;
  if (!stack.read(sp, return_address) || return_address == 0) return false;
  const FrameTable* table = tables.find(return_address - 1);
  if (!table || !table->find(return_address - 1)) return false;
  ip = return_address;
  return true;
}

}  // namespace

size_t unwind(const FrameTables& tables, const UnwindRegisters& regs, const StackMemory& stack, UnwindFrame* frames,
              size_t max_frames, UnwindStop& stop) noexcept {
  uint64_t ip = regs.ip, sp = regs.sp, bp = regs.bp;
  bool exact_ip = true;  // ip is where the thread was interrupted, not a return address
  size_t n = 0;
  while (true) {
    if (n == max_frames) {
      stop = UnwindStop::DepthLimit;
      return n;
    }
    uint64_t pc = exact_ip ? ip : ip - 1;
    const FrameTable* table = tables.find(pc);
    frames[n++] = {pc, table};
    const FrameRow* row = table ? table->find(pc) : nullptr;
    if (!row && n == 1 && regs.after_syscall && syscall_stub_return(tables, sp, stack, ip)) {
      sp += 8;
      exact_ip = false;
      continue;
    }
    if (!row) {
      stop = UnwindStop::NoCfi;
      return n;
    }
    if (row->flags & FrameRow::kOutermost) {
      stop = UnwindStop::Outermost;
      return n;
    }

    if (row->rule == CfaRule::Signal) {
      // The next frame is the interrupted code, with all its registers in
      // the ucontext; its IP is exact (no call instruction before it).
      uint64_t next_ip, next_sp, next_bp;
      if (!stack.read(sp + ucontext_reg(REG_RIP), next_ip) || !stack.read(sp + ucontext_reg(REG_RSP), next_sp) ||
          !stack.read(sp + ucontext_reg(REG_RBP), next_bp)) {
        stop = UnwindStop::Unreadable;
        return n;
      }
      ip = next_ip, sp = next_sp, bp = next_bp;
      exact_ip = true;
      if (ip == 0) {
        stop = UnwindStop::Outermost;
        return n;
      }
      continue;
    }

    uint64_t cfa = 0;
    switch (row->rule) {
      case CfaRule::Sp: cfa = sp + static_cast<int64_t>(row->cfa_offset); break;
      case CfaRule::Bp: cfa = bp + static_cast<int64_t>(row->cfa_offset); break;
      case CfaRule::BpDeref:
        if (!stack.read(bp + static_cast<int64_t>(row->cfa_offset), cfa)) {
          stop = UnwindStop::Unreadable;
          return n;
        }
        break;
      case CfaRule::Plt: cfa = sp + 8 + ((ip & 15) >= static_cast<uint64_t>(row->cfa_offset) ? 8 : 0); break;
      case CfaRule::None:
      case CfaRule::Signal: stop = UnwindStop::NoCfi; return n;
    }
    // A caller's frame lies above its callee's: anything else is corrupt
    // CFI or a corrupt stack, and would make the walk loop or wander.
    if (cfa <= sp) {
      stop = UnwindStop::BadFrame;
      return n;
    }
    uint64_t return_address;
    if (!stack.read(cfa - 8, return_address)) {
      stop = UnwindStop::Unreadable;
      return n;
    }
    // GCC's stack realignment saves rbp where rbp points, below the aligned
    // frame, so those rows give its slot relative to rbp (frame_table.h).
    // A slot below sp was popped already: GCC's epilogues say where rbp was
    // saved until the function returns, also after the `pop %rbp`, when rbp
    // holds the caller's value again (1% of lib_malloc's walks ended there).
    uint64_t bp_slot = row->rule == CfaRule::BpDeref ? bp + row->bp_offset : cfa + row->bp_offset;
    if (row->bp_offset != FrameRow::kBpUnchanged && bp_slot >= sp && !stack.read(bp_slot, bp)) {
      stop = UnwindStop::Unreadable;
      return n;
    }
    if (return_address == 0) {  // some outermost frames end the chain with a null return address
      stop = UnwindStop::Outermost;
      return n;
    }
    ip = return_address;
    sp = cfa;
    exact_ip = false;
  }
}

}  // namespace coz
