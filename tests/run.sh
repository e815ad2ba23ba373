#!/usr/bin/env bash
# tests/run.sh — runs every test of `make test`: unit programs, bad decks
# (exit status 2 and the expected message), and end-to-end runs through the
# mpirun launcher. One line per test; the last line is "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
. tests/workdir.sh test-run # runs write their traces there, not into the checkout
LOG=build/test-logs
rm -rf "$LOG"; mkdir -p "$LOG"
pass=0; fail=0; skip=0; failed=()
export OPENBLAS_NUM_THREADS=1
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl_vader_max_send_size=131072

result() { # name status(0 ok, 1 fail, 77 skip) seconds [note]
  local name=$1 st=$2 secs=$3 note=${4:-}
  if [ "$st" = 0 ]; then pass=$((pass+1)); printf 'PASS  %-44s %6.1fs %s\n' "$name" "$secs" "$note"
  elif [ "$st" = 77 ]; then skip=$((skip+1)); printf 'SKIP  %-44s %6.1fs %s\n' "$name" "$secs" "$note"
  else fail=$((fail+1)); failed+=("$name"); printf 'FAIL  %-44s %6.1fs %s (log: %s/%s.log)\n' "$name" "$secs" "$note" "$LOG" "$name"
  fi
}

# t NAME TIMEOUT CMD...: passes when CMD exits 0
t() {
  local name=$1 to=$2; shift 2
  local t0=$(date +%s.%N)
  timeout "$to" "$@" >"$LOG/$name.log" 2>&1; local rc=$?
  local secs=$(echo "$(date +%s.%N) - $t0" | bc)
  [ $rc = 0 ] && result "$name" 0 "$secs" || result "$name" 1 "$secs" "exit $rc"
}

# bad NAME REGEX CMD...: passes when CMD exits 2 and its stderr matches REGEX
bad() {
  local name=$1 re=$2; shift 2
  local t0=$(date +%s.%N)
  timeout 60 "$@" >"$LOG/$name.out" 2>"$LOG/$name.log"; local rc=$?
  local secs=$(echo "$(date +%s.%N) - $t0" | bc)
  if [ $rc != 2 ]; then result "$name" 1 "$secs" "exit $rc, want 2"
  elif ! grep -qE -- "$re" "$LOG/$name.log"; then result "$name" 1 "$secs" "stderr does not match /$re/"
  elif [ "$(grep -c 'error' "$LOG/$name.log")" -gt 1 ]; then result "$name" 1 "$secs" "more than one error message"
  else result "$name" 0 "$secs"; fi
}

# verify FILE KEY: value of "verify.KEY: VALUE" in a run log
verify() { sed -n "s/^verify\.$2: //p" "$1" | head -1; }
# simv LOG POLICY.METRIC: a --simulate run's sim.POLICY.METRIC value
simv() { sed -n "s/^sim\.$2: //p" "$1" | head -1; }
# the model-stage rows of printed plans on stdin ("actor.gen     tp1 pp1 dp2  ranks 0-1,4  (...)") as one
# "model-stage rank" line per rank each holds
stage_ranks() {
  awk '/^(actor|ref|critic|reward)\.[a-z]+ +tp[0-9]+ pp[0-9]+ dp[0-9]+ +ranks /{ match($0, /ranks [0-9,-]+/);
         n = split(substr($0, RSTART + 6, RLENGTH - 6), a, ",");
         for (i = 1; i <= n; i++) { m = split(a[i], b, "-"); for (r = b[1]; r <= ((m > 1) ? b[2] : b[1]); r++) print $1, r } }'
}

# checksums_close REF OUT: the actor, ref and critic checksums of two runs
# within relative 1e-5; appends what differs to $why, sets $worst
checksums_close() {
  worst=0
  local k a b d
  for k in checksum.actor checksum.ref checksum.critic; do
    a=$(verify "$1" $k); b=$(verify "$2" $k)
    d=$(awk -v a="$a" -v b="$b" 'BEGIN{ if (a=="" || b=="") { print "nan"; exit } d=(a-b)/a; if (d<0) d=-d; printf "%.1e", d }')
    awk -v d="$d" 'BEGIN{exit !(d != "nan" && d+0 <= 1e-5)}' || why="$why $k $a vs $b;"
    worst=$(awk -v d="$d" -v w="$worst" 'BEGIN{ print (d=="nan" || d+0 > w+0) ? d : w }')
  done
}

echo "== unit tests"
for p in test_deck test_counters test_backend_grad test_backend_mem test_model test_ppo_pure test_task test_grid test_slabs test_tx_dag test_planner test_sim; do t "$p" 300 "build/tests/$p"; done
# EMU communicators against the pure grid math, 8 ranks on the 2 cores
t emu-comms 120 jobs/local.sh -np 8 build/tests/test_emu_comms
# device-buffer paths of the comm facade (host staging, NCCL-like groups) against plain MPI, 4 ranks
t comm-device 120 jobs/local.sh -np 4 build/tests/test_comm_device
# tensor parallelism in the model: tp = 1, 2, 4 against the unsharded model
t model-tp 120 jobs/local.sh -np 4 build/tests/test_model_tp
# pipeline parallelism (GPipe) with TP: (pp, tp) in (2,1) (4,1) (2,2) (4,2) (2,4) against the unsharded model
t model-pp 120 jobs/local.sh -np 8 build/tests/test_model_pp
# CUDA parity (every CUDA op against the CPU backend): runs where a GPU is, skipped (exit 77) elsewhere
t0=$(date +%s.%N); timeout 300 build/tests/gpu/parity >"$LOG/gpu-parity.log" 2>&1; rc=$?
secs=$(echo "$(date +%s.%N) - $t0" | bc)
case $rc in 0) result gpu-parity 0 "$secs";; 77) result gpu-parity 77 "$secs" "$(grep -m1 SKIP "$LOG/gpu-parity.log")";; *) result gpu-parity 1 "$secs" "exit $rc";; esac
# the same op checks on the real kernel source of cuda/, run on the CPU by an emulator (tests/gpu/emu/, docs/CUDA.md):
# the kernels' arithmetic and indexing, no GPU involved
t0=$(date +%s.%N); timeout 240 build/tests/gpu/emu/parity-emulated >"$LOG/cuda-kernels-emulated.log" 2>&1; rc=$?
secs=$(echo "$(date +%s.%N) - $t0" | bc)
counts=$(sed -n 's/^parity-emulated: \([0-9]* passed, [0-9]* failed\).*/\1/p' "$LOG/cuda-kernels-emulated.log")
note="an emulation on the CPU, not a GPU run: ${counts:-no count}"
[ $rc = 0 ] && result cuda-kernels-emulated 0 "$secs" "$note" || result cuda-kernels-emulated 1 "$secs" "exit $rc; $note"

echo "== bad input"
for f in tests/decks/bad/*.deck; do
  re=$(sed -n 's/^# expect: //p' "$f" | head -1 | tr -d '\r')
  bad "deck-$(basename "$f" .deck)" "$re" bin/nereus "$f"
done
echo "== bad plans (mpirun, ranks per deck from '# ranks: N')"
for f in tests/decks/bad_plans/*.deck; do
  n=plan-$(basename "$f" .deck)
  re=$(sed -n 's/^# expect: //p' "$f" | head -1 | tr -d '\r')
  np=$(sed -n 's/^# ranks: //p' "$f" | head -1 | tr -d '\r')
  bad "$n" "$re" jobs/local.sh -np "$np" bin/nereus "$f"
  note=$(sed -n 's/^# expect-note: //p' "$f" | head -1 | tr -d '\r')
  if [ -n "$note" ]; then
    if grep -qE -- "$note" "$LOG/$n.log"; then result "$n-note" 0 0; else result "$n-note" 1 0 "no /$note/"; fi
  fi
done
echo "== bad run decks: what the job checks at start-up ([planner], [inject]; mpirun, ranks from '# ranks: N')"
for f in tests/decks/bad_runs/*.deck; do
  re=$(sed -n 's/^# expect: //p' "$f" | head -1 | tr -d '\r')
  np=$(sed -n 's/^# ranks: //p' "$f" | head -1 | tr -d '\r')
  bad "run-$(basename "$f" .deck)" "$re" jobs/local.sh -np "$np" bin/nereus "$f"
done
bad deck-nonexistent 'no/such\.deck.*(No such file|cannot|does not exist)' bin/nereus tests/decks/no/such.deck
bad deck-directory 'tests/decks.*(directory|cannot read|not a regular)' bin/nereus tests/decks
bad deck-binary 'bin/nereus.*binary' bin/nereus bin/nereus
bad cli-no-deck 'no input deck' bin/nereus
bad cli-unknown-option "unknown option '--bogus'" bin/nereus --bogus inputs/tiny.deck
bad deck-max-seq 'max_seq_short\.deck:[0-9]+: error: .*max_seq' bin/nereus tests/decks/max_seq_short.deck
bad deck-missing-token-file 'tokens_file.*/nonexistent/tokens\.bin' bin/nereus tests/decks/missing_tokens.deck
# 100 decks mutated at random (a fixed seed) from tests/decks/fuzz/, on 1 and 4 ranks and simulated: each runs
# or is refused with a message
t deck-fuzz 400 /usr/bin/python3 tests/test_deck_fuzz.py 100 "$LOG/fuzz"
grep -E '^(FAIL|fuzz:)' "$LOG/deck-fuzz.log" | sed 's/^/      /'
# 40 damaged checkpoints and traces (tests/test_file_fuzz.py, a fixed seed): every tool that reads them ends
# with a refusal naming the file, or with the results of the undamaged file; none crashes or hangs
t file-fuzz 300 /usr/bin/python3 tests/test_file_fuzz.py 40 "$LOG/filefuzz"
grep -E '^(FAIL|file fuzz:)' "$LOG/file-fuzz.log" | sed 's/^/      /'

# the committed deck reference is the one the key table generates
if bin/nereus --deck-reference 2>/dev/null | diff -u inputs/REFERENCE.md - >"$LOG/deck-reference.log"; then result deck-reference-current 0 0
else result deck-reference-current 1 0 "inputs/REFERENCE.md is stale: bin/nereus --deck-reference > inputs/REFERENCE.md"; fi

# a cgroup's memory limit (what Slurm's --mem sets) is the node's memory for the start-up check: a plan of about
# 5.7 GiB under a 2 GiB limit is refused with the limit named (without the check the kernel killed it, exit 137).
# Skipped where this machine lets no cgroup be made (cgroup v1 memory/ or v2 with the memory controller).
CGT=$(mktemp -d); sed "s|@WORK@|$CGT|g; s/^n_embd = .*/n_embd = 2048/; s/^n_head = .*/n_head = 64/; s/^policy = payback/policy = off/" \
  tests/decks/fuzz/payback.deck > "$CGT/cg.deck"
CG=""
for base in /sys/fs/cgroup/memory /sys/fs/cgroup; do
  d=$base/nereus_test_$$
  if mkdir "$d" 2>/dev/null; then # a real cgroup gets its control files from the kernel (not so a plain tmpfs)
    if [ -e "$d/cgroup.procs" ] && { [ -e "$d/memory.limit_in_bytes" ] || [ -e "$d/memory.max" ]; } && \
       { echo 2147483648 > "$d/memory.limit_in_bytes" || echo 2147483648 > "$d/memory.max"; } 2>/dev/null; then CG=$d; break; fi
    rmdir "$d" 2>/dev/null
  fi
done
if [ -n "$CG" ]; then
  bash -c 'echo $$ > "$1/cgroup.procs" && exec bin/nereus "$2"' _ "$CG" "$CGT/cg.deck" >"$LOG/memory-cgroup.out" 2>"$LOG/memory-cgroup.log"; rc=$?
  for i in $(seq 1 50); do rmdir "$CG" 2>/dev/null && break; sleep 0.1; done # MPI's helpers leave it late
  if [ $rc = 2 ] && grep -qE "cg\.deck:[0-9]+: error: the plan does not fit in memory: .*has 2\.0 GiB \(its cgroup's memory limit" "$LOG/memory-cgroup.log"; then
    result memory-cgroup-limit 0 0 "refused under a 2 GiB cgroup limit"
  else result memory-cgroup-limit 1 0 "exit $rc: $(grep -m1 error "$LOG/memory-cgroup.log")"; fi
else result memory-cgroup-limit 77 0 "no cgroup with a memory limit can be made here"; fi
rm -rf "$CGT"

echo "== end to end (mpirun -np 1)"
L=jobs/local.sh
t run-short 300 $L -np 1 bin/nereus tests/decks/short.deck
g=$(verify "$LOG/run-short.log" reward_gain); st=$(verify "$LOG/run-short.log" status)
if [ -n "$g" ] && [ "$st" = pass ] && awk "BEGIN{exit !($g >= 0.15)}"; then result reward-rises 0 0 "gain $g"
else result reward-rises 1 0 "gain '$g' status '$st' (want gain >= 0.15, pass)"; fi
t run-short-again 300 $L -np 1 bin/nereus tests/decks/short.deck
if diff <(grep '^verify\.' "$LOG/run-short.log") <(grep '^verify\.' "$LOG/run-short-again.log") >"$LOG/deterministic.log" \
   && grep -q '^verify\.checksum\.actor' "$LOG/run-short.log"; then result deterministic 0 0 "verification blocks identical"
else result deterministic 1 0 "verification blocks differ"; fi

timeout 120 $L -np 1 bin/nereus tests/decks/nan.deck >"$LOG/nonfinite-stop.log" 2>&1; rc=$?
if [ $rc = 1 ] && grep -q 'non-finite loss' "$LOG/nonfinite-stop.log" && [ "$(verify "$LOG/nonfinite-stop.log" status)" = fail ]; then
  result nonfinite-stop 0 0 "exit 1, verify.status: fail"
else result nonfinite-stop 1 0 "exit $rc"; fi

# more BLAS threads than a node's cores: the run goes on, and says so once (run.c warn_threads)
sed -e 's/^steps = 40$/steps = 2/' -e 's/^\[run\]$/[run]\nblas_threads = 2/' tests/decks/short.deck >"$LOG/threads.deck"
timeout 300 $L -np 4 bin/nereus "$LOG/threads.deck" >"$LOG/threads-warning.log" 2>&1; rc=$?
nw=$(grep -c '^warning: \[run\] blas_threads = 2 with 4 rank(s) on a node of' "$LOG/threads-warning.log")
if [ "$(nproc)" -ge 8 ]; then result threads-warning 77 0 "$(nproc) cores: 4 ranks x 2 threads fit"
elif [ $rc = 0 ] && [ "$nw" = 1 ] && [ "$(verify "$LOG/threads-warning.log" status)" = pass ] \
     && ! grep -q 'warning: \[run\] blas_threads' "$LOG/run-short.log"; then
  result threads-warning 0 0 "4 ranks x 2 BLAS threads on $(nproc) cores: warned once, ran"
else result threads-warning 1 0 "exit $rc, $nw warning line(s) (want 0 and 1; none with blas_threads = 1)"; fi

tok=build/test-logs/task_tokens.bin
t task-tokens 60 bin/nereus-task-tokens "$tok" --count 4000 --digits 4 --tasks reverse,sort
t sft-tokens 300 $L -np 1 bin/nereus tests/decks/sft_tokens.deck
a=$(verify "$LOG/sft-tokens.log" sft_loss_first); b=$(verify "$LOG/sft-tokens.log" sft_loss_last)
if [ -n "$a" ] && [ -n "$b" ] && awk "BEGIN{exit !($b < 0.7 * $a)}"; then result sft-tokens-learns 0 0 "loss $a -> $b"
else result sft-tokens-learns 1 0 "loss '$a' -> '$b' (want below 0.7x the first; the random prompt digits keep the floor near 0.9)"; fi

echo "== equivalence: the same 5 PPO steps under every plan of tests/equiv_plans.txt"
t equiv-1rank 300 $L -np 1 bin/nereus tests/decks/equiv.deck
ref=$LOG/equiv-1rank.log
while IFS='|' read -r -u 3 name np plan; do
  name=$(echo $name); np=$(echo $np)
  case "$name" in ''|'#'*) continue;; esac
  deck=$LOG/equiv-$name.deck
  { cat tests/decks/equiv.deck; echo "[plan]"; echo "$plan" | tr ';' '\n' | sed 's/^ *//'; } > "$deck"
  t "equiv-$name-run" 300 $L -np "$np" bin/nereus "$deck"
  out=$LOG/equiv-$name-run.log
  why=""
  for k in tokens_hash reward_first10 reward_last10 ppo_steps status; do
    [ "$(verify "$ref" $k)" = "$(verify "$out" $k)" ] || why="$why $k differs;"
  done
  checksums_close "$ref" "$out"
  if [ -z "$why" ]; then result "equiv-$name" 0 0 "$np ranks: tokens, rewards identical; checksums within $worst (limit 1e-5)"
  else result "equiv-$name" 1 0 "$why"; fi
done 3< tests/equiv_plans.txt

echo "== checkpoints: the module and bin/nereus-ckpt"
# written under one plan on 4 ranks, read back under others bit-identical; corrupt files refused
t ckpt-module 300 jobs/local.sh -np 4 build/tests/test_ckpt
# llm.c import/export byte for byte, info/verify on good and corrupted files, loss, h5dump
t ckpt-tool 120 tests/test_ckpt_tool.sh
echo "== checkpoints: write on 4 ranks, restart under other plans on 1, 2, 3, 6 and 8 ranks"
CK=$LOG/ck; rm -rf "$CK"; mkdir -p "$CK"
# mkdeck OUT DIR PLAN [EXTRA]: the restart deck with [ckpt] dir, a [plan] and extra lines
mkdeck() {
  { cat tests/decks/restart.deck; printf '%b\n' "${4:-}"; printf '[ckpt]\nevery = 5\nkeep = 5\ndir = %s\n' "$2"
    echo "[plan]"; echo "$3" | tr ';' '\n' | sed 's/^ *//'; } > "$1"
}
plan_of() { sed -n "s/^$1 *| *[0-9]* *| //p" tests/restart_plans.txt; }
np_of() { sed -n "s/^$1 *| *\([0-9]*\) *|.*/\1/p" tests/restart_plans.txt; }
mkdeck "$CK/write4.deck" "$CK/write4" "$(plan_of write4)"
t ckpt-write4 300 $L -np 4 bin/nereus "$CK/write4.deck"
A5=$CK/write4/restart_step000005.h5; A10=$CK/write4/restart_step000010.h5
if [ -f "$A5" ] && [ -f "$A10" ] && bin/nereus-ckpt verify "$A5" >"$LOG/ckpt-verify.log" 2>&1; then result ckpt-files 0 0 "step 5 and 10 written, verify passes"
else result ckpt-files 1 0 "missing or unsound: $(ls "$CK/write4" 2>&1 | tr '\n' ' ')"; fi
# the run's final weights are its step-10 checkpoint's: verify.hash.NAME (from the 4 ranks' owned shards) equals
# `nereus-ckpt info`'s params hash (from the file's stored checksums) for every model
bin/nereus-ckpt info "$A10" >"$LOG/ckpt-info-hash.log" 2>&1
why=""
for m in actor ref critic; do
  a=$(verify "$LOG/ckpt-write4.log" hash.$m); b=$(sed -n "s/^  params hash \([0-9a-f]*\) (as verify\.hash\.$m .*/\1/p" "$LOG/ckpt-info-hash.log")
  [ -n "$a" ] && [ "$a" = "$b" ] || why="$why $m: run '$a', checkpoint '$b';"
done
if [ -z "$why" ]; then result ckpt-hash-matches-run 0 0 "verify.hash.{actor,ref,critic} = nereus-ckpt info's params hashes of the step-10 file"
else result ckpt-hash-matches-run 1 0 "$why"; fi
bin/nereus-ckpt info "$A5" >"$LOG/ckpt-info-a5.log" 2>&1
for r in r1 r2 r3 r6-mixed r8-tp2pp2; do
  np=$(np_of $r); plan=$(plan_of $r)
  # (a) restart and write again at once: params and AdamW state bit-identical to what was written
  mkdeck "$CK/$r-same.deck" "$CK/$r-same" "$plan" "[run]\nrestart = $A5" 
  sed -i '/^\[ppo\]/,/^\[/ s/^steps = 10$/steps = 5/' "$CK/$r-same.deck"
  t "ckpt-$r-reload" 300 $L -np "$np" bin/nereus "$CK/$r-same.deck"
  if h5diff "$A5" "$CK/$r-same/restart_step000005.h5" /models /models >"$LOG/ckpt-$r-h5diff.log" 2>&1; then
    result "ckpt-$r-identical" 0 0 "$np ranks: every parameter and AdamW moment bit-identical (h5diff /models)"
  else result "ckpt-$r-identical" 1 0 "h5diff /models differs: $(head -c 300 "$LOG/ckpt-$r-h5diff.log")"; fi
  # the same weights under this layout: the same fingerprints as the step-5 file's
  why=""
  for m in actor ref critic; do
    a=$(verify "$LOG/ckpt-$r-reload.log" hash.$m); b=$(sed -n "s/^  params hash \([0-9a-f]*\) (as verify\.hash\.$m .*/\1/p" "$LOG/ckpt-info-a5.log")
    [ -n "$a" ] && [ "$a" = "$b" ] || why="$why $m: run '$a', checkpoint '$b';"
  done
  if [ -z "$why" ]; then result "ckpt-$r-hash" 0 0 "$np ranks: verify.hash of the reloaded models = the step-5 file's"
  else result "ckpt-$r-hash" 1 0 "$why"; fi
  # (b) restart and run steps 5-9: the same as the uninterrupted run
  mkdeck "$CK/$r-cont.deck" "$CK/$r-cont" "$plan" "[run]\nrestart = $A5"
  t "ckpt-$r-continue" 300 $L -np "$np" bin/nereus "$CK/$r-cont.deck"
  why=""
  for s5 in 5 6 7 8 9; do
    a=$(grep "^step *$s5 |" "$LOG/ckpt-write4.log" | cut -d'|' -f2,3); b=$(grep "^step *$s5 |" "$LOG/ckpt-$r-continue.log" | cut -d'|' -f2,3)
    [ -n "$a" ] && [ "$a" = "$b" ] || why="$why step $s5: '$a' vs '$b';"
  done
  checksums_close "$LOG/ckpt-write4.log" "$LOG/ckpt-$r-continue.log"
  if [ -z "$why" ]; then result "ckpt-$r-same-run" 0 0 "$np ranks: steps 5-9 reward and KL as uninterrupted, checksums within $worst"
  else result "ckpt-$r-same-run" 1 0 "$why"; fi
done

# refused checkpoints: truncated, a flipped byte in a dataset, no complete flag; a deck of another shape
cp "$A5" "$CK/trunc.h5"; truncate -s $(( $(stat -c %s "$A5") / 2 )) "$CK/trunc.h5"
bad ckpt-restart-truncated 'trunc\.h5' bin/nereus tests/decks/restart.deck --restart "$CK/trunc.h5"
/usr/bin/python3 - "$A5" "$CK/flip.h5" "$CK/nocomplete.h5" "$CK/deckflip.h5" <<'PY' >"$LOG/ckpt-corrupt.log" 2>&1
import shutil, sys, h5py
src, flip, noc, deckflip = sys.argv[1:5]
shutil.copy(src, flip); shutil.copy(src, noc); shutil.copy(src, deckflip)
with h5py.File(src, "r") as f:
    off = f["models/actor/params/fcw"].id.get_offset()
    doff = f["meta/deck"].id.get_offset()
with open(flip, "r+b") as f:
    f.seek(off + 1000); b = f.read(1); f.seek(off + 1000); f.write(bytes([b[0] ^ 0x10]))
with open(deckflip, "r+b") as f:  # one letter of the stored deck text (raw data: no HDF5 checksum covers it)
    f.seek(doff + 40); b = f.read(1); f.seek(doff + 40); f.write(bytes([b[0] ^ 0x01]))
with h5py.File(noc, "r+") as f:
    del f["meta"].attrs["complete"]
PY
bad ckpt-restart-bitflip 'flip\.h5.*fcw' bin/nereus tests/decks/restart.deck --restart "$CK/flip.h5"
bad ckpt-restart-incomplete 'nocomplete\.h5.*complete' bin/nereus tests/decks/restart.deck --restart "$CK/nocomplete.h5"
bad ckpt-restart-deckflip 'deckflip\.h5: dataset deck: checksum mismatch' bin/nereus tests/decks/restart.deck --restart "$CK/deckflip.h5"
# a full disk (a tmpfs of 4 MiB, where one checkpoint of the restart deck fits and two do not; needs root to
# mount, skipped elsewhere): the run stops at the second with what it needs and what is free, exit 1 and
# verify.status fail; the first checkpoint stays whole and no .tmp is left. The trace on a full disk (48 KiB)
# only warns: the run goes on to pass, and the trace holds the steps flushed before
FULL=$LOG/ck-full; mkdir -p "$FULL"
if mount -t tmpfs -o size=4m tmpfs "$FULL" 2>/dev/null; then
  { cat tests/decks/restart.deck; printf '[ckpt]\nevery = 3\nkeep = 5\ndir = %s\n' "$FULL"; } > "$CK/full.deck"
  t0=$(date +%s.%N)
  timeout 120 $L -np 2 bin/nereus "$CK/full.deck" > "$LOG/ckpt-disk-full.log" 2>&1; rc=$?
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  if [ $rc = 1 ] && grep -qE '^nereus: error: checkpoint after step 5 failed: .*restart_step000006\.h5.*needs [0-9.]+ MiB; [0-9.]+ MiB free' "$LOG/ckpt-disk-full.log" &&
     [ "$(verify "$LOG/ckpt-disk-full.log" status)" = fail ] && [ "$(ls "$FULL")" = restart_step000003.h5 ] &&
     bin/nereus-ckpt verify "$FULL/restart_step000003.h5" >/dev/null 2>&1; then
    result ckpt-disk-full 0 "$secs" "stopped at step 6's checkpoint with the reason; step 3's whole, no .tmp"
  else result ckpt-disk-full 1 "$secs" "exit $rc; left: $(ls "$FULL" | tr '\n' ' ')"; fi
  umount "$FULL"
  mount -t tmpfs -o size=48k tmpfs "$FULL"
  { cat tests/decks/restart.deck; printf '[trace]\nfile = %s/t.h5\n' "$FULL"; } > "$CK/trace-full.deck"
  t0=$(date +%s.%N)
  timeout 120 $L -np 2 bin/nereus "$CK/trace-full.deck" > "$LOG/trace-disk-full.log" 2>&1; rc=$?
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  if [ $rc = 0 ] && [ "$(verify "$LOG/trace-disk-full.log" status)" = pass ] &&
     grep -q 'warning: trace: .*writing failed .*No space left on device.*the run goes on' "$LOG/trace-disk-full.log" &&
     bin/nereus-trace summary "$FULL/t.h5" 2>&1 | grep -q '^status: NOT complete'; then
    result trace-disk-full 0 "$secs" "warned (No space left on device), ran to pass; the trace opens, NOT complete"
  else result trace-disk-full 1 "$secs" "exit $rc"; fi
  umount "$FULL"
else
  result ckpt-disk-full 77 0 "cannot mount a tmpfs here (needs root)"
  result trace-disk-full 77 0 "cannot mount a tmpfs here (needs root)"
fi
sed 's/^n_embd = 64$/n_embd = 96/' tests/decks/restart.deck > "$CK/wide.deck"
bad ckpt-restart-shape 'n_embd.*64.*96|96.*64' bin/nereus "$CK/wide.deck" --restart "$A5"

# SIGKILL during a checkpoint write leaves the previous one, and restart = latest finds it
K=$CK/kill; mkdir -p "$K"
{ sed 's/^n_layer = 2$/n_layer = 8/; s/^n_embd = 64$/n_embd = 256/; s/^n_head = 4$/n_head = 8/; /^\[sft\]/,/^\[/ s/^steps = 40$/steps = 0/; /^\[ppo\]/,/^\[/ s/^steps = 10$/steps = 50/; s/^batch = 48$/batch = 4/; s/^minibatch = 12$/minibatch = 4/' tests/decks/restart.deck
  printf '[ckpt]\nevery = 1\nkeep = 3\ndir = %s\n' "$K"; } > "$K/kill.deck"
# (an LD_PRELOAD shim, tests/stall_rename.c, holds step 2's file as .tmp for 60 s: the kill lands inside the
# write every time)
NEREUS_STALL_RENAME=restart_step000002 LD_PRELOAD="$PWD/build/tests/libstall_rename.so" \
  $L -np 2 bin/nereus "$K/kill.deck" >"$LOG/ckpt-kill.log" 2>&1 &
kpid=$!
for i in $(seq 1 3000); do  # until the second checkpoint is being written
  [ -f "$K/restart_step000001.h5" ] && ls "$K"/restart_step000002.h5.tmp >/dev/null 2>&1 && break
  sleep 0.01
done
pkill -KILL -f "^bin/nereus $K/kill.deck"; wait $kpid 2>/dev/null
ls -la "$K" >>"$LOG/ckpt-kill.log" 2>&1
if [ -f "$K/restart_step000002.h5.tmp" ] && [ ! -f "$K/restart_step000002.h5" ] && bin/nereus-ckpt verify "$K/restart_step000001.h5" >>"$LOG/ckpt-kill.log" 2>&1; then
  result ckpt-sigkill-keeps-previous 0 0 "killed while writing step 2: step 1 intact and verified"
else result ckpt-sigkill-keeps-previous 1 0 "see $LOG/ckpt-kill.log"; fi
sed -i '/^\[ppo\]/,/^\[/ s/^steps = 50$/steps = 2/' "$K/kill.deck"
t ckpt-restart-latest 300 $L -np 2 bin/nereus "$K/kill.deck" --restart latest
grep -q "restart: $K/restart_step000001.h5" "$LOG/ckpt-restart-latest.log" && [ "$(verify "$LOG/ckpt-restart-latest.log" restart_step)" = 1 ] \
  && result ckpt-latest-found 0 0 "restart = latest took step 1" || result ckpt-latest-found 1 0 "did not restart from step 1"

# SIGTERM (Slurm's warning before the time limit) to every rank: checkpoint at the next step boundary, clean exit
S=$CK/term; mkdir -p "$S"
{ sed '/^\[ppo\]/,/^\[/ s/^steps = 10$/steps = 100000/' tests/decks/restart.deck; printf '[ckpt]\ndir = %s\n' "$S"; } > "$S/term.deck"
$L -np 2 bin/nereus "$S/term.deck" >"$LOG/ckpt-sigterm.log" 2>&1 &
tpid=$!
for i in $(seq 1 3000); do grep -q '^step *3 ' "$LOG/ckpt-sigterm.log" 2>/dev/null && break; sleep 0.01; done
pkill -TERM -f "^bin/nereus $S/term.deck"; wait $tpid; rc=$?
stopped=$(verify "$LOG/ckpt-sigterm.log" stopped_at_step)
f=$(ls "$S"/restart_step*.h5 2>/dev/null | head -1)
if [ $rc = 0 ] && grep -q 'stopped by signal 15 (SIGTERM)' "$LOG/ckpt-sigterm.log" && [ -n "$f" ] && bin/nereus-ckpt verify "$f" >/dev/null 2>&1; then
  result ckpt-sigterm 0 0 "exit 0 at step $stopped, checkpoint $(basename "$f") verified"
else result ckpt-sigterm 1 0 "exit $rc, stopped '$stopped', file '$f'"; fi

# a checkpoint directory that cannot be made is refused before the run computes anything (no trace, exit 2);
# a checkpoint that fails mid-run (a directory already where step 2's file goes) stops it as an error:
# exit 1, the cause on stderr and in verify.stopped, verify.finite still yes
B=$CK/blocked; mkdir -p "$B/ckpt/restart_step000002.h5"
{ sed '/^\[sft\]/,/^\[/ s/^steps = 40$/steps = 2/; /^\[ppo\]/,/^\[/ s/^steps = 10$/steps = 4/' tests/decks/restart.deck
  printf '[ckpt]\nevery = 1\ndir = %s\n' "$B/ckpt"; } > "$B/blocked.deck"
sed "s#^dir = .*#dir = $B/no/such/ckpt#" "$B/blocked.deck" > "$B/nodir.deck"
bad ckpt-dir-refused "blocked/nodir\.deck:[0-9]+: error: cannot create the checkpoint directory .*no/such/ckpt" \
  bin/nereus "$B/nodir.deck"
$L -np 1 bin/nereus "$B/blocked.deck" >"$LOG/ckpt-fails-midrun.log" 2>"$LOG/ckpt-fails-midrun.err"; rc=$?
why=$(verify "$LOG/ckpt-fails-midrun.log" stopped)
if [ $rc = 1 ] && grep -q '^nereus: error: checkpoint after step 1 failed' "$LOG/ckpt-fails-midrun.err" && \
   [ -f "$B/ckpt/restart_step000001.h5" ] && [ "$(verify "$LOG/ckpt-fails-midrun.log" finite)" = yes ] && \
   [ "$(verify "$LOG/ckpt-fails-midrun.log" status)" = fail ] && [ -n "$why" ]; then
  result ckpt-fails-midrun 0 0 "exit 1 after step 1's checkpoint, verify.stopped: ${why:0:60}"
else result ckpt-fails-midrun 1 0 "exit $rc, stopped '$why' (see $LOG/ckpt-fails-midrun.*)"; fi

# another run's checkpoint of the same name and a later step in [ckpt] dir: a warning, it stays, and keep = 1
# keeps this run's newest (until 2026-12-04 the later step counted as the newest and each new one was deleted)
R=$CK/stale; mkdir -p "$R/ckpt"; echo "another run's" > "$R/ckpt/restart_step000100.h5"
sed "s#^dir = .*#dir = $R/ckpt\nkeep = 1#" "$B/blocked.deck" > "$R/stale.deck"
$L -np 1 bin/nereus "$R/stale.deck" >"$LOG/ckpt-stale-later.log" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q "already holds restart_step000100.h5" "$LOG/ckpt-stale-later.log" && \
   [ "$(ls "$R/ckpt" | tr '\n' ' ')" = "restart_step000004.h5 restart_step000100.h5 " ]; then
  result ckpt-stale-later-step 0 0 "warned; kept this run's step 4 and the other run's step 100"
else result ckpt-stale-later-step 1 0 "exit $rc, files: $(ls "$R/ckpt" | tr '\n' ' ')"; fi

# [trace] file naming the very checkpoint a run restarts from: refused, the checkpoint intact (until 2026-12-04 the
# trace truncated it once the restart had read it)
cp "$R/ckpt/restart_step000004.h5" "$R/keep.h5"
{ cat "$R/stale.deck"; printf '[trace]\nfile = %s\n' "$R/keep.h5"; } > "$R/trace_on_ckpt.deck"
bad trace-not-over-checkpoint 'cannot create the trace .*keep\.h5: the file exists and is not a Nereus trace' \
  bin/nereus "$R/trace_on_ckpt.deck" --restart "$R/keep.h5"
if bin/nereus-ckpt verify "$R/keep.h5" >"$LOG/trace-not-over-checkpoint-verify.log" 2>&1; then
  result trace-not-over-checkpoint-intact 0 0 "the checkpoint still verifies"
else result trace-not-over-checkpoint-intact 1 0 "$(tail -1 "$LOG/trace-not-over-checkpoint-verify.log")"; fi

echo "== transitions: the engine over MPI, a mid-run switch, refusals"
# 250 random transitions on 4 ranks and 250 on 8 (AdamW state, copies, tight budgets): bit-identical, minimal bytes
for n in 4 8; do
  t "transition-property-$n" 300 $L -np $n build/tests/test_transition 250
  note=$(grep -m1 'random transitions' "$LOG/transition-property-$n.log" | sed 's/^ok *//; s/^FAIL *//')
  [ -n "$note" ] && echo "      $note"
done
# a run that switches plan before step 5 against a restart from the same step-5 checkpoint under the new plan
T=$CK/switch; mkdir -p "$T"
P_OLD='actor.gen = tp2 dp2 @0-3\nactor.inf = dp4 @all\nref.inf = tp2 @2-3\ncritic.inf = dp2 @0-1\nactor.train = tp2 dp2 @0-3\ncritic.train = pp2 dp2 @0-3\nreward.inf = @0'
P_NEW='actor.gen = dp4 @ 3,2,1,0\nactor.inf = tp4 @ 0-3\nref.inf = dp2 @ 0-1\ncritic.inf = pp2 @ 2-3\nactor.train = tp2 pp2 @ 1,0,3,2\ncritic.train = dp4 @ 0-3\nreward.inf = @ 3'
{ cat tests/decks/restart.deck; printf "[ckpt]\nevery = 5\nkeep = 5\ndir = $T/a\n[plan]\n$P_OLD\n[switch]\nstep = 5\n$P_NEW\n[transition]\nverify = true\n"; } > "$T/switch.deck"
t switch-run 300 $L -np 4 bin/nereus "$T/switch.deck"
{ cat tests/decks/restart.deck; printf "[ckpt]\nevery = 5\nkeep = 5\ndir = $T/b\n[run]\nrestart = $T/a/restart_step000005.h5\n[plan]\n$P_NEW\n"; } > "$T/new.deck"
t switch-new-plan-run 300 $L -np 4 bin/nereus "$T/new.deck"
why=""
[ "$(verify "$LOG/switch-run.log" transitions)" = 1 ] || why="$why no transition;"
grep -q 'per-tensor checks passed' "$LOG/switch-run.log" || why="$why checks did not run;"
checksums_close "$LOG/switch-new-plan-run.log" "$LOG/switch-run.log"
mv_=$(sed -n 's/^transition: .* moved \([0-9.]*\) MiB (minimum \([0-9.]*\) MiB).*/\1 \2/p' "$LOG/switch-run.log")
[ -n "$mv_" ] && [ "$(echo $mv_ | awk '{print ($1 == $2)}')" = 1 ] || why="$why bytes '$mv_';"
# the measured peak memory (backend bytes, the largest rank) within the DAG's plan (a move holds state, not whole shards)
pk_=$(sed -n 's/^transition: .* peak memory \([0-9.]*\) MiB per rank (planned \([0-9.]*\);.*/\1 \2/p' "$LOG/switch-run.log")
[ -n "$pk_" ] && [ "$(echo $pk_ | awk '{print ($1 <= $2 + 0.05)}')" = 1 ] || why="$why peak memory over the plan '$pk_';"
if [ -z "$why" ]; then result switch-equals-new-plan 0 0 "checksums within $worst of the new plan from the same checkpoint; moved = minimum ($mv_ MiB); peak within the plan ($pk_ MiB)"
else result switch-equals-new-plan 1 0 "$why"; fi
# the same run with models moved whole 1,000 floats at a time (NEREUS_JOB_WINDOW: the start-up copy, the
# per-tensor checks, the checksums) and the broadcast weight-sync baseline instead of the engine: the same
# weights, so the same tokens and checksums to the last digit
sed 's/^verify = true$/verify = true\nsync = broadcast/' "$T/switch.deck" | sed "s#^dir = $T/a#dir = $T/w#" > "$T/windows.deck"
t switch-windows-run 300 env NEREUS_JOB_WINDOW=1000 $L -np 4 bin/nereus "$T/windows.deck"
why=""
for k in tokens_hash checksum.actor checksum.ref checksum.critic status; do
  [ "$(verify "$LOG/switch-run.log" $k)" = "$(verify "$LOG/switch-windows-run.log" $k)" ] || why="$why $k differs;"
done
grep -q 'per-tensor checks passed' "$LOG/switch-windows-run.log" || why="$why checks did not run;"
grep -q 'weight sync (broadcast)' "$LOG/switch-windows-run.log" || why="$why no broadcast sync reported;"
if [ -z "$why" ]; then result switch-windows-broadcast 0 0 "1,000-float windows and broadcast sync: tokens and checksums identical"
else result switch-windows-broadcast 1 0 "$why"; fi
# random valid decks (tests/test_plan_fuzz.py, a fixed seed): a random plan, a switch to another, random
# [transition] settings and assembly windows; 24 on 4 ranks and 8 on 8, each must pass with its transition checked
t plan-fuzz-4 300 /usr/bin/python3 tests/test_plan_fuzz.py 24 "$LOG/planfuzz4" 20261205 4
t plan-fuzz-8 300 /usr/bin/python3 tests/test_plan_fuzz.py 8 "$LOG/planfuzz8" 20261206 8
for n in 4 8; do grep -E '^(FAIL|plan fuzz:)' "$LOG/plan-fuzz-$n.log" | sed 's/^/      /'; done
# a scale-out (actor.train and critic.train from one rank each to dp4): with forwarding (the default) some
# replicas get their shard from another new replica; without, all from the one holder; the same run either way
P_ONE='actor.gen = tp2 dp2 @0-3\nactor.inf = dp4 @all\nref.inf = tp2 @2-3\ncritic.inf = dp2 @0-1\nactor.train = @0\ncritic.train = @1\nreward.inf = @0'
P_OUT='actor.gen = dp4 @ 3,2,1,0\nactor.inf = tp4 @ 0-3\nref.inf = dp2 @ 0-1\ncritic.inf = pp2 @ 2-3\nactor.train = dp4 @ 0-3\ncritic.train = dp4 @ 0-3\nreward.inf = @ 3'
for fw in true false; do
  { cat tests/decks/restart.deck; printf "[plan]\n$P_ONE\n[switch]\nstep = 3\n$P_OUT\n[transition]\nverify = true\nforward = $fw\n"; } > "$T/scaleout-$fw.deck"
  sed -i '/^\[ppo\]/,/^\[/ s/^steps = 10$/steps = 6/' "$T/scaleout-$fw.deck"
  t switch-scaleout-forward-$fw 300 $L -np 4 bin/nereus "$T/scaleout-$fw.deck"
done
a_=$LOG/switch-scaleout-forward-true.log; b_=$LOG/switch-scaleout-forward-false.log
fwd=$(sed -n 's/^transition: .*; \([0-9.]*\) MiB of it forwarded.*/\1/p' "$a_")
same=1
for k in tokens_hash checksum.actor checksum.critic checksum.ref status; do [ "$(verify "$a_" $k)" = "$(verify "$b_" $k)" ] || same=0; done
if [ -n "$fwd" ] && ! grep -q 'forwarded' "$b_" && [ $same = 1 ] && [ "$(verify "$a_" status)" = pass ] && \
   [ "$(grep -c 'per-tensor checks passed' "$a_")" -ge 1 ]; then
  result switch-scaleout-forwarding 0 0 "$fwd MiB forwarded; tokens and checksums identical to the run without forwarding"
else result switch-scaleout-forwarding 1 0 "forwarded '$fwd' MiB, identical $same"; fi
# an infeasible plan (tp3 does not divide 4 heads) and a budget no schedule fits: refused, run continues on the old plan
{ cat tests/decks/restart.deck; printf "[plan]\n$P_OLD\n[switch]\nstep = 2\nactor.gen = tp3 @ 0-2\nactor.inf = dp4 @all\nref.inf = tp2 @2-3\ncritic.inf = dp2 @0-1\nactor.train = tp2 dp2 @0-3\ncritic.train = pp2 dp2 @0-3\nreward.inf = @0\n"; } > "$T/infeasible.deck"
sed -i '/^\[ppo\]/,/^\[/ s/^steps = 10$/steps = 4/' "$T/infeasible.deck"
t switch-infeasible-run 300 $L -np 4 bin/nereus "$T/infeasible.deck"
{ cat tests/decks/restart.deck; printf "[plan]\n$P_OLD\n[switch]\nstep = 2\n$P_NEW\n[transition]\nmemory_mib = 12\n"; } > "$T/budget.deck"
sed -i '/^\[ppo\]/,/^\[/ s/^steps = 10$/steps = 4/' "$T/budget.deck"
t switch-budget-run 300 $L -np 4 bin/nereus "$T/budget.deck"
for k in infeasible budget; do
  f=$LOG/switch-$k-run.log
  re='refused: \[switch\] actor.gen: tp = 3 does not divide'; [ $k = budget ] && re='refused: memory budget 12\.0 MiB too small'
  if grep -qE "switch before step 2 $re" "$f" && grep -q 'continuing on the current plan' "$f" && \
     [ "$(verify "$f" transitions)" = 0 ] && [ "$(verify "$f" ppo_steps)" = 4 ] && [ "$(verify "$f" status)" = pass ]; then
    result "switch-$k-refused" 0 0 "$(grep -m1 -o 'refused: .*' "$f" | cut -c1-110)"
  else result "switch-$k-refused" 1 0 "no refusal line, or the run did not continue"; fi
done

echo "== live planner: an injected pool change and slowdown, the planner's moves"
# rank 3 leaves before step 4 and joins before step 8: the plan taken before step 4 holds nothing on rank 3
t planner-pool-run 300 $L -np 4 bin/nereus tests/decks/pool.deck
f=$LOG/planner-pool-run.log
on3=$(sed -n '/^planner: before step 4: plan [0-9]* -> [0-9]*:/,/^transition:/p' "$f" | stage_ranks | awk '$2 == 3 {print $1}' | sort -u)
if grep -q '^planner: before step 4: replan — pool 3 rank(s)' "$f" && grep -q '^planner: before step 8: replan — pool 4 rank(s)' "$f" && \
   [ -z "$on3" ] && [ "$(verify "$f" transitions)" -ge 2 ] && [ "$(verify "$f" status)" = pass ] && grep -q 'per-tensor checks passed' "$f"; then
  back=$(awk '/^planner: before step 8: plan [0-9]+ -> [0-9]+:/{p=1;next} p&&/^transition:/{if (match($0, /communicators: [^;]*/)) print substr($0, RSTART, RLENGTH); exit}' "$f")
  result planner-pool-follows 0 0 "urgent replans at steps 4 (rank 3 out: nothing left on it) and 8 (back: ${back:-no transition}); $(verify "$f" transitions) transitions, checked"
else result planner-pool-follows 1 0 "no urgent replan, or a model-stage left on rank 3: '$on3'"; fi
# the ranks holding a model-stage in the plan in force at step N of log F: the last plan printed before it
# (read backwards up to its heading); no reward network in these decks, so reward.inf holds none
held_at() {
  sed "/^step  *$1 |/q" "$2" | tac | sed '/^plan:$/q; /^planner: before step [0-9]*: plan [0-9]* -> [0-9]*:$/q' | stage_ranks |
    awk '$1 != "reward.inf" {print $2}' | sort -nu | tr '\n' ' '
}
# rank 1 does 4x its work from step 4: the planner measures it and replans. The initial placement (before
# step 2, timed) can leave rank 1 without a model-stage (2 of 20 runs beside a spinning process, 2026-12-05):
# its slowdown is then read from its idle probe (counters_probe), and must be detected all the same
t planner-slow-run 300 $L -np 4 bin/nereus tests/decks/slow.deck
f=$LOG/planner-slow-run.log
held=$(held_at 4 "$f")
how="rank 1 working (plan on ranks ${held% })"
echo " $held" | grep -q ' 1 ' || how="rank 1 idle, read from its probe (plan on ranks ${held% })"
if [ "$(verify "$f" status)" != pass ]; then result planner-slow-detected 1 0 "the run did not pass (log: $f)"
elif grep -qE '^planner: before step [5-7]: replan — rank 1 at 0\.[0-4][0-9] of its speed' "$f"; then
  result planner-slow-detected 0 0 "$how: $(grep -m1 -oE 'before step [0-9]+: replan — rank 1 at [0-9.]+ of its speed' "$f")"
else result planner-slow-detected 1 0 "$how: the injected 4x slowdown of rank 1 was not detected by step 7"; fi
# the same with slow_ranks = busiest: the run names the rank it slows (the one holding the most model-stages at
# step 4), until step 9; then its recovery must be seen by step 11, whether the planner has emptied it by then
# (its idle probe) or not (its model-stages)
t planner-slow-busiest-run 300 $L -np 4 bin/nereus tests/decks/slow_busiest.deck
f=$LOG/planner-slow-busiest-run.log
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
# policy = sweep with controls: 6 plans (2 calibrate, 4 held out), plan 0 run again after every 2 held-out ones
t planner-sweep-run 300 $L -np 4 bin/nereus tests/decks/sweep.deck
f=$LOG/planner-sweep-run.log
nctl=$(grep -c '^planner: sweep: control [12] (plan 0 again, after [24] held-out plan(s)): ' "$f")
if [ "$(verify "$f" status)" = pass ] && [ "$nctl" = 2 ] && [ "$(sed -n 's/^sweep\.heldout: //p' "$f")" = 4 ] \
   && grep -qE '^sweep\.mape_pct: [0-9.]+$' "$f" && grep -qE '^sweep\.mape_speed_corrected_pct: [0-9.]+$' "$f" \
   && grep -qE '^sweep\.chosen_gap_again_pct: -?[0-9.]+$' "$f" && grep -qE '^sweep\.mape_floor_pct: [0-9.]+$' "$f" \
   && grep -qE '^sweep\.rms_pct: [0-9.]+$' "$f" && grep -qE '^sweep\.model_rms_est_pct: [0-9.]+$' "$f"; then
  result planner-sweep 0 0 "4 held out, 2 controls: $(sed -n 's/^sweep\.mape_pct: /MAPE /p' "$f")%, $(sed -n 's/^sweep\.mape_speed_corrected_pct: /speed-corrected /p' "$f")%"
else result planner-sweep 1 0 "the sweep's report lacks its lines (held out, 2 controls, MAPE, corrected MAPE, gap): see $f"; fi
# build/bench/sweep_refit on a stored sweep (tests/bench/dumps/): this build's model refitted on its measurements;
# a file that is not a dump is refused
sr=$LOG/sweep-refit.log
build/bench/sweep_refit tests/bench/dumps/sweep8-wide-1245.txt > "$sr" 2>&1; rc=$?
build/bench/sweep_refit tests/decks/sweep.deck >>"$sr" 2>&1; rc2=$?
if [ $rc = 0 ] && grep -qE '^refit: 10 calibration plan\(s\), 30 held out, 1 round\(s\): MAPE [0-9.]+%' "$sr" \
   && grep -qE '^refit: 6 control\(s\)' "$sr" && grep -qE "model's own about [0-9.]+% RMS" "$sr" && [ $rc2 != 0 ] \
   && grep -q 'is not a complete NEREUS_SWEEP_DUMP' "$sr"; then
  result sweep-refit 0 0 "$(sed -n 's/^refit: 10 calibration.*: \(MAPE [0-9.]*%\).*/stored sweep8-wide-1245: \1/p' "$sr"); a deck refused"
else result sweep-refit 1 0 "see $sr (exit $rc, $rc2)"; fi
# tools/window-noise: 20 steps alternating 1.0 and 1.2 s after 2 skipped; windows of 3 keep 2 steps, mean 1.1
# each (floor 0%); windows of 2 keep their second step, always 1.2 (|1.1 - 1.2| / 1.2 = 8.33%); its bad inputs
wn=$LOG/window-noise.log
{ for i in $(seq 0 21); do v=1.0; [ $(( i % 2 )) = 1 ] && v=1.2
    printf 'step %4d | reward 0.1 | len 12.00 | %ss: gen 0.1s inf 0.1s train 0.1s sync 0.0s | 9 tok/s\n' $i $v; done; } > "$LOG/wn.log"
tools/window-noise "$LOG/wn.log" > "$wn" 2>&1; rc=$?
tools/window-noise "$LOG/wn.log" x >>"$wn" 2>&1; rc2=$?
tools/window-noise "$LOG/no-such.log" >>"$wn" 2>&1; rc3=$?
if [ $rc = 0 ] && grep -qE '^3 steps +6 +0\.00$' "$wn" && grep -qE '^2 steps +10 +8\.33$' "$wn" && [ $rc2 = 2 ] && [ $rc3 = 1 ] \
   && grep -q "cannot read $LOG/no-such.log" "$wn"; then result window-noise 0 0 "by hand: windows of 3 at 0%, of 2 at 8.33%; bad inputs exit 2 and 1"
else result window-noise 1 0 "see $wn (exit $rc, $rc2, $rc3)"; fi

# tools/spot-trace: the stored spot-like traces are what it draws (same seed), the pool never falls below the
# --max-out share, and a bad command line exits 2
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

echo "== simulator (bin/nereus --simulate: MODELLED clusters, every policy)"
t sim-growth-64 120 bin/nereus --simulate inputs/sim/growth-64.deck
f=$LOG/sim-growth-64.log
pb=$(simv "$f" payback.mean_step_s); st=$(simv "$f" static.mean_step_s); aa=$(simv "$f" admit-all.mean_step_s)
if [ "$(verify "$f" status)" = pass ] && [ -n "$pb" ] && awk -v p="$pb" -v s="$st" -v a="$aa" 'BEGIN{exit !(p < s && p < a)}'; then
  result sim-payback-wins 0 0 "64 GPUs: payback $pb s/step, static $st, admit-all $aa"
else result sim-payback-wins 1 0 "payback '$pb' static '$st' admit-all '$aa'"; fi
# growth-16: no colocated plan that holds the run's longest responses (8,000 tokens) fits the 14 GPUs left at
# step 300, so the verl-like baseline cannot run the trace (a result, reported, with what does not fit); the
# best static plan is a disaggregated one there (found since 2026-12-05), and the adaptive policies, which plan
# for the lengths before their next replan, run and beat it
t sim-growth-16 120 bin/nereus --simulate inputs/sim/growth-16.deck
f=$LOG/sim-growth-16.log
if [ "$(verify "$f" status)" = pass ] && grep -q '^verl  *failed: verl: no plan fits the 14-rank pool at step 300: .*need' "$f" && \
   [ "$(simv "$f" static.failed)" = 0 ] && [ "$(simv "$f" payback.failed)" = 0 ] && \
   [ "$(verify "$f" sim_policies_failed)" = 1 ] && \
   awk -v p="$(simv "$f" payback.mean_step_s)" -v s="$(simv "$f" static.mean_step_s)" 'BEGIN{exit !(p < s)}'; then
  result sim-fixed-must-fit 0 0 "16 GPUs: verl-like cannot hold 8,000-token responses on the 14 left at step 300; static (disaggregated) and payback run, payback $(simv "$f" payback.mean_step_s) s < static $(simv "$f" static.mean_step_s) s"
else result sim-fixed-must-fit 1 0 "see $f"; fi
# SYNTHETIC spot-like capacity (tools/spot-trace): payback keeps up with admit-every-gain through 24 moves (a
# pool change takes any faster plan; urgent ones any plan); a fixed baseline must hold the longest responses
# (the static plan for the first step's lengths ran out of memory at step 698)
t sim-spot-64 120 bin/nereus --simulate inputs/sim/spot-64.deck
f=$LOG/sim-spot-64.log
pb=$(simv "$f" payback.mean_step_s); st=$(simv "$f" static.mean_step_s); aa=$(simv "$f" admit-all.mean_step_s)
if [ "$(verify "$f" status)" = pass ] && [ -n "$pb" ] && [ -n "$st" ] && \
   awk -v p="$pb" -v s="$st" -v a="$aa" 'BEGIN{exit !(p < s && p <= a * 1.001)}'; then
  result sim-spot-payback 0 0 "64 GPUs, spot-like: payback $pb s/step, static $st, admit-all $aa (within 0.1%)"
else result sim-spot-payback 1 0 "payback '$pb' static '$st' admit-all '$aa'"; fi
# memory nearly full, responses shrinking, the pool halved (tests/decks/sim_ok/shrink_tight.deck says what it found)
t sim-shrink-tight 120 bin/nereus --simulate tests/decks/sim_ok/shrink_tight.deck
f=$LOG/sim-shrink-tight.log
pb=$(simv "$f" payback.mean_step_s); st=$(simv "$f" static.mean_step_s)
nf=$(grep -cE '^sim\.(admit-all|every-k|payback)\.failed: 0$' "$f")
if [ "$(verify "$f" status)" = pass ] && [ "$nf" = 3 ] && [ -n "$pb" ] && [ -n "$st" ] && \
   awk -v p="$pb" -v s="$st" 'BEGIN{exit !(p <= s * 1.02)}'; then
  result sim-shrink-tight-adaptive 0 0 "24 GPUs, 12 left at step 47: every adaptive policy ran; payback $pb s/step, static $st"
else result sim-shrink-tight-adaptive 1 0 "$nf of 3 adaptive policies ran; payback '$pb' static '$st' (want within 2%)"; fi
for f in tests/decks/sim/*.deck; do
  re=$(sed -n 's/^# expect: //p' "$f" | head -1 | tr -d '\r')
  bad "sim-$(basename "$f" .deck)" "$re" bin/nereus --simulate "$f"
done
# 40 random valid simulator decks (tests/test_sim_fuzz.py, a fixed seed): each runs, runs until the cluster is
# outgrown (exit 1, the reason on stderr) or is refused up front (exit 2); the adaptive policies never fail where
# a fixed plan ran
t sim-fuzz 300 /usr/bin/python3 tests/test_sim_fuzz.py 40 "$LOG/simfuzz"
grep -E '^(FAIL|sim fuzz:)' "$LOG/sim-fuzz.log" | sed 's/^/      /'
# an availability trace of 4,095 changes (one more than fits beside the slowdown's two events)
{ echo "0 64"; for i in $(seq 1 4095); do echo "$i $((64 - (i % 2) * 8))"; done; } > "$T/avail-many.txt"
sed "s#^availability = .*#availability = $T/avail-many.txt#" inputs/sim/growth-64.deck > "$T/avail-many.deck"
bad sim-avail-too-many 'more than 4094 changes' bin/nereus --simulate "$T/avail-many.deck"
bad sim-needs-sim-deck 'needs a simulation deck' bin/nereus --simulate inputs/tiny.deck
bad sim-deck-needs-flag 'a simulation deck.*--simulate' bin/nereus inputs/sim/growth-16.deck

echo "== traces: the HDF5 trace of a 4-rank run with a switch, nereus-trace, plot-trace, truncated and killed traces"
t traces 600 tests/test_trace.sh
grep -E '^FAIL|trace checks passed' "$LOG/traces.log" | sed 's/^/      /' | cut -c1-200
# errors the trace finds after the deck parsed: too many PAPI events, a trace file that cannot be created
for k in events file; do
  f=tests/decks/trace_bad_$k.deck
  bad "trace-deck-$k" "$(sed -n 's/^# expect: //p' "$f" | head -1)" bin/nereus "$f"
done

echo "== summary"
for f in "${failed[@]}"; do echo "failed: $f"; done
if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" = 0 ]

# ===== BEGIN wt-run block: command-line overrides (--set), end to end =====
# (for the lead to merge before "== summary"; uses t, bad and verify above)
echo "== command-line overrides: bin/nereus DECK --set section.key=value"
# an override replaces the deck's value: the resolved deck says it came from the command line, the run
# follows it (2 SFT and 3 PPO steps instead of the deck's 40 and 40), and --restart is named as such
t set-overrides 300 jobs/local.sh -np 2 bin/nereus tests/decks/short.deck --set ppo.steps=3 --set "sft.steps = 2"
f=$LOG/set-overrides.log
if grep -qE '^steps = 3 +# command line \(--set\)$' "$f" && grep -qE '^steps = 2 +# command line \(--set\)$' "$f" && \
   grep -qE '^seed = 1234 +# line [0-9]+$' "$f" && [ "$(verify "$f" ppo_steps)" = 3 ] && \
   [ "$(verify "$f" sft_steps)" = 2 ] && [ "$(verify "$f" status)" = pass ]; then
  result set-overrides-used 0 0 "resolved deck: ppo.steps and sft.steps from --set; verify.ppo_steps 3, sft_steps 2"
else result set-overrides-used 1 0 "the overrides are not marked or not followed (log: $f)"; fi
bad set-restart-named '^--restart no/such\.h5: error: cannot restart: .*no/such\.h5' \
  jobs/local.sh -np 2 bin/nereus tests/decks/short.deck --restart no/such.h5
if grep -qE '^restart = "no/such\.h5" +# command line \(--restart\)$' "$LOG/set-restart-named.out"; then
  result set-restart-from-command-line 0 0 "the resolved deck names --restart as the source"
else result set-restart-from-command-line 1 0 "no '# command line (--restart)' mark (log: $LOG/set-restart-named.out)"; fi
# bad overrides stop every rank with exit 2 and the deck parser's message, naming the argument
bad set-unknown-key "^--set ppo\.stepz=3: error: unknown key \[ppo\] stepz$" \
  jobs/local.sh -np 2 bin/nereus tests/decks/short.deck --set ppo.stepz=3
if grep -q "^--set ppo\.stepz=3: note: did you mean 'ppo\.steps'?$" "$LOG/set-unknown-key.log"; then
  result set-unknown-key-note 0 0; else result set-unknown-key-note 1 0 "no nearest-key note"; fi
bad set-bad-value "^--set ppo\.steps=3x: error: \[ppo\] steps = 3x is not an integer: unexpected 'x' after 3" \
  jobs/local.sh -np 2 bin/nereus tests/decks/short.deck --set ppo.steps=3x
bad set-out-of-range '^--set ppo\.clip=0: error: \[ppo\] clip = 0 is out of range' \
  jobs/local.sh -np 2 bin/nereus tests/decks/short.deck --set ppo.clip=0
bad set-no-equals '^--set ppo\.steps: error: expected section\.key=value' \
  jobs/local.sh -np 2 bin/nereus tests/decks/short.deck --set ppo.steps
bad set-no-argument '^nereus: --set needs section\.key=value' bin/nereus tests/decks/short.deck --set
# ===== END wt-run block =====
