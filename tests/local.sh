#!/usr/bin/env bash
# tests/local.sh — jobs/local.sh for the runs of make test ($L in tests/lib.sh). The suites run the same
# decks again and again in one working directory (build/test-run), each run replacing the trace (and the
# checkpoints) an earlier one left there, as every run did before a run refused to replace another's: a
# bin/nereus run on a deck started here gets --set trace.overwrite=true --set ckpt.overwrite=true, the
# documented way to say so ([trace] overwrite, [ckpt] overwrite, inputs/REFERENCE.md).
# tests/suites/firsthour.sh calls jobs/local.sh itself where it checks the refusals.
#   tests/local.sh [-np N] PROGRAM [ARGS...]   (as jobs/local.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
nereus=0 plain=1
for a; do
  case $a in
    */bin/nereus|bin/nereus|*/bin/nereus-ft|bin/nereus-ft) nereus=1;;
    --simulate|--help|-h|--deck-reference) plain=0;;
  esac
done
if [ $nereus = 1 ] && [ $plain = 1 ]; then set -- "$@" --set trace.overwrite=true --set ckpt.overwrite=true; fi
exec "$here/jobs/local.sh" "$@"
