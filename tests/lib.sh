# tests/lib.sh — the helpers every suite of tests/run.sh uses (sourced by it,
# from the scratch working directory tests/workdir.sh moved into): running
# and reporting a test (t, bad, result), choosing what runs (sel, want,
# feeds) and reading a run's log (verify, simv, stage_ranks, checksums_close).
#
# Selection: run.sh sets PAT (an extended regular expression, "" for all).
# A test whose name matches is selected: it runs and is reported. One that
# does not match is not reported; it still runs where a selected test needs
# what it leaves behind (`feeds FIXTURE TEST...` marks it), and then only its
# log is kept. So a suite makes its fixtures lazily: a fixture runs when a
# selected test needs it, and never otherwise.
#
# Every suite runs in a subshell of its own; what it counts goes back to
# run.sh in $COUNTS (one line per result: "pass|fail|skip NAME").

LOG=build/test-logs
L=tests/local.sh # jobs/local.sh, runs replacing the traces and checkpoints earlier test runs left (tests/local.sh)
NEEDED=" "
# ONLY (a regular expression) narrows a suite to the tests it matches; SUFFIX ("@avx2") is added to every name
# reported and matched against PAT: tests/suites/kernels.sh runs other suites' tests again that way
ONLY=""
SUFFIX=""

# sel NAME: true when NAME is selected
sel() { [[ $1 =~ $ONLY ]] && { [ -z "$PAT" ] || [[ $1$SUFFIX =~ $PAT ]]; }; }
# want NAME...: true when any NAME is selected (guards a block that makes what they check)
want() { local n; for n; do sel "$n" && return 0; done; return 1; }
# feeds FIXTURE NAME...: FIXTURE (a t or bad test) runs, unreported where unselected, when any NAME is selected
feeds() { local f=$1; shift; want "$@" && NEEDED="$NEEDED$f "; return 0; }
# runs NAME: true when the test NAME runs: selected, or a fixture of a selected one
runs() { sel "$1" || [[ $NEEDED == *" $1 "* ]]; }

# section TITLE: the "== TITLE" heading of the tests that follow, printed before the first one reported
HEADING=""
section() { HEADING="== $*"; }

result() { # name status(0 ok, 1 fail, 77 skip) seconds [note]
  local name=$1 st=$2 secs=$3 note=${4:-}
  if sel "$name" && [ -n "$HEADING" ]; then echo "$HEADING"; HEADING=""; fi
  if ! sel "$name"; then # a fixture run for another test: a line only where it failed
    [ "$st" = 0 ] || [ "$st" = 77 ] || printf '      (fixture %s failed: %s; log: %s/%s.log)\n' "$name" "$note" "$LOG" "$name"
    return 0
  fi
  local logname=$name; name=$name$SUFFIX
  if [ "$st" = 0 ]; then echo "pass $name" >>"$COUNTS"; printf 'PASS  %-44s %6.1fs %s\n' "$name" "$secs" "$note"
  elif [ "$st" = 77 ]; then echo "skip $name" >>"$COUNTS"; printf 'SKIP  %-44s %6.1fs %s\n' "$name" "$secs" "$note"
  else echo "fail $name" >>"$COUNTS"; printf 'FAIL  %-44s %6.1fs %s (log: %s/%s.log)\n' "$name" "$secs" "$note" "$LOG" "$logname"
  fi
}

# timed VAR CMD...: runs CMD, its exit status in rc and its seconds in VAR
timed() {
  local var=$1; shift
  local t0=$(date +%s.%N)
  "$@"; rc=$?
  printf -v "$var" '%s' "$(echo "$(date +%s.%N) - $t0" | bc)"
  return 0
}

# fuzz_n N: a fuzzer's case count: N in make test, N x FUZZ_SCALE under make fuzz (tests/fuzz.sh)
fuzz_n() { echo $(( $1 * ${FUZZ_SCALE:-1} )); }
# fuzz_seed SEED: a fuzzer's seed: SEED (fixed, so make test's cases repeat), or FUZZ_SEED where make fuzz sets one
fuzz_seed() { echo "${FUZZ_SEED:-$1}"; }
# fuzz_to SECONDS: a fuzzer's timeout, scaled with its case count
fuzz_to() { echo $(( $1 * ${FUZZ_SCALE:-1} )); }

# t NAME TIMEOUT CMD...: passes when CMD exits 0 (runs only where selected or needed)
t() {
  local name=$1 to=$2 secs; shift 2
  runs "$name" || return 0
  timed secs timeout "$to" "$@" >"$LOG/$name.log" 2>&1
  [ $rc = 0 ] && result "$name" 0 "$secs" || result "$name" 1 "$secs" "exit $rc"
}

# bad NAME REGEX CMD...: passes when CMD exits 2 and its stderr matches REGEX
bad() {
  local name=$1 re=$2 secs; shift 2
  runs "$name" || return 0
  timed secs timeout 60 "$@" >"$LOG/$name.out" 2>"$LOG/$name.log"
  if [ $rc != 2 ]; then result "$name" 1 "$secs" "exit $rc, want 2"
  elif ! grep -qE -- "$re" "$LOG/$name.log"; then result "$name" 1 "$secs" "stderr does not match /$re/"
  elif [ "$(grep -c 'error' "$LOG/$name.log")" -gt 1 ]; then result "$name" 1 "$secs" "more than one error message"
  else result "$name" 0 "$secs"; fi
}

# header FILE: the value of the deck's "# NAME: VALUE" comment line
header() { sed -n "s/^# $1: //p" "$2" | head -1 | tr -d '\r'; }

# verify FILE KEY: value of "verify.KEY: VALUE" in a run log
verify() { sed -n "s/^verify\.$2: //p" "$1" | head -1; }
# trace_col TRACE TABLE COLUMN: the column's values, one line per row, from `bin/nereus-trace csv` (a column
# left of the table's first text column: those are numbers, without commas)
trace_col() {
  bin/nereus-trace csv "$1" "$2" 2>/dev/null | awk -F, -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } k { print $k }'
}
# simv LOG POLICY.METRIC: a --simulate run's sim.POLICY.METRIC value
simv() { sed -n "s/^sim\.$2: //p" "$1" | head -1; }
# the model-stage rows of printed plans on stdin ("actor.gen     tp1 pp1 dp2  ranks 0-1,4  (...)") as one
# "model-stage rank" line per rank each holds
stage_ranks() {
  awk '/^(actor|ref|critic|reward)\.[a-z]+ +tp[0-9]+ pp[0-9]+ dp[0-9]+ +ranks /{ match($0, /ranks [0-9,-]+/);
         n = split(substr($0, RSTART + 6, RLENGTH - 6), a, ",");
         for (i = 1; i <= n; i++) { m = split(a[i], b, "-"); for (r = b[1]; r <= ((m > 1) ? b[2] : b[1]); r++) print $1, r } }'
}

# checksums_close REF OUT [KEY...]: the verify checksums KEY... of two runs (default: the actor's, the
# ref's and the critic's) within relative 1e-5; appends what differs to $why, sets $worst
checksums_close() {
  worst=0
  local ref=$1 out=$2 k a b d; shift 2
  [ $# -gt 0 ] || set -- checksum.actor checksum.ref checksum.critic
  for k; do
    a=$(verify "$ref" $k); b=$(verify "$out" $k)
    d=$(awk -v a="$a" -v b="$b" 'BEGIN{ if (a=="" || b=="" || a+0 == 0) { print "nan"; exit } d=(a-b)/a; if (d<0) d=-d; printf "%.1e", d }')
    awk -v d="$d" 'BEGIN{exit !(d != "nan" && d+0 <= 1e-5)}' || why="$why $k $a vs $b;"
    worst=$(awk -v d="$d" -v w="$worst" 'BEGIN{ print (d=="nan" || d+0 > w+0) ? d : w }')
  done
}

# same_keys A B KEY...: appends to $why each verify KEY whose value differs between logs A and B
same_keys() {
  local a=$1 b=$2 k; shift 2
  for k; do [ "$(verify "$a" $k)" = "$(verify "$b" $k)" ] || why="$why $k differs;"; done
}

# equiv_result NAME REF OUT WHAT [KEY...]: reports NAME: passed when the run logged in OUT sampled REF's tokens
# and rewards, ran its steps to the same status and ends with checksums (KEY..., default actor, ref and critic)
# within 1e-5 of REF's; WHAT ("4 ranks") opens the note
equiv_result() {
  local name=$1 ref=$2 out=$3 what=$4; shift 4
  why=""
  same_keys "$ref" "$out" tokens_hash reward_first10 reward_last10 ppo_steps status
  checksums_close "$ref" "$out" "$@"
  if [ -z "$why" ]; then result "$name" 0 0 "$what: tokens, rewards identical; checksums within $worst (limit 1e-5)"
  else result "$name" 1 0 "$why"; fi
}

# hashes_match LOG INFO: verify.hash.{actor,ref,critic} of a run LOG against the params hashes that
# `nereus-ckpt info` printed to INFO; appends what differs to $why
hashes_match() {
  local m a b
  for m in actor ref critic; do
    a=$(verify "$1" hash.$m); b=$(sed -n "s/^  params hash \([0-9a-f]*\) (as verify\.hash\.$m .*/\1/p" "$2")
    [ -n "$a" ] && [ "$a" = "$b" ] || why="$why $m: run '$a', checkpoint '$b';"
  done
}

# deck_steps FILE N: sets [ppo] steps = N in a deck made from tests/decks/restart.deck (steps = 10 there)
deck_steps() { sed -i "/^\[ppo\]/,/^\[/ s/^steps = 10\$/steps = $2/" "$1"; }
