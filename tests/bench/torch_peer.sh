#!/usr/bin/env bash
# tests/bench/torch_peer.sh [OUT] — the training step against PyTorch on the same shapes (make bench-torch;
# docs/PERFORMANCE.md). Not run in CI. Three rounds, alternating: bench_step (Nereus: GPT-2 124M and
# llama-124M at B 4, T 64, 1 and 2 threads) then tests/bench/torch_peer.py at 1 and 2 threads; the medians
# of the rounds and Nereus' tokens/s over PyTorch's, appended to OUT (default build/bench-torch.txt) as
# torchpeer.MODEL.tN.{nereus_tok_s,torch_tok_s,ratio}.
# Needs `make benches` and a Python with torch and transformers in $VENV (default build/venv-torch):
#   python3 -m venv build/venv-torch
#   build/venv-torch/bin/pip install torch transformers --index-url https://download.pytorch.org/whl/cpu \
#       --extra-index-url https://pypi.org/simple
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${VENV:-build/venv-torch}
out=${1:-build/bench-torch.txt}
py=$venv/bin/python
[ -x "$py" ] || { echo "torch_peer: no Python at $py (see the header of $0)" >&2; exit 2; }
[ -x build/bench/bench_step ] || { echo "torch_peer: build/bench/bench_step missing (make benches)" >&2; exit 2; }
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
d=build/torch-peer
rm -rf "$d"
mkdir -p "$d"
for round in 1 2 3; do
  build/bench/bench_step "$d/nereus-$round.txt" --quick >"$d/nereus-$round.log" 2>&1
  for th in 1 2; do "$py" tests/bench/torch_peer.py "$d/torch-$round.txt" $th 5 | tee -a "$d/torch-$round.log"; done
done
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1) x $(nproc)" | tee -a "$out"
"$py" - "$d" "$out" <<'EOF'
import statistics, sys
d, out = sys.argv[1], sys.argv[2]
def read(path):
    m = {}
    for line in open(path):
        k, _, v = line.partition(": ")
        if v: m[k.strip()] = float(v)
    return m
rounds = [(read("%s/nereus-%d.txt" % (d, r)), read("%s/torch-%d.txt" % (d, r))) for r in (1, 2, 3)]
lines = []
for model in ("gpt2-124M", "llama-124M"):
    for th in (1, 2):
        n = statistics.median(a["train.cpu.%s.t%d.tokens_per_s" % (model, th)] for a, _ in rounds)
        t = statistics.median(b["torch.%s.t%d.tokens_per_s" % (model, th)] for _, b in rounds)
        key = "torchpeer.%s.t%d" % (model, th)
        lines += ["%s.nereus_tok_s: %.6g" % (key, n), "%s.torch_tok_s: %.6g" % (key, t), "%s.ratio: %.4g" % (key, n / t)]
        print("%-11s %d thread(s): Nereus %7.1f tokens/s, PyTorch %7.1f: %.2fx (medians of 3 alternating rounds)"
              % (model, th, n, t, n / t))
open(out, "a").write("\n".join(lines) + "\n")
EOF
