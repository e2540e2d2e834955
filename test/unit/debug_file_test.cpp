// Separate debug files (test/fixtures: objcopy --only-keep-debug, a fixed
// build ID, .gnu_debuglink in three places and one with a wrong CRC).
#include "debug_file.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "line_fixtures.h"
#include "line_map.h"

namespace coz {
namespace {

using test::fixture;

const SourceFilter everything = [](std::string_view) { return true; };
const std::string debug_root = fixture("debug-root");

std::string found_for(const std::string& name, const std::string& root = debug_root) {
  std::string error;
  auto elf = ElfFile::open(fixture(name), error);
  if (!elf) throw std::runtime_error(error);
  return find_debug_file(*elf, fixture(name), root);
}

TEST(DebugFile, ByBuildId) {
  std::string error;
  auto elf = ElfFile::open(fixture("lines_buildid"), error);
  ASSERT_TRUE(elf) << error;
  std::span<const uint8_t> id = elf->build_id();
  ASSERT_EQ(id.size(), 20u);
  EXPECT_EQ(id[0], 0x01);
  EXPECT_EQ(id[19], 0x67);
  EXPECT_EQ(found_for("lines_buildid"), debug_root + "/.build-id/01/23456789abcdef0123456789abcdef01234567.debug");
  EXPECT_EQ(found_for("lines_buildid", fixture("no-such-root")), "");
}

TEST(DebugFile, ByDebugLink) {
  EXPECT_EQ(found_for("lines_debuglink"), fixture("lines_debuglink.debug"));
  EXPECT_EQ(found_for("lines_debuglink_sub"), fixture(".debug/lines_debuglink_sub.debug"));
  EXPECT_EQ(found_for("lines_debuglink_root"), debug_root + FIXTURE_DIR + "/lines_debuglink_root.debug");
  EXPECT_EQ(found_for("lines_debuglink_root", fixture("no-such-root")), "");
}

TEST(DebugFile, WrongCrcIsRefused) {
  uint32_t crc = 0;
  ASSERT_TRUE(file_crc32(fixture("lines_debuglink_badcrc.debug"), crc));
  EXPECT_EQ(found_for("lines_debuglink_badcrc"), "");
}

TEST(DebugFile, NoneForABinaryWithoutLinks) {
  EXPECT_EQ(found_for("lines_stripped"), "");  // no build ID file under the root, no link
}

TEST(DebugFile, Crc32OfAKnownFile) {
  // zlib's CRC-32 of "123456789" is the standard check value 0xcbf43926.
  std::string path = testing::TempDir() + "/crc_check";
  {
    std::ofstream(path) << "123456789";
  }
  uint32_t crc = 0;
  ASSERT_TRUE(file_crc32(path, crc));
  EXPECT_EQ(crc, 0xcbf43926u);
  EXPECT_FALSE(file_crc32(fixture("does_not_exist"), crc));
}

class SeparateDebugFile : public testing::TestWithParam<std::string> {};

// Lines come from the debug file, at the binary's addresses and load bias.
TEST_P(SeparateDebugFile, LinesAsFromTheUnstrippedBinary) {
  const std::string original = GetParam() == "lines_buildid" ? "lines_buildid_full" : "lines_dwarf5_pie";
  for (uintptr_t bias : {uintptr_t{0}, uintptr_t{0x5555'0000'0000}}) {
    LineMap map;
    ObjectLines r = map.add_object(fixture(GetParam()), bias, everything, debug_root);
    map.finalize();
    ASSERT_EQ(r.error, "");
    EXPECT_TRUE(r.has_debug_info);
    EXPECT_FALSE(r.function_level);
    EXPECT_NE(r.debug_file, "");
    LineMap reference;
    ObjectLines expected = reference.add_object(fixture(original), bias, everything);
    reference.finalize();
    EXPECT_EQ(r.ranges, expected.ranges);
    EXPECT_EQ(r.lines, expected.lines);
    uint64_t work = test::symbol_value(fixture(original), "fixture_work") + bias;
    ASSERT_NE(map.find(work), nullptr);
    EXPECT_EQ(map.find(work)->name(), reference.find(work)->name());
    EXPECT_EQ(map.find(work)->function, "fixture_work");
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SeparateDebugFile,
                         testing::Values("lines_buildid", "lines_debuglink", "lines_debuglink_sub",
                                         "lines_debuglink_root"));

TEST(SeparateDebugFile, WrongCrcFallsBackToSymbols) {
  LineMap map;
  ObjectLines r = map.add_object(fixture("lines_debuglink_badcrc"), 0, everything, debug_root);
  EXPECT_FALSE(r.has_debug_info);
  EXPECT_TRUE(r.function_level);
  EXPECT_EQ(r.debug_file, "");
}

// dwz's supplementary files (test/fixtures: dwz -m): a relative link next to
// the file, Debian's absolute /usr/lib/debug/.dwz/... under the debug root,
// and a file of the right name but another build refused.
std::string supplementary_for(const std::string& path, const std::string& root = debug_root) {
  std::string error;
  auto elf = ElfFile::open(path, error);
  if (!elf) throw std::runtime_error(error);
  return find_supplementary_file(*elf, path, root);
}

TEST(SupplementaryFile, FoundAndChecked) {
  if (!std::filesystem::exists(fixture("dwz_gnu5"))) GTEST_SKIP() << "dwz was not found when the fixtures were built";
  EXPECT_EQ(supplementary_for(fixture("dwz_gnu5")), fixture("dwz_gnu5.sup"));
  EXPECT_EQ(supplementary_for(fixture("dwz_sup5")), fixture("dwz_sup5.sup"));
  EXPECT_EQ(supplementary_for(fixture("lines_dwarf5_pie")), "") << "no link";
  std::string debug = debug_root + "/.build-id/89/abcdef0123456789abcdef0123456789abcdef.debug";
  EXPECT_EQ(supplementary_for(debug), debug_root + "/.dwz/coz-fixtures.debug");
  EXPECT_EQ(supplementary_for(debug, fixture("no-such-root")), "");

  std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "coz-dwz-other";
  std::filesystem::create_directories(dir);
  auto copy = std::filesystem::copy_options::overwrite_existing;
  std::filesystem::copy_file(fixture("dwz_gnu5"), dir / "dwz_gnu5", copy);
  std::filesystem::copy_file(fixture("dwz_gnu4.sup"), dir / "dwz_gnu5.sup", copy);  // another build's
  EXPECT_EQ(supplementary_for((dir / "dwz_gnu5").string()), "");
  std::filesystem::copy_file(fixture("dwz_gnu5.sup"), dir / "dwz_gnu5.sup", copy);
  EXPECT_EQ(supplementary_for((dir / "dwz_gnu5").string()), (dir / "dwz_gnu5.sup").string());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace coz
