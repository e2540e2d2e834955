// Bounds-checked reading of DWARF encodings (fixed-size integers, LEB128,
// strings, attribute forms), shared by the line-table and unit readers.
//
// Errors are sticky instead of thrown: a read past the end returns 0, marks
// the cursor failed and moves it to the end, so every loop that stops at
// end() also stops on bad data, and the caller checks ok() once per unit.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace coz {

/// The DWARF sections of one ELF file (empty spans for absent ones).
struct DwarfSections {
  std::span<const uint8_t> line{};      // .debug_line
  std::span<const uint8_t> line_str{};  // .debug_line_str (DWARF 5)
  std::span<const uint8_t> str{};       // .debug_str
  std::span<const uint8_t> info{};      // .debug_info
  std::span<const uint8_t> abbrev{};    // .debug_abbrev
  std::span<const uint8_t> addr{};         // .debug_addr (DWARF 5 DW_FORM_addrx*)
  std::span<const uint8_t> str_offsets{};  // .debug_str_offsets (DWARF 5 DW_FORM_strx*)
  std::span<const uint8_t> ranges{};       // .debug_ranges (DWARF 2-4 DW_AT_ranges)
  std::span<const uint8_t> rnglists{};     // .debug_rnglists (DWARF 5 DW_AT_ranges)
  /// The supplementary file's sections (dwz -m: .gnu_debugaltlink or
  /// .debug_sup), where DW_FORM_GNU_strp_alt/strp_sup strings and
  /// DW_FORM_GNU_ref_alt/ref_sup4/ref_sup8 DIEs are; null if none was found.
  const DwarfSections* supplementary = nullptr;
};

}  // namespace coz

namespace coz::dwarf_reader {

class Cursor {
 public:
  Cursor() = default;
  Cursor(const uint8_t* begin, const uint8_t* end) : begin_(begin), pos_(begin), end_(end) {}
  explicit Cursor(std::span<const uint8_t> bytes) : Cursor(bytes.data(), bytes.data() + bytes.size()) {}

  bool ok() const { return ok_; }
  bool at_end() const { return pos_ >= end_; }
  size_t offset() const { return static_cast<size_t>(pos_ - begin_); }
  size_t remaining() const { return static_cast<size_t>(end_ - pos_); }
  const uint8_t* pos() const { return pos_; }

  void fail() {
    ok_ = false;
    pos_ = end_;
  }

  /// A cursor over the next `n` bytes; this one moves past them.
  Cursor sub(uint64_t n) {
    if (n > remaining()) {
      fail();
      return Cursor{};
    }
    Cursor c(pos_, pos_ + n);
    pos_ += n;
    return c;
  }

  void skip(uint64_t n) {
    if (n > remaining()) return fail();
    pos_ += n;
  }
  void seek(size_t offset) {
    if (offset > static_cast<size_t>(end_ - begin_)) return fail();
    pos_ = begin_ + offset;
  }

  uint8_t u8() {
    if (pos_ >= end_) return fail(), 0;
    return *pos_++;
  }
  uint16_t u16() { return fixed<uint16_t>(); }
  uint32_t u32() { return fixed<uint32_t>(); }
  uint64_t u64() { return fixed<uint64_t>(); }

  /// A little-endian unsigned integer of `size` bytes (1 to 8).
  uint64_t unsigned_of_size(unsigned size) {
    if (size == 0 || size > 8 || size > remaining()) return fail(), 0;
    uint64_t v = 0;
    for (unsigned i = 0; i < size; ++i) v |= static_cast<uint64_t>(pos_[i]) << (8 * i);
    pos_ += size;
    return v;
  }

  uint64_t uleb() {
    uint64_t result = 0;
    unsigned shift = 0;
    while (pos_ < end_) {
      uint8_t byte = *pos_++;
      if (shift < 64) result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if (!(byte & 0x80)) return result;
    }
    return fail(), 0;
  }

  int64_t sleb() {
    int64_t result = 0;
    unsigned shift = 0;
    while (pos_ < end_) {
      uint8_t byte = *pos_++;
      if (shift < 64) result |= static_cast<int64_t>(static_cast<uint64_t>(byte & 0x7f) << shift);
      shift += 7;
      if (!(byte & 0x80)) {
        if (shift < 64 && (byte & 0x40)) result |= static_cast<int64_t>(~uint64_t{0} << shift);  // sign-extend (at shift 63, -(1 << 63) overflowed)
        return result;
      }
    }
    return fail(), 0;
  }

  /// A NUL-terminated string (without the NUL).
  std::string_view cstr() {
    if (remaining() == 0) return fail(), std::string_view{};  // pos_ may be null: an absent section's
    const void* nul = std::memchr(pos_, 0, remaining());
    if (!nul) return fail(), std::string_view{};
    const auto* p = static_cast<const uint8_t*>(nul);
    std::string_view s(reinterpret_cast<const char*>(pos_), static_cast<size_t>(p - pos_));
    pos_ = p + 1;
    return s;
  }

  /// The initial length of a unit: sets `offset_size` to 4 or 8 (64-bit DWARF's
  /// 0xffffffff escape) and returns the length that follows.
  uint64_t initial_length(unsigned& offset_size) {
    uint64_t len = u32();
    offset_size = 4;
    if (len == 0xffffffff) {
      offset_size = 8;
      len = u64();
    } else if (len >= 0xfffffff0) {
      fail();  // reserved values
      return 0;
    }
    return len;
  }

  uint64_t offset_of_size(unsigned offset_size) { return offset_size == 8 ? u64() : u32(); }

 private:
  template <typename T>
  T fixed() {
    if (sizeof(T) > remaining()) return fail(), T{0};
    T v;
    std::memcpy(&v, pos_, sizeof(T));  // x86-64 and aarch64 hosts are little-endian, like their DWARF
    pos_ += sizeof(T);
    return v;
  }

  const uint8_t* begin_ = nullptr;
  const uint8_t* pos_ = nullptr;
  const uint8_t* end_ = nullptr;
  bool ok_ = true;
};

/// A NUL-terminated string at `offset` in a string section (.debug_str, .debug_line_str).
inline bool string_at(std::span<const uint8_t> section, uint64_t offset, std::string_view& out) {
  if (offset >= section.size()) return false;
  const auto* p = section.data() + offset;
  const void* nul = std::memchr(p, 0, section.size() - offset);
  if (!nul) return false;
  out = std::string_view(reinterpret_cast<const char*>(p), static_cast<const uint8_t*>(nul) - p);
  return true;
}

/// What a form needs to be decoded: the unit's encoding and the string sections.
struct FormContext {
  unsigned version = 4;
  unsigned offset_size = 4;
  unsigned address_size = 8;
  std::span<const uint8_t> debug_str;
  std::span<const uint8_t> debug_line_str;
  /// The supplementary file's .debug_str (DW_FORM_GNU_strp_alt, DW_FORM_strp_sup); empty if not opened.
  std::span<const uint8_t> debug_str_sup;
  /// DW_FORM_strx*: resolved through .debug_str_offsets once the unit's
  /// DW_AT_str_offsets_base is known (has_str_offsets_base).
  std::span<const uint8_t> debug_str_offsets;
  uint64_t str_offsets_base = 0;
  bool has_str_offsets_base = false;
};

/// A decoded attribute value: an integer, or a string for the string forms.
struct FormValue {
  uint64_t number = 0;
  std::string_view string;
  bool is_string = false;
  bool resolved = true;  // false: a string form we cannot resolve here (strx without a base, no supplementary file)
};

/// The size in bytes of a value of `form`, or -1 when it varies (LEB128, strings, blocks).
int fixed_form_size(uint64_t form, const FormContext& ctx);

/// Reads (or skips) one value of `form`. Returns false on an unknown form or
/// bad data (the cursor is then failed).
bool read_form(Cursor& cur, uint64_t form, const FormContext& ctx, FormValue& out, int64_t implicit_const = 0);

}  // namespace coz::dwarf_reader
