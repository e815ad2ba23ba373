#!/usr/bin/env bash
# tests/bench/smollm2_export.sh [SEED] [STEPS] [OUT] — the trained SmolLM2 leaves as a Hugging Face directory that
# transformers scores as Nereus did (issue 44; not in make test: the deck's whole run, about 30 minutes on 2 cores).
#
# inputs/smollm2-grpo.deck on 2 ranks, seed SEED (default 1), STEPS steps (default the deck's 45) with a checkpoint
# at the end and every evaluation's responses ([eval] responses); `bin/nereus-ckpt export-hf` writes the last
# checkpoint as a directory (config.json, model.safetensors, tokenizer.json); tools/eval-hf scores it on the deck's
# 200 held-out prompts with the same greedy decoding, system prompt and rule; tools/eval-compare sets Nereus' last
# evaluation beside it prompt by prompt. Prints both accuracies and the comparison, `smollm2_export: pass|fail`
# (pass: the same score on at least 99% of the prompts), and appends `smollm2_export.*` lines to OUT (default
# build/smollm2-export.txt). Exit 0 on pass, 1 on fail, 2 for a bad command line or a missing part.
# Needs make smollm2, bin/nereus, and torch and transformers in build/venv-torch (VENV=DIR another;
# tests/bench/trl_peer.sh says how).
set -uo pipefail
case ${1:-} in -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
seed=${1:-1} steps=${2:-45}
for a in "$seed" "$steps"; do
  [[ $a =~ ^[1-9][0-9]*$ ]] || { echo "smollm2_export: SEED and STEPS are counts of 1 or more, not '$a' (--help)" >&2; exit 2; }
done
cd "$(dirname "$0")/../.."
out=${3:-build/smollm2-export.txt} venv=${VENV:-build/venv-torch} deck=inputs/smollm2-grpo.deck
for need in bin/nereus bin/nereus-ckpt build/smollm2/smollm2-135m-instruct.h5 "$venv/bin/python"; do
  [ -e "$need" ] || { echo "smollm2_export: $need missing (make, make smollm2, the venv: tests/bench/trl_peer.sh)" >&2; exit 2; }
done
key() { sed -n "s/^$1 = //p" "$deck" | head -1; }
system=$(key system | sed 's/^"//; s/"$//')
dir=build/smollm2-export/seed-$seed
rm -rf "$dir" && mkdir -p "$dir"
echo "== SmolLM2 GRPO, seed $seed, $steps steps, exported and scored by transformers"
echo "   machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; commit $(git rev-parse --short HEAD)"
t0=$(date +%s)
OPENBLAS_NUM_THREADS=1 jobs/local.sh -np 2 bin/nereus "$deck" --set run.seed="$seed" --set ppo.steps="$steps" \
  --set run.name=smollm2-export --set ckpt.every="$steps" --set ckpt.dir="$dir/ckpt" \
  --set eval.responses="$dir/responses.jsonl" --set trace.file="$dir/run.trace.h5" > "$dir/run.log" 2>&1 ||
  { echo "smollm2_export: the run failed ($dir/run.log)"; exit 1; }
t1=$(date +%s)
ck=$(ls "$dir"/ckpt/smollm2-export_step*.h5 | tail -1)
bin/nereus-ckpt export-hf "$ck" "$dir/hf" > "$dir/export.log" 2>&1 || { echo "smollm2_export: export-hf failed ($dir/export.log)"; exit 1; }
hf=$(OMP_NUM_THREADS=2 "$venv/bin/python" tools/eval-hf "$dir/hf" "$(key eval)" --size "$(key eval_size)" --max-new "$(key max_response)" \
     --system "$system" --rule "$(key rule)" --format-reward "$(key format_reward)" --out "$dir/eval-hf.jsonl" 2>"$dir/eval-hf.err" | tail -1)
[ -n "$hf" ] || { echo "smollm2_export: eval-hf failed ($dir/eval-hf.err)"; exit 1; }
cmp=$(tools/eval-compare "$dir/responses.jsonl" "$dir/eval-hf.jsonl"); rc=$?
grep '^eval: ' "$dir/run.log" | sed 's/^/  nereus /'
echo "  run: $((t1 - t0)) s; checkpoint $ck; peak $(sed -n 's/^memory: .*; largest \([0-9]*\)$/\1/p' "$dir/run.log") MiB a rank"
echo "  transformers on the exported directory: $hf"
echo "$cmp" | sed 's/^/  /'
v=$([ $rc = 0 ] && echo pass || echo fail)
echo "smollm2_export: $v"
acc() { sed -n 's/.*accuracy[ =]*\([0-9.]*\).*/\1/p' <<<"$1" | head -1; }
{
  echo "smollm2_export.seed$seed.nereus_accuracy: $(sed -n 's/^verify.eval.accuracy: //p' "$dir/run.log")"
  echo "smollm2_export.seed$seed.hf_accuracy: $(acc "$hf")"
  echo "smollm2_export.seed$seed.same_score: $(sed -n 's/.* \([0-9]*\) same score.*/\1/p' <<<"$cmp" | head -1)"
  echo "smollm2_export.seed$seed.status: $v"
} >> "$out"
[ "$v" = pass ]
