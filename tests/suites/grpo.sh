# tests/suites/grpo.sh — GRPO ([ppo] algorithm = grpo, no critic): inputs/grpo-tiny.deck learns; its first 5 steps reproduced under TP, PP, DP and mixed plans on 2, 4 and 8 ranks, inputs/grpo-process-tiny.deck's first 3 (process rewards) under tp2 dp2 on 4; a checkpoint without a critic restarted under another plan; the live planner with an injected pool change; bad GRPO decks refused at their line; the GRPO simulator decks
section "GRPO: inputs/grpo-tiny.deck (16 prompts x 4 responses a step, five model-stages)"
# the deck's first 100 of 150 steps learn on 1 rank (gain +0.393 measured; +0.400 over all 150, the PPO
# deck's +0.414), and hold no critic: none in the plan, the run or the trace
feeds grpo-tiny grpo-reward-rises grpo-no-critic
t grpo-tiny 300 $L -np 1 bin/nereus inputs/grpo-tiny.deck --set ppo.steps=100 --set trace.file=$LOG/grpo-tiny.trace.h5
if want grpo-reward-rises; then
  f=$LOG/grpo-tiny.log
  g=$(verify "$f" reward_gain); st=$(verify "$f" status)
  if [ -n "$g" ] && [ "$st" = pass ] && awk "BEGIN{exit !($g >= 0.25)}"; then result grpo-reward-rises 0 0 "gain $g over 100 steps"
  else result grpo-reward-rises 1 0 "gain '$g' status '$st' (want gain >= 0.25, pass)"; fi
fi
if want grpo-no-critic; then
  f=$LOG/grpo-tiny.log
  ns=$(bin/nereus-trace summary $LOG/grpo-tiny.trace.h5 2>/dev/null | grep -c '^  critic\.')
  if grep -q '^critic\.inf  *none  (not in the stage set' "$f" && grep -q '^critic\.train  *none  (not in the stage set' "$f" &&
     grep -q 'no critic (algorithm = grpo)$' "$f" && grep -q '^verify.checksum.critic: none' "$f" &&
     [ "$(verify "$f" algorithm)" = "grpo (group_size 4)" ] && [ "$ns" = 0 ] &&
     bin/nereus-trace summary $LOG/grpo-tiny.trace.h5 2>/dev/null | grep -q '^algorithm: grpo, 4 responses per prompt'; then
    result grpo-no-critic 0 0 "plan, model line, verification block and trace: grpo, no critic stage"
  else result grpo-no-critic 1 0 "a critic shows in the plan, the run or the trace (log: $f)"; fi
fi

section "GRPO equivalence: 5 steps of inputs/grpo-tiny.deck (group_size 8) under plans on 2, 4 and 8 ranks against 1 rank"
# Run at group_size 8 (8 prompts x 8): at the deck's 4, the tp2 plans' rounding (another summation order of the
# sharded GEMMs) flips one sampled token at step 3, a near-tie of the sampling uniform (rewards identical, kl
# 0.1469 against 0.1468, checksums then 3.6e-5 apart); the reproduction is to rounding, and exact tokens over 5
# steps hold at 8, as they do for the PPO deck (tests/suites/runs.sh)
EQ="--set ppo.group_size=8"
GRPO_PLANS="dp2-split|2|actor.gen = @0; actor.inf = @1; ref.inf = @0; actor.train = dp2 @0-1; reward.inf = @1
tp2-dp2|4|actor.gen = tp2 dp2 @0-3; actor.inf = tp2 dp2 @0-3; ref.inf = tp4 @0-3; actor.train = tp2 dp2 @0-3; reward.inf = @0
pp2-tp2-dp2|8|actor.gen = tp2 dp4 @0-7; actor.inf = tp2 pp2 dp2 @0-7; ref.inf = pp2 dp2 @0-3; actor.train = tp2 pp2 dp2 @7,6,5,4,3,2,1,0; reward.inf = pp2 @0-1"
while IFS='|' read -r name np plan; do feeds grpo-equiv-1rank "grpo-equiv-$name"; done <<<"$GRPO_PLANS"
feeds grpo-equiv-tp2-dp2-run grpo-restart-r2
feeds grpo-equiv-1rank grpo-restart-r2
t grpo-equiv-1rank 300 $L -np 1 bin/nereus inputs/grpo-tiny.deck $EQ --set ppo.steps=5 --set run.log_every=5 --set trace.file=none
# the same run with every model-stage but actor.gen fed 5 rows a pass ([ppo] micro_batch; 64 rows: 12 chunks of 5
# and one of 4, activations sized for 5): scoring gives the same bits, training (and the SFT warm-start) adds the
# passes' gradients up, so the updates agree up to the order of the sums
feeds grpo-equiv-1rank grpo-micro-batch-equiv
feeds grpo-micro-batch-run grpo-micro-batch-equiv
t grpo-micro-batch-run 300 $L -np 1 bin/nereus inputs/grpo-tiny.deck $EQ --set ppo.steps=5 --set run.log_every=5 \
  --set trace.file=none --set ppo.micro_batch=5
if want grpo-micro-batch-equiv; then
  equiv_result grpo-micro-batch-equiv "$LOG/grpo-equiv-1rank.log" "$LOG/grpo-micro-batch-run.log" "micro_batch 5" \
    checksum.actor checksum.ref
fi
while IFS='|' read -r -u 3 name np plan; do
  feeds "grpo-equiv-$name-run" "grpo-equiv-$name"
  runs "grpo-equiv-$name-run" || want "grpo-equiv-$name" || continue
  deck=$LOG/grpo-equiv-$name.deck
  ckpt=0; [ "$name" = tp2-dp2 ] && ckpt=3 # the restart test's checkpoint, after step 3
  mb=0; [ "$name" = pp2-tp2-dp2 ] && mb=3 # scoring in chunks of 3 rows through the pipeline and TP groups
  { cat inputs/grpo-tiny.deck; printf '[ckpt]\ndir = %s\nkeep = 5\nevery = %d\n' "$LOG/grpo-ckpt" $ckpt; echo "[plan]"
    echo "$plan" | tr ';' '\n' | sed 's/^ *//'; } > "$deck"
  [ $ckpt = 0 ] || rm -rf "$LOG/grpo-ckpt"
  t "grpo-equiv-$name-run" 300 $L -np "$np" bin/nereus "$deck" $EQ --set ppo.steps=5 --set run.log_every=5 \
    --set trace.file=none --set ppo.micro_batch=$mb
  want "grpo-equiv-$name" || continue
  equiv_result "grpo-equiv-$name" "$LOG/grpo-equiv-1rank.log" "$LOG/grpo-equiv-$name-run.log" "$np ranks" \
    checksum.actor checksum.ref
done 3<<<"$GRPO_PLANS"

section "GRPO with process rewards: 3 steps of inputs/grpo-process-tiny.deck (group_size 8), tp2 dp2 on 4 ranks against 1 rank"
# the per-position credits and their group normalisation are computed from the whole rollout on every rank, so
# a plan changes them no more than the outcome advantages (all three plans above checked by hand:
# results/grpo-process-equiv-2026-12-06-1d89966-amd-epyc.txt)
feeds grpo-process-equiv-1rank grpo-process-equiv-tp2-dp2
feeds grpo-process-equiv-tp2-dp2-run grpo-process-equiv-tp2-dp2
t grpo-process-equiv-1rank 300 $L -np 1 bin/nereus inputs/grpo-process-tiny.deck $EQ --set ppo.steps=3 \
  --set run.log_every=5 --set trace.file=none
if runs grpo-process-equiv-tp2-dp2-run; then
  { cat inputs/grpo-process-tiny.deck; echo "[plan]"; sed -n 's/^tp2-dp2|4|//p' <<<"$GRPO_PLANS" | tr ';' '\n' | sed 's/^ *//'; } \
    > "$LOG/grpo-process-tp2-dp2.deck"
fi
t grpo-process-equiv-tp2-dp2-run 300 $L -np 4 bin/nereus "$LOG/grpo-process-tp2-dp2.deck" $EQ --set ppo.steps=3 \
  --set run.log_every=5 --set trace.file=none
if want grpo-process-equiv-tp2-dp2; then
  a=$LOG/grpo-process-equiv-1rank.log b=$LOG/grpo-process-equiv-tp2-dp2-run.log
  # the deck as the run took it (--print-deck: the run writes no resolved deck without a trace)
  if bin/nereus "$LOG/grpo-process-tp2-dp2.deck" $EQ --set ppo.steps=3 --set run.log_every=5 --set trace.file=none \
       --print-deck 2>&1 | grep -q '^credit = process'; then
    equiv_result grpo-process-equiv-tp2-dp2 "$a" "$b" "4 ranks" checksum.actor checksum.ref
  else result grpo-process-equiv-tp2-dp2 1 0 "the deck does not resolve to credit = process ($LOG/grpo-process-tp2-dp2.deck)"; fi
fi

section "GRPO checkpoints: no critic in the file; restarted under another plan"
# the 4-rank tp2-dp2 run's step-3 checkpoint restarted on 2 ranks (dp2-split's plan): steps 3-4 as the
# uninterrupted 1-rank run (checksums within 1e-5), and the file holds the actor and the ref, no critic
feeds grpo-restart-r2-run grpo-restart-r2
if runs grpo-restart-r2-run; then
  { cat inputs/grpo-tiny.deck; echo "[plan]"; sed -n 's/^dp2-split|2|//p' <<<"$GRPO_PLANS" | tr ';' '\n' | sed 's/^ *//'; } > "$LOG/grpo-restart.deck"
fi
t grpo-restart-r2-run 300 $L -np 2 bin/nereus "$LOG/grpo-restart.deck" $EQ --set ppo.steps=5 --set trace.file=none \
  --restart "$LOG/grpo-ckpt/grpo-equiv-tp2-dp2_step000003.h5"
if want grpo-restart-r2; then
  f=$LOG/grpo-restart-r2-run.log; ck=$LOG/grpo-ckpt/grpo-equiv-tp2-dp2_step000003.h5
  bin/nereus-ckpt info "$ck" >"$LOG/grpo-restart-info.txt" 2>&1
  why=""
  checksums_close "$LOG/grpo-equiv-1rank.log" "$f" checksum.actor checksum.ref
  [ "$(verify "$f" restart_step)" = 3 ] || why="$why restart_step '$(verify "$f" restart_step)';"
  grep -q '^model critic' "$LOG/grpo-restart-info.txt" && why="$why the checkpoint names a critic;"
  grep -q '^model actor:' "$LOG/grpo-restart-info.txt" || why="$why no actor in nereus-ckpt info;"
  if [ -z "$why" ]; then result grpo-restart-r2 0 0 "written on 4 ranks (tp2 dp2), restarted on 2: checksums within $worst of the 1-rank run; no critic in the file"
  else result grpo-restart-r2 1 0 "$why"; fi
fi

section "GRPO with the live planner: an INJECTED pool change (tests/decks/pool.deck as grpo, 4 ranks, a reward network)"
# with a frozen reward network (weight 0.5): its score joins the rule reward in the group advantages, and
# reward.inf holds a model that the planner places and the transitions move
feeds grpo-planner-pool-run grpo-planner-pool grpo-planner-replay grpo-reward-network
t grpo-planner-pool-run 300 $L -np 4 bin/nereus tests/decks/pool.deck --set ppo.algorithm=grpo --set ppo.group_size=4 \
  --set reward.network=true --set reward.network_weight=0.5 --set trace.file=$LOG/grpo-pool.trace.h5
if want grpo-reward-network; then
  f=$LOG/grpo-planner-pool-run.log
  ck=$(verify "$f" checksum.reward)
  if grep -q '^reward: rule reward + 0.5 x frozen reward network' "$f" && [ -n "$ck" ] && [ "${ck#none}" = "$ck" ] &&
     [ "$(verify "$f" status)" = pass ] && stage_ranks <"$f" | grep -q '^reward\.inf'; then
    result grpo-reward-network 0 0 "rule reward + 0.5 x the network's score; reward.inf placed, checksum $ck"
  else result grpo-reward-network 1 0 "no reward network in the run, or no reward.inf stage (log: $f)"; fi
fi
if want grpo-planner-pool; then
  f=$LOG/grpo-planner-pool-run.log
  on3=$(sed -n '/^planner: before step 4: plan [0-9]* -> [0-9]*:/,/^transition:/p' "$f" | stage_ranks | awk '$2 == 3 {print $1}' | sort -u)
  crit=$(stage_ranks <"$f" | grep -c '^critic')
  if grep -q '^planner: before step 4: replan — pool 3 rank(s)' "$f" && grep -q '^planner: before step 8: replan — pool 4 rank(s)' "$f" &&
     [ -z "$on3" ] && [ "$crit" = 0 ] && [ "$(verify "$f" transitions)" -ge 2 ] && [ "$(verify "$f" status)" = pass ] &&
     grep -q 'per-tensor checks passed' "$f"; then
    result grpo-planner-pool 0 0 "replans at steps 4 and 8, $(verify "$f" transitions) checked transitions, no critic stage in any plan"
  else result grpo-planner-pool 1 0 "no replan, a model-stage left on rank 3 ('$on3'), or a critic stage placed ($crit rows)"; fi
fi

# the trace's replay rebuilds the GRPO job's cost model (no critic) and the critic-free plans from the trace,
# and with the recorded parameters takes the recorded decisions
if want grpo-planner-replay; then
  bin/nereus-trace replay "$LOG/grpo-pool.trace.h5" >"$LOG/grpo-planner-replay.log" 2>&1; rc=$?
  rec=$(awk '/^  recorded run \(as it ran\)/ {print $6, $7, $8}' "$LOG/grpo-planner-replay.log")
  rep=$(awk '/^  replay, recorded params/ {print $4, $5, $6}' "$LOG/grpo-planner-replay.log")
  if [ $rc = 0 ] && [ -n "$rec" ] && [ "$rec" = "$rep" ]; then
    result grpo-planner-replay 0 0 "nereus-trace replay of the GRPO run: the recorded decisions, transitions and times ($rep)"
  else result grpo-planner-replay 1 0 "exit $rc; recorded '$rec', replayed '$rep'"; fi
fi

section "GRPO decks refused at their line (one process: a deck error stops every rank before any work)"
if want grpo-bad-critic-stage grpo-bad-switch-critic grpo-bad-group-divides grpo-bad-group-one grpo-bad-group-ppo grpo-bad-plan-as-ppo grpo-bad-process-rm; then
  { cat inputs/grpo-tiny.deck; printf '[plan]\nactor.gen = @0\nactor.inf = @0\nactor.train = @0\nref.inf = @0\ncritic.inf = @0\nreward.inf = @0\n'; } > "$LOG/grpo-bad-critic.deck"
  { cat inputs/grpo-tiny.deck; printf '[switch]\nstep = 2\ndefault = colocated\ncritic.train = dp2 @0-1\n'; } > "$LOG/grpo-bad-switch.deck"
  { cat inputs/grpo-tiny.deck; printf '[plan]\ndefault = colocated\nactor.gen = pp2 @0-1\n'; } > "$LOG/grpo-bad-plan.deck"
fi
bad grpo-bad-critic-stage "grpo-bad-critic\.deck:$(( $(wc -l <inputs/grpo-tiny.deck) + 6 )): error: \[plan\] critic\.inf: algorithm = grpo has no critic" \
  bin/nereus "$LOG/grpo-bad-critic.deck"
bad grpo-bad-switch-critic "grpo-bad-switch\.deck:$(( $(wc -l <inputs/grpo-tiny.deck) + 4 )): error: \[switch\] critic\.train: algorithm = grpo has no critic" \
  bin/nereus "$LOG/grpo-bad-switch.deck"
# what a PPO plan is refused for, a GRPO plan is too, at its line (pipelined generation here)
bad grpo-bad-plan-as-ppo "grpo-bad-plan\.deck:$(( $(wc -l <inputs/grpo-tiny.deck) + 3 )): error: \[plan\] actor\.gen = tp1 pp2 dp1: generation runs TP x DP" \
  bin/nereus "$LOG/grpo-bad-plan.deck"
# process rewards are per position; a reward network scores whole responses
if want grpo-bad-process-rm; then
  { cat inputs/grpo-process-tiny.deck; printf '[reward]\nnetwork = true\nnetwork_weight = 0.5\n'; } > "$LOG/grpo-bad-process-rm.deck"
fi
bad grpo-bad-process-rm "grpo-bad-process-rm\.deck:$(grep -n '^credit = process' inputs/grpo-process-tiny.deck | cut -d: -f1): error: \[ppo\] credit = process cannot take the reward network's score" \
  bin/nereus "$LOG/grpo-bad-process-rm.deck"
bad grpo-bad-group-divides '^--set ppo\.group_size=5: error: \[ppo\] group_size = 5 does not divide batch = 64' \
  bin/nereus inputs/grpo-tiny.deck --set ppo.group_size=5
bad grpo-bad-group-one '^--set ppo\.group_size=1: error: \[ppo\] algorithm = grpo needs group_size >= 2' \
  bin/nereus inputs/grpo-tiny.deck --set ppo.group_size=1
bad grpo-bad-group-ppo '^--set ppo\.group_size=4: error: \[ppo\] group_size = 4 needs algorithm = grpo' \
  bin/nereus inputs/tiny.deck --set ppo.group_size=4
# the options of GRPO's advantages are refused where nothing would read them
bad grpo-bad-position-outcome '^--set ppo\.process_baseline=position: error: \[ppo\] process_baseline = position needs algorithm = grpo and credit = process' \
  bin/nereus inputs/grpo-tiny.deck --set ppo.process_baseline=position
bad grpo-bad-scope-nostd '^--set ppo\.group_std_scope=batch: error: \[ppo\] group_std_scope = batch needs algorithm = grpo and group_std = true' \
  bin/nereus inputs/grpo-tiny.deck --set ppo.group_std=false --set ppo.group_std_scope=batch

section "GRPO in the simulator (MODELLED clusters): payback against every fixed plan"
for n in 64 1024; do
  feeds "sim-grpo-$n-run" "sim-grpo-$n"
  t "sim-grpo-$n-run" 120 bin/nereus --simulate "inputs/sim/grpo-$n.deck"
  if want "sim-grpo-$n"; then
    f=$LOG/sim-grpo-$n-run.log
    pb=$(simv "$f" payback.mean_step_s); st=$(simv "$f" static.mean_step_s)
    if [ "$(verify "$f" status)" = pass ] && grep -q '^algorithm: grpo, .* no critic' "$f" && [ -n "$pb" ] && [ -n "$st" ] &&
       awk -v p="$pb" -v s="$st" 'BEGIN{exit !(p < s)}'; then
      result "sim-grpo-$n" 0 0 "$n GPUs: payback $pb s/step, static $st ($(simv "$f" payback.vs_static_pct | cut -c1-5)% ahead)"
    else result "sim-grpo-$n" 1 0 "payback '$pb' static '$st' (log: $f)"; fi
  fi
done
