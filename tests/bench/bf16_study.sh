#!/usr/bin/env bash
# tests/bench/bf16_study.sh — generating in bf16 against fp32 over many seeds (not in make test):
# the tiny PPO deck (inputs/tiny.deck) and the tiny GRPO deck (inputs/grpo-tiny.deck), each seed run
# three ways: fp32 generation, bf16 generation ([model] gen_dtype = bf16) without a correction, and bf16
# with truncated importance sampling ([ppo] tis_cap = 2). Every run's trace gives the per-step rewards,
# response lengths and log-probability gaps; the summary (tools/seed_study.py) writes a table and
# metric lines.
#   tests/bench/bf16_study.sh [SEEDS] [OUT]    (SEEDS: default 12; OUT: default build/bf16-study)
# Two runs at a time, one rank and one thread each. Needs bin/nereus built (NEREUS=PATH runs another binary,
# e.g. a copy, so that a rebuild meanwhile does not change the runs) and /usr/bin/python3 with h5py.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
seeds=${1:-12}
out=${2:-$here/build/bf16-study}
mkdir -p "$out"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
jobs=()
for deck in tiny grpo-tiny; do
  for s in $(seq 1 "$seeds"); do
    jobs+=("$deck fp32 0 $s" "$deck bf16 0 $s" "$deck bf16 2 $s")
  done
done
run_one() {
  local deck=$1 dtype=$2 tis=$3 seed=$4
  local name="$deck-$dtype-tis$tis-s$seed" # DECK-WAY-sSEED, WAY = DTYPE-tisCAP
  [ -s "$out/$name.log" ] && grep -q '^verify.status: pass' "$out/$name.log" && return 0
  (cd "$out" && "$here/jobs/local.sh" -np 1 "$nereus" "$here/inputs/$deck.deck" \
     --set run.name="$name" --set run.seed="$seed" --set model.gen_dtype="$dtype" --set ppo.tis_cap="$tis" \
     --set trace.overwrite=true --set ckpt.every=0 >"$name.log" 2>&1) || echo "run $name failed: $out/$name.log" >&2
}
export -f run_one
nereus=${NEREUS:-$here/bin/nereus}
export here out nereus
printf '%s\n' "${jobs[@]}" | xargs -P 2 -L 1 bash -c 'run_one $0 $1 $2 $3'
/usr/bin/python3 "$here/tools/seed_study.py" "$out" bf16_study fp32-tis0 bf16-tis0 bf16-tis2
