#include "line_map.h"

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "dwarf_lines.h"
#include "elf_file.h"

namespace coz {

namespace {
constexpr uint32_t not_in_scope = UINT32_MAX;
}  // namespace

struct LineMap::ObjectState {
  uintptr_t load_bias = 0;
  const SourceFilter* in_scope = nullptr;
  std::vector<ElfFile::CodeSegment> code;
  std::vector<int8_t> scope_by_file;  // per global file id: -1 unknown, 0 out, 1 in (the filter runs once per file)
  std::vector<uint32_t> unit_files;   // per file of the current unit: global file id or not_in_scope
  size_t first_range = 0;             // pending_ index where this object's ranges start
  size_t lines = 0;
  size_t failed_units = 0;
  size_t units = 0;
  std::string first_error;
};

ObjectLines LineMap::add_object(const std::string& path, uintptr_t load_bias, const SourceFilter& in_scope) {
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
    ElfFile::Section line = elf->section(".debug_line");
    if (line.bytes.empty()) {
      result.has_debug_info = false;  // the caller warns; symbol-table fallback: a later issue
      return result;
    }
    ElfFile::Section line_str = elf->section(".debug_line_str");
    ElfFile::Section str = elf->section(".debug_str");
    ElfFile::Section info = elf->section(".debug_info");
    ElfFile::Section abbrev = elf->section(".debug_abbrev");
    for (const ElfFile::Section* s : {&line, &line_str, &str, &info, &abbrev}) {
      if (s->compressed) {
        result.error = path + ": compressed debug sections are not supported yet";
        return result;
      }
    }
    DwarfSections sections{line.bytes, line_str.bytes, str.bytes, info.bytes, abbrev.bytes};

    ObjectState object;
    object.load_bias = load_bias;
    object.in_scope = &in_scope;
    object.code = elf->code_segments();
    object.first_range = pending_.size();
    ++object_count_;
    for_each_line_table(sections, [&](const LineTable& table) {
      ++object.units;
      if (!table.error.empty() && object.failed_units++ == 0) object.first_error = table.error;
      add_line_table(table, object);
    });
    result.ranges = pending_.size() - object.first_range;
    result.lines = object.lines;
    if (object.failed_units > 0) {
      // The other units were kept: the map is usable, but say what is missing.
      result.error = fmt::format("{}: {} of {} line tables unreadable, first: {}", path, object.failed_units,
                                 object.units, object.first_error);
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
  for (size_t i = 0; i < table.files.size(); ++i) {
    uint32_t id = intern_file(table.files[i]);
    if (id >= object.scope_by_file.size()) object.scope_by_file.resize(id + 1, -1);
    if (object.scope_by_file[id] < 0) object.scope_by_file[id] = (*object.in_scope)(files_[id]) ? 1 : 0;
    if (object.scope_by_file[id] == 1) object.unit_files[i] = id;
  }

  const std::vector<LineRow>& rows = table.rows;
  uint64_t last_key = UINT64_MAX;
  uint32_t last_index = 0;
  size_t sequence_start = 0;
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
                                 [a](const ElfFile::CodeSegment& s) { return a >= s.begin && a < s.end; });
      if (!in_code && !object.code.empty()) {
        while (i + 1 < rows.size() && !rows[i + 1].end_sequence) ++i;
        continue;
      }
    }
    const LineRow& row = rows[i];
    const LineRow& next = rows[i + 1];  // exists: every sequence ends with an end_sequence row
    if (row.line == 0 || row.file == LineTable::no_file || next.address <= row.address) continue;
    uint32_t file_id = object.unit_files[row.file];
    if (file_id == not_in_scope) continue;
    uint64_t key = (static_cast<uint64_t>(file_id) << 32) | row.line;
    if (key != last_key) {
      last_key = key;
      last_index = intern_line(file_id, row.line);
    }
    add_range(row.address + object.load_bias, next.address + object.load_bias, last_index, object);
  }
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

uint32_t LineMap::intern_file(std::string_view path) {
  auto it = file_ids_.find(path);
  if (it != file_ids_.end()) return it->second;
  auto id = static_cast<uint32_t>(files_.size());
  files_.emplace_back(path);
  file_ids_.emplace(files_.back(), id);
  return id;
}

uint32_t LineMap::intern_line(uint32_t file_id, uint32_t line) {
  uint64_t key = (static_cast<uint64_t>(file_id) << 32) | line;
  auto [it, inserted] = line_ids_.try_emplace(key, static_cast<uint32_t>(lines_.size()));
  if (inserted) {
    SourceLine& l = lines_.emplace_back();
    l.file = files_[file_id];
    l.line = line;
    line_object_.push_back(0);
  }
  return it->second;
}

void LineMap::finalize() {
  auto by_begin = [](const Range& a, const Range& b) { return a.begin < b.begin; };
  const RangeTable* current = published_.load(std::memory_order_relaxed);
  if (pending_.empty() && current) return;

  auto table = std::make_unique<RangeTable>();
  std::stable_sort(pending_.begin(), pending_.end(), by_begin);
  if (current) {
    table->ranges.reserve(current->ranges.size() + pending_.size());
    std::merge(current->ranges.begin(), current->ranges.end(), pending_.begin(), pending_.end(),
               std::back_inserter(table->ranges), by_begin);
  } else {
    table->ranges = std::move(pending_);
  }
  pending_.clear();
  pending_.shrink_to_fit();

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

}  // namespace coz
