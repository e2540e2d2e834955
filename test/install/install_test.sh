#!/usr/bin/env bash
# The installed tree as a user gets it: `cmake --install` into a prefix; a
# CMake project (find_package(coz-profiler) + coz::coz) and a pkg-config build
# of a program with a progress point; then the prefix moved elsewhere, and
# its bin/coz profiles both programs (finding libcoz.so and the viewer page
# relative to itself), reports and plots.
#
# Arguments: BUILD_DIR CONSUMER_SOURCE_DIR. Environment (test/install/CMakeLists.txt):
# COZ_CMAKE, COZ_GENERATOR, COZ_CC, COZ_CXX, COZ_PKG_CONFIG, COZ_LIBDIR,
# COZ_DATADIR, COZ_MANDIR (relative to the prefix), COZ_VIEWER (ON/OFF).
set -euo pipefail
build="$1" consumer_source="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

prefix="$work/prefix"
"$COZ_CMAKE" --install "$build" --prefix "$prefix" >/dev/null
for file in bin/coz "$COZ_LIBDIR/coz/libcoz.so" include/coz.h \
    "$COZ_LIBDIR/cmake/coz-profiler/coz-profilerConfig.cmake" \
    "$COZ_LIBDIR/cmake/coz-profiler/coz-profilerConfigVersion.cmake" \
    "$COZ_LIBDIR/pkgconfig/coz-profiler.pc" "$COZ_MANDIR/man1/coz.1" \
    "$COZ_DATADIR/bash-completion/completions/coz"; do
  [ -e "$prefix/$file" ] || fail "cmake --install did not install $file"
done
if [ "$COZ_VIEWER" = ON ] && [ ! -e "$prefix/$COZ_DATADIR/coz/coz-viewer.html" ]; then
  fail "cmake --install did not install $COZ_DATADIR/coz/coz-viewer.html"
fi
bash -n "$prefix/$COZ_DATADIR/bash-completion/completions/coz" || fail "the bash completion does not parse"

# A CMake user: the package found through CMAKE_PREFIX_PATH must be this one.
"$COZ_CMAKE" -S "$consumer_source" -B "$work/cmake-build" -G "$COZ_GENERATOR" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$COZ_CXX" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "the CMake consumer did not configure"; }
grep -q "coz-profiler found in $prefix/" "$work/configure.log" ||
  { cat "$work/configure.log"; fail "find_package(coz-profiler) found another package"; }
"$COZ_CMAKE" --build "$work/cmake-build" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; fail "the CMake consumer did not build"; }

# A pkg-config user, who sees only this prefix's .pc files.
flags="$(PKG_CONFIG_LIBDIR="$prefix/$COZ_LIBDIR/pkgconfig" "$COZ_PKG_CONFIG" --cflags --libs coz-profiler)" ||
  fail "pkg-config does not find coz-profiler"
# shellcheck disable=SC2086 # the flags are words
"$COZ_CC" -O2 -g "$consumer_source/consumer.c" $flags -o "$work/consumer-pc" || fail "the pkg-config consumer did not build"

# Moved: nothing may point into the old prefix.
mv "$prefix" "$work/moved"
coz="$work/moved/bin/coz"
for program in "$work/cmake-build/consumer" "$work/consumer-pc"; do
  name="$(basename "$program")"
  profile="$work/$name.coz"
  "$coz" run -q -o "$profile" --- "$program" >"$work/$name.out" 2>&1 ||
    { cat "$work/$name.out"; fail "the moved coz run failed on $name"; }
  # Profiled: experiments ran and the program's progress point counted visits in them.
  grep -q "^experiment" "$profile" || fail "no experiment in $name's profile"
  grep -Eq $'^(throughput|progress)-point\tname=consumer-item\tdelta=[1-9]' "$profile" ||
    { cat "$profile"; fail "$name's progress point counted nothing"; }
  "$coz" report --no-color "$profile" >"$work/$name.report" || fail "the moved coz report failed on $name"
  grep -q "consumer-item" "$work/$name.report" || { cat "$work/$name.report"; fail "no consumer-item in the report"; }
done
if [ "$COZ_VIEWER" = ON ]; then
  "$coz" plot "$work/consumer.coz" -o "$work/consumer.html" >/dev/null || fail "the moved coz plot failed"
  grep -q 'id="coz-embedded"' "$work/consumer.html" || fail "the plot has no embedded profile"
fi
echo "installed, moved: both consumers built, profiled and reported"
