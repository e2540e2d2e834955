// Written from RFC 2603 (the v0 grammar) and RFC 3492 (punycode); the output
// follows what rustc-demangle's alternate form prints, checked against it in
// test/unit/rust_demangle_test.cpp. Runs in the profiled program while its
// symbol tables are read (never in a signal handler): every failure is a
// `false` that unwinds to nullopt, and the limits in RustDemangleLimits bound
// the work on any input, back-references included.
#include "rust_demangle.h"

#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "json_string.h"  // utf8_sequence_length, append_utf8

namespace coz {

namespace {

using Limits = RustDemangleLimits;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

bool is_scalar_value(uint64_t cp) { return cp <= 0x10FFFF && !(cp >= 0xD800 && cp < 0xE000); }

/// RFC 3492 with v0's spelling: `_` instead of `-` between the basic code
/// points and the deltas. false for anything that does not decode.
bool decode_punycode(std::string_view basic, std::string_view deltas, std::string& out) {
  constexpr uint64_t base = 36, tmin = 1, tmax = 26, skew = 38, damp = 700;
  constexpr size_t max_code_points = 1024;
  std::vector<uint32_t> cps(basic.begin(), basic.end());
  auto adapt = [&](uint64_t delta, uint64_t points, bool first) {
    delta = first ? delta / damp : delta / 2;
    delta += delta / points;
    uint64_t k = 0;
    while (delta > ((base - tmin) * tmax) / 2) {
      delta /= base - tmin;
      k += base;
    }
    return k + (base - tmin + 1) * delta / (delta + skew);
  };
  uint64_t n = 128, i = 0, bias = 72;
  size_t p = 0;
  while (p < deltas.size()) {
    const uint64_t old_i = i;
    uint64_t w = 1;
    for (uint64_t k = base;; k += base) {
      if (p >= deltas.size()) return false;
      char c = deltas[p++];
      const uint64_t digit = is_lower(c)   ? static_cast<uint64_t>(c - 'a')
                             : is_digit(c) ? static_cast<uint64_t>(c - '0') + 26
                                           : base;
      if (digit >= base) return false;
      if (digit > (UINT32_MAX - i) / w) return false;
      i += digit * w;
      uint64_t t = k <= bias ? tmin : k >= bias + tmax ? tmax : k - bias;
      if (digit < t) break;
      if (w > UINT32_MAX / (base - t)) return false;
      w *= base - t;
    }
    const uint64_t points = cps.size() + 1;
    bias = adapt(i - old_i, points, old_i == 0);
    n += i / points;
    i %= points;
    if (!is_scalar_value(n) || cps.size() >= max_code_points) return false;
    cps.insert(cps.begin() + static_cast<std::ptrdiff_t>(i), static_cast<uint32_t>(n));
    ++i;
  }
  for (uint32_t cp : cps) append_utf8(out, cp);
  return true;
}

/// A char or str constant as Rust's Debug prints it (quotes added by the caller).
void append_escaped(std::string& out, uint32_t cp, char quote) {
  switch (cp) {
    case '\t': out += "\\t"; return;
    case '\r': out += "\\r"; return;
    case '\n': out += "\\n"; return;
    case '\\': out += "\\\\"; return;
    case '\0': out += "\\0"; return;
    default: break;
  }
  if (cp == static_cast<uint32_t>(quote)) {
    out += '\\';
    out += quote;
  } else if (cp < 0x20 || cp == 0x7F) {
    out += fmt::format("\\u{{{:x}}}", cp);
  } else {
    append_utf8(out, cp);
  }
}

struct Ident {
  std::string_view ascii;     // the whole identifier, or punycode's basic code points
  std::string_view punycode;  // the deltas, for a `u` identifier
  bool empty() const { return ascii.empty() && punycode.empty(); }
};

/// One v0 symbol, read and printed in one pass (as the grammar allows: every
/// production prints left to right). `printing_` off reads without printing,
/// for the parts rustc-demangle leaves out (impl paths, instantiating crate).
class V0Demangler {
 public:
  explicit V0Demangler(std::string_view symbol) : s_(symbol) {}

  bool run(std::string& out) {
    if (!is_upper(peek())) return false;  // a leading decimal is an encoding version: none is defined
    if (!path(true)) return false;
    if (is_upper(peek())) {  // the instantiating crate: not printed
      printing_ = false;
      if (!path(false)) return false;
      printing_ = true;
    }
    if (pos_ != s_.size()) return false;
    out = std::move(out_);
    return true;
  }

 private:
  /// Counts one production and its nesting; false once a limit is reached.
  class Enter {
   public:
    explicit Enter(V0Demangler& d) : d_(d) {
      ok_ = ++d_.depth_ <= Limits::max_depth && ++d_.steps_ <= Limits::max_steps;
    }
    ~Enter() { --d_.depth_; }
    Enter(const Enter&) = delete;
    Enter& operator=(const Enter&) = delete;
    explicit operator bool() const { return ok_; }

   private:
    V0Demangler& d_;
    bool ok_;
  };

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c || pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  bool next(char& c) {
    if (pos_ >= s_.size()) return false;
    c = s_[pos_++];
    return true;
  }
  bool emit(std::string_view text) {
    if (!printing_) return true;
    if (out_.size() + text.size() > Limits::max_output) return false;
    out_.append(text);
    return true;
  }
  bool emit_number(uint64_t v) { return emit(fmt::format("{}", v)); }

  /// <base-62-number>: `_` is 0, `<digits>_` is the value plus one.
  bool base62(uint64_t& v) {
    if (eat('_')) {
      v = 0;
      return true;
    }
    uint64_t x = 0;
    bool closed = false;
    for (char c; !closed && next(c);) {
      uint64_t d;
      if (c == '_') {
        closed = true;
        continue;
      } else if (is_digit(c)) {
        d = static_cast<uint64_t>(c - '0');
      } else if (is_lower(c)) {
        d = 10 + static_cast<uint64_t>(c - 'a');
      } else if (is_upper(c)) {
        d = 36 + static_cast<uint64_t>(c - 'A');
      } else {
        return false;
      }
      if (x > (UINT64_MAX - d) / 62) return false;
      x = x * 62 + d;
    }
    if (!closed || x == UINT64_MAX) return false;
    v = x + 1;
    return true;
  }

  /// [<tag> <base-62-number>]: absent is 0, present is the number plus one.
  bool optional_base62(char tag, uint64_t& v) {
    v = 0;
    if (!eat(tag)) return true;
    if (!base62(v) || v == UINT64_MAX) return false;
    ++v;
    return true;
  }

  bool decimal(uint64_t& v) {
    if (!is_digit(peek())) return false;
    v = 0;
    if (eat('0')) return true;  // no leading zeros
    while (is_digit(peek())) {
      uint64_t d = static_cast<uint64_t>(s_[pos_++] - '0');
      if (v > (UINT64_MAX - d) / 10) return false;
      v = v * 10 + d;
    }
    return true;
  }

  /// <undisambiguated-identifier> = ["u"] <decimal-number> ["_"] <bytes>
  bool identifier(Ident& id) {
    const bool puny = eat('u');
    uint64_t len;
    if (!decimal(len)) return false;
    eat('_');  // separates a leading digit or `_` of the bytes from the length
    if (len > s_.size() - pos_) return false;
    std::string_view bytes = s_.substr(pos_, static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    id = {};
    if (!puny) {
      id.ascii = bytes;
    } else {
      size_t cut = bytes.rfind('_');
      if (cut == std::string_view::npos) {
        id.punycode = bytes;
      } else {
        id.ascii = bytes.substr(0, cut);
        id.punycode = bytes.substr(cut + 1);
      }
      if (id.punycode.empty()) return false;
    }
    return true;
  }

  bool print_identifier(const Ident& id) {
    if (id.punycode.empty()) return emit(id.ascii);
    std::string decoded;
    if (decode_punycode(id.ascii, id.punycode, decoded)) return emit(decoded);
    // Left readable as rustc-demangle leaves it.
    return emit("punycode{") && (id.ascii.empty() || (emit(id.ascii) && emit("-"))) && emit(id.punycode) &&
           emit("}");
  }

  /// <backref> = "B" <base-62-number> (the B already read at `tag_at`):
  /// runs `print` at an earlier offset, then comes back.
  template <typename F>
  bool backref(size_t tag_at, F print) {
    uint64_t target;
    if (!base62(target) || target >= tag_at) return false;
    if (!printing_) return true;  // nothing to print: the referenced part was read when it was first met
    Enter enter(*this);
    if (!enter) return false;
    const size_t resume = pos_;
    pos_ = static_cast<size_t>(target);
    const bool ok = print();
    pos_ = resume;
    return ok;
  }

  bool lifetime(uint64_t index) {
    if (index == 0) return emit("'_");
    if (index > bound_lifetimes_) return false;
    const uint64_t depth = bound_lifetimes_ - index;
    if (depth < 26) return emit("'") && emit(std::string(1, static_cast<char>('a' + depth)));
    return emit("'_") && emit_number(depth);
  }

  /// [<binder>] around `inner`: `for<'a, 'b> ` and the lifetimes it binds.
  template <typename F>
  bool in_binder(F inner) {
    uint64_t count;
    if (!optional_base62('G', count) || count > 1000) return false;
    const uint64_t saved = bound_lifetimes_;
    bound_lifetimes_ += count;
    bool ok = true;
    if (count > 0) {
      ok = emit("for<");
      for (uint64_t i = 0; ok && i < count; ++i) ok = (i == 0 || emit(", ")) && lifetime(count - i);
      ok = ok && emit("> ");
    }
    ok = ok && inner();
    bound_lifetimes_ = saved;
    return ok;
  }

  /// {item} "E", printed with `separator` between; `count` is how many.
  template <typename F>
  bool list(std::string_view separator, F item, size_t* count = nullptr) {
    size_t n = 0;
    while (!eat('E')) {
      if (pos_ >= s_.size()) return false;
      if (n > 0 && !emit(separator)) return false;
      if (!item()) return false;
      ++n;
    }
    if (count) *count = n;
    return true;
  }

  bool path(bool in_value) {
    Enter enter(*this);
    if (!enter) return false;
    const size_t tag_at = pos_;
    char tag;
    if (!next(tag)) return false;
    switch (tag) {
      case 'C': {  // crate root; its disambiguator is the crate hash, not printed
        uint64_t disambiguator;
        Ident name;
        return optional_base62('s', disambiguator) && identifier(name) && print_identifier(name);
      }
      case 'N': {
        char ns;
        if (!next(ns) || !(is_lower(ns) || is_upper(ns))) return false;
        if (!path(in_value)) return false;
        uint64_t disambiguator;
        Ident name;
        if (!optional_base62('s', disambiguator) || !identifier(name)) return false;
        if (is_upper(ns)) {  // special namespace: {closure#0}, {shim:vtable#0}
          std::string_view kind = ns == 'C' ? "closure" : ns == 'S' ? "shim" : std::string_view(&s_[tag_at + 1], 1);
          return emit("::{") && emit(kind) && (name.empty() || (emit(":") && print_identifier(name))) &&
                 emit("#") && emit_number(disambiguator) && emit("}");
        }
        return name.empty() || (emit("::") && print_identifier(name));
      }
      case 'M':    // <T> (inherent impl)
      case 'X': {  // <T as Trait> (trait impl)
        uint64_t disambiguator;
        if (!optional_base62('s', disambiguator)) return false;
        const bool was_printing = printing_;
        printing_ = false;  // the impl's own path: not printed
        const bool ok = path(false);
        printing_ = was_printing;
        if (!ok || !emit("<") || !type()) return false;
        if (tag == 'X' && (!emit(" as ") || !path(false))) return false;
        return emit(">");
      }
      case 'Y':  // <T as Trait> (trait definition)
        return emit("<") && type() && emit(" as ") && path(false) && emit(">");
      case 'I':  // generic arguments: path::<A, B> in a value, path<A, B> in a type
        return path(in_value) && (!in_value || emit("::")) && emit("<") &&
               list(", ", [&] { return generic_arg(); }) && emit(">");
      case 'B': return backref(tag_at, [&] { return path(in_value); });
      default: return false;
    }
  }

  bool generic_arg() {
    if (eat('L')) {
      uint64_t index;
      return base62(index) && lifetime(index);
    }
    if (eat('K')) return constant(false);
    return type();
  }

  static const char* basic_type(char tag) {
    switch (tag) {
      case 'a': return "i8";
      case 'b': return "bool";
      case 'c': return "char";
      case 'd': return "f64";
      case 'e': return "str";
      case 'f': return "f32";
      case 'h': return "u8";
      case 'i': return "isize";
      case 'j': return "usize";
      case 'l': return "i32";
      case 'm': return "u32";
      case 'n': return "i128";
      case 'o': return "u128";
      case 's': return "i16";
      case 't': return "u16";
      case 'u': return "()";
      case 'v': return "...";
      case 'x': return "i64";
      case 'y': return "u64";
      case 'z': return "!";
      case 'p': return "_";
      default: return nullptr;
    }
  }

  bool type() {
    Enter enter(*this);
    if (!enter) return false;
    const size_t tag_at = pos_;
    char tag;
    if (!next(tag)) return false;
    if (const char* basic = basic_type(tag)) return emit(basic);
    switch (tag) {
      case 'R':
      case 'Q': {
        if (!emit("&")) return false;
        if (eat('L')) {
          uint64_t index;
          if (!base62(index)) return false;
          if (index != 0 && (!lifetime(index) || !emit(" "))) return false;
        }
        return (tag == 'R' || emit("mut ")) && type();
      }
      case 'P': return emit("*const ") && type();
      case 'O': return emit("*mut ") && type();
      case 'A': return emit("[") && type() && emit("; ") && constant(true) && emit("]");
      case 'S': return emit("[") && type() && emit("]");
      case 'T': {
        size_t n = 0;
        return emit("(") && list(", ", [&] { return type(); }, &n) && (n != 1 || emit(",")) && emit(")");
      }
      case 'F': return in_binder([&] { return fn_signature(); });
      case 'D': {
        if (!emit("dyn ") || !in_binder([&] { return list(" + ", [&] { return dyn_trait(); }); })) return false;
        uint64_t index;
        if (!eat('L') || !base62(index)) return false;
        return index == 0 || (emit(" + ") && lifetime(index));
      }
      case 'B': return backref(tag_at, [&] { return type(); });
      default:
        pos_ = tag_at;
        return path(false);
    }
  }

  /// <fn-sig> = ["U"] ["K" <abi>] {<type>} "E" <type> (the binder already read)
  bool fn_signature() {
    if (eat('U') && !emit("unsafe ")) return false;
    if (eat('K')) {
      if (!emit("extern \"")) return false;
      if (eat('C')) {
        if (!emit("C")) return false;
      } else {
        Ident abi;
        if (!identifier(abi) || !abi.punycode.empty()) return false;
        std::string name(abi.ascii);
        for (char& c : name) c = c == '_' ? '-' : c;  // `system_unwind` is spelled "system-unwind"
        if (!emit(name)) return false;
      }
      if (!emit("\" ")) return false;
    }
    if (!emit("fn(") || !list(", ", [&] { return type(); }) || !emit(")")) return false;
    if (eat('u')) return true;  // returns (): not printed
    return emit(" -> ") && type();
  }

  /// <dyn-trait> = <path> {"p" <undisambiguated-identifier> <type>}:
  /// `Iterator<Item = u8>`, the bindings inside the path's own <...> if it has one.
  bool dyn_trait() {
    bool open = false;
    if (!dyn_trait_path(open)) return false;
    while (eat('p')) {
      if (!emit(open ? ", " : "<")) return false;
      open = true;
      Ident name;
      if (!identifier(name) || !print_identifier(name) || !emit(" = ") || !type()) return false;
    }
    return !open || emit(">");
  }

  bool dyn_trait_path(bool& open) {
    Enter enter(*this);
    if (!enter) return false;
    const size_t tag_at = pos_;
    if (eat('B')) return backref(tag_at, [&] { return dyn_trait_path(open); });
    if (eat('I')) {
      open = true;
      return path(false) && emit("<") && list(", ", [&] { return generic_arg(); });
    }
    open = false;
    return path(false);
  }

  /// {hex digit} "_"
  bool hex_nibbles(std::string_view& nibbles) {
    const size_t begin = pos_;
    while (is_hex(peek())) ++pos_;
    nibbles = s_.substr(begin, pos_ - begin);
    return eat('_');
  }

  static bool nibbles_value(std::string_view nibbles, uint64_t& v) {
    while (!nibbles.empty() && nibbles.front() == '0') nibbles.remove_prefix(1);
    if (nibbles.size() > 16) return false;
    v = 0;
    for (char c : nibbles) v = v * 16 + static_cast<uint64_t>(is_digit(c) ? c - '0' : c - 'a' + 10);
    return true;
  }

  bool const_uint() {
    std::string_view nibbles;
    if (!hex_nibbles(nibbles)) return false;
    uint64_t v;
    if (nibbles_value(nibbles, v)) return emit_number(v);
    return emit("0x") && emit(nibbles);  // past 64 bits (u128)
  }

  /// The UTF-8 bytes of a str constant, two nibbles each, quoted.
  bool const_str() {
    std::string_view nibbles;
    if (!hex_nibbles(nibbles) || nibbles.size() % 2 != 0) return false;
    std::string bytes;
    for (size_t i = 0; i < nibbles.size(); i += 2) {
      uint64_t b = 0;
      nibbles_value(nibbles.substr(i, 2), b);  // two nibbles: always fits
      bytes += static_cast<char>(b);
    }
    std::string text = "\"";
    for (size_t i = 0; i < bytes.size();) {
      const size_t n = utf8_sequence_length(bytes, i);
      if (n == 0) return false;
      const auto lead = static_cast<unsigned char>(bytes[i]);
      uint32_t cp = n == 1 ? lead : n == 2 ? (lead & 0x1Fu) : n == 3 ? (lead & 0x0Fu) : (lead & 0x07u);
      for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(bytes[i + k]) & 0x3Fu);
      append_escaped(text, cp, '"');
      i += n;
    }
    text += '"';
    return emit(text);
  }

  /// <const>: a value (the type only says how to read it; the alternate form
  /// prints no `usize` suffix), `_` for a placeholder, or a back-reference.
  bool constant(bool in_value) {
    Enter enter(*this);
    if (!enter) return false;
    const size_t tag_at = pos_;
    char tag;
    if (!next(tag)) return false;
    switch (tag) {
      case 'p': return emit("_");
      case 'h': case 't': case 'm': case 'y': case 'o': case 'j': return const_uint();
      case 'a': case 's': case 'l': case 'x': case 'n': case 'i': return (!eat('n') || emit("-")) && const_uint();
      case 'b': {
        std::string_view nibbles;
        uint64_t v;
        if (!hex_nibbles(nibbles) || !nibbles_value(nibbles, v) || v > 1) return false;
        return emit(v ? "true" : "false");
      }
      case 'c': {
        std::string_view nibbles;
        uint64_t v;
        if (!hex_nibbles(nibbles) || !nibbles_value(nibbles, v) || !is_scalar_value(v)) return false;
        std::string text = "'";
        append_escaped(text, static_cast<uint32_t>(v), '\'');
        return emit(text + "'");
      }
      case 'e': return emit("*") && const_str();
      case 'R':
      case 'Q':
        if (tag == 'R' && eat('e')) return const_str();  // &str: "..."
        return emit(tag == 'R' ? "&" : "&mut ") && constant(true);
      case 'A': return emit("[") && list(", ", [&] { return constant(true); }) && emit("]");
      case 'T': {
        size_t n = 0;
        return emit("(") && list(", ", [&] { return constant(true); }, &n) && (n != 1 || emit(",")) && emit(")");
      }
      case 'V': {  // an enum variant or struct: Path, Path(a, b), Path { x: a }
        if (!path(true)) return false;
        char fields;
        if (!next(fields)) return false;
        if (fields == 'U') return true;
        if (fields == 'T') return emit("(") && list(", ", [&] { return constant(true); }) && emit(")");
        if (fields != 'S') return false;
        return emit(" { ") &&
               list(", ",
                    [&] {
                      uint64_t disambiguator;
                      Ident name;
                      return optional_base62('s', disambiguator) && identifier(name) && print_identifier(name) &&
                             emit(": ") && constant(true);
                    }) &&
               emit(" }");
      }
      case 'B': return backref(tag_at, [&] { return constant(in_value); });
      default: return false;
    }
  }

  std::string_view s_;  // after `_R`: back-references are offsets into it
  size_t pos_ = 0;
  std::string out_;
  bool printing_ = true;
  int depth_ = 0;
  size_t steps_ = 0;
  uint64_t bound_lifetimes_ = 0;
};

/// `.llvm.<hex>` (LLVM's ThinLTO promotion) says nothing to a reader: dropped,
/// as rustc-demangle drops it.
std::string_view without_llvm_suffix(std::string_view s) {
  const size_t at = s.find(".llvm.");
  if (at == std::string_view::npos) return s;
  for (char c : s.substr(at + 6)) {
    if (!(is_digit(c) || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f') || c == '@')) return s;
  }
  return s.substr(0, at);
}

/// A suffix kept after the demangled name (`.cold`, `.part.0`): printable ASCII.
bool printable_suffix(std::string_view s) {
  for (char c : s) {
    if (c < 0x21 || c > 0x7E) return false;
  }
  return true;
}

bool is_legacy_hash(std::string_view s) {
  if (s.size() != 17 || s[0] != 'h') return false;
  for (char c : s.substr(1)) {
    if (!is_hex(c)) return false;
  }
  return true;
}

/// One legacy path segment: `_$LT$impl$u20$u64$GT$` is `<impl u64>`, `..` is `::`.
bool append_legacy_segment(std::string& out, std::string_view seg) {
  if (seg.starts_with("_$")) seg.remove_prefix(1);  // `_` only keeps a segment from starting with `$`
  while (!seg.empty()) {
    if (seg.starts_with("..")) {
      out += "::";
      seg.remove_prefix(2);
    } else if (seg.front() == '$') {
      const size_t close = seg.find('$', 1);
      if (close == std::string_view::npos) return false;
      std::string_view code = seg.substr(1, close - 1);
      seg.remove_prefix(close + 1);
      if (code == "SP") out += '@';
      else if (code == "BP") out += '*';
      else if (code == "RF") out += '&';
      else if (code == "LT") out += '<';
      else if (code == "GT") out += '>';
      else if (code == "LP") out += '(';
      else if (code == "RP") out += ')';
      else if (code == "C") out += ',';
      else if (code.size() >= 2 && code.size() <= 7 && code[0] == 'u') {
        uint32_t cp = 0;
        for (char c : code.substr(1)) {
          if (!is_hex(c)) return false;
          cp = cp * 16 + static_cast<uint32_t>(is_digit(c) ? c - '0' : c - 'a' + 10);
        }
        if (!is_scalar_value(cp) || cp < 0x20) return false;
        append_utf8(out, cp);
      } else {
        return false;
      }
    } else {
      const size_t end = std::min(seg.find('$'), seg.find(".."));
      const std::string_view plain = seg.substr(0, end);
      out.append(plain);
      seg.remove_prefix(plain.size());
    }
  }
  return true;
}

}  // namespace

std::optional<std::string> demangle_rust_v0(std::string_view mangled) {
  if (!mangled.starts_with("_R")) return std::nullopt;
  std::string_view s = without_llvm_suffix(mangled.substr(2));
  std::string_view suffix;
  if (size_t at = s.find_first_of(".$"); at != std::string_view::npos) {
    suffix = s.substr(at);
    s = s.substr(0, at);
    if (!printable_suffix(suffix) || suffix.size() > Limits::max_output) return std::nullopt;
  }
  for (char c : s) {
    if (!(is_digit(c) || is_lower(c) || is_upper(c) || c == '_')) return std::nullopt;
  }
  std::string out;
  if (!V0Demangler(s).run(out)) return std::nullopt;
  out += suffix;
  return out;
}

std::optional<std::string> demangle_rust_legacy(std::string_view mangled) {
  if (!mangled.starts_with("_ZN")) return std::nullopt;
  std::string_view s = without_llvm_suffix(mangled.substr(3));
  std::vector<std::string_view> segments;
  size_t pos = 0;
  while (pos < s.size() && s[pos] != 'E') {
    if (!is_digit(s[pos]) || s[pos] == '0') return std::nullopt;
    size_t len = 0;
    while (pos < s.size() && is_digit(s[pos])) {
      len = len * 10 + static_cast<size_t>(s[pos++] - '0');
      if (len > s.size()) return std::nullopt;
    }
    if (len > s.size() - pos) return std::nullopt;
    segments.push_back(s.substr(pos, len));
    pos += len;
  }
  if (pos >= s.size() || segments.size() < 2 || !is_legacy_hash(segments.back())) return std::nullopt;
  const std::string_view suffix = s.substr(pos + 1);
  if (!suffix.empty() && (suffix.front() != '.' || !printable_suffix(suffix))) return std::nullopt;
  std::string out;
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    for (char c : segments[i]) {
      if (c < 0x21 || c > 0x7E) return std::nullopt;
    }
    if (i > 0) out += "::";
    if (!append_legacy_segment(out, segments[i])) return std::nullopt;
    if (out.size() > Limits::max_output) return std::nullopt;
  }
  out += suffix;
  return out;
}

}  // namespace coz
