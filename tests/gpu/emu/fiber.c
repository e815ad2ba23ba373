/* fiber.c — stacks and the stack switch for the CPU emulation's fibers
 * (fiber.h). x86-64 only (System V ABI), as the default build is: the
 * switch saves the callee-saved registers, MXCSR and the x87 control word on
 * the old stack, stores its stack pointer, loads the new one and restores the
 * same set from it. Every stack lies in one mapping, with a PROT_NONE guard
 * page below each, so an overflow faults instead of corrupting a neighbour.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fiber.h"

#if !defined(__x86_64__)
#error "tests/gpu/emu/fiber.c: the fiber switch is x86-64 assembly; port cuemu_fiber_switch to this architecture"
#endif

#define MAX_FIBERS 1024 /* CUDA's limit on threads per block */
#define STACK_BYTES ((size_t)128 << 10)

/* cuemu_fiber_switch(save, load): *save = this context's stack pointer, then continue the one saved at load */
void cuemu_fiber_switch(void **save, void *load);
__asm__(".text\n"
        ".globl cuemu_fiber_switch\n"
        ".hidden cuemu_fiber_switch\n"
        ".type cuemu_fiber_switch, @function\n"
        "cuemu_fiber_switch:\n"
        "\tpushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n"
        "\tsubq $8, %rsp\n\tstmxcsr (%rsp)\n\tfnstcw 4(%rsp)\n"
        "\tmovq %rsp, (%rdi)\n"
        "\tmovq %rsi, %rsp\n"
        "\tldmxcsr (%rsp)\n\tfldcw 4(%rsp)\n\taddq $8, %rsp\n"
        "\tpopq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n"
        "\tret\n"
        ".size cuemu_fiber_switch, .-cuemu_fiber_switch\n");

static char *stacks;
static size_t slot_bytes;
static void *scheduler_sp;
static CuEmuFiber *running;

/* where a fresh stack starts: the fiber's entry, which never returns */
static void fiber_main(void) {
    running->entry(running->index);
    fprintf(stderr, "cuemu: a fiber's entry returned\n");
    abort();
}

void cuemu_fiber_start(CuEmuFiber *f, int index, void (*entry)(int)) {
    if (index < 0 || index >= MAX_FIBERS) {
        fprintf(stderr, "cuemu: fiber %d out of range (at most %d)\n", index, MAX_FIBERS);
        abort();
    }
    if (!stacks) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        slot_bytes = STACK_BYTES + page;
        stacks = mmap(NULL, MAX_FIBERS * slot_bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (stacks == MAP_FAILED) {
            perror("cuemu: mmap of the fiber stacks");
            abort();
        }
        for (int i = 0; i < MAX_FIBERS; i++)
            if (mprotect(stacks + (size_t)i * slot_bytes, page, PROT_NONE)) {
                perror("cuemu: mprotect of a guard page");
                abort();
            }
    }
    /* the frame cuemu_fiber_switch pops: control words, six registers, then it
     * returns into fiber_main, which finds a (never used) return address
     * above it, so its stack is aligned as after a call */
    uint64_t *sp = (uint64_t *)(stacks + (size_t)(index + 1) * slot_bytes);
    unsigned short fpucw;
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    *--sp = 0;
    *--sp = (uint64_t)(uintptr_t)fiber_main;
    for (int r = 0; r < 6; r++) *--sp = 0;
    *--sp = (uint64_t)__builtin_ia32_stmxcsr() | (uint64_t)fpucw << 32;
    f->sp = sp;
    f->entry = entry;
    f->index = index;
}

void cuemu_fiber_resume(CuEmuFiber *f) {
    running = f;
    cuemu_fiber_switch(&scheduler_sp, f->sp);
    running = NULL;
}

void cuemu_fiber_yield(void) {
    cuemu_fiber_switch(&running->sp, scheduler_sp);
}
