#!/usr/bin/env bash
# tests/gpu/run.sh — the GPU checks of issue #8, for a machine with one CUDA
# device (sm_90): builds with USE_CUDA=1, runs the parity program (every CUDA
# op against the CPU backend, the NCCL helper and the EMU's NCCL groups on
# one rank, the GEMM TFLOP/s table), the host staging of device buffers with
# two ranks on the GPU, then the end-to-end GPU runs. Budget: under 8 minutes on one H100/
# H200 (the build is ~1 min on 16 cores, parity ~1 min). Logs under
# build/gpu-logs/; the last line is "gpu: PASS" or "gpu: FAIL (…)".
# Exit: 0 pass, 1 fail, 77 no usable device (the parity program's SKIP line).
set -u
cd "$(dirname "$0")/../.."
LOG=build/gpu-logs
mkdir -p "$LOG"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-4} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl_vader_max_send_size=131072
fail=()

if ! grep -q '^include cuda/cuda.mk' Makefile; then
  echo "gpu: FAIL (Makefile does not include cuda/cuda.mk yet)"; exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

# 1. build with the CUDA backend required; NEREUS_GPU_PREBUILT=1 (tests/gpu/device.sh): the binaries were built
#    elsewhere and carried here, where the libraries' headers are missing: check they are there and use CUDA
t0=$(date +%s)
if [ "${NEREUS_GPU_PREBUILT:-0}" = 1 ]; then
  for b in bin/nereus build/tests/gpu/parity build/bench/bench_step; do
    [ -x "$b" ] || { echo "gpu: FAIL (NEREUS_GPU_PREBUILT=1 but $b was not carried)"; exit 1; }
  done
  ldd bin/nereus | grep -q libcudart || { echo "gpu: FAIL (bin/nereus is not linked with the CUDA runtime: build it with USE_CUDA=1)"; exit 1; }
  ldd bin/nereus build/tests/gpu/parity build/bench/bench_step | grep 'not found' && { echo "gpu: FAIL (libraries missing: source .rt/activate.sh)"; exit 1; }
  echo "gpu: prebuilt binaries (NEREUS_GPU_PREBUILT=1), no build here"
elif ! make USE_CUDA=1 -j"$(nproc)" bin/nereus build/tests/gpu/parity >"$LOG/build.log" 2>&1; then
  tail -30 "$LOG/build.log"; echo "gpu: FAIL (build, log: $LOG/build.log)"; exit 1
else
  grep -E '✓|✗|-  ' "$LOG/build.log" | grep -iE 'cuda|nccl' || true
  echo "gpu: build $(( $(date +%s) - t0 )) s"
fi

# 2. parity of every op, NCCL on one rank, GEMM table
t0=$(date +%s)
timeout 300 build/tests/gpu/parity 2>&1 | tee "$LOG/parity.log"
rc=${PIPESTATUS[0]}
echo "gpu: parity $(( $(date +%s) - t0 )) s, exit $rc"
if [ "$rc" = 77 ]; then echo "gpu: SKIP (no usable CUDA device)"; exit 77; fi
[ "$rc" = 0 ] || fail+=("parity (exit $rc)")

# 2b. device buffers across ranks. One GPU cannot hold two ranks of one NCCL
#     communicator (NCCL refuses a duplicate GPU), so the NCCL group paths
#     ran above with one rank (parity's check_groups: an EMU with
#     tp = pp = dp = 1 whose NCCL all-reduce is the identity, and a dup'd
#     communicator whose staging round-trips). Here two ranks share the GPU:
#     the probe sees the shared device, builds no NCCL groups, and every
#     collective and send on device buffers stages through host memory.
echo "gpu: one GPU cannot hold two NCCL ranks: NCCL groups checked with 1 rank (parity), host staging with 2 ranks on this GPU"
t0=$(date +%s)
first=${CUDA_VISIBLE_DEVICES:-0}; first=${first%%,*}   # both ranks on one card, even on a multi-GPU machine
timeout 120 env CUDA_VISIBLE_DEVICES="$first" jobs/local.sh -np 2 build/tests/gpu/parity --groups 2>&1 | tee "$LOG/groups-2ranks.log"
rc=${PIPESTATUS[0]}
echo "gpu: 2-rank staging $(( $(date +%s) - t0 )) s, exit $rc"
grep -q 'no NCCL groups' "$LOG/groups-2ranks.log" || fail+=("2 ranks on one GPU did not fall back to staging")
[ "$rc" = 0 ] || fail+=("2-rank staging (exit $rc)")
if [ -z "${CUDA_VISIBLE_DEVICES:-}" ] && [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
  # two GPUs: real 2-rank NCCL groups
  timeout 120 env CUDA_VISIBLE_DEVICES=0,1 jobs/local.sh -np 2 build/tests/gpu/parity --groups 2>&1 | tee "$LOG/groups-2gpus.log"
  rc=${PIPESTATUS[0]}
  grep -q 'NCCL [0-9.]* groups for the EMU' "$LOG/groups-2gpus.log" || fail+=("2 GPUs: no NCCL groups")
  [ "$rc" = 0 ] || fail+=("2-GPU NCCL groups (exit $rc)")
fi

# 3. end-to-end: the tiny PPO deck on the GPU beside the same deck on the CPU.
#    The reward must rise as on the CPU; the first steps' rewards are compared
#    (fp32 on both, so they agree until a sampled token flips on rounding).
[ "${NEREUS_GPU_PREBUILT:-0}" = 1 ] || make USE_CUDA=1 -j"$(nproc)" build/bench/bench_step >>"$LOG/build.log" 2>&1 || fail+=("build bench_step")
sed 's/^\[run\]$/[run]\nbackend = cuda/' inputs/tiny.deck > "$LOG/tiny-cuda.deck"
sed 's/^\[run\]$/[run]\nbackend = cpu/' inputs/tiny.deck > "$LOG/tiny-cpu.deck"
for b in cuda cpu; do
  t0=$(date +%s)
  timeout 240 bin/nereus "$LOG/tiny-$b.deck" > "$LOG/tiny-$b.log" 2>&1; rc=$?
  echo "gpu: tiny deck on $b: exit $rc, $(( $(date +%s) - t0 )) s, $(grep -m1 '^nereus:.*backend' "$LOG/tiny-$b.log")"
  [ $rc = 0 ] || fail+=("tiny deck on $b (exit $rc)")
done
grep -E '^verify\.(reward|eval|status)' "$LOG/tiny-cuda.log" | sed 's/^/  cuda /'
grep -E '^verify\.(reward|eval|status)' "$LOG/tiny-cpu.log" | sed 's/^/  cpu  /'
paste <(grep '^step' "$LOG/tiny-cuda.log" | head -5 | cut -d'|' -f1,2) <(grep '^step' "$LOG/tiny-cpu.log" | head -5 | cut -d'|' -f2) | sed 's/^/  first steps (cuda | cpu): /'
g=$(sed -n 's/^verify.reward_gain: //p' "$LOG/tiny-cuda.log")
awk "BEGIN{exit !(\"$g\" != \"\" && $g >= 0.15)}" 2>/dev/null || fail+=("tiny deck on cuda: reward gain '$g' < 0.15")

# 4. the training step on the GPU: tiny and GPT-2 124M (B=4, T=64), fp32 and TF32,
#    MFU against the H200's dense peaks (fp32 67 TFLOP/s, TF32 tensor cores 494)
timeout 240 build/bench/bench_step "$LOG/bench-gpu.txt" --backend cuda --peak-tflops 67 2>&1 | tee "$LOG/bench-fp32.log" || fail+=("bench fp32")
timeout 240 build/bench/bench_step "$LOG/bench-gpu.txt" --backend cuda --tf32 --peak-tflops 494 2>&1 | tee "$LOG/bench-tf32.log" || fail+=("bench tf32")

if [ ${#fail[@]} -eq 0 ]; then echo "gpu: PASS"; exit 0; fi
echo "gpu: FAIL (${fail[*]})"; exit 1
