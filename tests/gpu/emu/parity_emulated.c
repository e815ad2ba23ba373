/* parity_emulated.c — parity-emulated: tests/gpu/parity.c's op checks, run in
 * parity's own order and shapes, with the CUDA backend's kernels emulated on
 * the CPU (tests/gpu/emu/) against the real CPU backend. No GPU is involved:
 * this checks the arithmetic and indexing of the kernel source, the cuBLAS
 * call mapping and the memory ops, not the device (docs/CUDA.md, "Tests").
 *
 * The checks (parity_checks.inc) and their sequence (parity_sequence.inc)
 * are cut from parity.c at build time by extract.py; what parity runs after
 * them (the GEMM benchmark, NCCL and the comm groups) needs a device and is
 * left out. Output as parity's: one line per check, a count, a verdict.
 * Exit 0 when every check passed, 1 otherwise; what CUDA leaves undefined
 * (launch.c) ends the run with a line starting "cuemu:" and exit status 3.
 */
#include "parity_checks.inc"

const Backend *cuemu_backend(void); /* backend.cpp */

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    GPU = cuemu_backend();
    CPU = backend_cpu();
    CPU->set_threads(4);
    printf("parity-emulated: the kernels of cuda/ emulated on the CPU (no GPU) against the CPU backend\n");
    double t0 = nr_now();
#include "parity_sequence.inc"
    printf("parity-emulated: %d passed, %d failed (%.1f s)\n%s\n", n_pass, n_fail, nr_now() - t0,
           n_fail ? "VERDICT: FAIL" : "VERDICT: PASS");
    MPI_Finalize();
    return n_fail ? 1 : 0;
}
