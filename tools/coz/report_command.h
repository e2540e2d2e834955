// `coz report [options] [profile.coz ...]`: ranked table (or --json) of the merged
// profiles; `coz report --compare BEFORE AFTER`: their differences.
#pragma once

namespace coz {

/// argv[0] is "report". Returns the process exit code: 0 on success (also for
/// an empty profile), 2 for a bad option or an unreadable file.
int report_main(int argc, char** argv);

}  // namespace coz
