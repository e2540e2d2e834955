#!/usr/bin/env bash
# The README's second command (and CI's): install what is missing, build
# everything with warnings as errors, run the whole test suite; then the unit
# tests again under AddressSanitizer + UndefinedBehaviorSanitizer, the
# concurrent ones under ThreadSanitizer, and fuzzing of the profile reader
# and of the readers of binaries.
#
# Steps (each can be skipped for a quick local run):
#   main build + ctest              always
#   sanitizer unit tests            COZ_SKIP_SANITIZERS=1 to skip  (~3.5 min on 2 cores, first build)
#   concurrency tests under TSan    COZ_SKIP_SANITIZERS=1 to skip  (~1 min)
#   fuzzing (two targets)           COZ_SKIP_FUZZ=1 to skip; COZ_FUZZ_SECONDS per target (default 20)
set -euo pipefail
top="$(cd "$(dirname "$0")/../.." && pwd)"
build="${COZ_BUILD_DIR:-$top/build}"
asan_build="${COZ_ASAN_BUILD_DIR:-$build-asan}"
tsan_build="${COZ_TSAN_BUILD_DIR:-$build-tsan}"
fuzz_build="${COZ_FUZZ_BUILD_DIR:-$build-fuzz}"
fuzz_seconds="${COZ_FUZZ_SECONDS:-20}"  # per target

"$top/tools/scripts/install-deps.sh"
# A rustup install is not always on PATH (e.g. under CI).
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

# The benchmarks are not tests (bench/run runs them): not built here.
echo "[${SECONDS} s] == build ($build)"
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOZ_WARNINGS_AS_ERRORS=ON -DCOZ_BUILD_BENCH=OFF >/dev/null
cmake --build "$build"
echo "[${SECONDS} s] == tests"
(cd "$build" && ctest --output-on-failure -j2 --timeout 600)

# ---- unit tests under ASan + UBSan ------------------------------------------------
# A second build tree with the sanitizers on everything it compiles; only the
# unit tests are built and run there (integration tests LD_PRELOAD the
# runtime into programs, which an ASan runtime does not survive). Warnings are
# not errors here: GCC's sanitizer instrumentation adds false positives
# (-Wmaybe-uninitialized and friends) that the main build does not have.
if [ "${COZ_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "[${SECONDS} s] == unit tests under AddressSanitizer and UndefinedBehaviorSanitizer ($asan_build)"
  sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  # Unoptimised (Debug): the sanitizer trees are built for these tests alone,
  # and at -O2 their build took ~390 s of CI's 20 minutes, at -O0 ~155 s (the
  # tests themselves: 19 s, now 48 s).
  cmake -S "$top" -B "$asan_build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCOZ_BUILD_TESTS=ON -DCOZ_BUILD_BENCH=OFF -DCOZ_BUILD_VIEWER=OFF \
    "-DCMAKE_C_FLAGS=$sanitize" "-DCMAKE_CXX_FLAGS=$sanitize" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
    "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" \
    "-DCMAKE_MODULE_LINKER_FLAGS=-fsanitize=address,undefined" >/dev/null
  # One executable per test/unit/<module>_test.cpp (test/unit/CMakeLists.txt).
  unit_targets=()
  for source in "$top"/test/unit/*_test.cpp; do unit_targets+=("$(basename "$source" .cpp)"); done
  cmake --build "$asan_build" --target "${unit_targets[@]}"
  # Everything but the integration tests (label), the viewer's and the
  # verdict simulator (bench/verdicts: a minute in the main build, pure
  # arithmetic whose code the analysis tests here already cover); a
  # *_NOT_BUILT placeholder is a test executable this step did not build.
  # libelfin (Debian's libelfin-dev) keeps every elf::elf in a reference
  # cycle with its sections: only "indirect" leaks, all inside libelf++.so;
  # anything else LeakSanitizer finds is ours.
  printf 'leak:libelf++.so\n' >"$asan_build/lsan.supp"
  (cd "$asan_build" &&
    LSAN_OPTIONS="suppressions=$asan_build/lsan.supp:print_suppressions=0" \
    ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --output-on-failure -j2 --timeout 600 -LE integration -E '^Viewer\.|^VerdictSimulator$|_NOT_BUILT$')
fi

# ---- the runtime's concurrent parts under ThreadSanitizer --------------------------
# A third build tree, -fsanitize=thread, for the unit tests whose code runs on
# several threads or in signal handlers at once inside the profiled program:
# the runtime's lock (futex_lock), the wake board, the delay ledger, the
# stack table (conventional), the profile writer and the unwinder (which
# walks from a signal handler). The integration tests cannot run here: they
# preload the runtime into uninstrumented programs, and TSan's runtime must
# be linked into the executable.
if [ "${COZ_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "[${SECONDS} s] == concurrency unit tests under ThreadSanitizer ($tsan_build)"
  cmake -S "$top" -B "$tsan_build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCOZ_BUILD_TESTS=ON -DCOZ_BUILD_BENCH=OFF -DCOZ_BUILD_VIEWER=OFF \
    -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_CXX_FLAGS=-fsanitize=thread \
    -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
    -DCMAKE_MODULE_LINKER_FLAGS=-fsanitize=thread >/dev/null
  tsan_tests=(futex_lock_test wake_board_test delay_test conventional_test profile_writer_test unwinder_test)
  cmake --build "$tsan_build" --target "${tsan_tests[@]}"
  for test in "${tsan_tests[@]}"; do
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" "$tsan_build/test/unit/$test" --gtest_brief=1
  done
fi

# ---- fuzzing the readers of untrusted input ------------------------------------
# Two libFuzzer targets (test/fuzz/README.md): the profile reader, and the
# runtime's readers of binaries (ELF, DWARF line tables and scopes, symbols,
# call-frame information), which run inside the profiled program on every
# object it loads. libFuzzer needs clang and its runtime (Debian: clang,
# libclang-rt-14-dev); installed here, only when missing, rather than for
# every developer.
if [ "${COZ_SKIP_FUZZ:-0}" != 1 ]; then
  "$top/tools/scripts/install-deps.sh" clang libclang-rt-14-dev
  mkdir -p "$fuzz_build"
  fuzz_flags=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  # Each target links the sources it reads directly: a CMake configure with
  # clang would rebuild everything else for nothing. Built side by side.
  clang++ "${fuzz_flags[@]}" -I"$top/tools/analysis" -I"$top/libcoz/json" -I"$top/libcoz/latency" \
    "$top/test/fuzz/profile_reader_fuzz.cpp" "$top"/tools/analysis/*.cpp "$top/libcoz/json/json_string.cpp" \
    "$top/libcoz/latency/latency_buckets.cpp" -lfmt -lz -o "$fuzz_build/profile_reader_fuzz" &
  profile_build=$!
  core="$top/libcoz/core"
  # The sources LineMap and FrameTableBuilder need (libcoz/CMakeLists.txt's coz_core, in part).
  clang++ "${fuzz_flags[@]}" -I"$core" -I"$top/include" -I"$top/libcoz/json" \
    $(pkg-config --cflags libelf++) "$top/test/fuzz/elf_reader_fuzz.cpp" \
    "$core"/{elf_file,dwarf_reader,dwarf_units,dwarf_lines,dwarf_scopes,symbol_names,rust_demangle,symbol_table,debug_file,line_map,frame_table,log}.cpp "$top/libcoz/json/json_string.cpp" \
    -ldwarf++ -lelf++ -lfmt -lz -lzstd -o "$fuzz_build/elf_reader_fuzz"
  wait "$profile_build"
  # libelfin keeps every elf::elf in a reference cycle (as in the ASan step).
  printf 'leak:libelf++.so\n' >"$fuzz_build/lsan.supp"

  # fuzz NAME SEEDS MAX_LEN: runs test/fuzz/NAME.cpp's build for COZ_FUZZ_SECONDS.
  # New inputs go to the build tree's corpus; the committed seeds (and any
  # earlier crash, kept as a regression file) are read from SEEDS.
  fuzz() {
    local name=$1 seeds=$2 max_len=$3 status=0
    echo "[${SECONDS} s] == fuzzing $name for ${fuzz_seconds} s ($fuzz_build)"
    mkdir -p "$fuzz_build/$name-corpus" "$fuzz_build/$name-artifacts"
    LSAN_OPTIONS="suppressions=$fuzz_build/lsan.supp:print_suppressions=0" \
      "$fuzz_build/$name" -max_total_time="$fuzz_seconds" -timeout=5 -rss_limit_mb=2048 -max_len="$max_len" \
      -print_final_stats=1 -artifact_prefix="$fuzz_build/$name-artifacts/" \
      "$fuzz_build/$name-corpus" "$seeds" || status=$?
    if [ "$status" -ne 0 ]; then
      for artifact in "$fuzz_build/$name-artifacts"/*; do
        [ -e "$artifact" ] || continue
        cp "$artifact" "$seeds/regression-$(basename "$artifact")"
        echo "fuzz: kept $(basename "$artifact") as $seeds/regression-$(basename "$artifact"): commit it with the fix"
      done
      echo "fuzz: $name failed on an input (exit $status)" >&2
      exit "$status"
    fi
  }
  fuzz profile_reader_fuzz "$top/test/fuzz/corpus" 8192
  fuzz elf_reader_fuzz "$top/test/fuzz/corpus-elf" 16384
fi
echo "[${SECONDS} s] run-tests: everything passed"
