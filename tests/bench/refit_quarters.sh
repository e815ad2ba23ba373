#!/bin/bash
# refit_quarters.sh BIN DUMP — one sweep dump refitted by the sweep_refit binary BIN (or a command) four
# times, calibrated in turn on each quarter of its sampled plans (SWEEP_REFIT_SHIFT = 0, n/4, n/2, 3n/4)
# and held out on the rest: prints the four held-out MAPEs (%) on one line, in that order. Exit 1, with
# a message, when DUMP is not a sweep dump or a refit prints no MAPE. Used by refit_compare.sh and by
# make bench (tests/bench/live.sh).
set -u
if [ $# -ne 2 ]; then echo "usage: refit_quarters.sh BIN DUMP" >&2; exit 2; fi
n=$(awk '/^sweep /{print $2; exit}' "$2" 2>/dev/null)
[ -n "$n" ] || { echo "refit_quarters: $2 is not a sweep dump" >&2; exit 1; }
out=""
for q in 0 1 2 3; do
    sh=$((q * n / 4))
    m=$(SWEEP_REFIT_SHIFT=$sh "$1" "$2" | tail -1 | grep -o "MAPE [0-9.]*" | cut -d' ' -f2)
    [ -n "$m" ] || { echo "refit_quarters: no MAPE from $1 on $2 (shift $sh)" >&2; exit 1; }
    out="$out${out:+ }$m"
done
echo "$out"
