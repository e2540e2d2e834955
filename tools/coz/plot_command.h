// `coz plot [options] PROFILE... [-o report.html] [--open]`: one self-contained
// HTML page, the static viewer with the profiles embedded.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace coz {

/// argv[0] is "plot". Returns the exit code: 0 on success, 2 for a bad
/// option, an unreadable profile, a missing viewer or an unwritable output.
int plot_main(int argc, char** argv);

/// A named profile text to embed.
struct EmbeddedProfile {
  std::string name;  // file name shown by the viewer
  std::string text;  // the file's bytes
};

/// The viewer page with `profiles` in place of its embed marker; false when
/// the page has no marker (not a coz viewer page).
bool embed_profiles(const std::string& viewer_html, const std::vector<EmbeddedProfile>& profiles,
                    std::string& out);

/// JSON string literal of arbitrary bytes, safe inside an HTML <script>
/// element: '<', '>', '&' escaped, invalid UTF-8 bytes as \u00XX (json_string.h).
std::string html_safe_json_string(std::string_view bytes);

}  // namespace coz
