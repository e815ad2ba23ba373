# tests/suites/async.sh — asynchronous rollouts ([ppo] max_staleness, docs/ASYNC.md): K = 1 on a split plan trains every step but the first on a batch one version old, with the decoupled correction on; the same K = 1 run under another plan with the same generation layout gives the same tokens; a restart from a checkpoint in the middle of a K = 1 run is that run; the queued rollout in the checkpoint (h5dump); a restart under a deck of another batch shape refused; K on a plan where actor.gen shares ranks warns
section "asynchronous rollouts: tests/decks/equiv.deck, 6 PPO steps with max_staleness = 1"
AS=$LOG/async; mkdir -p "$AS"
# adeck OUT PLAN [EXTRA]: the equivalence deck with a [plan] and extra lines; K1: 6 steps with K = 1
adeck() {
  { cat tests/decks/equiv.deck; printf '%b\n' "${3:-}"; echo "[plan]"; echo "$2" | tr ';' '\n' | sed 's/^ *//'; } > "$1"
}
K1="--set ppo.steps=6 --set ppo.max_staleness=1 --set run.log_every=1"
SPLIT="actor.gen = @0; actor.inf = @1; ref.inf = @1; critic.inf = @1; actor.train = @1; critic.train = @1; reward.inf = @1"
OTHER="actor.gen = @0; actor.inf = dp2 @0-1; ref.inf = @0; critic.inf = @1; actor.train = dp2 @0-1; critic.train = @0; reward.inf = @0"
feeds async-split async-stale async-plans-same async-restart-same async-queue-in-ckpt async-restart-shape
feeds async-other async-plans-same async-shared-warns
adeck "$AS/split.deck" "$SPLIT" "[ckpt]\nevery = 3\nkeep = 3\ndir = $AS/ck"
t async-split 300 $L -np 2 bin/nereus "$AS/split.deck" $K1 --set trace.file=$AS/split.trace.h5
# every step but the first trains on the batch generated during the step before (version = step - 1); the
# correction is on (auto); the trace says so per step; rank 0 generates only, rank 1 does the rest
if want async-stale; then
  f=$LOG/async-split.log
  st=$(trace_col "$AS/split.trace.h5" steps staleness | tr '\n' ' '); gv=$(trace_col "$AS/split.trace.h5" steps gen_version | tr '\n' ' ')
  roles=$(bin/nereus-trace csv "$AS/split.trace.h5" ranks 2>/dev/null | awk -F, 'NR > 1 && $1 == 2 { printf "%s:%s%s ", $2, $3, $4 }')
  if [ "$(verify "$f" status)" = pass ] && [ "$(verify "$f" max_staleness)" = 1 ] && [ "$(verify "$f" staleness_hist)" = "0:1 1:5" ] &&
     [ "$(verify "$f" tis_cap)" = 2 ] && [ "$st" = "0 1 1 1 1 1 " ] && [ "$gv" = "0 0 1 2 3 4 " ] && [ "$roles" = "0:10 1:01 " ] &&
     grep -q '^rollout: K = 1 .* 1: 5 step(s)$' "$f"; then
    result async-stale 0 0 "staleness 0,1,1,1,1,1; versions 0,0,1,2,3,4; correction cap 2; rank 0 generates, rank 1 consumes"
  else result async-stale 1 0 "staleness '$st' versions '$gv' roles '$roles' hist '$(verify "$f" staleness_hist)' (log: $f)"; fi
fi
# the same K = 1 run under a plan with the same generation layout (actor.gen on rank 0) and everything else
# elsewhere: the same tokens and rewards, checksums to rounding (as the equivalence suite's plans)
adeck "$AS/other.deck" "$OTHER"
t async-other 300 $L -np 2 bin/nereus "$AS/other.deck" $K1 --set trace.file=none
if want async-plans-same; then
  equiv_result async-plans-same "$LOG/async-split.log" "$LOG/async-other.log" "K = 1 under two plans, actor.gen on rank 0"
fi
# that plan puts model-stages beside actor.gen on rank 0: nothing overlaps there, and the run says so once
if want async-shared-warns; then
  n=$(grep -c 'warning: \[ppo\] max_staleness = 1, but actor.gen shares ranks with actor.inf, actor.train, ref.inf, critic.train under this plan' "$LOG/async-other.log")
  if [ "$n" = 1 ] && [ "$(verify "$LOG/async-other.log" status)" = pass ]; then result async-shared-warns 0 0 "warned once, ran to pass"
  else result async-shared-warns 1 0 "$n warning line(s) (log: $LOG/async-other.log)"; fi
fi
# restart from the step-3 checkpoint, under the same plan: the queued batch (step 3's, generated at step 2)
# comes from the file, and steps 3-5 and the final weights are those of the uninterrupted run, bit for bit
t async-restart 300 $L -np 2 bin/nereus "$AS/split.deck" $K1 --set trace.file=none --set ckpt.dir=$AS/ck2 --restart "$AS/ck/split_step000003.h5"
if want async-restart-same; then
  why=""; f=$LOG/async-restart.log
  for s in 3 4 5; do
    a=$(grep "^step *$s |" "$LOG/async-split.log" | cut -d"|" -f2-7); b=$(grep "^step *$s |" "$f" | cut -d"|" -f2-7)
    [ -n "$a" ] && [ "$a" = "$b" ] || why="$why step $s: '$a' vs '$b';"
  done
  same_keys "$LOG/async-split.log" "$f" hash.actor hash.critic
  grep -q '^restart: 1 rollout batch(es) generated before the checkpoint (steps 3 to 3)' "$f" || why="$why no restart line of the queue;"
  if [ -z "$why" ]; then result async-restart-same 0 0 "steps 3-5 and the final actor and critic hashes as uninterrupted"
  else result async-restart-same 1 0 "$why (log: $f)"; fi
fi
if want async-queue-in-ckpt; then
  h5dump -H -d /meta/rollout_queue "$AS/ck/split_step000003.h5" > "$LOG/async-h5dump.log" 2>&1
  if grep -q 'DATASET "/meta/rollout_queue"' "$LOG/async-h5dump.log" && grep -q 'ATTRIBUTE "checksum"' "$LOG/async-h5dump.log"; then
    result async-queue-in-ckpt 0 0 "h5dump: /meta/rollout_queue with its checksum"
  else result async-queue-in-ckpt 1 0 "no /meta/rollout_queue (log: $LOG/async-h5dump.log)"; fi
fi
# a deck of another batch shape cannot take the queued batch: refused, naming the file and what differs
if want async-restart-shape; then
  bad async-restart-shape 'split_step000003\.h5: its rollout queue holds batches of 64 rows.*this deck makes 32' \
    $L -np 2 bin/nereus "$AS/split.deck" $K1 --set trace.file=none --set ppo.batch=32 --restart "$AS/ck/split_step000003.h5"
fi
