# tests/suites/runs.sh — end-to-end runs through the mpirun launcher: the short PPO run learns and is deterministic, a non-finite loss stops it, BLAS threads over the cores warn, SFT on task tokens learns, the same 5 PPO steps under every plan of tests/equiv_plans.txt
section "end to end (mpirun -np 1)"
feeds run-short reward-rises deterministic threads-warning
feeds run-short-again deterministic
t run-short 300 $L -np 1 bin/nereus tests/decks/short.deck
if want reward-rises; then
  g=$(verify "$LOG/run-short.log" reward_gain); st=$(verify "$LOG/run-short.log" status)
  if [ -n "$g" ] && [ "$st" = pass ] && awk "BEGIN{exit !($g >= 0.15)}"; then result reward-rises 0 0 "gain $g"
  else result reward-rises 1 0 "gain '$g' status '$st' (want gain >= 0.15, pass)"; fi
fi
t run-short-again 300 $L -np 1 bin/nereus tests/decks/short.deck
if want deterministic; then
  if diff <(grep '^verify\.' "$LOG/run-short.log") <(grep '^verify\.' "$LOG/run-short-again.log") >"$LOG/deterministic.log" \
     && grep -q '^verify\.checksum\.actor' "$LOG/run-short.log"; then result deterministic 0 0 "verification blocks identical"
  else result deterministic 1 0 "verification blocks differ"; fi
fi

if want nonfinite-stop; then
  timeout 120 $L -np 1 bin/nereus tests/decks/nan.deck >"$LOG/nonfinite-stop.log" 2>&1; rc=$?
  if [ $rc = 1 ] && grep -q 'non-finite loss' "$LOG/nonfinite-stop.log" && [ "$(verify "$LOG/nonfinite-stop.log" status)" = fail ]; then
    result nonfinite-stop 0 0 "exit 1, verify.status: fail"
  else result nonfinite-stop 1 0 "exit $rc"; fi
fi

# more BLAS threads than a node's cores: the run goes on, and says so once (run.c warn_threads)
if want threads-warning; then
  sed -e 's/^steps = 40$/steps = 2/' -e 's/^\[run\]$/[run]\nblas_threads = 2/' tests/decks/short.deck >"$LOG/threads.deck"
  timeout 300 $L -np 4 bin/nereus "$LOG/threads.deck" >"$LOG/threads-warning.log" 2>&1; rc=$?
  nw=$(grep -c '^warning: \[run\] blas_threads = 2 with 4 rank(s) on a node of' "$LOG/threads-warning.log")
  if [ "$(nproc)" -ge 8 ]; then result threads-warning 77 0 "$(nproc) cores: 4 ranks x 2 threads fit"
  elif [ $rc = 0 ] && [ "$nw" = 1 ] && [ "$(verify "$LOG/threads-warning.log" status)" = pass ] \
       && ! grep -q 'warning: \[run\] blas_threads' "$LOG/run-short.log"; then
    result threads-warning 0 0 "4 ranks x 2 BLAS threads on $(nproc) cores: warned once, ran"
  else result threads-warning 1 0 "exit $rc, $nw warning line(s) (want 0 and 1; none with blas_threads = 1)"; fi
fi

# tests/decks/sft_tokens.deck reads the tokens the task-tokens test writes
feeds task-tokens sft-tokens sft-tokens-learns
feeds sft-tokens sft-tokens-learns
t task-tokens 60 bin/nereus-task-tokens "$LOG/task_tokens.bin" --count 4000 --digits 4 --tasks reverse,sort
t sft-tokens 300 $L -np 1 bin/nereus tests/decks/sft_tokens.deck
if want sft-tokens-learns; then
  a=$(verify "$LOG/sft-tokens.log" sft_loss_first); b=$(verify "$LOG/sft-tokens.log" sft_loss_last)
  if [ -n "$a" ] && [ -n "$b" ] && awk "BEGIN{exit !($b < 0.7 * $a)}"; then result sft-tokens-learns 0 0 "loss $a -> $b"
  else result sft-tokens-learns 1 0 "loss '$a' -> '$b' (want below 0.7x the first; the random prompt digits keep the floor near 0.9)"; fi
fi

section "equivalence: the same 5 PPO steps under every plan of tests/equiv_plans.txt"
ref=$LOG/equiv-1rank.log
while IFS='|' read -r -u 3 name np plan; do
  name=$(echo $name); np=$(echo $np)
  case "$name" in ''|'#'*) continue;; esac
  feeds equiv-1rank "equiv-$name"
done 3< tests/equiv_plans.txt
t equiv-1rank 300 $L -np 1 bin/nereus tests/decks/equiv.deck
while IFS='|' read -r -u 3 name np plan; do
  name=$(echo $name); np=$(echo $np)
  case "$name" in ''|'#'*) continue;; esac
  feeds "equiv-$name-run" "equiv-$name"
  want "equiv-$name-run" "equiv-$name" || continue
  deck=$LOG/equiv-$name.deck
  { cat tests/decks/equiv.deck; echo "[plan]"; echo "$plan" | tr ';' '\n' | sed 's/^ *//'; } > "$deck"
  t "equiv-$name-run" 300 $L -np "$np" bin/nereus "$deck"
  want "equiv-$name" || continue
  out=$LOG/equiv-$name-run.log
  why=""
  same_keys "$ref" "$out" tokens_hash reward_first10 reward_last10 ppo_steps status
  checksums_close "$ref" "$out"
  if [ -z "$why" ]; then result "equiv-$name" 0 0 "$np ranks: tokens, rewards identical; checksums within $worst (limit 1e-5)"
  else result "equiv-$name" 1 0 "$why"; fi
done 3< tests/equiv_plans.txt
