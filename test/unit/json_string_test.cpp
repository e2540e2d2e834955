#include "json_string.h"

#include <gtest/gtest.h>

#include <string>

namespace coz {
namespace {

/// Strict RFC 3629 check of the output, independent of the writer: every
/// byte >= 0x80 must start or continue a well-formed sequence.
bool strictly_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Unicode Table 3-7)
    if (b >= 0xC2 && b <= 0xDF) n = 2;
    else if (b == 0xE0) n = 3, lo = 0xA0;
    else if (b >= 0xE1 && b <= 0xEC) n = 3;
    else if (b == 0xED) n = 3, hi = 0x9F;
    else if (b >= 0xEE && b <= 0xEF) n = 3;
    else if (b == 0xF0) n = 4, lo = 0x90;
    else if (b >= 0xF1 && b <= 0xF3) n = 4;
    else if (b == 0xF4) n = 4, hi = 0x8F;
    else return false;
    if (i + n > s.size()) return false;
    const auto second = static_cast<unsigned char>(s[i + 1]);
    if (second < lo || second > hi) return false;
    for (size_t k = 2; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

std::string js(std::string_view bytes) {
  std::string out = json_string(bytes);
  EXPECT_TRUE(strictly_utf8(out)) << out;
  return out;
}

TEST(JsonString, ValidUtf8PassesAsItIs) {
  EXPECT_EQ(js("caf\xC3\xA9.c"), "\"caf\xC3\xA9.c\"");
  EXPECT_EQ(js("\xE6\x9D\xB1\xE4\xBA\xAC"), "\"\xE6\x9D\xB1\xE4\xBA\xAC\"");  // 東京
  EXPECT_EQ(js("\xF0\x9F\x98\x80"), "\"\xF0\x9F\x98\x80\"");                  // U+1F600
  EXPECT_EQ(js("\xF4\x8F\xBF\xBF"), "\"\xF4\x8F\xBF\xBF\"");                  // U+10FFFF, the last
  EXPECT_EQ(js("\xEF\xBF\xBF"), "\"\xEF\xBF\xBF\"");                          // U+FFFF: a noncharacter, still valid
}

TEST(JsonString, JsonEscapes) {
  EXPECT_EQ(js("a\"b\\c\nd\te\rf\bg\fh"), R"("a\"b\\c\nd\te\rf\bg\fh")");
  EXPECT_EQ(js(std::string_view("\x01\x1f\x7f\0", 4)), R"("\u0001\u001f\u007f\u0000")");
  EXPECT_EQ(js("</script>&"), "\"</script>&\"");
  EXPECT_EQ(json_string("</script><!--&", JsonEscapes::html_safe), R"("\u003c/script\u003e\u003c!--\u0026")");
}

TEST(JsonString, InvalidBytesAreLatin1Escapes) {
  EXPECT_EQ(js("caf\xE9.c"), R"("caf\u00e9.c")");                      // Latin-1 é
  EXPECT_EQ(js("\x80"), R"("\u0080")");                                // lone continuation byte
  EXPECT_EQ(js("a\xBF\xBF" "b"), R"("a\u00bf\u00bfb")");               // continuation bytes only
  EXPECT_EQ(js("\xC0\xAF"), R"("\u00c0\u00af")");                      // overlong '/'
  EXPECT_EQ(js("\xE0\x80\xAF"), R"("\u00e0\u0080\u00af")");            // overlong, three bytes
  EXPECT_EQ(js("\xF0\x80\x80\xAF"), R"("\u00f0\u0080\u0080\u00af")");  // overlong, four bytes
  EXPECT_EQ(js("\xED\xA0\x80"), R"("\u00ed\u00a0\u0080")");            // U+D800, a surrogate
  EXPECT_EQ(js("\xED\xBF\xBF"), R"("\u00ed\u00bf\u00bf")");            // U+DFFF
  EXPECT_EQ(js("\xF4\x90\x80\x80"), R"("\u00f4\u0090\u0080\u0080")");  // past U+10FFFF
  EXPECT_EQ(js("\xF8\x88\x80\x80\x80"), R"("\u00f8\u0088\u0080\u0080\u0080")");  // five-byte form
  EXPECT_EQ(js("\xFF\xFE"), R"("\u00ff\u00fe")");
  // A sequence cut short, at the end and before an ASCII byte; what follows is kept.
  EXPECT_EQ(js("x\xE2\x82"), R"("x\u00e2\u0082")");
  EXPECT_EQ(js("x\xF0\x9F\x98"), R"("x\u00f0\u009f\u0098")");
  EXPECT_EQ(js("\xE2\x82" "a\xE2\x82\xAC"), "\"\\u00e2\\u0082a\xE2\x82\xAC\"");
  EXPECT_EQ(js("\xC3"), R"("\u00c3")");
}

TEST(JsonString, NamesThatDifferStayDifferent) {
  EXPECT_NE(js("caf\xE9.c"), js("caf\xE8.c"));  // U+FFFD for both would merge them
  EXPECT_NE(js("\xE9\xE9"), js("\xE9"));
}

TEST(JsonString, ValidUtf8ForNonJsonText) {
  EXPECT_EQ(valid_utf8("caf\xE9.c"), "caf\xC3\xA9.c");  // what a JSON reader makes of "caf\u00e9.c"
  EXPECT_EQ(valid_utf8("caf\xC3\xA9.c"), "caf\xC3\xA9.c");
  EXPECT_EQ(valid_utf8("\xED\xA0\x80x\xE2\x82"), "\xC3\xAD\xC2\xA0\xC2\x80x\xC3\xA2\xC2\x82");
  EXPECT_TRUE(strictly_utf8(valid_utf8("\xFF\xC0\xAF\xF4\x90\x80\x80")));
}

TEST(JsonString, SequenceLength) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length("\xC3\xA9", 0), 2u);
  EXPECT_EQ(utf8_sequence_length("\xC3\xA9", 1), 0u);
  EXPECT_EQ(utf8_sequence_length("\xE2\x82\xAC", 0), 3u);
  EXPECT_EQ(utf8_sequence_length("\xF0\x9F\x98\x80", 0), 4u);
  EXPECT_EQ(utf8_sequence_length("\xE2\x82", 0), 0u);
}

TEST(JsonString, EveryByteStringOfTwoIsValidOutput) {
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      const char bytes[2] = {static_cast<char>(a), static_cast<char>(b)};
      const std::string out = json_string(std::string_view(bytes, 2));
      ASSERT_TRUE(strictly_utf8(out)) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace coz
