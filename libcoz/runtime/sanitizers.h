// Living beside a sanitizer's runtime in a sanitizer build of the program
// (sanitizers.cpp says what each sanitizer would otherwise report of ours).
#pragma once

namespace coz {

/// While one lives, this thread's allocations are not leaks to LeakSanitizer
/// (its __lsan_disable/__lsan_enable, when the program has it). libelfin keeps
/// every ELF file the runtime reads in a reference cycle: LeakSanitizer would
/// end the program with exit status 1 over them.
class LeakCheckPause {
 public:
  LeakCheckPause();
  ~LeakCheckPause();
  LeakCheckPause(const LeakCheckPause&) = delete;
  LeakCheckPause& operator=(const LeakCheckPause&) = delete;
};

}  // namespace coz
