# tests/suites/data.sh — prompt datasets on ranks: the collective load (rank 0 reads, every rank the same PromptSet or the same error); the committed prompt ids still nereus-tok's ([data] decks refused: tests/decks/bad_runs/data_*.deck in the decks suite)
section "prompt datasets"
# dataset_load_collective and dataset_agree on 2 ranks (the one-process checks of tests/test_dataset.c run in
# the unit suite as test_dataset)
t data-collective 60 $L -np 2 build/tests/test_dataset collective
# the reference ids that test_dataset compares with are what bin/nereus-tok gives now (docs/TEXT.md says how
# they are made)
arith_ids() {
  local d=tests/text/data sys="You solve arithmetic. Put the final answer in <answer></answer> tags."
  sed 's/^{"question": \("[^"]*"\), "answer".*/\1/' "$d/arith.jsonl" >"$LOG/arith_q.jsonl" &&
    bin/nereus-tok encode --chat "$d/smollm2" <"$LOG/arith_q.jsonl" | cmp - "$d/arith.chat.ids" &&
    bin/nereus-tok encode --chat --system "$sys" "$d/smollm2" <"$LOG/arith_q.jsonl" | cmp - "$d/arith.system.ids" &&
    bin/nereus-tok encode "$d/smollm2" <"$LOG/arith_q.jsonl" | cmp - "$d/arith.raw.ids"
}
export -f arith_ids
export LOG
t data-reference-current 60 bash -c arith_ids
# [data] keys set on the command line alone count as a [data] section (a key that has no deck line)
bad data-set-without-train 'tiny\.deck: error: \[data\] needs train = FILE\.jsonl' \
  bin/nereus inputs/tiny.deck --set ppo.steps=1 --set sft.steps=0 --set data.eval_size=3
t data-set-train 300 bin/nereus inputs/tiny.deck --set ppo.steps=1 --set sft.steps=0 --set data.train=tests/text/data/arith.jsonl \
  --set data.tokenizer=tests/text/data/smollm2 --set model.max_seq=256 --set ppo.batch=8 --set ppo.minibatch=8 \
  --set trace.file=none
