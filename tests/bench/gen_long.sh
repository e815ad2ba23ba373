#!/usr/bin/env bash
# tests/bench/gen_long.sh OLD_ROOT [NEW_ROOT] — gen's time on tests/bench/gen-long.deck
# (responses of 200-400 tokens whose rows finish at different positions) under two
# builds, from their traces: each build's bin/nereus runs the deck RUNS times (default
# 2), alternating, on one rank; prints gen's seconds per PPO step, the responses' mean
# length (the same tokens give the same lengths) and new / old. OLD_ROOT is a checkout
# of the code to compare against with bin/ built (e.g. main: git worktree add ... main;
# make); NEW_ROOT defaults to this checkout. Not run in CI (about 2 minutes a run).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
old=$(cd "${1:?usage: tests/bench/gen_long.sh OLD_ROOT [NEW_ROOT]}" && pwd)
new=$(cd "${2:-$here}" && pwd)
runs=${RUNS:-2}
deck=$here/tests/bench/gen-long.deck
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
for r in $(seq 1 "$runs"); do
  for which in old new; do
    root=${!which}
    mkdir -p "$work/$which-$r"
    (cd "$work/$which-$r" && "$here/jobs/local.sh" -np 1 "$root/bin/nereus" "$deck" > run.log 2>&1)
    "$here/bin/nereus-trace" csv "$work/$which-$r/gen-long.trace.h5" steps > "$work/$which-$r.csv"
  done
done
# per build: gen seconds per step (mean over the steps, median over the runs), mean response length
summary() {
  for r in $(seq 1 "$runs"); do
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
             { g += $c["gen_s"]; l += $c["resp_len"]; n++ } END { printf "%.4f %.2f\n", g / n, l / n }' "$work/$1-$r.csv"
  done | sort -n | awk '{ a[NR] = $1; l = $2 } END { printf "%.4f %.2f\n", a[int((NR + 1) / 2)], l }'
}
read -r go lo < <(summary old)
read -r gn ln < <(summary new)
printf 'gen-long: gen %.3f s a step (old, %s) vs %.3f s (new, %s): new/old %.3f; mean response %s vs %s tokens\n' \
  "$go" "$old" "$gn" "$new" "$(awk "BEGIN { print $gn / $go }")" "$lo" "$ln"
