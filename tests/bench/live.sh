#!/usr/bin/env bash
# tests/bench/live.sh OUT [PARTS] — the live planner on 8 ranks (issue #6), on this
# machine (8 ranks share its cores: docs/PLANNER.md says what that does to
# the numbers):
#   drift   inputs/live/drift8.deck (INJECTED: responses 6 -> 24 tokens, rank 1
#           3x slower from step 15) under [planner] policy = payback, then
#           the static baseline: the plan that run's initial placement chose
#           (the best the planner found for the initial conditions) fixed
#           from step 0, planner off, the same drift (so the two start from
#           the same plan, and the baseline skips payback's 2 warm-up steps
#           on the deck's plan); 3 pairs; mean step = the PPO loop's wall
#           time (transitions included) / steps; the medians compared.
#   sweep   inputs/live/sweep8.deck: the cost model's error on 30 held-out
#           plans and the gap of the search's choice to the best of the 40
#           run (its sweep window), and to that plan run again as long as
#           the choice (sweep.chosen_gap_again_pct); then the same with
#           inputs/live/sweep8-wide.deck, a model where compute dominates.
#   osc8    inputs/live/osc8.deck (INJECTED: the busiest rank of the plan in force 3x slower for 2
#           steps, then no rank for 6, over and over; the slowdown follows the work; every
#           communicator set a move builds takes at least 0.492 s, [inject] comm_setup_s): every-gain
#           against payback, 3 runs each, medians of mean step and moves, and the moves' measured
#           seconds (every move's median, for the spell length against what a move costs); per run,
#           the spells moved at, the rule's refusals (C/dL > gamma H) and the guard's reverts.
#   PARTS: which of drift, osc8, sweep to run (default all three, in that order).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
parts=" ${2:-drift osc8 sweep} "
want() { [[ $parts == *" $1 "* ]]; }
mkdir -p build/bench-live
mean_step() { sed -n 's/^ppo: \([0-9]*\) steps in \([0-9.]*\)s.*/\2 \1/p' "$1" | awk '{printf "%.4f", $1 / $2}'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
for dk in drift8 drift8-busiest; do
want drift || break
echo
echo "== live planner, 8 ranks: inputs/live/$dk.deck (INJECTED drift): payback, then its initial plan kept (static)"
s_all=""; p_all=""
for r in 1 2 3; do
  d=build/bench-live/$dk-payback.deck
  sed "s/^name = $dk\$/name = $dk-payback/" inputs/live/$dk.deck > "$d"
  printf '[trace]\nfile = none\n' >> "$d"
  log=build/bench-live/$dk-payback-$r.log
  jobs/local.sh -np 8 bin/nereus "$d" > "$log" 2>&1
  # the static baseline: the plan payback's initial placement chose (the best the planner found for the
  # initial conditions; it decides before step 2, after [planner] warmup = 2), fixed from step 0 with the
  # planner off; the same injected drift. No move at step 2: the deck's own (default) plan
  plan=$(awk '/^planner: before step 2: plan 0 -> 1:/{p=1;next} p&&/^transition:/{exit}
              p{ if (match($0, /ranks [0-9,-]+/)) printf "%s = %s %s %s @ %s\n", $1, $2, $3, $4, substr($0, RSTART+6, RLENGTH-6) }' "$log")
  ds=build/bench-live/$dk-static.deck
  sed "s/^name = $dk\$/name = $dk-static/; s/^policy = payback/policy = off/" inputs/live/$dk.deck > "$ds"
  printf '[trace]\nfile = none\n[plan]\n%s\n' "${plan:-default = colocated}" >> "$ds"
  logs=build/bench-live/$dk-static-$r.log
  jobs/local.sh -np 8 bin/nereus "$ds" > "$logs" 2>&1
  for pol in payback static; do
    f=build/bench-live/$dk-$pol-$r.log
    m=$(mean_step "$f"); nt=$(sed -n 's/^verify.transitions: //p' "$f")
    sr=$(sed -n 's/^INJECTED slowdown: slow_ranks = busiest is \(rank [0-9]*\) from.*/, slowed \1/p' "$f")
    printf '  run %d  %-8s mean step %.4f s, %s transition(s)%s\n' "$r" "$pol" "$m" "${nt:-0}" "$sr"
    if [ $pol = static ]; then s_all="$s_all $m"; else p_all="$p_all $m"; fi
  done
done
ms=$(echo "$s_all" | median); mp=$(echo "$p_all" | median)
red=$(awk -v s="$ms" -v p="$mp" 'BEGIN {printf "%.1f", 100 * (s - p) / s}')
echo "  median mean step: static $ms s, payback $mp s: payback $red% lower (goal >= 27.7%, the paper's)"
grep -h '^planner: before step\|^INJECTED slowdown: slow_ranks' build/bench-live/$dk-payback-2.log | cut -c1-160 | sed 's/^/  payback run 2: /'
{ echo "live.$dk.static_mean_step_s: $ms"; echo "live.$dk.payback_mean_step_s: $mp"; echo "live.$dk.payback_reduction_pct: $red"; } >> "$out"
done
# an INJECTED slowdown that comes and goes (inputs/live/osc8.deck, issue #34): every-gain (search every step, take
# any plan predicted faster) against payback, 3 pairs, the medians of their mean step and moves
want osc8 && echo
want osc8 && echo "== live planner, 8 ranks: inputs/live/osc8.deck (INJECTED slowdown of the busiest rank for 2 steps in every 8, INJECTED communicator set-up $(sed -n 's/^comm_setup_s = //p' inputs/live/osc8.deck) s a set): every-gain, payback, alternating"
want osc8 && echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A osc_ms osc_mv osc_mc osc_rf
for r in 1 2 3; do
  want osc8 || break
  for pol in every-gain payback; do
    d=build/bench-live/osc8-$pol.deck
    sed "s/^name = osc8\$/name = osc8-$pol/; s/^policy = payback/policy = $pol/" inputs/live/osc8.deck > "$d"
    printf '[trace]\nfile = none\n' >> "$d"
    log=build/bench-live/osc8-$pol-$r.log
    jobs/local.sh -np 8 bin/nereus "$d" > "$log" 2>&1
    m=$(mean_step "$log"); nt=$(sed -n 's/^verify.transitions: //p' "$log")
    mc=$(sed -n 's/^transition: .*, measured \([0-9.]*\) s .*/\1/p' "$log" | median)
    # the decisions: moves taken at a confirmed slowdown, the payback rule's refusals, the guard's reverts
    sp=$(grep -cE '^planner: before step [0-9]+: replan — rank [0-9]+ at 0\.[0-4][0-9] of its speed.*(: admitted|faster, admitted)' "$log" || true)
    rf=$(grep -cE '^planner: before step [0-9]+: replan.*: refused: pays back in [0-9.]+ steps > gamma' "$log" || true)
    rv=$(grep -c '^planner: before step [0-9]*: measure-and-revert guard: measured revert' "$log" || true)
    printf '  run %d  %-10s mean step %.4f s, %s move(s), a move %s s (median measured); moved at %s slowdown(s), %s refusal(s) by C/dL > gamma H, %s revert(s)  (load %s)\n' \
      "$r" "$pol" "$m" "${nt:-0}" "$mc" "$sp" "$rf" "$rv" "$(cut -d' ' -f1 /proc/loadavg)"
    osc_ms[$pol]="${osc_ms[$pol]:-} $m"; osc_mv[$pol]="${osc_mv[$pol]:-} ${nt:-0}"; osc_mc[$pol]="${osc_mc[$pol]:-} $mc"
    osc_rf[$pol]="${osc_rf[$pol]:-} $rf"
  done
done
for pol in every-gain payback; do
  want osc8 || break
  k=${pol//-/_}
  { echo "live.osc8.${k}_mean_step_s: $(echo "${osc_ms[$pol]}" | median)"; echo "live.osc8.${k}_moves: $(echo "${osc_mv[$pol]}" | median)"
    echo "live.osc8.${k}_move_s: $(echo "${osc_mc[$pol]}" | median)"; echo "live.osc8.${k}_rule_refusals: $(echo "${osc_rf[$pol]}" | median)"; } >> "$out"
  echo "  $pol: median mean step $(echo "${osc_ms[$pol]}" | median) s, median moves $(echo "${osc_mv[$pol]}" | median), a move $(echo "${osc_mc[$pol]}" | median) s, rule refusals $(echo "${osc_rf[$pol]}" | median)"
done
want osc8 && grep -h '^planner: before step\|^INJECTED slowdown: slow_ranks' build/bench-live/osc8-payback-2.log |
  sed 's/ (ref [0-9.]*; slowest pool rank at [0-9.]*, ref [0-9.]*)//' | cut -c1-250 | sed 's/^/  payback run 2: /'
for deck in sweep8 sweep8-wide; do
  want sweep || break
  echo
  echo "== live planner, 8 ranks: inputs/live/$deck.deck (cost model on held-out plans, plan quality)"
  log=build/bench-live/$deck.log
  # the measurements kept for offline refits (build/bench/sweep_refit; tests/bench/dumps/ holds earlier ones)
  NEREUS_SWEEP_DUMP="$PWD/build/bench-live/$deck.dump" jobs/local.sh -np 8 bin/nereus inputs/live/$deck.deck > "$log" 2>&1
  echo "  (measurements: build/bench-live/$deck.dump; build/bench/sweep_refit refits this build's model on them)"
  sed -n '/^planner: sweep: [0-9]* sampled/,/^sweep\.chosen_gap_again_pct/p' "$log" | cut -c1-200
  sed -n "s/^sweep\.\([a-z_]*\): \([-0-9.]*\).*/live.$deck.\1: \2/p" "$log" >> "$out"
  # Every sweep of a deck samples the same plans, so its calibration set is the same K plans in every run; the
  # same measurements refitted on each quarter of the sample in turn (build/bench/sweep_refit,
  # SWEEP_REFIT_SHIFT) give the model's held-out error with less dependence on which plans calibrate. An
  # offline figure beside the live one (the plans before a calibration quarter ran before it), not instead of it.
  if q=$(tests/bench/refit_quarters.sh build/bench/sweep_refit "build/bench-live/$deck.dump"); then
    qm=$(echo $q | awk '{s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.2f", s / NF}')
    echo "  held-out MAPE calibrated on each quarter of the sampled plans in turn (offline refit of these measurements): $q% -> mean $qm%"
    echo "live.$deck.mape_by_quarters_pct: $qm" >> "$out"
  fi
done
