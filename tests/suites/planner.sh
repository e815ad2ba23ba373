# tests/suites/planner.sh — the live planner on 4 ranks: an injected pool change and slowdowns followed by replans, a sweep with controls; the planner's tools (sweep_refit on a stored sweep, window-noise, spot-trace)
section "live planner: an injected pool change and slowdown, the planner's moves"
# rank 3 leaves before step 4 and joins before step 8: the plan taken before step 4 holds nothing on rank 3
feeds planner-pool-run planner-pool-follows
t planner-pool-run 300 $L -np 4 bin/nereus tests/decks/pool.deck
if want planner-pool-follows; then
  f=$LOG/planner-pool-run.log
  on3=$(sed -n '/^planner: before step 4: plan [0-9]* -> [0-9]*:/,/^transition:/p' "$f" | stage_ranks | awk '$2 == 3 {print $1}' | sort -u)
  if grep -q '^planner: before step 4: replan — pool 3 rank(s)' "$f" && grep -q '^planner: before step 8: replan — pool 4 rank(s)' "$f" && \
     [ -z "$on3" ] && [ "$(verify "$f" transitions)" -ge 2 ] && [ "$(verify "$f" status)" = pass ] && grep -q 'per-tensor checks passed' "$f"; then
    back=$(awk '/^planner: before step 8: plan [0-9]+ -> [0-9]+:/{p=1;next} p&&/^transition:/{if (match($0, /communicators: [^;]*/)) print substr($0, RSTART, RLENGTH); exit}' "$f")
    result planner-pool-follows 0 0 "urgent replans at steps 4 (rank 3 out: nothing left on it) and 8 (back: ${back:-no transition}); $(verify "$f" transitions) transitions, checked"
  else result planner-pool-follows 1 0 "no urgent replan, or a model-stage left on rank 3: '$on3'"; fi
fi
# a move that waits a step for its communicators (tests/decks/pool_ahead.deck, adapt.h "Moves that wait a step"):
# rank 3 is back before step 8, and the move back onto it needs a new set priced and INJECTED at 0.1 s, more
# than a step of its gain; the planner builds the set before step 8 and moves before step 9, the set ready by
# then (step 8 is made longer than 0.1 s by an INJECTED slowdown). The move must build nothing and wait in its
# set-up for at most what step 8 left of 0.1 s a set (+ 0.05 s); the trace's replay must reproduce the decisions
# and each step's plan, and price the recorded run as its own replay does (the move that waited without the
# set-up its step covered). With NEREUS_TX_PREBUILD=0 the move comes before step 8, building its set (>= 0.1 s).
feeds planner-ahead-run planner-ahead
feeds planner-ahead-off-run planner-ahead
t planner-ahead-run 300 $L -np 4 bin/nereus tests/decks/pool_ahead.deck --set trace.file=pool_ahead.trace.h5
t planner-ahead-off-run 300 env NEREUS_TX_PREBUILD=0 $L -np 4 bin/nereus tests/decks/pool_ahead.deck --set trace.file=none
if want planner-ahead; then
  f=$LOG/planner-ahead-run.log g=$LOG/planner-ahead-off-run.log why=""
  n=$(sed -n 's/^planner: before step 8: the move waits for step 8: its \([0-9]*\) new communicator set(s) built now.*/\1/p' "$f")
  tx=$(awk '/^planner: before step 9: plan [0-9]+ -> [0-9]+:/{p=1;next} p&&/^transition:/{print; exit}' "$f" | \
       sed -n 's/.*communicator set-up \([0-9.]*\) s).* communicators: \([0-9]*\) new set(s), \([0-9]*\) built before the move.*/\1 \2 \3/p')
  read -r aw an ap <<<"$tx"
  s8=$(sed -n 's/^step    8 | .* | \([0-9.]*\)s: gen .*/\1/p' "$f")
  [ -n "$n" ] && [ "$n" -ge 1 ] || why="$why no move waiting before step 8;"
  [ "$an" = 0 ] && [ "$ap" = "$n" ] || why="$why the move before step 9: '$tx' (want 0 new, $n built before);"
  [ -n "$aw" ] && [ -n "$s8" ] && awk -v w="$aw" -v s="$s8" -v n="$n" 'BEGIN{r = 0.1 * n - s; exit !(w <= (r > 0 ? r : 0) + 0.05)}' || \
    why="$why set-up in the move '$aw' s over what step 8 ($s8 s) left of $n x 0.1 s;"
  [ "$(verify "$f" status)" = pass ] && grep -q 'per-tensor checks passed' "$f" || why="$why status or checks;"
  bin/nereus-trace replay pool_ahead.trace.h5 >"$LOG/planner-ahead-replay.log" 2>&1 || why="$why replay exit $?;"
  grep -q '^  the recorded parameters reproduce every recorded decision$' "$LOG/planner-ahead-replay.log" && \
    grep -q "^  plans: every step.s plan id agrees with /steps" "$LOG/planner-ahead-replay.log" || why="$why the replay does not reproduce the run;"
  rec=$(awk '/^  recorded run \(as it ran\)/ {print $6, $7, $8}' "$LOG/planner-ahead-replay.log")
  rep=$(awk '/^  replay, recorded params/ {print $4, $5, $6}' "$LOG/planner-ahead-replay.log")
  [ -n "$rec" ] && [ "$rec" = "$rep" ] || why="$why the replay's predicted totals '$rep' are not the recorded run's '$rec';"
  ox=$(awk '/^planner: before step 8: plan [0-9]+ -> [0-9]+:/{p=1;next} p&&/^transition:/{print; exit}' "$g" | \
       sed -n 's/.*communicator set-up \([0-9.]*\) s).* communicators: \([0-9]*\) new set(s), 0 built before the move.*/\1 \2/p')
  read -r bw bn <<<"$ox"
  [ -n "$bn" ] && [ "$bn" -ge 1 ] && awk -v w="$bw" -v n="$bn" 'BEGIN{exit !(w >= 0.1 * n)}' && [ "$(verify "$g" status)" = pass ] || \
    why="$why NEREUS_TX_PREBUILD=0: the move before step 8 '$ox' (want sets built in it, >= 0.1 s each);"
  if [ -z "$why" ]; then result planner-ahead 0 0 "decided before step 8, $n set(s) built then, moved before step 9 (step 8 $s8 s): set-up in the move $aw s; at once (NEREUS_TX_PREBUILD=0) $bw s; the replay reproduces it"
  else result planner-ahead 1 0 "$why (logs: $f, $g)"; fi
fi
# the ranks holding a model-stage in the plan in force at step N of log F: the last plan printed before it
# (read backwards up to its heading); no reward network in these decks, so reward.inf holds none
held_at() {
  sed "/^step  *$1 |/q" "$2" | tac | sed '/^plan:$/q; /^planner: before step [0-9]*: plan [0-9]* -> [0-9]*:$/q' | stage_ranks |
    awk '$1 != "reward.inf" {print $2}' | sort -nu | tr '\n' ' '
}
# rank 1 does 4x its work from step 4: the planner measures it and replans. The initial placement (before
# step 2, timed) can leave rank 1 without a model-stage (2 of 20 runs beside a spinning process, 2026-12-05):
# its slowdown is then read from its idle probe (counters_probe), and must be detected all the same
feeds planner-slow-run planner-slow-detected
t planner-slow-run 300 $L -np 4 bin/nereus tests/decks/slow.deck
if want planner-slow-detected; then
  f=$LOG/planner-slow-run.log
  held=$(held_at 4 "$f")
  how="rank 1 working (plan on ranks ${held% })"
  echo " $held" | grep -q ' 1 ' || how="rank 1 idle, read from its probe (plan on ranks ${held% })"
  if [ "$(verify "$f" status)" != pass ]; then result planner-slow-detected 1 0 "the run did not pass (log: $f)"
  elif grep -qE '^planner: before step [5-7]: replan — rank 1 at 0\.[0-4][0-9] of its speed' "$f"; then
    result planner-slow-detected 0 0 "$how: $(grep -m1 -oE 'before step [0-9]+: replan — rank 1 at [0-9.]+ of its speed' "$f")"
  else result planner-slow-detected 1 0 "$how: the injected 4x slowdown of rank 1 was not detected by step 7"; fi
fi
# the same with slow_ranks = busiest: the run names the rank it slows (the one holding the most model-stages at
# step 4), until step 9; then its recovery must be seen by step 11, whether the planner has emptied it by then
# (its idle probe) or not (its model-stages)
feeds planner-slow-busiest-run planner-slow-busiest planner-slow-recovers
t planner-slow-busiest-run 300 $L -np 4 bin/nereus tests/decks/slow_busiest.deck
f=$LOG/planner-slow-busiest-run.log
if want planner-slow-busiest planner-slow-recovers; then
  br=$(sed -n 's/^INJECTED slowdown: slow_ranks = busiest is rank \([0-9]*\) from step 4 (it holds .*/\1/p' "$f")
  if [ -n "$br" ] && grep -qE "^planner: before step [5-7]: replan — rank $br at 0\.[0-4][0-9] of its speed" "$f" && [ "$(verify "$f" status)" = pass ]; then
    result planner-slow-busiest 0 0 "rank $br slowed; $(grep -m1 -oE 'before step [0-9]+: replan — rank [0-9]+ at [0-9.]+ of its speed' "$f")"
  else result planner-slow-busiest 1 0 "busiest rank '$br' not named, or its slowdown not detected by step 7"; fi
  held=$(held_at 9 "$f")
  how="rank $br working at step 9"
  echo " $held" | grep -q " $br " || how="rank $br idle at step 9 (plan on ranks ${held% }), read from its probe"
  if [ -n "$br" ] && grep -qE "^planner: before step (9|1[01]): replan — rank $br at (0\.[6-9]|1\.)[0-9]* of its speed \(ref 0\.[0-4]" "$f"; then
    result planner-slow-recovers 0 0 "$how: $(grep -m1 -oE "before step (9|1[01]): replan — rank $br at [0-9.]+ of its speed \(ref [0-9.]+" "$f")"
  else result planner-slow-recovers 1 0 "$how: its recovery at step 9 was not seen by step 11 (log: $f)"; fi
fi
# policy = sweep with controls: 6 plans (2 calibrate, 4 held out), plan 0 run again after every 2 held-out ones
feeds planner-sweep-run planner-sweep
t planner-sweep-run 300 $L -np 4 bin/nereus tests/decks/sweep.deck
if want planner-sweep; then
  f=$LOG/planner-sweep-run.log
  nctl=$(grep -c '^planner: sweep: control [12] (plan 0 again, after [24] held-out plan(s)): ' "$f")
  if [ "$(verify "$f" status)" = pass ] && [ "$nctl" = 2 ] && [ "$(sed -n 's/^sweep\.heldout: //p' "$f")" = 4 ] \
     && grep -qE '^sweep\.mape_pct: [0-9.]+$' "$f" && grep -qE '^sweep\.mape_speed_corrected_pct: [0-9.]+$' "$f" \
     && grep -qE '^sweep\.chosen_gap_again_pct: -?[0-9.]+$' "$f" && grep -qE '^sweep\.mape_floor_pct: [0-9.]+$' "$f" \
     && grep -qE '^sweep\.rms_pct: [0-9.]+$' "$f" && grep -qE '^sweep\.model_rms_est_pct: [0-9.]+$' "$f"; then
    result planner-sweep 0 0 "4 held out, 2 controls: $(sed -n 's/^sweep\.mape_pct: /MAPE /p' "$f")%, $(sed -n 's/^sweep\.mape_speed_corrected_pct: /speed-corrected /p' "$f")%"
  else result planner-sweep 1 0 "the sweep's report lacks its lines (held out, 2 controls, MAPE, corrected MAPE, gap): see $f"; fi
fi
# build/bench/sweep_refit on a stored sweep (tests/bench/dumps/): this build's model refitted on its measurements;
# a file that is not a dump is refused
if want sweep-refit; then
  sr=$LOG/sweep-refit.log
  build/bench/sweep_refit tests/bench/dumps/sweep8-wide-1245.txt > "$sr" 2>&1; rc=$?
  build/bench/sweep_refit tests/decks/sweep.deck >>"$sr" 2>&1; rc2=$?
  if [ $rc = 0 ] && grep -qE '^refit: 10 calibration plan\(s\), 30 held out, 1 round\(s\): MAPE [0-9.]+%' "$sr" \
     && grep -qE '^refit: 6 control\(s\)' "$sr" && grep -qE "model's own about [0-9.]+% RMS" "$sr" && [ $rc2 != 0 ] \
     && grep -q 'is not a complete NEREUS_SWEEP_DUMP' "$sr"; then
    result sweep-refit 0 0 "$(sed -n 's/^refit: 10 calibration.*: \(MAPE [0-9.]*%\).*/stored sweep8-wide-1245: \1/p' "$sr"); a deck refused"
  else result sweep-refit 1 0 "see $sr (exit $rc, $rc2)"; fi
fi
# tools/window-noise: 20 steps alternating 1.0 and 1.2 s after 2 skipped; windows of 3 keep 2 steps, mean 1.1
# each (floor 0%); windows of 2 keep their second step, always 1.2 (|1.1 - 1.2| / 1.2 = 8.33%); its bad inputs
if want window-noise; then
  wn=$LOG/window-noise.log
  { for i in $(seq 0 21); do v=1.0; [ $(( i % 2 )) = 1 ] && v=1.2
      printf 'step %4d | reward 0.1 | len 12.00 | %ss: gen 0.1s inf 0.1s train 0.1s sync 0.0s | 9 tok/s\n' $i $v; done; } > "$LOG/wn.log"
  tools/window-noise "$LOG/wn.log" > "$wn" 2>&1; rc=$?
  tools/window-noise "$LOG/wn.log" x >>"$wn" 2>&1; rc2=$?
  tools/window-noise "$LOG/no-such.log" >>"$wn" 2>&1; rc3=$?
  if [ $rc = 0 ] && grep -qE '^3 steps +6 +0\.00$' "$wn" && grep -qE '^2 steps +10 +8\.33$' "$wn" && [ $rc2 = 2 ] && [ $rc3 = 1 ] \
     && grep -q "cannot read $LOG/no-such.log" "$wn"; then result window-noise 0 0 "by hand: windows of 3 at 0%, of 2 at 8.33%; bad inputs exit 2 and 1"
  else result window-noise 1 0 "see $wn (exit $rc, $rc2, $rc3)"; fi
fi

# tools/spot-trace: the stored spot-like traces are what it draws (same seed), the pool never falls below the
# --max-out share, and a bad command line exits 2
if want spot-trace; then
  st=$LOG/spot-trace.log
  tools/spot-trace --gpus 64 --steps 1000 > "$LOG/spot-64.txt" 2>"$st"; rc=$?
  tools/spot-trace --gpus 1024 --steps 1000 > "$LOG/spot-1024.txt" 2>>"$st"; rc1=$?
  tools/spot-trace --gpus 100 --per-node 8 --steps 10 >>"$st" 2>&1; rc2=$?
  # reclaims every 2 steps that stay out 200: the cap binds, a quarter of 128 nodes out and never more
  lo=$(tools/spot-trace --gpus 1024 --steps 1000 --seed 7 --mean-gap 2 --mean-out 200 --max-out 0.25 | \
       awk '!/^#/{if (min == "" || $2 < min) min = $2} END{print min}')
  if [ $rc = 0 ] && [ $rc1 = 0 ] && [ $rc2 = 2 ] && diff -q "$LOG/spot-64.txt" inputs/sim/avail-spot-64.txt >/dev/null && \
     diff -q "$LOG/spot-1024.txt" inputs/sim/avail-spot-1024.txt >/dev/null && [ "$lo" = 768 ]; then
    result spot-trace 0 0 "reproduces inputs/sim/avail-spot-{64,1024}.txt; reclaimed every 2 steps for 200: lowest pool $lo of 1024 (max-out 0.25: 768); bad --gpus exits 2"
  else result spot-trace 1 0 "exit $rc $rc1 $rc2, lowest pool '$lo'; see $st"; fi
fi
