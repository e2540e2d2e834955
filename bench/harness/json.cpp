#include "json.h"

#include <cmath>
#include <cstdlib>

namespace coz_bench::json {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  bool document(Value& out) {
    if (!value(out)) return false;
    skip();
    return pos_ == s_.size() || fail("trailing text");
  }
  std::string error;

 private:
  bool fail(const std::string& what) {
    if (error.empty()) error = what + " at offset " + std::to_string(pos_);
    return false;
  }
  void skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool literal(const char* word) {
    const std::string w = word;
    if (s_.compare(pos_, w.size(), w) != 0) return fail("bad literal");
    pos_ += w.size();
    return true;
  }
  bool string(std::string& out) {
    if (s_[pos_] != '"') return fail("expected string");
    ++pos_;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\' && pos_ < s_.size()) {
        const char e = s_[pos_++];
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u': {  // only what file names need: ASCII; others become '?'
            const unsigned long code = std::strtoul(s_.substr(pos_, 4).c_str(), nullptr, 16);
            pos_ += 4;
            c = code < 0x80 ? char(code) : '?';
            break;
          }
          default: c = e;
        }
      }
      out.push_back(c);
    }
    if (pos_ >= s_.size()) return fail("unterminated string");
    ++pos_;
    return true;
  }
  bool value(Value& out) {
    skip();
    if (pos_ >= s_.size()) return fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') {
      out.type = Value::Type::Object;
      ++pos_;
      skip();
      if (s_[pos_] == '}') return ++pos_, true;
      for (;;) {
        skip();
        std::string key;
        if (!string(key)) return false;
        skip();
        if (s_[pos_] != ':') return fail("expected ':'");
        ++pos_;
        if (!value(out.object[key])) return false;
        skip();
        if (s_[pos_] == ',') { ++pos_; continue; }
        if (s_[pos_] == '}') return ++pos_, true;
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      out.type = Value::Type::Array;
      ++pos_;
      skip();
      if (s_[pos_] == ']') return ++pos_, true;
      for (;;) {
        out.array.emplace_back();
        if (!value(out.array.back())) return false;
        skip();
        if (s_[pos_] == ',') { ++pos_; continue; }
        if (s_[pos_] == ']') return ++pos_, true;
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      out.type = Value::Type::String;
      return string(out.string);
    }
    if (c == 't') { out.type = Value::Type::Bool; out.boolean = true; return literal("true"); }
    if (c == 'f') { out.type = Value::Type::Bool; return literal("false"); }
    if (c == 'n') return literal("null");
    char* end = nullptr;
    out.number = std::strtod(s_.c_str() + pos_, &end);
    if (end == s_.c_str() + pos_) return fail("bad value");
    out.type = Value::Type::Number;
    pos_ = size_t(end - s_.c_str());
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

const Value& Value::operator[](const std::string& key) const {
  static const Value null;
  auto it = object.find(key);
  return it == object.end() ? null : it->second;
}

double Value::num() const { return type == Type::Number ? number : std::nan(""); }

std::optional<Value> parse(const std::string& text, std::string& error) {
  Parser p(text);
  Value v;
  if (!p.document(v)) {
    error = p.error;
    return std::nullopt;
  }
  return v;
}

}  // namespace coz_bench::json
