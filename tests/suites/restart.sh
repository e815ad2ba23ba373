# tests/suites/restart.sh — checkpoints: the module and bin/nereus-ckpt; a checkpoint written on 4 ranks restarted under other plans on 1, 2, 3, 6 and 8 ranks (bit-identical, the same run); damaged checkpoints refused; a full disk, SIGKILL, SIGTERM, a failing checkpoint directory; [model] init_from from an imported file on 1 and 2 ranks, a mismatch refused
section "checkpoints: the module and bin/nereus-ckpt"
# written under one plan on 4 ranks, read back under others bit-identical; corrupt files refused
t ckpt-module 300 $L -np 4 build/tests/test_ckpt
# llm.c import/export byte for byte, info/verify on good and corrupted files, loss, h5dump
t ckpt-tool 120 tests/test_ckpt_tool.sh
# Hugging Face directories in and out against files transformers wrote (tests/hf)
t hf-interchange 120 tests/test_hf.sh
section "checkpoints: write on 4 ranks, restart under other plans on 1, 2, 3, 6 and 8 ranks"
CK=$LOG/ck; mkdir -p "$CK"
# mkdeck OUT DIR PLAN [EXTRA]: the restart deck with [ckpt] dir, a [plan] and extra lines
mkdeck() {
  { cat tests/decks/restart.deck; printf '%b\n' "${4:-}"; printf '[ckpt]\nevery = 5\nkeep = 5\ndir = %s\n' "$2"
    echo "[plan]"; echo "$3" | tr ';' '\n' | sed 's/^ *//'; } > "$1"
}
plan_of() { sed -n "s/^$1 *| *[0-9]* *| //p" tests/restart_plans.txt; }
np_of() { sed -n "s/^$1 *| *\([0-9]*\) *|.*/\1/p" tests/restart_plans.txt; }
RESTARTS="r1 r2 r3 r6-mixed r8-tp2pp2"
# what restarts from the run's checkpoints or compares with it
on_write4="ckpt-files ckpt-hash-matches-run ckpt-restart-truncated ckpt-restart-bitflip ckpt-restart-incomplete
           ckpt-restart-deckflip ckpt-restart-shape"
for r in $RESTARTS; do on_write4="$on_write4 ckpt-$r-reload ckpt-$r-identical ckpt-$r-hash ckpt-$r-continue ckpt-$r-same-run"; done
feeds ckpt-write4 $on_write4
mkdeck "$CK/write4.deck" "$CK/write4" "$(plan_of write4)"
t ckpt-write4 300 $L -np 4 bin/nereus "$CK/write4.deck"
A5=$CK/write4/restart_step000005.h5; A10=$CK/write4/restart_step000010.h5
if want ckpt-files; then
  if [ -f "$A5" ] && [ -f "$A10" ] && bin/nereus-ckpt verify "$A5" >"$LOG/ckpt-verify.log" 2>&1; then result ckpt-files 0 0 "step 5 and 10 written, verify passes"
  else result ckpt-files 1 0 "missing or unsound: $(ls "$CK/write4" 2>&1 | tr '\n' ' ')"; fi
fi
# the run's final weights are its step-10 checkpoint's: verify.hash.NAME (from the 4 ranks' owned shards) equals
# `nereus-ckpt info`'s params hash (from the file's stored checksums) for every model
if want ckpt-hash-matches-run; then
  bin/nereus-ckpt info "$A10" >"$LOG/ckpt-info-hash.log" 2>&1
  why=""; hashes_match "$LOG/ckpt-write4.log" "$LOG/ckpt-info-hash.log"
  if [ -z "$why" ]; then result ckpt-hash-matches-run 0 0 "verify.hash.{actor,ref,critic} = nereus-ckpt info's params hashes of the step-10 file"
  else result ckpt-hash-matches-run 1 0 "$why"; fi
fi
[ ! -f "$A5" ] || bin/nereus-ckpt info "$A5" >"$LOG/ckpt-info-a5.log" 2>&1
for r in $RESTARTS; do
  np=$(np_of $r); plan=$(plan_of $r)
  # (a) restart and write again at once: params and AdamW state bit-identical to what was written
  feeds "ckpt-$r-reload" "ckpt-$r-identical" "ckpt-$r-hash"
  if want "ckpt-$r-reload" "ckpt-$r-identical" "ckpt-$r-hash"; then
    mkdeck "$CK/$r-same.deck" "$CK/$r-same" "$plan" "[run]\nrestart = $A5"
    deck_steps "$CK/$r-same.deck" 5
    t "ckpt-$r-reload" 300 $L -np "$np" bin/nereus "$CK/$r-same.deck"
  fi
  if want "ckpt-$r-identical"; then
    if h5diff "$A5" "$CK/$r-same/restart_step000005.h5" /models /models >"$LOG/ckpt-$r-h5diff.log" 2>&1; then
      result "ckpt-$r-identical" 0 0 "$np ranks: every parameter and AdamW moment bit-identical (h5diff /models)"
    else result "ckpt-$r-identical" 1 0 "h5diff /models differs: $(head -c 300 "$LOG/ckpt-$r-h5diff.log")"; fi
  fi
  # the same weights under this layout: the same fingerprints as the step-5 file's
  if want "ckpt-$r-hash"; then
    why=""; hashes_match "$LOG/ckpt-$r-reload.log" "$LOG/ckpt-info-a5.log"
    if [ -z "$why" ]; then result "ckpt-$r-hash" 0 0 "$np ranks: verify.hash of the reloaded models = the step-5 file's"
    else result "ckpt-$r-hash" 1 0 "$why"; fi
  fi
  # (b) restart and run steps 5-9: the same as the uninterrupted run
  feeds "ckpt-$r-continue" "ckpt-$r-same-run"
  if runs "ckpt-$r-continue"; then
    mkdeck "$CK/$r-cont.deck" "$CK/$r-cont" "$plan" "[run]\nrestart = $A5"
    t "ckpt-$r-continue" 300 $L -np "$np" bin/nereus "$CK/$r-cont.deck"
  fi
  if want "ckpt-$r-same-run"; then
    why=""
    for s5 in 5 6 7 8 9; do
      a=$(grep "^step *$s5 |" "$LOG/ckpt-write4.log" | cut -d'|' -f2,3); b=$(grep "^step *$s5 |" "$LOG/ckpt-$r-continue.log" | cut -d'|' -f2,3)
      [ -n "$a" ] && [ "$a" = "$b" ] || why="$why step $s5: '$a' vs '$b';"
    done
    checksums_close "$LOG/ckpt-write4.log" "$LOG/ckpt-$r-continue.log"
    if [ -z "$why" ]; then result "ckpt-$r-same-run" 0 0 "$np ranks: steps 5-9 reward and KL as uninterrupted, checksums within $worst"
    else result "ckpt-$r-same-run" 1 0 "$why"; fi
  fi
done

# refused checkpoints: truncated, a flipped byte in a dataset, no complete flag; a deck of another shape
if want ckpt-restart-truncated; then
  cp "$A5" "$CK/trunc.h5"; truncate -s $(( $(stat -c %s "$A5") / 2 )) "$CK/trunc.h5"
  bad ckpt-restart-truncated 'trunc\.h5' bin/nereus tests/decks/restart.deck --restart "$CK/trunc.h5"
fi
if want ckpt-restart-bitflip ckpt-restart-incomplete ckpt-restart-deckflip; then
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
fi
# a full disk (a tmpfs of 4 MiB, where one checkpoint of the restart deck fits and two do not; needs root to
# mount, skipped elsewhere): the run stops at the second with what it needs and what is free, exit 1 and
# verify.status fail; the first checkpoint stays whole and no .tmp is left. The trace on a full disk (48 KiB)
# only warns: the run goes on to pass, and the trace holds the steps flushed before
FULL=$LOG/ck-full; mkdir -p "$FULL"
if ! want ckpt-disk-full trace-disk-full; then :
elif mount -t tmpfs -o size=4m tmpfs "$FULL" 2>/dev/null; then
  if want ckpt-disk-full; then
    { cat tests/decks/restart.deck; printf '[ckpt]\nevery = 3\nkeep = 5\ndir = %s\n' "$FULL"; } > "$CK/full.deck"
    timed secs timeout 120 $L -np 2 bin/nereus "$CK/full.deck" > "$LOG/ckpt-disk-full.log" 2>&1
    if [ $rc = 1 ] && grep -qE '^nereus: error: checkpoint after step 5 failed: .*restart_step000006\.h5.*needs [0-9.]+ MiB; [0-9.]+ MiB free' "$LOG/ckpt-disk-full.log" &&
       [ "$(verify "$LOG/ckpt-disk-full.log" status)" = fail ] && [ "$(ls "$FULL")" = restart_step000003.h5 ] &&
       bin/nereus-ckpt verify "$FULL/restart_step000003.h5" >/dev/null 2>&1; then
      result ckpt-disk-full 0 "$secs" "stopped at step 6's checkpoint with the reason; step 3's whole, no .tmp"
    else result ckpt-disk-full 1 "$secs" "exit $rc; left: $(ls "$FULL" | tr '\n' ' '); $(grep -m1 'error:' "$LOG/ckpt-disk-full.log")"; fi
  fi
  umount "$FULL"
  if want trace-disk-full; then
    mount -t tmpfs -o size=48k tmpfs "$FULL"
    { cat tests/decks/restart.deck; printf '[trace]\nfile = %s/t.h5\n' "$FULL"; } > "$CK/trace-full.deck"
    timed secs timeout 120 $L -np 2 bin/nereus "$CK/trace-full.deck" > "$LOG/trace-disk-full.log" 2>&1
    if [ $rc = 0 ] && [ "$(verify "$LOG/trace-disk-full.log" status)" = pass ] &&
       grep -q 'warning: trace: .*writing failed .*No space left on device.*the run goes on' "$LOG/trace-disk-full.log" &&
       bin/nereus-trace summary "$FULL/t.h5" 2>&1 | grep -q '^status: NOT complete'; then
      result trace-disk-full 0 "$secs" "warned (No space left on device), ran to pass; the trace opens, NOT complete"
    else result trace-disk-full 1 "$secs" "exit $rc"; fi
    umount "$FULL"
  fi
else
  result ckpt-disk-full 77 0 "cannot mount a tmpfs here (needs root)"
  result trace-disk-full 77 0 "cannot mount a tmpfs here (needs root)"
fi
if want ckpt-restart-shape; then
  sed 's/^n_embd = 64$/n_embd = 96/' tests/decks/restart.deck > "$CK/wide.deck"
  bad ckpt-restart-shape 'n_embd.*64.*96|96.*64' bin/nereus "$CK/wide.deck" --restart "$A5"
fi

# SIGKILL during a checkpoint write leaves the previous one, and restart = latest finds it
# (K is absolute so that the pkill pattern names this checkout's run only)
K=$PWD/$CK/kill; mkdir -p "$K"
feeds ckpt-restart-latest ckpt-latest-found
if want ckpt-sigkill-keeps-previous ckpt-restart-latest ckpt-latest-found; then
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
  if want ckpt-latest-found; then
    grep -q "restart: $K/restart_step000001.h5" "$LOG/ckpt-restart-latest.log" && [ "$(verify "$LOG/ckpt-restart-latest.log" restart_step)" = 1 ] \
      && result ckpt-latest-found 0 0 "restart = latest took step 1" || result ckpt-latest-found 1 0 "did not restart from step 1"
  fi
fi

# SIGTERM (Slurm's warning before the time limit) to every rank: checkpoint at the next step boundary, clean exit
if want ckpt-sigterm; then
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
fi

# a checkpoint directory that cannot be made is refused before the run computes anything (no trace, exit 2);
# a checkpoint that fails mid-run (a directory already where step 2's file goes) stops it as an error:
# exit 1, the cause on stderr and in verify.stopped, verify.finite still yes
B=$CK/blocked; mkdir -p "$B/ckpt/restart_step000002.h5"
{ sed '/^\[sft\]/,/^\[/ s/^steps = 40$/steps = 2/; /^\[ppo\]/,/^\[/ s/^steps = 10$/steps = 4/' tests/decks/restart.deck
  printf '[ckpt]\nevery = 1\ndir = %s\n' "$B/ckpt"; } > "$B/blocked.deck"
sed "s#^dir = .*#dir = $B/no/such/ckpt#" "$B/blocked.deck" > "$B/nodir.deck"
bad ckpt-dir-refused "blocked/nodir\.deck:[0-9]+: error: cannot create the checkpoint directory .*no/such/ckpt" \
  bin/nereus "$B/nodir.deck"
if want ckpt-fails-midrun; then
  $L -np 1 bin/nereus "$B/blocked.deck" >"$LOG/ckpt-fails-midrun.log" 2>"$LOG/ckpt-fails-midrun.err"; rc=$?
  why=$(verify "$LOG/ckpt-fails-midrun.log" stopped)
  if [ $rc = 1 ] && grep -q '^nereus: error: checkpoint after step 1 failed' "$LOG/ckpt-fails-midrun.err" && \
     [ -f "$B/ckpt/restart_step000001.h5" ] && [ "$(verify "$LOG/ckpt-fails-midrun.log" finite)" = yes ] && \
     [ "$(verify "$LOG/ckpt-fails-midrun.log" status)" = fail ] && [ -n "$why" ]; then
    result ckpt-fails-midrun 0 0 "exit 1 after step 1's checkpoint, verify.stopped: ${why:0:60}"
  else result ckpt-fails-midrun 1 0 "exit $rc, stopped '$why' (see $LOG/ckpt-fails-midrun.*)"; fi
fi

# another run's checkpoint of the same name and a later step in [ckpt] dir: a warning, it stays, and keep = 1
# keeps this run's newest (until 2026-12-04 the later step counted as the newest and each new one was deleted)
R=$CK/stale
if want ckpt-stale-later-step trace-not-over-checkpoint trace-not-over-checkpoint-intact; then
  mkdir -p "$R/ckpt"; echo "another run's" > "$R/ckpt/restart_step000100.h5"
  sed "s#^dir = .*#dir = $R/ckpt\nkeep = 1#" "$B/blocked.deck" > "$R/stale.deck"
  $L -np 1 bin/nereus "$R/stale.deck" >"$LOG/ckpt-stale-later.log" 2>&1; rc=$?
  if [ $rc = 0 ] && grep -q "already holds restart_step000100.h5" "$LOG/ckpt-stale-later.log" && \
     [ "$(ls "$R/ckpt" | tr '\n' ' ')" = "restart_step000004.h5 restart_step000100.h5 " ]; then
    result ckpt-stale-later-step 0 0 "warned; kept this run's step 4 and the other run's step 100"
  else result ckpt-stale-later-step 1 0 "exit $rc, files: $(ls "$R/ckpt" | tr '\n' ' ')"; fi
fi

# [trace] file naming the very checkpoint a run restarts from: refused, the checkpoint intact (until 2026-12-04 the
# trace truncated it once the restart had read it); the checkpoint is the stale-step run's
feeds trace-not-over-checkpoint trace-not-over-checkpoint-intact
if want trace-not-over-checkpoint trace-not-over-checkpoint-intact; then
  cp "$R/ckpt/restart_step000004.h5" "$R/keep.h5"
  { cat "$R/stale.deck"; printf '[trace]\nfile = %s\n' "$R/keep.h5"; } > "$R/trace_on_ckpt.deck"
  bad trace-not-over-checkpoint 'cannot create the trace .*keep\.h5: the file exists and is not a Nereus trace' \
    bin/nereus "$R/trace_on_ckpt.deck" --restart "$R/keep.h5"
  if want trace-not-over-checkpoint-intact; then
    if bin/nereus-ckpt verify "$R/keep.h5" >"$LOG/trace-not-over-checkpoint-verify.log" 2>&1; then
      result trace-not-over-checkpoint-intact 0 0 "the checkpoint still verifies"
    else result trace-not-over-checkpoint-intact 1 0 "$(tail -1 "$LOG/trace-not-over-checkpoint-verify.log")"; fi
  fi
fi

section "checkpoints: [model] init_from starts a run from imported weights"
# an llm.c file of short.deck's model (V 15, maxT 16, L 2, NH 4, C 64) imported; short.deck with
# --set model.init_from on 1 rank and under a tp2 plan on 2 ranks: the frozen ref's hash is the file's actor's
I=$CK/init; mkdir -p "$I"
feeds init-import init-from-r1 init-from-r2-tp2 init-from-mismatch init-from-restart-wins
t init-import 60 sh -c "build/tests/make_llmc '$I/g.bin' 15 15 16 2 4 64 7 && bin/nereus-ckpt import-llmc '$I/g.bin' '$I/g.h5' &&
  bin/nereus-ckpt info '$I/g.h5' > '$I/info.txt'"
IFSET="--set model.init_from=$I/g.h5 --set sft.steps=0 --set ppo.steps=3 --set trace.file=none"
{ cat tests/decks/short.deck; printf '[plan]\nactor.gen = dp2 @0-1\nactor.inf = tp2 @0-1\nref.inf = tp2 @0-1\n'
  printf 'actor.train = tp2 @0-1\ncritic.inf = dp2 @0-1\ncritic.train = pp2 @0-1\nreward.inf = @0\n'; } > "$I/tp2.deck"
# init_check NAME LOG: passes when the run passed, said where it started from, and its ref is the file's actor
init_check() {
  local want_h got
  want_h=$(sed -n 's/^  params hash \([0-9a-f]*\) (as verify\.hash\.actor .*/\1/p' "$I/info.txt")
  got=$(verify "$2" hash.ref)
  if [ "$(verify "$2" status)" = pass ] && grep -q "^init_from: $I/g.h5: " "$2" && [ -n "$got" ] && [ "$got" = "$want_h" ]
  then result "$1" 0 0 "verify.hash.ref $got = the imported actor's params hash"
  else result "$1" 1 0 "status '$(verify "$2" status)', verify.hash.ref '$got', the file's actor '$want_h'"; fi
}
for c in "init-from-r1 1 tests/decks/short.deck" "init-from-r2-tp2 2 $I/tp2.deck"; do
  set -- $c
  if want "$1"; then
    $L -np "$2" bin/nereus "$3" $IFSET >"$LOG/$1.log" 2>&1
    init_check "$1" "$LOG/$1.log"
  fi
done
# a file whose actor is not the deck's [model]: cfg_diff's message, exit 2 (on 2 ranks); a missing file
bad init-from-mismatch 'init_from=.*g\.h5: error: cannot initialise the actor and the ref: .*g\.h5: model actor does not match the deck: \[model\] n_embd: checkpoint 64, deck 32' \
  $L -np 2 bin/nereus "$I/tp2.deck" $IFSET --set model.n_embd=32
bad init-from-missing 'cannot initialise the actor and the ref: .*nope\.h5: cannot open checkpoint: No such file' \
  bin/nereus tests/decks/short.deck --set model.init_from="$I/nope.h5" --set trace.file=none
# --restart with init_from: the restart continues its run; init_from is ignored with a note
if want init-from-restart-wins; then
  bin/nereus tests/decks/short.deck $IFSET --restart "$I/g.h5" >"$LOG/init-from-restart-wins.log" 2>&1; rc=$?
  if [ $rc = 0 ] && grep -q "init_from = .*g\.h5 is ignored: the restart continues its run" "$LOG/init-from-restart-wins.log"
  then result init-from-restart-wins 0 0 "the restart ran; init_from ignored with a note"
  else result init-from-restart-wins 1 0 "exit $rc"; fi
fi
