#!/usr/bin/env bash
# tests/bench/ft_gain.sh — what a recovered failure costs the learning (not in make test): inputs/elastic4.deck
# (4 ranks, DP replicas, 20 PPO steps) on bin/nereus-ft, each seed run twice: without a failure, and with rank 1
# dying as training begins in step 7 (INJECTED: [inject] die_rank, a real SIGKILL of itself), recovered in place
# (from the copies in memory, [elastic] in_memory). Prints per seed verify.reward_gain, recovered_from and whether
# the token streams are the same, then the mean and spread (sample standard deviation) of the gain each way and
# `metric: value` lines.
#   tests/bench/ft_gain.sh [SEEDS] [OUT]    (SEEDS: default 8; OUT: default build/ft-gain)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
seeds=${1:-8}
out=${2:-$here/build/ft-gain}
mkdir -p "$out"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
v() { sed -n "s/^verify\.$2: //p" "$1" | tail -1; }
printf '%-5s %-12s %-12s %-10s %s\n' seed gain_nofail gain_failure recovered same_tokens
for s in $(seq 1 "$seeds"); do
  for way in nofail die; do
    name=ftgain-$way-s$s
    extra=()
    [ $way = die ] && extra=(--set inject.die_rank=1 --set inject.die_step=7 --set inject.die_phase=train)
    rm -rf "$out/$name-ckpt"
    (cd "$out" && timeout 300 "$here/jobs/local.sh" --ft -np 4 "$here/bin/nereus-ft" "$here/inputs/elastic4.deck" \
       --set run.name=$name --set run.seed=$s --set ckpt.dir=$name-ckpt --set trace.file=none "${extra[@]}" \
       >"$name.log" 2>&1) || echo "run $name failed: $out/$name.log" >&2
  done
  a=$out/ftgain-nofail-s$s.log b=$out/ftgain-die-s$s.log
  same=no; [ "$(v "$a" tokens_hash)" = "$(v "$b" tokens_hash)" ] && same=yes
  printf '%-5s %-12s %-12s %-10s %s\n' "$s" "$(v "$a" reward_gain)" "$(v "$b" reward_gain)" "$(v "$b" recovered_from)" "$same"
done | tee "$out/table.txt"
awk '$1 != "seed" { n++; a += $2; aa += $2 * $2; b += $3; bb += $3 * $3; d = $3 - $2; dd += d * d; same += $5 == "yes" }
     END { ma = a / n; mb = b / n; sa = sqrt((aa - n * ma * ma) / (n - 1)); sb = sqrt((bb - n * mb * mb) / (n - 1));
           printf "ft_gain.seeds: %d\nft_gain.nofail_mean: %+.4f\nft_gain.nofail_sd: %.4f\nft_gain.failure_mean: %+.4f\n", n, ma, sa, mb;
           printf "ft_gain.failure_sd: %.4f\nft_gain.mean_difference: %+.4f\nft_gain.rms_difference: %.4f\nft_gain.same_tokens: %d\n", sb, mb - ma, sqrt(dd / n), same }' \
  "$out/table.txt" | tee "$out/metrics.txt"
