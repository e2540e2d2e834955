// LineMap on the fixtures (test/fixtures): addresses found independently of
// our DWARF reader (symbol table, dlsym, readelf) must map to the marked lines.
#include "line_map.h"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "line_fixtures.h"

namespace coz {
namespace {

using test::fixture;
using test::marker_line;

const SourceFilter everything = [](std::string_view) { return true; };

std::string canonical_source(const char* rel) {
  return std::filesystem::canonical(test::fixture_source(rel)).string();
}

struct Loaded {
  LineMap map;
  ObjectLines result;
};

std::unique_ptr<Loaded> load(const std::string& name, uintptr_t bias = 0, const SourceFilter& filter = everything) {
  auto l = std::make_unique<Loaded>();
  l->result = l->map.add_object(fixture(name), bias, filter);
  l->map.finalize();
  return l;
}

bool names(const SourceLine* line, const char* source, std::string_view marker) {
  return line && std::filesystem::equivalent(line->file, test::fixture_source(source)) &&
         line->line == marker_line(source, marker);
}

class Executables : public testing::TestWithParam<std::string> {};

// The symbol table gives the function's entry independently of the line
// tables; at -O0 GCC attributes the entry to the line of the function's '{'.
TEST_P(Executables, FunctionEntryMapsToItsOpeningLine) {
  for (uintptr_t bias : {uintptr_t{0}, uintptr_t{0x5555'0000'0000}}) {
    auto l = load(GetParam(), bias);
    ASSERT_EQ(l->result.error, "");
    EXPECT_TRUE(l->result.has_debug_info);
    EXPECT_GT(l->result.ranges, 10u);
    EXPECT_GT(l->result.lines, 10u);
    EXPECT_EQ(l->map.range_count(), l->result.ranges);  // one object: nothing merged across
    uint64_t work = test::symbol_value(fixture(GetParam()), "fixture_work");
    uint64_t helper = test::symbol_value(fixture(GetParam()), "helper_add");
    EXPECT_TRUE(names(l->map.find(work + bias), "main.c", "work_open")) << std::hex << work;
    EXPECT_TRUE(names(l->map.find(helper + bias), "sub/helper.c", "helper_open"));
    EXPECT_EQ(l->map.find(work), bias ? nullptr : l->map.find(work + bias)) << "bias not applied";
    EXPECT_EQ(l->map.find(0), nullptr);
    EXPECT_EQ(l->map.find(UINTPTR_MAX), nullptr);
  }
}

TEST_P(Executables, FindLineBySuffix) {
  auto l = load(GetParam());
  uint32_t loop = marker_line("main.c", "loop_body");
  SourceLine* by_name = l->map.find_line("main.c", loop);
  ASSERT_NE(by_name, nullptr);
  EXPECT_EQ(by_name->line, loop);
  EXPECT_EQ(by_name, l->map.find_line(canonical_source("main.c"), loop));
  EXPECT_EQ(by_name, l->map.find_line("lines/main.c", loop));
  EXPECT_EQ(l->map.find_line("ain.c", loop), nullptr);  // a suffix must start after '/'
  EXPECT_EQ(l->map.find_line("main.c", 100000), nullptr);
  EXPECT_NE(l->map.find_line("sub/helper.h", marker_line("sub/helper.h", "header_inline")), nullptr);
  EXPECT_EQ(by_name->name(), canonical_source("main.c") + ":" + std::to_string(loop));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Executables,
                         testing::Values("lines_dwarf4_nopie", "lines_dwarf4_pie", "lines_dwarf5_pie",
                                         "lines_dwarf5_nopie", "lines_dwarf4_64", "lines_dwarf3", "lines_mixed"));

// A function removed by --gc-sections keeps its line-table sequence,
// relocated to 0; it must not claim low addresses (in a PIE or a library,
// the ELF header's, at the load bias). (ld.bfd relocates a discarded COMDAT
// duplicate, sum_of_squares here, onto the kept copy instead: same rows twice.)
TEST(LineMap, GarbageCollectedSequencesAreDropped) {
  auto l = load("lines_cpp");
  size_t at_zero = 0;
  for (const auto& row : test::readelf_rows(fixture("lines_cpp"))) {
    if (row.address < 0x1000 && !row.end_sequence) {
      ++at_zero;
      EXPECT_EQ(l->map.find(row.address), nullptr) << std::hex << row.address;
    }
  }
  EXPECT_GT(at_zero, 0u) << "the fixture no longer has a discarded sequence";
  EXPECT_EQ(l->map.find_line("cpp_other.cpp", marker_line("cpp_other.cpp", "gc_removed")), nullptr);
}

// Every readelf row that covers bytes (its successor has a higher address)
// must map to its line; all lookups inside a range give the same line.
TEST(LineMap, EveryRowMapsBackLikeReadelf) {
  for (const std::string& name : test::debug_fixtures()) {
    SCOPED_TRACE(name);
    auto l = load(name);
    std::vector<test::ReadelfRow> rows = test::readelf_rows(fixture(name));
    ASSERT_FALSE(rows.empty());
    size_t checked = 0;
    for (size_t i = 0; i + 1 < rows.size(); ++i) {
      const auto& row = rows[i];
      const auto& next = rows[i + 1];
      if (row.end_sequence || row.line == 0 || next.address <= row.address || row.address < 0x1000) continue;
      for (uint64_t a : {row.address, (row.address + next.address) / 2, next.address - 1}) {
        SourceLine* line = l->map.find(a);
        ASSERT_NE(line, nullptr) << std::hex << a;
        ASSERT_EQ(line->line, row.line) << std::hex << a;
        ASSERT_EQ(std::filesystem::path(line->file).filename(), row.file) << std::hex << a;
      }
      ++checked;
    }
    EXPECT_GT(checked, 5u);
  }
}

// The library's address comes from the dynamic loader, not from our reader.
TEST(LineMap, SharedLibraryAtItsLoadBias) {
  void* handle = dlopen(fixture("liblines_shared.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  void* fn = dlsym(handle, "fixture_lib_work");
  ASSERT_NE(fn, nullptr);
  link_map* lm = nullptr;
  ASSERT_EQ(dlinfo(handle, RTLD_DI_LINKMAP, &lm), 0);
  ASSERT_NE(lm->l_addr, 0u);

  auto l = load("liblines_shared.so", lm->l_addr);
  ASSERT_EQ(l->result.error, "");
  EXPECT_TRUE(names(l->map.find(reinterpret_cast<uintptr_t>(fn)), "lib.c", "lib_open"));
  EXPECT_NE(l->map.find_line("lib.c", marker_line("lib.c", "lib_loop")), nullptr);
  dlclose(handle);
}

TEST(LineMap, SourceFilterExcludesFiles) {
  auto no_helper = [](std::string_view f) { return f.find("/sub/") == std::string_view::npos; };
  auto all = load("lines_dwarf5_pie");
  auto l = load("lines_dwarf5_pie", 0, no_helper);
  EXPECT_LT(l->result.ranges, all->result.ranges);
  EXPECT_LT(l->result.lines, all->result.lines);
  EXPECT_EQ(l->map.find(test::symbol_value(fixture("lines_dwarf5_pie"), "helper_add")), nullptr);
  EXPECT_EQ(l->map.find_line("sub/helper.c", marker_line("sub/helper.c", "helper_body")), nullptr);
  EXPECT_NE(l->map.find_line("main.c", marker_line("main.c", "loop_body")), nullptr);
  for (const SourceLine& line : l->map.lines()) EXPECT_TRUE(no_helper(line.file)) << line.file;

  auto none = load("lines_dwarf5_pie", 0, [](std::string_view) { return false; });
  EXPECT_EQ(none->result.ranges, 0u);
  EXPECT_EQ(none->map.find(test::symbol_value(fixture("lines_dwarf5_pie"), "fixture_work")), nullptr);
}

// Every byte of .text: a line found by address is found again by name, and
// rows with line 0 (compiler-generated code) are not attributed.
TEST(LineMap, EveryAddressMapsBackByName) {
  auto l = load("lines_cpp");
  std::string error;
  auto elf = ElfFile::open(fixture("lines_cpp"), error);
  ASSERT_TRUE(elf) << error;
  const auto& text = elf->elf().get_section(".text").get_hdr();
  size_t mapped = 0;
  for (uint64_t a = text.addr; a < text.addr + text.size; ++a) {
    SourceLine* line = l->map.find(a);
    if (!line) continue;
    ++mapped;
    ASSERT_NE(line->line, 0u);
    ASSERT_EQ(l->map.find_line(line->file, line->line), line) << line->name();
  }
  EXPECT_GT(mapped, text.size / 4);
  SourceLine* loop = l->map.find_line("cpp_template.h", marker_line("cpp_template.h", "template_loop"));
  ASSERT_NE(loop, nullptr);
  EXPECT_TRUE(loop->file.starts_with("/")) << loop->file;
  bool library_header = false;
  for (const SourceLine& line : l->map.lines()) {
    EXPECT_NE(line.line, 0u) << line.file;
    library_header |= line.file.ends_with("/bits/stl_vector.h") && line.file.starts_with("/usr/");
  }
  EXPECT_TRUE(library_header) << "inlined code from /usr/include/c++ is kept by an all-pass filter";
}

TEST(LineMap, TwoObjectsAndAFinalizeBetween) {
  LineMap map;
  auto a = map.add_object(fixture("lines_dwarf5_nopie"), 0, everything);
  map.finalize();
  size_t first = map.range_count();
  uint64_t work = test::symbol_value(fixture("lines_dwarf5_pie"), "fixture_work");
  uintptr_t bias = 0x7f00'0000'0000;
  EXPECT_EQ(map.find(work + bias), nullptr);
  auto b = map.add_object(fixture("lines_dwarf5_pie"), bias, everything);
  EXPECT_EQ(map.find(work + bias), nullptr) << "visible before finalize()";
  map.finalize();
  EXPECT_EQ(map.range_count(), first + b.ranges);
  EXPECT_TRUE(names(map.find(work + bias), "main.c", "work_open"));
  EXPECT_TRUE(names(map.find(test::symbol_value(fixture("lines_dwarf5_nopie"), "fixture_work")), "main.c", "work_open"));
  // Same file:line in both binaries: one SourceLine, counted in each object.
  EXPECT_EQ(map.find(work + bias), map.find(test::symbol_value(fixture("lines_dwarf5_nopie"), "fixture_work")));
  EXPECT_EQ(a.lines, b.lines);
}

TEST(LineMap, NoDebugInfo) {
  auto l = load("lines_stripped");
  EXPECT_FALSE(l->result.has_debug_info);
  EXPECT_EQ(l->result.error, "");
  EXPECT_EQ(l->result.ranges, 0u);
  EXPECT_EQ(l->map.find(test::symbol_value(fixture("lines_stripped"), "fixture_work")), nullptr);
}

TEST(LineMap, NotElfOrMissingIsAnError) {
  for (std::string path : {test::fixture_source("main.c"), fixture("does_not_exist"), std::string("/")}) {
    LineMap map;
    ObjectLines r = map.add_object(path, 0, everything);
    EXPECT_NE(r.error, "") << path;
    EXPECT_NE(r.error.find(path), std::string::npos) << r.error;
    EXPECT_EQ(r.ranges, 0u);
    map.finalize();
    EXPECT_EQ(map.find(0x1000), nullptr);
  }
}

TEST(LineMap, EmptyMap) {
  LineMap map;
  EXPECT_EQ(map.find(0x1000), nullptr);
  EXPECT_EQ(map.find_line("main.c", 1), nullptr);
  map.finalize();
  EXPECT_EQ(map.range_count(), 0u);
  EXPECT_EQ(map.find(0x1000), nullptr);
}

}  // namespace
}  // namespace coz
