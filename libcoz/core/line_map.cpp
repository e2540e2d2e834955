#include "line_map.h"

#include <algorithm>
#include <exception>
#include <optional>

#include <fmt/format.h>

#include "dwarf_lines.h"
#include "dwarf_scopes.h"
#include "elf_file.h"
#include "debug_file.h"
#include "symbol_names.h"
#include "symbol_table.h"

namespace coz {

namespace {
// " [PROGRAM]": plain storage, neither a function-local static (whose
// initialisation guard, held by a thread at the moment another forked,
// stayed held in the child forever: both of its threads hung in
// __cxa_guard_acquire at their first line name) nor an object with a
// destructor (names are taken at exit).
char g_program_suffix[128];
size_t g_program_suffix_size = 0;
}  // namespace

void set_line_program(std::string_view program) {
  if (program.empty() || program.size() + 3 > sizeof g_program_suffix) return;
  std::string suffix = " [" + std::string(program) + "]";
  suffix.copy(g_program_suffix, suffix.size());
  g_program_suffix_size = suffix.size();
}

std::string_view line_program_suffix() { return {g_program_suffix, g_program_suffix_size}; }

std::string SourceLine::name() const {
  std::string name = file + ":" + (line == 0 ? function : std::to_string(line));
  name += line_program_suffix();
  return name;
}

namespace {
constexpr uint32_t not_in_scope = UINT32_MAX;
constexpr uint32_t no_line = UINT32_MAX;
constexpr uint32_t not_known = UINT32_MAX - 1;  // memo entries not computed yet
}  // namespace

struct LineMap::ObjectState {
  uintptr_t load_bias = 0;
  const SourceFilter* in_scope = nullptr;
  std::vector<ElfFile::CodeSegment> code;
  std::vector<int8_t> scope_by_file;  // per global file id: -1 unknown, 0 out, 1 in (the filter runs once per file)
  std::vector<uint32_t> unit_files;   // per file of the current unit: global file id or not_in_scope
  uint32_t file_base = 1;             // the current unit's first file number (DWARF 5: 0)
  std::optional<DwarfScopes> scopes;  // null without .debug_info
  bool unit_scopes = false;           // scopes holds the current unit's
  std::vector<uint32_t> site_line;    // per scope of the unit: call_site_line() memo
  std::vector<uint32_t> function_of;  // per scope of the unit: index into functions
  std::deque<std::string> functions;  // demangled names, for function_of
  std::unordered_map<std::string_view, uint32_t> function_ids;  // raw name (in the mapped file) -> functions
  size_t first_range = 0;             // pending_ index where this object's ranges start
  size_t inlined_ranges = 0;
  size_t lines = 0;
  size_t failed_units = 0;
  size_t units = 0;
  std::string first_error;
};

ObjectLines LineMap::add_object(const std::string& path, uintptr_t load_bias, const SourceFilter& in_scope,
                                std::string_view debug_root) {
  ObjectLines result;
  result.path = path;
  size_t pending_before = pending_.size();
  try {
    std::string error;
    std::optional<ElfFile> elf = ElfFile::open(path, error);
    if (!elf) {
      result.error = error;
      return result;
    }
    ObjectState object;
    object.load_bias = load_bias;
    object.in_scope = &in_scope;
    object.code = elf->code_segments();
    object.first_range = pending_.size();
    for (const ElfFile::CodeSegment& c : object.code) pending_code_.emplace_back(c.begin + load_bias, c.end + load_bias);
    ++object_count_;

    // The DWARF is in the binary, or in a separate debug file at the same addresses.
    const ElfFile* debug = &*elf;
    std::optional<ElfFile> debug_file;
    if (!elf->section(".debug_line").present) {
      result.debug_file = find_debug_file(*elf, path, debug_root);
      if (!result.debug_file.empty()) debug_file = ElfFile::open(result.debug_file, error);
      if (debug_file) debug = &*debug_file;
    }
    ElfFile::Section line = debug->section(".debug_line");
    if (line.bytes.empty() && line.error.empty()) {
      // No debug info: one range per function symbol, named BINARY:FUNCTION.
      result.has_debug_info = false;
      add_function_symbols(*elf, path, object);
      result.ranges = pending_.size() - object.first_range;
      result.function_level = result.ranges > 0;
      result.lines = object.lines;
      return result;
    }
    const char* names[] = {".debug_line", ".debug_line_str", ".debug_str", ".debug_info", ".debug_abbrev",
                           ".debug_addr", ".debug_str_offsets", ".debug_ranges", ".debug_rnglists"};
    std::span<const uint8_t> bytes[std::size(names)];
    for (size_t i = 0; i < std::size(names); ++i) {
      ElfFile::Section section = debug->section(names[i]);
      if (!section.error.empty()) {
        result.error = fmt::format("{}: {}", debug == &*elf ? path : result.debug_file, section.error);
        return result;
      }
      bytes[i] = section.bytes;
    }
    DwarfSections sections{bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8]};

    // dwz -m moved the strings and DIEs this file shares with others to a supplementary file.
    const std::string& debug_path = debug == &*elf ? path : result.debug_file;
    std::optional<ElfFile> supplementary;
    DwarfSections shared;
    std::string missing_supplementary;
    if (debug->has_section(".gnu_debugaltlink") || debug->has_section(".debug_sup")) {
      result.supplementary_file = find_supplementary_file(*debug, debug_path, debug_root);
      if (!result.supplementary_file.empty()) supplementary = ElfFile::open(result.supplementary_file, error);
      if (supplementary) {
        ElfFile::Section str = supplementary->section(".debug_str"), info = supplementary->section(".debug_info"),
                         abbrev = supplementary->section(".debug_abbrev");
        for (const ElfFile::Section* section : {&str, &info, &abbrev}) {
          if (!section->error.empty()) {
            missing_supplementary = fmt::format("{}: {}", result.supplementary_file, section->error);
          }
        }
        shared.str = str.bytes;
        shared.info = info.bytes;
        shared.abbrev = abbrev.bytes;
        sections.supplementary = &shared;
      } else {
        result.supplementary_file.clear();
        missing_supplementary = fmt::format(
            "{}: its supplementary debug file (dwz) was not found: functions and inlined calls go unnamed",
            debug_path);
      }
    }

    if (!sections.info.empty() && !sections.abbrev.empty()) object.scopes.emplace(sections);
    for_each_line_table(sections, [&](const LineTable& table) {
      ++object.units;
      if (!table.error.empty() && object.failed_units++ == 0) object.first_error = table.error;
      add_line_table(table, object);
    });
    result.ranges = pending_.size() - object.first_range;
    result.lines = object.lines;
    result.inlined_ranges = object.inlined_ranges;
    if (object.failed_units > 0) {
      // The other units were kept: the map is usable, but say what is missing.
      result.error = fmt::format("{}: {} of {} line tables unreadable, first: {}", path, object.failed_units,
                                 object.units, object.first_error);
    } else if (object.scopes && !object.scopes->error().empty()) {
      // Lines are all there; some inlined code may have been dropped or left without a function name.
      result.error = fmt::format("{}: .debug_info partly unreadable: {}", path, object.scopes->error());
    } else if (!missing_supplementary.empty()) {
      result.error = missing_supplementary;
    }
  } catch (const std::exception& e) {
    pending_.resize(pending_before);
    result.ranges = 0;
    result.lines = 0;
    result.error = path + ": " + e.what();
  } catch (...) {
    pending_.resize(pending_before);
    result.ranges = 0;
    result.lines = 0;
    result.error = path + ": unexpected error while reading line tables";
  }
  return result;
}

void LineMap::add_line_table(const LineTable& table, ObjectState& object) {
  object.unit_files.assign(table.files.size(), not_in_scope);
  bool any_in_scope = false;
  for (size_t i = 0; i < table.files.size(); ++i) {
    uint32_t id = intern_file(table.files[i]);
    if (id >= object.scope_by_file.size()) object.scope_by_file.resize(id + 1, -1);
    if (object.scope_by_file[id] < 0) object.scope_by_file[id] = (*object.in_scope)(files_[id]) ? 1 : 0;
    if (object.scope_by_file[id] == 1) {
      object.unit_files[i] = id;
      any_in_scope = true;
    }
  }
  // Neither its own rows nor its inlined calls can be in scope: skip the unit's .debug_info too.
  if (!any_in_scope) return;
  object.file_base = table.version >= 5 ? 0 : 1;
  object.unit_scopes = object.scopes && object.scopes->load_unit(table.offset);
  size_t scope_count = object.unit_scopes ? object.scopes->scopes().size() : 0;
  object.site_line.assign(scope_count, not_known);
  object.function_of.assign(scope_count, not_known);

  const std::vector<LineRow>& rows = table.rows;
  uint64_t last_key = UINT64_MAX;
  uint32_t last_index = 0;
  size_t sequence_start = 0;
  size_t segment_hint = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].end_sequence) {
      sequence_start = i + 1;
      continue;
    }
    if (i == sequence_start) {
      // Code the linker discarded (COMDAT duplicates, --gc-sections) keeps its
      // sequence, relocated to 0: it would alias the real code at low addresses.
      uint64_t a = rows[i].address;
      bool in_code = std::any_of(object.code.begin(), object.code.end(),
                                 [a](const ElfFile::CodeSegment& c) { return a >= c.begin && a < c.end; });
      if (!in_code && !object.code.empty()) {
        while (i + 1 < rows.size() && !rows[i + 1].end_sequence) ++i;
        continue;
      }
    }
    const LineRow& row = rows[i];
    const LineRow& next = rows[i + 1];  // exists: every sequence ends with an end_sequence row
    if (next.address <= row.address) continue;
    uint32_t file_id = row.line != 0 && row.file != LineTable::no_file ? object.unit_files[row.file] : not_in_scope;
    if (file_id != not_in_scope) {
      uint64_t key = (static_cast<uint64_t>(file_id) << 32) | row.line;
      if (key != last_key) {
        last_key = key;
        bool inserted = false;
        last_index = intern_line(file_id, row.line, inserted);
        if (inserted && object.unit_scopes) {
          uint32_t scope = object.scopes->innermost(row.address);
          if (scope != DwarfScopes::none) lines_[last_index].function = scope_function(scope, object);
        }
      }
      add_range(row.address + object.load_bias, next.address + object.load_bias, last_index, object);
      continue;
    }
    if (!object.unit_scopes) continue;
    // Out of scope (or line 0): charge each piece to the in-scope line that inlined it, if any.
    const auto& segments = object.scopes->segments();
    // Rows ascend within a sequence: step forward from the previous row's segment, search after a jump.
    size_t s = segment_hint;
    for (int steps = 0; s < segments.size() && segments[s].end <= row.address && steps < 4; ++steps) ++s;
    if (s >= segments.size() || segments[s].end <= row.address || (s > 0 && segments[s - 1].end > row.address)) {
      s = object.scopes->first_segment_after(row.address);
    }
    segment_hint = s;
    for (; s < segments.size() && segments[s].begin < next.address; ++s) {
      uint32_t line = call_site_line(segments[s].scope, object);
      if (line == no_line) continue;
      add_range(std::max(row.address, segments[s].begin) + object.load_bias,
                std::min(next.address, segments[s].end) + object.load_bias, line, object);
      ++object.inlined_ranges;
    }
  }
}

uint32_t LineMap::call_site_line(uint32_t scope, ObjectState& object) {
  uint32_t& memo = object.site_line[scope];
  if (memo != not_known) return memo;
  const DwarfScopes::Scope& s = object.scopes->scopes()[scope];
  uint32_t result = no_line;
  if (s.inlined) {
    uint64_t index = uint64_t{s.call_file} - object.file_base;  // wraps for file 0 in DWARF 4: caught below
    uint32_t file_id = index < object.unit_files.size() ? object.unit_files[index] : not_in_scope;
    if (file_id != not_in_scope && s.call_line != 0) {
      bool inserted = false;
      result = intern_line(file_id, s.call_line, inserted);
      if (inserted && s.parent != DwarfScopes::none) lines_[result].function = scope_function(s.parent, object);
    } else if (s.parent != DwarfScopes::none) {
      result = call_site_line(s.parent, object);  // recursion as deep as the inlining
    }
  }
  memo = result;
  return result;
}

const std::string& LineMap::scope_function(uint32_t scope, ObjectState& object) {
  uint32_t& id = object.function_of[scope];
  if (id == not_known) {
    std::string_view raw = object.scopes->raw_name(scope);
    auto [it, inserted] = object.function_ids.try_emplace(raw, static_cast<uint32_t>(object.functions.size()));
    if (inserted) object.functions.push_back(demangle(raw));
    id = it->second;
  }
  return object.functions[id];
}

void LineMap::add_range(uintptr_t begin, uintptr_t end, uint32_t line_index, ObjectState& object) {
  SourceLine* line = &lines_[line_index];
  if (line_object_[line_index] != object_count_) {
    line_object_[line_index] = object_count_;
    ++object.lines;
  }
  if (pending_.size() > object.first_range) {
    Range& last = pending_.back();
    if (last.line == line && last.end == begin) {
      last.end = end;
      return;
    }
  }
  pending_.push_back({begin, end, line});
}

void LineMap::add_function_symbols(const ElfFile& elf, const std::string& path, ObjectState& object) {
  std::vector<FunctionSymbol> symbols = function_symbols(elf);
  if (symbols.empty()) return;
  uint32_t file_id = intern_file(path);
  std::string key;
  for (const FunctionSymbol& symbol : symbols) {
    std::string function = demangle(symbol.name);
    key.assign(path).append(1, '\0').append(function);
    auto [it, inserted] = function_line_ids_.try_emplace(key, static_cast<uint32_t>(lines_.size()));
    if (inserted) {
      SourceLine& l = lines_.emplace_back();
      l.index = static_cast<uint32_t>(lines_.size() - 1);
      l.file = files_[file_id];
      l.line = 0;
      l.function = std::move(function);
      line_object_.push_back(0);
    }
    add_range(symbol.begin + object.load_bias, symbol.end + object.load_bias, it->second, object);
  }
}

uint32_t LineMap::intern_file(std::string_view path) {
  auto it = file_ids_.find(path);
  if (it != file_ids_.end()) return it->second;
  auto id = static_cast<uint32_t>(files_.size());
  files_.emplace_back(path);
  file_ids_.emplace(files_.back(), id);
  return id;
}

uint32_t LineMap::intern_line(uint32_t file_id, uint32_t line, bool& inserted) {
  uint64_t key = (static_cast<uint64_t>(file_id) << 32) | line;
  auto [it, added] = line_ids_.try_emplace(key, static_cast<uint32_t>(lines_.size()));
  inserted = added;
  if (inserted) {
    SourceLine& l = lines_.emplace_back();
    l.index = static_cast<uint32_t>(lines_.size() - 1);
    l.file = files_[file_id];
    l.line = line;
    line_object_.push_back(0);
  }
  return it->second;
}

void LineMap::finalize() {
  auto by_begin = [](const Range& a, const Range& b) { return a.begin < b.begin; };
  const RangeTable* current = published_.load(std::memory_order_relaxed);
  if (pending_.empty() && pending_code_.empty() && current) return;

  auto table = std::make_unique<RangeTable>();
  std::stable_sort(pending_.begin(), pending_.end(), by_begin);
  if (current) {
    std::vector<Range> kept = without_code_added(current->ranges);
    table->ranges.reserve(kept.size() + pending_.size());
    std::merge(kept.begin(), kept.end(), pending_.begin(), pending_.end(), std::back_inserter(table->ranges),
               by_begin);
  } else {
    table->ranges = std::move(pending_);
  }
  pending_.clear();
  pending_.shrink_to_fit();
  pending_code_.clear();

  // Make the ranges disjoint (overlaps only come from odd debug info: the
  // later range wins) and merge neighbours that name the same line.
  std::vector<Range>& r = table->ranges;
  size_t out = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    Range cur = r[i];
    if (out > 0) {
      Range& prev = r[out - 1];
      if (prev.end > cur.begin) {
        prev.end = cur.begin;
        if (prev.end <= prev.begin) --out;
      }
      if (out > 0 && r[out - 1].line == cur.line && r[out - 1].end == cur.begin) {
        r[out - 1].end = cur.end;
        continue;
      }
    }
    r[out++] = cur;
  }
  r.resize(out);
  r.shrink_to_fit();

  published_.store(table.get(), std::memory_order_release);
  tables_.push_back(std::move(table));
}

std::vector<LineMap::Range> LineMap::without_code_added(const std::vector<Range>& older) {
  // The code of the objects added since: older ranges there belong to an
  // object that is gone (its addresses are the new one's now). Without
  // this, the older range that started inside a new one won from its start
  // on (the later range wins an overlap), and a sample there went to a line
  // of a library no longer loaded.
  std::vector<std::pair<uintptr_t, uintptr_t>> code = pending_code_;
  for (const Range& r : pending_) code.emplace_back(r.begin, r.end);  // objects whose segments are unknown
  std::sort(code.begin(), code.end());
  size_t spans = 0;  // merged into a disjoint union (a range and its segment overlap)
  for (const auto& c : code) {
    if (spans > 0 && c.first <= code[spans - 1].second) {
      code[spans - 1].second = std::max(code[spans - 1].second, c.second);
    } else {
      code[spans++] = c;
    }
  }
  code.resize(spans);
  std::vector<Range> kept;
  kept.reserve(older.size());
  for (Range r : older) {
    // The spans are sorted and disjoint: cut r around each one it meets.
    auto span = std::upper_bound(code.begin(), code.end(), std::make_pair(r.begin, UINTPTR_MAX));
    if (span != code.begin()) --span;
    for (; span != code.end() && span->first < r.end && r.begin < r.end; ++span) {
      if (span->second <= r.begin) continue;
      if (span->first > r.begin) kept.push_back({r.begin, span->first, r.line});
      r.begin = std::max(r.begin, span->second);
    }
    if (r.begin < r.end) kept.push_back(r);
  }
  return kept;
}

size_t LineMap::group_by_function() {
  // Only the lines added since the last call: the others have their unit,
  // or stay themselves (called at each experiment of the two-phase mode's first phase).
  for (; grouped_lines_ < lines_.size(); ++grouped_lines_) {
    SourceLine& l = lines_[grouped_lines_];
    // Lines without a function stay themselves; so do function-level lines
    // of binaries without debug info, which already stand for a function.
    if (l.line == 0 || l.function.empty() || l.unit.load(std::memory_order_relaxed)) continue;
    auto [it, added] = unit_of_function_.try_emplace(l.function, nullptr);
    if (added) {
      SourceLine& unit = units_.emplace_back();
      unit.file = l.file;
      unit.function = l.function;
      it->second = &unit;
    }
    l.unit.store(it->second, std::memory_order_release);
  }
  return units_.size();
}

void LineMap::ungroup() {
  for (SourceLine& l : lines_) l.unit.store(nullptr, std::memory_order_release);
  grouped_lines_ = 0;
}

const SourceLine* LineMap::unit_of(const SourceLine& line) const {
  if (line.line == 0 || line.function.empty()) return nullptr;
  auto it = unit_of_function_.find(line.function);
  return it == unit_of_function_.end() ? nullptr : it->second;
}

SourceLine* LineMap::find(uintptr_t address) const {
  // Signal context: no allocation, no locks, no exceptions.
  const RangeTable* table = published_.load(std::memory_order_acquire);
  if (!table) return nullptr;
  const std::vector<Range>& r = table->ranges;
  auto it = std::upper_bound(r.begin(), r.end(), address,
                             [](uintptr_t a, const Range& range) { return a < range.begin; });
  if (it == r.begin()) return nullptr;
  --it;
  return address < it->end ? it->line : nullptr;
}

SourceLine* LineMap::find_line(std::string_view file, uint32_t line) {
  if (file.empty()) return nullptr;
  SourceLine* suffix_match = nullptr;
  for (uint32_t id = 0; id < files_.size(); ++id) {
    std::string_view path = files_[id];
    bool exact = path == file;
    bool suffix = !exact && path.size() > file.size() && path.ends_with(file) &&
                  path[path.size() - file.size() - 1] == '/';
    if (!exact && !suffix) continue;
    auto it = line_ids_.find((static_cast<uint64_t>(id) << 32) | line);
    if (it == line_ids_.end()) continue;
    if (exact) return &lines_[it->second];
    if (!suffix_match) suffix_match = &lines_[it->second];
  }
  return suffix_match;
}

uintptr_t LineMap::first_address(const SourceLine* line) const {
  const RangeTable* t = published_.load(std::memory_order_acquire);
  if (!t) return 0;
  for (const Range& r : t->ranges) {  // sorted by address: the first match is the lowest
    if (r.line == line) return r.begin;
  }
  return 0;
}

}  // namespace coz
