#!/usr/bin/env python3
"""launches.py CU OUT — makes a kernel file of cuda/ compilable for the CPU
emulation (tests/gpu/emu/), at build time, so the test always runs the kernels
as they are in the checkout. Only two kinds of lines change, and no line of
the source is added or removed, so with the #line directive written first the
compiler's messages point into the .cu file:

- a launch `kernel<<<grid, block[, smem]>>>(args)` becomes
  `cuemu_launch_kernel(kernel, "kernel", grid, block, smem, args)`
  (include/cuda_runtime.h);
- `extern __shared__ T name[];` (the dynamic shared memory) becomes a pointer
  to the emulator's buffer.

Anything it cannot rewrite (a template kernel, a launch with a stream, a
dynamic shared array of another form) stops the build with a message, rather
than compiling something else.
"""
import re
import sys


def fail(path, src, pos, msg):
    line = src.count('\n', 0, pos) + 1
    sys.exit('%s:%d: launches.py: %s' % (path, line, msg))


def split_top(text):
    """text split at the commas outside any brackets"""
    parts, depth, cur = [], 0, ''
    for ch in text:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def closing_paren(src, open_pos):
    depth = 0
    for q in range(open_pos, len(src)):
        if src[q] == '(':
            depth += 1
        elif src[q] == ')':
            depth -= 1
            if depth == 0:
                return q
    return -1


def rewrite_launches(path, src):
    out, i = [], 0
    while True:
        j = src.find('<<<', i)
        if j < 0:
            out.append(src[i:])
            return ''.join(out)
        m = re.search(r'([A-Za-z_]\w*)\s*$', src[i:j])
        if not m:
            fail(path, src, j, 'a launch whose kernel is not a plain name (a template kernel?)')
        start = i + m.start(1)
        k = src.find('>>>', j)
        if k < 0:
            fail(path, src, j, '<<< without >>>')
        config = split_top(src[j + 3:k])
        if len(config) == 2:
            config.append('0')
        if len(config) != 3:
            fail(path, src, j, 'a launch with a stream (not emulated: everything runs in order)')
        p = k + 3
        while p < len(src) and src[p] in ' \t\n':
            p += 1
        if p >= len(src) or src[p] != '(':
            fail(path, src, j, 'no argument list after >>>')
        q = closing_paren(src, p)
        if q < 0:
            fail(path, src, p, 'unbalanced argument list')
        name = m.group(1)
        args = src[p + 1:q]
        out.append(src[i:start])
        out.append('cuemu_launch_kernel(%s, "%s", %s, %s, %s%s%s)' % (
            name, name, config[0], config[1], config[2], ', ' if args.strip() else '', args))
        i = q + 1


def rewrite_dynamic_shared(path, src):
    pat = re.compile(r'extern\s+__shared__\s+([A-Za-z_][\w\s]*?)\s+([A-Za-z_]\w*)\s*\[\s*\]\s*;')
    src = pat.sub(lambda m: '%s *%s = reinterpret_cast<%s *>(cuemu_dynamic_smem);' % (
        m.group(1), m.group(2), m.group(1)), src)
    left = src.find('extern __shared__')
    if left >= 0:
        fail(path, src, left, 'a dynamic shared array of a form this script does not know')
    return src


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: launches.py CU OUT')
    path, out = sys.argv[1], sys.argv[2]
    src = open(path).read()
    new = rewrite_dynamic_shared(path, rewrite_launches(path, src))
    assert new.count('\n') == src.count('\n'), 'line count changed'
    with open(out, 'w') as f:
        f.write('#line 1 "%s"\n' % path)
        f.write(new)


main()
