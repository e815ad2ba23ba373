# tests/suites/traces.sh — the HDF5 trace of a 4-rank run with a switch (tests/test_trace.sh: nereus-trace, plot-trace, truncated and killed traces); trace errors found after the deck parsed
section "traces: the HDF5 trace of a 4-rank run with a switch, nereus-trace, plot-trace, truncated and killed traces"
t traces 600 tests/test_trace.sh
! runs traces || grep -E '^FAIL|trace checks passed' "$LOG/traces.log" | sed 's/^/      /' | cut -c1-200
# errors the trace finds after the deck parsed: too many PAPI events, a trace file that cannot be created
for k in events file; do
  f=tests/decks/trace_bad_$k.deck
  bad "trace-deck-$k" "$(header expect "$f")" bin/nereus "$f"
done
