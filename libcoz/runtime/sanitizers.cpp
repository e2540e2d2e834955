// Beside a sanitizer's runtime in a sanitizer build of the program
// (-fsanitize=address, thread, leak), the runtime's own allocations and
// threads must not become the program's reports: a report ends the program
// with the sanitizer's exit status (LeakSanitizer 1, ThreadSanitizer 66).
// (AddressSanitizer's runtime itself must load first: `coz run` preloads it
// ahead of this one, tools/coz/sanitizer_preload.h.)
//
// - LeakSanitizer: libelfin (Debian's libelfin-dev) keeps every elf::elf it
//   opens in a reference cycle with its sections; the runtime opens one per
//   object it reads. Those allocations are made under a LeakCheckPause.
// - ThreadSanitizer sees the runtime's memory only where it calls an
//   intercepted function (memmove, operator new), not the futex locks and
//   atomics that order those calls, and so reports races between the
//   runtime's own threads. The runtime's lock-free and futex-based
//   structures have their own tests under ThreadSanitizer (tools/scripts/
//   run-tests.sh). A report whose stacks hold a frame of libcoz.so is left out.

#include "sanitizers.h"

#include <dlfcn.h>

namespace coz {
namespace {

using LeakCheckSwitch = void (*)();

/// The program's LeakSanitizer switch `name`, or null without one. Looked up
/// each time: a pause is taken only while libraries are read.
LeakCheckSwitch leak_check_switch(const char* name) {
  return reinterpret_cast<LeakCheckSwitch>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

LeakCheckPause::LeakCheckPause() {
  if (LeakCheckSwitch disable = leak_check_switch("__lsan_disable")) disable();
}

LeakCheckPause::~LeakCheckPause() {
  if (LeakCheckSwitch enable = leak_check_switch("__lsan_enable")) enable();
}

}  // namespace coz

extern "C" {

__attribute__((visibility("default"))) const char* __tsan_default_suppressions() {
  return "race:libcoz.so\n";
}

}  // extern "C"
