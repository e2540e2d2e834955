// Bytes as JSON strings: the one rule every JSON we write follows (the
// runtime's coz-jsonl records, `coz report --json`, `coz plot`'s embedded
// profiles), so the output is valid UTF-8 and valid JSON whatever the bytes.
//
// Paths and symbol names are bytes, not text: a file may be named `caf\xe9.c`
// (Latin-1). Valid UTF-8 is written as it is; every byte that is not part of a
// valid sequence (RFC 3629: no overlong forms, no encoded surrogates, nothing
// past U+10FFFF, no sequence cut short) is written as `\u00XX`, that byte read
// as Latin-1. `caf\xe9.c` becomes "caf\u00e9.c", read back as "café.c".
// Two names that differ in their invalid bytes stay different, unlike with
// U+FFFD for all; only a name and its own Latin-1-to-UTF-8 transcoding meet.
// The viewer decodes a profile file it opens with the same rule
// (viewer/src/analysis/bytes_text.ts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace coz {

/// How many bytes the valid UTF-8 sequence at `at` holds (1 to 4), or 0 when
/// the byte there starts none.
size_t utf8_sequence_length(std::string_view bytes, size_t at);

/// Appends code point `cp` (at most U+10FFFF) encoded as UTF-8.
void append_utf8(std::string& out, uint32_t cp);

enum class JsonEscapes {
  standard,   // what JSON requires: `"`, `\` and control characters
  html_safe,  // also `<`, `>`, `&`: the text sits inside an HTML <script> element
};

/// Appends `bytes` as a JSON string literal, quotes included, by the rule above.
void append_json_string(std::string& out, std::string_view bytes, JsonEscapes escapes = JsonEscapes::standard);

/// The same, as a new string.
std::string json_string(std::string_view bytes, JsonEscapes escapes = JsonEscapes::standard);

/// The same rule for text that is not JSON but must be UTF-8 (pprof's
/// proto3 strings): `bytes` with each invalid byte as its Latin-1 character
/// in UTF-8 (0xE9 becomes C3 A9), what a JSON reader makes of `\u00e9`.
std::string valid_utf8(std::string_view bytes);

}  // namespace coz
