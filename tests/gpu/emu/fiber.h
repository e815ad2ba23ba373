/* fiber.h — the fibers the CPU emulation runs CUDA threads on (fiber.c):
 * one stack per thread of a block, all on one OS thread, switched only where
 * a thread waits (a barrier, a warp shuffle) or ends; launch.c schedules
 * them. The switch is a plain exchange of stacks and callee-saved registers,
 * without the signal-mask system call of swapcontext: parity's checks resume
 * threads about 58 million times, and a round trip takes about 60 ns here
 * against 620 ns with swapcontext (2026-12-05), i.e. 3 s instead of 36.
 */
#ifndef CUEMU_FIBER_H
#define CUEMU_FIBER_H

typedef struct {
    void *sp; /* saved stack pointer while switched out */
    void (*entry)(int);
    int index;
} CuEmuFiber;

/* fiber `index` gets a fresh stack that starts in entry(index) on the next
 * cuemu_fiber_resume; entry must not return (it ends with cuemu_fiber_yield
 * and is never resumed again). The stacks are allocated once, for up to
 * 1024 fibers, each with a guard page below it. */
void cuemu_fiber_start(CuEmuFiber *f, int index, void (*entry)(int));

/* from the scheduler: run f until it yields */
void cuemu_fiber_resume(CuEmuFiber *f);

/* from inside the running fiber: back to the scheduler */
void cuemu_fiber_yield(void);

#endif
