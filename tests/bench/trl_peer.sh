#!/usr/bin/env bash
# tests/bench/trl_peer.sh [ROUNDS] [STEPS] [OUT] — Nereus against TRL's GRPOTrainer on SmolLM2-135M-Instruct,
# the same workload on the same two cores, alternating (not in make test; issue 44, docs/PERFORMANCE.md).
#
# Each round runs STEPS GRPO steps (default 3) of inputs/smollm2-grpo.deck with Nereus on 2 ranks (one BLAS
# thread each), then tests/bench/trl_peer.py (TRL, 2 torch threads) on the Hugging Face directory that
# `bin/nereus-ckpt export-hf` writes from the imported GGUF (the same fp32 weights and token ids): PROMPTS
# prompts x GROUP completions a step (default 8 x 4), at most MAX_NEW new tokens (96), the deck's system
# prompt, learning rate, KL coefficient and clip, reward last-number + 0.1 for an answer (bin/nereus-score on
# both sides). Per run: the median step, the tokens through the whole step (prompt + completion, no padding,
# over the steps' wall time) and the peak resident memory. ROUNDS (default 2) alternating pairs; the medians
# and the ratio go to the table and to OUT (default build/trl-peer.txt) as `trl_peer.*` lines.
#
# Needs make smollm2, bin/nereus, and torch, transformers and trl 1.16 in build/venv-torch (VENV=DIR
# another):
#   python3 -m venv build/venv-torch
#   build/venv-torch/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
#   build/venv-torch/bin/pip install transformers "trl==1.16.*"
set -euo pipefail
case ${1:-} in -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
for a in "${1:-2}" "${2:-3}"; do
  [[ $a =~ ^[1-9][0-9]*$ ]] || { echo "trl_peer: ROUNDS and STEPS are counts of 1 or more, not '$a' (--help)" >&2; exit 2; }
done
cd "$(dirname "$0")/../.."
rounds=${1:-2}
steps=${2:-3}
out=${3:-build/trl-peer.txt}
venv=${VENV:-build/venv-torch}
prompts=${PROMPTS:-8}
group=${GROUP:-4}
max_new=${MAX_NEW:-96}
deck=inputs/smollm2-grpo.deck
ck=build/smollm2/smollm2-135m-instruct.h5
dir=build/trl-peer
for need in bin/nereus bin/nereus-ckpt "$ck" "$venv/bin/python"; do
  [ -e "$need" ] || { echo "trl_peer: $need missing (make, make smollm2, and the venv: see the head of $0)" >&2; exit 2; }
done
"$venv/bin/python" -c 'import trl, torch, transformers' 2>/dev/null ||
  { echo "trl_peer: $venv has no torch, transformers and trl (see the head of $0)" >&2; exit 2; }
mkdir -p "$dir"
[ -f "$dir/hf/model.safetensors" ] || bin/nereus-ckpt export-hf "$ck" "$dir/hf" >/dev/null
key() { sed -n "s/^$1 = //p" "$deck" | head -1; }
system=$(key system | sed 's/^"//; s/"$//')
lr=$(key actor_lr); beta=${BETA:-0.04}; clip=${CLIP:-0.2}
batch=$((prompts * group))
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo "== Nereus against TRL: SmolLM2-135M-Instruct, GRPO, $prompts prompts x $group completions, $max_new new tokens at most, $steps step(s), $rounds round(s)"
echo "   machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; commit $(git rev-parse --short HEAD)"
: > "$dir/rounds.txt"
for r in $(seq 1 "$rounds"); do
  log=$dir/nereus-$r.log
  OPENBLAS_NUM_THREADS=1 jobs/local.sh -np 2 bin/nereus "$deck" --set ppo.steps="$steps" --set ppo.batch=$batch \
    --set ppo.minibatch=$batch --set ppo.group_size="$group" --set ppo.max_response="$max_new" \
    --set ppo.kl_loss_coef="$beta" --set ppo.clip="$clip" --set data.eval_size=1 --set eval.every=0 \
    --set run.name=trl-peer-nereus --set trace.file="$dir/nereus-$r.trace.h5" --set trace.overwrite=true \
    --set ckpt.every=0 > "$log" 2>&1 || { echo "trl_peer: the Nereus run failed (log: $log)"; exit 1; }
  n_step=$(/usr/bin/python3 -c "import h5py,statistics,sys; s=h5py.File(sys.argv[1])['steps']; print('%.3f' % statistics.median(s['wall_s']))" "$dir/nereus-$r.trace.h5")
  n_tps=$(sed -n 's/^verify.ppo_seq_tokens_per_s: //p' "$log")
  n_mem=$(sed -n 's/^memory: .*; largest \([0-9]*\)$/\1/p' "$log")
  n_sum=$(sed -n 's/^memory: peak resident MiB per rank: \(.*\); largest.*/\1/p' "$log" | awk '{for (i = 2; i <= NF; i += 2) s += $i} END {print s}')
  echo "  round $r Nereus: $n_step s a step, $n_tps tokens/s, peak $n_mem MiB a rank ($n_sum MiB both)"
  tlog=$dir/trl-$r.log
  OMP_NUM_THREADS=2 "$venv/bin/python" tests/bench/trl_peer.py "$dir/hf" "$(key train)" "$dir/trl-$r" --steps "$steps" \
    --prompts "$prompts" --group "$group" --max-new "$max_new" --lr "$lr" --beta "$beta" --clip "$clip" \
    --system "$system" --rule last-number --format-reward 0.1 --threads 2 > "$tlog" 2>&1 ||
    { echo "trl_peer: the TRL run failed (log: $tlog)"; exit 1; }
  t_step=$(sed -n 's/^trl.step_s: //p' "$tlog"); t_tps=$(sed -n 's/^trl.tokens_per_s: //p' "$tlog")
  t_mem=$(sed -n 's/^trl.peak_rss_mib: //p' "$tlog")
  echo "  round $r TRL:    $t_step s a step, $t_tps tokens/s, peak $t_mem MiB"
  echo "$n_step $n_tps $n_sum $t_step $t_tps $t_mem" >> "$dir/rounds.txt"
done
col() { awk -v c="$1" '{print $c}' "$dir/rounds.txt" | median; }
ns=$(col 1); nt=$(col 2); nm=$(col 3); ts=$(col 4); tt=$(col 5); tm=$(col 6)
ratio=$(awk -v a="$nt" -v b="$tt" 'BEGIN {printf "%.2f", a / b}')
printf '  %-8s %12s %14s %16s\n' "" "step s (med)" "tokens/s (med)" "peak MiB (med)" "Nereus" "$ns" "$nt" "$nm" "TRL" "$ts" "$tt" "$tm"
echo "  Nereus over TRL, tokens/s: $ratio (goal: at least 2)"
{
  echo "trl_peer.nereus.step_s: $ns"; echo "trl_peer.nereus.tokens_per_s: $nt"; echo "trl_peer.nereus.peak_mib: $nm"
  echo "trl_peer.trl.step_s: $ts"; echo "trl_peer.trl.tokens_per_s: $tt"; echo "trl_peer.trl.peak_mib: $tm"
  echo "trl_peer.tokens_per_s_ratio: $ratio"
} >> "$out"
