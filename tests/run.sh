#!/usr/bin/env bash
# tests/run.sh — runs the tests of `make test`, suite by suite (docs/TESTING.md):
#
#   tests/run.sh                      every suite, every test
#   tests/run.sh SUITE...             those suites (the files tests/suites/SUITE.sh)
#   tests/run.sh -k PATTERN [SUITE…]  the tests whose names match PATTERN (an extended regular
#                                     expression, anywhere in the name: -k '^equiv-r2$' for one)
#   tests/run.sh -l [SUITE…]          the suites and what each checks
#
# Each suite makes its own fixtures, and only those a selected test needs, so
# one test runs alone. One line per test; the last line is "N passed, N
# failed" (", N skipped" where something was skipped). Exit: 0 when every
# selected test passed or skipped, 1 when one failed, 2 for a bad command line.
# See also: make test (builds first), make fuzz, tests/bench/run.sh, docs/TESTING.md.
set -u
cd "$(dirname "$0")/.."
SUITES="unit decks runs restart ft transitions planner sim traces llama grpo async kernels gguf text reward data textrun firsthour"
PAT=""; list=0
while [ $# -gt 0 ]; do
  case $1 in
    -k) [ $# -ge 2 ] || { echo "usage: tests/run.sh [-k PATTERN] [SUITE...]" >&2; exit 2; }; PAT=$2; shift 2;;
    -l) list=1; shift;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; echo "suites: $SUITES"; exit 0;;
    -*) echo "tests/run.sh: unknown option '$1' (-k PATTERN, -l)" >&2; exit 2;;
    *) break;;
  esac
done
chosen=${*:-$SUITES}
for s in $chosen; do
  [ -f "tests/suites/$s.sh" ] || { echo "tests/run.sh: no suite '$s' (suites: $SUITES)" >&2; exit 2; }
done
if [ $list = 1 ]; then
  for s in $chosen; do printf '%-12s %s\n' "$s" "$(sed -n '1s/^# [^ ]* — //p' "tests/suites/$s.sh")"; done
  exit 0
fi
. tests/workdir.sh test-run # runs write their traces there, not into the checkout
. tests/lib.sh
rm -rf "$LOG"; mkdir -p "$LOG"
COUNTS=$LOG/results.txt; : >"$COUNTS"
export OPENBLAS_NUM_THREADS=1
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl_vader_max_send_size=131072

# each suite in a subshell: nothing but the files it makes itself carries over to the next;
# its wall time goes to $LOG/suite-times.txt
for s in $chosen; do
  t0=$(date +%s)
  ( . "tests/suites/$s.sh" )
  echo "$s $(( $(date +%s) - t0 )) s" >>"$LOG/suite-times.txt"
done

echo "== summary"
pass=$(grep -c '^pass ' "$COUNTS"); fail=$(grep -c '^fail ' "$COUNTS"); skip=$(grep -c '^skip ' "$COUNTS")
sed -n 's/^fail /failed: /p' "$COUNTS"
[ $((pass + fail + skip)) -gt 0 ] || echo "no test matches '$PAT' in: $chosen"
if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" = 0 ] && [ $((pass + skip)) -gt 0 ]
