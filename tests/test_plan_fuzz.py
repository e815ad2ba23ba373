#!/usr/bin/python3
"""test_plan_fuzz.py — valid decks at random: N runs of the tiny job on R
ranks (default 4), each with a random valid [plan], and either a random
valid [switch] to another plan before a random step or (about a third) the
live planner under random INJECTED drift (ranks leaving and joining the
pool, a slowdown, growing responses), and random [transition] settings
(the broadcast or the engine weight sync, forwarding, kept communicator
sets, chunk and window sizes), some with the job's assembly window cut to a
few floats (NEREUS_JOB_WINDOW). A quarter checkpoint every step and are
then restarted from their last checkpoint under another random plan on 2,
4 or 8 ranks for two more steps. Where
tests/test_deck_fuzz.py feeds bad input and mostly gets refusals, this one
feeds only decks that must run, so the step, the transition engine and the
weight sync meet layouts nobody wrote by hand. Every deck must:

  exit 0 with `verify.status: pass`;
  with a [switch], make its one transition (`verify.transitions: 1`);
  where it moved, have the per-tensor checks passed (`[transition] verify =
  true` in every deck);
  where it wrote a trace, have `nereus-trace summary` read it, and with the
  live planner, `nereus-trace replay` reproduce every recorded decision;
  where it checkpointed, restart and pass under the other plan.

A signal, a hang, a refusal, or a run that fails keeps the deck and its
output under OUT/caseK for a rerun; the seed is fixed, so a failure
reproduces.

  tests/test_plan_fuzz.py N OUT [SEED] [RANKS]   (from the repository root)

The model has 4 heads and 2 layers, the batch 16 and the minibatch 8, so
tp is 1, 2 or 4, pp 1 or 2 (1 for actor.gen: pipelined generation is not
supported), dp divides 16 (8 for the training stages), tp*pp*dp ranks at
most R, listed in random order.
"""
import os
import re
import sys

import fuzzcase

STAGES = ["actor.gen", "actor.inf", "ref.inf", "critic.inf", "actor.train", "critic.train", "reward.inf"]

BASE = """[run]
name = planfuzz
seed = {seed}
[model]
n_layer = 2
n_embd = 32
n_head = 4
max_seq = 16
[task]
names = reverse,sort
digits = 4
[sft]
steps = {sft}
batch = 16
lr = 3e-3
[ppo]
steps = {steps}
batch = 16
epochs = {epochs}
minibatch = 8
actor_lr = 1e-3
critic_lr = 2e-3
kl_beta = 0.02
max_response = 6
[reward]
network = {network}
"""


def layout(rng, stage, ranks):
    """one valid layout line for stage on ranks 0..ranks-1"""
    while True:
        tp = rng.choice([1, 1, 2, 4])
        pp = 1 if stage == "actor.gen" else rng.choice([1, 1, 2])
        dp = rng.choice([1, 2, 4, 8] if "train" in stage else [1, 2, 4, 8, 16])
        if tp * pp * dp <= ranks:
            break
    who = rng.sample(range(ranks), tp * pp * dp)
    degrees = " ".join("%s%d" % (n, d) for n, d in (("tp", tp), ("pp", pp), ("dp", dp)) if d > 1 or rng.random() < 0.3)
    if sorted(who) == list(range(ranks)) and rng.random() < 0.3:
        at = "all"
    elif who == list(range(who[0], who[0] + len(who))) and len(who) > 1:
        at = "%d-%d" % (who[0], who[-1])
    else:
        at = ",".join(map(str, who))
    return "%s = %s @ %s" % (stage, degrees, at) if degrees else "%s = @ %s" % (stage, at)


def ranks_of(rng, ranks, most):
    """a random non-empty set of at most `most` ranks, as a comma list"""
    return ",".join(map(str, sorted(rng.sample(range(ranks), rng.randint(1, most)))))


def planner(rng, ranks, steps):
    """the live planner with INJECTED drift: a pool change, a slowdown, growing responses (each or not)"""
    d = "[planner]\npolicy = %s\nwarmup = %d\nevery_k = %d\nthreshold = %s\ngamma = %s\n" % (
        rng.choice(["payback", "payback", "admit-all", "every-k", "static"]), rng.choice([1, 2]), rng.choice([1, 2, 3]),
        rng.choice(["0.1", "0.3"]), rng.choice(["0.5", "2", "10"]))
    d += "[inject]\n"
    if rng.random() < 0.6:
        leave = rng.randint(1, steps - 2)
        d += "leave_ranks = %s\nleave_step = %d\n" % (ranks_of(rng, ranks, ranks - 1), leave)
        if rng.random() < 0.6:
            d += "join_step = %d\n" % rng.randint(leave + 1, steps)
    if rng.random() < 0.5:
        d += "slow_ranks = %s\nslow_factor = %d\nslow_step = %d\n" % (
            rng.choice([ranks_of(rng, ranks, 2), "busiest"]), rng.choice([2, 3]), rng.randint(0, steps - 1))
    if rng.random() < 0.5:
        d += "resp_len_from = %d\nresp_len_to = %d\n" % (rng.randint(0, 2), rng.randint(3, 6))
    return d


def deck(rng, ranks, work):
    """the deck, and where it checkpoints, the deck of a restart from its last checkpoint under another random
    plan on 2, 4 or 8 ranks (two more steps), with that rank count; else None"""
    live = rng.random() < 0.35
    steps = rng.randint(5, 8) if live else rng.randint(2, 4)
    shape = dict(seed=rng.randint(1, 10**6), sft=rng.choice([0, 1, 2]), epochs=rng.choice([1, 2]),
                 network=rng.choice(["true", "false"]))
    d = BASE.format(steps=steps, **shape)
    d += "[plan]\n" + "".join(layout(rng, s, ranks) + "\n" for s in STAGES)
    if live:
        d += planner(rng, ranks, steps)
    else:
        d += "[switch]\nstep = %d\n" % rng.randint(1, steps - 1)
        d += "".join(layout(rng, s, ranks) + "\n" for s in STAGES)
    chunk = rng.choice([4, 64, 1024])
    d += "[transition]\nverify = true\nsync = %s\nforward = %s\nkeep_comms = %d\nchunk_kib = %d\nwindow_kib = %d\n" % (
        rng.choice(["engine", "broadcast"]), rng.choice(["true", "false"]), rng.choice([0, 1, 8]), chunk,
        chunk * rng.choice([1, 2, 8]))
    ckpt = "[ckpt]\nevery = 1\nkeep = 2\ndir = %s/ckpt\n" % work
    restart = None
    if rng.random() < 0.25:
        d += ckpt
        r2 = rng.choice([2, 4, 8])
        restart = (BASE.format(steps=steps + 2, **shape) + "[plan]\n" +
                   "".join(layout(rng, s, r2) + "\n" for s in STAGES) + ckpt + "[trace]\nfile = none\n", r2)
    d += "[trace]\nfile = %s\n" % (rng.choice(["none", work + "/t.h5"]))
    return d, restart


def replayed(root, trace, work):
    """the trace's replay at the recorded gamma reproduces every recorded decision (or says there were none)"""
    rc, so, _ = fuzzcase.run([os.path.join(root, "bin/nereus-trace"), "replay", trace], work)
    return rc == 0 and ("the recorded parameters reproduce every recorded decision" in so or
                        "/decisions is empty in this trace" in so)


def main():
    n, out, rng = fuzzcase.start("test_plan_fuzz.py", 20261205, " [RANKS]")
    ranks = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    root = os.getcwd()
    failures, windows, moves, live, restarts, traced = 0, 0, 0, 0, 0, 0
    for k in range(n):
        work = os.path.join(out, "case%d" % k)
        os.makedirs(work)
        path = os.path.join(work, "plan.deck")
        text, restart = deck(rng, ranks, work)
        trace = os.path.join(work, "t.h5") if "file = %s/t.h5" % work in text else None
        with open(path, "w") as f:
            f.write(text)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        w = rng.choice([None, None, None, 1, 777, 100000])
        if w:
            env["NEREUS_JOB_WINDOW"] = str(w)
            windows += 1
        cmd = [os.path.join(root, "jobs/local.sh"), "-np", str(ranks), os.path.join(root, "bin/nereus"), path]
        rc, so, se = fuzzcase.run(cmd, work, env)
        why = None
        if rc == "timeout":
            why = "no end within 120 s"
        elif rc != 0:
            why = "exit %s: %s" % (rc, (re.findall(r".*error.*", se) or ["no message"])[0][:200])
        elif not re.search(r"^verify\.status: pass$", so, re.M):
            why = "verify.status is not pass"
        elif "[switch]" in text and not re.search(r"^verify\.transitions: 1$", so, re.M):
            why = "not one transition: %s" % (re.findall(r"^switch.*|^transition.*", so, re.M) or ["none"])[0][:200]
        elif not re.search(r"^verify\.transitions: 0$", so, re.M) and "per-tensor checks passed" not in so:
            why = "the per-tensor checks did not pass"
        elif trace and fuzzcase.run([os.path.join(root, "bin/nereus-trace"), "summary", trace], work)[0] != 0:
            why = "nereus-trace summary of the run's trace failed"
        elif trace and "[planner]" in text and not replayed(root, trace, work):
            why = "nereus-trace replay does not reproduce the run's decisions"
        elif restart:  # the last checkpoint under another plan and rank count: it must load and run on
            with open(os.path.join(work, "restart.deck"), "w") as f:
                f.write(restart[0])
            cmd = [os.path.join(root, "jobs/local.sh"), "-np", str(restart[1]), os.path.join(root, "bin/nereus"),
                   os.path.join(work, "restart.deck"), "--restart", "latest"]
            rc, so2, se2 = fuzzcase.run(cmd, work, env)
            if rc != 0 or not re.search(r"^verify\.status: pass$", so2, re.M):
                why = "the restart on %d ranks: exit %s, %s" % (
                    restart[1], rc, (re.findall(r".*error.*", se2) or ["no error message"])[0][:200])
                so, se = so + "\n--- restart\n" + so2, se + "\n--- restart\n" + se2
            restarts += why is None
        if not why:
            moves += not re.search(r"^verify\.transitions: 0$", so, re.M)
            live += "[planner]" in text
            traced += trace is not None
        failures += fuzzcase.finish(k, work, why, cmd, so, se, prefix="NEREUS_JOB_WINDOW=%s " % w if w else "")
    print("plan fuzz: %d random valid decks on %d ranks (%d with a small assembly window, %d with the live planner, "
          "%d with a trace): %d passed (%d moved plan, %d restarted under another plan), %d failed" %
          (n, ranks, windows, live, traced, n - failures, moves, restarts, failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
