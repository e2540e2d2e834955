// `coz report [options] [profile.coz ...]`: ranked text table of a profile.
#pragma once

namespace coz {

/// argv[0] is "report". Returns the process exit code: 0 on success (also for
/// an empty profile), 2 for a bad option or an unreadable file.
int report_main(int argc, char** argv);

}  // namespace coz
