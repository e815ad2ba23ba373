#!/usr/bin/env bash
# tests/gpu/device.sh — tests/gpu/run.sh on a lent GPU machine that has the CUDA toolkit and driver but none
# of the Debian libraries Nereus links (Open MPI, parallel HDF5, OpenBLAS, PAPI), so nothing can be built
# there. On the build machine, once:
#
#   make USE_CUDA=1 -j2 bin/nereus bin/nereus-trace build/tests/gpu/parity build/bench/bench_step
#   tests/gpu/runtime-pack.sh .rt bin/nereus build/tests/gpu/parity build/bench/bench_step
#
# (.rt, bin and build are git-ignored; about 35 MiB with the tree, under the 64 MiB a call carries), then one
# device call, with time left over for a second:
#
#   run(command="tests/gpu/device.sh", carry=[".rt", "bin", "build/tests/gpu", "build/bench"], timeout_s=540)
#
# There it unpacks the libraries (source .rt/activate.sh), runs tests/gpu/run.sh with the carried binaries
# (NEREUS_GPU_PREBUILT=1) and copies its logs to $OUT (at most 8 files come back: the run's whole output,
# then the logs that say most). The last line is run.sh's: "gpu: PASS", "gpu: FAIL (...)" or "gpu: SKIP".
set -u
cd "$(dirname "$0")/../.."
[ -f .rt/activate.sh ] || { echo "gpu: FAIL (.rt was not carried: see the head of $0)"; exit 1; }
# shellcheck disable=SC1091
source .rt/activate.sh || { echo "gpu: FAIL (could not unpack .rt)"; exit 1; }
OUT=${OUT:-build/gpu-out}
mkdir -p "$OUT"
export NEREUS_GPU_PREBUILT=1 PYTHONUNBUFFERED=1
set -o pipefail
tests/gpu/run.sh 2>&1 | tee "$OUT/gpu-run.log"
rc=${PIPESTATUS[0]}
for f in parity.log groups-2ranks.log tiny-cuda.log bench-fp32.log bench-tf32.log bench-gpu.txt build.log; do
  [ -f "build/gpu-logs/$f" ] && [ "$(ls "$OUT" | wc -l)" -lt 8 ] && cp "build/gpu-logs/$f" "$OUT/"
done
exit "$rc"
