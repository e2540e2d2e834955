#!/usr/bin/env bash
# `coz run` in a fresh container-like set of namespaces (docs/containers.md):
# a user namespace whose root is mapped to the caller, and new PID, mount
# (with its own /proc), network and IPC namespaces, as `unshare` makes them.
# The capabilities root holds there do not count for perf_event, so this is
# what a rootless container gets. Three runs of ~1 s each:
#   1. as this user: the program is profiled (experiments in the profile) and
#      its exit status comes back; if perf_event is refused there, coz says so
#      in one line and samples with timers;
#   2. the same with perf_event_open refused with EPERM, as Docker's and
#      Podman's default seccomp profiles refuse it without CAP_PERFMON
#      (no_perf_launcher): one line from coz, timers, the exit status;
#   3. as `nobody`, when this runs as root: run 1 for an unprivileged user,
#      skipped (with the reason) where that user may not create the namespaces
#      or cannot reach the build tree.
# Exit 77 (skipped) only when no such namespace can be created here.
#
#   namespace_test.sh COZ PIPELINE NO_PERF_LAUNCHER
set -euo pipefail
coz="$1" program="$2" launcher="$3"
fail() { echo "FAIL: $*"; exit 1; }

namespaces=(unshare --user --map-root-user --pid --fork --mount --mount-proc --net --ipc --)
if ! command -v unshare >/dev/null 2>&1; then
  echo "SKIP: unshare is not installed (Debian: util-linux)"
  exit 77
fi
if ! why="$("${namespaces[@]}" true 2>&1)"; then
  echo "SKIP: cannot create user, PID, mount, network and IPC namespaces here (${namespaces[*]} true): $why"
  exit 77
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
# Experiments of at most 150 ms, so that a run of under a second has several.
export COZ_EXPERIMENT_MAX_NS=150000000

# check_run NAME EXPECTED_STATUS STATUS STDERR_FILE PROFILE DENIED(0/1)
check_run() {
  local name=$1 expected=$2 status=$3 err=$4 profile=$5 denied=$6
  [ "$status" -eq "$expected" ] || { cat "$err"; fail "$name: exit status $status, the program's is $expected"; }
  local experiments
  experiments="$(grep -c '^experiment' "$profile" || true)"
  [ "$experiments" -gt 0 ] || { cat "$err" "$profile"; fail "$name: no experiment in the profile"; }
  grep -q '^samples' "$profile" || fail "$name: no samples in the profile"
  local refused coz_lines
  refused="$(grep -c 'perf_event_open refused' "$err" || true)"
  coz_lines="$(grep -c '^coz:' "$err" || true)"
  if [ "$denied" = 1 ] && [ "$refused" -ne 1 ]; then
    cat "$err"; fail "$name: perf_event_open was refused, and coz did not say so once"
  fi
  if [ "$refused" -gt 0 ] && [ "$coz_lines" -ne 1 ]; then
    cat "$err"; fail "$name: perf_event_open refused, and coz said more than that one line"
  fi
  local how="perf_event"
  [ "$refused" -gt 0 ] && how="CPU-time timers ($(grep -o 'perf_event_open refused ([^)]*)' "$err"))"
  echo "$name: exit status $status, $experiments experiments, sampled with $how"
}

# 1. In the namespaces, as this user.
status=0
"${namespaces[@]}" "$coz" run -q -o "$work/ns.coz" --- "$program" -n 800 --exit-status 3 \
  >"$work/ns.out" 2>"$work/ns.err" || status=$?
check_run "namespaces" 3 "$status" "$work/ns.err" "$work/ns.coz" 0

# 2. perf_event_open refused with EPERM, as a default seccomp profile does.
status=0
"${namespaces[@]}" "$coz" run -q -b '*/pipeline' -o "$work/seccomp.coz" --- "$launcher" --errno EPERM \
  "$program" -n 800 --exit-status 4 >"$work/seccomp.out" 2>"$work/seccomp.err" || status=$?
check_run "namespaces, perf_event_open refused (EPERM)" 4 "$status" "$work/seccomp.err" "$work/seccomp.coz" 1

# 3. As an unprivileged user: the namespaces of a rootless container.
if [ "$(id -u)" -ne 0 ]; then
  echo "as nobody: not run (this test runs as $(id -un), itself unprivileged: run 1 was that case)"
elif ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null 2>&1; then
  echo "as nobody: not run (no user nobody, or no setpriv)"
else
  as_nobody=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
  if ! "${as_nobody[@]}" test -x "$coz" -a -r "$program"; then
    echo "as nobody: not run (nobody cannot reach $coz or $program: the build tree is private)"
  elif ! why="$("${as_nobody[@]}" "${namespaces[@]}" true 2>&1)"; then
    echo "as nobody: not run (nobody may not create the namespaces here: $why)"
  else
    mkdir "$work/nobody"
    chown nobody "$work/nobody"
    status=0
    "${as_nobody[@]}" "${namespaces[@]}" "$coz" run -q -o "$work/nobody/ns.coz" --- "$program" -n 800 --exit-status 5 \
      >"$work/nobody.out" 2>"$work/nobody.err" || status=$?
    check_run "namespaces as nobody" 5 "$status" "$work/nobody.err" "$work/nobody/ns.coz" 0
  fi
fi
