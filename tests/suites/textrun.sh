# tests/suites/textrun.sh — text decks run (inputs/text-tiny.deck: SmolLM2's tokenizer, reasoning-gym prompts of different lengths, the answer-tag rule): PPO and GRPO on 1 rank with held-out evaluation and decoded samples; the same deck under a PP plan with DP generation on 2 ranks and a TP, PP and DP plan on 4 against 1 rank (tokens and rewards identical, checksums within 1e-5); a checkpoint mid-run restarted under another plan gives the uninterrupted run's steps; text decks' refusals at their lines
section "text decks: prompts from a file, responses scored on their text"
# a frozen reward network (UNTRAINED: a random value head) gives the untrained tiny model a reward to learn from,
# so that the plans below move the weights; the answer-tag rule's reward is 0 for a model this small
RN="--set reward.network=true --set reward.network_weight=1"
TX="--set trace.file=none $RN"
TEXT_PLANS='
pp2         | 2 | actor.gen = dp2 @0-1; actor.inf = pp2 @0-1; ref.inf = pp2 @1,0; critic.inf = pp2 @0-1; actor.train = pp2 @0-1; critic.train = pp2 @1,0; reward.inf = pp2 @0-1
tp2-dp2     | 4 | actor.gen = tp2 dp2 @0-3; actor.inf = tp2 dp2 @0-3; ref.inf = pp2 dp2 @0-3; critic.inf = tp2 @2-3; actor.train = tp2 dp2 @0-3; critic.train = tp2 pp2 @3,2,1,0; reward.inf = @0
'
# text_deck OUT PLAN: the text deck with this [plan] (';'-separated lines)
text_deck() { { cat inputs/text-tiny.deck; echo "[plan]"; echo "$2" | tr ';' '\n' | sed 's/^ *//'; } > "$1"; }
while IFS='|' read -r name np plan; do
  name=$(echo $name); [ -n "$name" ] && feeds text-1rank "text-$name"
done <<< "$TEXT_PLANS"
feeds text-1rank text-runs text-restart-same-run
# with an evaluation every 2 steps and decoded samples every 2, to the log and the trace
t text-1rank 300 $L -np 1 bin/nereus inputs/text-tiny.deck $RN --set trace.file="$LOG/text-1rank.trace.h5" \
  --set eval.every=2 --set trace.samples=2
if want text-runs; then
  f=$LOG/text-1rank.log tr=$LOG/text-1rank.trace.h5
  # the data line, decoded responses in the step lines, evaluations on the 16 held-out prompts before, after step
  # 1 and after the last (/eval rows at steps 0, 2, 4), 4 samples at steps 0 and 2 (log and /samples), the actor
  # trained
  ev=$(trace_col "$tr" eval step | tr '\n' ' '); np=$(trace_col "$tr" eval prompts | sort -u)
  ns=$(bin/nereus-trace csv "$tr" samples 2>/dev/null | grep -c '^[02],[0-3],')
  if [ "$(verify "$f" status)" = pass ] && grep -q '^data: tests/reward/data/gym.train.jsonl: 64 prompts' "$f" &&
     [ "$(grep -cE '^step +[0-9]+ \|.*\| ".*" \([0-9.]+\)$' "$f")" = 4 ] && [ -n "$(verify "$f" eval.accuracy)" ] &&
     [ "$ev" = "0 2 4 " ] && [ "$np" = 16 ] && [ "$(grep -c '^sample: step [02] row [0-3] ' "$f")" = 8 ] && [ "$ns" = 8 ] &&
     [ "$(verify "$f" checksum.actor)" != "$(verify "$f" checksum.ref)" ]; then
    result text-runs 0 0 "4 PPO steps: decoded responses, /eval at steps $ev(16 prompts), 8 /samples rows, the actor trained"
  else result text-runs 1 0 "status '$(verify "$f" status)'; /eval steps '$ev', prompts '$np', /samples rows $ns; or no data line, samples or training"; fi
fi
while IFS='|' read -r -u 3 name np plan; do
  name=$(echo $name); np=$(echo $np)
  [ -n "$name" ] || continue
  feeds "text-$name-run" "text-$name"
  want "text-$name-run" "text-$name" || continue
  text_deck "$LOG/text-$name.deck" "$plan"
  t "text-$name-run" 300 $L -np "$np" bin/nereus "$LOG/text-$name.deck" $TX
  want "text-$name" || continue
  equiv_result "text-$name" "$LOG/text-1rank.log" "$LOG/text-$name-run.log" "$np ranks"
done 3<<< "$TEXT_PLANS"

# GRPO on text, groups of 4, on 1 rank and under tp2-dp2 on 4
G="--set ppo.algorithm=grpo --set ppo.group_size=4"
feeds text-grpo-1rank text-grpo-tp2-dp2 text-grpo-runs text-eval-responses
feeds text-grpo-tp2-dp2-run text-grpo-tp2-dp2 text-eval-responses
ER1=$LOG/text-grpo-1rank.responses.jsonl ER4=$LOG/text-grpo-tp2-dp2.responses.jsonl
runs text-grpo-1rank && rm -f "$ER1"
runs text-grpo-tp2-dp2-run && rm -f "$ER4"
t text-grpo-1rank 300 $L -np 1 bin/nereus inputs/text-tiny.deck $TX $G --set eval.every=2 --set trace.samples=2 \
  --set eval.responses="$ER1"
if want text-grpo-runs; then # GRPO with an evaluation after step 1 and samples at steps 0 and 2
  f=$LOG/text-grpo-1rank.log
  if [ "$(verify "$f" status)" = pass ] && [ "$(verify "$f" algorithm)" = "grpo (group_size 4)" ] &&
     grep -q '^eval: after step 1: ' "$f" && [ -n "$(verify "$f" eval.accuracy)" ] &&
     [ "$(grep -c '^sample: step [02] row [0-3] ' "$f")" = 8 ]; then
    result text-grpo-runs 0 0 "4 GRPO steps: an evaluation after step 1, 8 samples, verify.eval.accuracy"
  else result text-grpo-runs 1 0 "status '$(verify "$f" status)', or no grpo, evaluation or samples"; fi
fi
runs text-grpo-tp2-dp2-run && text_deck "$LOG/text-grpo.deck" "actor.gen = tp2 dp2 @0-3; actor.inf = tp2 dp2 @0-3; ref.inf = pp2 dp2 @0-3; actor.train = tp2 dp2 @0-3; reward.inf = @0"
t text-grpo-tp2-dp2-run 300 $L -np 4 bin/nereus "$LOG/text-grpo.deck" $TX $G --set eval.responses="$ER4"
want text-grpo-tp2-dp2 && equiv_result text-grpo-tp2-dp2 "$LOG/text-grpo-1rank.log" "$LOG/text-grpo-tp2-dp2-run.log" \
  "4 ranks, grpo" checksum.actor checksum.ref
# [eval] responses: a line per held-out prompt per evaluation (1 rank: before PPO, after 2 steps, after
# PPO), their right answers the run's verify.eval.accuracy; on 4 ranks (actor.gen dp2: each replica's rows
# gathered) the last evaluation's responses the same, prompt by prompt (tools/eval-compare)
if want text-eval-responses; then
  f=$LOG/text-grpo-1rank.log why=""
  read -r lines evals acc <<<"$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
last = max(r["step"] for r in rows)
at = [r for r in rows if r["step"] == last]
print(len(rows), len({r["step"] for r in rows}), "%.6f" % (sum(r["right"] for r in at) / len(at)))' "$ER1" 2>&1)"
  [ "$evals" = 3 ] && [ $((lines % 3)) = 0 ] || why="$why $ER1: $lines lines in '$evals' evaluations (want 3 alike);"
  [ "$acc" = "$(verify "$f" eval.accuracy)" ] || why="$why its last accuracy $acc, the run's $(verify "$f" eval.accuracy);"
  cmp=$(tools/eval-compare "$ER1" "$ER4" --min 1 2>&1) || why="$why $cmp;"
  # a score as a run writes it (single precision: 1.1 as 1.100000023841858) and as eval-hf does (1.1): the same
  shift_score() { python3 -c '
import json, struct, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    s = o["score"] + 1.1
    o["score"] = struct.unpack("f", struct.pack("f", s))[0] if sys.argv[2] == "single" else float("%g" % s)
    print(json.dumps(o))' "$@"; }
  shift_score "$ER1" single >"$ER1.f" && shift_score "$ER4" text >"$ER4.hf"
  tools/eval-compare "$ER1.f" "$ER4.hf" --min 1 >/dev/null 2>&1 || why="$why scores 1.1 in single and double precision not taken as the same;"
  if [ -z "$why" ]; then result text-eval-responses 0 0 "$lines lines, 3 evaluations; 4 ranks: ${cmp#eval-compare: }"
  else result text-eval-responses 1 0 "$why"; fi
fi

# [eval] responses refused before the run (exit 2 at the key): an earlier run's file is not overwritten, a file
# that cannot be opened, a deck of the digit tasks (no text to write)
feeds text-grpo-1rank text-eval-responses-exists
bad text-eval-responses-exists "eval.responses.*exists \(an earlier run's responses\): not overwritten" \
  $L -np 1 bin/nereus inputs/text-tiny.deck $TX --set ppo.steps=1 --set eval.responses="$ER1"
bad text-eval-responses-unwritable 'eval.responses.*cannot open for writing' $L -np 1 bin/nereus inputs/text-tiny.deck \
  $TX --set ppo.steps=1 --set eval.responses="$LOG/no-such-dir/r.jsonl"
bad text-eval-responses-digits "eval.responses.*needs \[data\] train" $L -np 1 bin/nereus inputs/tiny.deck \
  --set ppo.steps=1 --set trace.file=none --set eval.responses="$LOG/digits.jsonl"

# a checkpoint at step 2 of 4 written on 1 rank, restarted under dp2 on 2 ranks: steps 2-3 as uninterrupted
TK=$LOG/text-ck; mkdir -p "$TK"
feeds text-ckpt-write text-restart-same-run
feeds text-ckpt-restart text-restart-same-run
t text-ckpt-write 300 $L -np 1 bin/nereus inputs/text-tiny.deck $TX --set ckpt.every=2 --set ckpt.dir="$TK/a"
t text-ckpt-restart 300 $L -np 2 bin/nereus inputs/text-tiny.deck $TX --set ckpt.dir="$TK/b" \
  --set run.restart="$TK/a/text-tiny_step000002.h5"
if want text-restart-same-run; then
  why=""
  for s in 2 3; do
    a=$(grep "^step *$s |" "$LOG/text-1rank.log" | cut -d'|' -f2,3); b=$(grep "^step *$s |" "$LOG/text-ckpt-restart.log" | cut -d'|' -f2,3)
    [ -n "$a" ] && [ "$a" = "$b" ] || why="$why step $s: '$a' vs '$b';"
  done
  grep -q "^step *1 |" "$LOG/text-ckpt-restart.log" && why="$why the restart ran step 1;"
  checksums_close "$LOG/text-1rank.log" "$LOG/text-ckpt-restart.log"
  if [ -z "$why" ]; then result text-restart-same-run 0 0 "1 rank -> dp2 on 2 from step 2: steps 2-3 reward and KL as uninterrupted, checksums within $worst"
  else result text-restart-same-run 1 0 "$why"; fi
fi
# a text run's checkpoint carries its tokenizer (/tokenizer): export-hf writes tokenizer.json beside the weights,
# and that directory encodes tests/text/data's corpus and chat prompts to SmolLM2's own ids (HF tokenizers')
feeds text-ckpt-write text-ckpt-export-tokenizer
if want text-ckpt-export-tokenizer; then
  d=$LOG/text-ckpt-hf why=""
  rm -rf "$d"
  bin/nereus-ckpt export-hf "$TK/a/text-tiny_step000002.h5" "$d" >"$LOG/text-ckpt-export-tokenizer.log" 2>&1 || why="export-hf failed;"
  [ -f "$d/tokenizer.json" ] && [ -f "$d/tokenizer_config.json" ] || why="$why no tokenizer.json or tokenizer_config.json;"
  bin/nereus-tok encode "$d" <tests/text/data/corpus.jsonl | cmp -s - tests/text/data/smollm2.ids || why="$why corpus ids differ;"
  bin/nereus-tok encode --chat "$d" <tests/text/data/chat.jsonl | cmp -s - tests/text/data/smollm2.chat.ids || why="$why chat ids differ;"
  if [ -z "$why" ]; then result text-ckpt-export-tokenizer 0 0 "tokenizer.json written; corpus and chat prompts encode to SmolLM2's ids"
  else result text-ckpt-export-tokenizer 1 0 "$why (log: $LOG/text-ckpt-export-tokenizer.log)"; fi
fi

# what a text deck cannot take, refused at its line
bad text-sft-refused 'sft\.steps=5: error: \[sft\] steps = 5: SFT on \[data\] prompts is not built' \
  $L -np 1 bin/nereus inputs/text-tiny.deck --set sft.steps=5
bad text-process-refused 'error: \[ppo\] credit = process needs per-position credits' \
  $L -np 1 bin/nereus inputs/text-tiny.deck --set ppo.algorithm=grpo --set ppo.group_size=4 --set ppo.credit=process
bad text-sort-no-direction 'error: \[reward\] task = number_sorting reads each prompt.s metadata\.direction: tests/reward/data/gym\.train\.jsonl line 1 has none' \
  $L -np 1 bin/nereus inputs/text-tiny.deck --set reward.task=number_sorting
bad text-bad-rule 'error: .*rule.*boxes' $L -np 1 bin/nereus inputs/text-tiny.deck --set reward.rule=boxes
# a restart on another prompt file: refused (the checkpoint stores the train file's hash)
feeds text-ckpt-write text-restart-other-file
bad text-restart-other-file 'error: cannot restart: .*text-tiny_step000002\.h5: its run drew its prompts from another \[data\] train file' \
  $L -np 1 bin/nereus inputs/text-tiny.deck $TX --set data.train=tests/text/data/arith.jsonl --set ckpt.dir="$TK/c" \
  --set run.restart="$TK/a/text-tiny_step000002.h5"
# no PPO step: the evaluation alone generates max_response tokens a prompt (the generation model's room)
t text-eval-only 300 $L -np 1 bin/nereus inputs/text-tiny.deck --set trace.file=none --set ppo.steps=0
