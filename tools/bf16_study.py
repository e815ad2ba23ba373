#!/usr/bin/python3
"""bf16_study.py DIR — the summary of tests/bench/bf16_study.sh's runs in DIR.

Each run NAME = DECK-DTYPE-tisCAP-sSEED left NAME.log (its verification block) and NAME.trace.h5. Per
run: the task reward of the last 10 steps, the reward per generated token (the sum over steps of the
mean reward over the sum of the mean response lengths: reward earned per token generated), the greedy
evaluation after PPO, and the means over steps of logp_gap, gen_kl and tis_mean. Per deck and way: the
mean and standard deviation over seeds; each bf16 way against fp32 paired by seed (mean difference and its
standard error), called "within the seed spread" when the difference is at most fp32's standard deviation
over seeds. Prints a markdown table; writes DIR/bf16_study.txt (metric: value lines) and DIR/bf16_study.md.
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
    }


def mean_sd(x):
    x = np.asarray(x, dtype=float)
    return float(x.mean()), float(x.std(ddof=1)) if len(x) > 1 else 0.0


def main():
    d = sys.argv[1]
    pat = re.compile(r"^(.*)-(fp32|bf16)-tis([0-9.]+)-s([0-9]+)\.log$")
    runs = {}
    for log in sorted(glob.glob(os.path.join(d, "*.log"))):
        m = pat.match(os.path.basename(log))
        if not m:
            continue
        deck, dtype, tis, seed = m.group(1), m.group(2), m.group(3), int(m.group(4))
        fig = run_figures(d, os.path.basename(log)[:-4])
        if fig is None:
            print("not counted (did not pass): " + log, file=sys.stderr)
            continue
        runs.setdefault((deck, dtype + ("" if tis == "0" else "+tis" + tis)), {})[seed] = fig
    metrics, md = [], []
    md.append("| deck | way | seeds | reward, last 10 steps | reward per generated token | greedy eval after | "
              "logp_gap (nats) | gen_kl (nats) | mean TIS weight | reward/token against fp32, paired | within the seed spread |")
    md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for deck in sorted({k[0] for k in runs}):
        base = runs.get((deck, "fp32"), {})
        for way in ["fp32", "bf16", "bf16+tis2"]:
            r = runs.get((deck, way))
            if not r:
                continue
            seeds = sorted(r)
            col = {k: mean_sd([r[s][k] for s in seeds]) for k in r[seeds[0]]}
            tag = deck.replace("-", "_") + "." + way.replace("+", "_")
            for k, (m, sd) in col.items():
                metrics.append("bf16study.%s.%s: %.6g" % (tag, k, m))
                metrics.append("bf16study.%s.%s_sd: %.6g" % (tag, k, sd))
            vs, within = "", ""
            paired = [s for s in seeds if s in base]
            if way != "fp32" and len(paired) > 1:
                diff = [r[s]["reward_per_token"] - base[s]["reward_per_token"] for s in paired]
                dm, dsd = mean_sd(diff)
                se = dsd / math.sqrt(len(diff))
                spread = mean_sd([base[s]["reward_per_token"] for s in paired])[1]
                ok = abs(dm) <= spread
                vs = "%+.4f ± %.4f (SE)" % (dm, se)
                within = "yes" if ok else "no"
                metrics.append("bf16study.%s.reward_per_token_diff: %.6g" % (tag, dm))
                metrics.append("bf16study.%s.reward_per_token_diff_se: %.6g" % (tag, se))
                metrics.append("bf16study.%s.within_seed_spread: %d" % (tag, ok))
            md.append("| %s | %s | %d | %.3f ± %.3f | %.4f ± %.4f | %.3f ± %.3f | %.2e | %+.2e | %.4f | %s | %s |" % (
                deck, way, len(seeds), *col["reward_last10"], *col["reward_per_token"], *col["eval_after"],
                col["logp_gap"][0], col["gen_kl"][0], col["tis_mean"][0], vs, within))
    text = "\n".join(md)
    print(text)
    open(os.path.join(d, "bf16_study.md"), "w").write(text + "\n")
    open(os.path.join(d, "bf16_study.txt"), "w").write("\n".join(metrics) + "\n")


if __name__ == "__main__":
    main()
