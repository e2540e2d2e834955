#include "debug_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

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
}  // namespace

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
