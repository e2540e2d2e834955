// See export_pprof.h. Field numbers are profile.proto's.
#include "export_pprof.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "export_collapsed.h"
#include "json_string.h"
#include "protobuf_writer.h"

namespace coz::analysis {
namespace {

// message Profile
constexpr uint32_t profile_sample_type = 1;
constexpr uint32_t profile_sample = 2;
constexpr uint32_t profile_location = 4;
constexpr uint32_t profile_function = 5;
constexpr uint32_t profile_string_table = 6;
constexpr uint32_t profile_duration_nanos = 10;
constexpr uint32_t profile_period_type = 11;
constexpr uint32_t profile_period = 12;
// message ValueType
constexpr uint32_t value_type_type = 1;
constexpr uint32_t value_type_unit = 2;
// message Sample
constexpr uint32_t sample_location_id = 1;
constexpr uint32_t sample_value = 2;
// message Location
constexpr uint32_t location_id = 1;
constexpr uint32_t location_line = 4;
// message Line
constexpr uint32_t line_function_id = 1;
constexpr uint32_t line_line = 2;
// message Function
constexpr uint32_t function_id = 1;
constexpr uint32_t function_name = 2;
constexpr uint32_t function_system_name = 3;
constexpr uint32_t function_filename = 4;

uint64_t saturating_product(uint64_t a, uint64_t b) {
  return a != 0 && b > std::numeric_limits<uint64_t>::max() / a ? std::numeric_limits<uint64_t>::max() : a * b;
}

// Strings are fields' indexes into one table whose first entry is "".
// profile.proto is proto3: a string must be UTF-8 (Go's decoder, so `go tool
// pprof`, rejects the file otherwise), so paths and names go through
// json_string.h's rule.
class StringTable {
 public:
  StringTable() { index(""); }
  uint64_t index(const std::string& bytes) {
    std::string s = valid_utf8(bytes);
    auto [it, added] = ids_.emplace(s, strings_.size());
    if (added) strings_.push_back(s);
    return it->second;
  }
  void write(ProtobufWriter& profile) const {
    for (const std::string& s : strings_) profile.bytes(profile_string_table, s);
  }

 private:
  std::map<std::string, uint64_t> ids_;
  std::vector<std::string> strings_;
};

ProtobufWriter value_type(StringTable& strings, const std::string& type, const std::string& unit) {
  ProtobufWriter v;
  v.varint(value_type_type, strings.index(type));
  v.varint(value_type_unit, strings.index(unit));
  return v;
}

// The name pprof ranks by: the function where the profile knows it (with the
// program under --system, so two programs' `main` stay apart), else the
// frame's flame graph label (`main.cpp:30`).
std::string function_name_of(const ExportFrame& frame) {
  if (frame.kind == ExportFrame::Kind::Line && frame.function.empty()) return collapsed_label(frame);
  if (frame.kind == ExportFrame::Kind::NotRecorded) return collapsed_label(frame);
  return frame.program.empty() ? frame.function : fmt::format("{} [{}]", frame.function, frame.program);
}

}  // namespace

uint64_t sampling_period_ns(const Profile& profile) {
  const SamplingTotals& s = profile.sampling;
  if (s.processes == 0 || s.timed != s.processes || s.in_scope == 0) return 0;
  return s.attributed_ns / s.in_scope;  // Σ in-scope x period / Σ in-scope
}

std::string pprof_message(const ExportedStacks& stacks, uint64_t period_ns, uint64_t duration_ns) {
  ProtobufWriter profile;
  StringTable strings;

  profile.message(profile_sample_type, value_type(strings, "samples", "count"));
  if (period_ns > 0) profile.message(profile_sample_type, value_type(strings, "cpu", "nanoseconds"));

  for (const ExportStack& stack : stacks.stacks) {
    std::vector<uint64_t> locations;
    for (auto it = stack.frames.rbegin(); it != stack.frames.rend(); ++it) locations.push_back(*it + 1);  // leaf first
    std::vector<uint64_t> values{stack.count};
    if (period_ns > 0) values.push_back(saturating_product(stack.count, period_ns));
    ProtobufWriter sample;
    sample.packed(sample_location_id, locations);
    sample.packed(sample_value, values);
    profile.message(profile_sample, sample);
  }

  // One location per frame (id = its index + 1), without an address or a
  // mapping: every frame is already named, and pprof takes the first
  // mapping's file for the program's name (a callee's `libc.so.6` would do).
  // A function per (name, file); an out-of-scope function's file is its library.
  std::map<std::pair<std::string, std::string>, uint64_t> function_ids;
  ProtobufWriter functions;
  for (size_t i = 0; i < stacks.frames.size(); ++i) {
    const ExportFrame& frame = stacks.frames[i];
    std::string name = function_name_of(frame);
    const std::string& file = frame.kind == ExportFrame::Kind::Callee ? frame.library : frame.file;
    auto [it, added] = function_ids.emplace(std::pair(name, file), function_ids.size() + 1);
    if (added) {
      ProtobufWriter function;
      function.varint(function_id, it->second);
      function.varint(function_name, strings.index(name));
      function.varint(function_system_name, strings.index(name));
      function.varint(function_filename, strings.index(file));
      functions.message(profile_function, function);
    }
    ProtobufWriter line;
    line.varint(line_function_id, it->second);
    line.varint(line_line, frame.line);
    ProtobufWriter location;
    location.varint(location_id, i + 1);
    location.message(location_line, line);
    profile.message(profile_location, location);
  }
  // Repeated fields may interleave; this keeps each kind together, as pprof writes them.
  std::string out = profile.data() + functions.data();

  // Without a known period, each sample is its own unit.
  ProtobufWriter period_type =
      period_ns > 0 ? value_type(strings, "cpu", "nanoseconds") : value_type(strings, "samples", "count");
  ProtobufWriter tail;
  strings.write(tail);
  tail.varint(profile_duration_nanos, duration_ns);
  tail.message(profile_period_type, period_type);
  tail.varint(profile_period, period_ns > 0 ? period_ns : 1);
  return out + tail.data();
}

std::string gzip(std::string_view data) {
  z_stream zs{};
  // 15 + 16: the largest window, with a gzip header and trailer instead of zlib's.
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  int status = Z_OK;
  while (status == Z_OK) {
    char chunk[16384];
    zs.next_out = reinterpret_cast<Bytef*>(chunk);
    zs.avail_out = sizeof chunk;
    status = deflate(&zs, Z_FINISH);
    out.append(chunk, sizeof chunk - zs.avail_out);
  }
  deflateEnd(&zs);
  return status == Z_STREAM_END ? out : std::string();
}

bool write_pprof_file(const Profile& profile, const ExportedStacks& stacks, const std::string& path,
                      std::string& error) {
  std::string data = gzip(pprof_message(stacks, sampling_period_ns(profile), profile.runtime_ns));
  if (data.empty()) return error = "cannot compress the pprof profile", false;

  auto fail = [&](const std::string& tmp) {
    error = fmt::format("cannot write {}: {}", path, std::strerror(errno));
    if (!tmp.empty()) unlink(tmp.c_str());
    return false;
  };
  std::string tmp = path + ".XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) return fail({});
  // mkstemp's file is 0600; a profile is as readable as any other new file.
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  for (size_t done = 0; done < data.size();) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int saved = errno != 0 ? errno : EIO;
      close(fd);
      errno = saved;
      return fail(tmp);
    }
    done += static_cast<size_t>(n);
  }
  bool synced = fsync(fd) == 0;
  int saved = errno;
  if (close(fd) != 0 || !synced) {
    if (!synced) errno = saved;
    return fail(tmp);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) return fail(tmp);
  return true;
}

}  // namespace coz::analysis
