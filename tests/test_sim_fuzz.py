#!/usr/bin/python3
"""test_sim_fuzz.py — valid simulator decks at random: N runs of
`bin/nereus --simulate` on MODELLED clusters nobody wrote a deck for (1 to
1,024 GPUs, 1 to 16 a node, any GPU kind and network, any of the four model
shapes for actor and critic, batch, minibatch, epochs, prompt and response
lengths growing or shrinking, an INJECTED slow rank, a random availability
trace), each with the six policies the simulator compares. Every deck must
end one of two ways:

  ran      exit 0 with `sim.POLICY.failed: 0|1` for each of the six
           policies (a fixed plan may fail: it cannot hold the run's longest
           responses, say); each that ran has its mean step seconds (> 0),
           transitions (≥ 0) and transition share (in [0, 1]), all finite;
           and the adaptive policies (admit-all, every-k, payback) have not
           failed where a fixed plan ran;
  outran   exit 1 with the same figures and the reason on stderr: the
           adaptive policies themselves found no plan at some step (the
           pool shrank or the responses grew past what any plan holds);
  refused  exit 2 with our message on stderr before any policy runs (the
           models do not fit the starting pool under any plan, saying
           which model-stage and by how much).

A signal, a hang, a run without its figures or with a non-finite one fails
the test; the deck, its availability file and its output stay under
OUT/caseK; the seed is fixed, so a failure reproduces.

  tests/test_sim_fuzz.py N OUT [SEED]     (from the repository root)
"""
import math
import os
import re
import sys

import fuzzcase

SHAPES = ["llama-3.1-8b", "qwen3-14b", "qwen3-32b", "llama-3.3-70b"]
POLICIES = 6


def availability(rng, gpus, steps, path):
    """a valid trace: lines 'STEP GPUS', steps increasing from 0, 1 <= GPUS <= gpus"""
    with open(path, "w") as f:
        f.write("# SYNTHETIC availability drawn by tests/test_sim_fuzz.py\n0 %d\n" % gpus)
        at = 0
        for _ in range(rng.randint(1, 12)):
            at += rng.randint(1, max(1, steps // 4))
            if at >= steps:
                break
            f.write("%d %d\n" % (at, rng.randint(max(1, gpus // 2) if rng.random() < 0.8 else 1, gpus)))


def deck(rng, work):
    gpus = rng.choice([1, 2, 3, 4, 7, 8, 12, 16, 24, 32, 48, 64, 100, 128, 256, 512, 1000, 1024])
    steps = rng.choice([10, 50, 120, 300])
    batch = rng.choice([16, 64, 128, 256, 512, 1024])
    minibatch = batch // rng.choice([1, 2, 4, 8])
    d = "[run]\nname = simfuzz\n[simulate]\n"
    d += "gpus = %d\nranks_per_node = %d\ngpu = %s\nnetwork = %s\n" % (
        gpus, rng.choice([1, 2, 3, 4, 8, 8, 16]), rng.choice(["h100", "h200", "a100"]),
        rng.choice(["infiniband", "slingshot"]))
    d += "actor = %s\ncritic = %s\n" % (rng.choice(SHAPES[:3] if gpus < 64 else SHAPES), rng.choice(SHAPES[:2]))
    d += "steps = %d\nbatch = %d\nminibatch = %d\nepochs = %d\n" % (steps, batch, minibatch, rng.choice([1, 2]))
    d += "prompt_len = %d\nresp_len = %d\nresp_len_end = %d\n" % (
        rng.choice([64, 512, 2048]), rng.choice([50, 500, 2000]), rng.choice([50, 1000, 8000, 16000]))
    d += "gamma = %s\nthreshold = %s\nevery_k = %d\nkeep_comms = %d\n" % (
        rng.choice(["0", "0.5", "2"]), rng.choice(["0.1", "0.3", "1"]), rng.choice([1, 10, 50]), rng.choice([0, 8]))
    if rng.random() < 0.5:
        a = rng.randint(0, steps - 1)
        d += "slow_rank = %d\nslow_factor = %s\nslow_from = %d\nslow_to = %d\n" % (
            rng.randint(0, gpus - 1), rng.choice(["1", "2", "3", "10"]), a, rng.randint(a, steps))
    if rng.random() < 0.5:
        availability(rng, gpus, steps, os.path.join(work, "avail.txt"))
        d += "availability = %s\n" % os.path.join(work, "avail.txt")
    return d


def check(so):
    """None, or what is wrong with a run's sim.* figures: each of the six policies says whether it failed (a
    fixed plan that cannot hold the run's longest responses, say); one that ran has its three figures in range;
    the adaptive ones (admit-all, every-k, payback) do not fail where a fixed one ran"""
    figs = dict(re.findall(r"^sim\.([\w.-]+): (\S+)$", so, re.M))
    failed = {k[:-len(".failed")]: v for k, v in figs.items() if k.endswith(".failed")}
    if len(failed) != POLICIES or any(v not in ("0", "1") for v in failed.values()):
        return "sim.*.failed lines: %s" % failed
    for pol, f in failed.items():
        if f == "1":
            continue
        for metric in ("mean_step_s", "transitions", "transition_share"):
            v = figs.get("%s.%s" % (pol, metric))
            try:
                x = float(v)
            except (TypeError, ValueError):
                return "sim.%s.%s: %s" % (pol, metric, v)
            if not math.isfinite(x) or x < 0 or (metric == "mean_step_s" and x <= 0) or \
                    (metric == "transition_share" and x > 1):
                return "sim.%s.%s: %s out of range" % (pol, metric, v)
    if any(failed[p] == "0" for p in ("static", "verl", "openrlhf")) and \
            any(failed.get(p) == "1" for p in ("admit-all", "every-k", "payback")):
        return "an adaptive policy failed where a fixed plan ran: %s" % failed
    return None


def main():
    n, out, rng = fuzzcase.start("test_sim_fuzz.py", 20261205)
    root = os.getcwd()
    counts, failures = {"ran": 0, "outran": 0, "refused": 0}, 0
    cases = []
    for k in range(n):
        work = os.path.join(out, "case%d" % k)
        os.makedirs(work)
        path = os.path.join(work, "sim.deck")
        with open(path, "w") as f:
            f.write(deck(rng, work))
        cases.append((k, work, [os.path.join(root, "bin/nereus"), "--simulate", path]))

    def one(case):
        """(why it failed or None, what it counts as, stdout, stderr)"""
        k, work, cmd = case
        rc, so, se = fuzzcase.run(cmd, work)
        if rc == 0:
            why = check(so)
            return why, "ran" if why is None else None, so, se
        if rc == 1 and re.search(r"^sim\.", so, re.M):  # the policies ran and the adaptive ones could not finish
            why = check(so) or (None if re.search(r"\berror: the adaptive policies cannot run", se) else
                                "exit 1 without the error message")
            return why, "outran" if why is None else None, so, se
        if rc == 2 and re.search(r"\berror: ", se):
            return None, "refused", so, se
        if rc == "timeout":
            return "no end within 120 s", None, so, se
        if isinstance(rc, int) and rc < 0:
            return "killed by signal %d" % -rc, None, so, se
        return "exit %s without an error message" % rc, None, so, se

    for (k, work, cmd), (why, key, so, se) in zip(cases, fuzzcase.run_all(cases, one)):
        if key:
            counts[key] += 1
        failures += fuzzcase.finish(k, work, why, cmd, so, se)
    print("sim fuzz: %d random valid simulator decks: %d ran, %d ran until the pool or the lengths outgrew every plan "
          "(exit 1, the reason on stderr), %d refused up front (exit 2), %d failed" %
          (n, counts["ran"], counts["outran"], counts["refused"], failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
