// DwarfScopes on the inline fixtures (test/fixtures/lines/inline_main.cpp):
// the scopes around an address, found independently through the symbol table
// and readelf's line rows, must be the inlined calls the source makes.
#include "dwarf_scopes.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "dwarf_lines.h"
#include "line_fixtures.h"

namespace coz {
namespace {

using test::fixture;
using test::marker_line;

struct Opened {
  ElfFile elf;
  DwarfSections sections;
  std::vector<LineTable> tables;
};

std::unique_ptr<Opened> open_fixture(const std::string& name) {
  std::string error;
  auto elf = ElfFile::open(fixture(name), error);
  if (!elf) throw std::runtime_error(error);
  auto o = std::unique_ptr<Opened>(new Opened{std::move(*elf), {}, {}});
  o->sections = test::sections_of(o->elf);
  o->tables = read_line_tables(o->sections);
  return o;
}

/// The first readelf row of `file` inside `function`.
uint64_t first_row_of(const std::string& binary, const char* function, const char* file) {
  for (const auto& [row, end] : test::rows_in(fixture(binary), test::symbol_range(fixture(binary), function))) {
    if (row.file == file) return row.address;
  }
  throw std::runtime_error(std::string("no row of ") + file + " in " + function);
}

class Scopes : public testing::TestWithParam<std::string> {};

TEST_P(Scopes, SegmentsAreSortedDisjointAndValid) {
  auto o = open_fixture(GetParam());
  DwarfScopes scopes(o->sections);
  size_t loaded = 0;
  for (const LineTable& table : o->tables) {
    if (!scopes.load_unit(table.offset)) continue;
    ++loaded;
    const auto& segments = scopes.segments();
    EXPECT_FALSE(segments.empty());
    for (size_t i = 0; i < segments.size(); ++i) {
      ASSERT_LT(segments[i].begin, segments[i].end);
      ASSERT_LT(segments[i].scope, scopes.scopes().size());
      if (i > 0) {
        ASSERT_LE(segments[i - 1].end, segments[i].begin);
      }
      EXPECT_EQ(scopes.innermost(segments[i].begin), segments[i].scope);
      EXPECT_EQ(scopes.innermost(segments[i].end - 1), segments[i].scope);
    }
    for (const DwarfScopes::Scope& s : scopes.scopes()) {
      if (s.parent != DwarfScopes::none) {
        ASSERT_LT(s.parent, scopes.scopes().size());
        EXPECT_EQ(s.depth, scopes.scopes()[s.parent].depth + 1);
      }
      // C++ has no nested functions: only inlined calls have a parent.
      EXPECT_EQ(s.inlined, s.parent != DwarfScopes::none) << "an inlined call outside any function";
    }
  }
  EXPECT_GT(loaded, 0u);
  EXPECT_EQ(scopes.error(), "");
  EXPECT_FALSE(scopes.load_unit(0xfffffff)) << "no unit has that line table";
  EXPECT_TRUE(scopes.scopes().empty());
}

TEST_P(Scopes, InlinedCallsNestAndNameTheirFunctions) {
  auto o = open_fixture(GetParam());
  DwarfScopes scopes(o->sections);
  ASSERT_TRUE(scopes.load_unit(o->tables.front().offset));

  // lib_scale inlined straight into inline_direct.
  uint32_t s = scopes.innermost(first_row_of(GetParam(), "inline_direct", "inline_lib.h"));
  ASSERT_NE(s, DwarfScopes::none);
  const DwarfScopes::Scope& direct = scopes.scopes()[s];
  EXPECT_TRUE(direct.inlined);
  EXPECT_EQ(direct.call_line, marker_line("inline_main.cpp", "direct_call"));
  EXPECT_EQ(scopes.raw_name(s), "_Z9lib_scalell");
  ASSERT_NE(direct.parent, DwarfScopes::none);
  EXPECT_FALSE(scopes.scopes()[direct.parent].inlined);
  EXPECT_EQ(scopes.raw_name(direct.parent), "inline_direct");  // extern "C": no linkage name

  // lib_inner inside lib_outer inside inline_nested.
  bool found_nested = false;
  for (const auto& [row, end] : test::rows_in(fixture(GetParam()), test::symbol_range(fixture(GetParam()), "inline_nested"))) {
    if (row.line != marker_line("lib/inline_lib.h", "lib_inner_body")) continue;
    uint32_t inner = scopes.innermost(row.address);
    ASSERT_NE(inner, DwarfScopes::none);
    if (scopes.raw_name(inner) != "_Z9lib_innerll") continue;
    const DwarfScopes::Scope& in = scopes.scopes()[inner];
    EXPECT_EQ(in.call_line, marker_line("lib/inline_lib.h", "lib_outer_body"));
    ASSERT_NE(in.parent, DwarfScopes::none);
    const DwarfScopes::Scope& outer = scopes.scopes()[in.parent];
    EXPECT_EQ(scopes.raw_name(in.parent), "_Z9lib_outerll");
    EXPECT_TRUE(outer.inlined);
    EXPECT_EQ(outer.call_line, marker_line("inline_main.cpp", "nested_call"));
    EXPECT_EQ(scopes.raw_name(outer.parent), "inline_nested");
    found_nested = true;
  }
  EXPECT_TRUE(found_nested);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Scopes, testing::Values("inline_dwarf5", "inline_dwarf4"));

// LLVM's DWARF 5: names through DW_FORM_strx, ranges through rnglistx, addresses through addrx.
TEST(Scopes, RustUnitsWithIndexedForms) {
  for (const char* name : {"inline_rust5", "inline_rust4"}) {
    SCOPED_TRACE(name);
    if (!std::filesystem::exists(fixture(name))) GTEST_SKIP() << "rustc was not found when the fixtures were built";
    auto o = open_fixture(name);
    DwarfScopes scopes(o->sections);
    test::SymbolRange f = test::symbol_range(fixture(name), "rust_hot_loop");
    bool found = false;
    for (const LineTable& table : o->tables) {
      if (!scopes.load_unit(table.offset)) continue;
      uint32_t s = scopes.innermost(f.begin);
      if (s == DwarfScopes::none) continue;
      while (scopes.scopes()[s].parent != DwarfScopes::none) s = scopes.scopes()[s].parent;
      EXPECT_EQ(scopes.raw_name(s), "rust_hot_loop");
      size_t inlined = 0;
      for (uint64_t a = f.begin; a < f.end; ++a) {
        uint32_t in = scopes.innermost(a);
        inlined += in != DwarfScopes::none && scopes.scopes()[in].inlined;
      }
      EXPECT_GT(inlined, 16u);
      found = true;
    }
    EXPECT_TRUE(found);
    EXPECT_EQ(scopes.error(), "");
  }
}

}  // namespace
}  // namespace coz
