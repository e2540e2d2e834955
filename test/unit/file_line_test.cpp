#include "file_line.h"

#include <gtest/gtest.h>

namespace coz {
namespace {

TEST(FileLine, SplitsAtTheLastColon) {
  auto p = parse_file_line("src/a:b.cpp:42");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->file, "src/a:b.cpp");
  EXPECT_EQ(p->line, 42u);
}

TEST(FileLine, RejectsWhatIsNotFileColonNumber) {
  for (const char* bad : {"", "main.cpp", ":12", "main.cpp:", "main.cpp:x", "main.cpp:12x", "main.cpp:-1",
                          "main.cpp:+1", "main.cpp: 1"}) {
    EXPECT_FALSE(parse_file_line(bad)) << bad;
  }
}

TEST(FileLine, ALineNumberThatDoesNotFitIsRejectedNotThrown) {
  EXPECT_FALSE(parse_file_line("main.cpp:99999999999999"));
  EXPECT_TRUE(parse_file_line("main.cpp:4294967295"));
  EXPECT_FALSE(parse_file_line("main.cpp:4294967296"));
}

}  // namespace
}  // namespace coz
