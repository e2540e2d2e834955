// The flat JSON object reader behind JSON Lines profiles (json_object.h).
#include "json_object.h"

#include <gtest/gtest.h>

namespace coz::analysis {
namespace {

using Kind = JsonMember::Kind;

std::vector<JsonMember> parse_ok(std::string_view text) {
  std::vector<JsonMember> m;
  std::string error;
  EXPECT_TRUE(parse_json_object(text, m, error)) << text << ": " << error;
  return m;
}

std::string parse_error(std::string_view text) {
  std::vector<JsonMember> m;
  std::string error;
  EXPECT_FALSE(parse_json_object(text, m, error)) << text;
  return error;
}

TEST(JsonObject, ReadsACozRecordInOrder) {
  auto m = parse_ok(R"({"type":"experiment","selected":"/src/a.cpp:12","speedup":0.35,"duration":51234567,"selected_samples":12})");
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].key, "type");
  EXPECT_EQ(m[0].kind, Kind::String);
  EXPECT_EQ(m[0].text, "experiment");
  EXPECT_EQ(m[2].kind, Kind::Number);
  EXPECT_EQ(m[2].text, "0.35");
  EXPECT_EQ(m[4].key, "selected_samples");
  EXPECT_EQ(m[4].text, "12");
}

TEST(JsonObject, WhitespaceEmptyObjectAndRepeatedKeys) {
  EXPECT_TRUE(parse_ok(" { } ").empty());
  auto m = parse_ok(" {\t\"a\" : 1 ,\r\n \"a\":2 } ");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1].text, "2");
}

TEST(JsonObject, StringEscapes) {
  auto m = parse_ok(R"({"s":"q\"b\\s\/b\bf\fn\nr\rt\t"})");
  EXPECT_EQ(m[0].text, "q\"b\\s/b\bf\fn\nr\rt\t");
}

TEST(JsonObject, UnicodeEscapesBecomeUtf8) {
  EXPECT_EQ(parse_ok(R"({"s":"\u0041\u00e9\u20AC"})")[0].text, "A\xC3\xA9\xE2\x82\xAC");
  // A surrogate pair: U+1F600.
  EXPECT_EQ(parse_ok(R"({"s":"\ud83d\ude00"})")[0].text, "\xF0\x9F\x98\x80");
  // Raw UTF-8 (and bytes that are not UTF-8: a path need not be) pass as they are.
  EXPECT_EQ(parse_ok("{\"s\":\"/src/\xC3\xA9t\xE9.c:3\"}")[0].text, "/src/\xC3\xA9t\xE9.c:3");
}

TEST(JsonObject, BadEscapesAreErrors) {
  parse_error(R"({"s":"\x41"})");
  parse_error(R"({"s":"\u12"})");
  parse_error(R"({"s":"\u12G4"})");
  parse_error(R"({"s":"\ud83d"})");         // high surrogate alone
  parse_error(R"({"s":"\ud83d\u0041"})");   // followed by no low one
  parse_error(R"({"s":"\ude00"})");         // low surrogate alone
  parse_error("{\"s\":\"a\tb\"}");           // a raw control character
}

TEST(JsonObject, NumbersFollowTheJsonGrammar) {
  for (const char* n : {"0", "-0", "12", "-12", "0.5", "1e8", "1.2E+8", "3e-2"}) {
    auto m = parse_ok(std::string("{\"n\":") + n + "}");
    EXPECT_EQ(m[0].kind, Kind::Number);
    EXPECT_EQ(m[0].text, n);
  }
  for (const char* n : {"01", "+1", ".5", "5.", "1e", "-", "0x10", "1.2.3", "NaN", "Infinity"}) {
    parse_error(std::string("{\"n\":") + n + "}");
  }
}

TEST(JsonObject, Literals) {
  auto m = parse_ok(R"({"a":true,"b":false,"c":null})");
  EXPECT_EQ(m[0].kind, Kind::True);
  EXPECT_EQ(m[1].kind, Kind::False);
  EXPECT_EQ(m[2].kind, Kind::Null);
  EXPECT_EQ(m[2].text, "null");
  parse_error(R"({"a":tru})");
  parse_error(R"({"a":nul})");
  parse_error(R"({"a":True})");
}

TEST(JsonObject, NestedValuesAreSkippedWhole) {
  auto m = parse_ok(R"({"a":[1,{"x":"]}"}],"b":{"c":[]},"d":2})");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].kind, Kind::Nested);
  EXPECT_EQ(m[1].kind, Kind::Nested);
  EXPECT_EQ(m[2].text, "2");
  parse_error(R"({"a":[1,2})");
}

TEST(JsonObject, MalformedObjectsSayWhereAndWhy) {
  EXPECT_EQ(parse_error(R"({"a" 1})"), "malformed JSON (expected ':' at column 6)");
  EXPECT_EQ(parse_error(R"({"a":1} x)"), "malformed JSON (text after the JSON object at column 9)");
  EXPECT_EQ(parse_error("[1]"), "malformed JSON (expected '{' at column 1)");
  parse_error("");
  parse_error("{");
  parse_error(R"({"a":1,})");
  parse_error(R"({"a":1 "b":2})");
  parse_error(R"({a:1})");
  parse_error(R"({"a":"unterminated})");
  // A line a failed write cut, ended by the writer's marker: never valid JSON.
  parse_error("{\"type\":\"experiment\",\"sel\tcut=write-failed");
  parse_error("{\"type\":\"runtime\",\"time\":12\tcut=write-failed");
  parse_error("{\"type\":\"runtime\",\"time\":12}\tcut=write-failed");
}

}  // namespace
}  // namespace coz::analysis
