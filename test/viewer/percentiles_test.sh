#!/usr/bin/env bash
# Latency percentiles in the viewer (docs/analysis.md section 13), in Debian's
# headless Chromium: `coz plot` on a profile with latency-histogram records; each
# latency line's card must show its p50/p95/p99 (and mean) changes at 50% and
# their curves, and choosing "ranking by p99 at 50%" in the sort control must
# reorder the lines as `coz report --json` ranks them by p99. The mean ranking
# and the p99 one come from the C++ (its effects and percentiles arrays), so the
# page is also checked against `coz report`. Screenshots are left in OUTDIR.
#
#   percentiles_test.sh COZ NODE OUTDIR PROFILE [PROFILE_WITHOUT_HISTOGRAMS]
# Exit 77 (skipped) without chromium.
set -euo pipefail
coz="$1" node="$2" out="$3" profile="$4" plain="${5:-}"

rm -rf "$out"
mkdir -p "$out"
. "$(dirname "$0")/chromium.sh"
fail() { echo "FAIL: $1"; exit 1; }

# render PAGE DOM SHOT: the page's DOM after the viewer ran, in $out/DOM.html,
# and its screenshot, $out/SHOT.png; fails unless the viewer started.
render() {
  chrome 1400,1800 --dump-dom "file://$(realpath "$1")" >"$out/$2.html"
  chrome 1400,1800 --screenshot="$out/$3.png" "file://$(realpath "$1")" >/dev/null
  grep -q 'data-ready="true"' "$out/$2.html" || fail "the viewer did not start on $1 (DOM: $out/$2.html)"
}

# The lines in the C++'s mean ranking and in its p99 ranking, one per line.
"$coz" report --json "$profile" >"$out/report.json"
"$node" -e '
  const a = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const p = (a.percentiles || [])[0];
  if (!p) { console.error("no percentiles in coz report --json"); process.exit(1); }
  const mine = a.effects.filter((e) => e.kind === "latency" && e.point === p.name).map((e) => e.line);
  require("fs").writeFileSync(process.argv[2], mine.join("\n") + "\n");
  // The p99 ranking: lines with a p99 change at 50% by it (the C++ order), then the rest in the mean order.
  const known = p.lines.filter((l) => l.at_half[2].change !== null).map((l) => l.line);
  const rest = mine.filter((l) => !known.includes(l));
  require("fs").writeFileSync(process.argv[3], [...known, ...rest].join("\n") + "\n");
' "$out/report.json" "$out/mean-order.txt" "$out/p99-order.txt"
cmp -s "$out/mean-order.txt" "$out/p99-order.txt" && fail "the fixture ranks the lines the same by p99 as by the mean: nothing to reorder"
lines="$(wc -l <"$out/mean-order.txt")"

report="$out/report.html"
"$coz" plot "$profile" -o "$report" >/dev/null
# The same page, whose last script picks "ranking by p99 at 50%" in the sort
# control once the viewer has started, as a user would (a change event).
switched="$out/report-p99.html"
"$node" -e '
  const fs = require("fs");
  const html = fs.readFileSync(process.argv[1], "utf8");
  const at = html.lastIndexOf("</body>");
  const pick = `<script>addEventListener("load", () => { const s = document.getElementById("sort"); ` +
    `s.value = "p99"; s.dispatchEvent(new Event("change")); document.body.dataset.switched = s.value; });</script>\n`;
  fs.writeFileSync(process.argv[2], html.slice(0, at) + pick + html.slice(at));
' "$report" "$switched"

order() { grep -o '<article class="effect [^"]*" id="effect-[0-9]*" data-line="[^"]*"' "$1" | sed -E 's/.*data-line="([^"]*)"/\1/'; }

render "$report" dom screenshot
dom="$out/dom.html"
order "$dom" >"$out/page-mean-order.txt"
diff -u "$out/mean-order.txt" "$out/page-mean-order.txt" || fail "the page's ranking is not coz report's (DOM: $dom)"
# Every latency line: a percentile block with the mean, p50, p95 and p99 at 50%.
[ "$(grep -o 'class="percentiles"' "$dom" | wc -l)" -eq "$lines" ] || fail "not one percentile block per latency line (DOM: $dom)"
for level in mean p50 p95 p99; do
  [ "$(grep -o "data-level=\"$level\"" "$dom" | wc -l)" -eq "$lines" ] || fail "not one $level row per latency line (DOM: $dom)"
done
# A change at 50% with an interval: "+32.2%" and "+28% … +37%".
# (Tooltips hold line breaks: the row is looked for in the DOM on one line.)
tr '\n' ' ' <"$dom" >"$out/dom-flat.html"
grep -qE 'data-level="p50"[^>]*><td><i class="swatch series-p50"></i>p50</td><td class="num (shorter|longer)?"><b>[+−][0-9.]+%</b></td><td class="num muted">[+−0-9.]+% … [+−0-9.]+%</td>' "$out/dom-flat.html" ||
  fail "no p50 change at 50% with its interval (DOM: $dom)"
# Their curves: one per percentile and the mean, with interval bars, on the percentile plot.
grep -q 'class="curve-plot percentile-plot"' "$dom" || fail "no percentile plot (DOM: $dom)"
grep -q 'class="axis-label"[^>]*>Latency change</text>' "$dom" || fail "the percentile plot has no axis label (DOM: $dom)"
for series in mean p50 p95 p99; do
  grep -q "class=\"series series-$series\"" "$dom" || fail "no $series curve in the percentile plots (DOM: $dom)"
done
grep -q 'class="series series-p50"[^>]*><path class="estimate"[^>]*></path><line class="whisker"' "$dom" || fail "no interval bars on the p50 curve (DOM: $dom)"
grep -q 'class="requests"[^>]*>[0-9,]* requests · untreated p50 [^<]* · p95 [^<]* · p99 ' "$dom" || fail "the point does not give its requests and untreated percentiles (DOM: $dom)"
grep -q '<option value="impact"[^>]*>ranking</option><option value="p99" id="sort-p99"[^>]*>ranking by p99 at 50%</option>' "$dom" ||
  fail "no p99 ranking after the mean ranking in the sort control (DOM: $dom)"

# Switched to the p99 ranking through the control: the lines in the C++'s p99 order.
render "$switched" dom-p99 screenshot-p99
dom_p99="$out/dom-p99.html"
grep -q 'data-switched="p99"' "$dom_p99" || fail "the sort control did not take the p99 ranking (DOM: $dom_p99)"
order "$dom_p99" >"$out/page-p99-order.txt"
diff -u "$out/p99-order.txt" "$out/page-p99-order.txt" || fail "ranked by p99, the lines are not in coz report's p99 order (DOM: $dom_p99)"
grep -q 'id="ranking" data-ranking="p99"' "$dom_p99" || fail "the ranking is not by p99 (DOM: $dom_p99)"
grep -q 'id="ranking" data-ranking="mean"' "$dom" || fail "the first ranking is not by the mean (DOM: $dom)"

# A profile without request histograms offers no p99 ranking.
if [ -n "$plain" ]; then
  "$coz" plot "$plain" -o "$out/plain.html" >/dev/null
  chrome 1400,1800 --dump-dom "file://$(realpath "$out/plain.html")" >"$out/dom-plain.html"
  grep -q 'data-ready="true"' "$out/dom-plain.html" || fail "the viewer did not start on $plain"
  grep -q 'id="sort-p99"' "$out/dom-plain.html" && fail "a p99 ranking is offered without request histograms"
  grep -q 'class="percentiles"' "$out/dom-plain.html" && fail "percentiles shown without request histograms"
fi
echo "ok: $lines latency lines with percentiles; mean order $(paste -sd' ' "$out/page-mean-order.txt" | sed 's|[^ ]*/||g'), p99 order $(paste -sd' ' "$out/page-p99-order.txt" | sed 's|[^ ]*/||g'); screenshots in $out"
