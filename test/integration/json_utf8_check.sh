#!/bin/sh
# json_utf8_check.sh COZ CC INCLUDE_DIR SCRATCH
# A program whose source file is named `caf\xe9.c` (Latin-1, not UTF-8) and
# whose function is named with bytes that are not UTF-8 either: every JSON
# coz writes about it must still be valid UTF-8 and valid JSON
# (libcoz/json/json_string.h), read by Python's strict decoder:
#   coz run --format coz-jsonl, coz report --json (and --compare --json),
#   the profiles coz plot embeds in its page.
set -eu
coz=$1 cc=$2 include=$3 scratch=$4
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch"
src=$(printf 'caf\351.c')
cat > "$src" <<'C'
#include <coz.h>
#include <stdint.h>
volatile uint64_t sink;
/* A function whose symbol holds bytes 0xE9 and 0xFF: the assembler name is set directly. */
__attribute__((noinline)) uint64_t work(uint64_t x, uint64_t n) __asm__("work_\351\377");
__attribute__((noinline)) uint64_t work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull + i;
  return x;
}
int main(void) {
  uint64_t x = 1;
  for (int i = 0; i < 1500; i++) {
    x = work(x, 300000);
    COZ_PROGRESS;
  }
  sink = x;
  return 0;
}
C
"$cc" -g -O1 -I"$include" -o prog "$src"
"$coz" run -q -o profile.coz -- ./prog
"$coz" run -q --format coz-jsonl -o profile.jsonl -- ./prog
"$coz" report --json profile.coz > report.json
"$coz" report --json profile.jsonl > report-jsonl.json
"$coz" report --json --compare profile.coz profile.jsonl > compare.json
"$coz" plot -o page.html profile.coz profile.jsonl > /dev/null
python3 - <<'PY'
import json, re, sys
def strict(name, data):
    try:
        return json.loads(data.decode("utf-8"))  # strict: invalid UTF-8 raises
    except (UnicodeDecodeError, ValueError) as e:
        sys.exit(f"{name}: not valid UTF-8 JSON: {e}")
found = set()
for number, line in enumerate(open("profile.jsonl", "rb").read().splitlines(), 1):
    if line.strip():
        record = strict(f"profile.jsonl:{number}", line)
        found.update(v for v in record.values() if isinstance(v, str) and "caf\u00e9.c" in v)
if not found:
    sys.exit("profile.jsonl: no record names caf\u00e9.c (the Latin-1 byte read as \u00e9)")
for name in ("report.json", "report-jsonl.json", "compare.json"):
    text = json.dumps(strict(name, open(name, "rb").read()), ensure_ascii=False)
    if "caf\u00e9.c" not in text:
        sys.exit(f"{name}: caf\u00e9.c not found")
page = open("page.html", "rb").read()
m = re.search(rb'<script type="application/json" id="coz-embedded">(.*?)</script>', page, re.S)
if not m:
    sys.exit("page.html: no embedded profiles")
embedded = strict("page.html embedded profiles", m.group(1))
# The tab form's é is the byte read as Latin-1; the JSON Lines file spells it \u00e9 itself.
if not all("caf\u00e9.c" in p["text"] or "caf\\u00e9.c" in p["text"] for p in embedded):
    sys.exit("page.html: an embedded profile lacks caf\u00e9.c")
page.decode("utf-8")  # the whole page, strictly
print("ok:", sorted(found)[:2])
PY
