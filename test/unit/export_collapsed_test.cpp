// `coz report --collapsed` (export_collapsed, exported_stacks): labels,
// callee frames, --system programs, and samples without a stack record.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "export_collapsed.h"
#include "exported_stacks.h"
#include "profile.h"

namespace coz::analysis {
namespace {

Profile read(const std::string& text) {
  Profile p;
  std::istringstream in(text);
  read_profile(in, "test.coz", p);
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
  return p;
}

std::string collapsed(const std::string& text) {
  std::ostringstream out;
  write_collapsed(out, exported_stacks(read(text)));
  return out.str();
}

TEST(ExportCollapsed, FramesOutermostFirstWithFunctionsAndCallees) {
  std::string text =
      "samples\tlocation=/src/app/main.cpp:42\tcount=9\tfunction=consume\n"
      "samples\tlocation=/src/app/main.cpp:50\tcount=5\tfunction=produce\n"
      "stack\tframes=/src/app/main.cpp:30;/src/app/main.cpp:42\tcount=7\n"
      "stack\tframes=/src/app/main.cpp:30;/src/app/main.cpp:42;__memmove_avx_unaligned_erms [libc.so.6]\tcount=2\n"
      "stack\tframes=/src/app/main.cpp:30;/src/app/main.cpp:50\tcount=3\n"
      "stack\tframes=/src/app/main.cpp:30;/src/app/main.cpp:50\tcount=2\n";  // records of one stack add up
  EXPECT_EQ(collapsed(text),
            "main.cpp:30;consume (main.cpp:42) 7\n"
            "main.cpp:30;consume (main.cpp:42);__memmove_avx_unaligned_erms [libc.so.6] 2\n"
            "main.cpp:30;produce (main.cpp:50) 5\n");
}

TEST(ExportCollapsed, SamplesWithoutAStackRecordHaveTheirOwnRoot) {
  // main.cpp:42 has 10 samples, 9 of them in stacks: the runtime's stack
  // table was full for one (stacks-dropped=1). main.cpp:60 has none at all.
  std::string text =
      "samples\tlocation=/src/app/main.cpp:42\tcount=10\tfunction=consume\n"
      "samples\tlocation=/src/app/main.cpp:60\tcount=4\n"
      "stack\tframes=/src/app/main.cpp:30;/src/app/main.cpp:42\tcount=9\n"
      "sampling\tsamples=20\tin-scope=14\tlost=0\tstacks-dropped=5\n";
  EXPECT_EQ(collapsed(text),
            "[stack not recorded];consume (main.cpp:42) 1\n"
            "[stack not recorded];main.cpp:60 4\n"
            "main.cpp:30;consume (main.cpp:42) 9\n");
  ExportedStacks s = exported_stacks(read(text));
  EXPECT_EQ(s.not_recorded, 5u);
  EXPECT_EQ(s.samples, 14u);
}

TEST(ExportCollapsed, ACalleeCallingBackChargesTheCallback) {
  // A comparator called back from qsort: its line is the innermost in-scope
  // frame, so its samples are all in the stack, none unrecorded.
  std::string text =
      "samples\tlocation=/src/main.c:12\tcount=3\tfunction=compare\n"
      "stack\tframes=/src/main.c:30;qsort [libc.so.6];/src/main.c:12\tcount=3\n";
  EXPECT_EQ(collapsed(text), "main.c:30;qsort [libc.so.6];compare (main.c:12) 3\n");
}

TEST(ExportCollapsed, SystemProgramsStayOnInScopeFramesOnly) {
  std::string text =
      "samples\tlocation=/src/server.c:42 [server]\tcount=3\tfunction=handle\n"
      "samples\tlocation=/src/server.c:42 [client]\tcount=1\tfunction=handle\n"
      "stack\tframes=/src/server.c:10 [server];/src/server.c:42 [server];memcpy [libc.so.6]\tcount=3\n"
      "stack\tframes=/src/server.c:42 [client]\tcount=1\n";
  EXPECT_EQ(collapsed(text),
            "handle (server.c:42) [client] 1\n"
            "server.c:10 [server];handle (server.c:42) [server];memcpy [libc.so.6] 3\n");
}

TEST(ExportCollapsed, OddFramesKeepTheirNames) {
  std::string text =
      "samples\tlocation=/usr/lib/libfoo.so:bar\tcount=2\n"
      "stack\tframes=/src/a.c:5;/usr/lib/libfoo.so:bar;0x1f40 [libbaz.so]\tcount=2\n"
      // Brackets in a demangled callee: LIBRARY is after the last " [".
      "stack\tframes=/src/a.c:5;std::vector<int>::operator[](unsigned long) [libstdc++.so.6]\tcount=1\n"
      // Empty frames are skipped.
      "stack\tframes=/src/a.c:5;;/src/a.c:6\tcount=1\n";
  EXPECT_EQ(collapsed(text),
            "a.c:5;a.c:6 1\n"
            "a.c:5;bar (libfoo.so);0x1f40 [libbaz.so] 2\n"
            "a.c:5;std::vector<int>::operator[](unsigned long) [libstdc++.so.6] 1\n");
}

TEST(ExportCollapsed, LabelsThatCollideAreOneLine) {
  std::string text =
      "stack\tframes=/a/main.cpp:1\tcount=2\n"
      "stack\tframes=/b/main.cpp:1\tcount=3\n";
  EXPECT_EQ(collapsed(text), "main.cpp:1 5\n");
}

TEST(ExportCollapsed, NoStacksIsEmpty) {
  ExportedStacks s = exported_stacks(read("samples\tlocation=/src/a.c:1\tcount=4\n"));
  EXPECT_TRUE(s.stacks.empty());
  EXPECT_TRUE(s.frames.empty());
}

TEST(ExportCollapsed, ParsesFramesIntoParts) {
  Profile p = read("samples\tlocation=/src/a.c:7 [prog]\tcount=1\tfunction=f\n");
  ExportFrame line = parse_export_frame("/src/a.c:7 [prog]", p);
  EXPECT_EQ(line.kind, ExportFrame::Kind::Line);
  EXPECT_EQ(line.file, "/src/a.c");
  EXPECT_EQ(line.line, 7u);
  EXPECT_EQ(line.function, "f");
  EXPECT_EQ(line.program, "prog");
  ExportFrame callee = parse_export_frame("operator new(unsigned long) [libstdc++.so.6]", p);
  EXPECT_EQ(callee.kind, ExportFrame::Kind::Callee);
  EXPECT_EQ(callee.function, "operator new(unsigned long)");
  EXPECT_EQ(callee.library, "libstdc++.so.6");
  EXPECT_TRUE(callee.program.empty());
}

}  // namespace
}  // namespace coz::analysis
