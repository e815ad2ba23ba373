# tests/suites/transitions.sh — the transition engine over MPI: random transitions bit-identical with minimal bytes, a mid-run plan switch equal to a restart under the new plan, windows and broadcast sync, random plan switches, scale-out forwarding, refused switches, the INJECTED communicator set-up
section "transitions: the engine over MPI, a mid-run switch, refusals"
# 250 random transitions on 4 ranks and 250 on 8 (AdamW state, copies, tight budgets): bit-identical, minimal bytes
for n in 4 8; do
  t "transition-property-$n" 300 $L -np $n build/tests/test_transition 250
  ! runs "transition-property-$n" && continue
  note=$(grep -m1 'random transitions' "$LOG/transition-property-$n.log" | sed 's/^ok *//; s/^FAIL *//')
  [ -n "$note" ] && echo "      $note"
done
# a run that switches plan before step 5 against a restart from the same step-5 checkpoint under the new plan
T=$LOG/switch; mkdir -p "$T"
P_OLD='actor.gen = tp2 dp2 @0-3\nactor.inf = dp4 @all\nref.inf = tp2 @2-3\ncritic.inf = dp2 @0-1\nactor.train = tp2 dp2 @0-3\ncritic.train = pp2 dp2 @0-3\nreward.inf = @0'
P_NEW='actor.gen = dp4 @ 3,2,1,0\nactor.inf = tp4 @ 0-3\nref.inf = dp2 @ 0-1\ncritic.inf = pp2 @ 2-3\nactor.train = tp2 pp2 @ 1,0,3,2\ncritic.train = dp4 @ 0-3\nreward.inf = @ 3'
feeds switch-run switch-new-plan-run switch-equals-new-plan switch-windows-broadcast
feeds switch-new-plan-run switch-equals-new-plan
feeds switch-windows-run switch-windows-broadcast
# (each run's trace in a file of its own, read by the checks with bin/nereus-trace csv)
{ cat tests/decks/restart.deck; printf "[ckpt]\nevery = 5\nkeep = 5\ndir = $T/a\n[plan]\n$P_OLD\n[switch]\nstep = 5\n$P_NEW\n[transition]\nverify = true\n[trace]\nfile = $T/switch.trace.h5\n"; } > "$T/switch.deck"
t switch-run 300 $L -np 4 bin/nereus "$T/switch.deck"
{ cat tests/decks/restart.deck; printf "[ckpt]\nevery = 5\nkeep = 5\ndir = $T/b\n[run]\nrestart = $T/a/restart_step000005.h5\n[plan]\n$P_NEW\n"; } > "$T/new.deck"
t switch-new-plan-run 300 $L -np 4 bin/nereus "$T/new.deck"
if want switch-equals-new-plan; then
  why=""
  [ "$(verify "$LOG/switch-run.log" transitions)" = 1 ] || why="$why no transition;"
  grep -q 'per-tensor checks passed' "$LOG/switch-run.log" || why="$why checks did not run;"
  checksums_close "$LOG/switch-new-plan-run.log" "$LOG/switch-run.log"
  mv_=$(trace_col "$T/switch.trace.h5" transitions bytes_moved); mn_=$(trace_col "$T/switch.trace.h5" transitions bytes_min)
  [ -n "$mv_" ] && [ "$mv_" = "$mn_" ] || why="$why bytes moved '$mv_', minimum '$mn_';"
  mv_=$(awk -v b="$mv_" 'BEGIN{printf "%.2f", b / 1048576}')
  # the measured peak memory (backend bytes, the largest rank) within the DAG's plan (a move holds state, not whole shards)
  pk_=$(sed -n 's/^transition: .* peak memory \([0-9.]*\) MiB per rank (planned \([0-9.]*\);.*/\1 \2/p' "$LOG/switch-run.log")
  [ -n "$pk_" ] && [ "$(echo $pk_ | awk '{print ($1 <= $2 + 0.05)}')" = 1 ] || why="$why peak memory over the plan '$pk_';"
  if [ -z "$why" ]; then result switch-equals-new-plan 0 0 "checksums within $worst of the new plan from the same checkpoint; moved = minimum ($mv_ MiB); peak within the plan ($pk_ MiB)"
  else result switch-equals-new-plan 1 0 "$why"; fi
fi
# the same run with models moved whole 1,000 floats at a time (NEREUS_JOB_WINDOW: the start-up copy, the
# per-tensor checks, the checksums) and the broadcast weight-sync baseline instead of the engine: the same
# weights, so the same tokens and checksums to the last digit
sed 's/^verify = true$/verify = true\nsync = broadcast/' "$T/switch.deck" | sed "s#^dir = $T/a#dir = $T/w#; s#^file = .*#file = $T/windows.trace.h5#" > "$T/windows.deck"
t switch-windows-run 300 env NEREUS_JOB_WINDOW=1000 $L -np 4 bin/nereus "$T/windows.deck"
if want switch-windows-broadcast; then
  why=""
  same_keys "$LOG/switch-run.log" "$LOG/switch-windows-run.log" tokens_hash checksum.actor checksum.ref checksum.critic status
  grep -q 'per-tensor checks passed' "$LOG/switch-windows-run.log" || why="$why checks did not run;"
  grep -q 'weight sync (broadcast)' "$LOG/switch-windows-run.log" || why="$why no broadcast sync reported;"
  if [ -z "$why" ]; then result switch-windows-broadcast 0 0 "1,000-float windows and broadcast sync: tokens and checksums identical"
  else result switch-windows-broadcast 1 0 "$why"; fi
fi
# random valid decks (tests/test_plan_fuzz.py, a fixed seed): a random plan, a switch to another, random
# [transition] settings and assembly windows; 12 on 4 ranks and 4 on 8, each must pass with its transition checked
t plan-fuzz-4 "$(fuzz_to 200)" /usr/bin/python3 tests/test_plan_fuzz.py "$(fuzz_n 12)" "$LOG/planfuzz4" "$(fuzz_seed 20261205)" 4
t plan-fuzz-8 "$(fuzz_to 200)" /usr/bin/python3 tests/test_plan_fuzz.py "$(fuzz_n 4)" "$LOG/planfuzz8" "$(fuzz_seed 20261206)" 8
for n in 4 8; do ! runs "plan-fuzz-$n" || grep -E '^(FAIL|plan fuzz:)' "$LOG/plan-fuzz-$n.log" | sed 's/^/      /'; done
# a scale-out (actor.train and critic.train from one rank each to dp4): with forwarding (the default) some
# replicas get their shard from another new replica; without, all from the one holder; the same run either way
P_ONE='actor.gen = tp2 dp2 @0-3\nactor.inf = dp4 @all\nref.inf = tp2 @2-3\ncritic.inf = dp2 @0-1\nactor.train = @0\ncritic.train = @1\nreward.inf = @0'
P_OUT='actor.gen = dp4 @ 3,2,1,0\nactor.inf = tp4 @ 0-3\nref.inf = dp2 @ 0-1\ncritic.inf = pp2 @ 2-3\nactor.train = dp4 @ 0-3\ncritic.train = dp4 @ 0-3\nreward.inf = @ 3'
for fw in true false; do
  feeds switch-scaleout-forward-$fw switch-scaleout-forwarding
  { cat tests/decks/restart.deck; printf "[plan]\n$P_ONE\n[switch]\nstep = 3\n$P_OUT\n[transition]\nverify = true\nforward = $fw\n[trace]\nfile = $T/scaleout-$fw.trace.h5\n"; } > "$T/scaleout-$fw.deck"
  deck_steps "$T/scaleout-$fw.deck" 6
  t switch-scaleout-forward-$fw 300 $L -np 4 bin/nereus "$T/scaleout-$fw.deck"
done
if want switch-scaleout-forwarding; then
  a_=$LOG/switch-scaleout-forward-true.log; b_=$LOG/switch-scaleout-forward-false.log
  # bytes forwarded by new replicas with forwarding, none without; the transition checked (trace /transitions)
  fwd=$(trace_col "$T/scaleout-true.trace.h5" transitions bytes_forwarded | awk '{s += $1} END{if (NR) printf "%.2f", s / 1048576}')
  nofwd=$(trace_col "$T/scaleout-false.trace.h5" transitions bytes_forwarded | awk '{s += $1} END{if (NR) print s}')
  checked=$(trace_col "$T/scaleout-true.trace.h5" transitions verified | awk '{s += $1} END{print s + 0}')
  why=""; same_keys "$a_" "$b_" tokens_hash checksum.actor checksum.critic checksum.ref status
  same=1; [ -z "$why" ] || same=0
  if [ -n "$fwd" ] && awk -v f="$fwd" 'BEGIN{exit !(f > 0)}' && [ "$nofwd" = 0 ] && [ $same = 1 ] && \
     [ "$(verify "$a_" status)" = pass ] && [ "$checked" -ge 1 ]; then
    result switch-scaleout-forwarding 0 0 "$fwd MiB forwarded; tokens and checksums identical to the run without forwarding"
  else result switch-scaleout-forwarding 1 0 "forwarded '$fwd' MiB, identical $same"; fi
fi
# an infeasible plan (tp3 does not divide 4 heads): refused before step 1 with exit 2 at the [switch] line (until
# issue 48 it was refused only when its step came, the run going on); a budget no schedule fits, which only the
# switch itself finds: refused then, the run continuing on the old plan
{ cat tests/decks/restart.deck; printf "[plan]\n$P_OLD\n[switch]\nstep = 2\nactor.gen = tp3 @ 0-2\nactor.inf = dp4 @all\nref.inf = tp2 @2-3\ncritic.inf = dp2 @0-1\nactor.train = tp2 dp2 @0-3\ncritic.train = pp2 dp2 @0-3\nreward.inf = @0\n"; } > "$T/infeasible.deck"
deck_steps "$T/infeasible.deck" 4
feeds switch-infeasible-refused switch-infeasible-before-step1
bad switch-infeasible-refused "infeasible\.deck:$(( $(grep -n '^actor.gen = tp3' "$T/infeasible.deck" | cut -d: -f1) )): error: \[switch\] actor\.gen: tp = 3 does not divide.*before step 2" \
  $L -np 4 bin/nereus "$T/infeasible.deck"
if want switch-infeasible-before-step1; then
  if ! grep -qE '^step +[0-9]+ \|' "$LOG/switch-infeasible-refused.out"; then result switch-infeasible-before-step1 0 0 "no step ran"
  else result switch-infeasible-before-step1 1 0 "steps ran before the refusal (log: $LOG/switch-infeasible-refused.out)"; fi
fi
feeds switch-budget-run switch-budget-refused
{ cat tests/decks/restart.deck; printf "[plan]\n$P_OLD\n[switch]\nstep = 2\n$P_NEW\n[transition]\nmemory_mib = 12\n"; } > "$T/budget.deck"
deck_steps "$T/budget.deck" 4
t switch-budget-run 300 $L -np 4 bin/nereus "$T/budget.deck"
if want switch-budget-refused; then
  f=$LOG/switch-budget-run.log
  if grep -qE "switch before step 2 refused: memory budget 12\.0 MiB too small" "$f" && grep -q 'continuing on the current plan' "$f" && \
     [ "$(verify "$f" transitions)" = 0 ] && [ "$(verify "$f" ppo_steps)" = 4 ] && [ "$(verify "$f" status)" = pass ]; then
    result switch-budget-refused 0 0 "$(grep -m1 -o 'refused: .*' "$f" | cut -c1-110)"
  else result switch-budget-refused 1 0 "no refusal line, or the run did not continue"; fi
fi
# the INJECTED communicator set-up ([inject] comm_setup_s = 0.3, tests/decks/comm_setup.deck): a switch on 2
# ranks builds new communicator sets in the move when nothing builds them ahead (NEREUS_TX_PREBUILD=0), and its
# measured time must hold at least 0.3 s for each (a sleep after MPI_Comm_split, inside the transition's time);
# the run names the injection; a negative value is refused at its line
# (tests/decks/bad/inject_comm_setup_negative.deck, the decks suite)
feeds comm-setup-inject-run comm-setup-inject
t comm-setup-inject-run 60 env NEREUS_TX_PREBUILD=0 $L -np 2 bin/nereus tests/decks/comm_setup.deck
if want comm-setup-inject; then
  f=$LOG/comm-setup-inject-run.log
  m=$(sed -n 's/^transition: .*, measured \([0-9.]*\) s .* communicators: \([0-9]*\) new set(s), 0 built before.*/\1 \2/p' "$f")
  if [ "$(verify "$f" status)" = pass ] && grep -q '^INJECTED communicator set-up: .* at least 0\.3 s on each of its ranks' "$f" && \
     grep -qE '^  INJECTED communicator set-up \(\[inject\] comm_setup_s\): [1-9][0-9]* new set\(s\), each at least 0\.3 s' "$f" && \
     [ -n "$m" ] && awk -v m="${m% *}" -v n="${m#* }" 'BEGIN{exit !(n >= 1 && m >= 0.3 * n)}'; then
    result comm-setup-inject 0 0 "a transition building ${m#* } set(s) measured ${m% *} s (>= ${m#* } x 0.3 s)"
  else result comm-setup-inject 1 0 "measured s and sets '$m': less than 0.3 s a set, or the INJECTED lines missing (log: $f)"; fi
fi
# communicators built ahead (tests/decks/comm_prebuild.deck): the [switch] before step 2 needs 3 new sets, which
# the job builds at the boundary before step 1 (job_prepare_comms); their INJECTED set-up (0.1 s each, one after
# another) runs while step 1 does (made longer than 0.3 s by an INJECTED slowdown). The move must build none,
# take the 3, and wait in its communicator set-up for at most what step 1 did not cover (+ 0.05 s); the same run
# with NEREUS_TX_PREBUILD=0 builds the 3 in the move and waits at least 0.3 s; both give the same tokens and weights
feeds comm-prebuild-run comm-prebuild
feeds comm-prebuild-off-run comm-prebuild
t comm-prebuild-run 60 $L -np 2 bin/nereus tests/decks/comm_prebuild.deck
t comm-prebuild-off-run 60 env NEREUS_TX_PREBUILD=0 $L -np 2 bin/nereus tests/decks/comm_prebuild.deck
if want comm-prebuild; then
  f=$LOG/comm-prebuild-run.log; g=$LOG/comm-prebuild-off-run.log
  tx_parts() { sed -n 's/^transition: .*, measured \([0-9.]*\) s (transfers [0-9.]* s, communicator set-up \([0-9.]*\) s).* communicators: \([0-9]*\) new set(s), \([0-9]*\) built before the move.*/\1 \2 \3 \4/p' "$1"; }
  a=$(tx_parts "$f"); b=$(tx_parts "$g")
  s1=$(sed -n 's/^step    1 | .* | \([0-9.]*\)s: gen .*/\1/p' "$f")
  why=""; same_keys "$f" "$g" tokens_hash checksum.actor checksum.ref checksum.critic status
  read -r am aw an ap <<<"$a"; read -r bm bw bn bp <<<"$b"
  [ "$an" = 0 ] && [ "$ap" = 3 ] || why="$why prebuilt run: '$a' (want 0 new, 3 built before);"
  [ -n "$s1" ] && [ -n "$aw" ] && awk -v w="$aw" -v s="$s1" 'BEGIN{r = 0.3 - s; exit !(w <= (r > 0 ? r : 0) + 0.05)}' || \
    why="$why set-up in the move '$aw' s over what step 1 ($s1 s) left of 0.3 s;"
  [ "$bn" = 3 ] && [ "$bp" = 0 ] && [ -n "$bw" ] && awk -v w="$bw" 'BEGIN{exit !(w >= 0.3)}' || \
    why="$why NEREUS_TX_PREBUILD=0: '$b' (want 3 new, 0 built before, set-up >= 0.3 s);"
  grep -q '^switch before step 2: its 3 new communicator set(s) built now, before step 1' "$f" || why="$why no prebuild line;"
  [ "$(verify "$f" status)" = pass ] || why="$why status;"
  if [ -z "$why" ]; then result comm-prebuild 0 0 "the move took 3 sets built before step 1 (step 1 $s1 s): set-up in the move $aw s, move $am s; built in the move: set-up $bw s, move $bm s; same tokens and weights"
  else result comm-prebuild 1 0 "$why (logs: $f, $g)"; fi
fi
