#!/usr/bin/env bash
# tests/bench/moves_ab.sh — a switch's communicators built ahead against built in the move, live on 4 ranks:
# the transitions suite's switch (tests/decks/restart.deck, its plan P_OLD, a [switch] to P_NEW before PPO step
# 5, verify = true), run REPS times each way, alternating (NEREUS_TX_PREBUILD=1, the default: its 4 new sets
# built at the boundary before step 4; NEREUS_TX_PREBUILD=0: built in the move), with no injected set-up and
# with [inject] comm_setup_s = 0.492 (a set over 64 GPUs as the simulator prices it). One line per run: the
# move's measured seconds, its transfers, its communicator set-up, sets built in it and before it, step 4's
# seconds; then the medians, and `moves_ab.*` lines appended to OUT when given.
#   tests/bench/moves_ab.sh [OUT]   (REPS=3 in the environment by default)
# Exit: 0, 1 when a run failed.
set -u
case "${1:-}" in -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
cd "$(dirname "$0")/../.."
out=${1:+$(realpath -m "$1")}
. tests/workdir.sh moves-ab
D=$(pwd)
P_OLD='actor.gen = tp2 dp2 @0-3\nactor.inf = dp4 @all\nref.inf = tp2 @2-3\ncritic.inf = dp2 @0-1\nactor.train = tp2 dp2 @0-3\ncritic.train = pp2 dp2 @0-3\nreward.inf = @0'
P_NEW='actor.gen = dp4 @ 3,2,1,0\nactor.inf = tp4 @ 0-3\nref.inf = dp2 @ 0-1\ncritic.inf = pp2 @ 2-3\nactor.train = tp2 pp2 @ 1,0,3,2\ncritic.train = dp4 @ 0-3\nreward.inf = @ 3'
for inj in 0 0.492; do
  { cat tests/decks/restart.deck; printf "[ckpt]\ndir = $D/ckpt-$inj\n[plan]\n$P_OLD\n[switch]\nstep = 5\n$P_NEW\n[transition]\nverify = true\n[trace]\nfile = none\n"
    [ $inj != 0 ] && printf "[inject]\ncomm_setup_s = $inj\n"; } > "$D/switch-$inj.deck"
done
med() { sort -g | awk '{v[NR] = $1} END{if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
fail=0
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for inj in 0 0.492; do
  : > "$D/rows-$inj"
  for r in $(seq "${REPS:-3}"); do
    for v in 1 0; do
      log=$D/run-$inj-$v-$r.log
      NEREUS_TX_PREBUILD=$v jobs/local.sh -np 4 bin/nereus "$D/switch-$inj.deck" --set ckpt.overwrite=true > "$log" 2>&1 || fail=1
      m=$(sed -n 's/^transition: .*, measured \([0-9.]*\) s (transfers \([0-9.]*\) s, communicator set-up \([0-9.]*\) s).* communicators: \([0-9]*\) new set(s), \([0-9]*\) built before.*/\1 \2 \3 \4 \5/p' "$log")
      s4=$(sed -n 's/^step    4 | .* | \([0-9.]*\)s: gen .*/\1/p' "$log")
      grep -q '^verify.status: pass' "$log" || fail=1
      echo "$v $m $s4" >> "$D/rows-$inj"
      echo "inject $inj, prebuild $v, run $r: move $(echo $m | cut -d' ' -f1) s (transfers $(echo $m | cut -d' ' -f2) s, set-up $(echo $m | cut -d' ' -f3) s; sets new $(echo $m | cut -d' ' -f4), built before $(echo $m | cut -d' ' -f5)); step 4 $s4 s"
    done
  done
  for v in 1 0; do
    mm=$(awk -v v=$v '$1 == v {print $2}' "$D/rows-$inj" | med); ms=$(awk -v v=$v '$1 == v {print $4}' "$D/rows-$inj" | med)
    echo "inject $inj, prebuild $v: medians: move $mm s, set-up in the move $ms s"
    [ -n "$out" ] && printf "moves_ab.inject%s.prebuild%s.move_s: %s\nmoves_ab.inject%s.prebuild%s.setup_s: %s\n" "$inj" $v "$mm" "$inj" $v "$ms" >> "$out"
  done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $fail
