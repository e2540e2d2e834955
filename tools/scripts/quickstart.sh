#!/usr/bin/env bash
# The README's first command: install what is missing, build, profile the
# bundled example (a producer/consumer pipeline whose consumer is the
# bottleneck) and print the report.
set -euo pipefail
top="$(cd "$(dirname "$0")/../.." && pwd)"
build="${COZ_BUILD_DIR:-$top/build}"

"$top/tools/scripts/install-deps.sh"
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target coz coz_cli pipeline

profile="$build/example.coz"
rm -f "$profile"
echo
echo "$ coz run -o $profile --- pipeline"
"$build/bin/coz" run -o "$profile" --- "$build/test/programs/pipeline"
echo
echo "$ coz report $profile"
"$build/bin/coz" report "$profile"
