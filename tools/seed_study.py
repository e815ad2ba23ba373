#!/usr/bin/python3
"""seed_study.py DIR TAG BASE WAY... — the summary of a study of ways to run the same decks over many seeds
(tests/bench/bf16_study.sh, tests/bench/async_study.sh).

Each run NAME = DECK-WAY-sSEED left NAME.log (its verification block) and NAME.trace.h5; BASE is the way the
others are compared with. Per run: the task reward of the last 10 steps, the reward per generated token (the
sum over steps of the mean reward over the sum of the mean response lengths: reward earned per token
generated), the greedy evaluation after PPO, and the means over steps of logp_gap, gen_kl, tis_mean and the
batches' staleness. Per deck and way: the mean and standard deviation over seeds; each way against BASE
paired by seed (mean difference and its standard error), called "within the seed spread" when the difference
is at most BASE's standard deviation over seeds. Prints a markdown table; writes DIR/TAG.txt (`TAG.DECK.WAY.
METRIC: value` lines) and DIR/TAG.md.
"""
import glob
import math
import os
import re
import sys

import h5py
import numpy as np


def verify(log, key):
    for line in open(log):
        if line.startswith("verify." + key + ": "):
            return line.split(": ", 1)[1].strip()
    return None


def run_figures(d, name):
    log = os.path.join(d, name + ".log")
    if verify(log, "status") != "pass":
        return None
    with h5py.File(os.path.join(d, name + ".trace.h5"), "r") as f:
        s = f["steps"][...]
    return {
        "reward_last10": float(verify(log, "reward_last10")),
        "reward_per_token": float(s["reward"].sum() / s["resp_len"].sum()),
        "eval_after": float(verify(log, "eval_greedy_after_ppo") or "nan"),
        "logp_gap": float(s["logp_gap"].mean()),
        "gen_kl": float(s["gen_kl"].mean()),
        "tis_mean": float(s["tis_mean"].mean()),
        "staleness": float(s["staleness"].mean()) if "staleness" in s.dtype.names else 0.0,
    }


def mean_sd(x):
    x = np.asarray(x, dtype=float)
    return float(x.mean()), float(x.std(ddof=1)) if len(x) > 1 else 0.0


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: seed_study.py DIR TAG BASE WAY...")
    d, tag0, base_way, ways = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[3:]
    pat = re.compile(r"^(.*)-(" + "|".join(re.escape(w) for w in ways) + r")-s([0-9]+)\.log$")
    runs = {}
    for log in sorted(glob.glob(os.path.join(d, "*.log"))):
        m = pat.match(os.path.basename(log))
        if not m:
            continue
        deck, way, seed = m.group(1), m.group(2), int(m.group(3))
        fig = run_figures(d, os.path.basename(log)[:-4])
        if fig is None:
            print("not counted (did not pass): " + log, file=sys.stderr)
            continue
        runs.setdefault((deck, way), {})[seed] = fig
    metrics, md = [], []
    md.append("| deck | way | seeds | reward, last 10 steps | reward per generated token | greedy eval after | "
              "logp_gap (nats) | gen_kl (nats) | mean TIS weight | staleness | reward/token against %s, paired | "
              "within the seed spread |" % base_way)
    md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for deck in sorted({k[0] for k in runs}):
        base = runs.get((deck, base_way), {})
        for way in ways:
            r = runs.get((deck, way))
            if not r:
                continue
            seeds = sorted(r)
            col = {k: mean_sd([r[s][k] for s in seeds]) for k in r[seeds[0]]}
            tag = "%s.%s.%s" % (tag0, deck.replace("-", "_"), way.replace("-", "_").replace("+", "_"))
            for k, (m, sd) in col.items():
                metrics.append("%s.%s: %.6g" % (tag, k, m))
                metrics.append("%s.%s_sd: %.6g" % (tag, k, sd))
            vs, within = "", ""
            paired = [s for s in seeds if s in base]
            if way != base_way and len(paired) > 1:
                diff = [r[s]["reward_per_token"] - base[s]["reward_per_token"] for s in paired]
                dm, dsd = mean_sd(diff)
                se = dsd / math.sqrt(len(diff))
                spread = mean_sd([base[s]["reward_per_token"] for s in paired])[1]
                ok = abs(dm) <= spread
                vs = "%+.4f ± %.4f (SE)" % (dm, se)
                within = "yes" if ok else "no"
                metrics.append("%s.reward_per_token_diff: %.6g" % (tag, dm))
                metrics.append("%s.reward_per_token_diff_se: %.6g" % (tag, se))
                metrics.append("%s.within_seed_spread: %d" % (tag, ok))
            md.append("| %s | %s | %d | %.3f ± %.3f | %.4f ± %.4f | %.3f ± %.3f | %.2e | %+.2e | %.4f | %.2f | %s | %s |" % (
                deck, way, len(seeds), *col["reward_last10"], *col["reward_per_token"], *col["eval_after"],
                col["logp_gap"][0], col["gen_kl"][0], col["tis_mean"][0], col["staleness"][0], vs, within))
    text = "\n".join(md)
    print(text)
    open(os.path.join(d, tag0 + ".md"), "w").write(text + "\n")
    open(os.path.join(d, tag0 + ".txt"), "w").write("\n".join(metrics) + "\n")


if __name__ == "__main__":
    main()
