#!/usr/bin/env bash
# tests/ft_stress.sh — ranks killed inside a checkpoint write under ULFM (docs/ELASTIC.md, "Measured"):
#   tests/ft_stress.sh [N] [MCA=VALUE...]
# N runs (default 5) of a 4-rank job of bin/nereus-ft under jobs/local.sh --ft that writes a ~90 MB checkpoint
# every 2 PPO steps; rank 2 is SIGKILLed as soon as step 4's checkpoint file (.tmp) appears, i.e. inside the
# collective parallel-HDF5 write. MCA=VALUE pairs are exported as OMPI_MCA_MCA=VALUE (io=romio341,
# fcoll=individual). One line per run: the exit status, verify.status, the ranks the survivors found dead,
# segmentation faults, .tmp files left. Not part of make test (a minute or two per run on 2 cores).
set -u
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0;; esac
cd "$(dirname "$0")/.."
n=${1:-5}; shift || true
for kv in "$@"; do export "OMPI_MCA_${kv%%=*}=${kv#*=}"; done
W=$PWD/build/ft-stress; mkdir -p "$W"
{ sed 's/^n_layer = 2$/n_layer = 4/; s/^n_embd = 64$/n_embd = 256/; s/^n_head = 4$/n_head = 8/; /^\[sft\]/,/^\[/ s/^steps = 40$/steps = 0/
       /^\[ppo\]/,/^\[/ s/^steps = 10$/steps = 8/; s/^batch = 48$/batch = 8/; s/^minibatch = 12$/minibatch = 8/; s/^name = restart/name = st/' tests/decks/restart.deck
  printf '[ckpt]\nevery = 2\nkeep = 5\ndir = %s/ck\n[trace]\nfile = none\n' "$W"; } >"$W/st.deck"
for i in $(seq 1 "$n"); do
  rm -rf "$W/ck"; mkdir -p "$W/ck"
  log=$W/run-$i.log
  t0=$(date +%s.%N)
  timeout 300 tests/local.sh --ft -np 4 bin/nereus-ft "$W/st.deck" >"$log" 2>&1 &
  bg=$!
  for k in $(seq 1 30000); do [ -e "$W/ck/st_step000004.h5.tmp" ] && break; sleep 0.002; done
  for p in $(pgrep -f "bin/nereus-ft $W/st.deck"); do
    tr '\0' '\n' </proc/"$p"/environ 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=2 && kill -KILL "$p"
  done
  wait $bg; rc=$?
  printf 'run %d: exit %s (%.1f s), verify.status %s, dead: %s, segfaults %s, .tmp left %s\n' "$i" "$rc" \
    "$(echo "$(date +%s.%N) - $t0" | bc)" "$(sed -n 's/^verify.status: //p' "$log")" \
    "$(grep -ao 'FAILURE: rank(s) [0-9,]*' "$log" | head -1 | cut -d' ' -f3)" "$(grep -ac 'Segmentation fault' "$log")" \
    "$(ls "$W/ck" | grep -c '\.tmp$')"
done
