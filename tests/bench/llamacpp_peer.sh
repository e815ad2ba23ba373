#!/usr/bin/env bash
# tests/bench/llamacpp_peer.sh [OUT] — decode tokens/s at batch 1 on one thread, Nereus against
# llama.cpp on the same GPT-2 124M weights in fp32 (docs/PERFORMANCE.md). Not run in CI.
# Needs `make tests benches` and a Python with gguf, numpy and llama-cpp-python in $VENV
# (default build/venv-llama):
#   python3 -m venv build/venv-llama
#   build/venv-llama/bin/pip install gguf numpy llama-cpp-python   # builds llama.cpp: ~1 h on 2 cores
# The weights are random (no GPT-2 file on these machines): build/tests/make_llmc writes an llm.c
# GPT-2 124M file (vocabulary padded 50257 -> 50304), nereus-ckpt imports it and exports it as a
# Hugging Face directory, llamacpp_peer.py writes that as GGUF (F32). Nereus decodes the imported
# checkpoint (build/bench/bench_gen --weights), llama.cpp the GGUF file. Appends
# gen.weights.b1.* and llamacpp.tok_s to OUT (default build/bench-peer.txt). Files in build/peer/.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${VENV:-build/venv-llama}
out=${1:-build/bench-peer.txt}
py=$venv/bin/python
[ -x "$py" ] || { echo "llamacpp_peer: no Python at $py (see the header of $0)" >&2; exit 2; }
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
d=build/peer
mkdir -p "$d"
[ -f "$d/gpt2.bin" ] || build/tests/make_llmc "$d/gpt2.bin" 50257 50304 1024 12 12 768 1
[ -f "$d/gpt2.h5" ] || bin/nereus-ckpt import-llmc "$d/gpt2.bin" "$d/gpt2.h5"
[ -f "$d/hf/model.safetensors" ] || bin/nereus-ckpt export-hf "$d/gpt2.h5" "$d/hf"
[ -f "$d/gpt2.gguf" ] || "$py" tests/bench/llamacpp_peer.py convert "$d/hf" "$d/gpt2.gguf"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1) x $(nproc)" >> "$out"
build/bench/bench_gen "$out" --weights "$d/gpt2.h5"
"$py" tests/bench/llamacpp_peer.py time "$d/gpt2.gguf" 64 | tee "$d/llamacpp.txt"
grep '^llamacpp\.' "$d/llamacpp.txt" >> "$out"
