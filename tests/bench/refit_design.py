#!/usr/bin/python3
"""refit_design.py [BIN] — the sweep's calibration plans chosen by cal_design (D-optimal, SWEEP_REFIT_DESIGN=1)
against the sample's quarters in turn (SWEEP_REFIT_SHIFT), on every stored dump (tests/bench/dumps/*.txt), refitted
by the sweep_refit binary BIN (default build/bench/sweep_refit). Each pair is scored on the plans that both hold
out, as the design might otherwise leave the easier plans held out. Prints one line per dump and the means.
Run from the repository root with /usr/bin/python3."""
import glob, os, re, statistics, subprocess, sys

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/bench/sweep_refit"
ROW = re.compile(r"\s*\d+ \(dump\s+(\d+)\) (calibrate|held-out)\s+measured [0-9.]+\s+predicted [0-9.]+\s+([-+0-9.]+)%")


def refit(dump, env):
    """{plan's place in the dump: |error| %}, and the set that calibrated"""
    out = subprocess.run([BIN, dump, "1", "-v"], capture_output=True, text=True, env=dict(os.environ, **env)).stdout
    errs, cal = {}, set()
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            errs[int(m.group(1))] = abs(float(m.group(3)))
            if m.group(2) == "calibrate":
                cal.add(int(m.group(1)))
    if not errs:
        sys.exit("refit_design: no per-plan rows from %s on %s" % (BIN, dump))
    return errs, cal


qs, ds = [], []
for dump in sorted(glob.glob("tests/bench/dumps/*.txt")):
    n = int(re.search(r"^sweep (\d+)", open(dump).read(), re.M).group(1))
    de, dc = refit(dump, {"SWEEP_REFIT_DESIGN": "1"})
    pq, pd = [], []
    for q in range(4):
        qe, qc = refit(dump, {"SWEEP_REFIT_SHIFT": str(q * n // 4)})
        both = [i for i in qe if i not in qc and i not in dc and i in de]
        pq.append(statistics.mean(qe[i] for i in both))
        pd.append(statistics.mean(de[i] for i in both))
    qs.append(statistics.mean(pq))
    ds.append(statistics.mean(pd))
    print("%-24s held out by both: quarters %6.2f%%  design %6.2f%%" % (os.path.basename(dump)[:-4], qs[-1], ds[-1]))
print("%d dumps: MAPE quarters %.2f%%, design %.2f%%; the design lower on %d" %
      (len(qs), statistics.mean(qs), statistics.mean(ds), sum(d < q for q, d in zip(qs, ds))))
