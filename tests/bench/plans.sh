#!/usr/bin/env bash
# tests/bench/plans.sh OUT — the PPO step under the 8-rank plans of
# tests/equiv_plans.txt (and 1 rank as the baseline): median step and stage
# times over steps 1.. (step 0 warms up), and the per-step weight sync's bytes
# and time. 8 ranks share this machine's cores, so absolute times measure an
# oversubscribed CPU; the ratios within the table are the comparison. Then
# the pipeline where each rank has a core: inputs/plans/pipeline2.deck
# against serial2.deck (the same job, both trainings on one rank).
set -euo pipefail
out=$1
dir=build/bench-plans; mkdir -p "$dir"
med() { sort -g | awk '{a[NR]=$1} END{ if (NR==0) {print "nan"; exit} print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2) }'; }
run_plan() { # NAME NP PLAN: plans.deck under PLAN
  local deck=$dir/$1.deck
  { cat tests/bench/plans.deck; if [ -n "$3" ]; then echo "[plan]"; echo "$3" | tr ';' '\n' | sed 's/^ *//'; fi; } > "$deck"
  run_deck "$1" "$2" "$deck"
}
run_deck() { # NAME NP DECK: one row of the table, its step against $base (the first row, named $vs); sets train
  local name=$1 np=$2 deck=$3 log=$dir/$1.log
  jobs/local.sh -np "$np" bin/nereus "$deck" > "$log" 2>&1 || { echo "bench: $name failed (see $log)" >&2; return 1; }
  grep '^step' "$log" | tail -n +2 > "$dir/$name.steps"
  local step gen inf sync
  step=$(sed -n 's/.*| \([0-9.]*\)s: gen.*/\1/p' "$dir/$name.steps" | med)
  gen=$(sed -n 's/.* gen \([0-9.]*\)s .*/\1/p' "$dir/$name.steps" | med)
  inf=$(sed -n 's/.* inf \([0-9.]*\)s .*/\1/p' "$dir/$name.steps" | med)
  train=$(sed -n 's/.* train \([0-9.]*\)s .*/\1/p' "$dir/$name.steps" | med)
  sync=$(sed -n 's/.* sync \([0-9.]*\)s .*/\1/p' "$dir/$name.steps" | med)
  local bytes; bytes=$(sed -n 's/.*, \([0-9]*\) bytes per step.*/\1/p' "$log")
  [ -n "$base" ] || base=$step
  printf '%-20s %5d %8.3f %8.3f %8.3f %8.3f %8.4f %10.2f %8.2f\n' "$name" "$np" "$step" "$gen" "$inf" "$train" "$sync" \
    "$(echo "$bytes / 1048576" | bc -l)" "$(echo "$step / $base" | bc -l)"
  { echo "plans.$name.ranks: $np"; echo "plans.$name.step_s: $step"; echo "plans.$name.gen_s: $gen"; echo "plans.$name.inf_s: $inf"
    echo "plans.$name.train_s: $train"; echo "plans.$name.sync_s: $sync"; echo "plans.$name.sync_bytes: $bytes"
    echo "plans.$name.step_over_$vs: $(echo "$step / $base" | bc -l | cut -c1-6)"; } >> "$out"
}
echo
echo "== PPO step under plans (tiny model, 8 PPO steps, medians of steps 1-7; 8 ranks OVERSUBSCRIBE 2 cores)"
printf '%-20s %5s %8s %8s %8s %8s %8s %10s %8s\n' plan ranks step_s gen_s inf_s train_s sync_s sync_MiB vs_1rank
base="" vs=1rank
run_plan 1rank 1 ""
while IFS='|' read -r -u 3 name np plan; do
  name=$(echo $name); np=$(echo $np)
  case "$name" in ''|'#'*) continue;; esac
  [ "$np" = 8 ] || continue
  run_plan "$name" "$np" "$plan"
done 3< tests/equiv_plans.txt
echo "  sync: weight sync after each step (actor.train -> actor.gen, actor.inf; critic.train -> critic.inf),"
echo "  through the transition engine (the default, [transition] sync = engine); sync_MiB = bytes received by all ranks per step"
echo
echo "== pipelined training (inputs/plans/{serial2,pipeline2}.deck: 4-layer 256-wide model, 2 ranks with a core each; medians of steps 1-5)"
printf '%-20s %5s %8s %8s %8s %8s %8s %10s %8s\n' deck ranks step_s gen_s inf_s train_s sync_s sync_MiB vs_serial
base="" vs=serial2
run_deck serial2 2 inputs/plans/serial2.deck; serial=$train
run_deck pipeline2 2 inputs/plans/pipeline2.deck
r=$(printf '%.3f' "$(echo "$train / $serial" | bc -l)")
echo "  training phase: both pipelined over the two ranks (pp2) $train s against both on one rank $serial s: ${r}x"
echo "plans.pipeline2.train_over_serial2: $r" >> "$out"
