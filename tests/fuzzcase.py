"""fuzzcase.py — what the fuzz tests (test_deck_fuzz.py, test_plan_fuzz.py,
test_sim_fuzz.py, test_file_fuzz.py) share: their command line, running one
case with a time limit, and keeping a failed case's command and output
beside its deck for a rerun."""
import os
import random
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def start(name, default_seed, more=""):
    """the command line `N OUT [SEED]` (more: how further arguments read, for the usage line): N, OUT as an
    absolute path, emptied, and a generator seeded with SEED (default_seed without one)"""
    if len(sys.argv) < 3:
        sys.exit("usage: %s N OUT [SEED]%s" % (name, more))
    n, out = int(sys.argv[1]), os.path.abspath(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else default_seed)
    shutil.rmtree(out, ignore_errors=True)
    return n, out, rng


def run(cmd, work, env=None, timeout=120):
    """(exit status or "timeout", stdout, stderr) of cmd run in work"""
    try:
        r = subprocess.run(cmd, env=env, cwd=work, capture_output=True, timeout=timeout)
        return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        return "timeout", (e.stdout or b"").decode("utf-8", "replace"), (e.stderr or b"").decode("utf-8", "replace")


def finish(k, work, why, cmd, so, se, what="", prefix=""):
    """a failed case (why set): its command (after prefix, e.g. an environment setting) and output into
    work/output.txt, a FAIL line; a passed one: its directory removed. Returns 1 for a failure, else 0."""
    if not why:
        shutil.rmtree(work)
        return 0
    with open(os.path.join(work, "output.txt"), "w") as f:
        f.write("%s%s\n--- stdout\n%s\n--- stderr\n%s\n" % (prefix, " ".join(cmd), so[-6000:], se[-4000:]))
    print("FAIL case %d%s: %s; kept in %s" % (k, " (%s)" % what if what else "", why, work))
    return 1


def run_all(cases, fn):
    """[fn(case) for case in cases], FUZZ_JOBS (default 2) at a time: the cases are made first, in order (the
    generator's draws do not depend on how they run), each runs in its own directory, the results come in order"""
    jobs = max(1, int(os.environ.get("FUZZ_JOBS", "2")))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(fn, cases))
