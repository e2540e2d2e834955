#!/usr/bin/env bash
# `cmake --install` lays out bin/coz and lib/coz/libcoz.so so that the
# installed coz finds its runtime and profiles a program.
set -euo pipefail
build="$1" program="$2"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -x "$prefix/bin/coz"
test -f "$prefix/include/coz.h"
"$prefix/bin/coz" run -o "$prefix/p.coz" --- "$program" -n 100 >/dev/null 2>&1
grep -q "^startup" "$prefix/p.coz"
grep -q "^runtime" "$prefix/p.coz"
echo "installed coz profiled $program"
