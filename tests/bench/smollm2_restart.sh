#!/usr/bin/env bash
# tests/bench/smollm2_restart.sh [STEPS] [OUT] — a SIGTERM in the middle of a SmolLM2 GRPO run and a restart give
# the uninterrupted run's tokens and checksums (issue 44; not in make test: three runs of the real model, about
# 4 minutes on 2 cores).
#
# inputs/smollm2-grpo.deck, small (2 prompts x 4 a step, 16 new tokens at most, 2 held-out prompts), on 2 ranks:
# run A takes STEPS steps (default 5) uninterrupted; run B gets SIGTERM (every rank, by their PIDs) once its step 1
# is logged, writes its checkpoint at the next step boundary and exits 0; run C restarts from that checkpoint
# (--restart latest) and finishes. C's steps (their log lines without the times: reward, KL, losses, entropy,
# mean length, the sampled response) must equal A's same steps, and its final verify.checksum.actor,
# checksum.ref, hash.actor and hash.ref A's (a restarted run's tokens_hash and reward lines cover its own
# steps only). Prints the lines compared and `smollm2_restart: pass|fail`; OUT (default build/smollm2-restart.txt)
# gets the same. Exit 0 on pass, 1 on fail, 2 for a bad command line.
# Needs make smollm2 and bin/nereus.
case ${1:-} in -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
steps=${1:-5}
[[ $steps =~ ^[2-9][0-9]*$ ]] || { echo "smollm2_restart: STEPS is a count of 2 or more, not '$steps' (--help)" >&2; exit 2; }
cd "$(dirname "$0")/../.."
out=${2:-build/smollm2-restart.txt}
for need in bin/nereus build/smollm2/smollm2-135m-instruct.h5; do
  [ -e "$need" ] || { echo "smollm2_restart: $need missing (make, make smollm2)" >&2; exit 2; }
done
dir=build/smollm2-restart
rm -rf "$dir" && mkdir -p "$dir"
common=(--set ppo.steps="$steps" --set ppo.batch=8 --set ppo.minibatch=8 --set ppo.max_response=16
        --set data.eval_size=2 --set eval.every=0 --set trace.file=none)
run() { OPENBLAS_NUM_THREADS=1 jobs/local.sh -np 2 bin/nereus inputs/smollm2-grpo.deck "${common[@]}" "$@"; }
run --set ckpt.dir="$dir/a" > "$dir/a.log" 2>&1 || { echo "smollm2_restart: run A failed ($dir/a.log)"; exit 1; }
run --set ckpt.dir="$dir/b" > "$dir/b.log" 2>&1 &
bpid=$!
for i in $(seq 1 6000); do grep -q '^step *1 ' "$dir/b.log" 2>/dev/null && break; sleep 0.05; done
pids=$(pgrep -f "^bin/nereus inputs/smollm2-grpo.deck .*ckpt.dir=$dir/b")   # B's ranks, this run's alone
[ -n "$pids" ] && kill -TERM $pids
wait "$bpid"; rcb=$?
grep -q 'stopped by signal 15 (SIGTERM)' "$dir/b.log" && [ $rcb = 0 ] ||
  { echo "smollm2_restart: run B did not stop cleanly on SIGTERM (exit $rcb, $dir/b.log)"; exit 1; }
run --set ckpt.dir="$dir/b" --restart latest > "$dir/c.log" 2>&1 || { echo "smollm2_restart: restart failed ($dir/c.log)"; exit 1; }
keys='^verify\.(checksum\.actor|checksum\.ref|hash\.actor|hash\.ref):'
from=$(sed -n 's/^verify.stopped_at_step: //p' "$dir/b.log")
# step lines from step `from` on, without their times (after the mean length)
steps_of() { awk -v f="$from" '/^step +[0-9]+ \|/ && $2 >= f' "$1" | sed -E 's/ \| [0-9.]+s: .*\| [0-9]+ tok\/s \|/ |/'; }
{
  echo "== SmolLM2 GRPO, $steps steps on 2 ranks: uninterrupted (A) against SIGTERM after step 1 and a restart (C)"
  echo "   machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; commit $(git rev-parse --short HEAD)"
  echo "   B: $(grep -m1 'stopped by signal' "$dir/b.log"); C: $(grep -m1 '^restart:' "$dir/c.log")"
  steps_of "$dir/a.log" | sed 's/^/   A: /'; steps_of "$dir/c.log" | sed 's/^/   C: /'
  paste -d'|' <(grep -E "$keys" "$dir/a.log") <(grep -E "$keys" "$dir/c.log") | sed 's/|/   C: /; s/^/   A: /'
  if [ -n "$from" ] && [ "$from" -lt "$steps" ] && [ "$(steps_of "$dir/c.log" | wc -l)" = $((steps - from)) ] &&
     diff <(steps_of "$dir/a.log") <(steps_of "$dir/c.log") >/dev/null &&
     diff <(grep -E "$keys" "$dir/a.log") <(grep -E "$keys" "$dir/c.log") >/dev/null &&
     [ "$(grep -cE "$keys" "$dir/a.log")" = 4 ]; then echo "smollm2_restart: pass"; else echo "smollm2_restart: fail"; fi
} | tee "$out"
tail -1 "$out" | grep -q 'pass$'
