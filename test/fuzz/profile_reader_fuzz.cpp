// libFuzzer target: the profile reader (both text forms) and the analysis
// over whatever it accepts. Profiles come from anywhere (Coz's files,
// truncated runs, merged files), so no input may crash, hang or trip the
// sanitizers. Built and run by tools/scripts/run-tests.sh with clang
// (-fsanitize=fuzzer,address,undefined); seeds in corpus/.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "analysis.h"
#include "profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  coz::analysis::Profile profile;
  coz::analysis::read_profile(in, "fuzz", profile);
  // The analysis must accept anything the reader produced.
  const coz::analysis::Analysis result = coz::analysis::analyze(profile);
  (void)result;
  return 0;
}
