// A deliberately small JSON reader for one flat object per line, as Coz's
// JSON Lines profiles hold (docs/profile-format.md, "JSON Lines"): string
// keys; values that are strings (every escape, \uXXXX with surrogate pairs),
// numbers, true, false or null. A nested array or object, which no profile
// record holds, is skipped whole so that a later key of that shape does not
// reject the line. Never throws; linear in the text; no recursion.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace coz::analysis {

struct JsonMember {
  enum class Kind { String, Number, True, False, Null, Nested };
  std::string key;
  Kind kind = Kind::Null;
  // String: the decoded text (UTF-8); Number: the token as written
  // ("0.35", "1.2e8"); True/False/Null: "true"/"false"/"null"; Nested: empty.
  std::string text;
};

/// Parses `text` (one object, whitespace around it allowed) into `members`
/// in the order written, repeated keys included. Returns false with `error`
/// set ("malformed JSON (expected ':' at column 12)") when `text` is not one
/// JSON object.
bool parse_json_object(std::string_view text, std::vector<JsonMember>& members, std::string& error);

}  // namespace coz::analysis
