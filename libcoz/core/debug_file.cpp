#include "debug_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "dwarf_reader.h"

namespace coz {

namespace {
std::string hex(std::span<const uint8_t> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
  return out;
}

bool has_lines(const std::string& path, std::span<const uint8_t> want_build_id) {
  std::string error;
  std::optional<ElfFile> file = ElfFile::open(path, error);
  // Its presence only: inflating libc's to say so made the start-up's
  // lookups of symbol files (object_frames.h) take 17 ms instead of ~0.
  if (!file || !file->has_section(".debug_line")) return false;
  if (want_build_id.empty()) return true;
  std::span<const uint8_t> id = file->build_id();
  return std::equal(id.begin(), id.end(), want_build_id.begin(), want_build_id.end());
}

/// The .gnu_debuglink section: a file name, padding to 4 bytes, the CRC-32 of that file.
bool debuglink(const ElfFile& binary, std::string& name, uint32_t& crc) {
  dwarf_reader::Cursor link(binary.section(".gnu_debuglink").bytes);
  if (link.at_end()) return false;
  name = std::string(link.cstr());
  link.skip((4 - link.offset() % 4) % 4);
  crc = link.u32();
  return link.ok() && !name.empty() && name.find('/') == std::string::npos;
}

constexpr std::string_view distribution_debug_root = "/usr/lib/debug";  // line_map.h's default_debug_root

/// The name and ID of a supplementary file: .gnu_debugaltlink (a path, NUL,
/// the build ID to the section's end) or .debug_sup (DWARF 5 section 7.3.6:
/// version, is_supplementary, the path, an ULEB128 length, the checksum).
bool supplementary_link(const ElfFile& debug, std::string& name, std::vector<uint8_t>& id) {
  dwarf_reader::Cursor alt(debug.section(".gnu_debugaltlink").bytes);
  if (!alt.at_end()) {
    name = std::string(alt.cstr());
    id.assign(alt.pos(), alt.pos() + alt.remaining());
    return alt.ok() && !name.empty();
  }
  dwarf_reader::Cursor sup(debug.section(".debug_sup").bytes);
  if (sup.at_end()) return false;
  uint16_t version = sup.u16();
  uint8_t is_supplementary = sup.u8();
  name = std::string(sup.cstr());
  dwarf_reader::Cursor checksum = sup.sub(sup.uleb());
  if (!sup.ok() || version != 5 || is_supplementary != 0 || name.empty()) return false;
  id.assign(checksum.pos(), checksum.pos() + checksum.remaining());
  return true;
}

/// Whether `path` is the supplementary file with this ID: its build ID, or
/// the checksum its own .debug_sup declares.
bool is_supplementary(const std::string& path, std::span<const uint8_t> want_id) {
  std::error_code ec;
  // A FIFO or a device named by a hostile link would block or never end.
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::string error;
  std::optional<ElfFile> file = ElfFile::open(path, error);
  if (!file || !file->has_section(".debug_info")) return false;
  if (want_id.empty()) return true;  // nothing to check against (dwz always writes one)
  std::span<const uint8_t> id = file->build_id();
  if (std::equal(id.begin(), id.end(), want_id.begin(), want_id.end())) return true;
  dwarf_reader::Cursor sup(file->section(".debug_sup").bytes);
  sup.u16();
  bool supplementary = sup.u8() == 1;
  sup.cstr();
  dwarf_reader::Cursor checksum = sup.sub(sup.uleb());
  return sup.ok() && supplementary &&
         std::equal(checksum.pos(), checksum.pos() + checksum.remaining(), want_id.begin(), want_id.end());
}
}  // namespace

std::string find_supplementary_file(const ElfFile& debug, const std::string& debug_path,
                                    std::string_view debug_root) {
  std::string name;
  std::vector<uint8_t> id;
  if (!supplementary_link(debug, name, id)) return {};
  std::string root(debug_root);
  std::vector<std::string> candidates;
  if (name.front() == '/') {
    if (root != distribution_debug_root && name.starts_with(distribution_debug_root) &&
        name[distribution_debug_root.size()] == '/') {  // name is longer: it has a '/' after the root, or a NUL
      candidates.push_back(root + name.substr(distribution_debug_root.size()));
    }
    candidates.push_back(name);
  } else {
    // Relative to the directory of the file that names it, as GDB resolves it.
    candidates.push_back((std::filesystem::path(debug_path).parent_path() / name).string());
  }
  if (id.size() >= 2) {
    std::string digits = hex(id);
    candidates.push_back(root + "/.build-id/" + digits.substr(0, 2) + "/" + digits.substr(2) + ".debug");
  }
  for (const std::string& candidate : candidates) {
    if (is_supplementary(candidate, id)) return candidate;
  }
  return {};
}

bool file_crc32(const std::string& path, uint32_t& crc) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = false;
  if (fstat(fd, &st) == 0) {
    size_t size = static_cast<size_t>(st.st_size);
    void* data = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    if (size == 0 || data != MAP_FAILED) {
      uLong c = ::crc32(0L, Z_NULL, 0);
      const auto* p = static_cast<const Bytef*>(data);
      for (size_t done = 0; done < size;) {  // zlib takes 32-bit lengths
        auto n = static_cast<uInt>(std::min<size_t>(size - done, 1u << 30));
        c = ::crc32(c, p + done, n);
        done += n;
      }
      crc = static_cast<uint32_t>(c);
      ok = true;
      if (size) munmap(data, size);
    }
  }
  ::close(fd);
  return ok;
}

std::string find_debug_file(const ElfFile& binary, const std::string& binary_path, std::string_view debug_root) {
  std::string root(debug_root);
  std::span<const uint8_t> id = binary.build_id();
  if (id.size() >= 2) {
    std::string digits = hex(id);
    std::string path = root + "/.build-id/" + digits.substr(0, 2) + "/" + digits.substr(2) + ".debug";
    if (has_lines(path, id)) return path;
  }

  std::string name;
  uint32_t crc = 0;
  if (!debuglink(binary, name, crc)) return {};
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(binary_path, ec);
  if (ec) real = std::filesystem::absolute(binary_path, ec);
  std::string dir = real.parent_path().string();
  for (const std::string& candidate : {dir + "/" + name, dir + "/.debug/" + name, root + dir + "/" + name}) {
    uint32_t actual = 0;
    // The binary itself can carry the link name (a debug file named like it): it has no lines anyway.
    if (file_crc32(candidate, actual) && actual == crc && has_lines(candidate, {})) return candidate;
  }
  return {};
}

}  // namespace coz
