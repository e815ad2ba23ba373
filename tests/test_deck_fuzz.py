#!/usr/bin/python3
"""test_deck_fuzz.py — bad input of any kind, at random: N decks mutated from
the base decks in tests/decks/fuzz/ (values swapped for edge cases, lines
deleted, doubled, swapped or cut, stray headers and junk, a random byte
changed, the file truncated), each run by bin/nereus: on one rank; on 4
through jobs/local.sh (plans, a [switch], the live planner with injected
drift); the simulation deck with --simulate. Every deck must end one of two
ways:

  ran      exit 0 and the verification block (`verify.status: ...`);
  refused  exit 1 or 2 with our message on stderr ("...error: ...").

A signal, a hang (over the per-deck timeout), another exit status, or a
refusal without a message fails the test; the failing deck and its output
are kept under OUT for a rerun. Each deck runs in its own directory under
OUT, so what a mutated path writes (`[ckpt] dir = nan`) lands there. The mutations come from a fixed seed, so a
failure reproduces.

  tests/test_deck_fuzz.py N OUT [SEED]     (from the repository root or
                                            tests/workdir.sh's directory)
"""
import os
import re
import sys

import fuzzcase

# (deck, how it runs: ranks through jobs/local.sh, 1 without mpirun, 0 with --simulate)
BASES = [("one_rank.deck", 1), ("payback.deck", 1), ("simulate.deck", 0), ("four_ranks_live.deck", 4),
         ("four_ranks_switch.deck", 4)]
VALUES = ["", "-1", "0", "1", "2", "3", "7", "1e308", "1e999", "nan", "inf", "-inf", "-0",
          "99999999999999999999", "2147483648", "-2147483649", "abc", "1.5", "0.0000001", "1e-40", "3.4e39",
          "0x10", "1 2", "@", "@ 0", "@ 0-3", "@ 5-2", "@ -1", "@ 0,0", "tp0", "tp2 @ 0", "dp3 @ 0", "pp2 @ 0-1",
          "tp4 pp2 dp2 @ all", '"quoted # x"', '"unterminated', "x" * 5000, "true", "false", "yes",
          "/nonexistent/dir/x", "/dev/null", "/tmp", "inputs/sim/avail-16.txt", "reverse", "sort,sort", ",",
          "h200", "nvlink", "llama-3.1-8b", "auto", "colocated", "disaggregated", "broadcast", "payback",
          "sweep", "off", "PAPI_TOT_INS", "\t", "\u00e9", "0-3", "1,2", "all", "3,3", "4", "8", "100", "static",
          "admit-all", "tp2 pp2 @ 0-3", "dp4 @ 3,2,1,0", "tp3 @ 0-2", "pp4 @ 0-3", "tp2 dp2 @ 0-3", "dp8 @ all",
          "@ 0-7"]
JUNK = ["[plan]", "[switch]", "[bogus]", "[", "garbage", "= 3", "x =", "[run]", "[simulate]"]


def mutate(rng, text):
    """one to four edits of the deck's lines; bytes out"""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        op, i = rng.random(), rng.randrange(len(lines))
        line = lines[i]
        if op < 0.45 and "=" in line:
            lines[i] = line.split("=")[0] + "= " + rng.choice(VALUES)
        elif op < 0.55 and len(lines) > 1:
            del lines[i]
        elif op < 0.62:
            lines.insert(i, line)
        elif op < 0.68:
            lines.insert(i, rng.choice(JUNK))
        elif op < 0.74:
            lines[i] = line[:rng.randrange(len(line) + 1)]
        elif op < 0.80:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op < 0.86 and "=" in line:
            lines[i] = line + rng.choice(["0", "x", " # c", "#c", "\r", " 1"])
        elif op < 0.93:
            data = bytearray("\n".join(lines).encode())
            data[rng.randrange(len(data))] = rng.randrange(256)
            return bytes(data)
        else:
            data = "\n".join(lines).encode()
            return data[:rng.randrange(len(data) + 1)]
    return "\n".join(lines).encode()


def main():
    n, out, rng = fuzzcase.start("test_deck_fuzz.py", 20261204)
    root = os.getcwd()  # what a deck's relative paths mean is the case's directory: it runs there
    bases = [(open(os.path.join("tests/decks/fuzz", f)).read(), np) for f, np in BASES]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    counts, failures = {"ran": 0, "refused": 0}, 0
    cases = []
    for k in range(n):
        text, np = rng.choice(bases)
        work = os.path.join(out, "case%d" % k)
        os.makedirs(work)
        deck = os.path.join(work, "fuzz.deck")
        with open(deck, "wb") as f:
            # mutated before the paths go in, so that the same seed gives the same decks from any directory
            f.write(mutate(rng, text).replace(b"@WORK@", work.encode()).replace(b"@ROOT@", root.encode()))
        nereus = os.path.join(root, "bin/nereus")
        cmd = [nereus, "--simulate", deck] if np == 0 else [nereus, deck] if np == 1 else \
            [os.path.join(root, "jobs/local.sh"), "-np", str(np), nereus, deck]
        cases.append((k, np, work, cmd))

    def check(case):
        """(why it failed or None, what it counts as, stdout, stderr)"""
        k, np, work, cmd = case
        rc, so, se = fuzzcase.run(cmd, work, env, timeout=90)
        if rc == 0 and re.search(r"^verify\.status: (pass|fail)$", so, re.M):
            return None, "ran", so, se
        if rc in (1, 2) and re.search(r"\berror: ", se):
            return None, "refused", so, se
        if rc == "timeout":
            why = "no end within 90 s"
        elif isinstance(rc, int) and rc < 0:
            why = "killed by signal %d" % -rc
        elif rc in (0, 1, 2):
            why = "exit %d without %s" % (rc, "the verification block" if rc == 0 else "an error message")
        else:
            why = "exit %s" % rc
        return why, None, so, se

    for (k, np, work, cmd), (why, key, so, se) in zip(cases, fuzzcase.run_all(cases, check)):
        if key:
            counts[key] += 1
        failures += fuzzcase.finish(k, work, why, cmd, so, se, what="simulate" if np == 0 else "%d rank(s)" % np)
    print("fuzz: %d mutated decks: %d ran, %d refused with a message, %d failed" %
          (n, counts["ran"], counts["refused"], failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
