#!/usr/bin/env bash
# tests/bench/sim_study.sh OUT [RECORD] — the admission study (issue #34, docs/PLANNER.md "The admission study"):
# every scenario deck of inputs/sim/study/ with its seeds (>= 10 paired) and every study policy, then the scenario
# decks of inputs/sim/ (growth-16 .. growth-1024, spot-64, spot-1024, grpo-64, grpo-1024) with 10 paired seeds
# and the core policies ([simulate] study = core: the baselines, payback, payback-inf beside it, the oracle); the
# table on stdout, sim.DECK.POLICY.METRIC lines (sim.scenario-DECK.* for inputs/sim/) appended to OUT, and with
# RECORD every deck's whole output into that file. MODELLED clusters and noise; one process per deck, run one
# after another, each spreading its runs over the OpenMP threads (OMP_NUM_THREADS; default: the cores).
set -euo pipefail
out=$1 rec=${2:-}
[ -z "$rec" ] || : > "$rec"
t0=$(date +%s)
run_deck() { # DECK NAME [--set ...]
  local d=$1 n=$2; shift 2
  echo; echo "== admission study: bin/nereus --simulate $d $* (MODELLED)"
  local log=build/sim-study-$n.txt s
  s=$(date +%s)
  bin/nereus --simulate "$d" "$@" > "$log"
  grep -v '^sim\.\|^verify\.' "$log" | sed -n '/^ADMISSION/,$p'
  sed -n "s/^sim\./sim.$n./p" "$log" >> "$out"
  echo "sim.$n.study_wall_s: $(( $(date +%s) - s ))" >> "$out"
  [ -z "$rec" ] || { echo "== $d $*"; cat "$log"; } >> "$rec"
}
for d in inputs/sim/study/*.deck; do run_deck "$d" "$(basename "$d" .deck)"; done
echo "sim.study_wall_s: $(( $(date +%s) - t0 ))" >> "$out"
t1=$(date +%s)
for n in growth-16 growth-64 growth-256 growth-1024 spot-64 spot-1024 grpo-64 grpo-1024; do
  run_deck "inputs/sim/$n.deck" "scenario-$n" --set simulate.seeds=10 --set simulate.study=core
done
echo "sim.scenario_study_wall_s: $(( $(date +%s) - t1 ))" >> "$out"
