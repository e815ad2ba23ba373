# tests/suites/reward.sh — rewards on text (docs/TEXT.md): test_reward's hand cases; bin/nereus-score equal to reasoning-gym's score_answer on every reference pair of each task, and to math-verify on every numeric case but the listed, reasoned ones; the committed datasets' answers scoring 1; bad input refused with exit 2 naming the line or key
section "rewards on text"
D=tests/reward/data
S=bin/nereus-score

# each rule's extraction, numeric equivalence, the format reward, reasoning-gym's scorers on hand cases
t reward-unit 60 build/tests/test_reward

# agree NAME SCORES WANT: how many lines of SCORES equal WANT's (as numbers), and the first few that differ
agree() {
  paste "$2" "$3" | awk '{ n++; if ($1 == $2) ok++; else if (++bad <= 5) printf "line %d: nereus %s, reference %s\n", NR, $1, $2 }
                         END { printf "%d of %d agree\n", ok, n }' >"$LOG/$1.diff"
  tail -1 "$LOG/$1.diff"
}

# every (entry, response) pair of a task: nereus-score --task equals reasoning-gym's score, all of them
for task in basic_arithmetic chain_sum leg_counting number_sorting; do
  name=reward-gym-$task
  runs $name || continue
  timed secs bash -c "$S answer-tag --task $task <$D/rg_$task.jsonl >$LOG/$name.out 2>$LOG/$name.log"
  note=$(agree $name "$LOG/$name.out" $D/rg_$task.want)
  n=$(wc -l <$D/rg_$task.want)
  if [ $rc = 0 ] && [ "$(wc -l <"$LOG/$name.out")" = "$n" ] && [ "$note" = "$n of $n agree" ]; then
    result $name 0 "$secs" "$note with reasoning-gym"
  else result $name 1 "$secs" "exit $rc; $note; $(head -1 "$LOG/$name.diff")"; fi
done

# the numeric rule against math-verify: the lines that differ must be exactly those mathverify.disagree lists
if runs reward-mathverify; then
  timed secs bash -c "$S answer-tag <$D/mathverify.jsonl >$LOG/reward-mathverify.out 2>$LOG/reward-mathverify.log"
  note=$(agree reward-mathverify "$LOG/reward-mathverify.out" $D/mathverify.want)
  got=$(paste "$LOG/reward-mathverify.out" $D/mathverify.want | awk '$1 != $2 { print NR }' | tr '\n' ' ')
  listed=$(grep -v '^#' $D/mathverify.disagree | cut -f1 | tr '\n' ' ')
  if [ $rc = 0 ] && [ "$got" = "$listed" ]; then
    result reward-mathverify 0 "$secs" "$note; the $(echo $listed | wc -w) others listed and reasoned"
  else
    new=$(comm -23 <(tr ' ' '\n' <<<"$got" | sort) <(tr ' ' '\n' <<<"$listed" | sort) | tr '\n' ' ')
    gone=$(comm -13 <(tr ' ' '\n' <<<"$got" | sort) <(tr ' ' '\n' <<<"$listed" | sort) | tr '\n' ' ')
    result reward-mathverify 1 "$secs" "exit $rc; $note; unlisted disagreements on lines: ${new:-none}; listed but agreeing: ${gone:-none}"
  fi
fi

# the committed datasets (tools/make-dataset): each entry's own answer, tagged, scores 1 with its task's scorer
if runs reward-dataset; then
  why=""
  for f in $D/gym.train.jsonl $D/gym.eval.jsonl; do
    for task in chain_sum leg_counting; do
      grep "^{\"task\": \"$task\"" $f | sed -n 's/.*"answer": "\([^"]*\)", "metadata".*/{"response": "<answer>\1<\/answer>", "answer": "\1"}/p' \
        >"$LOG/reward-dataset-$task.jsonl"
      n=$(grep -c "^{\"task\": \"$task\"" $f)
      ones=$($S answer-tag --task $task <"$LOG/reward-dataset-$task.jsonl" | grep -c '^1$')
      [ "$n" -gt 0 ] && [ "$ones" = "$n" ] || why="$why $(basename $f) $task: $ones of $n;"
    done
  done
  [ -z "$why" ] && result reward-dataset 0 0 "gym.train 64, gym.eval 32 lines: every answer scores 1" || result reward-dataset 1 0 "$why"
fi

# the command line: --help on stdout with exit 0; bad input exits 2 naming the line or key, nothing on stdout
if runs reward-help; then
  $S --help >"$LOG/reward-help.log" 2>&1; rc=$?
  [ $rc = 0 ] && grep -q '^usage: nereus-score RULE' "$LOG/reward-help.log" && result reward-help 0 0 || result reward-help 1 0 "exit $rc"
fi
if want reward-bad-json reward-bad-key reward-bad-type reward-bad-direction reward-bad-quiet; then
  printf '%s\n' '{"response": "<answer>1</answer>", "answer": "1"}' '{"response": "<answer>1</answer>", "answer": ' >"$LOG/bad-json.jsonl"
  printf '%s\n' '{"response": "a", "answer": "1"}' '{"response": "b", "answer": "2"}' '{"response": "c"}' >"$LOG/bad-key.jsonl"
  printf '%s\n' '{"response": "a", "answer": 1}' >"$LOG/bad-type.jsonl"
  printf '%s\n' '{"response": "<answer>[1]</answer>", "answer": "[1]", "metadata": {}}' >"$LOG/bad-direction.jsonl"
fi
bad reward-bad-json 'line 2: not a JSON object' bash -c "$S answer-tag <$LOG/bad-json.jsonl"
bad reward-bad-key 'line 3: missing key "answer"' bash -c "$S gsm8k <$LOG/bad-key.jsonl"
bad reward-bad-type 'line 1: not a string: "answer"' bash -c "$S boxed <$LOG/bad-type.jsonl"
bad reward-bad-direction 'line 1: .*"metadata.direction"' bash -c "$S answer-tag --task number_sorting <$LOG/bad-direction.jsonl"
bad reward-bad-rule "unknown reward rule 'regex'" $S regex
bad reward-bad-task "unknown task 'sudoku'" $S answer-tag --task sudoku
bad reward-bad-format "--format-reward needs a number" $S answer-tag --format-reward x
if runs reward-bad-quiet; then # a bad line anywhere: no score printed at all
  $S answer-tag <"$LOG/bad-json.jsonl" >"$LOG/reward-bad-quiet.log" 2>/dev/null; rc=$?
  [ $rc = 2 ] && [ ! -s "$LOG/reward-bad-quiet.log" ] && result reward-bad-quiet 0 0 || result reward-bad-quiet 1 0 "exit $rc or scores printed"
fi
