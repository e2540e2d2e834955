#include "record_line.h"

#include <cstdint>

namespace coz::analysis {

const std::string* RecordLine::find(std::string_view key) const {
  const std::string* found = nullptr;
  for (const auto& [k, v] : fields) {
    if (k == key) found = &v;
  }
  return found;
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Record types are words like `throughput-point`. Checking this lets binary
// garbage be reported instead of silently passing as an "unknown record type".
bool is_record_type(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// A deliberately small JSON reader: one flat object per line, as Coz writes.
// Strings and scalars are kept as text; nested arrays/objects (which Coz does
// not write) are skipped so a future key of that shape does not reject the line.
class JsonLine {
 public:
  explicit JsonLine(std::string_view text) : s_(text) {}

  bool parse(RecordLine& out, std::string& error) {
    skip_ws();
    if (!eat('{')) return fail(error, "expected '{'");
    skip_ws();
    if (eat('}')) return finish(error);
    for (;;) {
      std::string key;
      skip_ws();
      if (!string(key)) return fail(error, "expected a string key");
      skip_ws();
      if (!eat(':')) return fail(error, "expected ':'");
      skip_ws();
      std::string value;
      bool keep = true;
      if (!value_text(value, keep)) return fail(error, "bad value for key \"" + key + "\"");
      if (keep) out.fields.emplace_back(std::move(key), std::move(value));
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
  bool fail(std::string& error, std::string what) {
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
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out += c;
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
            return false;
          }
          append_utf8(out, cp);
          break;
        }
        default: return false;
      }
    }
    return false;  // unterminated
  }

  // Numbers, true/false/null: the raw token, checked later by the reader.
  bool scalar(std::string& out) {
    size_t start = i_;
    while (i_ < s_.size()) {
      char c = s_[i_];
      bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                c == '-' || c == '+' || c == '.';
      if (!ok) break;
      ++i_;
    }
    out.assign(s_.substr(start, i_ - start));
    return !out.empty();
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

  bool value_text(std::string& out, bool& keep) {
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '"') return string(out);
    if (c == '[' || c == '{') {
      keep = false;
      return skip_nested();
    }
    return scalar(out);
  }

  std::string_view s_;
  size_t i_ = 0;
};

bool split_json(std::string_view line, RecordLine& out, std::string& error) {
  if (!JsonLine(line).parse(out, error)) return false;
  const std::string* type = out.find("type");
  if (type == nullptr) {
    error = "JSON record without a \"type\" key";
    return false;
  }
  if (!is_record_type(*type)) {
    error = "not a profile record (bad type)";
    return false;
  }
  out.type = *type;
  return true;
}

// Coz separates fields with tabs; a line without any tab is split on spaces
// so hand-written test profiles work too (paths with spaces need tabs).
bool split_tabs(std::string_view line, RecordLine& out, std::string& error) {
  const char sep = line.find('\t') != std::string_view::npos ? '\t' : ' ';
  bool first = true;
  while (!line.empty()) {
    size_t end = line.find(sep);
    std::string_view field = line.substr(0, end);
    line = end == std::string_view::npos ? std::string_view{} : line.substr(end + 1);
    field = trim(field);
    if (field.empty()) continue;
    if (first) {
      if (!is_record_type(field)) {
        error = "not a profile record";
        return false;
      }
      out.type.assign(field);
      first = false;
      continue;
    }
    size_t eq = field.find('=');
    if (eq == std::string_view::npos) continue;  // not key=value: ignored like an unknown key
    out.fields.emplace_back(std::string(field.substr(0, eq)), std::string(field.substr(eq + 1)));
  }
  if (first) {
    error = "empty record";
    return false;
  }
  return true;
}

}  // namespace

bool split_record_line(std::string_view line, RecordLine& out, std::string& error) {
  out.type.clear();
  out.fields.clear();
  std::string_view t = trim(line);
  if (!t.empty() && t.front() == '{') return split_json(t, out, error);
  return split_tabs(line, out, error);
}

}  // namespace coz::analysis
