/* backend.cpp — the CUDA backend of the CPU emulation: the real cuda/cuda.cu
 * up to its device probe (the backend's state, the cuBLAS handle and TF32
 * switch, the memory ops; cuda_backend.inc), then cuemu_backend() in place of
 * the probe, which runs the probe's own statements that fill the Backend
 * from every kernel file's cuda_register_* (cuda_register.inc). Both pieces
 * are cut from cuda.cu at build time by extract.py. What the probe does
 * besides (device choice by local rank, the NCCL groups or host staging it
 * registers with the comm facade) is not emulated: tests/test_comm_device.c
 * and tests/gpu/run.sh cover it.
 */
#include "cuda_backend.inc"

extern "C" const Backend *cuemu_backend(void) {
    if (cuda_state == 1) return &cuda_backend;
    (void)cuda_fail_why; /* the probe's failure text: no probe runs here */
    cublasCheck(cublasCreate(&cuda_handle));
    snprintf(cuda_dev_name, sizeof cuda_dev_name, "the CPU emulation of the kernels (no GPU)");
#include "cuda_register.inc"
    return &cuda_backend;
}
