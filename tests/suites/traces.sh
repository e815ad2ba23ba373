# tests/suites/traces.sh — the HDF5 trace of a 4-rank run with a switch (tests/test_trace.sh: nereus-trace, plot-trace, truncated and killed traces); trace errors found after the deck parsed
section "traces: the HDF5 trace of a 4-rank run with a switch, nereus-trace, plot-trace, truncated and killed traces"
t traces 600 tests/test_trace.sh
! runs traces || grep -E '^FAIL|trace checks passed' "$LOG/traces.log" | sed 's/^/      /' | cut -c1-200
# errors the trace finds after the deck parsed: too many PAPI events, a trace file that cannot be created
for k in events file; do
  f=tests/decks/trace_bad_$k.deck
  bad "trace-deck-$k" "$(header expect "$f")" bin/nereus "$f"
done
# a recorded run (tests/traces/ahead_decide.h5, from tests/decks/ahead_decide.deck) whose planner priced a move
# at the step a move decided the step before ran: the replay calibrates transitions with that move's measurement
# first, as the run did, and reproduces the decision bit for bit
if want trace-replay-ahead-calib; then
  f=$LOG/trace-replay-ahead-calib.log
  bin/nereus-trace replay tests/traces/ahead_decide.h5 >"$f" 2>&1; rc=$?
  if [ $rc = 0 ] && grep -q '^       4 .* refuse ' "$f" && grep -q '^  the recorded parameters reproduce every recorded decision$' "$f"; then
    result trace-replay-ahead-calib 0 0 "$(grep -o 'reproduced: [0-9]* of [0-9]* recorded decision(s)' "$f" | head -1), step 4's priced after the move before it"
  else result trace-replay-ahead-calib 1 0 "exit $rc; $(grep -m1 DIFFERS "$f" | cut -c1-160) (log: $f)"; fi
fi
