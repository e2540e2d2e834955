#!/usr/bin/env bash
# The README's second command (and CI's): install what is missing, build
# everything with warnings as errors, run the whole test suite.
set -euo pipefail
top="$(cd "$(dirname "$0")/../.." && pwd)"
build="${COZ_BUILD_DIR:-$top/build}"

"$top/tools/scripts/install-deps.sh"
# A rustup install is not always on PATH (e.g. under CI).
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOZ_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build "$build"
cd "$build"
ctest --output-on-failure -j2 --timeout 600
