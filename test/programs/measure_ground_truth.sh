#!/bin/sh
# Measures the real speedup of each "fast" variant (plain runs, no profiler):
# median over RUNS of a fixed amount of work, speedup = (T_base - T_fast) / T_base
# (for latency also the mean request latency the program reports).
# Base and variants are run interleaved, so a load change hits them alike.
# Other load on the machine distorts the numbers badly (with fewer free cores
# than threads, total CPU work matters instead of the critical path), so as
# root the programs run under SCHED_FIFO (chrt -f 10), which shields them
# from ordinary processes; otherwise run this on an idle machine.
# Usage: measure_ground_truth.sh BUILD_DIR/test/programs [RUNS]
# ONLY='REGEX' (grep -E) measures only the groups whose base program matches,
# e.g. ONLY='^(lib_|syscall_)'.
set -eu
dir=${1:?usage: $0 BUILD_DIR/test/programs [RUNS]}
runs=${2:-3}
prefix=
if [ "$(id -u)" = 0 ] && command -v chrt >/dev/null; then prefix="chrt -f 10"; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Prints the median of the numbers in a file.
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# run BASE FAST...: RUNS interleaved rounds, each program's stderr kept.
run() {
  i=0
  while [ "$i" -lt "$runs" ]; do
    for p in "$@"; do $prefix "$dir/$p" 2>>"$tmp/$(basename "$p")" >/dev/null; done
    i=$((i + 1))
  done
}

# report FIELD BASE FAST...: FIELD is what the programs print on stderr (elapsed, mean_latency).
report() {
  field=$1
  shift
  base=
  for p in "$@"; do
    sed -n "s/.*$field=\([0-9.]*\).*/\1/p" "$tmp/$(basename "$p")" >"$tmp/values"
    t=$(median "$tmp/values")
    if [ -z "$base" ]; then
      base=$t
      speedup=-
    else
      speedup=$(echo "$base $t" | awk '{ printf "%.1f%%", 100 * ($1 - $2) / $1 }')
    fi
    printf '%-32s %-13s %10s %9s   (runs: %s)\n' "$p" "$field" "$t" "$speedup" "$(tr '\n' ' ' <"$tmp/values")"
  done
}

# group FIELD... -- BASE FAST...
group() {
  fields=
  while [ "$1" != -- ]; do fields="$fields $1"; shift; done
  shift
  if [ -n "${ONLY:-}" ] && ! printf '%s\n' "$1" | grep -Eq -- "$ONLY"; then return 0; fi
  run "$@"
  for f in $fields; do report "$f" "$@"; done
}

printf '%-32s %-13s %10s %9s\n' program field median speedup
group elapsed -- two_threads two_threads_fast_long two_threads_fast_short
group elapsed -- pipeline pipeline_fast_consume pipeline_fast_produce
group elapsed -- lock_contention lock_contention_fast_critical lock_contention_fast_outside
group mean_latency elapsed -- latency latency_fast_handle latency_fast_background
group elapsed -- shared_lib_main shared_lib_main_fast_hot
# Time inside libraries and the kernel (test/integration/library_time_test.cpp).
group elapsed -- lib_memcpy lib_memcpy_fast_copy lib_memcpy_fast_produce
group elapsed -- lib_qsort lib_qsort_fast_sort lib_qsort_fast_produce
group elapsed -- lib_malloc lib_malloc_fast_churn lib_malloc_fast_produce
group elapsed -- lib_zlib lib_zlib_fast_compress lib_zlib_fast_produce
group elapsed -- lib_stdcxx lib_stdcxx_fast_hash lib_stdcxx_fast_produce
group elapsed -- syscall_write syscall_write_fast_write syscall_write_fast_produce
if [ -x "$dir/rust_progress/release/rust_progress" ]; then
  group elapsed -- rust_progress/release/rust_progress
fi
