# tests/suites/gguf.sh — GGUF import (docs/TEXT.md): each supported tensor type dequantized bit-identically to the gguf package, damaged GGUF files refused; SmolLM2-135M-Instruct (make smollm2) imported: transformers' cross-entropy within 1e-4, its 32 greedy tokens, the tokenizer carried; bad files refused with exit 2, nothing written
section "GGUF import"
G=tests/gguf/data
SM=build/smollm2 SMCK=build/smollm2/smollm2-135m-instruct.h5

# F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K against gguf.quants.dequantize (tests/gguf/make_reference.py),
# bit for bit; truncations, bad magic, version 1, huge counts, a tensor outside the file refused by the reader
t gguf-dequant 120 build/tests/test_gguf

# make smollm2 (a download the first time, nothing after): under CI=true a failed download fails the test,
# elsewhere (no network) the SmolLM2 tests are skipped
feeds gguf-smollm2 gguf-smollm2-dequant gguf-smollm2-loss gguf-smollm2-greedy gguf-smollm2-tokenizer gguf-smollm2-tok-gguf \
  gguf-smollm2-tok-ckpt gguf-smollm2-grpo-step gguf-smollm2-grpo-np2
smollm2_ok=0
if runs gguf-smollm2; then
  timed secs make -s -C "$(dirname "$(readlink -f tools)")" smollm2 >"$LOG/gguf-smollm2.log" 2>&1
  why=$(grep -m1 '^get-smollm2:' "$LOG/gguf-smollm2.log" || tail -1 "$LOG/gguf-smollm2.log")
  if [ $rc = 0 ] && [ -f "$SMCK" ]; then smollm2_ok=1; result gguf-smollm2 0 "$secs" "$SMCK"
  elif [ "${CI:-}" = true ]; then result gguf-smollm2 1 "$secs" "make smollm2 failed: $why"
  else result gguf-smollm2 77 "$secs" "make smollm2 failed (no network?): $why"; fi
fi
# smollm2_check NAME SECONDS CMD...: a test that needs the imported SmolLM2 (skipped or failed as gguf-smollm2 was)
smollm2_check() {
  local name=$1; shift
  want "$name" || return 0
  if [ $smollm2_ok = 1 ]; then t "$name" "$@"
  elif [ "${CI:-}" = true ]; then result "$name" 1 0 "no SmolLM2 checkpoint (make smollm2 failed)"
  else result "$name" 77 0 "no SmolLM2 checkpoint (make smollm2 failed)"; fi
}
# the mean cross-entropy on 4 x 32 tokens against transformers' on the same GGUF
loss_close() {
  local got want
  got=$(bin/nereus-ckpt loss "$SMCK" --tokens $G/smollm2_tokens.bin --batch 4 --seq 32 | sed -n 's/^loss: //p')
  want=$(sed -n 's/^loss: //p' $G/smollm2_reference.txt)
  echo "nereus $got, transformers $want"
  awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; exit !(a != "" && b != "" && (d < 0 ? -d : d) <= 1e-4) }'
}
# the 32 greedy tokens after the chat-formatted prompt against transformers' generate
greedy_same() {
  local got want
  got=$(bin/nereus-ckpt generate "$SMCK" --prompt $G/smollm2_prompt.txt --n 32)
  want=$(sed -n 's/^greedy: //p' $G/smollm2_reference.txt)
  echo "nereus:       $got"; echo "transformers: $want"
  [ -n "$got" ] && [ "$got" = "$want" ]
}
# the tokenizer in the checkpoint: the GGUF file's TokSpec, field for field, and info's line
tokenizer_carried() {
  build/tests/test_gguf tokspec $SM/SmolLM2-135M-Instruct.Q4_1.gguf "$SMCK" &&
    bin/nereus-ckpt info "$SMCK" | grep -x 'tokenizer: 49152 tokens, pre smollm'
}
# every tensor of the SmolLM2 file (61 F32, 210 Q4_1, 1 Q8_0) against gguf.quants.dequantize's checksums
smollm2_check gguf-smollm2-dequant 120 build/tests/test_gguf sums $SM/SmolLM2-135M-Instruct.Q4_1.gguf $G/smollm2_dequant.txt
# nereus-tok on the GGUF file and on the imported checkpoint: the ids of SmolLM2's own tokenizer.json for every
# corpus string and chat prompt of tests/text/data (made by HF tokenizers and transformers, tests/text)
tok_from() {
  local src=$1 D=tests/text/data out=$LOG/gguf-tok-$2
  bin/nereus-tok encode "$src" <$D/corpus.jsonl >"$out.ids" && cmp "$out.ids" $D/smollm2.ids &&
    bin/nereus-tok encode --chat "$src" <$D/chat.jsonl >"$out.chat" && cmp "$out.chat" $D/smollm2.chat.ids
}
export -f loss_close greedy_same tokenizer_carried tok_from; export G SM SMCK LOG # t runs them under timeout, in a bash of its own
# one GRPO step of inputs/smollm2-grpo.deck on the imported model, small (a prompt x 2): the deck's [model] (defaults left out,
# max_seq 256 of the file's 8,192) takes the checkpoint, and a pretrained model runs the text path end to end
smollm2_check gguf-smollm2-grpo-step 300 $L -np 1 bin/nereus inputs/smollm2-grpo.deck --set ppo.steps=1 --set ppo.batch=2 --set model.gen_dtype=bf16 \
  --set ppo.group_size=2 --set ppo.minibatch=2 --set ppo.micro_batch=2 --set ppo.max_response=8 --set data.eval_size=2 --set trace.file=none
# the same on 2 ranks, a step of a prompt x 4 (the deck's plan: every stage over both ranks, dp 2: 2 rows each)
smollm2_check gguf-smollm2-grpo-np2 300 $L -np 2 bin/nereus inputs/smollm2-grpo.deck --set ppo.steps=1 \
  --set ppo.batch=4 --set ppo.minibatch=4 --set ppo.max_response=8 --set data.eval_size=2 --set trace.file=none
smollm2_check gguf-smollm2-tok-gguf 120 bash -c "tok_from $SM/SmolLM2-135M-Instruct.Q4_1.gguf gguf"
smollm2_check gguf-smollm2-tok-ckpt 120 bash -c "tok_from $SMCK ckpt"
smollm2_check gguf-smollm2-loss 300 bash -c loss_close
smollm2_check gguf-smollm2-greedy 300 bash -c greedy_same
smollm2_check gguf-smollm2-tokenizer 120 bash -c tokenizer_carried

# tests/hf/data's Llama (tied, theta 500), Qwen2 (GQA, biases) and Qwen3 (head_dim 16, QK-norm) as llama.cpp lays
# them out in GGUF (tests/gguf/make_reference.py): imported, the loss transformers computed on the original
# files (tests/hf/data/reference.txt) within 1e-4; an import-hf checkpoint has no tokenizer (ckpt_read_tokspec: 1)
hf_loss_close() {
  local out=$LOG/gguf-hf-$1.h5 got want
  bin/nereus-ckpt import-gguf $G/hf-$1.gguf "$out" || return 1
  got=$(bin/nereus-ckpt loss "$out" --tokens tests/hf/data/tokens.bin --batch 4 --seq 16 | sed -n 's/^loss: //p')
  want=$(sed -n "s/^loss\.$1: //p" tests/hf/data/reference.txt)
  echo "nereus $got, transformers $want"
  awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; exit !(a != "" && b != "" && (d < 0 ? -d : d) <= 1e-4) }'
}
export -f hf_loss_close; export LOG
for m in llama-tied qwen2 qwen3; do t gguf-hf-$m 120 bash -c "hf_loss_close $m"; done
runs gguf-hf-no-tokenizer && bin/nereus-ckpt import-hf tests/hf/data/llama-tied "$LOG/gguf-hf-import.h5" >/dev/null 2>&1
t gguf-hf-no-tokenizer 60 build/tests/test_gguf notokenizer "$LOG/gguf-hf-import.h5"

# a flipped bit in the stored vocabulary: verify and ckpt_read_tokspec refuse the checkpoint (h5py: Debian's
# python3-h5py, which make deps installs)
tok_corrupt() {
  local ck=$LOG/gguf-tok-corrupt.h5
  cp "$LOG/gguf-hf-qwen2.h5" "$ck" &&
    /usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); d=f['/tokenizer/tokens']; x=d[:]; x[5]^=1; d[...]=x; f.close()" "$ck" || return 1
  bin/nereus-ckpt verify "$ck" 2>&1 | tee /dev/stderr | grep -q 'gguf-tok-corrupt\.h5: /tokenizer/tokens: checksum mismatch'
}
export -f tok_corrupt
feeds gguf-hf-qwen2 gguf-tokenizer-corrupt
t gguf-tokenizer-corrupt 60 bash -c tok_corrupt

# bad files: exit 2, one line naming the file and what is wrong, no OUT.h5 (nor OUT.h5.part) left behind
GB=$LOG/gguf-bad; mkdir -p "$GB"
import_nothing='bin/nereus-ckpt import-gguf "$1" "$2"; rc=$?; if [ -e "$2" ] || [ -e "$2.part" ]; then echo "$2 written" >&2; exit 1; fi; exit $rc'
if want gguf-bad-truncated gguf-bad-magic gguf-bad-count; then
  n=$(stat -c %s $G/tiny_q5_0.gguf)
  head -c $((n - 100)) $G/tiny_q5_0.gguf >"$GB/truncated.gguf"
  { printf 'GGUX'; tail -c +5 $G/tiny_q5_0.gguf; } >"$GB/magic.gguf"
  # the KV count (uint64 at byte 16) set to 2^40
  { head -c 16 $G/tiny_q5_0.gguf; printf '\x00\x00\x00\x00\x00\x01\x00\x00'; tail -c +25 $G/tiny_q5_0.gguf; } >"$GB/count.gguf"
fi
bad gguf-bad-truncated 'truncated\.gguf: tensor .* lie outside the file.*truncated' bash -c "$import_nothing" _ "$GB/truncated.gguf" "$GB/truncated.h5"
bad gguf-bad-magic 'magic\.gguf: bad magic 47 47 55 58: not a GGUF file' bash -c "$import_nothing" _ "$GB/magic.gguf" "$GB/magic.h5"
bad gguf-bad-count 'count\.gguf: 1099511627776 KV pairs and 11 tensors cannot fit' bash -c "$import_nothing" _ "$GB/count.gguf" "$GB/count.h5"
bad gguf-bad-type 'tiny_q5_0\.gguf: tensor blk\.0\.ffn_up\.weight is Q5_0: only F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K and Q6_K' \
  bash -c "$import_nothing" _ $G/tiny_q5_0.gguf "$GB/type.h5"
bad gguf-bad-missing 'nothere\.gguf: cannot open: No such file' bash -c "$import_nothing" _ "$GB/nothere.gguf" "$GB/missing.h5"
