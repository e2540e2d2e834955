// The generator of the accuracy space (bench/space/README.md): from a seed,
// programs of six structures with parameters drawn over hand-off rates,
// work per item and threads per core. A program is one of the space_*
// binaries and its arguments; its really-halved variants are the same
// binary and arguments with `halve=MARKER`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace coz_space {

struct SpaceProgram {
  int index = 0;              // position in the generated sequence (0-based)
  std::string structure;      // "pipeline", "lock", "forkjoin", "pool", "rpc", "rwlock"
  std::string binary;         // "space_pipeline", ...
  std::vector<std::pair<std::string, std::string>> params;  // key=value arguments, in order
  std::vector<std::string> lines;  // markers of its work lines (`// @line:MARKER`)
  double drawn_rate = 0;      // hand-offs per second the draw aimed at
  int threads = 0;            // threads doing the program's work
  bool system = false;        // several processes: profiled with `coz run --system`

  /// The arguments (without `seconds=`), as the binary takes them.
  std::vector<std::string> args() const;
  /// "forkjoin workers=3 part_a=120.5 ..." for tables.
  std::string describe() const;
};

/// A splitmix64 stream: the same numbers from the same seed everywhere
/// (std:: distributions are not specified bit for bit).
class Draws {
 public:
  explicit Draws(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform(double low, double high);      // [low, high)
  double log_uniform(double low, double high);  // log-uniform over [low, high)
  int integer(int low, int high);               // [low, high], uniform

 private:
  uint64_t state_;
};

/// `count` programs from `seed`, structures in turn, for a machine of `cores` cores.
std::vector<SpaceProgram> generate(uint64_t seed, int count, int cores);

/// A seed no one chose: from the clock and the process id.
uint64_t fresh_seed();

}  // namespace coz_space
