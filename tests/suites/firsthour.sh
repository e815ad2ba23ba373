# tests/suites/firsthour.sh — a new user's first hour (issue 48): nothing at the root a user did not ask for, --help alike everywhere, outputs never overwritten silently, plans and restart files checked before step 1, the verdict apart from the status, plan files that compose, a quiet start, export-hf's special tokens, --simulate, compare and plots explained
# Each test here failed on the code before its fix: the behaviour a new user met, reproduced.
ROOT=$(cd -P tests/.. && pwd)
W=$LOG/firsthour
mkdir -p "$W"
export ROOT W

section "the checkout"
# no file at the root whose name starts with '-', on disk or tracked (a bench once wrote its output to a file
# named --help, and it was committed)
no_dash_files() {
  local on_disk; on_disk=$(ls -A "$ROOT" | grep -E '^-')
  [ -z "$on_disk" ] || { echo "at the root: $on_disk"; return 1; }
  ! git -C "$ROOT" ls-files --full-name -- ':/' 2>/dev/null | grep -E '^-'
}
# a benchmark given --help prints its usage and exits 0, and one given an option where its output file
# belongs refuses it: neither leaves a file behind
bench_help_no_file() {
  local d=$W/bench-help b
  rm -rf "$d"; mkdir -p "$d"
  for b in bench_gen bench_step bench_ckpt bench_transition bench_moves bench_tok; do
    (cd "$d" && timeout 20 "$ROOT/build/bench/$b" --help >out 2>err) || { echo "$b --help: exit $?"; return 1; }
    grep -q '^usage: ' "$d/out" || { echo "$b --help: no usage on stdout"; return 1; }
    (cd "$d" && timeout 20 "$ROOT/build/bench/$b" --quick >out 2>err); local rc=$?
    [ $rc = 2 ] || { echo "$b --quick: exit $rc, want 2"; return 1; }
    rm -f "$d/out" "$d/err"
    [ -z "$(ls -A "$d")" ] || { echo "$b left: $(ls -A "$d")"; return 1; }
  done
}
export -f no_dash_files bench_help_no_file
t root-no-dash-files 10 bash -c no_dash_files
t bench-help-no-file 120 bash -c bench_help_no_file

section "help"
# every program, and every subcommand of those that have them: --help prints its usage on stdout (a line
# that says usage, or the script's own header naming it) and exits 0, nothing on stderr, no file made
PROGRAMS=(
  "bin/nereus" "bin/nereus inputs/tiny.deck" "bin/nereus-ckpt" "bin/nereus-ckpt info" "bin/nereus-ckpt export-hf"
  "bin/nereus-ckpt loss" "bin/nereus-trace" "bin/nereus-trace summary" "bin/nereus-trace compare"
  "bin/nereus-task-tokens" "bin/nereus-tok" "bin/nereus-tok encode" "tests/run.sh" "tests/bench/run.sh"
  "jobs/local.sh" "tools/behaviour-snapshot" "tools/get-smollm2" "tools/grpo-vs-ppo" "tools/plot-trace"
  "tools/reward-per-token" "tools/spot-trace" "tools/study-tables" "tools/window-noise" "tools/eval-hf"
  "tests/bench/trl_peer.sh")
export PROGRAMS_LIST=$(printf '%s\n' "${PROGRAMS[@]}")
help_all() {
  local d=$W/help p rc bad=0
  while IFS= read -r p; do
    rm -rf "$d"; mkdir -p "$d"
    set -- $p
    (cd "$d" && timeout 20 "$ROOT/$1" "${@:2}" --help >out 2>err); rc=$?
    if [ $rc != 0 ]; then echo "$p --help: exit $rc, want 0: $(head -c 200 "$d/err")"; bad=1
    elif ! grep -qiE "usage|^ *${1##*/}|${1}" "$d/out"; then echo "$p --help: no usage on stdout"; bad=1
    elif [ -s "$d/err" ]; then echo "$p --help: stderr: $(head -c 200 "$d/err")"; bad=1
    elif [ "$(ls -A "$d")" != "$(printf 'err\nout')" ]; then echo "$p --help: left $(ls -A "$d" | tr '\n' ' ')"; bad=1
    fi
  done <<<"$PROGRAMS_LIST"
  return $bad
}
# bin/nereus's usage says how to launch (jobs/local.sh), what its exit codes mean and which tools go with it
nereus_usage_says() {
  local u; u=$(bin/nereus --help) || return 1
  grep -q 'jobs/local.sh -np N bin/nereus DECK' <<<"$u" || { echo "no jobs/local.sh line"; return 1; }
  grep -qE '^exit: +0 .*1 .*' <<<"$u" && grep -qE '^ +2 bad input' <<<"$u" || { echo "no exit codes"; return 1; }
  local tool
  for tool in nereus-ckpt nereus-trace plot-trace nereus-tok nereus-task-tokens; do
    grep -q "$tool" <<<"$u" || { echo "does not name $tool"; return 1; }
  done
  ! grep -q '^launch: mpirun' <<<"$u" || { echo "suggests plain mpirun"; return 1; }
}
export -f help_all nereus_usage_says
t help-every-program 300 bash -c help_all
t help-nereus-usage 10 bash -c nereus_usage_says

section "outputs never overwritten silently"
# tiny_in DIR STEPS [ARGS...]: a run of STEPS PPO steps of the tiny deck (a few seconds) in DIR, with
# jobs/local.sh itself (not $L: tests/local.sh lets the suites' runs replace their traces); its exit status
tiny_in() { local d=$1 n=$2; shift 2; (cd "$d" && "$ROOT/jobs/local.sh" -np 1 "$ROOT/bin/nereus" \
  "$ROOT/inputs/tiny.deck" --set sft.steps=1 --set ppo.steps="$n" "$@"); }
# a second run of a deck beside the first one's trace is refused with exit 2, naming the file and the two
# ways out, and the first trace is left as it was
overwrite_refused() {
  local d=$W/ow; rm -rf "$d"; mkdir -p "$d"
  tiny_in "$d" 2 >"$d/one.log" 2>&1 || { echo "first run failed"; return 1; }
  local sum; sum=$(md5sum <"$d/tiny.trace.h5")
  tiny_in "$d" 1 >"$d/two.log" 2>"$d/two.err"; local rc=$?
  cat "$d/two.err"
  [ $rc = 2 ] || { echo "second run: exit $rc, want 2"; return 1; }
  grep -q 'tiny\.trace\.h5: a trace of an earlier run' "$d/two.err" || { echo "the file is not named"; return 1; }
  grep -q -- '--set trace.file=' "$d/two.err" && grep -q 'overwrite = true' "$d/two.err" || { echo "no way out named"; return 1; }
  ! grep -qE '^step +[0-9]+ \|' "$d/two.log" || { echo "the refused run took steps"; return 1; }
  [ "$(md5sum <"$d/tiny.trace.h5")" = "$sum" ] || { echo "the first trace changed"; return 1; }
}
# the ways out: another file (--set trace.file=...), or [trace] overwrite = true, which replaces it
overwrite_ways_out() {
  local d=$W/ow2; rm -rf "$d"; mkdir -p "$d"
  tiny_in "$d" 2 >"$d/one.log" 2>&1 || { echo "first run failed"; return 1; }
  tiny_in "$d" 2 --set trace.file=two.trace.h5 >"$d/two.log" 2>&1 || { echo "--set trace.file: exit $?"; return 1; }
  [ -f "$d/two.trace.h5" ] || { echo "no two.trace.h5"; return 1; }
  tiny_in "$d" 1 --set trace.overwrite=true >"$d/three.log" 2>&1 || { echo "overwrite: exit $?"; return 1; }
  [ "$(bin/nereus-trace csv "$d/tiny.trace.h5" steps | tail -n +2 | wc -l)" = 1 ] || { echo "tiny.trace.h5 not replaced"; return 1; }
}
# a second fresh run into the [ckpt] dir of a first one is refused with exit 2 before step 1, naming the
# checkpoint and the ways out; a restart of that run goes on, and so does [ckpt] overwrite = true
ckpt_overwrite() {
  local d=$W/owck; rm -rf "$d"; mkdir -p "$d"
  local ck="--set trace.file=none --set ckpt.every=1 --set ckpt.dir=ck"
  tiny_in "$d" 2 $ck >"$d/one.log" 2>&1 || { echo "first run: exit $?"; return 1; }
  local sum; sum=$(md5sum <"$d/ck/tiny_step000002.h5")
  tiny_in "$d" 2 $ck >"$d/two.log" 2>"$d/two.err"; local rc=$?
  cat "$d/two.err"
  [ $rc = 2 ] || { echo "second run: exit $rc, want 2"; return 1; }
  grep -q 'ck/tiny_step000001\.h5: an earlier run.s checkpoint' "$d/two.err" && grep -q -- '--restart latest' "$d/two.err" &&
    grep -q 'overwrite = true' "$d/two.err" || { echo "the file or the ways out not named"; return 1; }
  [ "$(md5sum <"$d/ck/tiny_step000002.h5")" = "$sum" ] || { echo "the checkpoint changed"; return 1; }
  tiny_in "$d" 3 $ck --restart latest >"$d/three.log" 2>&1 || { echo "restart: exit $?"; return 1; }
  tiny_in "$d" 2 $ck --set ckpt.overwrite=true >"$d/four.log" 2>&1 || { echo "overwrite: exit $?"; return 1; }
}
export -f tiny_in overwrite_refused overwrite_ways_out ckpt_overwrite
t overwrite-trace-refused 120 bash -c overwrite_refused
t overwrite-trace-ways-out 120 bash -c overwrite_ways_out
t overwrite-ckpt-refused 120 bash -c ckpt_overwrite

section "checked before step 1"
# a [switch] plan that cannot run on the ranks given (tp3 on 2 ranks) is refused with exit 2 at its line before
# any step runs (it was refused only when its step came, and the run ended with verify.status: pass)
if want switch-tp3-on-2-refused switch-tp3-on-2-no-step; then
  { cat inputs/tiny.deck; printf '[switch]\nstep = 1\ndefault = colocated\nactor.gen = tp3 @ 0-2\n'; } >"$W/tp3.deck"
fi
feeds switch-tp3-on-2-refused switch-tp3-on-2-no-step
bad switch-tp3-on-2-refused "tp3\.deck:$(( $(wc -l <inputs/tiny.deck) + 4 )): error: \[switch\] actor\.gen .*3 ranks.*before step 1 cannot run on 2 rank" \
  jobs/local.sh -np 2 bin/nereus "$W/tp3.deck" --set sft.steps=1 --set ppo.steps=2 --set trace.file=none
if want switch-tp3-on-2-no-step; then
  if ! grep -qE '^(step|sft) +[0-9]+ ' "$LOG/switch-tp3-on-2-refused.out"; then result switch-tp3-on-2-no-step 0 0 "no step ran"
  else result switch-tp3-on-2-no-step 1 0 "steps ran before the refusal"; fi
fi
# a --restart file that is missing, or not a checkpoint, is refused with exit 2 before the start-up lines (the
# resolved deck, the plan, the model: 170 lines of them came first)
restart_early() {
  local d=$W/rs; rm -rf "$d"; mkdir -p "$d"; echo "not a checkpoint" >"$d/junk.h5"
  local f rc
  for f in "$d/missing.h5" "$d/junk.h5"; do
    jobs/local.sh -np 1 bin/nereus inputs/tiny.deck --restart "$f" --set trace.file=none >"$d/out" 2>"$d/err"; rc=$?
    cat "$d/err"
    [ $rc = 2 ] || { echo "$f: exit $rc, want 2"; return 1; }
    grep -q "^--restart $f: error: cannot restart: $f" "$d/err" || { echo "$f: not named"; return 1; }
    [ "$(grep -c '' "$d/out")" -le 3 ] || { echo "$f: $(grep -c '' "$d/out") lines on stdout before the refusal"; return 1; }
  done
}
export -f restart_early
t restart-refused-early 60 bash -c restart_early

section "the verdict"
# verify.status says the run finished with finite numbers; verify.learned says whether the reward rose as the
# deck expects ([run] expect_reward_gain): a run that cannot gain 1.0 in 3 steps passes and did not learn
learned_separate() {
  local d=$W/learned; rm -rf "$d"; mkdir -p "$d"
  tiny_in "$d" 3 --set trace.file=none --set run.expect_reward_gain=1 >"$d/hi.log" 2>&1 || { echo "exit $?"; return 1; }
  [ "$(verify "$d/hi.log" status)" = pass ] && [ "$(verify "$d/hi.log" learned)" = no ] ||
    { echo "expect 1.0: status $(verify "$d/hi.log" status), learned '$(verify "$d/hi.log" learned)'"; return 1; }
  tiny_in "$d" 3 --set trace.file=none --set run.expect_reward_gain=-1 >"$d/lo.log" 2>&1 || { echo "exit $?"; return 1; }
  [ "$(verify "$d/lo.log" learned)" = yes ] || { echo "expect -1.0: learned '$(verify "$d/lo.log" learned)'"; return 1; }
}
export -f learned_separate verify
t verify-learned-separate 120 bash -c learned_separate

section "plans that compose"
# a plan file (a [plan] section alone) on the tiny deck, which has none: the run takes its plan (critic.train
# pp2 dp2 on the ordered ranks 0,2,1,3) and passes; before, putting a plan on tiny.deck took one --set a key
feeds plan-file-on-tiny-run plan-file-on-tiny
t plan-file-on-tiny-run 120 jobs/local.sh -np 4 bin/nereus inputs/tiny.deck --plan inputs/plans/colocated4.plan \
  --set sft.steps=1 --set ppo.steps=2 --set trace.file=none
if want plan-file-on-tiny; then
  f=$LOG/plan-file-on-tiny-run.log
  if grep -qE '^critic\.train +tp1 pp2 dp2 +ranks 0,2,1,3 ' "$f" && [ "$(verify "$f" status)" = pass ]; then
    result plan-file-on-tiny 0 0 "colocated4.plan's plan on inputs/tiny.deck, verify.status pass"
  else result plan-file-on-tiny 1 0 "the plan file's plan was not taken (log: $f)"; fi
fi
# every example plan file composes with the tiny deck: each of its keys marked FILE:LINE (--plan) in the
# resolved deck
plan_examples() {
  local p n=0
  for p in inputs/plans/*.plan; do
    bin/nereus inputs/tiny.deck --plan "$p" --print-deck >"$W/print.txt" 2>&1 || { cat "$W/print.txt"; return 1; }
    local keys; keys=$(grep -cE '^[a-z.]+ *=' <(sed -n '/^\[plan\]/,$p' "$p"))
    [ "$(grep -c "# $p:[0-9]* (--plan)" "$W/print.txt")" = "$keys" ] || { echo "$p: not every key marked"; return 1; }
    n=$((n + 1))
  done
  [ $n -ge 6 ] || { echo "only $n plan files"; return 1; }
}
export -f plan_examples
t plan-file-examples 60 bash -c plan_examples
# a bad key in a plan file is named by the file and line; a section other than [plan] in it is refused; a --set
# of a key the plan file sets is named by the argument typed, and the plan file's line beside it
if want plan-file-errors-named plan-file-other-section plan-set-names-argument; then
  printf '# a plan\n[plan]\nactor.gem = tp1\n' >"$W/typo.plan"
  printf '[plan]\nactor.gen = tp1\n[model]\nn_layer = 3\n' >"$W/model.plan"
fi
bad plan-file-errors-named "typo\.plan:3: error: unknown key \[plan\] actor\.gem" bin/nereus inputs/tiny.deck --plan "$W/typo.plan"
bad plan-file-other-section "model\.plan:3: error: \[model\]: a plan file holds a \[plan\] section and nothing else" \
  bin/nereus inputs/tiny.deck --plan "$W/model.plan"
bad plan-set-names-argument "^--set plan\.actor\.gen=tp3 @ 0-2: error: .*set twice.*serial2\.plan:7" bin/nereus inputs/tiny.deck \
  --plan inputs/plans/serial2.plan --set "plan.actor.gen=tp3 @ 0-2"

section "a quiet start"
# a default run's console: the first step line within the first 40 lines (the resolved deck goes to a file
# beside the trace, its path said), the absence of a GPU said once and plainly, no CUDA call names
quiet_start() {
  local d=$W/quiet; rm -rf "$d"; mkdir -p "$d"
  (cd "$d" && timeout 120 "$ROOT/jobs/local.sh" -np 1 "$ROOT/bin/nereus" "$ROOT/inputs/tiny.deck" --set ppo.steps=2) \
    >"$d/run.log" 2>&1 || { echo "exit $?"; return 1; }
  local first; first=$(grep -nE '^(sft|step) +0 \|' "$d/run.log" | head -1 | cut -d: -f1)
  [ -n "$first" ] && [ "$first" -le 40 ] || { echo "first step line at line '${first:-none}'"; return 1; }
  grep -q '^deck: resolved deck in tiny\.resolved\.deck ' "$d/run.log" || { echo "no resolved deck path"; return 1; }
  grep -qE '^steps = 2 +# command line \(--set\)$' "$d/tiny.resolved.deck" || { echo "resolved deck file lacks the --set"; return 1; }
  ! grep -qE 'cudaGetDeviceCount|CUDA not used' "$d/run.log" || { echo "the GPU's absence in CUDA's words"; return 1; }
  [ "$(grep -ciE 'gpu|cuda' "$d/run.log")" -le 1 ] || { echo "the GPU named more than once"; return 1; }
}
# --print-deck keeps the resolved deck on stdout for those who want it
print_deck() { bin/nereus inputs/tiny.deck --print-deck | grep -qE '^n_layer = 2 +# line [0-9]+$'; }
export -f quiet_start print_deck
t quiet-start-first-step 150 bash -c quiet_start
t quiet-start-print-deck 30 bash -c print_deck
# an error names what failed, not the source expression that failed
bad error-names-what-failed 'cannot create the trace /nonexistent/dir/x\.trace\.h5: [^()]*No such file or directory$' \
  bin/nereus inputs/tiny.deck --set trace.file=/nonexistent/dir/x.trace.h5

section "export-hf: the special tokens and the tokenizer"
# a task-vocabulary checkpoint's config.json names its end token (14) and no bos: transformers took GPT-2's
# 50256 for a 15-token vocabulary before
export_task_ids() {
  local d=$W/export; rm -rf "$d"; mkdir -p "$d"
  tiny_in "$d" 1 --set trace.file=none --set ckpt.every=1 --set ckpt.dir=ck >"$d/run.log" 2>&1 || { echo "run: exit $?"; return 1; }
  bin/nereus-ckpt export-hf "$d/ck/tiny_step000001.h5" "$d/hf" || return 1
  /usr/bin/python3 - "$d/hf/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c.get("eos_token_id") == 14 and "bos_token_id" in c and c["bos_token_id"] is None, c
PY
}
# the tokenizer as Hugging Face's files (what export-hf writes where a checkpoint has one): read back, every
# family's ids on the 2,900 corpus strings equal HF tokenizers' (the committed references), chat ids too
tok_write_same_ids() {
  local m d=$W/tokw D=tests/text/data
  for m in gpt2 llama3 qwen2 smollm2; do
    rm -rf "$d"; bin/nereus-tok write "$D/$m" "$d" >/dev/null || return 1
    bin/nereus-tok encode "$d" <"$D/corpus.jsonl" | cmp -s - "$D/$m.ids" || { echo "$m: ids differ"; return 1; }
    [ $m = gpt2 ] || bin/nereus-tok encode --chat "$d" <"$D/chat.jsonl" | cmp -s - "$D/$m.chat.ids" ||
      { echo "$m: chat ids differ"; return 1; }
  done
}
# a GGUF import (a checkpoint with a /tokenizer): export-hf's config.json takes the ids from it (the test file's
# tokenizer has a pre-tokenizer Nereus does not build, so the tokenizer itself is left out, with a note)
export_gguf_ids() {
  local d=$W/export-gguf; rm -rf "$d"; mkdir -p "$d"
  bin/nereus-ckpt import-gguf tests/gguf/data/hf-qwen2.gguf "$d/q.h5" >/dev/null || return 1
  bin/nereus-ckpt export-hf "$d/q.h5" "$d/hf" 2>"$d/err" || { cat "$d/err"; return 1; }
  cat "$d/err"
  /usr/bin/python3 - "$d/hf/config.json" "$d/q.h5" <<'PY' || return 1
import json, sys, h5py
c = json.load(open(sys.argv[1]))
t = h5py.File(sys.argv[2], "r")["/tokenizer"]
want = {k: int(t.attrs[k]) for k in ("bos_id", "eos_id") if k in t.attrs}
got = {"bos_id": c.get("bos_token_id"), "eos_id": c.get("eos_token_id")}
for k, v in want.items():
    assert (v if v >= 0 else None) == got[k], (k, v, got[k])
assert "eos_token_id" in c, c
PY
}
export -f export_task_ids tok_write_same_ids export_gguf_ids
t export-hf-task-ids 120 bash -c export_task_ids
t tok-write-same-ids 120 bash -c tok_write_same_ids
t export-hf-gguf-ids 120 bash -c export_gguf_ids

section "reading --simulate, traces and plots"
# the --simulate table explains itself: a legend of its columns (the sign of vs static, share % against the
# fraction of the machine lines), signed percentages, and the end of a slowdown said as such
sim_explained() {
  local o; o=$(bin/nereus --simulate inputs/sim/growth-64.deck) || return 1
  grep -q '^columns: mean step s' <<<"$o" && grep -q 'vs static .*+ faster, - slower' <<<"$o" &&
    grep -q 'share %.*percent.*transition_share' <<<"$o" && grep -q 'as a fraction' <<<"$o" &&
    grep -q '^ *refused ' <<<"$o" || { echo "no legend"; return 1; }
  grep -qE '^admit-all +[0-9.]+ +\+[0-9.]+%' <<<"$o" || { echo "vs static not signed"; return 1; }
  ! grep -q 'runs 1x slower' <<<"$o" && grep -q 'rank 5 back to full speed' <<<"$o" || { echo "the slowdown's end"; return 1; }
}
export -f sim_explained
t sim-table-explained 60 bash -c sim_explained
# nereus-trace compare says when two traces are not of the same work (another model, other lengths) and
# says nothing of the kind for two runs of one deck
compare_caveat() {
  local d=$W/cmp; rm -rf "$d"; mkdir -p "$d"
  tiny_in "$d" 2 --set trace.file=a.trace.h5 >/dev/null 2>&1 && tiny_in "$d" 2 --set trace.file=b.trace.h5 >/dev/null 2>&1 &&
    tiny_in "$d" 2 --set trace.file=c.trace.h5 --set model.n_embd=32 >/dev/null 2>&1 || { echo "runs failed"; return 1; }
  bin/nereus-trace compare "$d/a.trace.h5" "$d/c.trace.h5" | grep -q '^NOT COMPARABLE: .*\[model\] n_embd 64 vs 32' ||
    { echo "no caveat for another model"; return 1; }
  ! bin/nereus-trace compare "$d/a.trace.h5" "$d/b.trace.h5" | grep -q 'NOT COMPARABLE' || { echo "caveat for the same deck"; return 1; }
}
export -f compare_caveat
t trace-compare-caveat 120 bash -c compare_caveat
# tools/plot-trace on live-planner traces (4 steps: matplotlib's own ticks fell on 0.5 there; 24 steps with two
# switches, a drift event and two decisions, whose labels overlapped): whole-number step ticks, no overlap
plot_checked() {
  local d=$W/plot n; rm -rf "$d"; mkdir -p "$d"
  for n in 4 24; do
    (cd "$d" && "$ROOT/jobs/local.sh" -np 4 "$ROOT/bin/nereus" "$ROOT/tests/decks/slow.deck" --set trace.file=live$n.trace.h5 \
      --set ppo.steps=$n >run$n.log 2>&1) || { echo "run $n: exit $?"; return 1; }
    /usr/bin/python3 tests/plot_trace_check.py "$ROOT" "$d/live$n.trace.h5" "$d/live$n.png" || return 1
  done
}
export -f plot_checked
t plot-trace-labels-ticks 180 bash -c plot_checked
