// dl_main: libraries loaded and unloaded after the profiler started.
//
//   phase 1: dlopen libplugin.so, call its plugin_work (1 ms a call, one
//            COZ_PROGRESS_NAMED("call") each) for --first-ms; then dlclose it
//   phase 2 (unless --only-first): dlopen libplugin_other.so, usually mapped
//            where libplugin.so was, the same for --second-ms; dlclose
//
// Prints "dl_main first=ADDR second=ADDR same_address=0|1 calls=N".
#include <coz.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "robust_common.h"

namespace {

using work_fn = uint64_t (*)(uint64_t, uint64_t);

/// Loads `path`, calls its plugin_work for `ms`, unloads it; returns the library's base address.
uintptr_t run_plugin(const char* path, uint64_t ms, uint64_t& calls, uint64_t& x) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "dl_main: %s\n", dlerror());
    std::exit(3);
  }
  auto work = reinterpret_cast<work_fn>(dlsym(handle, "plugin_work"));
  Dl_info info{};
  if (!work || dladdr(reinterpret_cast<void*>(work), &info) == 0) {
    std::fprintf(stderr, "dl_main: no plugin_work in %s\n", path);
    std::exit(3);
  }
  const double end = robust::now_ms() + static_cast<double>(ms);
  while (robust::now_ms() < end) {
    x = work(x, robust::kStepsPerMs);
    COZ_PROGRESS_NAMED("call");
    ++calls;
  }
  dlclose(handle);
  if (dlopen(path, RTLD_NOW | RTLD_NOLOAD) != nullptr) {
    std::fprintf(stderr, "dl_main: %s still loaded after dlclose\n", path);
    std::exit(3);
  }
  return reinterpret_cast<uintptr_t>(info.dli_fbase);
}

}  // namespace

int main(int argc, char** argv) {
  const robust::Options options(argc, argv, {"--first-ms=", "--second-ms=", "--only-first"});
  uint64_t calls = 0;
  uint64_t x = 0x1234;
  const uintptr_t first = run_plugin(PLUGIN_PATH, options.number("--first-ms", 500), calls, x);
  uintptr_t second = 0;
  if (!options.has("--only-first")) second = run_plugin(PLUGIN_OTHER_PATH, options.number("--second-ms", 1500), calls, x);
  std::printf("dl_main first=%#lx second=%#lx same_address=%d calls=%lu checksum=%lu\n", static_cast<unsigned long>(first),
              static_cast<unsigned long>(second), first == second ? 1 : 0, static_cast<unsigned long>(calls),
              static_cast<unsigned long>(x & 0xff));
  return 0;
}
