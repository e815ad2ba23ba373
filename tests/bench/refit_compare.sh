#!/bin/bash
# refit_compare.sh A B [DUMP...] — two builds of the cost model compared on stored sweeps, with less noise
# than one split gives: each dump is refitted by both sweep_refit binaries A and B (or commands; see the
# SWEEP_REFIT_* switches in sweep_refit.c), calibrated in turn on each quarter of its sampled plans
# (SWEEP_REFIT_SHIFT = 0, n/4, n/2, 3n/4), and held out on the rest. Prints one line a fit and then
# the mean held-out MAPE of A and of B over all fits, and in how many B was lower and higher.
#
#   cp build/bench/sweep_refit /tmp/refit_old    # before the change
#   make build/bench/sweep_refit                 # after it
#   tests/bench/refit_compare.sh /tmp/refit_old build/bench/sweep_refit    # every stored dump
set -u
if [ $# -lt 2 ]; then echo "usage: refit_compare.sh A B [DUMP...]" >&2; exit 2; fi
A=$1 B=$2
shift 2
[ $# -gt 0 ] || set -- "$(dirname "$0")"/dumps/*.txt
for f in "$@"; do
    read -r -a qa <<< "$("$(dirname "$0")"/refit_quarters.sh "$A" "$f")" || exit 1
    read -r -a qb <<< "$("$(dirname "$0")"/refit_quarters.sh "$B" "$f")" || exit 1
    [ ${#qa[@]} = 4 ] && [ ${#qb[@]} = 4 ] || exit 1
    n=$(awk '/^sweep /{print $2; exit}' "$f")
    for q in 0 1 2 3; do echo "$(basename "$f" .txt) shift $((q * n / 4)): A ${qa[$q]}%  B ${qb[$q]}%"; done
done | awk '{print} {x = $5 + 0; y = $7 + 0; a += x; b += y; n++; if (y < x - 0.005) lo++; else if (y > x + 0.005) hi++}
    END {if (n) printf "%d fits: held-out MAPE A %.2f%%, B %.2f%% on average; B lower in %d, higher in %d\n", n, a / n, b / n, lo, hi}'
