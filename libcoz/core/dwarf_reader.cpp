#include "dwarf_reader.h"

namespace coz::dwarf_reader {

namespace {
// DWARF 5 section 7.5.6 (libelfin's DW_FORM enum stops at DWARF 4).
enum Form : uint64_t {
  addr = 0x01, block2 = 0x03, block4 = 0x04, data2 = 0x05, data4 = 0x06, data8 = 0x07,
  string = 0x08, block = 0x09, block1 = 0x0a, data1 = 0x0b, flag = 0x0c, sdata = 0x0d,
  strp = 0x0e, udata = 0x0f, ref_addr = 0x10, ref1 = 0x11, ref2 = 0x12, ref4 = 0x13,
  ref8 = 0x14, ref_udata = 0x15, indirect = 0x16, sec_offset = 0x17, exprloc = 0x18,
  flag_present = 0x19, strx = 0x1a, addrx = 0x1b, ref_sup4 = 0x1c, strp_sup = 0x1d,
  data16 = 0x1e, line_strp = 0x1f, ref_sig8 = 0x20, implicit_const = 0x21,
  loclistx = 0x22, rnglistx = 0x23, ref_sup8 = 0x24, strx1 = 0x25, strx2 = 0x26,
  strx3 = 0x27, strx4 = 0x28, addrx1 = 0x29, addrx2 = 0x2a, addrx3 = 0x2b, addrx4 = 0x2c,
  gnu_addr_index = 0x1f01, gnu_str_index = 0x1f02, gnu_ref_alt = 0x1f20, gnu_strp_alt = 0x1f21,
};

bool string_form(Cursor& cur, std::span<const uint8_t> section, uint64_t offset, FormValue& out) {
  out.is_string = true;
  if (!string_at(section, offset, out.string)) {
    cur.fail();
    return false;
  }
  return true;
}

bool unresolved_string(FormValue& out) {
  out.is_string = true;
  out.resolved = false;
  return true;
}
}  // namespace

bool read_form(Cursor& cur, uint64_t form, const FormContext& ctx, FormValue& out, int64_t implicit_value) {
  out = FormValue{};
  switch (form) {
    case addr: out.number = cur.unsigned_of_size(ctx.address_size); break;
    case data1: case ref1: case flag: case strx1: case addrx1: out.number = cur.u8(); break;
    case data2: case ref2: case strx2: case addrx2: out.number = cur.u16(); break;
    case strx3: case addrx3: out.number = cur.unsigned_of_size(3); break;
    case data4: case ref4: case ref_sup4: case strx4: case addrx4: out.number = cur.u32(); break;
    case data8: case ref8: case ref_sig8: case ref_sup8: out.number = cur.u64(); break;
    case data16: cur.skip(16); break;
    case sdata: out.number = static_cast<uint64_t>(cur.sleb()); break;
    case udata: case ref_udata: case strx: case addrx: case loclistx: case rnglistx:
    case gnu_addr_index: case gnu_str_index:
      out.number = cur.uleb();
      break;
    case flag_present: out.number = 1; break;
    case implicit_const: out.number = static_cast<uint64_t>(implicit_value); break;
    case sec_offset: out.number = cur.offset_of_size(ctx.offset_size); break;
    case ref_addr:
      // DWARF 2 encodes it with the address size, later versions with the offset size.
      out.number = ctx.version <= 2 ? cur.unsigned_of_size(ctx.address_size) : cur.offset_of_size(ctx.offset_size);
      break;
    case gnu_ref_alt: out.number = cur.offset_of_size(ctx.offset_size); break;
    case block1: cur.skip(cur.u8()); break;
    case block2: cur.skip(cur.u16()); break;
    case block4: cur.skip(cur.u32()); break;
    case block: case exprloc: cur.skip(cur.uleb()); break;
    case string:
      out.is_string = true;
      out.string = cur.cstr();
      break;
    case strp: return string_form(cur, ctx.debug_str, cur.offset_of_size(ctx.offset_size), out);
    case line_strp: return string_form(cur, ctx.debug_line_str, cur.offset_of_size(ctx.offset_size), out);
    case strp_sup: case gnu_strp_alt: {
      // In the supplementary (dwz) file: unresolved when it was not found,
      // or when the offset is beyond its strings (a mismatched file), which
      // leaves this file's DIEs readable.
      uint64_t offset = cur.offset_of_size(ctx.offset_size);
      out.is_string = true;
      out.resolved = string_at(ctx.debug_str_sup, offset, out.string);
      return cur.ok();
    }
    case indirect: {
      uint64_t actual = cur.uleb();
      if (actual == indirect || actual == implicit_const) return cur.fail(), false;
      return read_form(cur, actual, ctx, out, implicit_value);
    }
    default:
      cur.fail();
      return false;
  }
  if (form == strx || form == strx1 || form == strx2 || form == strx3 || form == strx4 || form == gnu_str_index) {
    if (!ctx.has_str_offsets_base || form == gnu_str_index) return unresolved_string(out);
    uint64_t at = ctx.str_offsets_base + out.number * ctx.offset_size;
    Cursor offsets(ctx.debug_str_offsets);
    offsets.seek(at);
    uint64_t offset = offsets.offset_of_size(ctx.offset_size);
    if (!offsets.ok()) return unresolved_string(out);
    out.is_string = true;
    if (!string_at(ctx.debug_str, offset, out.string)) out.resolved = false;
    return cur.ok();
  }
  return cur.ok();
}

int fixed_form_size(uint64_t form, const FormContext& ctx) {
  switch (form) {
    case addr: return static_cast<int>(ctx.address_size);
    case data1: case ref1: case flag: case strx1: case addrx1: return 1;
    case data2: case ref2: case strx2: case addrx2: return 2;
    case strx3: case addrx3: return 3;
    case data4: case ref4: case ref_sup4: case strx4: case addrx4: return 4;
    case data8: case ref8: case ref_sig8: case ref_sup8: return 8;
    case data16: return 16;
    case flag_present: case implicit_const: return 0;
    case sec_offset: case strp: case line_strp: case strp_sup: case gnu_strp_alt: case gnu_ref_alt:
      return static_cast<int>(ctx.offset_size);
    case ref_addr: return static_cast<int>(ctx.version <= 2 ? ctx.address_size : ctx.offset_size);
    default: return -1;
  }
}

}  // namespace coz::dwarf_reader
