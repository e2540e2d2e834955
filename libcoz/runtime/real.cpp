#include "real.h"
#include "sys.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace coz::real {
namespace {

void* lookup(const char* name, const char* version) {
  void* p = version ? dlvsym(RTLD_NEXT, name, version) : nullptr;
  return p ? p : dlsym(RTLD_NEXT, name);
}

[[noreturn]] void missing(const char* name) {
  // No fmt here: this can run before anything else is set up.
  const char prefix[] = "coz: error: cannot find the C library's ";
  const char suffix[] = "; the runtime cannot run in this process\n";
  (void)!coz::sys::write(STDERR_FILENO, prefix, sizeof prefix - 1);
  (void)!coz::sys::write(STDERR_FILENO, name, std::strlen(name));
  (void)!coz::sys::write(STDERR_FILENO, suffix, sizeof suffix - 1);
  _exit(127);
}

}  // namespace

void detail::resolve() {
  using detail::g_table;
#define COZ_REAL_RESOLVE(name, required, version)                                   \
  {                                                                                 \
    void* p = lookup(#name, version);                                               \
    if (!p && (required)) missing(#name);                                           \
    decltype(&::name) fn;                                                           \
    std::memcpy(&fn, &p, sizeof p);                                                 \
    __atomic_store_n(&g_table.name, fn, __ATOMIC_RELAXED);                          \
  }
  COZ_REAL_FUNCTIONS(COZ_REAL_RESOLVE)
#undef COZ_REAL_RESOLVE
  detail::g_resolved.store(true, std::memory_order_release);
}

}  // namespace coz::real
