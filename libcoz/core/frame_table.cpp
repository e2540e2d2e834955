// Call-frame information compiled into FrameTable rows.
//
// A reader of the CIEs and FDEs of `.eh_frame` (LSB 5.0, "Exception
// Frames"; reached in memory through `.eh_frame_hdr`'s search table, or read
// in order from a file) and `.debug_frame` (DWARF 5, section 6.4), and an
// interpreter of their CFA programs that tracks only the rules an x86-64
// profiling unwinder follows: the CFA, rbp, rsp and the return address. The
// other registers' rules are parsed past and dropped.
//
// Building is start-up code (it allocates freely); only FrameTable::find and
// FrameTable::function_start, at the end of this file, run in signal context.
#include "frame_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>

#include "dwarf_reader.h"

namespace coz {
namespace {

using dwarf_reader::Cursor;

// DWARF register numbers of x86-64 (System V psABI, "DWARF Register Number Mapping").
constexpr uint64_t reg_rbp = 6;
constexpr uint64_t reg_rsp = 7;
constexpr uint64_t reg_ra = 16;  // the return address column

// Call frame instructions (DWARF 5, 6.4.2) and the GNU ones GCC emits.
namespace cfa {
constexpr uint8_t advance_loc = 0x40;  // these three keep their operand in the low 6 bits
constexpr uint8_t offset = 0x80;
constexpr uint8_t restore = 0xc0;
constexpr uint8_t nop = 0x00;
constexpr uint8_t set_loc = 0x01;
constexpr uint8_t advance_loc1 = 0x02;
constexpr uint8_t advance_loc2 = 0x03;
constexpr uint8_t advance_loc4 = 0x04;
constexpr uint8_t offset_extended = 0x05;
constexpr uint8_t restore_extended = 0x06;
constexpr uint8_t undefined = 0x07;
constexpr uint8_t same_value = 0x08;
constexpr uint8_t register_ = 0x09;
constexpr uint8_t remember_state = 0x0a;
constexpr uint8_t restore_state = 0x0b;
constexpr uint8_t def_cfa = 0x0c;
constexpr uint8_t def_cfa_register = 0x0d;
constexpr uint8_t def_cfa_offset = 0x0e;
constexpr uint8_t def_cfa_expression = 0x0f;
constexpr uint8_t expression = 0x10;
constexpr uint8_t offset_extended_sf = 0x11;
constexpr uint8_t def_cfa_sf = 0x12;
constexpr uint8_t def_cfa_offset_sf = 0x13;
constexpr uint8_t val_offset = 0x14;
constexpr uint8_t val_offset_sf = 0x15;
constexpr uint8_t val_expression = 0x16;
constexpr uint8_t gnu_args_size = 0x2e;
constexpr uint8_t gnu_negative_offset_extended = 0x2f;
}  // namespace cfa

// The DWARF expression operations of the two CFA expressions we recognize.
namespace op {
constexpr uint8_t deref = 0x06;
constexpr uint8_t and_ = 0x1a;
constexpr uint8_t plus = 0x22;
constexpr uint8_t shl = 0x24;
constexpr uint8_t ge = 0x2a;
constexpr uint8_t lit0 = 0x30;  // lit0..lit31
constexpr uint8_t breg0 = 0x70;  // breg0..breg31
}  // namespace op

// Pointer encodings (DW_EH_PE_*, LSB 5.0 "DWARF Extensions"): a value
// format in the low nibble, how it applies in bits 4-6, indirection in bit 7.
namespace pe {
constexpr uint8_t absptr = 0x00;
constexpr uint8_t uleb128 = 0x01;
constexpr uint8_t udata2 = 0x02;
constexpr uint8_t udata4 = 0x03;
constexpr uint8_t udata8 = 0x04;
constexpr uint8_t sleb128 = 0x09;
constexpr uint8_t sdata2 = 0x0a;
constexpr uint8_t sdata4 = 0x0b;
constexpr uint8_t sdata8 = 0x0c;
constexpr uint8_t format_mask = 0x0f;
constexpr uint8_t pcrel = 0x10;
constexpr uint8_t datarel = 0x30;
constexpr uint8_t application_mask = 0x70;
constexpr uint8_t indirect = 0x80;
constexpr uint8_t omit = 0xff;
}  // namespace pe

// GCC nests remember_state at most a level or two (one per epilogue in flight).
constexpr int max_remembered_states = 16;
// No FDE or CIE in memory is anywhere near this long: a larger length is
// corrupt data, and following it would walk off the mapping.
constexpr uint64_t max_entry_length = uint64_t{1} << 30;

/// How the caller's value of a register is found (DWARF 5, 6.4.1), reduced
/// to what FrameRow can say.
struct RegisterRule {
  enum Kind : uint8_t {
    Unset,            // no rule yet: the register keeps its value (what unwinders assume on x86-64)
    SameValue,
    Undefined,
    Offset,           // saved at CFA + value
    ValOffset,        // is CFA + value
    Register,         // in another register
    RbpPlus,          // saved at rbp + value (DW_OP_breg6 value): GCC's realigned frames
    OtherExpression,  // any other DWARF expression
  };
  Kind kind = Unset;
  int64_t value = 0;
};

struct CfaState {
  enum Kind : uint8_t { Unset, RegisterOffset, Plt, BpDeref, OtherExpression };
  Kind kind = Unset;
  uint64_t reg = 0;
  int64_t offset = 0;      // RegisterOffset; kept across an expression, as readelf and libgcc do
  int64_t expression = 0;  // Plt: the threshold N; BpDeref: rbp's offset
};

/// The rules one row is made from; everything DW_CFA_remember_state saves.
struct State {
  CfaState cfa;
  RegisterRule rbp, rsp, ra;

  RegisterRule* tracked(uint64_t reg) { return const_cast<RegisterRule*>(std::as_const(*this).tracked(reg)); }
  const RegisterRule* tracked(uint64_t reg) const {
    switch (reg) {
      case reg_rbp: return &rbp;
      case reg_rsp: return &rsp;
      case reg_ra: return &ra;
      default: return nullptr;
    }
  }
};

template <typename T>
bool fits(int64_t v) {
  return v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
}

/// A factored offset (operand times the CIE's alignment factor); wraps on
/// corrupt operands instead of overflowing.
int64_t factored(int64_t v, int64_t factor) {
  return static_cast<int64_t>(static_cast<uint64_t>(v) * static_cast<uint64_t>(factor));
}

/// The linker's CFA for PLT entries (ld's elf_x86_64_eh_frame_plt):
/// rsp + 8 + ((rip & 15) >= N ? 8 : 0), pushed before the jump to PLT0 or not.
/// DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
bool plt_expression(Cursor e, int64_t& threshold) {
  if (e.u8() != op::breg0 + reg_rsp || e.sleb() != 8 || e.u8() != op::breg0 + reg_ra || e.sleb() != 0 ||
      e.u8() != op::lit0 + 15 || e.u8() != op::and_) {
    return false;
  }
  uint8_t lit = e.u8();
  if (lit < op::lit0 || lit > op::lit0 + 31) return false;
  threshold = lit - op::lit0;
  return e.u8() == op::ge && e.u8() == op::lit0 + 3 && e.u8() == op::shl && e.u8() == op::plus && e.ok() &&
         e.at_end();
}

/// DW_OP_breg6 (rbp) N, then DW_OP_deref if `deref`: an address (or the
/// value loaded from it) at a fixed offset from rbp.
bool rbp_expression(Cursor e, bool deref, int64_t& offset) {
  if (e.u8() != op::breg0 + reg_rbp) return false;
  offset = e.sleb();
  if (deref && e.u8() != op::deref) return false;
  return e.ok() && e.at_end();
}

/// The row a state gives: None when some rule is beyond what FrameRow says.
FrameRow make_row(const State& s, bool signal_frame) {
  FrameRow none{0, 0, 0, CfaRule::None, 0};
  if (signal_frame) return {0, 0, FrameRow::kBpUnchanged, CfaRule::Signal, 0};
  FrameRow row{0, 0, FrameRow::kBpUnchanged, CfaRule::None, 0};
  switch (s.cfa.kind) {
    case CfaState::RegisterOffset:
      if (s.cfa.reg == reg_rsp) {
        row.rule = CfaRule::Sp;
      } else if (s.cfa.reg == reg_rbp) {
        row.rule = CfaRule::Bp;
      } else {
        return none;  // r10 in GCC's realigning prologue, rdi/rdx in setcontext and longjmp
      }
      if (!fits<int32_t>(s.cfa.offset)) return none;
      row.cfa_offset = static_cast<int32_t>(s.cfa.offset);
      break;
    case CfaState::Plt:
      row.rule = CfaRule::Plt;
      row.cfa_offset = static_cast<int32_t>(s.cfa.expression);
      break;
    case CfaState::BpDeref:
      if (!fits<int32_t>(s.cfa.expression)) return none;
      row.rule = CfaRule::BpDeref;
      row.cfa_offset = static_cast<int32_t>(s.cfa.expression);
      break;
    case CfaState::Unset:
    case CfaState::OtherExpression: return none;
  }
  switch (s.ra.kind) {
    case RegisterRule::Offset:
      if (s.ra.value != -8) return none;
      break;
    case RegisterRule::Undefined: row.flags = FrameRow::kOutermost; break;
    default: return none;
  }
  // The unwinder takes the CFA for the caller's rsp; a frame that says
  // otherwise (a stack switch) cannot be followed with this row.
  switch (s.rsp.kind) {
    case RegisterRule::Unset:
    case RegisterRule::SameValue:
    case RegisterRule::Undefined: break;
    case RegisterRule::ValOffset:
      if (s.rsp.value != 0) return none;
      break;
    default: return none;
  }
  switch (s.rbp.kind) {
    case RegisterRule::Unset:
    case RegisterRule::SameValue:
    case RegisterRule::Undefined: break;  // kBpUnchanged
    case RegisterRule::Offset:
      // CFA-relative: meaningless in a BpDeref row, whose bp_offset is rbp-relative.
      if (row.rule == CfaRule::BpDeref || !fits<int16_t>(s.rbp.value) || s.rbp.value == FrameRow::kBpUnchanged) {
        return none;
      }
      row.bp_offset = static_cast<int16_t>(s.rbp.value);
      break;
    case RegisterRule::RbpPlus:
      if (row.rule != CfaRule::BpDeref || !fits<int16_t>(s.rbp.value) || s.rbp.value == FrameRow::kBpUnchanged) {
        return none;
      }
      row.bp_offset = static_cast<int16_t>(s.rbp.value);
      break;
    default: return none;
  }
  return row;
}

bool same_rule(const FrameRow& a, const FrameRow& b) {
  return a.rule == b.rule && a.cfa_offset == b.cfa_offset && a.bp_offset == b.bp_offset && a.flags == b.flags;
}

/// The bytes a value of this pointer format takes (LEB128: at most 10).
size_t encoded_size(uint8_t enc) {
  if (enc == pe::omit) return 0;
  switch (enc & pe::format_mask) {
    case pe::absptr:
    case pe::udata8:
    case pe::sdata8: return 8;
    case pe::udata2:
    case pe::sdata2: return 2;
    case pe::udata4:
    case pe::sdata4: return 4;
    default: return 10;
  }
}

/// Moves past a pointer of this encoding without applying it.
void skip_encoded(Cursor& c, uint8_t enc) {
  switch (enc & pe::format_mask) {
    case pe::uleb128: c.uleb(); break;
    case pe::sleb128: c.sleb(); break;
    case pe::absptr:
    case pe::udata2:
    case pe::udata4:
    case pe::udata8:
    case pe::sdata2:
    case pe::sdata4:
    case pe::sdata8: c.skip(encoded_size(enc)); break;
    default: c.fail();
  }
}

bool fixed_size_encoding(uint8_t enc) {
  uint8_t format = enc & pe::format_mask;
  return enc != pe::omit && format != pe::uleb128 && format != pe::sleb128;
}

}  // namespace

// ---------------------------------------------------------------------------
// Reading one CFI source (start-up, dlopen): may allocate.
// ---------------------------------------------------------------------------

class FrameTableBuilder::Parser {
 public:
  enum class Format { EhFrame, DebugFrame };

  /// `section` bounds every read (a file's section); empty: the CFI of a
  /// mapped object, bounded only by the lengths in it. `address_delta` turns
  /// a pointer into the data into the address pc-relative pointers are
  /// relative to; `data_base` is for data-relative ones (0: none allowed).
  Parser(FrameTableBuilder& out, FrameTableStats& stats, Format format, std::span<const uint8_t> section,
         uint64_t address_delta, uint64_t data_base, uint64_t load_bias)
      : out_(out),
        stats_(stats),
        format_(format),
        section_(section),
        address_delta_(address_delta),
        data_base_(data_base),
        load_bias_(load_bias) {}

  /// Every entry from `p` on, until the zero terminator or the section's end.
  void parse_sequence(const uint8_t* p) {
    const uint8_t* end = section_.data() + section_.size();
    while (section_.empty() || p < end) {
      Entry e;
      if (!read_entry(p, e)) return;
      if (e.length == 0) return;  // the terminator (crtend.o's, for .eh_frame)
      const uint8_t* id_field = e.body.pos();
      uint64_t id = e.body.offset_of_size(e.offset_size);
      if (!e.body.ok()) return malformed("truncated entry", p);
      if (is_cie_id(id, e.offset_size)) {
        if (!cie_at(p)) return;
      } else if (!parse_fde(e, id_field, id)) {
        return;
      }
      p = e.next;
    }
  }

  /// The FDE at `p` (from .eh_frame_hdr's table). False: stop this source.
  bool parse_fde_at(const uint8_t* p) {
    Entry e;
    if (!read_entry(p, e)) return false;
    const uint8_t* id_field = e.body.pos();
    uint64_t id = e.body.offset_of_size(e.offset_size);
    if (e.length == 0 || !e.body.ok() || is_cie_id(id, e.offset_size)) {
      return malformed("search table entry is not an FDE", p), false;
    }
    return parse_fde(e, id_field, id);
  }

  uint64_t address_of(const uint8_t* p) const { return reinterpret_cast<uintptr_t>(p) + address_delta_; }

  /// Whether an FDE's pointers can have this encoding: absolute or
  /// pc-relative (data-relative means GOT-relative there, on i386 only).
  static bool follows(uint8_t enc) {
    if (enc & pe::indirect || enc == pe::omit) return false;
    switch (enc & pe::format_mask) {
      case pe::absptr:
      case pe::uleb128:
      case pe::udata2:
      case pe::udata4:
      case pe::udata8:
      case pe::sleb128:
      case pe::sdata2:
      case pe::sdata4:
      case pe::sdata8: break;
      default: return false;
    }
    uint8_t application = enc & pe::application_mask;
    return application == 0 || application == pe::pcrel;
  }

  /// A DW_EH_PE-encoded pointer. False on an encoding we do not follow
  /// (textrel, funcrel, aligned; datarel without a base) or truncated data.
  bool read_encoded(Cursor& c, uint8_t enc, uint64_t& out) const {
    const uint8_t* field = c.pos();
    uint64_t v = 0;
    switch (enc & pe::format_mask) {
      case pe::absptr:
      case pe::udata8: v = c.u64(); break;
      case pe::uleb128: v = c.uleb(); break;
      case pe::udata2: v = c.u16(); break;
      case pe::udata4: v = c.u32(); break;
      case pe::sleb128: v = static_cast<uint64_t>(c.sleb()); break;
      case pe::sdata2: v = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(c.u16()))); break;
      case pe::sdata4: v = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(c.u32()))); break;
      case pe::sdata8: v = c.u64(); break;
      default: return false;
    }
    if (!c.ok()) return false;
    switch (enc & pe::application_mask) {
      case 0: break;
      case pe::pcrel: v += address_of(field); break;
      case pe::datarel:
        if (!data_base_) return false;
        v += data_base_;
        break;
      default: return false;
    }
    out = v;
    return true;
  }

 private:
  struct Entry {
    Cursor body;  // after the length, to the entry's end
    uint64_t length = 0;
    unsigned offset_size = 4;
    const uint8_t* next = nullptr;
  };

  struct Cie {
    uint64_t code_align = 1;
    int64_t data_align = 1;
    uint8_t fde_encoding = pe::absptr;
    uint8_t address_size = 8;  // .debug_frame: of initial_location, address_range, set_loc
    uint8_t segment_size = 0;
    bool augmentation_data = false;  // 'z': FDEs carry augmentation data too
    bool signal_frame = false;       // 'S'
    bool supported = true;           // false: its FDEs get a single None row
    State initial;                   // after the initial instructions
  };

  /// Where an FDE's program is: its addresses and the rows made so far.
  struct FdeRun {
    uint64_t begin;  // as encoded (before the load bias), for set_loc
    uint64_t range;
    uint64_t loc = 0;  // offset from begin of the row being built
    uint32_t first_row;
    bool unsupported = false;
  };

  enum class Result { Ok, Unsupported, Malformed };

  void malformed(std::string_view what, const uint8_t* p) {
    if (!stats_.error.empty()) return;
    if (section_.empty()) {
      stats_.error = fmt::format("{} at {:#x}", what, reinterpret_cast<uintptr_t>(p));
    } else {
      stats_.error = fmt::format("{} at offset {:#x}", what, static_cast<size_t>(p - section_.data()));
    }
  }

  /// How many of `want` bytes at `p` may be read.
  uint64_t available(const uint8_t* p, uint64_t want) const {
    if (section_.empty()) return want;
    const uint8_t* end = section_.data() + section_.size();
    if (p < section_.data() || p >= end) return 0;
    return std::min<uint64_t>(want, static_cast<uint64_t>(end - p));
  }

  bool read_entry(const uint8_t* p, Entry& e) {
    Cursor head(p, p + available(p, 4));
    e.length = head.u32();
    if (!head.ok()) return malformed("truncated entry", p), false;
    size_t header = 4;
    e.offset_size = 4;
    if (e.length == 0xffffffff) {  // 64-bit DWARF: the length follows
      Cursor ext(p + 4, p + 4 + available(p + 4, 8));
      e.length = ext.u64();
      if (!ext.ok()) return malformed("truncated entry", p), false;
      header = 12;
      e.offset_size = 8;
    } else if (e.length >= 0xfffffff0) {
      return malformed("reserved entry length", p), false;
    }
    if (e.length > max_entry_length || available(p + header, e.length) < e.length) {
      return malformed("entry longer than its section", p), false;
    }
    e.body = Cursor(p + header, p + header + e.length);
    e.next = p + header + e.length;
    return true;
  }

  // The CIE id (and an FDE's CIE pointer) is offset_size bytes in both
  // sections, as readelf reads it; LLVM's libunwind reads 4 in a 64-bit
  // .eh_frame entry, which no toolchain emits.
  bool is_cie_id(uint64_t id, unsigned offset_size) const {
    if (format_ == Format::EhFrame) return id == 0;
    return id == (offset_size == 8 ? ~uint64_t{0} : uint64_t{0xffffffff});
  }

  /// The CIE at `p`, parsed once per source. Null: malformed (error set).
  const Cie* cie_at(const uint8_t* p) {
    if (p == last_cie_address_) return &cies_[last_cie_];
    auto [it, inserted] = cie_index_.try_emplace(p, cies_.size());
    if (inserted) {
      cies_.emplace_back();
      if (!parse_cie(p, cies_.back())) return nullptr;
      ++stats_.cies;
    }
    last_cie_address_ = p;
    last_cie_ = it->second;
    return &cies_[last_cie_];
  }

  bool parse_cie(const uint8_t* p, Cie& cie) {
    Entry e;
    if (!read_entry(p, e)) return false;
    Cursor& c = e.body;
    uint64_t id = c.offset_of_size(e.offset_size);
    if (e.length == 0 || !c.ok() || !is_cie_id(id, e.offset_size)) {
      return malformed("CIE pointer to something else", p), false;
    }
    uint8_t version = c.u8();
    bool known_version = format_ == Format::EhFrame ? version == 1 || version == 3
                                                    : version == 1 || version == 3 || version == 4;
    if (!known_version) return malformed(fmt::format("unsupported CIE version {}", version), p), false;
    std::string_view augmentation = c.cstr();
    if (version >= 4) {
      cie.address_size = c.u8();
      cie.segment_size = c.u8();
      if (cie.address_size == 0 || cie.address_size > 8 || cie.segment_size > 8) {
        return malformed("unsupported CIE address size", p), false;
      }
    }
    cie.code_align = c.uleb();
    cie.data_align = c.sleb();
    uint64_t ra_column = version == 1 ? c.u8() : c.uleb();
    if (!augmentation.empty() && augmentation[0] == 'z') {
      cie.augmentation_data = true;
      Cursor data = c.sub(c.uleb());
      for (char letter : augmentation.substr(1)) {
        if (letter == 'R') {
          cie.fde_encoding = data.u8();
        } else if (letter == 'L') {
          data.u8();  // the LSDA pointer's encoding; FDEs' augmentation data is skipped by length
        } else if (letter == 'P') {
          skip_encoded(data, data.u8());  // the personality routine (indirect or not)
        } else if (letter == 'S') {
          cie.signal_frame = true;
        } else {
          break;  // 'B' and the like: the length covers whatever they add
        }
      }
      if (!data.ok()) return malformed("truncated CIE augmentation data", p), false;
    } else if (!augmentation.empty()) {
      cie.supported = false;  // GCC 2's "eh" and other pre-'z' strings: their layout is unknown
    }
    if (!c.ok()) return malformed("truncated CIE", p), false;
    if (ra_column != reg_ra || cie.code_align == 0) cie.supported = false;
    if (cie.supported) {
      Result r = run(c, cie, cie.initial, nullptr);
      if (r == Result::Malformed) return malformed("truncated CIE instructions", p), false;
      if (r == Result::Unsupported) cie.supported = false;
    }
    return true;
  }

  bool parse_fde(Entry& e, const uint8_t* id_field, uint64_t id) {
    const uint8_t* start = id_field - (e.offset_size == 8 ? 12 : 4);
    const uint8_t* cie_address;
    if (format_ == Format::EhFrame) {  // backwards from the field itself
      if (!section_.empty() && id > static_cast<uint64_t>(id_field - section_.data())) {
        return malformed("CIE pointer outside the section", start), false;
      }
      cie_address = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(id_field) - id);
    } else {  // an offset in the section
      if (id >= section_.size()) return malformed("CIE pointer outside the section", start), false;
      cie_address = section_.data() + id;
    }
    const Cie* cie = cie_at(cie_address);
    if (!cie) return false;
    ++stats_.fdes;

    Cursor& c = e.body;
    uint64_t begin = 0, range = 0;
    if (format_ == Format::EhFrame) {
      if (!follows(cie->fde_encoding)) {  // textrel, funcrel, aligned, indirect: no x86-64 toolchain emits them
        return malformed(fmt::format("unsupported FDE pointer encoding {:#x}", cie->fde_encoding), start), false;
      }
      read_encoded(c, cie->fde_encoding, begin);
      read_encoded(c, cie->fde_encoding & pe::format_mask, range);
    } else {
      c.skip(cie->segment_size);
      begin = c.unsigned_of_size(cie->address_size);
      range = c.unsigned_of_size(cie->address_size);
    }
    if (cie->augmentation_data) c.skip(c.uleb());
    if (!c.ok()) return malformed("truncated FDE", start), false;
    // Empty, or a function the linker discarded (its relocation resolved to 0).
    if (range == 0 || begin == 0) return true;
    if (range > std::numeric_limits<uint32_t>::max() || begin + range < begin) {
      ++stats_.unsupported_fdes;
      return true;
    }

    FdeRun fde{begin, range, 0, static_cast<uint32_t>(out_.rows_.size())};
    Result r = Result::Unsupported;
    State state = cie->initial;
    if (cie->supported) r = run(c, *cie, state, &fde);
    if (r == Result::Malformed) return malformed("truncated FDE instructions", start), false;
    if (r == Result::Unsupported) {
      state.cfa.kind = CfaState::OtherExpression;  // None from where the program stopped making sense
    }
    if (fde.loc < fde.range) emit(fde, state, *cie);
    if (fde.unsupported) ++stats_.unsupported_fdes;
    uint64_t runtime_begin = begin + load_bias_;
    out_.fdes_.push_back({runtime_begin, runtime_begin + range, fde.first_row,
                          static_cast<uint32_t>(out_.rows_.size() - fde.first_row)});
    return true;
  }

  /// The row for [fde.loc, next advance), merged into the previous one if
  /// they say the same.
  void emit(FdeRun& fde, const State& state, const Cie& cie) {
    FrameRow row = make_row(state, cie.signal_frame);
    if (row.rule == CfaRule::None) fde.unsupported = true;
    row.start = static_cast<uint32_t>(fde.loc);
    std::vector<FrameRow>& rows = out_.rows_;
    if (rows.size() > fde.first_row && same_rule(rows.back(), row)) return;
    rows.push_back(row);
  }

  /// Runs a CFA program on `state`. With `fde`, each advance emits the row
  /// it ends, and the run stops once past the FDE's range; without, this is
  /// a CIE's initial instructions, where advancing makes no sense.
  Result run(Cursor program, const Cie& cie, State& state, FdeRun* fde) {
    int depth = 0;  // in remembered_

    // False: stop (past the FDE's end, or an advance in a CIE).
    auto advance = [&](uint64_t delta) {
      if (!fde) return false;
      uint64_t step;
      if (__builtin_mul_overflow(delta, cie.code_align, &step) || step >= fde->range - fde->loc) {
        emit(*fde, state, cie);  // the last row: the rest of the program is past the end
        fde->loc = fde->range;
        return false;
      }
      if (step) {
        emit(*fde, state, cie);
        fde->loc += step;
      }
      return true;
    };
    auto set_rule = [&](uint64_t reg, RegisterRule::Kind kind, int64_t value) {
      if (RegisterRule* rule = state.tracked(reg)) *rule = {kind, value};
    };
    auto restore = [&](uint64_t reg) {
      if (RegisterRule* rule = state.tracked(reg)) *rule = fde ? *cie.initial.tracked(reg) : RegisterRule{};
    };

    while (!program.at_end()) {
      uint8_t opcode = program.u8();
      uint8_t low = opcode & 0x3f;
      switch (opcode & 0xc0) {
        case cfa::advance_loc:
          if (!advance(low)) return fde ? Result::Ok : Result::Unsupported;
          continue;
        case cfa::offset:
          set_rule(low, RegisterRule::Offset, factored(static_cast<int64_t>(program.uleb()), cie.data_align));
          if (!program.ok()) return Result::Malformed;
          continue;
        case cfa::restore: restore(low); continue;
        default: break;
      }
      switch (opcode) {
        case cfa::nop: break;
        case cfa::set_loc: {
          if (!fde) return Result::Unsupported;
          uint64_t address = 0;
          if (format_ == Format::EhFrame) {
            if (!read_encoded(program, cie.fde_encoding, address)) {
              return program.ok() ? Result::Unsupported : Result::Malformed;
            }
          } else {
            address = program.unsigned_of_size(cie.address_size);
            if (!program.ok()) return Result::Malformed;
          }
          if (address < fde->begin + fde->loc) return Result::Unsupported;  // backwards
          if (!advance(address - fde->begin - fde->loc)) return Result::Ok;
          break;
        }
        case cfa::advance_loc1:
        case cfa::advance_loc2:
        case cfa::advance_loc4: {
          uint64_t delta = opcode == cfa::advance_loc1   ? program.u8()
                           : opcode == cfa::advance_loc2 ? program.u16()
                                                         : program.u32();
          if (!program.ok()) return Result::Malformed;
          if (!advance(delta)) return fde ? Result::Ok : Result::Unsupported;
          break;
        }
        case cfa::offset_extended: {
          uint64_t reg = program.uleb();
          set_rule(reg, RegisterRule::Offset, factored(static_cast<int64_t>(program.uleb()), cie.data_align));
          break;
        }
        case cfa::offset_extended_sf: {
          uint64_t reg = program.uleb();
          set_rule(reg, RegisterRule::Offset, factored(program.sleb(), cie.data_align));
          break;
        }
        case cfa::gnu_negative_offset_extended: {
          uint64_t reg = program.uleb();
          set_rule(reg, RegisterRule::Offset, -factored(static_cast<int64_t>(program.uleb()), cie.data_align));
          break;
        }
        case cfa::val_offset: {
          uint64_t reg = program.uleb();
          set_rule(reg, RegisterRule::ValOffset, factored(static_cast<int64_t>(program.uleb()), cie.data_align));
          break;
        }
        case cfa::val_offset_sf: {
          uint64_t reg = program.uleb();
          set_rule(reg, RegisterRule::ValOffset, factored(program.sleb(), cie.data_align));
          break;
        }
        case cfa::restore_extended: restore(program.uleb()); break;
        case cfa::undefined: set_rule(program.uleb(), RegisterRule::Undefined, 0); break;
        case cfa::same_value: set_rule(program.uleb(), RegisterRule::SameValue, 0); break;
        case cfa::register_: {
          uint64_t reg = program.uleb();
          set_rule(reg, RegisterRule::Register, static_cast<int64_t>(program.uleb()));
          break;
        }
        case cfa::remember_state:
          if (depth == max_remembered_states) return Result::Unsupported;
          remembered_[depth++] = state;
          break;
        case cfa::restore_state:
          if (depth == 0) return Result::Unsupported;
          state = remembered_[--depth];
          break;
        case cfa::def_cfa:
          state.cfa.reg = program.uleb();
          state.cfa.offset = static_cast<int64_t>(program.uleb());
          state.cfa.kind = CfaState::RegisterOffset;
          break;
        case cfa::def_cfa_sf:
          state.cfa.reg = program.uleb();
          state.cfa.offset = factored(program.sleb(), cie.data_align);
          state.cfa.kind = CfaState::RegisterOffset;
          break;
        case cfa::def_cfa_register:
          state.cfa.reg = program.uleb();
          state.cfa.kind = CfaState::RegisterOffset;
          break;
        case cfa::def_cfa_offset: state.cfa.offset = static_cast<int64_t>(program.uleb()); break;
        case cfa::def_cfa_offset_sf: state.cfa.offset = factored(program.sleb(), cie.data_align); break;
        case cfa::def_cfa_expression: {
          Cursor block = program.sub(program.uleb());
          if (!program.ok()) return Result::Malformed;
          int64_t value = 0;
          if (plt_expression(block, value)) {
            state.cfa.kind = CfaState::Plt;
          } else if (rbp_expression(block, true, value)) {
            state.cfa.kind = CfaState::BpDeref;
          } else {
            state.cfa.kind = CfaState::OtherExpression;
          }
          state.cfa.expression = value;
          break;
        }
        case cfa::expression:
        case cfa::val_expression: {
          uint64_t reg = program.uleb();
          Cursor block = program.sub(program.uleb());
          if (!program.ok()) return Result::Malformed;
          int64_t value = 0;
          if (opcode == cfa::expression && reg == reg_rbp && rbp_expression(block, false, value)) {
            set_rule(reg, RegisterRule::RbpPlus, value);
          } else {
            set_rule(reg, RegisterRule::OtherExpression, 0);
          }
          break;
        }
        case cfa::gnu_args_size: program.uleb(); break;  // only matters to exception handling
        default: return Result::Unsupported;  // no length to skip an unknown instruction by
      }
      if (!program.ok()) return Result::Malformed;
    }
    return Result::Ok;
  }

  FrameTableBuilder& out_;
  FrameTableStats& stats_;
  Format format_;
  std::span<const uint8_t> section_;
  uint64_t address_delta_;
  uint64_t data_base_;
  uint64_t load_bias_;
  std::vector<Cie> cies_;
  std::unordered_map<const uint8_t*, size_t> cie_index_;
  const uint8_t* last_cie_address_ = nullptr;  // FDEs come in runs sharing one CIE
  size_t last_cie_ = 0;
  State remembered_[max_remembered_states];  // run()'s DW_CFA_remember_state stack, here to be built once
};

FrameTableStats FrameTableBuilder::add_eh_frame_hdr(const uint8_t* hdr) {
  FrameTableStats stats;
  if (!hdr) return stats.error = "no .eh_frame_hdr", stats;
  // Pointers in the header are relative to their own address (pcrel) or to the header (datarel).
  Parser parser(*this, stats, Parser::Format::EhFrame, {}, 0, reinterpret_cast<uintptr_t>(hdr), 0);
  Cursor head(hdr, hdr + 4);
  uint8_t version = head.u8();
  uint8_t eh_frame_ptr_enc = head.u8();
  uint8_t fde_count_enc = head.u8();
  uint8_t table_enc = head.u8();
  if (version != 1) return stats.error = fmt::format(".eh_frame_hdr version {}", version), stats;

  const uint8_t* p = hdr + 4;
  auto read_field = [&](uint8_t enc, uint64_t& value) {
    if (enc == pe::omit) return false;
    Cursor field(p, p + encoded_size(enc));
    bool ok = parser.read_encoded(field, enc, value);
    p = field.pos();
    return ok;
  };
  uint64_t eh_frame = 0, fde_count = 0;
  bool have_eh_frame = read_field(eh_frame_ptr_enc, eh_frame) && eh_frame;
  bool have_table = read_field(fde_count_enc, fde_count) && fixed_size_encoding(table_enc);
  if (!have_table) {
    // No search table (a linker that did not sort the FDEs): read .eh_frame in order.
    if (!have_eh_frame) return stats.error = ".eh_frame_hdr has neither a table nor .eh_frame's address", stats;
    parser.parse_sequence(reinterpret_cast<const uint8_t*>(eh_frame));
    return stats;
  }
  size_t entry_size = 2 * encoded_size(table_enc);
  if (fde_count > max_entry_length / entry_size) return stats.error = ".eh_frame_hdr: implausible FDE count", stats;
  Cursor table(p, p + fde_count * entry_size);
  fdes_.reserve(fdes_.size() + fde_count);
  rows_.reserve(rows_.size() + fde_count * 7);  // libc and libstdc++: 6 to 7 rows per FDE
  for (uint64_t i = 0; i < fde_count; ++i) {
    uint64_t initial_location = 0, fde = 0;
    if (!parser.read_encoded(table, table_enc, initial_location) || !parser.read_encoded(table, table_enc, fde)) {
      stats.error = ".eh_frame_hdr: unreadable table entry";
      break;
    }
    if (!parser.parse_fde_at(reinterpret_cast<const uint8_t*>(fde))) break;
  }
  return stats;
}

FrameTableStats FrameTableBuilder::add_eh_frame(std::span<const uint8_t> bytes, uint64_t section_address,
                                                uint64_t load_bias) {
  FrameTableStats stats;
  if (bytes.empty()) return stats;
  uint64_t delta = section_address - reinterpret_cast<uintptr_t>(bytes.data());
  Parser parser(*this, stats, Parser::Format::EhFrame, bytes, delta, 0, load_bias);
  parser.parse_sequence(bytes.data());
  return stats;
}

FrameTableStats FrameTableBuilder::add_debug_frame(std::span<const uint8_t> bytes, uint64_t load_bias) {
  FrameTableStats stats;
  if (bytes.empty()) return stats;
  Parser parser(*this, stats, Parser::Format::DebugFrame, bytes, 0, 0, load_bias);
  parser.parse_sequence(bytes.data());
  return stats;
}

FrameTable FrameTableBuilder::finish(std::string path) {
  FrameTable table;
  table.path = std::move(path);
  std::vector<uint32_t> order;
  order.reserve(fdes_.size());
  for (uint32_t i = 0; i < fdes_.size(); ++i) {
    if (fdes_[i].end > fdes_[i].begin) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return fdes_[a].begin < fdes_[b].begin; });
  order.erase(std::unique(order.begin(), order.end(),
                          [&](uint32_t a, uint32_t b) { return fdes_[a].begin == fdes_[b].begin; }),
              order.end());

  if (!order.empty()) {
    constexpr uint64_t max_span = std::numeric_limits<uint32_t>::max();  // row starts are 32-bit offsets
    table.base = fdes_[order.front()].begin;
    table.rows.reserve(rows_.size() + order.size());
    table.function_starts.reserve(order.size());
    table.function_ends.reserve(order.size());
    auto push = [&](const FrameRow& row) {
      if (table.rows.empty() || !same_rule(table.rows.back(), row)) table.rows.push_back(row);
    };
    for (size_t k = 0; k < order.size(); ++k) {
      const Fde& f = fdes_[order[k]];
      uint64_t shift = f.begin - table.base;
      if (shift >= max_span) break;
      uint64_t cut = f.end;
      bool adjacent = false;  // the next FDE starts where this one stops: no gap row
      if (k + 1 < order.size() && fdes_[order[k + 1]].begin <= cut) {
        cut = fdes_[order[k + 1]].begin;
        adjacent = true;
      }
      if (cut - table.base > max_span) cut = table.base + max_span;
      for (uint32_t i = f.first_row; i < f.first_row + f.row_count && rows_[i].start < cut - f.begin; ++i) {
        FrameRow row = rows_[i];
        row.start += static_cast<uint32_t>(shift);
        push(row);
      }
      table.function_starts.push_back(static_cast<uint32_t>(shift));
      table.function_ends.push_back(static_cast<uint32_t>(cut - table.base));
      if (!adjacent) push({static_cast<uint32_t>(cut - table.base), 0, 0, CfaRule::None, 0});
      table.end = cut;
    }
    table.rows.shrink_to_fit();
  }
  fdes_ = {};
  rows_ = {};
  return table;
}

// ---------------------------------------------------------------------------
// Signal context: lookups on the sampling path. No allocation, locks or throws.
// ---------------------------------------------------------------------------

const FrameRow* FrameTable::find(uint64_t pc) const noexcept {
  if (pc < base || pc >= end) return nullptr;
  uint32_t offset = static_cast<uint32_t>(pc - base);
  auto next = std::upper_bound(rows.begin(), rows.end(), offset,
                               [](uint32_t v, const FrameRow& row) noexcept { return v < row.start; });
  if (next == rows.begin()) return nullptr;
  const FrameRow* row = &*(next - 1);
  return row->rule == CfaRule::None ? nullptr : row;
}

uint64_t FrameTable::function_start(uint64_t pc) const noexcept {
  if (pc < base || pc >= end) return 0;
  uint32_t offset = static_cast<uint32_t>(pc - base);
  auto next = std::upper_bound(function_starts.begin(), function_starts.end(), offset);
  if (next == function_starts.begin()) return 0;
  size_t i = static_cast<size_t>(next - function_starts.begin()) - 1;
  return offset < function_ends[i] ? base + function_starts[i] : 0;
}

}  // namespace coz
