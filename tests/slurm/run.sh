#!/usr/bin/env bash
# tests/slurm/run.sh — jobs/slurm.sbatch under a real one-node Slurm on this
# machine (tests/slurm/setup.sh: Debian's slurmctld, slurmd and munge, started
# here and stopped again at the end by tests/slurm/stop.sh, unless
# NEREUS_SLURM_KEEP=1). Root. The jobs, each checked through its exit state,
# its stdout and its checkpoints:
#   slurm-full      a 60-step run on 2 ranks: exit 0, verify.status pass, the
#                   checkpoint in runs/RUN/ckpt/ passes bin/nereus-ckpt verify,
#                   the trace in its job directory holds the 60 steps
#   slurm-finished  the same run name again, on 4 ranks: restarts from step
#                   60 (the checkpoint loads under another rank count), runs
#                   no step, holds slurm-full's weights
#   slurm-mpirun    the same again through the fallback launcher, mpirun
#                   inside the allocation
#   slurm-signal    a run on 2 ranks signalled as at its time limit (SIGUSR1
#                   to the batch shell, what --signal=B:USR1@120 sends): it
#                   checkpoints at a step boundary and exits 0
#   slurm-resume    the same run name resubmitted: restarts from that
#                   checkpoint, completes, and ends where slurm-full ended
#                   (on the same rank count: over 50 steps, runs on other
#                   rank counts drift apart as sampled tokens flip, restart
#                   or not)
#   slurm-timelimit Slurm's own --time / --signal=B:USR1@N path: the run is
#                   signalled before its limit, checkpoints, exits 0
# One line per test; the last line is "N passed, N failed". Logs, job
# directories and Slurm output files: build/slurm-test/.
set -u
cd "$(dirname "$0")/../.."
T=$PWD/build/slurm-test
rm -rf "$T"; mkdir -p "$T"
pass=0; fail=0; failed=()
export NEREUS_RUNS=$T/runs  # jobs/slurm.sbatch's run directories, for these jobs only
DECK=tests/slurm/slurm.deck
JOB_TIMEOUT=${NEREUS_SLURM_JOB_TIMEOUT:-240}
t_start=$(date +%s.%N)

result() { # name status(0 ok) seconds note
  if [ "$2" = 0 ]; then pass=$((pass+1)); printf 'PASS  %-28s %6.1fs %s\n' "$1" "$3" "$4"
  else fail=$((fail+1)); failed+=("$1"); printf 'FAIL  %-28s %6.1fs %s\n' "$1" "$3" "$4"; fi
}
since() { echo "$(date +%s.%N) - $1" | bc; }
verify() { sed -n "s/^verify\.$2: //p" "$1" | head -1; }

finish() {
  if [ "${NEREUS_SLURM_KEEP:-0}" = 1 ]; then
    echo "note: NEREUS_SLURM_KEEP=1: the Slurm daemons stay up (tests/slurm/stop.sh stops them)"
  else
    bash tests/slurm/stop.sh >"$T/stop.log" 2>&1 || echo "note: tests/slurm/stop.sh failed (log: $T/stop.log)"
  fi
}
trap finish EXIT
trap 'finish; trap - EXIT; echo "== summary: interrupted"; echo "$pass passed, $((fail + 1)) failed"; exit 130' INT TERM

# job_state ID: "STATE EXITCODE" from scontrol (no accounting database here;
# a finished job stays visible for MinJobAge = 600 s)
job_state() {
  scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | awk -F= '$1=="JobState"{s=$2} $1=="ExitCode"{e=$2} END{print s, e}'
}
# wait_job ID: until the job has ended (or JOB_TIMEOUT: then it is
# cancelled); sets st to "STATE EXITCODE". Not in a $(...) subshell, so that
# an interrupt of this script takes effect at once (the EXIT trap stops it all)
wait_job() {
  local i
  for i in $(seq $((JOB_TIMEOUT * 5))); do
    st=$(job_state "$1")
    case "$st" in
      # SIGNALING: a signal (the time limit's USR1) is on its way; the job is still running
      PENDING*|RUNNING*|CONFIGURING*|COMPLETING*|SUSPENDED*|REQUEUED*|RESIZING*|SIGNALING*|STAGE_OUT*|" "|"") sleep 0.2 ;;
      *) return 0 ;;
    esac
  done
  scancel --full "$1" 2>/dev/null
  st="TIMEOUT(test) $(job_state "$1")"
}
# submit RUN NTASKS: sbatch jobs/slurm.sbatch with the test deck; prints the job id
submit() {
  sbatch --parsable -J "$1" -n "$2" -o "$T/%x-%j.out" jobs/slurm.sbatch "$DECK" 2>>"$T/sbatch.err" | cut -d';' -f1
}
# ckpt_ok FILE: bin/nereus-ckpt verify passes on it
ckpt_ok() { [ -f "$1" ] && "$T/bin/nereus-ckpt" verify "$1" >"$T/ckpt-verify-$(basename "$1").log" 2>&1; }

echo "== slurm: jobs/slurm.sbatch under a one-node Slurm on $(hostname -s)"
if [ "$(id -u)" != 0 ]; then echo "tests/slurm/run.sh: needs root (installs and starts Slurm)"; echo "0 passed, 1 failed"; exit 1; fi
if [ ! -x bin/nereus ] || [ ! -x bin/nereus-ckpt ]; then
  make -s build >"$T/make.log" 2>&1 || { echo "FAIL  build (log: $T/make.log)"; echo "0 passed, 1 failed"; exit 1; }
fi
# the jobs run a copy of the binaries: a rebuild of bin/ while the test runs
# (other work in the same tree) cannot change or break them halfway
mkdir -p "$T/bin"; cp bin/nereus bin/nereus-ckpt bin/nereus-trace "$T/bin/"
export NEREUS_BIN=$T/bin/nereus

# ---- setup: installs (if missing) and starts the daemons
t0=$(date +%s.%N)
if bash tests/slurm/setup.sh >"$T/setup.log" 2>&1; then
  result slurm-setup 0 "$(since "$t0")" "$(tail -1 "$T/setup.log" | sed 's/^slurm-setup: //')"
else
  result slurm-setup 1 "$(since "$t0")" "log: $T/setup.log: $(tail -1 "$T/setup.log")"
  echo "== summary"; echo "failed: slurm-setup"; echo "$pass passed, $fail failed"; exit 1
fi

# ---- slurm-full: a whole run on 2 ranks
t0=$(date +%s.%N)
run=slurm-full; why=""
id=$(submit $run 2)
if [ -z "$id" ]; then why="sbatch failed: $(tail -1 "$T/sbatch.err")"
else
  wait_job "$id"; out=$NEREUS_RUNS/$run/$id/stdout
  ck=$NEREUS_RUNS/$run/ckpt/slurm_step000060.h5
  [ "$st" = "COMPLETED 0:0" ] || why="$why job $id: $st;"
  grep -q '^nereus: .* 2 rank(s)' "$out" 2>/dev/null || why="$why not 2 ranks in one MPI job;"
  grep -q 'fresh start' "$T/$run-$id.out" 2>/dev/null || why="$why not a fresh start;"
  [ "$(verify "$out" status)" = pass ] || why="$why verify.status '$(verify "$out" status)';"
  [ "$(verify "$out" ppo_steps)" = 60 ] || why="$why verify.ppo_steps '$(verify "$out" ppo_steps)';"
  grep -qxF "ckpt: $ck" "$out" 2>/dev/null || why="$why no 'ckpt: $ck' line;"
  ckpt_ok "$ck" || why="$why nereus-ckpt verify $ck failed;"
  tr_=$NEREUS_RUNS/$run/$id/$run.trace.h5 # the job's trace, in its job directory
  if ! "$T/bin/nereus-trace" summary "$tr_" >"$T/trace-summary-$run.log" 2>&1; then why="$why nereus-trace summary $tr_ failed;"
  elif ! grep -qE '^steps: 60 \(steps 0-59\)' "$T/trace-summary-$run.log"; then why="$why the trace does not hold the 60 steps ($(head -3 "$T/trace-summary-$run.log" | tr '\n' ' '));"; fi
fi
[ -z "$why" ] && result $run 0 "$(since "$t0")" "job $id, 2 ranks, pass, $(basename "$ck") verified, trace read by nereus-trace" \
              || result $run 1 "$(since "$t0")" "$why (job dir $NEREUS_RUNS/$run/${id:-})"
full_out=${out:-}

# checksums_match OUT REF: the actor and critic checksums of two runs within 1e-5
checksums_match() {
  local k a b
  for k in checksum.actor checksum.critic; do
    a=$(verify "$2" $k); b=$(verify "$1" $k)
    awk -v a="$a" -v b="$b" 'BEGIN{ d = (a - b) / a; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= 1e-5) }' \
      || why="$why $k $b vs $a (slurm-full);"
  done
}

# ---- slurm-finished: the same run name again, on 4 ranks, finds the last checkpoint
t0=$(date +%s.%N)
why=""
id=$(submit $run 4)
if [ -z "$id" ]; then why="sbatch failed: $(tail -1 "$T/sbatch.err")"
else
  wait_job "$id"; out=$NEREUS_RUNS/$run/$id/stdout
  [ "$st" = "COMPLETED 0:0" ] || why="$why job $id: $st;"
  grep -q "^restart: $NEREUS_RUNS/$run/ckpt/slurm_step000060.h5: 40 SFT and 60 PPO steps done" "$out" 2>/dev/null \
    || why="$why no 'restart: ...slurm_step000060.h5' line;"
  [ "$(verify "$out" restart_step)" = 60 ] || why="$why verify.restart_step '$(verify "$out" restart_step)';"
  [ "$(verify "$out" ppo_steps)" = 0 ] || why="$why verify.ppo_steps '$(verify "$out" ppo_steps)';"
  grep -q '^nereus: .* 4 rank(s)' "$out" 2>/dev/null || why="$why not 4 ranks;"
  [ "$(verify "$out" status)" = pass ] || why="$why verify.status '$(verify "$out" status)';"
  checksums_match "$out" "$full_out"
fi
[ -z "$why" ] && result slurm-finished 0 "$(since "$t0")" "job $id on 4 ranks restarted at step 60, ran 0 steps, weights of slurm-full" \
              || result slurm-finished 1 "$(since "$t0")" "$why (job dir $NEREUS_RUNS/$run/${id:-})"

# ---- slurm-mpirun: the launcher for a Slurm without PMIx, Open MPI's mpirun
# inside the allocation (NEREUS_LAUNCH=mpirun), on the same finished run
t0=$(date +%s.%N)
why=""
id=$(NEREUS_LAUNCH=mpirun submit $run 2)
if [ -z "$id" ]; then why="sbatch failed: $(tail -1 "$T/sbatch.err")"
else
  wait_job "$id"; out=$NEREUS_RUNS/$run/$id/stdout
  [ "$st" = "COMPLETED 0:0" ] || why="$why job $id: $st;"
  grep -q 'launcher mpirun$' "$T/$run-$id.out" 2>/dev/null || why="$why launcher not mpirun;"
  grep -q '^nereus: .* 2 rank(s)' "$out" 2>/dev/null || why="$why not 2 ranks in one MPI job;"
  [ "$(verify "$out" restart_step)" = 60 ] || why="$why verify.restart_step '$(verify "$out" restart_step)';"
  [ "$(verify "$out" status)" = pass ] || why="$why verify.status '$(verify "$out" status)';"
  checksums_match "$out" "$full_out"
fi
[ -z "$why" ] && result slurm-mpirun 0 "$(since "$t0")" "job $id: mpirun -np 2 in the allocation, restarted at step 60" \
              || result slurm-mpirun 1 "$(since "$t0")" "$why (job dir $NEREUS_RUNS/$run/${id:-})"

# ---- slurm-signal: SIGUSR1 to the batch shell once step 5 is printed
t0=$(date +%s.%N)
run=slurm-signal; why=""; stopped=""
id=$(submit $run 2)
if [ -z "$id" ]; then why="sbatch failed: $(tail -1 "$T/sbatch.err")"
else
  out=$NEREUS_RUNS/$run/$id/stdout
  for i in $(seq $((JOB_TIMEOUT * 20))); do
    grep -q '^step *5 ' "$out" 2>/dev/null && break
    case "$(job_state "$id")" in PENDING*|RUNNING*|CONFIGURING*|" "|"") sleep 0.05 ;; *) break ;; esac
  done
  # what Slurm does at the time limit with --signal=B:USR1@120
  scancel --batch --signal=USR1 "$id" 2>>"$T/sbatch.err" || why="$why scancel --signal failed;"
  wait_job "$id"
  stopped=$(verify "$out" stopped_at_step)
  ck=$NEREUS_RUNS/$run/ckpt/slurm_step$(printf '%06d' "${stopped:-0}").h5
  [ "$st" = "COMPLETED 0:0" ] || why="$why job $id: $st;"
  grep -q 'SIGNAL USR1 .*: forwarding' "$T/$run-$id.out" 2>/dev/null || why="$why the batch shell did not forward SIGUSR1;"
  grep -q 'stopped by signal 10 (SIGUSR1) at a step boundary' "$out" 2>/dev/null || why="$why no 'stopped by signal 10' line;"
  [ -n "$stopped" ] && [ "$stopped" -gt 5 ] && [ "$stopped" -lt 60 ] || why="$why verify.stopped_at_step '$stopped';"
  ckpt_ok "$ck" || why="$why nereus-ckpt verify $ck failed;"
fi
[ -z "$why" ] && result $run 0 "$(since "$t0")" "job $id stopped at step $stopped, exit 0, $(basename "$ck") verified" \
              || result $run 1 "$(since "$t0")" "$why (job dir $NEREUS_RUNS/$run/${id:-})"

# ---- slurm-resume: the same run name continues from that checkpoint
t0=$(date +%s.%N)
why=""
id=$(submit $run 2)
if [ -z "$id" ]; then why="sbatch failed: $(tail -1 "$T/sbatch.err")"
elif [ -z "$stopped" ]; then why="no checkpoint from slurm-signal to resume from;"; scancel "$id"
else
  wait_job "$id"; out=$NEREUS_RUNS/$run/$id/stdout
  ck=$NEREUS_RUNS/$run/ckpt/slurm_step000060.h5
  [ "$st" = "COMPLETED 0:0" ] || why="$why job $id: $st;"
  grep -q -- '--restart latest' "$T/$run-$id.out" 2>/dev/null || why="$why the script did not pass --restart latest;"
  grep -q "^restart: $NEREUS_RUNS/$run/ckpt/slurm_step$(printf '%06d' "$stopped").h5: 40 SFT and $stopped PPO steps done" "$out" 2>/dev/null \
    || why="$why no 'restart: ...step$(printf '%06d' "$stopped").h5' line;"
  grep -q '^nereus: .* 2 rank(s)' "$out" 2>/dev/null || why="$why not 2 ranks;"
  [ "$(verify "$out" restart_step)" = "$stopped" ] || why="$why verify.restart_step '$(verify "$out" restart_step)';"
  [ "$(verify "$out" ppo_steps)" = $((60 - stopped)) ] || why="$why verify.ppo_steps '$(verify "$out" ppo_steps)';"
  [ "$(verify "$out" status)" = pass ] || why="$why verify.status '$(verify "$out" status)';"
  ckpt_ok "$ck" || why="$why nereus-ckpt verify $ck failed;"
  checksums_match "$out" "$full_out" # the interrupted and resumed run ends where the uninterrupted one did
fi
[ -z "$why" ] && result slurm-resume 0 "$(since "$t0")" "job $id resumed at step $stopped, pass, checksums match slurm-full" \
              || result slurm-resume 1 "$(since "$t0")" "$why (job dir $NEREUS_RUNS/$run/${id:-})"

# ---- slurm-timelimit: Slurm's own time-limit signal. --time=2
# --signal=B:USR1@60 (the script has @120; the command line wins): slurmctld
# sends it on a timer, up to 60 s early (man sbatch); here it came 35-55 s
# in. The run (100000 PPO steps) checkpoints and exits 0 before the limit.
t0=$(date +%s.%N)
run=slurm-timelimit; why=""; stopped=""
sed 's/^steps = 60$/steps = 100000/; s/^log_every = 1$/log_every = 20/' "$DECK" >"$T/timelimit.deck"
id=$(sbatch --parsable -J $run -n 2 --time=2 --signal=B:USR1@60 -o "$T/%x-%j.out" jobs/slurm.sbatch "$T/timelimit.deck" 2>>"$T/sbatch.err" | cut -d';' -f1)
if [ -z "$id" ]; then why="sbatch failed: $(tail -1 "$T/sbatch.err")"
else
  wait_job "$id"; out=$NEREUS_RUNS/$run/$id/stdout
  stopped=$(verify "$out" stopped_at_step)
  ck=$NEREUS_RUNS/$run/ckpt/timelimit_step$(printf '%06d' "${stopped:-0}").h5
  [ "$st" = "COMPLETED 0:0" ] || why="$why job $id: $st (want COMPLETED 0:0 before the limit);"
  grep -q 'SIGNAL USR1 .*: forwarding' "$T/$run-$id.out" 2>/dev/null || why="$why no SIGUSR1 reached the batch shell;"
  grep -q 'stopped by signal 10 (SIGUSR1) at a step boundary' "$out" 2>/dev/null || why="$why no 'stopped by signal 10' line;"
  [ -n "$stopped" ] && [ "$stopped" -gt 0 ] || why="$why verify.stopped_at_step '$stopped';"
  ckpt_ok "$ck" || why="$why nereus-ckpt verify $ck failed;"
fi
[ -z "$why" ] && result $run 0 "$(since "$t0")" "job $id (limit 2 min) signalled, stopped at step $stopped, exit 0, checkpoint verified" \
              || result $run 1 "$(since "$t0")" "$why (job dir $NEREUS_RUNS/$run/${id:-})"

finish; trap - EXIT
echo "== summary ($(printf '%.0f' "$(since "$t_start")") s)"
for f in "${failed[@]}"; do echo "failed: $f"; done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
