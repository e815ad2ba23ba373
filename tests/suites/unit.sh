# tests/suites/unit.sh — the C test programs: pure modules on one process, the MPI ones on 4 and 8 ranks, the CUDA op checks (on a GPU where one is, and emulated on the CPU)
section "unit tests"
# every build/tests/test_* from a tests/test_*.c, alone on one process, except those run with ranks below
# (and test_ckpt, test_transition, test_gguf, test_text and test_reward, in the restart, transitions, gguf,
# text and reward suites)
ranked=" test_emu_comms test_comm_device test_model_tp test_model_pp test_ckpt test_transition test_gguf test_text test_reward "
for src in tests/test_*.c; do
  p=$(basename "$src" .c)
  [[ $ranked == *" $p "* ]] || t "$p" 300 "build/tests/$p"
done
# EMU communicators against the pure grid math, 8 ranks on the 2 cores
t emu-comms 120 $L -np 8 build/tests/test_emu_comms
# device-buffer paths of the comm facade (host staging, NCCL-like groups) against plain MPI, 4 ranks
t comm-device 120 $L -np 4 build/tests/test_comm_device
# tensor parallelism in the model: tp = 1, 2, 4 against the unsharded model
t model-tp 120 $L -np 4 build/tests/test_model_tp
# pipeline parallelism (GPipe) with TP: (pp, tp) in (2,1) (4,1) (2,2) (4,2) (2,4) against the unsharded model
t model-pp 120 $L -np 8 build/tests/test_model_pp
# CUDA parity (every CUDA op against the CPU backend): runs where a GPU is, skipped (exit 77) elsewhere
if runs gpu-parity; then
  timed secs timeout 300 build/tests/gpu/parity >"$LOG/gpu-parity.log" 2>&1
  case $rc in 0) result gpu-parity 0 "$secs";; 77) result gpu-parity 77 "$secs" "$(grep -m1 SKIP "$LOG/gpu-parity.log")";; *) result gpu-parity 1 "$secs" "exit $rc";; esac
fi
# the same op checks on the real kernel source of cuda/, run on the CPU by an emulator (tests/gpu/emu/, docs/CUDA.md):
# the kernels' arithmetic and indexing, no GPU involved
if runs cuda-kernels-emulated; then
  timed secs timeout 240 build/tests/gpu/emu/parity-emulated >"$LOG/cuda-kernels-emulated.log" 2>&1
  counts=$(sed -n 's/^parity-emulated: \([0-9]* passed, [0-9]* failed\).*/\1/p' "$LOG/cuda-kernels-emulated.log")
  note="an emulation on the CPU, not a GPU run: ${counts:-no count}"
  [ $rc = 0 ] && result cuda-kernels-emulated 0 "$secs" "$note" || result cuda-kernels-emulated 1 "$secs" "exit $rc; $note"
fi
