#!/usr/bin/env bash
# tests/test_hf.sh — Hugging Face model directories in and out of checkpoints
# (bin/nereus-ckpt import-hf / export-hf, one process each), against files
# transformers itself wrote (tests/hf/data, made by tests/hf/make_reference.py):
# the imported model's loss equals transformers' own on the same tokens
# within 1e-4, for GPT-2 in fp32, bf16 (sharded) and fp16 files and for
# Llama (GQA with Llama-3 RoPE scaling; tied), Qwen2 and Qwen3, their
# config.json also in the transformers 4 layout; import then export
# gives the same tensors (names, dtypes, shapes, bytes); damaged directories
# and configs are refused with exit 2 and a message naming the file and the
# tensor or key. Prints one ok/FAIL line per check; exits non-zero when any failed.
set -u
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
CK=bin/nereus-ckpt H=tests/hf/data PY=/usr/bin/python3
D=$(mktemp -d "${TMPDIR:-/tmp}/nereus-hf.XXXXXX")
trap 'rm -rf "$D"' EXIT
fails=0 n=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok   $2"; else fails=$((fails+1)); echo "FAIL $2"; fi; }

loss_matches() { # DIR REFNAME: import DIR, its loss within 1e-4 of transformers' loss.REFNAME
  local m=$(basename "$1")
  "$CK" import-hf "$1" "$D/$m.h5" >"$D/out" 2>&1; rc=$?
  ok $rc "import-hf $m: $(cat "$D/out")"
  got=$("$CK" loss "$D/$m.h5" --tokens "$H/tokens.bin" --batch 4 --seq 16 | sed -n 's/^loss: //p')
  want=$(sed -n "s/^loss\.$2: //p" "$H/reference.txt")
  awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; exit !(a != "" && b != "" && (d < 0 ? -d : d) <= 1e-4) }'
  ok $? "$m: loss $got, transformers $want (within 1e-4)"
}
for m in gpt2-f32 gpt2-bf16-sharded gpt2-f16 llama-gqa llama-tied qwen2 qwen3; do loss_matches "$H/$m" $m; done
for m in llama-gqa qwen2; do # the transformers 4 layout of config.json: the same model
  $PY tests/hf/mutate.py v4rope "$H/$m" "$D/$m-v4"
  loss_matches "$D/$m-v4" $m
done
for m in llama-gqa llama-tied qwen2 qwen3; do
  "$CK" export-hf "$D/$m.h5" "$D/export-$m" >/dev/null 2>&1 && $PY tests/hf/same_tensors.py "$H/$m" "$D/export-$m" >"$D/out"
  ok $? "$m: import-hf then export-hf: the same tensors as transformers wrote: $(cat "$D/out")"
  loss_matches "$D/export-$m" $m
done
"$CK" export-hf "$D/gpt2-f32.h5" "$D/export" >/dev/null 2>&1 && $PY tests/hf/same_tensors.py "$H/gpt2-f32" "$D/export" >"$D/out"
ok $? "import-hf then export-hf: the same tensors as transformers wrote: $(cat "$D/out")"
"$CK" import-hf "$D/export" "$D/again.h5" >/dev/null && "$CK" export-hf "$D/again.h5" "$D/export2" >/dev/null &&
  cmp -s "$D/export/model.safetensors" "$D/export2/model.safetensors"
ok $? "export-hf of a re-import is the same file byte for byte"

# refused: exit 2, one line naming the file and what is wrong
refused() { # KIND REGEX [MODEL]
  local b="bad-$1-${3:-gpt2-f32}"
  $PY tests/hf/mutate.py "$1" "$H/${3:-gpt2-f32}" "$D/$b"
  "$CK" import-hf "$D/$b" "$D/$b.h5" >/dev/null 2>"$D/err"; local rc=$?
  if [ $rc = 2 ] && [ "$(wc -l <"$D/err")" = 1 ] && grep -qE -- "$2" "$D/err" && [ ! -e "$D/$b.h5" ]; then
    ok 0 "$1 ${3:-gpt2-f32} refused: $(cat "$D/err")"
  else ok 1 "$1 ${3:-gpt2-f32}: exit $rc (want 2), want /$2/, no output file: $(cat "$D/err")"; fi
}
refused drop 'model\.safetensors: tensor transformer\.h\.1\.mlp\.c_fc\.weight is missing'
refused extra 'tensor transformer\.h\.0\.attn\.rotary\.inv_freq is not part of a GPT2LMHeadModel'
refused shape 'tensor transformer\.h\.1\.mlp\.c_fc\.weight has shape \(128, 32\), the config gives \(32, 128\)'
refused int 'tensor transformer\.h\.1\.mlp\.c_fc\.weight is I32; only F32, BF16 and F16'
refused overlap 'tensor transformer\.h\.1\.mlp\.c_fc\.weight starts at byte [0-9]+ .*overlaps another tensor'
refused truncate 'model\.safetensors: tensor .* outside the [0-9]+ bytes of data \(truncated\?\)'
refused hugeheader 'model\.safetensors: header length 1099511627776 does not fit the file'
refused notjson 'model\.safetensors: the header is not a JSON object'
refused arch 'config\.json: architecture MistralForCausalLM is not supported'
refused act 'config\.json: activation_function relu: only gelu_new'
refused drop 'model\.safetensors: tensor model\.layers\.1\.self_attn\.k_proj\.weight is missing' llama-gqa
refused extra 'tensor model\.layers\.0\.mlp\.gate_proj\.bias is not part of a Qwen3ForCausalLM' qwen3
refused shape 'tensor model\.layers\.1\.self_attn\.k_proj\.weight has shape \(32, 16\), the config gives \(16, 32\)' llama-gqa
refused act 'config\.json: hidden_act relu: only silu' llama-tied
refused sliding 'config\.json: use_sliding_window true: sliding-window attention is not supported' qwen2
refused moe 'config\.json: num_experts: mixture-of-experts models are not supported' qwen3
refused yarn 'config\.json: rope_parameters\.rope_type yarn: only default and llama3 RoPE' llama-gqa
refused noconfig 'config\.json: cannot open: No such file'
"$CK" import-hf "$D/nothere" "$D/x.h5" >/dev/null 2>"$D/err"; rc=$?
[ $rc = 2 ] && grep -q 'nothere/config\.json: cannot open' "$D/err"; ok $? "a missing directory: exit 2: $(cat "$D/err")"
"$CK" export-hf "$D/nothere.h5" "$D/x" >/dev/null 2>"$D/err"; rc=$?
[ $rc = 1 ] && [ ! -e "$D/x" ]; ok $? "export-hf of a missing checkpoint: exit 1, nothing written: $(cat "$D/err")"

# a Llama-family checkpoint of the earlier layout (a packed qkvw beside the model's tensors) is refused by name
cp "$D/qwen2.h5" "$D/oldlayout.h5" && h5copy -i "$D/qwen2.h5" -o "$D/oldlayout.h5" -s /models/actor/params/qw \
  -d /models/actor/params/qkvw && "$CK" loss "$D/oldlayout.h5" --tokens "$H/tokens.bin" --batch 4 --seq 16 >/dev/null 2>"$D/err"
rc=$?
[ $rc = 1 ] && grep -q 'oldlayout\.h5: /models/actor: a qwen2 model in the earlier Llama-family layout (a packed qkvw' "$D/err"
ok $? "the earlier Llama-family layout refused: exit $rc: $(cat "$D/err")"

echo "$n checks, $fails failed"
[ $fails = 0 ]
