// FrameTable against binutils' readelf, an independent CFI decoder run at
// test time on the same files: every row readelf's --debug-dump=frames-interp
// prints must give the same CFA rule, rbp slot and return address, for glibc
// and libstdc++ (read from this process's memory through .eh_frame_hdr, and
// from their files), this executable's PLT, the signal trampoline and the
// fixtures (frame pointers, stack realignment, .debug_frame). Hand-built
// sections cover what no system library contains (64-bit lengths, CIE
// version 4, other pointer encodings) and malformed data.
#include "frame_table.h"

#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "elf_file.h"
#include "line_fixtures.h"

namespace coz {
namespace {

// ---------------------------------------------------------------------------
// readelf's view of a file's CFI
// ---------------------------------------------------------------------------

/// One row of a frames-interp table; a column readelf does not print is empty.
struct InterpRow {
  uint64_t loc = 0;
  std::string cfa, rbp, rsp, ra;
};

struct ReadelfEntry {
  std::string section;  // ".eh_frame", ".debug_frame"
  uint64_t offset = 0;  // in the section
  uint64_t cie = 0;     // FDEs: their CIE's offset
  uint64_t begin = 0, end = 0;
  std::string augmentation;  // CIEs
  std::vector<InterpRow> rows;
  std::vector<std::string> cfa_expressions;  // DW_CFA_def_cfa_expression operands, from --debug-dump=frames
  std::vector<std::string> rbp_expressions;  // DW_CFA_expression r6 operands
};

struct ReadelfFrames {
  std::map<std::pair<std::string, uint64_t>, ReadelfEntry> cies;
  std::vector<ReadelfEntry> fdes;

  const ReadelfEntry* containing(std::string_view section, uint64_t address) const {
    for (const ReadelfEntry& f : fdes) {
      if (f.section == section && f.begin <= address && address < f.end) return &f;
    }
    return nullptr;
  }
  size_t count(std::string_view section) const {
    return std::count_if(fdes.begin(), fdes.end(), [&](const ReadelfEntry& f) { return f.section == section; });
  }
};

std::string fmt_hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

/// Whitespace-separated tokens, except that "(name)" stays with what it
/// names: readelf prints a register rule as "r9 (r9)".
std::vector<std::string> split(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> tokens;
  for (std::string t; in >> t;) {
    if (t[0] == '(' && !tokens.empty()) {
      tokens.back() += " " + t;
    } else {
      tokens.push_back(t);
    }
  }
  return tokens;
}

bool is_hex(const std::string& s) {
  auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  return !s.empty() && std::all_of(s.begin(), s.end(), hex);
}

/// "Contents of the .eh_frame section (loaded from ...):" -> ".eh_frame"
std::optional<std::string> section_heading(const std::string& line) {
  static const std::string prefix = "Contents of the ";
  if (line.rfind(prefix, 0) != 0) return std::nullopt;
  size_t end = line.find(' ', prefix.size());
  return line.substr(prefix.size(), end - prefix.size());
}

/// The text between the first '(' after `from` and the line's last ')'.
std::string parenthesized(const std::string& line, size_t from) {
  size_t open = line.find('(', from);
  size_t close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close <= open) return {};
  return line.substr(open + 1, close - open - 1);
}

ReadelfFrames run_readelf(const std::string& path) {
  ReadelfFrames out;
  std::map<std::pair<std::string, uint64_t>, size_t> fde_index;
  std::string section;
  ReadelfEntry* current = nullptr;
  std::vector<std::string> columns;
  std::istringstream interp(test::run_command(std::string(READELF) + " -W --debug-dump=frames-interp '" + path +
                                              "' 2>/dev/null"));
  for (std::string line; std::getline(interp, line);) {
    if (auto s = section_heading(line)) {
      section = *s;
      current = nullptr;
      continue;
    }
    std::vector<std::string> t = split(line);
    if (t.size() >= 5 && t[3] == "CIE" && is_hex(t[0])) {
      current = &out.cies[{section, std::stoull(t[0], nullptr, 16)}];
      current->section = section;
      current->offset = std::stoull(t[0], nullptr, 16);
      current->augmentation = t[4].size() >= 2 ? t[4].substr(1, t[4].size() - 2) : "";
      columns.clear();
    } else if (t.size() >= 6 && t[3] == "FDE" && is_hex(t[0]) && t[4].rfind("cie=", 0) == 0 &&
               t[5].rfind("pc=", 0) == 0) {
      ReadelfEntry f;
      f.section = section;
      f.offset = std::stoull(t[0], nullptr, 16);
      f.cie = std::stoull(t[4].substr(4), nullptr, 16);
      size_t dots = t[5].find("..");
      f.begin = std::stoull(t[5].substr(3, dots - 3), nullptr, 16);
      f.end = std::stoull(t[5].substr(dots + 2), nullptr, 16);
      fde_index[{section, f.offset}] = out.fdes.size();
      out.fdes.push_back(f);
      current = &out.fdes.back();
      columns.clear();
    } else if (!t.empty() && t[0] == "LOC") {
      columns = t;
    } else if (current && !columns.empty() && t.size() == columns.size() && t[0].size() == 16 && is_hex(t[0])) {
      InterpRow row;
      row.loc = std::stoull(t[0], nullptr, 16);
      for (size_t i = 1; i < t.size(); ++i) {
        if (columns[i] == "CFA") row.cfa = t[i];
        if (columns[i] == "rbp") row.rbp = t[i];
        if (columns[i] == "rsp") row.rsp = t[i];
        if (columns[i] == "ra") row.ra = t[i];
      }
      current->rows.push_back(row);
    }
  }
  // The expressions frames-interp prints as "exp", from the raw dump.
  std::istringstream raw(test::run_command(std::string(READELF) + " -W --debug-dump=frames '" + path +
                                           "' 2>/dev/null"));
  current = nullptr;
  for (std::string line; std::getline(raw, line);) {
    if (auto s = section_heading(line)) {
      section = *s;
      current = nullptr;
      continue;
    }
    std::vector<std::string> t = split(line);
    if (t.size() >= 4 && is_hex(t[0]) && (t[3] == "CIE" || t[3] == "FDE")) {
      uint64_t offset = std::stoull(t[0], nullptr, 16);
      current = nullptr;
      if (t[3] == "CIE") {
        auto it = out.cies.find({section, offset});
        if (it != out.cies.end()) current = &it->second;
      } else if (auto it = fde_index.find({section, offset}); it != fde_index.end()) {
        current = &out.fdes[it->second];
      }
      continue;
    }
    if (!current) continue;
    if (size_t at = line.find("DW_CFA_def_cfa_expression"); at != std::string::npos) {
      current->cfa_expressions.push_back(parenthesized(line, at));
    } else if (size_t e = line.find("DW_CFA_expression: r6 (rbp)"); e != std::string::npos) {
      current->rbp_expressions.push_back(parenthesized(line, e + std::strlen("DW_CFA_expression: r6 (rbp)")));
    }
  }
  return out;
}

const ReadelfFrames& readelf_frames(const std::string& path) {
  static std::map<std::string, ReadelfFrames> cache;
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, run_readelf(path)).first;
  return it->second;
}

// ---------------------------------------------------------------------------
// What a readelf row means as a FrameRow
// ---------------------------------------------------------------------------

struct Expected {
  bool skip = false;     // readelf does not say enough (several different CFA expressions in one FDE)
  bool none = false;     // not representable: find() must return nullptr
  std::string why;       // for none: the kind of rule, for the tally of unsupported rows
  CfaRule rule = CfaRule::None;
  int64_t cfa_offset = 0;
  int64_t bp_offset = FrameRow::kBpUnchanged;
  uint8_t flags = 0;
};

std::optional<int64_t> after_prefix(const std::string& s, std::string_view prefix) {
  if (s.rfind(prefix, 0) != 0) return std::nullopt;
  std::string rest = s.substr(prefix.size());
  if (rest.empty() || (rest[0] != '+' && rest[0] != '-')) return std::nullopt;
  return std::stoll(rest);
}

/// The one distinct expression of a list, or nullopt when there are several.
std::optional<std::string> only(const std::vector<std::string>& list) {
  if (list.empty()) return std::string{};
  for (const std::string& e : list) {
    if (e != list.front()) return std::nullopt;
  }
  return list.front();
}

std::optional<int64_t> plt_threshold(const std::string& e) {
  static const std::string head = "DW_OP_breg7 (rsp): 8; DW_OP_breg16 (rip): 0; DW_OP_lit15; DW_OP_and; DW_OP_lit";
  static const std::string tail = "; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus";
  if (e.size() <= head.size() + tail.size() || e.rfind(head, 0) != 0 ||
      e.compare(e.size() - tail.size(), tail.size(), tail) != 0) {
    return std::nullopt;
  }
  return std::stoll(e.substr(head.size(), e.size() - head.size() - tail.size()));
}

/// "DW_OP_breg6 (rbp): N" (+ "; DW_OP_deref" when `deref`) -> N
std::optional<int64_t> rbp_plus(const std::string& e, bool deref) {
  static const std::string head = "DW_OP_breg6 (rbp): ";
  static const std::string tail = "; DW_OP_deref";
  if (e.rfind(head, 0) != 0) return std::nullopt;
  std::string rest = e.substr(head.size());
  if (deref) {
    if (rest.size() <= tail.size() || rest.compare(rest.size() - tail.size(), tail.size(), tail) != 0) {
      return std::nullopt;
    }
    rest.resize(rest.size() - tail.size());
  }
  if (rest.empty() || rest.find_first_not_of("-0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(rest);
}

Expected expected_row(const InterpRow& r, const ReadelfEntry& fde, bool signal_frame) {
  Expected e;
  if (signal_frame) {
    e.rule = CfaRule::Signal;
    e.cfa_offset = 0;
    return e;
  }
  auto none = [&](std::string why) {
    e.none = true;
    e.why = std::move(why);
    return e;
  };
  if (auto off = after_prefix(r.cfa, "rsp")) {
    e.rule = CfaRule::Sp, e.cfa_offset = *off;
  } else if (auto off = after_prefix(r.cfa, "rbp")) {
    e.rule = CfaRule::Bp, e.cfa_offset = *off;
  } else if (r.cfa == "exp") {
    std::optional<std::string> expr = only(fde.cfa_expressions);
    if (!expr) {
      e.skip = true;
      return e;
    }
    if (auto n = plt_threshold(*expr)) {
      e.rule = CfaRule::Plt, e.cfa_offset = *n;
    } else if (auto off = rbp_plus(*expr, true)) {
      e.rule = CfaRule::BpDeref, e.cfa_offset = *off;
    } else {
      return none("CFA expression " + *expr);
    }
  } else {
    return none("CFA " + (r.cfa.empty() ? std::string("unset") : r.cfa.substr(0, r.cfa.find_first_of("+-"))));
  }
  if (r.ra == "u") {
    e.flags = FrameRow::kOutermost;
  } else if (r.ra != "c-8") {
    return none("return address " + (r.ra.empty() ? std::string("unset") : r.ra));
  }
  if (!r.rsp.empty() && r.rsp != "u" && r.rsp != "s" && r.rsp != "v+0") return none("rsp " + r.rsp);
  if (r.rbp.empty() || r.rbp == "u" || r.rbp == "s") {
    e.bp_offset = FrameRow::kBpUnchanged;
  } else if (auto off = after_prefix(r.rbp, "c"); off && e.rule != CfaRule::BpDeref) {
    e.bp_offset = *off;
  } else if (r.rbp == "exp" && e.rule == CfaRule::BpDeref) {
    std::optional<std::string> expr = only(fde.rbp_expressions);
    if (!expr) {
      e.skip = true;
      return e;
    }
    std::optional<int64_t> at = rbp_plus(*expr, false);
    if (!at) return none("rbp expression " + *expr);
    e.bp_offset = *at;
  } else {
    return none("rbp " + r.rbp);
  }
  return e;
}

// ---------------------------------------------------------------------------
// Comparing a table with readelf
// ---------------------------------------------------------------------------

struct Coverage {
  size_t fdes = 0;
  size_t rows = 0;             // readelf rows compared
  size_t unsupported_rows = 0; // of which readelf's rule has no FrameRow (find must say nullptr)
  size_t unsupported_fdes = 0;
  size_t skipped = 0;          // rows readelf cannot settle, or owned by an overlapping FDE
  std::map<std::string, size_t> unsupported_kinds;  // per FDE
  std::vector<std::string> mismatches;
};

std::string describe(const FrameRow* row) {
  if (!row) return "nullptr";
  return "rule " + std::to_string(static_cast<int>(row->rule)) + " cfa " + std::to_string(row->cfa_offset) + " bp " +
         std::to_string(row->bp_offset) + " flags " + std::to_string(row->flags);
}

std::string describe(const Expected& e) {
  if (e.none) return "nullptr (" + e.why + ")";
  return "rule " + std::to_string(static_cast<int>(e.rule)) + " cfa " + std::to_string(e.cfa_offset) + " bp " +
         std::to_string(e.bp_offset) + " flags " + std::to_string(e.flags);
}

bool matches(const FrameRow* row, const Expected& e) {
  if (e.none) return row == nullptr;
  return row && row->rule == e.rule && row->cfa_offset == e.cfa_offset && row->bp_offset == e.bp_offset &&
         row->flags == e.flags;
}

/// Checks every readelf row of the FDEs of `section` (those `wanted` says)
/// at its first and last address; `bias` turns file addresses into the table's.
Coverage compare(const FrameTable& table, const ReadelfFrames& rf, std::string_view section, uint64_t bias,
                 const std::function<bool(const ReadelfEntry&)>& wanted = {}) {
  Coverage cov;
  // Who owns an address when FDEs overlap: the last to start at or before
  // it (the first in the section of several starting together), if it reaches.
  std::vector<const ReadelfEntry*> sorted;
  for (const ReadelfEntry& f : rf.fdes) {
    if (f.section == section && f.begin != 0 && f.end > f.begin) sorted.push_back(&f);
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  std::set<uint64_t> begins;
  for (auto* f : sorted) begins.insert(f->begin);
  auto owner = [&](uint64_t address) -> const ReadelfEntry* {
    auto it = std::upper_bound(sorted.begin(), sorted.end(), address, [](uint64_t a, auto* f) { return a < f->begin; });
    if (it == sorted.begin()) return nullptr;
    const ReadelfEntry* f = *(it - 1);
    while (it - 1 != sorted.begin() && (*(it - 2))->begin == f->begin) f = *(--it - 1);
    return address < f->end ? f : nullptr;
  };
  auto mismatch = [&](std::string text) {
    if (cov.mismatches.size() < 25) cov.mismatches.push_back(std::move(text));
  };

  for (const ReadelfEntry* f : sorted) {
    if (wanted && !wanted(*f)) continue;
    if (owner(f->begin) != f) {  // a duplicate start
      ++cov.skipped;
      continue;
    }
    ++cov.fdes;
    const ReadelfEntry* cie = nullptr;
    if (auto it = rf.cies.find({f->section, f->cie}); it != rf.cies.end()) cie = &it->second;
    bool signal_frame = cie && cie->augmentation.find('S') != std::string::npos;
    // readelf prints no table for an FDE without instructions: the CIE's
    // initial row holds for its whole range.
    std::vector<InterpRow> rows = f->rows;
    const ReadelfEntry* expressions = f;
    if (rows.empty()) {
      rows = cie && !cie->rows.empty() ? std::vector<InterpRow>{cie->rows.back()} : std::vector<InterpRow>{InterpRow{}};
      rows[0].loc = f->begin;
      if (cie) expressions = cie;
    }
    std::set<std::string> kinds;
    for (size_t i = 0; i < rows.size(); ++i) {
      const InterpRow& r = rows[i];
      if (r.loc >= f->end) break;
      if (i + 1 < rows.size() && rows[i + 1].loc == r.loc) continue;  // an advance by 0: the later row holds
      uint64_t last = (i + 1 < rows.size() ? std::min(rows[i + 1].loc, f->end) : f->end) - 1;
      Expected e = expected_row(r, *expressions, signal_frame);
      if (e.skip) {
        ++cov.skipped;
        continue;
      }
      bool compared = false;
      for (uint64_t pc : {r.loc, last}) {
        if (owner(pc) != f) continue;
        compared = true;
        const FrameRow* got = table.find(pc + bias);
        if (!matches(got, e)) {
          mismatch(fmt_hex(pc) + " in FDE " + fmt_hex(f->begin) + ".." + fmt_hex(f->end) + " (" + f->section +
                   " offset " + fmt_hex(f->offset) + "): readelf CFA " + r.cfa + " rbp " + r.rbp + " ra " + r.ra +
                   " expects " + describe(e) + ", got " + describe(got));
        }
      }
      if (!compared) {
        ++cov.skipped;
        continue;
      }
      ++cov.rows;
      if (e.none) {
        ++cov.unsupported_rows;
        kinds.insert(e.why);
      }
    }
    if (!kinds.empty()) ++cov.unsupported_fdes;
    for (const std::string& k : kinds) ++cov.unsupported_kinds[k];
    // The FDE's boundaries: its first and last byte name it, the byte after
    // it is a gap unless another FDE starts there.
    if (table.function_start(f->begin + bias) != f->begin + bias) {
      mismatch("function_start(" + fmt_hex(f->begin) + ") is not the FDE's start");
    }
    if (owner(f->end - 1) == f && table.function_start(f->end - 1 + bias) != f->begin + bias) {
      mismatch("function_start(" + fmt_hex(f->end - 1) + ") is not " + fmt_hex(f->begin));
    }
    if (!owner(f->end) && !begins.count(f->end)) {
      if (table.find(f->end + bias) != nullptr) mismatch("find(end " + fmt_hex(f->end) + ") is not nullptr");
      if (table.function_start(f->end + bias) != 0) mismatch("function_start(end " + fmt_hex(f->end) + ") is not 0");
    }
  }
  return cov;
}

void expect_agreement(const Coverage& cov, const std::string& what) {
  EXPECT_TRUE(cov.mismatches.empty()) << what << ": " << cov.mismatches.size() << "+ mismatches";
  for (const std::string& m : cov.mismatches) ADD_FAILURE() << what << ": " << m;
}

// ---------------------------------------------------------------------------
// Loaded objects and tables
// ---------------------------------------------------------------------------

struct LoadedObject {
  std::string path;
  uint64_t bias = 0;
  const uint8_t* eh_frame_hdr = nullptr;
};

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

/// The loaded object whose path ends with `base_name`, or (without one) that maps `address`.
std::optional<LoadedObject> loaded_object(const void* address, std::string_view base_name = {}) {
  struct Query {
    uint64_t address;
    std::string_view base_name;
    std::optional<LoadedObject> found;
  } q{reinterpret_cast<uintptr_t>(address), base_name, std::nullopt};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& q = *static_cast<Query*>(data);
        std::string name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : self_exe();
        bool match = false;
        if (!q.base_name.empty()) {
          std::string_view n = name;
          match = n.size() >= q.base_name.size() && n.substr(n.size() - q.base_name.size()) == q.base_name;
        }
        const uint8_t* hdr = nullptr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_GNU_EH_FRAME) hdr = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
          if (q.base_name.empty() && ph.p_type == PT_LOAD && q.address >= info->dlpi_addr + ph.p_vaddr &&
              q.address < info->dlpi_addr + ph.p_vaddr + ph.p_memsz) {
            match = true;
          }
        }
        if (!match) return 0;
        q.found = LoadedObject{name, info->dlpi_addr, hdr};
        return 1;
      },
      &q);
  return q.found;
}

struct Built {
  FrameTable table;
  FrameTableStats stats;
  double ms = 0;
};

Built from_memory(const LoadedObject& o) {
  Built b;
  auto t0 = std::chrono::steady_clock::now();
  FrameTableBuilder builder;
  b.stats = builder.add_eh_frame_hdr(o.eh_frame_hdr);
  b.table = builder.finish(o.path);
  b.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return b;
}

Built from_file(const std::string& path, uint64_t bias, const char* section = ".eh_frame") {
  Built b;
  std::string error;
  auto elf = ElfFile::open(path, error);
  EXPECT_TRUE(elf) << error;
  if (!elf) return b;
  ElfFile::Section s = elf->section(section);
  EXPECT_FALSE(s.bytes.empty()) << path << " has no " << section;
  auto t0 = std::chrono::steady_clock::now();
  FrameTableBuilder builder;
  b.stats = std::string_view(section) == ".debug_frame" ? builder.add_debug_frame(s.bytes, bias)
                                                        : builder.add_eh_frame(s.bytes, s.address, bias);
  b.table = builder.finish(path);
  b.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return b;
}

/// Compares one FDE (the one containing `file_pc`) of a loaded library, in
/// its memory table and its file table.
void check_library_function(const void* address, const char* what) {
  Dl_info info{};
  ASSERT_NE(dladdr(address, &info), 0) << what;
  auto lib = loaded_object(address);
  ASSERT_TRUE(lib) << what;
  EXPECT_EQ(lib->path, info.dli_fname);
  EXPECT_EQ(lib->bias, reinterpret_cast<uintptr_t>(info.dli_fbase));  // glibc's first PT_LOAD is at 0
  ASSERT_NE(lib->eh_frame_hdr, nullptr);
  uint64_t file_pc = reinterpret_cast<uintptr_t>(address) - lib->bias;
  const ReadelfFrames& rf = readelf_frames(lib->path);
  const ReadelfEntry* fde = rf.containing(".eh_frame", file_pc);
  ASSERT_NE(fde, nullptr) << what << " at " << fmt_hex(file_pc) << " in " << lib->path;
  std::cerr << what << ": " << lib->path << " " << fmt_hex(file_pc) << " ("
            << (info.dli_sname ? info.dli_sname : "?") << "), FDE " << fmt_hex(fde->begin) << ".."
            << fmt_hex(fde->end) << ", " << fde->rows.size() << " readelf rows\n";
  auto wanted = [&](const ReadelfEntry& f) { return &f == fde; };
  Built mem = from_memory(*lib);
  EXPECT_EQ(mem.stats.error, "");
  Coverage cm = compare(mem.table, rf, ".eh_frame", lib->bias, wanted);
  EXPECT_EQ(cm.fdes, 1u);
  EXPECT_GT(cm.rows, 0u);
  expect_agreement(cm, std::string(what) + " (memory)");
  Built file = from_file(lib->path, 0);
  EXPECT_EQ(file.stats.error, "");
  Coverage cf = compare(file.table, rf, ".eh_frame", 0, wanted);
  EXPECT_EQ(cf.rows, cm.rows);
  expect_agreement(cf, std::string(what) + " (file)");
  // The address itself, by both routes.
  const FrameRow* row = mem.table.find(reinterpret_cast<uintptr_t>(address));
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->rule, CfaRule::Sp);  // a function's entry: CFA = rsp + 8
  EXPECT_EQ(row->cfa_offset, 8);
  EXPECT_EQ(mem.table.function_start(reinterpret_cast<uintptr_t>(address)), fde->begin + lib->bias);
}

// ---------------------------------------------------------------------------
// 1, 2: glibc functions, from memory and from the file
// ---------------------------------------------------------------------------

TEST(FrameTableLibc, MemcpyImplementation) {
  // In a PIE, &memcpy is loaded from the GOT, where ld.so put the IFUNC's
  // choice (__memmove_avx_unaligned_erms or a sibling), not the resolver.
  void* (*volatile fn)(void*, const void*, size_t) = &memcpy;
  check_library_function(reinterpret_cast<const void*>(fn), "memcpy");
}

TEST(FrameTableLibc, Malloc) {
  void* (*volatile fn)(size_t) = &malloc;
  check_library_function(reinterpret_cast<const void*>(fn), "malloc");
}

// ---------------------------------------------------------------------------
// 3: this executable's PLT (the linker's CFA expression)
// ---------------------------------------------------------------------------

TEST(FrameTablePlt, LinkerExpression) {
  auto self = loaded_object(reinterpret_cast<const void*>(&self_exe));
  ASSERT_TRUE(self);
  std::string error;
  auto elf = ElfFile::open(self->path, error);
  ASSERT_TRUE(elf) << error;
  const ReadelfFrames& rf = readelf_frames(self->path);
  Built mem = from_memory(*self);
  Built file = from_file(self->path, 0);
  EXPECT_EQ(mem.stats.error, "");
  EXPECT_EQ(file.stats.error, "");
  int checked = 0;
  for (const char* name : {".plt", ".plt.sec"}) {
    ElfFile::Section plt = elf->section(name);
    if (!plt.present || plt.bytes.size() < 32) continue;  // PLT0 alone: no entry ever runs under the expression
    const ReadelfEntry* fde = rf.containing(".eh_frame", plt.address);
    ASSERT_NE(fde, nullptr) << name;
    std::optional<std::string> expr = only(fde->cfa_expressions);
    ASSERT_TRUE(expr && plt_threshold(*expr)) << name << ": readelf shows no PLT expression";
    int64_t threshold = *plt_threshold(*expr);
    if (std::string_view(name) == ".plt") {
      // PLT0 pushes the link map (rsp+16) then jumps through GOT[2] (rsp+24 after the push).
      ASSERT_GE(fde->rows.size(), 3u);
      EXPECT_EQ(fde->rows[0].cfa, "rsp+16");
      EXPECT_EQ(fde->rows[1].cfa, "rsp+24");
      EXPECT_EQ(fde->rows[2].cfa, "exp");
      EXPECT_EQ(threshold, 11);
      for (const Built* b : {&mem, &file}) {
        uint64_t bias = b == &mem ? self->bias : 0;
        const FrameRow* push = b->table.find(plt.address + bias);
        const FrameRow* jump = b->table.find(fde->rows[1].loc + bias);
        const FrameRow* entry = b->table.find(fde->rows[2].loc + bias);
        ASSERT_TRUE(push && jump && entry);
        EXPECT_EQ(push->rule, CfaRule::Sp);
        EXPECT_EQ(push->cfa_offset, 16);
        EXPECT_EQ(jump->rule, CfaRule::Sp);
        EXPECT_EQ(jump->cfa_offset, 24);
        EXPECT_EQ(entry->rule, CfaRule::Plt);
        EXPECT_EQ(entry->cfa_offset, 11);
        const FrameRow* last = b->table.find(plt.address + plt.bytes.size() - 1 + bias);
        ASSERT_NE(last, nullptr);
        EXPECT_EQ(last->rule, CfaRule::Plt);
      }
    }
    auto wanted = [&](const ReadelfEntry& f) { return &f == fde; };
    Coverage cm = compare(mem.table, rf, ".eh_frame", self->bias, wanted);
    Coverage cf = compare(file.table, rf, ".eh_frame", 0, wanted);
    EXPECT_GE(cm.rows, 1u);
    EXPECT_EQ(cm.unsupported_rows, 0u);
    expect_agreement(cm, std::string(name) + " (memory)");
    expect_agreement(cf, std::string(name) + " (file)");
    std::cerr << name << ": threshold " << threshold << ", " << cm.rows << " rows compared\n";
    ++checked;
  }
  EXPECT_GT(checked, 0) << "this executable has no PLT entries";
}

// ---------------------------------------------------------------------------
// 4: the signal trampoline (CIE augmentation 'S')
// ---------------------------------------------------------------------------

void ignore_signal(int) {}

TEST(FrameTableSignal, RestorerIsASignalFrame) {
  struct sigaction action {}, old {}, now {};
  action.sa_handler = ignore_signal;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR2, &action, &old), 0);
  ASSERT_EQ(sigaction(SIGUSR2, nullptr, &now), 0);  // glibc reports the restorer it installed
  sigaction(SIGUSR2, &old, nullptr);
  auto restorer = reinterpret_cast<const void*>(now.sa_restorer);
  ASSERT_NE(restorer, nullptr);
  auto libc = loaded_object(restorer);
  ASSERT_TRUE(libc);
  const ReadelfFrames& rf = readelf_frames(libc->path);
  uint64_t file_pc = reinterpret_cast<uintptr_t>(restorer) - libc->bias;
  const ReadelfEntry* fde = rf.containing(".eh_frame", file_pc);
  ASSERT_NE(fde, nullptr);
  const ReadelfEntry& cie = rf.cies.at({fde->section, fde->cie});
  EXPECT_NE(cie.augmentation.find('S'), std::string::npos) << cie.augmentation;
  ASSERT_FALSE(fde->rows.empty());
  EXPECT_EQ(fde->rows[0].cfa, "exp");
  Built mem = from_memory(*libc);
  Built file = from_file(libc->path, 0);
  for (const Built* b : {&mem, &file}) {
    uint64_t bias = b == &mem ? libc->bias : 0;
    // glibc starts the FDE one byte early, at a nop, so that a lookup of the
    // "return address" minus one still lands in it.
    for (uint64_t pc = fde->begin; pc < fde->end; ++pc) {
      const FrameRow* row = b->table.find(pc + bias);
      ASSERT_NE(row, nullptr) << fmt_hex(pc);
      EXPECT_EQ(row->rule, CfaRule::Signal) << fmt_hex(pc);
    }
  }
  auto wanted = [&](const ReadelfEntry& f) { return &f == fde; };
  expect_agreement(compare(mem.table, rf, ".eh_frame", libc->bias, wanted), "__restore_rt (memory)");
  expect_agreement(compare(file.table, rf, ".eh_frame", 0, wanted), "__restore_rt (file)");
}

// ---------------------------------------------------------------------------
// 5, 6: the fixtures: .debug_frame, frame pointers, stack realignment
// ---------------------------------------------------------------------------

TEST(FrameTableFixtures, DebugFrame) {
  std::string path = test::fixture("frames_debug_frame");
  const ReadelfFrames& rf = readelf_frames(path);
  ASSERT_GT(rf.count(".debug_frame"), 2u);
  uint64_t plain = test::symbol_value(path, "frames_plain");
  uint64_t realign = test::symbol_value(path, "frames_realign");
  // Without unwind tables the program's own functions are in .debug_frame only.
  EXPECT_EQ(rf.containing(".eh_frame", plain), nullptr);
  ASSERT_NE(rf.containing(".debug_frame", plain), nullptr);
  for (uint64_t bias : {uint64_t{0}, uint64_t{0x5555'0000'0000}}) {
    Built b = from_file(path, bias, ".debug_frame");
    EXPECT_EQ(b.stats.error, "");
    EXPECT_EQ(b.stats.fdes, rf.count(".debug_frame"));
    EXPECT_GE(b.stats.cies, 1u);
    Coverage cov = compare(b.table, rf, ".debug_frame", bias);
    EXPECT_EQ(cov.fdes, rf.count(".debug_frame"));
    EXPECT_GT(cov.rows, 5u);
    expect_agreement(cov, ".debug_frame bias " + fmt_hex(bias));
    EXPECT_EQ(b.table.function_start(plain + bias), plain + bias);
    EXPECT_EQ(b.table.function_start(realign + bias), realign + bias);
    EXPECT_EQ(b.table.find(plain), bias ? nullptr : b.table.find(plain)) << "bias not applied";
  }
  // The .eh_frame left (crt1.o's _start: the return address is undefined there).
  Built eh = from_file(path, 0);
  EXPECT_EQ(eh.stats.error, "");
  EXPECT_EQ(eh.table.find(plain), nullptr);
  uint64_t start = test::symbol_value(path, "_start");
  const FrameRow* outermost = eh.table.find(start);
  ASSERT_NE(outermost, nullptr);
  EXPECT_EQ(outermost->flags & FrameRow::kOutermost, FrameRow::kOutermost);
  expect_agreement(compare(eh.table, rf, ".eh_frame", 0), "frames_debug_frame .eh_frame");
}

TEST(FrameTableFixtures, FramePointersAndRealignment) {
  std::string path = test::fixture("frames_eh");
  const ReadelfFrames& rf = readelf_frames(path);
  Built b = from_file(path, 0);
  EXPECT_EQ(b.stats.error, "");
  EXPECT_EQ(b.stats.fdes, rf.count(".eh_frame"));
  Coverage cov = compare(b.table, rf, ".eh_frame", 0);
  expect_agreement(cov, "frames_eh");

  // -fno-omit-frame-pointer: after `push rbp; mov rbp, rsp`, CFA = rbp + 16, rbp saved at CFA - 16.
  test::SymbolRange plain = test::symbol_range(path, "frames_plain");
  size_t bp_rows = 0;
  for (uint64_t pc = plain.begin; pc < plain.end; ++pc) {
    const FrameRow* row = b.table.find(pc);
    ASSERT_NE(row, nullptr) << fmt_hex(pc);
    if (row->rule == CfaRule::Bp) {
      ++bp_rows;
      EXPECT_EQ(row->cfa_offset, 16);
      EXPECT_EQ(row->bp_offset, -16);
    }
  }
  EXPECT_GT(bp_rows, 0u) << "no rbp-based CFA in frames_plain";

  // The over-aligned local next to alloca makes GCC realign through r10
  // (DRAP): CFA = *(rbp - N), the caller's rbp pushed at rbp + 0.
  test::SymbolRange realign = test::symbol_range(path, "frames_realign");
  const ReadelfEntry* fde = rf.containing(".eh_frame", realign.begin);
  ASSERT_NE(fde, nullptr);
  std::optional<std::string> expr = only(fde->cfa_expressions);
  ASSERT_TRUE(expr && rbp_plus(*expr, true)) << "GCC did not realign frames_realign through DRAP";
  int64_t slot = *rbp_plus(*expr, true);
  size_t deref_rows = 0, r10_rows = 0;
  for (uint64_t pc = realign.begin; pc < realign.end; ++pc) {
    const FrameRow* row = b.table.find(pc);
    if (!row) {
      ++r10_rows;  // CFA = r10 + 0 while the prologue and epilogue switch stacks
      continue;
    }
    if (row->rule == CfaRule::BpDeref) {
      ++deref_rows;
      EXPECT_EQ(row->cfa_offset, slot);
      EXPECT_EQ(row->bp_offset, 0);  // relative to rbp in BpDeref rows
    }
  }
  EXPECT_GT(deref_rows, 0u);
  EXPECT_GT(r10_rows, 0u);
  EXPECT_EQ(cov.unsupported_fdes, 1u);  // frames_realign's r10 rows
  std::cerr << "frames_eh: BpDeref slot rbp" << slot << ", " << deref_rows << " bytes BpDeref, " << r10_rows
            << " bytes with CFA in r10\n";
}

// ---------------------------------------------------------------------------
// 7: every FDE of libc and libstdc++
// ---------------------------------------------------------------------------

void check_whole_library(std::string_view base_name) {
  auto lib = loaded_object(nullptr, base_name);
  ASSERT_TRUE(lib) << base_name << " is not loaded";
  ASSERT_NE(lib->eh_frame_hdr, nullptr);
  const ReadelfFrames& rf = readelf_frames(lib->path);
  size_t readelf_fdes = rf.count(".eh_frame");
  ASSERT_GT(readelf_fdes, 1000u);

  Built mem = from_memory(*lib);
  Built file = from_file(lib->path, 0);
  EXPECT_EQ(mem.stats.error, "");
  EXPECT_EQ(file.stats.error, "");
  EXPECT_EQ(file.stats.fdes, readelf_fdes);
  EXPECT_EQ(mem.stats.fdes, readelf_fdes);  // the search table lists them all
  EXPECT_EQ(mem.table.rows.size(), file.table.rows.size());
  EXPECT_EQ(mem.table.base, file.table.base + lib->bias);

  Coverage cm = compare(mem.table, rf, ".eh_frame", lib->bias);
  Coverage cf = compare(file.table, rf, ".eh_frame", 0);
  expect_agreement(cm, std::string(base_name) + " (memory)");
  expect_agreement(cf, std::string(base_name) + " (file)");
  EXPECT_EQ(cm.rows, cf.rows);
  EXPECT_EQ(cm.fdes, readelf_fdes);
  EXPECT_EQ(cf.unsupported_fdes, file.stats.unsupported_fdes);
  EXPECT_EQ(cm.unsupported_fdes, mem.stats.unsupported_fdes);

  std::cerr << base_name << ": " << cm.fdes << " FDEs, " << cm.rows << " readelf rows compared (" << cm.skipped
            << " skipped), " << cm.unsupported_rows << " rows in " << cm.unsupported_fdes << " FDEs unsupported\n";
  for (const auto& [kind, n] : cm.unsupported_kinds) std::cerr << "  unsupported: " << kind << " (" << n << " FDEs)\n";
  const FrameTable& t = mem.table;
  size_t bytes = t.rows.size() * sizeof(FrameRow) + (t.function_starts.size() + t.function_ends.size()) * 4;
  std::cerr << "  build: " << mem.ms << " ms from memory, " << file.ms << " ms from the file (section in hand); "
            << t.rows.size() << " rows of " << sizeof(FrameRow) << " bytes, " << t.function_starts.size()
            << " functions, " << bytes / 1024 << " KiB; " << mem.stats.cies << " CIEs\n";
}

TEST(FrameTableCoverage, WholeLibc) { check_whole_library("libc.so.6"); }
TEST(FrameTableCoverage, WholeLibstdcxx) { check_whole_library("libstdc++.so.6"); }

// Everything else this process has loaded (ld.so, libm, libgcc_s, the vDSO,
// libelfin, fmt, this executable): no errors, and readelf agrees where
// there is a file to run it on.
TEST(FrameTableCoverage, EveryLoadedObject) {
  std::vector<LoadedObject> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        LoadedObject o{info->dlpi_name && *info->dlpi_name ? info->dlpi_name : self_exe(), info->dlpi_addr, nullptr};
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_GNU_EH_FRAME) {
            o.eh_frame_hdr = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
          }
        }
        if (o.eh_frame_hdr) static_cast<std::vector<LoadedObject>*>(data)->push_back(o);
        return 0;
      },
      &objects);
  ASSERT_GE(objects.size(), 5u);
  bool vdso = false;
  for (const LoadedObject& o : objects) {
    Built mem = from_memory(o);
    EXPECT_EQ(mem.stats.error, "") << o.path;
    EXPECT_GT(mem.table.rows.size(), 0u) << o.path;
    if (access(o.path.c_str(), R_OK) != 0) {  // linux-vdso.so.1: in memory only
      vdso = true;
      std::cerr << o.path << ": " << mem.stats.fdes << " FDEs, " << mem.table.rows.size() << " rows\n";
      continue;
    }
    const ReadelfFrames& rf = readelf_frames(o.path);
    Coverage cov = compare(mem.table, rf, ".eh_frame", o.bias);
    EXPECT_EQ(cov.fdes, rf.count(".eh_frame")) << o.path;
    EXPECT_EQ(mem.stats.fdes, rf.count(".eh_frame")) << o.path;
    expect_agreement(cov, o.path);
    std::cerr << o.path << ": " << cov.fdes << " FDEs, " << cov.rows << " rows compared, " << cov.unsupported_rows
              << " unsupported";
    for (const auto& [kind, n] : cov.unsupported_kinds) std::cerr << " [" << kind << ": " << n << " FDEs]";
    std::cerr << "\n";
  }
  EXPECT_TRUE(vdso) << "no vDSO among the loaded objects";
}

// ---------------------------------------------------------------------------
// Hand-built CFI: semantics readelf comparisons on real files do not reach
// ---------------------------------------------------------------------------

/// Writes CIEs and FDEs byte by byte.
struct Cfi {
  std::vector<uint8_t> bytes;

  void u8(uint8_t v) { bytes.push_back(v); }
  void u16(uint16_t v) { raw(&v, 2); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void raw(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  void uleb(uint64_t v) {
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      u8(static_cast<uint8_t>(b | (v ? 0x80 : 0)));
    } while (v);
  }
  void sleb(int64_t v) {
    while (true) {
      uint8_t b = v & 0x7f;
      v >>= 7;
      bool done = (v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40));
      u8(static_cast<uint8_t>(b | (done ? 0 : 0x80)));
      if (done) return;
    }
  }
  void str(const char* s) { raw(s, std::strlen(s) + 1); }

  /// Starts an entry (32- or 64-bit length); returns where its length goes.
  size_t begin_entry(bool dwarf64) {
    if (dwarf64) u32(0xffffffff);
    size_t at = bytes.size();
    dwarf64 ? u64(0) : u32(0);
    return at;
  }
  void end_entry(size_t at, bool dwarf64) {
    while ((bytes.size() - at) % 8 != (dwarf64 ? 0 : 4)) u8(0);  // DW_CFA_nop padding
    uint64_t len = bytes.size() - at - (dwarf64 ? 8 : 4);
    if (dwarf64) {
      std::memcpy(&bytes[at], &len, 8);
    } else {
      uint32_t l = static_cast<uint32_t>(len);
      std::memcpy(&bytes[at], &l, 4);
    }
  }
};

// The usual x86-64 CIE program: CFA = rsp + 8, return address at CFA - 8.
void entry_program(Cfi& c) {
  c.u8(0x0c), c.uleb(7), c.uleb(8);  // def_cfa rsp 8
  c.u8(0x80 | 16), c.uleb(1);        // offset r16 at cfa-8
}

/// A .debug_frame CIE (version 1, 3 or 4) at the current end; returns its offset.
size_t debug_cie(Cfi& c, int version, bool dwarf64, uint64_t ra = 16) {
  size_t start = c.bytes.size();
  size_t len = c.begin_entry(dwarf64);
  dwarf64 ? c.u64(~uint64_t{0}) : c.u32(0xffffffff);
  c.u8(static_cast<uint8_t>(version));
  c.str("");
  if (version >= 4) c.u8(8), c.u8(0);  // address_size, segment_selector_size
  c.uleb(1);                             // code alignment
  c.sleb(-8);                            // data alignment
  version == 1 ? c.u8(static_cast<uint8_t>(ra)) : c.uleb(ra);
  entry_program(c);
  c.end_entry(len, dwarf64);
  return start;
}

template <typename Program>
void debug_fde(Cfi& c, size_t cie, uint64_t begin, uint64_t range, bool dwarf64, Program program) {
  size_t len = c.begin_entry(dwarf64);
  dwarf64 ? c.u64(cie) : c.u32(static_cast<uint32_t>(cie));
  c.u64(begin);
  c.u64(range);
  program(c);
  c.end_entry(len, dwarf64);
}

struct Expect {
  uint64_t pc;
  CfaRule rule;
  int32_t cfa;
  int16_t bp = FrameRow::kBpUnchanged;
  uint8_t flags = 0;
};

void expect_rows(const FrameTable& t, std::initializer_list<Expect> rows) {
  for (const Expect& e : rows) {
    const FrameRow* row = t.find(e.pc);
    if (e.rule == CfaRule::None) {
      EXPECT_EQ(row, nullptr) << fmt_hex(e.pc) << ": " << describe(row);
      continue;
    }
    ASSERT_NE(row, nullptr) << fmt_hex(e.pc);
    EXPECT_EQ(row->rule, e.rule) << fmt_hex(e.pc);
    EXPECT_EQ(row->cfa_offset, e.cfa) << fmt_hex(e.pc);
    EXPECT_EQ(row->bp_offset, e.bp) << fmt_hex(e.pc);
    EXPECT_EQ(row->flags, e.flags) << fmt_hex(e.pc);
  }
}

TEST(FrameTableBuilt, RowsAndBoundaries) {
  for (int version : {1, 3, 4}) {
    for (bool dwarf64 : {false, true}) {
      SCOPED_TRACE("version " + std::to_string(version) + (dwarf64 ? " 64-bit" : " 32-bit"));
      Cfi c;
      size_t cie = debug_cie(c, version, dwarf64);
      // 0x1000..0x1040: a typical function with a remembered epilogue.
      debug_fde(c, cie, 0x1000, 0x40, dwarf64, [](Cfi& c) {
        c.u8(0x40 | 1);                    // advance 1
        c.u8(0x0e), c.uleb(16);            // def_cfa_offset 16
        c.u8(0x80 | 6), c.uleb(2);         // rbp at cfa-16
        c.u8(0x40 | 3);                    // advance 3 -> 0x1004
        c.u8(0x0d), c.uleb(6);             // def_cfa_register rbp
        c.u8(0x2e), c.uleb(32);            // GNU_args_size (ignored)
        c.u8(0x02), c.u8(0x10);            // advance_loc1 16 -> 0x1014
        c.u8(0x0a);                        // remember_state
        c.u8(0x0c), c.uleb(7), c.uleb(8);  // def_cfa rsp 8
        c.u8(0xc0 | 6);                    // restore rbp
        c.u8(0x03), c.u16(1);              // advance_loc2 1 -> 0x1015
        c.u8(0x0b);                        // restore_state: rbp + 16 and rbp saved again
        c.u8(0x04), c.u32(0);              // advance_loc4 0: no row
        c.u8(0x0e), c.uleb(16);            // def_cfa_offset 16: no change, the rows merge
        c.u8(0x40 | 1);                    // advance 1 -> 0x1016
        c.u8(0x0c), c.uleb(7), c.uleb(8);  // def_cfa rsp 8 (a second epilogue that leaves rbp's rule)
      });
      // 0x1040..0x1050 right after: no gap row between them.
      debug_fde(c, cie, 0x1040, 0x10, dwarf64, [](Cfi& c) {
        c.u8(0x40 | 4);
        c.u8(0x13), c.sleb(-3);  // def_cfa_offset_sf: -3 * -8 = 24
        c.u8(0x40 | 4);
        c.u8(0x12), c.uleb(6), c.sleb(-2);  // def_cfa_sf rbp, 16
        c.u8(0x11), c.uleb(6), c.sleb(3);   // offset_extended_sf rbp at cfa-24
      });
      // 0x1060..0x1070 after a gap: _start-like (undefined return address).
      debug_fde(c, cie, 0x1060, 0x10, dwarf64, [](Cfi& c) { c.u8(0x07), c.uleb(16); });
      FrameTableBuilder builder;
      FrameTableStats stats = builder.add_debug_frame(c.bytes, 0);
      EXPECT_EQ(stats.error, "");
      EXPECT_EQ(stats.cies, 1u);
      EXPECT_EQ(stats.fdes, 3u);
      EXPECT_EQ(stats.unsupported_fdes, 0u);
      FrameTable t = builder.finish("built");
      EXPECT_EQ(t.base, 0x1000u);
      EXPECT_EQ(t.end, 0x1070u);
      expect_rows(t, {
                         {0x0fff, CfaRule::None, 0},  // below base
                         {0x1000, CfaRule::Sp, 8},
                         {0x1001, CfaRule::Sp, 16, -16},
                         {0x1003, CfaRule::Sp, 16, -16},
                         {0x1004, CfaRule::Bp, 16, -16},
                         {0x1013, CfaRule::Bp, 16, -16},
                         {0x1014, CfaRule::Sp, 8},
                         {0x1015, CfaRule::Bp, 16, -16},
                         {0x1016, CfaRule::Sp, 8, -16},
                         {0x103f, CfaRule::Sp, 8, -16},  // end - 1
                         {0x1040, CfaRule::Sp, 8},  // the next FDE, no gap
                         {0x1044, CfaRule::Sp, 24},
                         {0x1048, CfaRule::Bp, 16, -24},
                         {0x104f, CfaRule::Bp, 16, -24},
                         {0x1050, CfaRule::None, 0},  // end: a gap
                         {0x105f, CfaRule::None, 0},
                         {0x1060, CfaRule::Sp, 8, FrameRow::kBpUnchanged, FrameRow::kOutermost},
                         {0x106f, CfaRule::Sp, 8, FrameRow::kBpUnchanged, FrameRow::kOutermost},
                         {0x1070, CfaRule::None, 0},  // table end
                         {~uint64_t{0}, CfaRule::None, 0},
                     });
      EXPECT_EQ(t.rows.front().start, 0u);
      for (size_t i = 1; i < t.rows.size(); ++i) {
        EXPECT_LT(t.rows[i - 1].start, t.rows[i].start);
        const FrameRow& a = t.rows[i - 1];
        const FrameRow& b = t.rows[i];
        EXPECT_FALSE(a.rule == b.rule && a.cfa_offset == b.cfa_offset && a.bp_offset == b.bp_offset &&
                     a.flags == b.flags)
            << "identical consecutive rows at " << b.start;
      }
      EXPECT_EQ(t.function_starts, (std::vector<uint32_t>{0, 0x40, 0x60}));
      EXPECT_EQ(t.function_start(0x1000), 0x1000u);
      EXPECT_EQ(t.function_start(0x103f), 0x1000u);
      EXPECT_EQ(t.function_start(0x1040), 0x1040u);
      EXPECT_EQ(t.function_start(0x1055), 0u);
      EXPECT_EQ(t.function_start(0x106f), 0x1060u);
      EXPECT_EQ(t.function_start(0x1070), 0u);
      EXPECT_EQ(t.function_start(0xfff), 0u);
    }
  }
}

TEST(FrameTableBuilt, UnsupportedRulesGiveNone) {
  Cfi c;
  size_t cie = debug_cie(c, 3, false);
  debug_fde(c, cie, 0x2000, 0x30, false, [](Cfi& c) {
    c.u8(0x40 | 4);
    c.u8(0x0c), c.uleb(10), c.uleb(0);  // def_cfa r10 0 -> None
    c.u8(0x40 | 4);                     // 0x2008
    c.u8(0x0f), c.uleb(2), c.u8(0x77), c.u8(0x10);  // def_cfa_expression DW_OP_breg7 16 -> None
    c.u8(0x40 | 4);                                  // 0x200c
    c.u8(0x0f), c.uleb(3), c.u8(0x76), c.sleb(-8), c.u8(0x06);  // breg6 -8; deref -> BpDeref
    c.u8(0x10), c.uleb(6), c.uleb(2), c.u8(0x76), c.u8(0x00);   // rbp at rbp+0
    c.u8(0x40 | 4);                                              // 0x2010
    c.u8(0x09), c.uleb(16), c.uleb(1);                           // RA in rdx -> None
    c.u8(0x40 | 4);                                              // 0x2014
    c.u8(0x0c), c.uleb(7), c.uleb(16);                           // def_cfa rsp 16
    c.u8(0x05), c.uleb(16), c.uleb(1);                           // offset_extended RA at cfa-8
    c.u8(0x10), c.uleb(6), c.uleb(1), c.u8(0x9c);                // rbp: some other expression -> None
    c.u8(0x40 | 4);                                              // 0x2018
    c.u8(0x08), c.uleb(6);                                       // same_value rbp
    c.u8(0x14), c.uleb(7), c.uleb(0);                            // val_offset rsp = CFA: fine
    c.u8(0x40 | 4);                                              // 0x201c
    c.u8(0x2f), c.uleb(6), c.uleb(3);                            // GNU_negative_offset_extended rbp: cfa+24
    c.u8(0x40 | 4);                                              // 0x2020
    c.u8(0x15), c.uleb(7), c.sleb(-1);                           // val_offset_sf rsp = CFA+8 -> None
    c.u8(0x40 | 4);                                              // 0x2024
    c.u8(0x07), c.uleb(7);                                       // undefined rsp: followed as unchanged
    c.u8(0x06), c.uleb(6);                                       // restore_extended rbp (CIE: unset)
    c.u8(0x40 | 4);                                              // 0x2028
    c.u8(0x3f);                                                  // an unknown opcode: None from here
  });
  debug_fde(c, cie, 0x3000, 0x10, false, [](Cfi& c) {
    // The PLT expression with a .plt.sec-style threshold of 10.
    c.u8(0x0f), c.uleb(13);
    for (uint8_t b : {0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22}) c.u8(b);
    c.u8(0x00), c.u8(0x00);  // two more expression bytes, so the length check counts: not recognized
  });
  debug_fde(c, cie, 0x3010, 0x10, false, [](Cfi& c) {
    c.u8(0x0f), c.uleb(11);
    for (uint8_t b : {0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22}) c.u8(b);
  });
  FrameTableBuilder builder;
  FrameTableStats stats = builder.add_debug_frame(c.bytes, 0);
  EXPECT_EQ(stats.error, "");
  EXPECT_EQ(stats.fdes, 3u);
  EXPECT_EQ(stats.unsupported_fdes, 2u);
  FrameTable t = builder.finish("built");
  expect_rows(t, {
                     {0x2000, CfaRule::Sp, 8},
                     {0x2004, CfaRule::None, 0},
                     {0x2008, CfaRule::None, 0},
                     {0x200c, CfaRule::BpDeref, -8, 0},
                     {0x2010, CfaRule::None, 0},
                     {0x2014, CfaRule::None, 0},
                     {0x2018, CfaRule::Sp, 16},
                     {0x201c, CfaRule::Sp, 16, 24},
                     {0x2020, CfaRule::None, 0},
                     {0x2024, CfaRule::Sp, 16},
                     {0x2027, CfaRule::Sp, 16},
                     {0x2028, CfaRule::None, 0},
                     {0x202f, CfaRule::None, 0},
                     {0x3000, CfaRule::None, 0},
                     {0x3010, CfaRule::Plt, 10},
                     {0x301f, CfaRule::Plt, 10},
                 });
  EXPECT_EQ(t.function_start(0x2028), 0x2000u);  // a None row inside an FDE is still its function
}

TEST(FrameTableBuilt, ReturnAddressColumnMustBe16) {
  Cfi c;
  size_t cie = debug_cie(c, 3, false, /*ra=*/30);
  debug_fde(c, cie, 0x4000, 0x10, false, [](Cfi&) {});
  FrameTableBuilder builder;
  FrameTableStats stats = builder.add_debug_frame(c.bytes, 0);
  EXPECT_EQ(stats.error, "");
  EXPECT_EQ(stats.unsupported_fdes, 1u);
  FrameTable t = builder.finish("built");
  EXPECT_EQ(t.find(0x4000), nullptr);
  EXPECT_EQ(t.function_start(0x4008), 0x4000u);
}

/// An .eh_frame CIE with augmentation `aug` (its data written by `data`).
template <typename Data>
size_t eh_cie(Cfi& c, const char* aug, Data data, bool dwarf64 = false) {
  size_t start = c.bytes.size();
  size_t len = c.begin_entry(dwarf64);
  dwarf64 ? c.u64(0) : c.u32(0);
  c.u8(1);
  c.str(aug);
  c.uleb(1);
  c.sleb(-8);
  c.u8(16);
  Cfi d;
  data(d);
  c.uleb(d.bytes.size());
  c.raw(d.bytes.data(), d.bytes.size());
  entry_program(c);
  c.end_entry(len, dwarf64);
  return start;
}

TEST(FrameTableBuilt, EhFramePointerEncodings) {
  // Section at file address 0x10000, loaded with bias 0x7000'0000'0000.
  constexpr uint64_t section_address = 0x10000, bias = 0x7000'0000'0000;
  Cfi c;
  // zPLR: an indirect pcrel personality, udata4 LSDA encoding, udata8 FDE pointers.
  size_t cie1 = eh_cie(c, "zPLR", [](Cfi& d) {
    d.u8(0x9b), d.u32(0x1234);  // personality: indirect|pcrel|sdata4
    d.u8(0x03);                 // LSDA: udata4
    d.u8(0x04);                 // FDE pointers: udata8 absolute
  });
  auto fde = [&](size_t cie, auto pointers, auto program, bool dwarf64 = false) {
    size_t len = c.begin_entry(dwarf64);
    size_t id_at = c.bytes.size();
    dwarf64 ? c.u64(id_at - cie) : c.u32(static_cast<uint32_t>(id_at - cie));
    pointers(c);
    program(c);
    c.end_entry(len, dwarf64);
  };
  fde(cie1, [](Cfi& c) { c.u64(0x1000), c.u64(0x10), c.uleb(4), c.u32(0); },
      [](Cfi& c) { c.u8(0x40 | 2), c.u8(0x0e), c.uleb(32); });
  // zRS (signal frame) with a pcrel|sdata4 FDE pointer and a 'B' letter it must step over.
  size_t cie2 = eh_cie(c, "zRSB", [](Cfi& d) { d.u8(0x1b); });
  fde(cie2, [&](Cfi& c) {
        int32_t rel = static_cast<int32_t>(0x2000 - (section_address + c.bytes.size()));
        c.u32(static_cast<uint32_t>(rel)), c.u32(0x8), c.uleb(0);
      },
      [](Cfi& c) { c.u8(0x0f), c.uleb(1), c.u8(0x9c); });
  // A 64-bit CIE and FDE, udata2 pointers, with a set_loc.
  size_t cie3 = eh_cie(c, "zR", [](Cfi& d) { d.u8(0x02); }, true);
  fde(cie3, [](Cfi& c) { c.u16(0x3000), c.u16(0x20), c.uleb(0); },
      [](Cfi& c) { c.u8(0x01), c.u16(0x3010), c.u8(0x0e), c.uleb(40); }, true);
  c.u32(0);  // terminator
  c.u32(0xdeadbeef);  // after it: never read

  FrameTableBuilder builder;
  FrameTableStats stats = builder.add_eh_frame(c.bytes, section_address, bias);
  EXPECT_EQ(stats.error, "");
  EXPECT_EQ(stats.cies, 3u);
  EXPECT_EQ(stats.fdes, 3u);
  EXPECT_EQ(stats.unsupported_fdes, 0u);
  FrameTable t = builder.finish("built");
  expect_rows(t, {
                     {bias + 0x1000, CfaRule::Sp, 8},
                     {bias + 0x1002, CfaRule::Sp, 32},
                     {bias + 0x100f, CfaRule::Sp, 32},
                     {bias + 0x1010, CfaRule::None, 0},
                     {bias + 0x2000, CfaRule::Signal, 0},
                     {bias + 0x2007, CfaRule::Signal, 0},
                     {bias + 0x2008, CfaRule::None, 0},
                     {bias + 0x3000, CfaRule::Sp, 8},
                     {bias + 0x300f, CfaRule::Sp, 8},
                     {bias + 0x3010, CfaRule::Sp, 40},
                     {bias + 0x301f, CfaRule::Sp, 40},
                     {bias + 0x3020, CfaRule::None, 0},
                 });
  EXPECT_EQ(t.function_starts.size(), 3u);
}

TEST(FrameTableBuilt, TextRelativePointersAreAnError) {
  Cfi c;
  size_t cie = eh_cie(c, "zR", [](Cfi& d) { d.u8(0x2b); });  // textrel|sdata4
  size_t len = c.begin_entry(false);
  c.u32(static_cast<uint32_t>(c.bytes.size() - cie));
  c.u32(0x100), c.u32(0x10), c.uleb(0);
  c.end_entry(len, false);
  FrameTableBuilder builder;
  FrameTableStats stats = builder.add_eh_frame(c.bytes, 0x1000, 0);
  EXPECT_NE(stats.error.find("encoding 0x2b"), std::string::npos) << stats.error;
  EXPECT_TRUE(builder.finish("built").rows.empty());
}

TEST(FrameTableBuilt, OverlappingFdes) {
  Cfi c;
  size_t cie = debug_cie(c, 1, false);
  auto grow = [](uint64_t to) { return [to](Cfi& c) { c.u8(0x40 | 1), c.u8(0x0e), c.uleb(to); }; };
  debug_fde(c, cie, 0x1000, 0x100, false, grow(16));  // 0x1000..0x1100
  debug_fde(c, cie, 0x1080, 0x10, false, grow(32));   // inside it: wins from 0x1080, the rest is lost
  debug_fde(c, cie, 0x1000, 0x8, false, grow(48));    // same start, added later: ignored
  FrameTableBuilder builder;
  EXPECT_EQ(builder.add_debug_frame(c.bytes, 0).error, "");
  FrameTable t = builder.finish("built");
  expect_rows(t, {
                     {0x1001, CfaRule::Sp, 16},
                     {0x107f, CfaRule::Sp, 16},
                     {0x1081, CfaRule::Sp, 32},
                     {0x108f, CfaRule::Sp, 32},
                     {0x1090, CfaRule::None, 0},
                     {0x10ff, CfaRule::None, 0},
                 });
  EXPECT_EQ(t.function_start(0x107f), 0x1000u);
  EXPECT_EQ(t.function_start(0x1085), 0x1080u);
  EXPECT_EQ(t.function_start(0x1095), 0u);
}

TEST(FrameTableBuilt, EhFrameHdrWithoutTable) {
  // .eh_frame_hdr with fde_count omitted: the FDEs are read in order from eh_frame_ptr.
  Cfi eh;
  size_t cie = eh_cie(eh, "zR", [](Cfi& d) { d.u8(0x04); });  // absolute udata8 pointers
  size_t len = eh.begin_entry(false);
  eh.u32(static_cast<uint32_t>(eh.bytes.size() - cie));
  eh.u64(0x5000), eh.u64(0x10), eh.uleb(0);
  eh.end_entry(len, false);
  eh.u32(0);
  alignas(8) uint8_t hdr[12] = {1, 0x04 /* udata8 */, 0xff /* omit */, 0xff};
  uint64_t eh_frame = reinterpret_cast<uintptr_t>(eh.bytes.data());
  std::memcpy(hdr + 4, &eh_frame, 8);
  FrameTableBuilder builder;
  FrameTableStats stats = builder.add_eh_frame_hdr(hdr);
  EXPECT_EQ(stats.error, "");
  EXPECT_EQ(stats.fdes, 1u);
  FrameTable t = builder.finish("built");
  expect_rows(t, {{0x5000, CfaRule::Sp, 8}, {0x500f, CfaRule::Sp, 8}, {0x5010, CfaRule::None, 0}});

  uint8_t bad_version[8] = {2, 0x1b, 0x03, 0x3b};
  FrameTableBuilder b2;
  EXPECT_NE(b2.add_eh_frame_hdr(bad_version).error, "");
}

// ---------------------------------------------------------------------------
// 8: malformed input
// ---------------------------------------------------------------------------

TEST(FrameTableMalformed, TruncatedAndGarbage) {
  auto libc = loaded_object(nullptr, "libc.so.6");
  ASSERT_TRUE(libc);
  std::string error;
  auto elf = ElfFile::open(libc->path, error);
  ASSERT_TRUE(elf) << error;
  ElfFile::Section eh = elf->section(".eh_frame");
  ASSERT_GT(eh.bytes.size(), 4096u);
  const ReadelfFrames& rf = readelf_frames(libc->path);

  // Cut inside an entry (a few bytes past an FDE's start): an error, the FDEs before it kept.
  for (size_t n : {size_t{100}, rf.count(".eh_frame") / 2}) {
    const ReadelfEntry& f = rf.fdes[n];
    for (size_t extra : {2, 9, 17}) {
      FrameTableBuilder builder;
      FrameTableStats stats = builder.add_eh_frame(eh.bytes.first(f.offset + extra), eh.address, 0);
      EXPECT_NE(stats.error, "") << "cut at " << f.offset + extra;
      EXPECT_GE(stats.fdes, n - 5);
      FrameTable t = builder.finish("cut");
      EXPECT_NE(t.find(rf.fdes[n / 2].begin), nullptr);
    }
  }

  std::mt19937_64 rng(12345);
  // Pure garbage: the first length is already wrong.
  for (size_t size : {1, 3, 4, 7, 64, 4096}) {
    std::vector<uint8_t> junk(size);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    junk[0] = 0xf7;  // a length no section this small can hold
    FrameTableBuilder builder;
    EXPECT_NE(builder.add_eh_frame(junk, 0x1000, 0).error, "") << size;
    EXPECT_NE(builder.add_debug_frame(junk, 0).error, "") << size;
    builder.finish("junk");
  }
  // Random mutations of real CFI (a small fixture's, and the start of libc's):
  // any result, but no crash (run under ASan too), and lookups stay in bounds.
  std::string fixture = test::fixture("frames_eh");
  auto small = ElfFile::open(fixture, error);
  ASSERT_TRUE(small) << error;
  ElfFile::Section small_eh = small->section(".eh_frame");
  ElfFile::Section small_debug = ElfFile::open(test::fixture("frames_debug_frame"), error)->section(".debug_frame");
  ASSERT_FALSE(small_debug.bytes.empty());
  size_t errors = 0, runs = 0;
  for (int round = 0; round < 3000; ++round) {
    int which = round % 3;
    std::span<const uint8_t> source = which == 0 ? small_eh.bytes
                                      : which == 1 ? small_debug.bytes
                                                   : eh.bytes.first(2048);
    std::vector<uint8_t> bytes(source.begin(), source.end());
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
    FrameTableBuilder builder;
    FrameTableStats stats = which == 1 ? builder.add_debug_frame(bytes, 0) : builder.add_eh_frame(bytes, 0x1000, 0);
    FrameTable t = builder.finish("mutated");
    for (int q = 0; q < 50; ++q) {
      uint64_t pc = t.base + rng() % (t.end - t.base + 64);
      const FrameRow* row = t.find(pc);
      if (row) {
        EXPECT_TRUE(row >= t.rows.data() && row < t.rows.data() + t.rows.size());
      }
      t.function_start(pc);
    }
    errors += !stats.error.empty();
    ++runs;
  }
  std::cerr << "mutated CFI: " << errors << " of " << runs << " parses reported an error\n";
  EXPECT_GT(errors, 0u);
}

}  // namespace
}  // namespace coz
