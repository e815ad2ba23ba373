#!/usr/bin/env bash
# tests/gpu/run.sh — the GPU checks of issue #8, for a machine with one CUDA
# device (sm_90): builds with USE_CUDA=1, runs the parity program (every CUDA
# op against the CPU backend, the NCCL helper on one rank, the GEMM TFLOP/s
# table), then the end-to-end GPU runs. Budget: under 8 minutes on one H100/
# H200 (the build is ~1 min on 16 cores, parity ~1 min). Logs under
# build/gpu-logs/; the last line is "gpu: PASS" or "gpu: FAIL (…)".
# Exit: 0 pass, 1 fail, 77 no usable device (the parity program's SKIP line).
set -u
cd "$(dirname "$0")/../.."
LOG=build/gpu-logs
mkdir -p "$LOG"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-4} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
fail=()

if ! grep -q '^include cuda/cuda.mk' Makefile; then
  echo "gpu: FAIL (Makefile does not include cuda/cuda.mk yet)"; exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

# 1. build with the CUDA backend required
t0=$(date +%s)
if ! make USE_CUDA=1 -j"$(nproc)" bin/nereus build/tests/gpu/parity >"$LOG/build.log" 2>&1; then
  tail -30 "$LOG/build.log"; echo "gpu: FAIL (build, log: $LOG/build.log)"; exit 1
fi
grep -E '✓|✗|-  ' "$LOG/build.log" | grep -iE 'cuda|nccl' || true
echo "gpu: build $(( $(date +%s) - t0 )) s"

# 2. parity of every op, NCCL on one rank, GEMM table
t0=$(date +%s)
timeout 300 build/tests/gpu/parity 2>&1 | tee "$LOG/parity.log"
rc=${PIPESTATUS[0]}
echo "gpu: parity $(( $(date +%s) - t0 )) s, exit $rc"
if [ "$rc" = 77 ]; then echo "gpu: SKIP (no usable CUDA device)"; exit 77; fi
[ "$rc" = 0 ] || fail+=("parity (exit $rc)")

# 3. ---- LEAD: end-to-end GPU runs go here --------------------------------------
#   - tiny PPO on the GPU: bin/nereus with [run] backend = cuda on inputs/tiny.deck,
#     checking that the reward rises and the verification block passes
#   - the GPT-2 124M step: time per step and MFU (bench_step on the cuda backend)
#   Append to fail+=("name") on failure; keep the total under 8 minutes.
# ---------------------------------------------------------------------------------

if [ ${#fail[@]} -eq 0 ]; then echo "gpu: PASS"; exit 0; fi
echo "gpu: FAIL (${fail[*]})"; exit 1
