#!/usr/bin/env bash
# `coz plot` on the command line: output path, default name, embedded data,
# and one-line errors with exit status 2.
set -euo pipefail
coz="$1" out="$2" profile="$3"
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $1"; exit 1; }

# Default output: the first profile's name with .html, next to it.
cp "$profile" "$out/run.coz"
printed="$("$coz" plot "$out/run.coz")"
[ "$printed" = "$out/run.html" ] || fail "default output printed as '$printed'"
[ -s "$out/run.html" ] || fail "no $out/run.html"
grep -q '<script type="application/json" id="coz-embedded">\[{"name": "run.coz", "text": "startup\\t' "$out/run.html" ||
  fail "the profile is not embedded"
if grep -q 'COZ-EMBEDDED-PROFILES' "$out/run.html"; then fail "the embed marker is still there"; fi
if grep -Eiq '(src|href)=["'"'"']?(https?:)?//' "$out/run.html"; then fail "the page refers to the network"; fi

# Text that could close the script element is escaped.
printf 'samples\tlocation=</script><b>x.c:1\tcount=1\n' >"$out/evil.coz"
"$coz" plot "$out/evil.coz" -o "$out/evil.html" >/dev/null
[ "$(grep -c '</script>' "$out/evil.html")" -eq 2 ] || fail "</script> in a profile was not escaped"

# Errors: one line on stderr, exit 2, nothing written.
set +e
err="$("$coz" plot "$out/missing.coz" -o "$out/x.html" 2>&1 >/dev/null)"; rc=$?
set -e
[ $rc -eq 2 ] || fail "missing profile: exit $rc"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "missing profile: more than one line: $err"
[[ "$err" == *"missing.coz"* ]] || fail "missing profile: message does not name the file: $err"
[ ! -e "$out/x.html" ] || fail "a report was written for a missing profile"

set +e
err="$("$coz" plot "$out/run.coz" -o "$out/no/such/dir/r.html" 2>&1 >/dev/null)"; rc=$?
set -e
[ $rc -eq 2 ] || fail "unwritable output: exit $rc"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "unwritable output: more than one line: $err"

set +e
"$coz" plot --bogus >/dev/null 2>&1; rc=$?
set -e
[ $rc -eq 2 ] || fail "bad option: exit $rc"

# --open without a display says so in one line and still succeeds.
err="$(env -u DISPLAY -u WAYLAND_DISPLAY "$coz" plot "$out/run.coz" -o "$out/open.html" --open 2>&1 >/dev/null)"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "--open: $err"
echo "ok: $err"
