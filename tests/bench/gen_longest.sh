#!/usr/bin/env bash
# tests/bench/gen_longest.sh [TRACE.h5 ...] — the cost model's generation phase priced with each step's
# longest response fed (Workload.resp_longest) against priced at the mean (0), calibrated as the live planner
# calibrates, against the gen phase measured (build/bench/gen_longest; docs/PERFORMANCE.md "The longest
# response"). Without traces it runs tests/bench/gen-long.deck RUNS times (default 3) on one rank with the
# live planner on (policy static: it calibrates, one rank has one plan) over 10 steps, the INJECTED minimum
# length ramping FROM (default 200, the deck's) -> 300 over 9, and evaluates each trace, then all together (each
# measured second the median over the traces), then the median of each trace's own error. FROM=0: the first steps end at the untrained actor's first EOS (responses of tens of
# tokens, the longest several times the mean), so the tail's share of the decode moves over the run.
# Not run in CI (about 2-3 minutes a run on 2 cores).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
runs=${RUNS:-3} from=${FROM:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
traces=("$@")
if [ ${#traces[@]} = 0 ]; then
  for r in $(seq 1 "$runs"); do
    mkdir -p "$work/$r"
    (cd "$work/$r" && "$here/jobs/local.sh" -np 1 "$here/bin/nereus" "$here/tests/bench/gen-long.deck" \
       --set ppo.steps=10 --set inject.resp_len_ramp=9 --set inject.resp_len_from="$from" \
       --set planner.policy=static > run.log 2>&1)
    traces+=("$work/$r/gen-long.trace.h5")
  done
fi
for t in "${traces[@]}"; do
  "$here/build/bench/gen_longest" "$t" | tee "$work/eval.txt"
  grep '^gen_longest\.' "$work/eval.txt" | awk '{ print $1, $2 }' >> "$work/all.txt"
done
# every measured second the median over the traces, step by step (gen_longest given them all), then the median
# over the traces of each trace's own errors
if [ ${#traces[@]} -gt 1 ]; then "$here/build/bench/gen_longest" "${traces[@]}" | sed 's/^gen_longest\./gen_longest.pooled./'; fi
for m in before.fed_mape before.zero_mape final.fed_mape final.zero_mape; do
  grep "^gen_longest.$m:" "$work/all.txt" | awk '{ print $2 }' | sort -g |
    awk -v m="$m" '{ a[NR] = $1 } END { printf "gen_longest.median.%s: %.4f (%d traces)\n", m, a[int((NR + 1) / 2)], NR }'
done
