#!/usr/bin/env bash
# Viewer in Debian's headless Chromium: `coz plot` writes a report from the
# given profiles, Chromium loads it (offline, fresh profile dir), and the
# rendered DOM must hold the ranked lines, their plots and the conventional
# profile. A screenshot is left in OUTDIR for people to look at.
#
#   browser_test.sh COZ OUTDIR TOP_LINE PROFILE... [--max-render-ms N]
# TOP_LINE: the FILE:LINE expected as rank #1 (- for any). Exit 77 (skipped) without chromium.
set -euo pipefail
coz="$1" out="$2" top="$3"
shift 3
profiles=() max_ms=""
while [ $# -gt 0 ]; do
  case "$1" in
    --max-render-ms) max_ms="$2"; shift 2 ;;
    *) profiles+=("$1"); shift ;;
  esac
done

rm -rf "$out"
mkdir -p "$out"
. "$(dirname "$0")/chromium.sh"
report="$out/report.html"
printed="$("$coz" plot "${profiles[@]}" -o "$report")"
[ "$printed" = "$report" ] || { echo "FAIL: coz plot printed '$printed', expected '$report'"; exit 1; }

url="file://$(realpath "$report")"
chrome 1400,1100 --dump-dom "$url" >"$out/dom.html"
chrome 1400,1100 --screenshot="$out/screenshot.png" "$url" >/dev/null

fail() { echo "FAIL: $1 (DOM: $out/dom.html)"; exit 1; }
dom="$out/dom.html"
grep -q 'data-ready="true"' "$dom" || fail "the viewer did not start"
if [ "$top" != "-" ]; then
  top_re="$(printf '%s' "$top" | sed 's/[][\.*^$]/\\&/g')"  # "a.c:10 [server]": brackets are literal
  grep -q "id=\"effect-1\"[^>]*data-line=\"$top_re\"" "$dom" || fail "rank #1 is not $top"
fi
grep -q 'class="curve-plot"' "$dom" || fail "no plot was rendered"
grep -q 'class="band"' "$dom" || fail "no interval band in the plots"
grep -q 'id="conventional-lines"' "$dom" || fail "no conventional profile table"
grep -q 'class="axis-label"[^>]*>Program speedup</text>' "$dom" || fail "plots have no axis label"
# Measured lines (the band above): each point says how many lines settled and how stable its top lines are.
grep -q 'class="settled"[^>]*>settled: [0-9]* speed up, ' "$dom" || fail "no per-point verdict summary (settled: ...)"
grep -q '>top [0-9]* agree between halves: [0-9]* of [0-9]*' "$dom" || fail "no split-half stability per point"
# A point with undecided lines says how many more experiments they need, and with a run time how long at its pace;
# so does an undecided line's card.
pace=""
if grep -qE '^(runtime|\{"type":"runtime")' "${profiles[@]}"; then pace=", [^<]* at this run's pace"; fi  # either form
if grep -q 'class="settled"[^>]*>settled: [^<]*, [1-9][0-9,]* undecided of ' "$dom"; then
  grep -q "class=\"to-settle\"[^>]*>to settle the [^<]*: ~[0-9,]* more experiments$pace (coz run --until-settled " "$dom" ||
    fail "no \"to settle the undecided lines: ~N more experiments, ~T at this run's pace\" under a point with undecided lines"
fi
if [ -n "$pace" ] && grep -q '<span>to decide</span>' "$dom"; then
  grep -q '<span>to decide</span><b[^>]*>~[0-9,]* more exps ([^<)]*)</b>' "$dom" || fail "no time at this run's pace in an undecided card's \"to decide\""
fi
if grep -q '^experiments-stopped.*reason=settled' "${profiles[@]}"; then
  grep -q 'class="stopped"[^>]*>experiments stopped once the top lines were settled (coz run --until-settled)<' "$dom" ||
    fail "the page does not say the experiments stopped once the top lines were settled"
fi
# (The page's own script holds the messages too: look at rendered elements only.)
grep -q '<section id="empty-message" hidden="">' "$dom" || fail "the page says the profile is empty"
for p in "${profiles[@]}"; do
  grep -q "class=\"chip\" title=\"$(basename "$p")\"" "$dom" || fail "$(basename "$p") is not listed as loaded"
done
if [ -n "$max_ms" ]; then
  ms="$(grep -ao 'data-render-ms="[0-9]*"' "$dom" | grep -o '[0-9]*' | head -1)"
  [ -n "$ms" ] && [ "$ms" -le "$max_ms" ] || fail "analysis and first render took ${ms:-?} ms (limit $max_ms)"
  echo "analysis and first render: $ms ms"
fi
[ -s "$out/screenshot.png" ] || fail "no screenshot"
# A line mostly inside one callee ("FUNCTION [LIBRARY]" frames) says so.
callees=""
if grep -qE '^stack.*[^;]+ \[[^];]+\]' "${profiles[@]}"; then callees=yes; fi
if [ -n "$callees" ]; then
  grep -q 'class="callee"' "$dom" || fail "no \"↳ N% in F [LIB]\" note for lines mostly inside a callee"
fi
# Under coz run --system, lines are "FILE:LINE [PROGRAM]": the conventional table says which program each is in.
program="$(grep -ohE '^samples	location=[^	]*:[0-9]+ \[[^]]+\]' "${profiles[@]}" | head -1 | sed -E 's/.*\[([^]]+)\]$/\1/' || true)"
if [ -n "$program" ]; then
  grep -qE "class=\"fn\"[^>]*>([^<]* · )?in $program<" "$dom" || fail "the conventional profile does not say a line is in $program"
fi
if grep -q '^sampling' "${profiles[@]}"; then
  grep -q '>in-scope samples<' "$dom" || fail "no in-scope samples figure from the sampling records"
fi
if grep -qE '^sampling.*period=.*cpu-time=' "${profiles[@]}"; then
  grep -q 'id="coverage"' "$dom" || fail "no CPU time attributed figure from sampling records with period= and cpu-time="
fi
# The profiles given here that record steal time record more than 2% of it (conventional.coz: 2.5%).
if grep -qE '^sampling.*steal=.*machine-time=' "${profiles[@]}"; then
  grep -q 'id="steal"' "$dom" || fail "no warning of the steal time the sampling records give"
fi
if grep -q '^stack' "${profiles[@]}"; then
  chrome 1400,1100 --dump-dom "$url#tab=stacks" >"$out/dom-stacks.html"
  grep -q 'id="flame-graph"' "$out/dom-stacks.html" || fail "no flame graph from the stack records"
  if [ -n "$callees" ]; then
    grep -q 'class="frame callee"' "$out/dom-stacks.html" || fail "callee frames are not marked in the flame graph"
  fi
  chrome 1400,1100 --screenshot="$out/screenshot-stacks.png" "$url#tab=stacks" >/dev/null
fi
echo "ok: $(grep -o 'class="effect ' "$dom" | wc -l) ranked cards, $(grep -o 'class="curve-plot"' "$dom" | wc -l) plots drawn; screenshot $out/screenshot.png"
