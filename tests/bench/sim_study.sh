#!/usr/bin/env bash
# tests/bench/sim_study.sh OUT [RECORD] — the admission study (issue #34, docs/PLANNER.md "The admission study"):
# every scenario deck of inputs/sim/study/ with its seeds (>= 10 paired), every study policy; the table on stdout,
# sim.DECK.POLICY.METRIC lines appended to OUT, and with RECORD every deck's whole output into that file.
# MODELLED clusters and noise; one process per deck, run one after another.
set -euo pipefail
out=$1 rec=${2:-}
[ -z "$rec" ] || : > "$rec"
t0=$(date +%s)
for d in inputs/sim/study/*.deck; do
  n=$(basename "$d" .deck)
  echo; echo "== admission study: bin/nereus --simulate $d (MODELLED)"
  log=build/sim-study-$n.txt
  s=$(date +%s)
  bin/nereus --simulate "$d" > "$log"
  grep -v '^sim\.\|^verify\.' "$log" | sed -n '/^ADMISSION/,$p'
  sed -n "s/^sim\./sim.$n./p" "$log" >> "$out"
  echo "sim.$n.study_wall_s: $(( $(date +%s) - s ))" >> "$out"
  [ -z "$rec" ] || { echo "== $d"; cat "$log"; } >> "$rec"
done
echo "sim.study_wall_s: $(( $(date +%s) - t0 ))" >> "$out"
