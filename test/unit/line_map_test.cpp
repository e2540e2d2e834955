// LineMap on the fixtures (test/fixtures): addresses found independently of
// our DWARF reader (symbol table, dlsym, readelf) must map to the marked lines.
#include "line_map.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <thread>
#include <algorithm>
#include <atomic>

#include <fmt/format.h>
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

std::unique_ptr<Loaded> load(const std::string& name, uintptr_t bias = 0, const SourceFilter& filter = everything,
                             std::string_view debug_root = default_debug_root) {
  auto l = std::make_unique<Loaded>();
  l->result = l->map.add_object(fixture(name), bias, filter, debug_root);
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
    ASSERT_NE(l->map.find(work + bias), nullptr);
    EXPECT_EQ(l->map.find(work + bias)->function, "fixture_work");
    EXPECT_EQ(l->map.find(helper + bias)->function, "helper_add");
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
                                         "lines_dwarf5_nopie", "lines_dwarf4_64", "lines_dwarf3", "lines_mixed",
                                         "lines_gz"));

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

// --- inlined code (test/fixtures/lines/inline_main.cpp, inline_main.rs) ---

// lib/ stands for a library; /usr/ and /rustc/ are real ones.
const SourceFilter user_code = [](std::string_view f) {
  return f.find("/lines/lib/") == std::string_view::npos && !f.starts_with("/usr/") && !f.starts_with("/rustc/");
};

bool exists(const std::string& path) { return std::filesystem::exists(path); }

class Inlined : public testing::TestWithParam<std::string> {};

// Every readelf row of library code inside `function` must map to the
// in-scope line named by the marker (the outermost call, for nested ones).
void expect_library_rows_map_to(const Loaded& l, const std::string& binary, const char* function,
                                const char* source, const char* marker, const std::string& expected_function) {
  SCOPED_TRACE(function);
  size_t checked = 0;
  for (const auto& [row, end] : test::rows_in(fixture(binary), test::symbol_range(fixture(binary), function))) {
    if (row.file == "inline_main.cpp" || row.file == "inline_user.h") continue;
    for (uint64_t a : {row.address, end - 1}) {
      SourceLine* line = l.map.find(a);
      ASSERT_TRUE(names(line, source, marker)) << std::hex << a << " " << row.file << ":" << std::dec << row.line
                                               << " -> " << (line ? line->name() : "nothing");
      EXPECT_EQ(line->function, expected_function);
    }
    ++checked;
  }
  EXPECT_GT(checked, 0u) << "no inlined library rows: the fixture no longer inlines";
}

TEST_P(Inlined, LibraryCodeIsChargedToTheCallingLine) {
  auto l = load(GetParam(), 0, user_code);
  ASSERT_EQ(l->result.error, "");
  EXPECT_GT(l->result.inlined_ranges, 0u);
  expect_library_rows_map_to(*l, GetParam(), "inline_direct", "inline_main.cpp", "direct_call", "inline_direct");
  // lib_inner's call sites are in lib_outer (out of scope): the call of lib_outer is the line.
  expect_library_rows_map_to(*l, GetParam(), "inline_nested", "inline_main.cpp", "nested_call", "inline_nested");
  // An in-scope inline function between: its own line, in its own function.
  expect_library_rows_map_to(*l, GetParam(), "inline_through_user", "inline_user.h", "user_mid_body",
                             "user_mid(long, long)");
  expect_library_rows_map_to(*l, GetParam(), "_Z10inline_stdRKSt6vectorIlSaIlEE", "inline_main.cpp", "std_call",
                             "inline_std(std::vector<long, std::allocator<long> > const&)");
  for (const SourceLine& line : l->map.lines()) EXPECT_TRUE(user_code(line.file)) << line.name();
}

// Rows in scope keep their own line, whatever the inlining around them.
TEST_P(Inlined, InScopeRowsKeepTheirLine) {
  auto l = load(GetParam(), 0, user_code);
  auto all = load(GetParam());
  EXPECT_EQ(all->result.inlined_ranges, 0u) << "nothing is out of scope";
  size_t checked = 0;
  for (const auto& [row, end] : test::rows_in(fixture(GetParam()), {0x1000, UINT64_MAX})) {
    if (row.line == 0) continue;
    SourceLine* own = all->map.find(row.address);
    ASSERT_NE(own, nullptr);
    EXPECT_EQ(own->line, row.line);
    if (row.file != "inline_main.cpp" && row.file != "inline_user.h") continue;
    SourceLine* line = l->map.find(row.address);
    ASSERT_NE(line, nullptr) << std::hex << row.address;
    EXPECT_EQ(line->line, row.line);
    EXPECT_EQ(line->name(), own->name());
    ++checked;
  }
  EXPECT_GT(checked, 10u);
  SourceLine* loop = l->map.find_line("inline_main.cpp", marker_line("inline_main.cpp", "direct_call"));
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->function, "inline_direct");
}

// Out-of-scope code with no in-scope call site around it is dropped, as before.
TEST_P(Inlined, OutOfLineLibraryCodeIsDropped) {
  auto l = load(GetParam(), 0, user_code);
  test::SymbolRange f = test::symbol_range(fixture(GetParam()), "_Z15lib_not_inlinedl");
  for (uint64_t a = f.begin; a < f.end; ++a) ASSERT_EQ(l->map.find(a), nullptr) << std::hex << a;
  auto all = load(GetParam());
  EXPECT_TRUE(names(all->map.find(f.begin), "lib/inline_lib.h", "lib_not_inlined_body") ||
              names(all->map.find(f.begin), "lib/inline_lib.h", "lib_not_inlined_open"));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Inlined, testing::Values("inline_dwarf5", "inline_dwarf4"));

// Rust: wrapping_mul, slice indexing and the range iterator come from
// /rustc/<hash>/library; LLVM's DWARF 5 reaches them through strx, addrx and rnglistx.
class RustInlined : public testing::TestWithParam<std::string> {};

TEST_P(RustInlined, LibraryCodeIsChargedToTheLoop) {
  if (!exists(fixture(GetParam()))) GTEST_SKIP() << "rustc was not found when the fixtures were built";
  auto l = load(GetParam(), 0, user_code);
  auto all = load(GetParam());
  ASSERT_EQ(l->result.error, "");
  test::SymbolRange f = test::symbol_range(fixture(GetParam()), "rust_hot_loop");
  size_t library_bytes = 0, charged = 0, charged_to_hot = 0;
  for (uint64_t a = f.begin; a < f.end; ++a) {
    SourceLine* own = all->map.find(a);
    if (!own || user_code(own->file)) continue;
    ++library_bytes;
    SourceLine* line = l->map.find(a);
    if (!line) continue;
    ++charged;
    EXPECT_TRUE(line->file.ends_with("/inline_main.rs")) << line->name();
    EXPECT_EQ(line->function, "rust_hot_loop");
    charged_to_hot += line->line == marker_line("inline_main.rs", "rust_hot");
  }
  EXPECT_GT(library_bytes, 16u) << "the fixture no longer inlines library code";
  EXPECT_GE(charged * 10, library_bytes * 9) << charged << " of " << library_bytes << " bytes";
  EXPECT_GT(charged_to_hot, 0u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RustInlined, testing::Values("inline_rust5", "inline_rust4"));

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

// A library unloaded (dlclose), another loaded at the same address: every
// address of the new one maps to its own lines. Different layouts, so
// ranges of the old one start inside ranges of the new one; such a range
// survived, and took the rest of the new range (the existing dlopen test
// loads two libraries of one shape, whose ranges coincide).
TEST(LineMap, ALibraryLoadedWhereAnotherWasReplacesItsRanges) {
  const uintptr_t bias = 0x7f00'0000'0000;
  LineMap map;
  map.add_object(fixture("lines_cpp"), bias, everything);
  map.finalize();
  const std::string second = "lines_dwarf5_pie";
  map.add_object(fixture(second), bias, everything);
  map.finalize();
  std::vector<test::ReadelfRow> rows = test::readelf_rows(fixture(second));
  ASSERT_FALSE(rows.empty());
  size_t checked = 0, wrong = 0;
  std::string first_wrong;
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    const auto& row = rows[i];
    const auto& next = rows[i + 1];
    if (row.end_sequence || row.line == 0 || next.address <= row.address || row.address < 0x1000) continue;
    for (uint64_t a = row.address; a < next.address; ++a) {
      SourceLine* line = map.find(a + bias);
      ++checked;
      bool right = line && line->line == row.line && std::filesystem::path(line->file).filename() == row.file;
      if (!right && wrong++ == 0) {
        first_wrong = fmt::format("{:#x}: {}:{} expected, found {}", a, row.file, row.line, line ? line->name() : "none");
      }
    }
  }
  EXPECT_GT(checked, 100u);
  EXPECT_EQ(wrong, 0u) << wrong << " of " << checked << " addresses of the new library map elsewhere, first "
                       << first_wrong;
}

// --- no debug info: function-level ranges from the symbol table ---

TEST(LineMap, NoDebugInfoFallsBackToFunctionSymbols) {
  auto l = load("lines_stripped");
  EXPECT_FALSE(l->result.has_debug_info) << "the runtime warns on this";
  EXPECT_TRUE(l->result.function_level);
  EXPECT_EQ(l->result.error, "");
  EXPECT_EQ(l->result.inlined_ranges, 0u);
  for (const char* function : {"fixture_work", "helper_add", "main"}) {
    test::SymbolRange f = test::symbol_range(fixture("lines_stripped"), function);
    SourceLine* line = l->map.find(f.begin);
    ASSERT_NE(line, nullptr) << function;
    EXPECT_EQ(line->file, fixture("lines_stripped"));
    EXPECT_EQ(line->line, 0u);
    EXPECT_EQ(line->function, function);
    EXPECT_EQ(line->name(), fixture("lines_stripped") + ":" + function);
    EXPECT_EQ(l->map.find(f.end - 1), line);
    EXPECT_NE(l->map.find(f.end), line);
  }
  EXPECT_EQ(l->result.lines, l->map.lines().size());
  EXPECT_EQ(l->map.find(0), nullptr);
}

TEST(LineMap, FunctionSymbolsAreDemangledAndBiased) {
  uintptr_t bias = 0x5555'0000'0000;
  auto l = load("lines_cpp_stripped", bias);
  ASSERT_TRUE(l->result.function_level);
  test::SymbolRange f = test::symbol_range(fixture("lines_cpp"), "_Z9other_sumRKSt6vectorIlSaIlEE");
  SourceLine* line = l->map.find(f.begin + bias);
  ASSERT_NE(line, nullptr);
  EXPECT_EQ(line->function, "other_sum(std::vector<long, std::allocator<long> > const&)");
  EXPECT_EQ(l->map.find(f.begin), nullptr) << "bias not applied";
  // Two objects can have a function of the same name: one line per binary.
  auto plain = load("lines_stripped");
  EXPECT_NE(plain->map.find(test::symbol_value(fixture("lines_stripped"), "main"))->name(),
            line->name());
}

// strip --strip-all leaves only .dynsym: the exported functions are still found.
TEST(LineMap, DynamicSymbolsWhenSymtabIsGone) {
  auto l = load("liblines_stripped_all.so");
  ASSERT_TRUE(l->result.function_level);
  EXPECT_FALSE(l->result.has_debug_info);
  SourceLine* line = l->map.find(test::symbol_value(fixture("liblines_shared.so"), "fixture_lib_work"));
  ASSERT_NE(line, nullptr);
  EXPECT_EQ(line->name(), fixture("liblines_stripped_all.so") + ":fixture_lib_work");
}

/// A copy of fixture `name` whose .symtab section header `patch` changed
/// (found and rewritten with <elf.h>'s layout, not with our reader).
std::string with_symtab_header(const std::string& name, const std::function<void(Elf64_Shdr&)>& patch) {
  std::ifstream in(fixture(name), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    char* at = bytes.data() + eh.e_shoff + i * sizeof(Elf64_Shdr);
    Elf64_Shdr sh;
    std::memcpy(&sh, at, sizeof sh);
    if (sh.sh_type != SHT_SYMTAB) continue;
    patch(sh);
    std::memcpy(at, &sh, sizeof sh);
  }
  const std::string path = testing::TempDir() + "/patched_" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Found by fuzzing (test/fuzz/elf_reader_fuzz.cpp): libelfin follows a
// symbol table's sh_link to any section number, and one out of range
// crashed the reader (a null dereference), inside the profiled program.
TEST(LineMap, SymbolTableLinkedToNoSectionIsSkipped) {
  const std::string path = with_symtab_header("lines_stripped", [](Elf64_Shdr& sh) { sh.sh_link = 0xfff0; });
  LineMap map;
  ObjectLines result = map.add_object(path, 0, everything);
  map.finalize();
  EXPECT_EQ(map.find(test::symbol_value(fixture("lines_stripped"), "fixture_work")), nullptr)
      << "a symbol named through a string table that does not exist";
}

// --- compressed debug sections (-gz) ---

TEST(LineMap, CompressedSectionsAreInflated) {
  std::string error;
  auto elf = ElfFile::open(fixture("lines_gz"), error);
  ASSERT_TRUE(elf) << error;
  ElfFile::Section info = elf->section(".debug_info");
  EXPECT_TRUE(info.compressed) << "the fixture's sections are not compressed";
  EXPECT_EQ(info.error, "");
  ASSERT_GT(info.bytes.size(), 4u);
  EXPECT_EQ(info.bytes[4], 5) << "inflated .debug_info starts with a DWARF 5 unit header";
  EXPECT_EQ(elf->section(".debug_info").bytes.data(), info.bytes.data()) << "inflated once";

  auto l = load("lines_gz");
  ASSERT_EQ(l->result.error, "");
  EXPECT_TRUE(l->result.has_debug_info);
  EXPECT_TRUE(names(l->map.find(test::symbol_value(fixture("lines_gz"), "fixture_work")), "main.c", "work_open"));
  auto plain = load("lines_dwarf5_pie");
  EXPECT_EQ(l->result.ranges, plain->result.ranges);

  auto inl = load("inline_gz", 0, user_code);
  ASSERT_EQ(inl->result.error, "");
  expect_library_rows_map_to(*inl, "inline_gz", "inline_nested", "inline_main.cpp", "nested_call", "inline_nested");
}

// zstd (ELFCOMPRESS_ZSTD): inflated to the very bytes of the uncompressed build.
TEST(LineMap, ZstdSectionsAreInflated) {
  std::string error;
  auto zstd = ElfFile::open(fixture("inline_zstd"), error);
  ASSERT_TRUE(zstd) << error;
  auto plain = ElfFile::open(fixture("inline_dwarf5"), error);
  ASSERT_TRUE(plain) << error;
  for (const char* name : {".debug_info", ".debug_line", ".debug_str", ".debug_abbrev", ".debug_rnglists"}) {
    SCOPED_TRACE(name);
    ElfFile::Section z = zstd->section(name);
    EXPECT_TRUE(z.compressed) << "the fixture's sections are not compressed";
    EXPECT_EQ(z.error, "");
    std::span<const uint8_t> p = plain->section(name).bytes;
    ASSERT_FALSE(p.empty());
    EXPECT_TRUE(std::equal(z.bytes.begin(), z.bytes.end(), p.begin(), p.end()));
  }
  auto l = load("inline_zstd", 0, user_code);
  ASSERT_EQ(l->result.error, "");
  expect_library_rows_map_to(*l, "inline_zstd", "inline_nested", "inline_main.cpp", "nested_call", "inline_nested");
}

// --- dwz-compressed debug info (test/fixtures: dwz -m on two copies of inline_main.cpp) ---

// Every address of `binary`'s code maps to the same line and function in `a` as in `b`.
void expect_same_map(const Loaded& a, const Loaded& b, const std::string& binary) {
  std::string error;
  auto elf = ElfFile::open(fixture(binary), error);
  ASSERT_TRUE(elf) << error;
  size_t with_line = 0, with_function = 0;
  for (const ElfFile::CodeSegment& code : elf->code_segments()) {
    for (uint64_t address = code.begin; address < code.end; ++address) {
      const SourceLine* x = a.map.find(address);
      const SourceLine* y = b.map.find(address);
      ASSERT_EQ(x == nullptr, y == nullptr) << std::hex << address;
      if (!x) continue;
      ASSERT_EQ(x->name(), y->name()) << std::hex << address;
      ASSERT_EQ(x->function, y->function) << std::hex << address << " " << x->name();
      ++with_line;
      with_function += !x->function.empty();
    }
  }
  EXPECT_GT(with_line, 100u);
  EXPECT_EQ(with_function, with_line) << "lines without a function";
}

// Where dwz_debian's debug file and its supplementary file are (test/fixtures/CMakeLists.txt).
const std::string dwz_root = fixture("debug-root");

struct DwzCase {
  const char* name;   // the dwz-processed binary
  const char* plain;  // the same build without dwz
  const char* link;   // the section naming the supplementary file
};
void PrintTo(const DwzCase& c, std::ostream* os) { *os << c.name; }

class Dwz : public testing::TestWithParam<DwzCase> {};

TEST_P(Dwz, ReadsAsThePlainBuild) {
  const DwzCase& c = GetParam();
  if (!exists(fixture(c.name))) GTEST_SKIP() << "dwz was not found when the fixtures were built";
  for (const SourceFilter* filter : {&everything, &user_code}) {
    auto dwz = load(c.name, 0, *filter, dwz_root);
    auto plain = load(c.plain, 0, *filter, dwz_root);
    ASSERT_EQ(dwz->result.error, "");
    EXPECT_NE(dwz->result.supplementary_file, "");
    EXPECT_EQ(dwz->result.ranges, plain->result.ranges);
    EXPECT_EQ(dwz->result.lines, plain->result.lines);
    EXPECT_EQ(dwz->result.inlined_ranges, plain->result.inlined_ranges);
    expect_same_map(*dwz, *plain, c.name);
  }
  // Inlined callees named through the supplementary file's DIEs and strings
  // (rows and symbols from the plain build: the same code, and dwz_debian is stripped).
  auto l = load(c.name, 0, user_code, dwz_root);
  EXPECT_GT(l->result.inlined_ranges, 0u);
  expect_library_rows_map_to(*l, c.plain, "inline_through_user", "inline_user.h", "user_mid_body",
                             "user_mid(long, long)");
  expect_library_rows_map_to(*l, c.plain, "_Z10inline_stdRKSt6vectorIlSaIlEE", "inline_main.cpp", "std_call",
                             "inline_std(std::vector<long, std::allocator<long> > const&)");
}

// The fixture is what the test means: dwz moved names out of the file.
TEST_P(Dwz, NamesAreInTheSupplementaryFile) {
  const DwzCase& c = GetParam();
  if (!exists(fixture(c.name))) GTEST_SKIP() << "dwz was not found when the fixtures were built";
  auto l = load(c.name, 0, everything, dwz_root);
  std::string debug = l->result.debug_file.empty() ? fixture(c.name) : l->result.debug_file;
  std::string error;
  auto elf = ElfFile::open(debug, error);
  ASSERT_TRUE(elf) << error;
  EXPECT_TRUE(elf->has_section(c.link));
  std::string_view str(reinterpret_cast<const char*>(elf->section(".debug_str").bytes.data()),
                       elf->section(".debug_str").bytes.size());
  EXPECT_EQ(str.find("user_mid"), std::string_view::npos);
}

// Without its supplementary file the lines are all there, the functions unnamed, and the error says why.
TEST_P(Dwz, MissingSupplementaryFileIsReported) {
  const DwzCase& c = GetParam();
  if (!exists(fixture(c.name)) || std::string_view(c.name) == "dwz_debian") GTEST_SKIP();
  // One directory per case and process: ctest runs the cases side by side, and one's
  // remove_all took the file from under another (a fresh clone's failure).
  std::filesystem::path dir = std::filesystem::path(testing::TempDir()) /
                              ("coz-dwz-alone-" + std::string(c.name) + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(fixture(c.name), dir / c.name, std::filesystem::copy_options::overwrite_existing);
  LineMap map;
  ObjectLines result = map.add_object((dir / c.name).string(), 0, everything, "/nonexistent");
  EXPECT_NE(result.error.find("supplementary debug file (dwz) was not found"), std::string::npos) << result.error;
  EXPECT_EQ(result.supplementary_file, "");
  auto plain = load(c.plain);
  EXPECT_EQ(result.ranges, plain->result.ranges);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Dwz,
                         testing::Values(DwzCase{"dwz_gnu5", "inline_dwarf5", ".gnu_debugaltlink"},
                                         DwzCase{"dwz_gnu4", "inline_dwarf4", ".gnu_debugaltlink"},
                                         DwzCase{"dwz_sup5", "inline_dwarf5", ".debug_sup"},
                                         DwzCase{"dwz_debian", "dwz_debian_full", ".gnu_debugaltlink"}),
                         [](const testing::TestParamInfo<DwzCase>& info) { return std::string(info.param.name); });

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


// The profiler's passes at each experiment visit the sampled lines only
// (SampledLines): each line with samples must be there once, whenever its
// first sample came, for a reader that started late as for one that kept up.
TEST(LineMap, SampledLinesHoldEachSampledLineOnce) {
  auto l = load("lines_cpp");
  auto& lines = l->map.lines();
  ASSERT_GE(lines.size(), 6u);
  for (size_t i = 0; i < lines.size(); ++i) ASSERT_EQ(lines[i].index, i);
  SampledLines early;
  EXPECT_TRUE(early.refresh(l->map).empty());
  l->map.count_samples(lines[3], 1);
  l->map.count_samples(lines[0], 2);
  l->map.count_samples(lines[3], 1);
  l->map.count_samples(lines[5], 0);  // no sample: not a sampled line
  EXPECT_EQ(early.refresh(l->map), (std::vector<uint32_t>{0, 3}));  // newest first
  l->map.count_samples(lines[5], 4);
  l->map.count_samples(lines[0], 1);
  EXPECT_EQ(early.refresh(l->map), (std::vector<uint32_t>{0, 3, 5}));
  EXPECT_EQ(early.refresh(l->map), (std::vector<uint32_t>{0, 3, 5}));
  SampledLines late;
  EXPECT_EQ(late.refresh(l->map), (std::vector<uint32_t>{5, 0, 3}));
  EXPECT_EQ(lines[0].samples.load(), 3u);
  EXPECT_EQ(lines[3].samples.load(), 2u);
  EXPECT_EQ(lines[5].samples.load(), 4u);
}

// Samples are counted by signal handlers on every thread while the
// profiler thread reads the list.
TEST(LineMap, SampledLinesWhileThreadsCountSamples) {
  auto l = load("lines_cpp");
  auto& lines = l->map.lines();
  const size_t n = lines.size();
  SampledLines reader;
  std::atomic<int> running{4};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t round = 0; round < 200; ++round) {
        for (size_t i = static_cast<size_t>(t); i < n; i += 3) l->map.count_samples(lines[(i * 7 + round) % n], 1);
      }
      running.fetch_sub(1);
    });
  }
  while (running.load() > 0) reader.refresh(l->map);
  for (auto& t : threads) t.join();
  std::vector<uint32_t> seen = reader.refresh(l->map);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "a line listed twice";
  std::vector<uint32_t> sampled;
  for (const SourceLine& line : lines) {
    if (line.samples.load() > 0) sampled.push_back(line.index);
  }
  EXPECT_EQ(seen, sampled);
}

// group_by_function looks only at the lines added since its last call; an
// ungroup() makes it look at every line again.
TEST(LineMap, GroupingByFunctionReachesLinesAddedLater) {
  LineMap map;
  map.add_object(fixture("lines_dwarf5_nopie"), 0, everything);
  map.finalize();
  auto grouped = [&] {
    size_t with_unit = 0, groupable = 0;
    for (const SourceLine& line : map.lines()) {
      if (line.line == 0 || line.function.empty()) continue;
      ++groupable;
      with_unit += line.unit.load() != nullptr;
    }
    return std::pair{with_unit, groupable};
  };
  map.group_by_function();
  auto [first_units, first_groupable] = grouped();
  ASSERT_GT(first_groupable, 0u);
  EXPECT_EQ(first_units, first_groupable);
  map.add_object(fixture("lines_cpp"), 0x7f00'0000'0000, everything);
  map.finalize();
  map.group_by_function();
  auto [units, groupable] = grouped();
  EXPECT_GT(groupable, first_groupable);
  EXPECT_EQ(units, groupable);
  map.ungroup();
  EXPECT_EQ(grouped().first, 0u);
  map.group_by_function();
  EXPECT_EQ(grouped().first, groupable);
}

}  // namespace
}  // namespace coz
