#!/usr/bin/env python3
"""extract.py WHAT SRC OUT — cuts, at build time, the verbatim pieces of the
real sources that the CPU emulation of the CUDA kernels (tests/gpu/emu/)
reuses, so the test never holds a copy of them. Each piece starts with a
#line directive, so compiler messages point into SRC. WHAT is one of:

  backend   cuda/cuda.cu up to its "/* --- probe" section: the backend's
            state, the cuBLAS handle and TF32 switch, the memory ops
            (included by backend.cpp)
  register  the statements of cuda.cu's backend_cuda_probe from "Backend be;"
            through "backend_cuda_set_tf32(cuda_tf32);": the Backend filled
            by every kernel file's cuda_register_* (included in backend.cpp's
            cuemu_backend)
  checks    tests/gpu/parity.c up to its "/* ---- GEMM benchmark" section:
            the helpers and every op check (included by parity_emulated.c); the
            NEREUS_CUDA conditional it opens is closed
  sequence  the statements of parity.c's main from check_memory(); up to, not
            including, check_nccl();: the checks and their shapes, in order
            (included in parity_emulated.c's main)

A marker that is missing stops the build with a message: the source changed
shape, and this script (or parity_emulated.c) must follow.
"""
import sys


def cut(path, src, start, end, after=0, through=False):
    """whole lines of src from the one holding start (None: the top; searched
    from after) up to end (through: up to the end of end's line)"""
    i = src.find(start, after) if start else 0
    if i < 0:
        sys.exit('%s: extract.py: no "%s" (the source changed shape)' % (path, start.strip()))
    j = src.find(end, i)
    if j < 0:
        sys.exit('%s: extract.py: no "%s" after "%s"' % (path, end.strip(), start.strip()))
    i = src.rfind('\n', 0, i) + 1
    if through:
        j = src.index('\n', j) + 1
    return '#line %d "%s"\n%s' % (src.count('\n', 0, i) + 1, path, src[i:j])


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ('backend', 'register', 'checks', 'sequence'):
        sys.exit('usage: extract.py backend|register|checks|sequence SRC OUT')
    what, path, out = sys.argv[1:]
    src = open(path).read()
    if what == 'backend':
        piece = cut(path, src, None, '\n/* --- probe') + '\n'
    elif what == 'register':
        probe_at = src.find('backend_cuda_probe(char')
        if probe_at < 0:
            sys.exit('%s: extract.py: no backend_cuda_probe' % path)
        piece = cut(path, src, '    Backend be;', 'backend_cuda_set_tf32(cuda_tf32);', probe_at, through=True)
    elif what == 'checks':
        piece = cut(path, src, None, '\n/* ---- GEMM benchmark') + '\n'
        if '#ifndef NEREUS_CUDA' not in piece or '\n#else\n' not in piece:
            sys.exit('%s: extract.py: the checks are no longer under "#ifndef NEREUS_CUDA ... #else"' % path)
        piece += '#endif /* NEREUS_CUDA (closed by extract.py) */\n'
    else:
        main_at = src.find('\nint main(')
        if main_at < 0:
            sys.exit('%s: extract.py: no main' % path)
        piece = cut(path, src, '    check_memory();', '    check_nccl();', main_at)
    with open(out, 'w') as f:
        f.write(piece)


main()
