# tests/suites/ft.sh — ranks that die (docs/ELASTIC.md): under jobs/local.sh --ft (bin/nereus-ft, Open MPI 5 with ULFM) a rank SIGKILLed by its PID mid-step, and rank 0 killed while it writes a checkpoint: the survivors go on from the newest checkpoint and pass, the failure in the log and the trace, the end state that of a run resumed from that checkpoint on the survivors' plan; rank 0 leaving with notice (SIGUSR2): the others go on with no step redone; fault tolerance asked of the build without ULFM refused; without ULFM a killed rank ends the job and --restart latest goes on, and jobs/slurm.sbatch with NEREUS_RESUBMIT resubmits a failed job (the fallback). Skipped without the ULFM build (make deps, make ft)
section "ranks that die: recovery under ULFM (jobs/local.sh --ft), and the fallback without it"
F=$PWD/$LOG/ft; mkdir -p "$F" # absolute: the kills find this checkout's ranks by their deck's path
FT_MPI_DIR=${FT_MPI_DIR:-/opt/nereus-ompi5}
ulfm=""
if [ ! -x bin/nereus-ft ]; then ulfm="no bin/nereus-ft (make ft; make deps installs Open MPI 5 with ULFM)"
elif ! "$FT_MPI_DIR/bin/ompi_info" 2>/dev/null | grep -q 'FT MPI support: yes'; then ulfm="no Open MPI with ULFM in $FT_MPI_DIR (make deps)"; fi
# ftdeck OUT NAME STEPS EVERY: the restart deck, STEPS PPO steps, a checkpoint every EVERY into $F/NAME
ftdeck() {
  { sed "/^\[ppo\]/,/^\[/ s/^steps = 10\$/steps = $3/; s/^name = restart\$/name = $2/" tests/decks/restart.deck
    printf '[ckpt]\nevery = %s\nkeep = 20\ndir = %s\n' "$4" "$F/$2"; } > "$1"
}
# signal_rank SIG DECK RANK: send SIG to the process of that rank of the run of DECK (found by its path and its
# OMPI_COMM_WORLD_RANK); prints the time it was sent (seconds since 1970); 1 when there is no such process
signal_rank() {
  local p
  for p in $(pgrep -f "bin/nereus(-ft)? $2"); do
    if tr '\0' '\n' </proc/"$p"/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$3"; then
      date +%s.%N; kill -"$1" "$p"; return 0
    fi
  done
  return 1
}
kill_rank() { signal_rank KILL "$@"; } # kill_rank DECK RANK: SIGKILL
# wait_for FILE REGEX: until FILE has a line matching REGEX (30 s at most)
wait_for() { local i; for i in $(seq 1 3000); do grep -aqE "$2" "$1" 2>/dev/null && return 0; sleep 0.01; done; return 1; }
ms_between() { echo "($2 - $1) * 1000" | bc | cut -d. -f1; }

# --- a rank killed mid-step: rank 2 of 4 while step 12 runs; the survivors rebuild the job from their copies in
# memory ([elastic] in_memory) and redo only the interrupted step
feeds ft-kill ft-kill-trace
feeds ft-bound ft-same-as-resumed
feeds ft-resumed ft-same-as-resumed
if [ -n "$ulfm" ]; then
  for n in ft-kill ft-kill-trace ft-same-as-resumed ft-kill-rank0-in-ckpt ft-kill-twice-grpo ft-kill-two-at-once ft-leave-notice \
           ft-die-gen ft-die-inf ft-die-train ft-die-sync ft-die-ckpt ft-die-transition ft-buddy ft-buddy-no ft-spawn-srun-refused ft-respawn-die ft-respawn-leave ft-grow ft-no-leftovers; do want $n && result $n 77 0 "$ulfm"; done
else
  if runs ft-kill; then
    ftdeck "$F/kill.deck" kill 30 5
    rm -rf "$F/kill" kill.trace.h5
    t0=$(date +%s.%N)
    timeout 120 $L --ft -np 4 bin/nereus-ft "$F/kill.deck" >"$LOG/ft-kill.log" 2>&1 &
    bg=$!
    t_kill=""; wait_for "$LOG/ft-kill.log" '^step +11 ' && t_kill=$(kill_rank "$F/kill.deck" 2)
    wait $bg; rc=$?
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    t_seen=$(sed -n 's/^ft: FAILURE: .* at \([0-9.]*\) (epoch s).*/\1/p' "$LOG/ft-kill.log" | head -1)
    if [ -z "$t_kill" ]; then result ft-kill 1 0 "the run ended before rank 2 could be killed"
    elif [ $rc = 0 ] && [ "$(verify "$LOG/ft-kill.log" status)" = pass ] && [ "$(verify "$LOG/ft-kill.log" ft_recoveries)" = 1 ] &&
       [ "$(verify "$LOG/ft-kill.log" ranks_lost)" = 1 ] && [ -n "$(verify "$LOG/ft-kill.log" recovery_s)" ] &&
       grep -aq '^ft: FAILURE: rank(s) 2 of 4 died' "$LOG/ft-kill.log" && [ "$(verify "$LOG/ft-kill.log" ppo_steps)" = 30 ] &&
       [ "$(verify "$LOG/ft-kill.log" recovered_from)" = memory ] &&
       grep -aqE '^ft: recovered .*the copies in memory of the start of step (1[23]) .*no checkpoint read\), \1 PPO steps done; redoing from step \1 on 3 rank\(s\)' "$LOG/ft-kill.log"; then
      result ft-kill 0 "$secs" "rank 2 of 4 killed after step 11; seen $(ms_between "$t_kill" "$t_seen") ms later; recovered in $(verify "$LOG/ft-kill.log" recovery_s) s from the copies in memory (no checkpoint read); 3 survivors redid the interrupted step $(sed -n 's/.*redoing from step \([0-9]*\) on.*/\1/p' "$LOG/ft-kill.log") and passed"
    else result ft-kill 1 "$secs" "exit $rc; see the log: no pass, or no recovery said"; fi
  fi
  if want ft-kill-trace; then
    bin/nereus-trace plans kill.trace.h5 >"$LOG/ft-kill-trace.log" 2>&1
    bin/nereus-trace csv kill.trace.h5 drift >>"$LOG/ft-kill-trace.log" 2>&1
    if grep -qE '^plan 1: from step 1[23] \(recovery: rank\(s\) 2 of 4 died.*copies in memory' "$LOG/ft-kill-trace.log" &&
       grep -q 'rank_failed' "$LOG/ft-kill-trace.log" && grep -q 'status: complete (pass)' "$LOG/ft-kill-trace.log"; then
      result ft-kill-trace 0 0 "the trace goes on: plan 1 from the redone step says which rank died and that the state came from memory, a rank_failed drift row"
    else result ft-kill-trace 1 0 "no recovery plan or drift row in the trace"; fi
  fi
  # --- a death at a step boundary (rank 2 dies as step 10 begins, right after step 10's checkpoint; INJECTED) recovered
  # from memory; the same checkpoint resumed by the build without ULFM on 3 ranks under the survivors' plan: the same run
  if runs ft-bound; then
    ftdeck "$F/bound.deck" bound 30 5
    rm -rf "$F/bound"
    t ft-bound 120 $L --ft -np 4 bin/nereus-ft "$F/bound.deck" --set inject.die_rank=2 --set inject.die_step=10 \
      --set inject.die_phase=gen --set trace.file=none
  fi
  if want ft-same-as-resumed; then
    { sed 's/^name = bound$/name = resumed/; s#^dir = .*#dir = '"$F"'/resumed#' "$F/bound.deck"; printf '[plan]\ndefault = colocated\n'; } >"$F/resumed.deck"
    t ft-resumed 300 $L -np 3 bin/nereus "$F/resumed.deck" --restart "$F/bound/bound_step000010.h5"
    why=""
    [ "$(verify "$LOG/ft-bound.log" recovered_from)" = memory ] || why="not recovered from memory;"
    grep -aq 'redoing from step 10 on 3 rank(s)' "$LOG/ft-bound.log" || why="$why not back to step 10;"
    for s in $(seq 10 29); do
      a=$(grep -a "^step *$s |" "$LOG/ft-bound.log" | tail -1 | cut -d'|' -f2,3); b=$(grep "^step *$s |" "$LOG/ft-resumed.log" | cut -d'|' -f2,3)
      [ -n "$a" ] && [ "$a" = "$b" ] || why="$why step $s: '$a' vs '$b';"
    done
    for k in checksum.actor checksum.critic checksum.ref hash.actor hash.critic hash.ref; do
      [ "$(verify "$LOG/ft-bound.log" $k)" = "$(verify "$LOG/ft-resumed.log" $k)" ] || why="$why verify.$k differs;"
    done
    if [ -z "$why" ]; then result ft-same-as-resumed 0 0 "rank 2 died as step 10 began, recovered from memory: steps 10-29, their tokens and the final weights (verify.hash, verify.checksum) as a restart from step 10's checkpoint on 3 ranks"
    else result ft-same-as-resumed 1 0 "$why"; fi
  fi
  # --- rank 0 killed while it writes step 10's checkpoint (held as .tmp by tests/stall_rename.c), with
  # [elastic] in_memory = false: the new rank 0 (old rank 1) deletes the partial file, the survivors go back to
  # step 5 and write a new trace from there
  if want ft-kill-rank0-in-ckpt; then
    ftdeck "$F/k0.deck" k0 20 5
    printf '[elastic]\nin_memory = false\n' >>"$F/k0.deck"
    rm -rf "$F/k0" "$F/k0.stalled" k0*.trace.h5
    t0=$(date +%s.%N)
    NEREUS_STALL_RENAME=k0_step000010 NEREUS_STALL_ONCE="$F/k0.stalled" LD_PRELOAD="$PWD/build/tests/libstall_rename.so" \
      timeout 120 $L --ft -np 4 bin/nereus-ft "$F/k0.deck" >"$LOG/ft-kill-rank0-in-ckpt.log" 2>&1 &
    bg=$!
    t_kill=""
    for i in $(seq 1 3000); do [ -f "$F/k0/k0_step000010.h5.tmp" ] && grep -aq 'stall_rename (test shim): holding' "$LOG/ft-kill-rank0-in-ckpt.log" && break; sleep 0.01; done
    t_kill=$(kill_rank "$F/k0.deck" 0)
    wait $bg
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    ls "$F/k0" >>"$LOG/ft-kill-rank0-in-ckpt.log"
    if [ -n "$t_kill" ] && [ "$(verify "$LOG/ft-kill-rank0-in-ckpt.log" status)" = pass ] &&
       grep -aq "^ft: discarded $F/k0/k0_step000010.h5.tmp" "$LOG/ft-kill-rank0-in-ckpt.log" &&
       grep -aq '^ft: recovered .*k0_step000005.h5, 5 PPO steps done' "$LOG/ft-kill-rank0-in-ckpt.log" &&
       ! ls "$F/k0"/*.tmp >/dev/null 2>&1 && bin/nereus-ckpt verify "$F/k0/k0_step000010.h5" >/dev/null 2>&1 &&
       bin/nereus-trace plans k0_step000005.trace.h5 2>/dev/null | grep -q 'recovery: rank(s) 0 of 4 died'; then
      t_seen=$(sed -n 's/^ft: FAILURE: .* at \([0-9.]*\) (epoch s).*/\1/p' "$LOG/ft-kill-rank0-in-ckpt.log" | head -1)
      result ft-kill-rank0-in-ckpt 0 "$secs" "seen $(ms_between "$t_kill" "$t_seen") ms after the kill; the partial step-10 file deleted, back to step 5 on 3 ranks, step 10 written again whole, a new trace from step 5"
    else result ft-kill-rank0-in-ckpt 1 "$secs" "see the log"; fi
  fi
  # --- two failures one after the other, in a GRPO run (no critic): rank 1 killed in step 7, then the rank launched
  # as 3 (rank 2 of the 3 survivors) in step 17: 4 -> 3 -> 2 ranks, each time rebuilt from the copies in memory
  if want ft-kill-twice-grpo; then
    { sed 's/^name = .*/name = g2/; /^\[ppo\]/,/^\[/ s/^steps = .*/steps = 24/' inputs/grpo-tiny.deck
      printf '[ckpt]\nevery = 5\nkeep = 20\ndir = %s\n' "$F/g2"; } >"$F/g2.deck"
    rm -rf "$F/g2" g2*.trace.h5
    t0=$(date +%s.%N)
    timeout 180 $L --ft -np 4 bin/nereus-ft "$F/g2.deck" >"$LOG/ft-kill-twice-grpo.log" 2>&1 &
    bg=$!
    k1=""; k2=""
    wait_for "$LOG/ft-kill-twice-grpo.log" '^step +6 ' && k1=$(kill_rank "$F/g2.deck" 1)
    wait_for "$LOG/ft-kill-twice-grpo.log" '^step +16 ' && k2=$(kill_rank "$F/g2.deck" 3)
    wait $bg; rc=$?
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    g=$LOG/ft-kill-twice-grpo.log
    if [ -n "$k1" ] && [ -n "$k2" ] && [ $rc = 0 ] && [ "$(verify "$g" status)" = pass ] && [ "$(verify "$g" ft_recoveries)" = 2 ] &&
       [ "$(verify "$g" ranks_lost)" = 2 ] &&
       grep -aq '^ft: FAILURE: rank(s) 1 of 4 died' "$g" && grep -aq '^ft: FAILURE: rank(s) 2 (launched as 3) of 3 died' "$g" &&
       grep -aqE 'redoing from step 1[78] on 2 rank\(s\)' "$g" && [ "$(verify "$g" ppo_steps)" = 24 ] &&
       [ "$(verify "$g" recovered_from)" = memory ]; then
      result ft-kill-twice-grpo 0 "$secs" "GRPO: rank 1 killed, then the rank launched as 3: 4 -> 3 -> 2 ranks, each time the interrupted step redone from the copies in memory, pass"
    else result ft-kill-twice-grpo 1 "$secs" "exit $rc; kills '$k1' '$k2'"; fi
  fi
  # --- two ranks killed at once (1 and 2 of inputs/elastic4.deck, one rank of each actor.train replica, by their PIDs,
  # after step 7), as a node's ranks die together: seen apart, the second during the recovery from the first, which
  # is recovered in turn; the state from the copies in memory (a replica made of rank 0's tp 0 and rank 3's tp 1)
  if want ft-kill-two-at-once; then
    d=$F/two.deck
    sed "s#^dir = elastic4-ckpt#dir = $F/two#; s/^name = elastic4/name = two/" inputs/elastic4.deck >"$d"
    rm -rf "$F/two"
    g=$LOG/ft-kill-two-at-once.log
    t0=$(date +%s.%N)
    timeout 120 $L --ft -np 4 bin/nereus-ft "$d" --set ppo.steps=30 --set trace.file=none >"$g" 2>&1 &
    bg=$!
    k1=""; k2=""
    wait_for "$g" '^step +7 ' && k1=$(kill_rank "$d" 1) && k2=$(kill_rank "$d" 2)
    wait $bg; rc=$?
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    if [ -n "$k1" ] && [ -n "$k2" ] && [ $rc = 0 ] && [ "$(verify "$g" status)" = pass ] && [ "$(verify "$g" ranks_lost)" = 2 ] &&
       [ "$(verify "$g" ppo_steps)" = 30 ] && grep -aqE 'redoing from step [0-9]+ on 2 rank\(s\)' "$g"; then
      result ft-kill-two-at-once 0 "$secs" "ranks 1 and 2 killed together: $(verify "$g" ft_recoveries) recovery(ies), state from $(verify "$g" recovered_from), 2 ranks finished all 30 steps, pass"
    else result ft-kill-two-at-once 1 "$secs" "exit $rc; kills '$k1' '$k2', ranks_lost '$(verify "$g" ranks_lost)'"; fi
  fi
  # --- an INJECTED death in each phase of a step ([inject] die_rank, die_step, die_phase: the rank SIGKILLs itself
  # as the phase begins) on inputs/elastic4.deck (4 ranks, DP replicas; 12 steps, checkpoints at 5 and 10), rank 0
  # among them: every step of the deck counted once, verify.ranks_lost 1, the recovery time (verify.recovery_s)
  for c in "gen 1" "inf 2" "train 0" "sync 3" "ckpt 1" "transition 2"; do
    set -- $c
    want ft-die-$1 || continue
    d=$F/die-$1.deck
    { sed "s#^dir = elastic4-ckpt#dir = $F/die-$1#; s/^name = elastic4/name = die-$1/" inputs/elastic4.deck
      [ "$1" = transition ] && printf '[switch]\nstep = 8\nactor.gen = dp4 @ 3,2,1,0\nactor.inf = tp4 @ 0-3\nref.inf = dp2 @ 0-1\ncritic.inf = pp2 @ 2-3\nactor.train = tp2 pp2 @ 1,0,3,2\ncritic.train = dp4 @ 0-3\nreward.inf = @ 3\n'
    } > "$d"
    rm -rf "$F/die-$1"
    g=$LOG/ft-die-$1.log
    timed secs timeout 120 $L --ft -np 4 bin/nereus-ft "$d" --set ppo.steps=12 --set inject.die_rank=$2 \
      --set inject.die_step=7 --set inject.die_phase=$1 --set trace.file=none >"$g" 2>&1
    if [ $rc = 0 ] && [ "$(verify "$g" status)" = pass ] && [ "$(verify "$g" ppo_steps)" = 12 ] &&
       [ "$(verify "$g" ranks_lost)" = 1 ] && grep -aq "INJECTED death.*rank $2 (as launched) SIGKILLs itself in step [0-9]*, as $1 begins" "$g" &&
       grep -aq "^ft: FAILURE: rank(s) $2 of 4 died" "$g" && [ "$(verify "$g" recovered_from)" = memory ] &&
       grep -aq "redoing from step $(sed -n 's/.*SIGKILLs itself in step \([0-9]*\).*/\1/p' "$g") on 3 rank(s)" "$g"; then
      result ft-die-$1 0 "$secs" "rank $2 died as $1 began (step $(sed -n 's/.*SIGKILLs itself in step \([0-9]*\).*/\1/p' "$g")); recovered from memory in $(verify "$g" recovery_s) s, only that step redone, 12 steps counted once, pass"
    else result ft-die-$1 1 "$secs" "exit $rc, status '$(verify "$g" status)', ranks_lost '$(verify "$g" ranks_lost)'"; fi
  done
  # --- shards no replica holds: critic.train and a reward network on rank 1 alone (dp1), rank 1 dies as generation
  # begins in step 7. With [elastic] buddy = yes its buddy (rank 2) holds copies of both: the state comes from memory;
  # with buddy = no from the checkpoint of step 5, and the output says why
  for b in yes no; do
    n=ft-buddy; [ $b = no ] && n=ft-buddy-no
    want $n || continue
    d=$F/$n.deck
    sed "s#^dir = elastic4-ckpt#dir = $F/$n#; s/^name = elastic4/name = $n/; s/^critic.train = .*/critic.train = @1/; s/^reward.inf = .*/reward.inf = @1/" inputs/elastic4.deck >"$d"
    rm -rf "$F/$n"
    g=$LOG/$n.log
    timed secs timeout 120 $L --ft -np 4 bin/nereus-ft "$d" --set ppo.steps=12 --set elastic.buddy=$b --set reward.network=true --set inject.die_rank=1 \
      --set inject.die_step=7 --set inject.die_phase=gen --set trace.file=none >"$g" 2>&1
    ok=0
    if [ $rc = 0 ] && [ "$(verify "$g" status)" = pass ] && [ "$(verify "$g" ppo_steps)" = 12 ]; then
      if [ $b = yes ]; then
        [ "$(verify "$g" recovered_from)" = memory ] && grep -aq 'critic.train from 1 replica(s) in memory (1 shard(s) from buddy copies), reward.inf from 1 replica(s) in memory (1 shard(s) from buddy copies)' "$g" &&
          grep -aq 'redoing from step 7 on 3 rank(s)' "$g" && ok=1
      else
        [ "$(verify "$g" recovered_from)" = checkpoint ] && grep -aq "^ft: state in memory: critic.train's shard (tp 0, pp 0) lived on rank(s) 1 only, and no copy of it is left (\[elastic\] buddy = yes keeps" "$g" &&
          grep -aq '_step000005.h5, 5 PPO steps done; redoing from step 5' "$g" && ok=1
      fi
    fi
    if [ $ok = 1 ] && [ $b = yes ]; then result $n 0 "$secs" "critic.train's and the reward network's one shards died with rank 1; rebuilt from their buddy copies on another rank, no checkpoint read, step 7 redone, pass"
    elif [ $ok = 1 ]; then result $n 0 "$secs" "the same with buddy = no: the output names the shard no copy is left of, step 5's checkpoint read, pass"
    else result $n 1 "$secs" "exit $rc, status '$(verify "$g" status)', recovered_from '$(verify "$g" recovered_from)'"; fi
  done
  # --- respawn where the launcher cannot spawn: a direct launch by srun (here: SLURM_STEP_ID set and no mpirun, a
  # singleton with fault tolerance on) is refused at the key, exit 2, before the run starts
  if want ft-spawn-srun-refused; then
    g=$LOG/ft-spawn-srun-refused.log
    timed secs env SLURM_STEP_ID=7 OMPI_MCA_mpi_ft_enable=1 timeout 60 bin/nereus-ft tests/decks/restart.deck \
      --set elastic.respawn=true --set trace.file=none --set ckpt.dir="$F/srun" >"$g" 2>&1
    if [ $rc = 2 ] && grep -aq "elastic.respawn=true: error: \[elastic\] respawn spawns processes into the job: this job was launched by srun" "$g" &&
       ! grep -aq '^step ' "$g"; then result ft-spawn-srun-refused 0 "$secs" "exit 2 at elastic.respawn: launched by srun, no runtime to spawn with"
    else result ft-spawn-srun-refused 1 "$secs" "exit $rc"; fi
  fi
  # --- [elastic] respawn on inputs/elastic4.deck: rank 0 dies as training begins in step 7, and (another run)
  # rank 1 is sent SIGUSR2 during step 8: each time one process is spawned and joins the survivors, the job goes
  # on from the checkpoint on 4 ranks again and passes with every step counted once; the trace's plan row names
  # the replacement
  if want ft-respawn-die; then
    d=$F/rs-die.deck
    sed "s#^dir = elastic4-ckpt#dir = $F/rs-die#; s/^name = elastic4/name = rs-die/" inputs/elastic4.deck > "$d"
    rm -rf "$F/rs-die" rs-die*.trace.h5
    g=$LOG/ft-respawn-die.log
    timed secs timeout 120 $L --ft -np 4 bin/nereus-ft "$d" --set ppo.steps=12 --set elastic.respawn=true \
      --set inject.die_rank=0 --set inject.die_step=7 --set inject.die_phase=train >"$g" 2>&1
    if [ $rc = 0 ] && [ "$(verify "$g" status)" = pass ] && [ "$(verify "$g" ppo_steps)" = 12 ] &&
       [ "$(verify "$g" ranks_lost)" = 1 ] && [ "$(verify "$g" ranks_joined)" = 1 ] &&
       grep -aq '^ft: \[elastic\] respawn: 1 new process(es) spawned and joined in [0-9.]* s: 4 rank(s)' "$g" &&
       grep -aq '^ft: recovered .*copies in memory of the start of step 7 .* redoing from step 7 on 4 rank(s)' "$g" &&
       bin/nereus-trace plans rs-die_step000007.trace.h5 2>/dev/null | grep -q 'spawned to replace them'; then
      result ft-respawn-die 0 "$secs" "rank 0 died as train began in step 7; $(sed -n 's/^ft: \[elastic\] respawn: 1 new process(es) spawned and joined in \([0-9.]*\) s.*/\1/p' "$g") s to spawn and join one; step 7 redone from the copies in memory on 4 ranks, pass"
    else result ft-respawn-die 1 "$secs" "exit $rc, status '$(verify "$g" status)', joined '$(verify "$g" ranks_joined)'"; fi
  fi
  if want ft-respawn-leave; then
    d=$F/rs-lv.deck
    sed "s#^dir = elastic4-ckpt#dir = $F/rs-lv#; s/^name = elastic4/name = rs-lv/" inputs/elastic4.deck > "$d"
    rm -rf "$F/rs-lv" rs-lv*.trace.h5
    g=$LOG/ft-respawn-leave.log
    t0=$(date +%s.%N)
    timeout 120 $L --ft -np 4 bin/nereus-ft "$d" --set elastic.respawn=true >"$g" 2>&1 &
    bg=$!
    sent=""
    wait_for "$g" '^step +8 ' && signal_rank USR2 "$d" 1 >/dev/null && sent=1
    wait $bg; rc=$?
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    if [ -n "$sent" ] && [ $rc = 0 ] && [ "$(verify "$g" status)" = pass ] && [ "$(verify "$g" ppo_steps)" = 20 ] &&
       [ "$(verify "$g" ft_ranks_left)" = 1 ] && [ "$(verify "$g" ranks_joined)" = 1 ] &&
       grep -aq '^ft: rank(s) 1 of 4 left with notice .* 3 rank(s) go on' "$g" && grep -aq 'going on from step [0-9]* on 4 rank(s)' "$g" &&
       bin/nereus-trace plans rs-lv.trace.h5 2>/dev/null | grep -q 'left with notice.*spawned to replace them' &&
       bin/nereus-trace plans rs-lv.trace.h5 2>/dev/null | grep -q 'leave with notice (SIGUSR2): the job moved off the leaving rank'; then
      result ft-respawn-leave 0 "$secs" "rank 1 left with notice, one process spawned in its place: 4 -> 3 -> 4 ranks at that boundary, 20 steps once, pass"
    else result ft-respawn-leave 1 "$secs" "signal sent '$sent', exit $rc, status '$(verify "$g" status)', joined '$(verify "$g" ranks_joined)'"; fi
  fi
  # --- [elastic] grow_to: the tiny deck launched on 2 ranks with grow_to = 4 and the live planner: at step 5's
  # checkpoint two processes join, the job is rebuilt on 4 ranks from it (no step redone) and the planner moves
  # it to a plan of its own for the 4; the trace has the growth's plan row and the planner's after it
  if want ft-grow; then
    rm -rf "$F/grow" grow*.trace.h5
    g=$LOG/ft-grow.log
    timed secs timeout 120 $L --ft -np 2 bin/nereus-ft inputs/tiny.deck --set run.name=grow --set ppo.steps=16 \
      --set ckpt.every=5 --set ckpt.dir="$F/grow" --set elastic.grow_to=4 --set planner.policy=payback >"$g" 2>&1
    pl=$(bin/nereus-trace plans grow.trace.h5 2>/dev/null | grep '^plan')
    if [ $rc = 0 ] && [ "$(verify "$g" status)" = pass ] && [ "$(verify "$g" ppo_steps)" = 16 ] &&
       [ "$(verify "$g" ranks_joined)" = 2 ] && grep -aq '^ft: the job grows from 2 to 4 rank(s)' "$g" &&
       grep -aq 'going on from step 5 on 4 rank(s)' "$g" && grep -q 'from step 5 (growth: 2 rank(s) and 2 process(es) spawned' <<<"$pl" &&
       awk '/from step 5 \(growth/{g=1; next} g && /\(planner payback\)/{p=1} END{exit !p}' <<<"$pl"; then
      result ft-grow 0 "$secs" "2 -> 4 ranks at step 5's checkpoint ($(sed -n 's/^ft: \[elastic\] grow_to: 2 new process(es) spawned and joined in \([0-9.]*\) s.*/\1/p' "$g") s to spawn and join), then the planner's plan for 4; 16 steps once, pass"
    else result ft-grow 1 "$secs" "exit $rc, status '$(verify "$g" status)', joined '$(verify "$g" ranks_joined)'"; fi
  fi
  # --- leaving with notice: SIGUSR2 to rank 0's PID during step 12: a checkpoint at the next step boundary, rank 0
  # leaves (its trace closed complete), the other 3 go on from that checkpoint with no step redone (a new trace)
  if want ft-leave-notice; then
    ftdeck "$F/lv.deck" lv 30 5
    rm -rf "$F/lv" lv*.trace.h5
    t0=$(date +%s.%N)
    timeout 120 $L --ft -np 4 bin/nereus-ft "$F/lv.deck" >"$LOG/ft-leave-notice.log" 2>&1 &
    bg=$!
    sent=""
    wait_for "$LOG/ft-leave-notice.log" '^step +11 ' && signal_rank USR2 "$F/lv.deck" 0 >/dev/null && sent=1
    wait $bg; rc=$?
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    at=$(sed -n 's/^ft: rank(s) 0 of 4 left with notice (SIGUSR2, before step \([0-9]*\)); 3 rank(s) go on$/\1/p' "$LOG/ft-leave-notice.log")
    n=$(grep -ac '^step ' "$LOG/ft-leave-notice.log")
    if [ -n "$sent" ] && [ $rc = 0 ] && [ "$(verify "$LOG/ft-leave-notice.log" status)" = pass ] && [ -n "$at" ] &&
       [ "$n" = 30 ] && [ "$(verify "$LOG/ft-leave-notice.log" ft_ranks_left)" = 1 ] &&
       grep -aq "^ft: before step $at the job moved onto the 3 rank(s) that stay by a planned transition" "$LOG/ft-leave-notice.log" &&
       grep -aq "^ft: rebuilt in .*copies in memory of the start of step $at .*no checkpoint read" "$LOG/ft-leave-notice.log" &&
       bin/nereus-trace summary lv.trace.h5 2>/dev/null | grep -q 'status: complete (rank 0 left with notice (SIGUSR2)' &&
       bin/nereus-trace plans "$(printf 'lv_step%06d.trace.h5' "$at")" 2>/dev/null | grep -q 'recovery: rank(s) 0 of 4 left with notice'; then
      result ft-leave-notice 0 "$secs" "rank 0 left before step $at, the job moved off it by a planned transition first; 3 ranks went on with no step redone and no checkpoint read; its trace complete, a new one from step $at"
    else result ft-leave-notice 1 "$secs" "exit $rc, $n step lines, left before step '$at'"; fi
  fi
  # --- after every kill, leave, spawn and growth above: no process of theirs left running (each run's program
  # names a deck under $F, or the tiny deck with run.name=grow; the spawned processes run the same command)
  if want ft-no-leftovers; then
    left=$(pgrep -fa "bin/nereus-ft ($F/|inputs/tiny.deck --set run.name=grow)" | grep -v pgrep || true)
    if [ -z "$left" ]; then result ft-no-leftovers 0 0 "no process of the fault-tolerance runs left"
    else result ft-no-leftovers 1 0 "left running: $(echo "$left" | cut -c1-120 | tr '\n' ';')"; fi
  fi
fi

# --- without ULFM: fault tolerance asked of bin/nereus is refused; a killed rank ends the job (mpirun), the
# newest complete checkpoint stays and --restart latest goes on from it
if want ft-refused-without-ulfm; then
  out=$LOG/ft-refused-without-ulfm.log
  t0=$(date +%s.%N)
  OMPI_MCA_mpi_ft_enable=1 $L -np 2 bin/nereus tests/decks/restart.deck >"$out" 2>&1; rc1=$?
  rc2=0; [ -n "$ulfm" ] || { $L --ft -np 2 bin/nereus tests/decks/restart.deck >>"$out" 2>&1; rc2=$?; }
  if [ $rc1 = 2 ] && grep -q 'this program is built without ULFM' "$out" && { [ -n "$ulfm" ] || { [ $rc2 = 2 ] && grep -q 'not linked against' "$out"; }; }; then
    result ft-refused-without-ulfm 0 "$(echo "$(date +%s.%N) - $t0" | bc)" "exit 2 with the reason (OMPI_MCA_mpi_ft_enable=1 with bin/nereus; --ft with bin/nereus)"
  else result ft-refused-without-ulfm 1 0 "exit $rc1/$rc2"; fi
fi
feeds ft-fallback-killed ft-fallback-restart
if runs ft-fallback-killed; then
  ftdeck "$F/fb.deck" fb 200 5
  rm -rf "$F/fb"
  t0=$(date +%s.%N)
  timeout 120 $L -np 4 bin/nereus "$F/fb.deck" >"$LOG/ft-fallback-killed.log" 2>&1 &
  bg=$!
  wait_for "$LOG/ft-fallback-killed.log" '^step +12 ' && kill_rank "$F/fb.deck" 2 >/dev/null
  wait $bg; rc=$?
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  if [ $rc != 0 ] && grep -aqiE 'exited on signal 9|killed' "$LOG/ft-fallback-killed.log" && [ -f "$F/fb/fb_step000010.h5" ]; then
    result ft-fallback-killed 0 "$secs" "Debian's Open MPI: mpirun ended the job (exit $rc) naming the killed rank; step 10's checkpoint stays"
  else result ft-fallback-killed 1 "$secs" "exit $rc"; fi
fi
if want ft-fallback-restart; then
  sed -i '/^\[ppo\]/,/^\[/ s/^steps = 200$/steps = 12/' "$F/fb.deck"
  newest=$(ls "$F/fb" | grep -E '^fb_step[0-9]+\.h5$' | sort | tail -1)
  timed secs timeout 300 $L -np 3 bin/nereus "$F/fb.deck" --restart latest >"$LOG/ft-fallback-restart.log" 2>&1
  if [ $rc = 0 ] && [ -n "$newest" ] && grep -q "^restart: $F/fb/$newest" "$LOG/ft-fallback-restart.log" &&
     [ "$(verify "$LOG/ft-fallback-restart.log" status)" = pass ]; then
    result ft-fallback-restart 0 "$secs" "--restart latest on 3 ranks went on from $newest and passed"
  else result ft-fallback-restart 1 "$secs" "exit $rc; newest $newest"; fi
fi
# jobs/slurm.sbatch with NEREUS_RESUBMIT=1 (a fake sbatch records the call, Slurm's variables set by hand): a failed
# job (here: the INJECTED non-finite loss, exit 1) submits the script again once per run, then no more
if want ft-slurm-resubmit; then
  S=$F/slurm; rm -rf "$S"; mkdir -p "$S/bin"
  printf '#!/bin/sh\necho "$*" >>"%s/calls"; echo 4242\n' "$S" >"$S/bin/sbatch"; chmod +x "$S/bin/sbatch"
  { cat tests/decks/restart.deck; printf '[inject]\nnan_loss_step = 2\n'; } >"$S/nan.deck"
  t0=$(date +%s.%N)
  for k in 1 2; do
    PATH=$S/bin:$PATH SLURM_JOB_ID=10$k SLURM_NTASKS=2 SLURM_SUBMIT_DIR=$PWD NEREUS_LAUNCH=mpirun NEREUS_RUNS=$S/runs \
      NEREUS_RESUBMIT=1 NEREUS_SBATCH=$PWD/jobs/slurm.sbatch bash jobs/slurm.sbatch "$S/nan.deck" >"$LOG/ft-slurm-resubmit-$k.log" 2>&1
    eval "rc$k=$?"
  done
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  if [ "$rc1" = 1 ] && [ "$rc2" = 1 ] && [ "$(wc -l <"$S/calls")" = 1 ] && grep -q -- "-J nan -n 2 $PWD/jobs/slurm.sbatch $S/nan.deck" "$S/calls" &&
     grep -q 'resubmitted as job 4242 (NEREUS_RESUBMIT: 1 of 1)' "$LOG/ft-slurm-resubmit-1.log" &&
     grep -q 'NEREUS_RESUBMIT: 1 resubmissions done for run nan; not again' "$LOG/ft-slurm-resubmit-2.log"; then
    result ft-slurm-resubmit 0 "$secs" "a failed job resubmitted itself once (sbatch -J nan -n 2 ...), the next did not"
  else result ft-slurm-resubmit 1 "$secs" "exits $rc1 $rc2; calls: $(cat "$S/calls" 2>/dev/null | tr '\n' ';')"; fi
fi
