#include "go_patch.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace coz {

bool redirect_go_function(uint64_t address, const unsigned char* expected, size_t size, const void* target) {
  unsigned char jump[12] = {0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xe0};
  auto* code = reinterpret_cast<unsigned char*>(address);
  if (address == 0 || size < sizeof jump || std::memcmp(code, expected, size) != 0) return false;
  const uint64_t to = reinterpret_cast<uint64_t>(target);
  std::memcpy(jump + 2, &to, sizeof to);
  const long page = sysconf(_SC_PAGESIZE);
  const uint64_t first = address & ~static_cast<uint64_t>(page - 1);
  const uint64_t length = address + sizeof jump - first;
  void* pages = reinterpret_cast<void*>(first);
  if (mprotect(pages, length, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return false;
  std::memcpy(code, jump, sizeof jump);
  mprotect(pages, length, PROT_READ | PROT_EXEC);
  __builtin___clear_cache(reinterpret_cast<char*>(code), reinterpret_cast<char*>(code) + sizeof jump);
  return true;
}

}  // namespace coz
