#include "json_object.h"

#include <cstdint>
#include <utility>

#include "json_string.h"  // append_utf8

namespace coz::analysis {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  bool object(std::vector<JsonMember>& out, std::string& error) {
    skip_ws();
    if (!eat('{')) return fail(error, "expected '{'");
    skip_ws();
    if (eat('}')) return finish(error);
    for (;;) {
      JsonMember m;
      skip_ws();
      if (!string(m.key)) return fail(error, "expected a string key");
      skip_ws();
      if (!eat(':')) return fail(error, "expected ':'");
      skip_ws();
      if (!value(m)) return fail(error, "bad value for key \"" + m.key + "\"");
      out.push_back(std::move(m));
      skip_ws();
      if (eat(',')) continue;
      if (eat('}')) return finish(error);
      return fail(error, "expected ',' or '}'");
    }
  }

 private:
  bool finish(std::string& error) {
    skip_ws();
    if (i_ != s_.size()) return fail(error, "text after the JSON object");
    return true;
  }
  bool fail(std::string& error, const std::string& what) const {
    error = "malformed JSON (" + what + " at column " + std::to_string(i_ + 1) + ")";
    return false;
  }
  void skip_ws() {
    while (i_ < s_.size() && is_space(s_[i_])) ++i_;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool eat_word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }

  bool hex4(uint32_t& v) {
    if (s_.size() - i_ < 4) return false;
    v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else return false;
    }
    return true;
  }

  bool string(std::string& out) {
    if (!eat('"')) return false;
    while (i_ < s_.size()) {
      char c = s_[i_++];
      if (c == '"') return true;
      // A raw control character (a tab, a newline) is not JSON: it is also
      // what makes a line a cut writer left behind fail here, whatever the cut.
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out += c;  // other bytes pass as they are (a path need not be UTF-8)
        continue;
      }
      if (i_ >= s_.size()) return false;
      char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00) {  // high surrogate: a low one must follow
            uint32_t lo = 0;
            if (!eat('\\') || !eat('u') || !hex4(lo) || lo < 0xDC00 || lo >= 0xE000) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            return false;  // a lone low surrogate
          }
          append_utf8(out, cp);
          break;
        }
        default: return false;
      }
    }
    return false;  // unterminated
  }

  // RFC 8259's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number(std::string& out) {
    size_t start = i_;
    eat('-');
    if (eat('0')) {
    } else if (i_ < s_.size() && is_digit(s_[i_])) {
      while (i_ < s_.size() && is_digit(s_[i_])) ++i_;
    } else {
      return false;
    }
    if (eat('.')) {
      if (i_ >= s_.size() || !is_digit(s_[i_])) return false;
      while (i_ < s_.size() && is_digit(s_[i_])) ++i_;
    }
    if (eat('e') || eat('E')) {
      if (!eat('+')) eat('-');
      if (i_ >= s_.size() || !is_digit(s_[i_])) return false;
      while (i_ < s_.size() && is_digit(s_[i_])) ++i_;
    }
    out.assign(s_.substr(start, i_ - start));
    return true;
  }

  // Skips a nested array/object without recursion (no stack to overflow).
  bool skip_nested() {
    size_t depth = 0;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '"') {
        std::string ignored;
        if (!string(ignored)) return false;
        continue;
      }
      ++i_;
      if (c == '[' || c == '{') {
        ++depth;
      } else if (c == ']' || c == '}') {
        if (depth == 0) return false;
        if (--depth == 0) return true;
      }
    }
    return false;
  }

  bool value(JsonMember& m) {
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    using Kind = JsonMember::Kind;
    if (c == '"') {
      m.kind = Kind::String;
      return string(m.text);
    }
    if (c == '[' || c == '{') {
      m.kind = Kind::Nested;
      return skip_nested();
    }
    if (c == '-' || is_digit(c)) {
      m.kind = Kind::Number;
      return number(m.text);
    }
    for (auto [word, kind] : {std::pair{std::string_view{"true"}, Kind::True},
                              std::pair{std::string_view{"false"}, Kind::False},
                              std::pair{std::string_view{"null"}, Kind::Null}}) {
      if (eat_word(word)) {
        m.kind = kind;
        m.text.assign(word);
        return true;
      }
    }
    return false;
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

bool parse_json_object(std::string_view text, std::vector<JsonMember>& members, std::string& error) {
  return Parser(text).object(members, error);
}

}  // namespace coz::analysis
