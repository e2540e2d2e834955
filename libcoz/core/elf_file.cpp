#include "elf_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include "dwarf_reader.h"

namespace coz {

namespace {
// Not in libelfin's enums (it predates gABI's compressed sections).
constexpr uint64_t shf_compressed = 0x800;
constexpr uint32_t elfcompress_zlib = 1;
constexpr uint32_t elfcompress_zstd = 2;  // gABI 2022; binutils 2.40's objcopy --compress-debug-sections=zstd
constexpr uint32_t nt_gnu_build_id = 3;
// Beyond this a "decompressed size" is taken for corrupt data rather than allocated.
constexpr uint64_t max_inflated_bytes = uint64_t{16} << 30;  // 16 GiB

bool inflate_zlib(std::span<const uint8_t> in, std::vector<uint8_t>& out, std::string& error) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return error = "zlib inflateInit failed", false;
  z.next_in = const_cast<Bytef*>(in.data());  // zlib's API is not const-correct
  z.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), UINT32_MAX));
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(std::min<size_t>(out.size(), UINT32_MAX));  // more: fails below, as corrupt
  int rc = inflate(&z, Z_FINISH);
  bool ok = rc == Z_STREAM_END && z.total_out == out.size();
  inflateEnd(&z);
  if (!ok) error = "zlib stream is corrupt or shorter than its header says";
  return ok;
}

bool inflate_zstd(std::span<const uint8_t> in, std::vector<uint8_t>& out, std::string& error) {
  // One call for the whole section (frames one after another are allowed);
  // it never writes beyond out.size(), and says so if the data would.
  size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n)) return error = std::string("zstd: ") + ZSTD_getErrorName(n), false;
  if (n != out.size()) return error = "zstd stream is shorter than its header says", false;
  return true;
}

/// Inflates an SHF_COMPRESSED section: an Elf64_Chdr, then a zlib or zstd stream.
bool inflate_section(std::span<const uint8_t> raw, std::vector<uint8_t>& out, std::string& error) {
  dwarf_reader::Cursor chdr(raw);
  uint32_t type = chdr.u32();
  chdr.u32();  // ch_reserved
  uint64_t size = chdr.u64();
  chdr.u64();  // ch_addralign
  if (!chdr.ok()) return error = "truncated compression header", false;
  if (type != elfcompress_zlib && type != elfcompress_zstd) {
    return error = "unsupported compression type " + std::to_string(type), false;
  }
  if (size > max_inflated_bytes) return error = "implausible decompressed size " + std::to_string(size), false;
  out.resize(size);
  std::span<const uint8_t> stream(chdr.pos(), chdr.remaining());
  return type == elfcompress_zlib ? inflate_zlib(stream, out, error) : inflate_zstd(stream, out, error);
}
}  // namespace

std::optional<ElfFile> ElfFile::open(const std::string& path, std::string& error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  try {
    // The loader owns (and closes) fd, and maps the whole file.
    ElfFile file{elf::elf(elf::create_mmap_loader(fd))};
    for (const elf::segment& seg : file.elf_.segments()) {
      const auto& hdr = seg.get_hdr();
      if (hdr.type == elf::pt::load && (hdr.flags & elf::pf::x) == elf::pf::x && hdr.memsz > 0) {
        file.code_segments_.push_back({hdr.vaddr, hdr.vaddr + hdr.memsz});
      }
    }
    return file;
  } catch (const std::exception& e) {
    error = path + ": not a readable ELF file (" + e.what() + ")";
  } catch (...) {
    error = path + ": not a readable ELF file";
  }
  return std::nullopt;
}

bool ElfFile::has_section(std::string_view name) const {
  try {
    for (const elf::section& sec : elf_.sections()) {
      size_t len = 0;
      const char* sec_name = sec.get_name(&len);
      if (std::string_view(sec_name, len) == name) return true;
    }
  } catch (...) {
  }
  return false;
}

ElfFile::Section ElfFile::section(std::string_view name) const {
  Section result;
  try {
    for (const elf::section& sec : elf_.sections()) {
      size_t len = 0;
      const char* sec_name = sec.get_name(&len);
      if (std::string_view(sec_name, len) != name) continue;
      const auto& hdr = sec.get_hdr();
      result.present = true;
      result.address = hdr.addr;
      result.compressed = (static_cast<uint64_t>(hdr.flags) & shf_compressed) != 0;
      if (hdr.type != elf::sht::nobits && sec.size() > 0) {
        result.bytes = {static_cast<const uint8_t*>(sec.data()), sec.size()};
      }
      if (result.compressed && !result.bytes.empty()) {
        for (const auto& done : inflated_) {
          if (done->name == name) {
            result.bytes = done->bytes;
            return result;
          }
        }
        auto inflated = std::make_unique<Inflated>();
        inflated->name = name;
        if (!inflate_section(result.bytes, inflated->bytes, result.error)) {
          result.error = std::string(name) + ": " + result.error;
          result.bytes = {};
          return result;
        }
        result.bytes = inflated->bytes;
        inflated_.push_back(std::move(inflated));
      }
      return result;
    }
  } catch (...) {
    // A section header pointing outside the file: treat the section as absent.
  }
  return Section{};
}

std::span<const uint8_t> ElfFile::build_id() const {
  // An ELF note: namesz, descsz, type, the name padded to 4 bytes, the description.
  dwarf_reader::Cursor note(section(".note.gnu.build-id").bytes);
  while (note.ok() && !note.at_end()) {
    uint32_t namesz = note.u32();
    uint32_t descsz = note.u32();
    uint32_t type = note.u32();
    dwarf_reader::Cursor name = note.sub(namesz);
    note.skip((4 - namesz % 4) % 4);
    const uint8_t* desc = note.pos();
    note.skip(descsz);
    if (!note.ok()) break;
    if (type == nt_gnu_build_id && namesz == 4 && std::memcmp(name.pos(), "GNU", 4) == 0) return {desc, descsz};
    note.skip((4 - descsz % 4) % 4);
  }
  return {};
}

}  // namespace coz
