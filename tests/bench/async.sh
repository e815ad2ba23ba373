#!/usr/bin/env bash
# tests/bench/async.sh OUT [PAIRS] — asynchronous rollouts (docs/ASYNC.md): inputs/async2.deck (2 ranks,
# one BLAS thread each: actor.gen on rank 0, the rest on rank 1) with [ppo] max_staleness = 0 and 1,
# alternating, PAIRS pairs (default 3); per run verify.ppo_mean_step_s (the PPO steps' mean wall time) and
# each rank's idle seconds per step (the run's `ranks:` line); the medians and their ratio, K = 1 over
# K = 0, into OUT as `async2.*` lines. Part of `make bench` (tests/bench/run.sh); alone:
#   tests/bench/async.sh build/bench-async.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
pairs=${2:-3}
dir=build/bench-async
mkdir -p "$dir"
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
verify() { sed -n "s/^verify\.$2: //p" "$1" | head -1; }
idle() { sed -n "s/^ranks: .* $2: [0-9.]* \/ \([0-9.]*\).*/\1/p" "$1" | head -1; }
echo
echo "== asynchronous rollouts: inputs/async2.deck, 2 ranks, K = 0 and K = 1 alternating, $pairs pair(s)"
declare -A step i0 i1
for r in $(seq 1 "$pairs"); do
  for k in 0 1; do
    log=$dir/async2-k$k-$r.log
    OPENBLAS_NUM_THREADS=1 jobs/local.sh -np 2 bin/nereus inputs/async2.deck --set ppo.max_staleness=$k \
      --set run.name=async2-k$k --set trace.file="$dir/async2-k$k.trace.h5" --set trace.overwrite=true > "$log" 2>&1 ||
      { echo "bench: async2 K = $k failed (log: $log)"; exit 1; }
    [ "$(verify "$log" status)" = pass ] || { echo "bench: async2 K = $k did not pass (log: $log)"; exit 1; }
    step[$k]="${step[$k]:-} $(verify "$log" ppo_mean_step_s)"
    i0[$k]="${i0[$k]:-} $(idle "$log" 0)"
    i1[$k]="${i1[$k]:-} $(idle "$log" 1)"
    printf '  run %d K = %d: %s s a step; idle per step: rank 0 %s s, rank 1 %s s\n' "$r" "$k" \
      "$(verify "$log" ppo_mean_step_s)" "$(idle "$log" 0)" "$(idle "$log" 1)"
  done
done
m0=$(echo "${step[0]}" | median); m1=$(echo "${step[1]}" | median)
ratio=$(awk -v a="$m1" -v b="$m0" 'BEGIN { printf "%.3f", a / b }')
printf '  %-6s %12s %14s %14s\n' K "step s (med)" "idle rank 0" "idle rank 1"
for k in 0 1; do
  m=$(echo "${step[$k]}" | median)
  printf '  %-6s %12.3f %14.3f %14.3f\n' "$k" "$m" "$(echo "${i0[$k]}" | median)" "$(echo "${i1[$k]}" | median)"
  echo "async2.k$k.step_s: $m" >> "$out"
  echo "async2.k$k.idle_rank0_s: $(echo "${i0[$k]}" | median)" >> "$out"
  echo "async2.k$k.idle_rank1_s: $(echo "${i1[$k]}" | median)" >> "$out"
done
echo "  K = 1 over K = 0: $ratio (goal: at most 0.65)"
echo "async2.k1_over_k0: $ratio" >> "$out"
