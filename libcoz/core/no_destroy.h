// A global that is never destroyed.
//
// The runtime's threads (the profiler thread, signal handlers) keep using
// its globals while the process exits: a std::vector destroyed by the exit
// handlers under the profiler thread's feet crashed the program at exit
// (RobustnessTest.BinaryScopeMatchingNothingIsAClearWarning, 1 run in 20).
// Constant-initialized (no dynamic initializer whose order across files
// could matter) and never destroyed.
#pragma once

#include <utility>

namespace coz {

template <typename T>
union NoDestroy {
  constexpr NoDestroy() : value() {}
  ~NoDestroy() {}
  T value;
};

}  // namespace coz
