// Our .debug_line reader against binutils (readelf) on real GCC 12 output,
// plus hand-built units for what GCC does not emit and damaged data.
#include "dwarf_lines.h"

#include <filesystem>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "line_fixtures.h"

namespace coz {
namespace {

using test::fixture;
using test::fixture_source;

std::vector<LineTable> read_fixture(const std::string& name, std::optional<ElfFile>& elf) {
  std::string error;
  elf = ElfFile::open(fixture(name), error);
  EXPECT_TRUE(elf) << error;
  return elf ? read_line_tables(test::sections_of(*elf)) : std::vector<LineTable>{};
}

class EveryFixture : public testing::TestWithParam<std::string> {};

// The strongest check: every row, in order, as readelf decodes it.
TEST_P(EveryFixture, RowsMatchReadelf) {
  std::optional<ElfFile> elf;
  std::vector<LineTable> tables = read_fixture(GetParam(), elf);
  std::vector<test::ReadelfRow> expected = test::readelf_rows(fixture(GetParam()));
  ASSERT_GT(expected.size(), 10u) << "readelf gave no rows: is binutils installed?";

  size_t n = 0;
  for (const LineTable& table : tables) {
    EXPECT_EQ(table.error, "");
    for (const LineRow& row : table.rows) {
      ASSERT_LT(n, expected.size()) << "more rows than readelf";
      const test::ReadelfRow& want = expected[n++];
      ASSERT_EQ(row.address, want.address) << "row " << n;
      ASSERT_EQ(row.end_sequence, want.end_sequence) << "row " << n;
      if (row.end_sequence) continue;
      ASSERT_EQ(row.line, want.line) << "row " << n << " at " << std::hex << row.address;
      ASSERT_NE(row.file, LineTable::no_file);
      EXPECT_EQ(std::filesystem::path(table.files[row.file]).filename(), want.file) << "row " << n;
    }
  }
  EXPECT_EQ(n, expected.size()) << "fewer rows than readelf";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EveryFixture, testing::ValuesIn(test::debug_fixtures()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Sources are compiled by relative names (../main.c from sub/ for DWARF 3), so
// this checks the joins with the compilation directory and the include directories.
TEST(DwarfLines, FileNamesAreAbsoluteNormalizedAndExist) {
  namespace fs = std::filesystem;
  for (const char* name : {"lines_dwarf3", "lines_dwarf4_nopie", "lines_dwarf4_64", "lines_dwarf5_pie", "lines_mixed"}) {
    SCOPED_TRACE(name);
    std::optional<ElfFile> elf;
    std::set<fs::path> files;
    for (const LineTable& table : read_fixture(name, elf)) {
      for (const LineRow& row : table.rows) {
        if (!row.end_sequence) files.insert(fs::path(table.files.at(row.file)));
      }
    }
    for (const char* source : {"main.c", "sub/helper.c", "sub/helper.h"}) {
      fs::path want = fs::canonical(fixture_source(source));
      bool found = false;
      for (const fs::path& f : files) {
        EXPECT_TRUE(f.is_absolute()) << f;
        EXPECT_EQ(f, f.lexically_normal()) << f;
        std::error_code ec;
        if (fs::equivalent(f, want, ec)) found = true;
      }
      EXPECT_TRUE(found) << source << " not among the files of the rows";
    }
  }
}

TEST(DwarfLines, JoinPathNormalizes) {
  EXPECT_EQ(join_path("/src/proj", "main.c"), "/src/proj/main.c");
  EXPECT_EQ(join_path("/src/proj/", "./sub//x.c"), "/src/proj/sub/x.c");
  EXPECT_EQ(join_path("/src/proj/sub", "../main.c"), "/src/proj/main.c");
  EXPECT_EQ(join_path("/src/proj", "a/b/../../c.c"), "/src/proj/c.c");
  EXPECT_EQ(join_path("/src", "/usr/include/./stdio.h"), "/usr/include/stdio.h");
  EXPECT_EQ(join_path("/", "../../x.c"), "/x.c");
  EXPECT_EQ(join_path("", "../x.c"), "../x.c");
  EXPECT_EQ(join_path("rel", "../../x.c"), "../x.c");
  EXPECT_EQ(join_path("", ""), ".");
}

// --- hand-built units: DWARF 2 and 64-bit DWARF (GCC 12 emits neither here) ---

struct Bytes {
  std::vector<uint8_t> b;
  Bytes& u8(uint8_t v) { return b.push_back(v), *this; }
  Bytes& uint(uint64_t v, int size) {
    for (int i = 0; i < size; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Bytes& uleb(uint64_t v) {
    do {
      uint8_t byte = v & 0x7f;
      v >>= 7;
      b.push_back(byte | (v ? 0x80 : 0));
    } while (v);
    return *this;
  }
  Bytes& sleb(int64_t v) {
    for (bool more = true; more;) {
      uint8_t byte = v & 0x7f;
      v >>= 7;
      more = !((v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40)));
      b.push_back(byte | (more ? 0x80 : 0));
    }
    return *this;
  }
  Bytes& str(std::string_view s) {
    b.insert(b.end(), s.begin(), s.end());
    return u8(0);
  }
  Bytes& append(const Bytes& o) {
    b.insert(b.end(), o.b.begin(), o.b.end());
    return *this;
  }
};

/// A version 2 unit (no maximum_operations_per_instruction) with an opcode
/// base of 14: opcode 13 is a standard opcode we do not know, taking 2 ULEBs.
std::vector<uint8_t> v2_unit(bool dwarf64) {
  Bytes header_rest;
  header_rest.u8(1).u8(1).u8(static_cast<uint8_t>(-5)).u8(14).u8(14);  // min_inst, is_stmt, line_base, line_range, opcode_base
  for (uint8_t len : {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 2}) header_rest.u8(len);
  header_rest.str("inc").u8(0);                                         // include_directories
  header_rest.str("a.c").uleb(0).uleb(0).uleb(0).str("b.h").uleb(1).uleb(0).uleb(0).u8(0);  // file_names

  Bytes program;
  program.u8(0).uleb(9).u8(2).uint(0x1000, 8);  // DW_LNE_set_address 0x1000
  program.u8(3).sleb(9).u8(1);                  // advance_line 9 -> 10; copy
  program.u8(13).uleb(300).uleb(5);             // unknown standard opcode: skipped
  program.u8(2).uleb(4).u8(4).uleb(2).u8(1);    // advance_pc 4; set_file 2 (b.h); copy
  program.u8(0).uleb(13).u8(3).str("/abs/c.c").uleb(0).uleb(0).uleb(0);  // DW_LNE_define_file -> file 3
  program.u8(4).uleb(3);                        // set_file 3
  program.u8(0).uleb(2).u8(4).uleb(7);          // DW_LNE_set_discriminator
  program.u8(14 + 3 * 14 + 7);                  // special: address += 3, line += -5 + 7 = 2 -> 12
  program.u8(8);                                // const_add_pc: (255 - 14) / 14 = 17
  program.u8(9).uint(2, 2);                     // fixed_advance_pc 2
  program.u8(0).uleb(1).u8(1);                  // end_sequence at 0x1000 + 4 + 3 + 17 + 2

  Bytes after_length;
  after_length.uint(2, 2).uint(header_rest.b.size(), dwarf64 ? 8 : 4).append(header_rest).append(program);
  Bytes unit;
  if (dwarf64) unit.uint(0xffffffff, 4).uint(after_length.b.size(), 8);
  else unit.uint(after_length.b.size(), 4);
  return unit.append(after_length).b;
}

void expect_v2_rows(const std::vector<LineTable>& tables) {
  ASSERT_EQ(tables.size(), 1u);
  const LineTable& t = tables[0];
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.version, 2u);
  ASSERT_EQ(t.files, (std::vector<std::string>{"a.c", "inc/b.h", "/abs/c.c"}));
  ASSERT_EQ(t.rows.size(), 4u);
  auto is = [](const LineRow& r, uint64_t address, uint32_t file, uint32_t line, bool end) {
    return r.address == address && r.end_sequence == end && (end || (r.file == file && r.line == line));
  };
  EXPECT_TRUE(is(t.rows[0], 0x1000, 0, 10, false));
  EXPECT_TRUE(is(t.rows[1], 0x1004, 1, 10, false));
  EXPECT_TRUE(is(t.rows[2], 0x1007, 2, 12, false));
  EXPECT_TRUE(is(t.rows[3], 0x1000 + 4 + 3 + 17 + 2, 0, 0, true));
}

TEST(DwarfLines, Version2UnitWithUnknownOpcodeAndDefineFile) {
  std::vector<uint8_t> bytes = v2_unit(false);
  expect_v2_rows(read_line_tables(DwarfSections{.line = bytes}));
}

TEST(DwarfLines, SixtyFourBitFormat) {
  std::vector<uint8_t> bytes = v2_unit(true);
  expect_v2_rows(read_line_tables(DwarfSections{.line = bytes}));
}

TEST(DwarfLines, BadUnitStopsOnlyItself) {
  std::vector<uint8_t> good = v2_unit(false);
  std::vector<uint8_t> bytes = good;
  bytes[4] = 9;  // unit 1: version 9, unknown; its length still leads to unit 2
  bytes.insert(bytes.end(), good.begin(), good.end());
  std::vector<LineTable> tables = read_line_tables(DwarfSections{.line = bytes});
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_NE(tables[0].error.find("version 9"), std::string::npos) << tables[0].error;
  EXPECT_TRUE(tables[0].rows.empty());
  expect_v2_rows({tables[1]});
}

// A SLEB128 whose last byte lands at bit 56 with its sign bit set: the sign
// extension from bit 63 negated INT64_MIN, which UBSan stops on (found by
// test/fuzz/elf_reader_fuzz.cpp; this check fails under run-tests.sh's UBSan build).
TEST(DwarfReader, SlebSignExtendsFromTheLastBit) {
  const std::vector<uint8_t> bytes = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40};
  dwarf_reader::Cursor cur(bytes);
  EXPECT_EQ(cur.sleb(), static_cast<int64_t>(0xc000'0000'0000'0000u));
  EXPECT_TRUE(cur.ok());
  EXPECT_TRUE(cur.at_end());
}

// A DWARF 5 directory table of entries with no formats reads no bytes per
// entry: its count (here 2^62) was looped over, growing a vector of paths
// to gigabytes (found by test/fuzz/elf_reader_fuzz.cpp).
TEST(DwarfLines, EntriesThatHoldNothingAreAnErrorNotAHang) {
  Bytes header_rest;
  header_rest.u8(1).u8(1).u8(1).u8(static_cast<uint8_t>(-5)).u8(14).u8(1);  // min_inst, max_ops, is_stmt, line_base, line_range, opcode_base
  header_rest.u8(0).uleb(uint64_t{1} << 62);                                  // directories: no formats, 2^62 entries
  header_rest.u8(0).uleb(0);                                                  // file names: none
  Bytes after_length;
  after_length.uint(5, 2).u8(8).u8(0).uint(header_rest.b.size(), 4).append(header_rest);
  Bytes unit;
  unit.uint(after_length.b.size(), 4).append(after_length);
  std::vector<LineTable> tables = read_line_tables(DwarfSections{.line = unit.b});
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_NE(tables[0].error, "");
  EXPECT_TRUE(tables[0].files.empty());
}

// Truncation at every length and random corruption: never a crash or a hang,
// only whole sequences, and an error for a cut unit.
TEST(DwarfLines, DamagedDataIsReportedNotFatal) {
  std::string error;
  auto elf = ElfFile::open(fixture("lines_dwarf5_pie"), error);
  ASSERT_TRUE(elf) << error;
  DwarfSections sections = test::sections_of(*elf);
  std::vector<uint8_t> line(sections.line.begin(), sections.line.end());
  auto check = [&](const std::vector<uint8_t>& bytes) {
    DwarfSections s = sections;
    s.line = bytes;
    for (const LineTable& t : read_line_tables(s)) {
      if (!t.rows.empty()) {
        EXPECT_TRUE(t.rows.back().end_sequence);
      }
    }
  };
  for (size_t len = 0; len < line.size(); ++len) {
    std::vector<uint8_t> cut(line.begin(), line.begin() + static_cast<ptrdiff_t>(len));
    check(cut);
    if (len > 0 && len < 40) {
      auto tables = read_line_tables(DwarfSections{.line = cut, .line_str = sections.line_str});
      ASSERT_FALSE(tables.empty());
      EXPECT_NE(tables.back().error, "") << "cut at " << len;
    }
  }
  std::mt19937 rng(42);
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> bad = line;
    for (int k = 0; k < 4; ++k) bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    check(bad);
  }
}

}  // namespace
}  // namespace coz
