#!/usr/bin/env bash
# The profile the export tests read (CTest fixture exports_profile): one run
# of pipeline (a progress point: throughput-point records) and one of latency
# (COZ_BEGIN/COZ_END: latency-point records), ~1 s each, appended to one file
# in `coz run --format coz-jsonl`.
#
#   make_profile.sh COZ PROFILE PIPELINE LATENCY
set -euo pipefail
coz="$1" profile="$2" pipeline="$3" latency="$4"
rm -f "$profile"
mkdir -p "$(dirname "$profile")"
# Experiments of at most 150 ms, so that runs of a second have several.
export COZ_EXPERIMENT_MAX_NS=150000000
"$coz" run -q --format coz-jsonl -o "$profile" --- "$pipeline" -n 1000 >/dev/null
"$coz" run -q --format coz-jsonl -o "$profile" --- "$latency" -n 400 >/dev/null
