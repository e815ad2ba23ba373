"""tests/plot_trace_check.py ROOT TRACE OUT.png — runs tools/plot-trace on TRACE with Figure.savefig captured and
checks the figure: the step axis has whole-number ticks only, and no two labels of the top panel (texts and
event markers) overlap. Exit 0 with "ok: ..." or an AssertionError naming what is wrong (tests/suites/firsthour.sh)."""
import importlib.machinery, importlib.util, sys, os
import matplotlib
matplotlib.use("Agg")
from matplotlib.figure import Figure
saved = []
orig = Figure.savefig
def keep(self, *a, **k):
    saved.append(self)
    return orig(self, *a, **k)
Figure.savefig = keep
path = os.path.join(sys.argv[1], "tools/plot-trace")
loader = importlib.machinery.SourceFileLoader("plot_trace", path)
spec = importlib.util.spec_from_loader("plot_trace", loader)
mod = importlib.util.module_from_spec(spec)
loader.exec_module(mod)
rc = mod.main(["plot-trace", sys.argv[2], sys.argv[3]])
assert rc == 0 and saved, "no figure"
fig = saved[0]
ax1, ax2, ax3 = fig.axes[:3]
ticks = [t for t in ax3.get_xticks() if ax3.get_xlim()[0] <= t <= ax3.get_xlim()[1]]
bad = [t for t in ticks if abs(t - round(t)) > 1e-9]
assert not bad, "step ticks that are not whole: %s" % bad
r = fig.canvas.get_renderer()
boxes = [(t.get_text(), t.get_window_extent(r)) for t in ax1.texts if t.get_text()]
# the single-point markers (drift events, decisions) count as labels too: a text over a marker hides it
boxes += [("marker %s" % l.get_label(), l.get_window_extent(r)) for l in ax1.lines if len(l.get_xdata()) == 1]
for i in range(len(boxes)):
    for j in range(i + 1, len(boxes)):
        if boxes[i][1].overlaps(boxes[j][1]):
            raise AssertionError("labels overlap: %r and %r" % (boxes[i][0][:30], boxes[j][0][:30]))
print("ok: %d ticks, %d labels" % (len(ticks), len(boxes)))
