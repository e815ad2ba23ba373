#!/usr/bin/env bash
# tests/bench/trl_learn.sh [SEED] [STEPS] [EVERY] [OUT] — TRL's learning curve on the SmolLM2 deck's workload,
# the peer of a Nereus seed's (not in make test; issue 44, docs/TEXT.md "Learning").
#
# TRL's GRPOTrainer (tests/bench/trl_peer.py, 2 torch threads) trains the Hugging Face directory that
# `bin/nereus-ckpt export-hf` writes from the imported GGUF for STEPS steps (default 45) with the deck's
# workload: 8 prompts x 4 completions of inputs/smollm2-grpo.deck's train file, at most 96 new tokens, its
# system prompt, learning rate, KL coefficient (0.04) and clip (0.2), reward last-number + 0.1 for an answer
# (bin/nereus-score), seed SEED (default 1). Every EVERY steps (default 15) and at the end, tools/eval-hf scores
# the model greedily on the deck's 200 held-out prompts, as the model as imported before them. Prints the
# curve, `trl_learn.*` lines into OUT (default build/trl-learn.txt), and keeps each evaluation's responses
# (--out) beside the models under build/trl-learn/seed-SEED.
#
# Needs make smollm2, bin/nereus, and torch, transformers and trl 1.16 in build/venv-torch (VENV=DIR another;
# tests/bench/trl_peer.sh says how). Takes about 75 minutes on 2 cores (AMD EPYC Zen 4).
set -euo pipefail
case ${1:-} in -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
for a in "${1:-1}" "${2:-45}" "${3:-15}"; do
  [[ $a =~ ^[1-9][0-9]*$ ]] || { echo "trl_learn: SEED, STEPS and EVERY are counts of 1 or more, not '$a' (--help)" >&2; exit 2; }
done
cd "$(dirname "$0")/../.."
seed=${1:-1} steps=${2:-45} every=${3:-15} out=${4:-build/trl-learn.txt}
venv=${VENV:-build/venv-torch}
deck=inputs/smollm2-grpo.deck ck=build/smollm2/smollm2-135m-instruct.h5 dir=build/trl-learn/seed-$seed
for need in bin/nereus-ckpt bin/nereus-score "$ck" "$venv/bin/python"; do
  [ -e "$need" ] || { echo "trl_learn: $need missing (make, make smollm2, and the venv: see tests/bench/trl_peer.sh)" >&2; exit 2; }
done
key() { sed -n "s/^$1 = //p" "$deck" | head -1; }
system=$(key system | sed 's/^"//; s/"$//') lr=$(key actor_lr) train=$(key train) eval=$(key eval) size=$(key eval_size)
rm -rf "$dir"; mkdir -p "$dir"
bin/nereus-ckpt export-hf "$ck" "$dir/hf" >/dev/null
evaluate() { # MODEL_DIR NAME: eval-hf's summary line, its responses in $dir/NAME.jsonl
  OMP_NUM_THREADS=2 "$venv/bin/python" tools/eval-hf "$1" "$eval" --size "$size" --max-new 96 --system "$system" \
    --rule last-number --format-reward 0.1 --out "$dir/$2.jsonl" | tail -1
}
echo "== TRL learning: SmolLM2-135M-Instruct, GRPO, 8 prompts x 4, $steps steps, seed $seed, eval every $every"
echo "   machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; commit $(git rev-parse --short HEAD)"
t0=$(date +%s)
e0=$(evaluate "$dir/hf" step-0)
echo "  step 0: $e0"
OMP_NUM_THREADS=2 "$venv/bin/python" tests/bench/trl_peer.py "$dir/hf" "$train" "$dir/trl" --steps "$steps" --prompts 8 \
  --group 4 --max-new 96 --lr "$lr" --beta 0.04 --clip 0.2 --system "$system" --rule last-number --format-reward 0.1 \
  --seed "$seed" --threads 2 --save-every "$every" > "$dir/trl.log" 2>&1 || { echo "trl_learn: TRL failed (log: $dir/trl.log)"; exit 1; }
t1=$(date +%s)
echo "  TRL: $steps steps in $((t1 - t0)) s with the first evaluation; median step $(sed -n 's/^trl.step_s: //p' "$dir/trl.log") s"
acc() { sed -n 's/.*accuracy \([0-9.]*\) .*/\1/p' <<<"$1"; }
{ echo "trl_learn.seed$seed.step0.accuracy: $(acc "$e0")"; } >> "$out"
for s in $(seq "$every" "$every" "$steps") final; do
  [ "$s" = "$steps" ] && continue
  m=$dir/trl/step-$s; [ "$s" = final ] && m=$dir/trl/final s=$steps
  e=$(evaluate "$m" "step-$s"); echo "  step $s: $e"
  echo "trl_learn.seed$seed.step$s.accuracy: $(acc "$e")" >> "$out"
done
echo "  whole: $(( $(date +%s) - t0 )) s"
