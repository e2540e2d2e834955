#include "record_line.h"

#include <cstdint>

#include "json_object.h"

namespace coz::analysis {

const std::string* RecordLine::find(std::string_view key) const {
  const std::string* found = nullptr;
  for (const auto& [k, v] : fields) {
    if (k == key) found = &v;
  }
  return found;
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Record types are words like `throughput-point`. Checking this lets binary
// garbage be reported instead of silently passing as an "unknown record type".
bool is_record_type(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

// Coz's JSON Lines spell the keys of the tab form with '_' for '-'
// (`selected_samples`), and its releases 0.2.4 and 0.2.5 the point types too
// (`throughput_point`); our JSON Lines writer follows the same rule. Turning
// '_' back into '-' in types and keys lets both forms go through the same
// checks; no record type or key of the format has a '_' of its own.
std::string dashes(std::string s) {
  for (char& c : s) {
    if (c == '_') c = '-';
  }
  return s;
}

bool split_json(std::string_view line, RecordLine& out, std::string& error) {
  std::vector<JsonMember> members;
  if (!parse_json_object(line, members, error)) return false;
  for (auto& m : members) {
    // null, or an array or object (no record has one), is as good as absent.
    if (m.kind == JsonMember::Kind::Null || m.kind == JsonMember::Kind::Nested) continue;
    out.fields.emplace_back(dashes(std::move(m.key)), std::move(m.text));
  }
  const std::string* type = out.find("type");
  if (type == nullptr) {
    error = "JSON record without a \"type\" key";
    return false;
  }
  if (!is_record_type(*type)) {
    error = "not a profile record (bad type)";
    return false;
  }
  out.type = dashes(*type);
  return true;
}

// Coz separates fields with tabs; a line without any tab is split on spaces
// so hand-written test profiles work too (paths with spaces need tabs).
bool split_tabs(std::string_view line, RecordLine& out, std::string& error) {
  const char sep = line.find('\t') != std::string_view::npos ? '\t' : ' ';
  bool first = true;
  while (!line.empty()) {
    size_t end = line.find(sep);
    std::string_view field = line.substr(0, end);
    line = end == std::string_view::npos ? std::string_view{} : line.substr(end + 1);
    field = trim(field);
    if (field.empty()) continue;
    if (first) {
      if (!is_record_type(field)) {
        error = "not a profile record";
        return false;
      }
      out.type.assign(field);
      first = false;
      continue;
    }
    size_t eq = field.find('=');
    if (eq == std::string_view::npos) continue;  // not key=value: ignored like an unknown key
    out.fields.emplace_back(std::string(field.substr(0, eq)), std::string(field.substr(eq + 1)));
  }
  if (first) {
    error = "empty record";
    return false;
  }
  return true;
}

}  // namespace

bool split_record_line(std::string_view line, RecordLine& out, std::string& error) {
  out.type.clear();
  out.fields.clear();
  out.cut = false;
  // What a failed write cut short, ended by the writer's next write; in a
  // JSON line the marker is what makes it invalid, whatever the cut left.
  std::string_view marker = "\tcut=write-failed";
  std::string_view t = trim(line);
  if (line.size() >= marker.size() && line.substr(line.size() - marker.size()) == marker) {
    out.cut = true;
    return true;
  }
  if (!t.empty() && t.front() == '{') return split_json(t, out, error);
  if (!split_tabs(line, out, error)) return false;
  out.cut = out.find("cut") != nullptr;  // the marker, whatever followed it
  return true;
}

}  // namespace coz::analysis
