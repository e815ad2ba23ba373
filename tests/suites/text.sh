# tests/suites/text.sh — the tokenizer and bin/nereus-tok: ids equal to HF tokenizers' on the committed corpus (GPT-2, Llama-3, Qwen2-style, SmolLM2), decode(encode(x)) = x, chat ids equal to transformers' apply_chat_template, bad tokenizers and input refused
# The reference files are tests/text/data/ (tests/text/make_reference.py says how they are made); no Python runs here.
section "tokenizer"
# the C API on hand-made tokenizers: merge order, ignore_merges, added tokens, refusals, chat formats
t test_text 30 build/tests/test_text
# the checks are shell functions, exported, since t runs its command under timeout: t NAME S bash -c 'FN ARGS'
export TOK=bin/nereus-tok D=tests/text/data W=$LOG/text
mkdir -p "$W"

# same_lines GOT WANT: the files are equal, or the first differing line is shown
same_lines() {
  cmp -s "$1" "$2" && return 0
  echo "differs from $2:"; diff "$1" "$2" | head -6; return 1
}
# ids_equal NAME: encode every corpus line; the ids equal HF tokenizers' line for line
ids_equal() { $TOK encode "$D/$1" <"$D/corpus.jsonl" >"$W/$1.ids" && same_lines "$W/$1.ids" "$D/$1.ids"; }
# roundtrip NAME: decode(encode(x)) = x for every corpus line (the JSON strings byte for byte); for Qwen2,
# whose normalizer is NFC, = NFC(x) (corpus.nfc.jsonl: HF's own decode(encode(x)) gives the same)
roundtrip() {
  local want=$D/corpus.jsonl
  [ "$1" = qwen2 ] && want=$D/corpus.nfc.jsonl
  $TOK encode "$D/$1" <"$D/corpus.jsonl" | $TOK decode "$D/$1" >"$W/$1.dec" && same_lines "$W/$1.dec" "$want"
}
# chat_equal NAME: each chat prompt formatted with the model's template: ids equal apply_chat_template's
chat_equal() { $TOK encode --chat "$D/$1" <"$D/chat.jsonl" >"$W/$1.chat" && same_lines "$W/$1.chat" "$D/$1.chat.ids"; }

export -f same_lines ids_equal roundtrip chat_equal
for m in gpt2 llama3 qwen2 smollm2; do
  t "tok-ids-$m" 60 bash -c "ids_equal $m"
  t "tok-roundtrip-$m" 60 bash -c "roundtrip $m"
done
for m in llama3 qwen2 smollm2; do t "tok-chat-$m" 60 bash -c "chat_equal $m"; done

# --system TEXT on a string line gives what the {"system", "user"} line gives
chat_system_flag() {
  local a b
  a=$(echo '"What is 2 + 2?"' | $TOK encode --chat --system 'Answer briefly.' "$D/smollm2") &&
  b=$(echo '{"system": "Answer briefly.", "user": "What is 2 + 2?"}' | $TOK encode --chat "$D/smollm2") &&
  [ -n "$a" ] && [ "$a" = "$b" ]
}
export -f chat_system_flag
t tok-chat-system-flag 30 bash -c chat_system_flag
# a byte SmolLM2's vocabulary lacks (0x1d, 0x04) is left out, as HF's BPE without an unk token does: [81, 82]
unknown_byte() { [ "$(echo '"a\u001db\u0004"' | $TOK encode "$D/smollm2")" = "81 82" ]; }
export -f unknown_byte
t tok-smollm2-unknown-byte 30 bash -c unknown_byte
# ids that end inside a UTF-8 character decode to U+FFFD for each stray byte (SmolLM2's 175 is byte 0xe4,
# the lead of a 3-byte character; 81 is "a")
partial_utf8() { [ "$(echo '81 175 81' | $TOK decode "$D/smollm2")" = $'"a\xef\xbf\xbda"' ]; }
export -f partial_utf8
t tok-decode-partial-utf8 10 bash -c partial_utf8
tok_help() { $TOK --help >"$W/help.out" && grep -q '^usage: nereus-tok encode' "$W/help.out"; }
export -f tok_help
t tok-help 10 bash -c tok_help

# a hand-made tokenizer.json with its variants: small enough to read in the test
mk_tok() { # DIR PRE_TOKENIZER MODEL_EXTRA
  mkdir -p "$W/$1"
  printf '{"added_tokens": [{"id": 3, "content": "<|x|>", "special": true}], "normalizer": null,\n "pre_tokenizer": %s,\n "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "<|x|>": 3}%s}}\n' "$2" "$3" >"$W/$1/tokenizer.json"
}
BL='{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}'
mk_tok ok "$BL" ', "merges": ["a b"]'
mk_tok array-merges "$BL" ', "merges": [["a", "b"]]'
mk_tok no-merges "$BL" ''
mk_tok bad-merge "$BL" ', "merges": ["a c"]'
mk_tok split-other '{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\\\w+"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]}' ', "merges": ["a b"]'
mkdir -p "$W/no-pre"; sed 's/"pre_tokenizer": .*/"pre_tokenizer_x": null,/' "$W/ok/tokenizer.json" >"$W/no-pre/tokenizer.json"
mkdir -p "$W/nfc-gpt2"; sed 's/"normalizer": null/"normalizer": {"type": "NFC"}/' "$W/ok/tokenizer.json" >"$W/nfc-gpt2/tokenizer.json"
mkdir -p "$W/lstrip"; sed 's/"special": true}/"special": true, "lstrip": true}/' "$W/ok/tokenizer.json" >"$W/lstrip/tokenizer.json"
mkdir -p "$W/post-bos"
sed 's/"normalizer": null,/"normalizer": null, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|x|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]},/' "$W/ok/tokenizer.json" >"$W/post-bos/tokenizer.json"
mkdir -p "$W/not-json"; head -c 100 "$W/ok/tokenizer.json" >"$W/not-json/tokenizer.json"
mkdir -p "$W/bad-template"; cp "$W/ok/tokenizer.json" "$W/bad-template/"
printf '{"chat_template": "{%%- for m in messages %%}[INST] {{ m.content }}\\n{%%- endfor %%}"}\n' >"$W/bad-template/tokenizer_config.json"
printf 'GGUF\003\000\000\000' >"$W/model.gguf"

# both merge forms: "ab<|x|>ba" is [ab] <|x|> [b] [a]
small() { [ "$(echo '"ab<|x|>ba"' | $TOK encode "$W/$1")" = "2 3 1 0" ]; }
export -f small
t tok-small-merges-string 10 bash -c "small ok"
t tok-small-merges-array 10 bash -c "small array-merges"
# a post-processor that starts with a special token: encode prepends it (HF's add_special_tokens=True)
post_bos() { [ "$(echo '"ab"' | $TOK encode "$W/post-bos")" = "3 2" ]; }
export -f post_bos
t tok-post-processor-bos 10 bash -c post_bos

bad tok-bad-missing-merges "no-merges/tokenizer.json: missing key 'model.merges'" $TOK encode "$W/no-merges" </dev/null
bad tok-bad-missing-pre "no-pre/tokenizer.json: missing key 'pre_tokenizer'" $TOK encode "$W/no-pre" </dev/null
bad tok-bad-unknown-pre "split-other/tokenizer.json: pre_tokenizer: not one Nereus knows" $TOK encode "$W/split-other" </dev/null
bad tok-bad-not-json "not-json/tokenizer.json: not a JSON object \(near byte [0-9]+\)" $TOK encode "$W/not-json" </dev/null
bad tok-bad-normalizer "nfc-gpt2/tokenizer.json: normalizer is NFC, where the 'gpt2' pre-tokenizer has none" $TOK encode "$W/nfc-gpt2" </dev/null
bad tok-bad-lstrip "lstrip/tokenizer.json: added_tokens: '<\|x\|>' has lstrip true" $TOK encode "$W/lstrip" </dev/null
bad tok-bad-merge "merge 0 'a c': 'right part' is not in the vocabulary" $TOK encode "$W/bad-merge" </dev/null
bad tok-bad-json-line "<stdin>:2: not a JSON string" $TOK encode "$W/ok" < <(printf '"a"\n{"a": 1\n')
bad tok-bad-number-line "<stdin>:1: not a JSON string" $TOK encode "$W/ok" < <(printf '42\n')
bad tok-bad-id "<stdin>:2: id 9 at position 1 is outside the vocabulary" $TOK decode "$W/ok" < <(printf '0 1\n2 9\n')
bad tok-bad-id-text "<stdin>:1: '1x' is not a token id" $TOK decode "$W/ok" < <(printf '0 1x\n')
bad tok-bad-template "chat template not recognised \(ChatML or Llama-3\): \{%- for m in messages %\}\[INST\]" $TOK encode --chat "$W/bad-template" </dev/null
bad tok-bad-no-template "--chat: the tokenizer has no chat template" $TOK encode --chat "$W/ok" </dev/null
bad tok-bad-no-model "nosuch: no such file or directory" $TOK encode "$W/nosuch" </dev/null
bad tok-bad-command "bad command line" $TOK frobnicate "$W/ok" </dev/null
# a GGUF file cut short is refused by the GGUF reader, naming the file (SmolLM2's whole GGUF: the gguf suite)
bad tok-gguf-truncated 'model\.gguf: truncated: the tensor count at byte 8' $TOK encode "$W/model.gguf" </dev/null
