#!/usr/bin/env bash
# tests/bench/async_study.sh — asynchronous rollouts against synchronous ones over many seeds (not in make
# test; docs/ASYNC.md): the tiny PPO deck (inputs/tiny.deck) and the tiny GRPO deck (inputs/grpo-tiny.deck),
# each seed run three ways: k0 ([ppo] max_staleness = 0), k1 (max_staleness = 1 with the decoupled
# correction, correction = auto) and k1-none (max_staleness = 1, correction = none). Every run's trace gives
# the per-step rewards, response lengths, gaps and staleness; the summary (tools/seed_study.py) writes a
# table and metric lines, each way against k0 paired by seed.
#   tests/bench/async_study.sh [SEEDS] [OUT]    (SEEDS: default 12; OUT: default build/async-study)
# Two runs at a time, one rank and one thread each (K = 1 on one rank: the same batches and versions as on a
# split plan, without the overlap, which does not change what is learnt). Needs bin/nereus built (NEREUS=PATH
# runs another binary, e.g. a copy, so that a rebuild meanwhile does not change the runs) and
# /usr/bin/python3 with h5py.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
seeds=${1:-12}
out=${2:-$here/build/async-study}
mkdir -p "$out"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
jobs=()
for deck in tiny grpo-tiny; do
  for s in $(seq 1 "$seeds"); do
    jobs+=("$deck k0 0 auto $s" "$deck k1 1 auto $s" "$deck k1-none 1 none $s")
  done
done
run_one() {
  local deck=$1 way=$2 k=$3 corr=$4 seed=$5
  local name="$deck-$way-s$seed" # DECK-WAY-sSEED
  [ -s "$out/$name.log" ] && grep -q '^verify.status: pass' "$out/$name.log" && return 0
  (cd "$out" && "$here/jobs/local.sh" -np 1 "$nereus" "$here/inputs/$deck.deck" \
     --set run.name="$name" --set run.seed="$seed" --set ppo.max_staleness="$k" --set ppo.correction="$corr" \
     --set trace.overwrite=true --set ckpt.every=0 >"$name.log" 2>&1) || echo "run $name failed: $out/$name.log" >&2
}
export -f run_one
nereus=${NEREUS:-$here/bin/nereus}
export here out nereus
printf '%s\n' "${jobs[@]}" | xargs -P 2 -L 1 bash -c 'run_one $0 $1 $2 $3 $4'
/usr/bin/python3 "$here/tools/seed_study.py" "$out" async_study k0 k1 k1-none
