# tests/suites/kernels.sh — every kernel path this CPU runs besides its default (NEREUS_CPU_KERNELS: avx2 and portable, avx512 only where the CPU has it): the equivalence tests of the runs, llama and grpo suites again under that path (names NAME@PATH: the same tokens on 1 rank and under every plan), and each path's 1-rank runs bit for bit the default path's (tokens, checksums, hashes); then a run generating in bf16 (gen_dtype) on every path, avx512bf16's VDPBF16PS and avx512 included, bit for bit alike
section "kernel paths: the equivalence tests under each path this CPU runs besides its default"
default=avx2; others="portable"; all="avx2 portable"
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then default=avx512; others="avx2 portable"; all="avx512 $all"; fi
# avx512bf16 differs from avx512 in the bf16 GEMM alone: the fp32 equivalence tests run once for both
if grep -qw avx512_bf16 /proc/cpuinfo 2>/dev/null && [ $default = avx512 ]; then default=avx512bf16; all="avx512bf16 $all"; fi
EQUIV='^(equiv-|llama-equiv-|llama-tp-(1rank|tp2|pp2|tp2-dp2|tp2-pp2-dp2)(-run)?$|grpo-equiv-|grpo-process-equiv-)'
# the 1-rank decks whose verification blocks must not depend on the path (NAME | ARGS)
SAME_BITS='
gpt2  | tests/decks/equiv.deck
llama | inputs/llama-tiny.deck --set ppo.steps=5
grpo  | inputs/grpo-tiny.deck --set ppo.steps=5 --set ppo.group_size=8 --set trace.file=none
'
base=$LOG
for p in $others; do
  (
    export NEREUS_CPU_KERNELS=$p
    SUFFIX="@$p"; LOG=$base/kernels-$p; mkdir -p "$LOG"
    for s in runs llama grpo; do ( ONLY=$EQUIV; . "tests/suites/$s.sh" ); done
    section "kernel paths: $p against $default, bit for bit"
    while IFS='|' read -r -u 3 name args; do
      name=$(echo $name); [ -n "$name" ] || continue
      feeds "same-bits-$name-$default" "same-bits-$name"
      feeds "same-bits-$name-run" "same-bits-$name"
      NEREUS_CPU_KERNELS=$default t "same-bits-$name-$default" 300 $L -np 1 bin/nereus $args
      t "same-bits-$name-run" 300 $L -np 1 bin/nereus $args
      want "same-bits-$name" || continue
      a=$LOG/same-bits-$name-$default.log; b=$LOG/same-bits-$name-run.log
      why=""
      [ "$(verify "$a" cpu_kernels)" = "$default" ] && [ "$(verify "$b" cpu_kernels)" = "$p" ] || why="paths run: '$(verify "$a" cpu_kernels)' and '$(verify "$b" cpu_kernels)';"
      same_keys "$a" "$b" status tokens_hash reward_last10 checksum.actor checksum.ref checksum.critic hash.actor hash.ref hash.critic
      if [ -z "$why" ]; then result "same-bits-$name" 0 0 "$p and $default: tokens, rewards, checksums and hashes identical"
      else result "same-bits-$name" 1 0 "$why"; fi
    done 3<<< "$SAME_BITS"
  )
done

# the bf16 GEMM (decode_bf16.c) on every path this CPU runs: the same bits everywhere
section "kernel paths: a bf16 generation run (gen_dtype bf16, scoring fp32) bit for bit on every path ($all)"
BF16_ARGS="inputs/grpo-tiny.deck --set ppo.steps=4 --set model.gen_dtype=bf16 --set trace.file=none"
first=""
for p in $all; do
  feeds "bf16-$p" "bf16-same-bits"
  NEREUS_CPU_KERNELS=$p t "bf16-$p" 300 $L -np 1 bin/nereus $BF16_ARGS
  [ -n "$first" ] || first=$p
done
if want bf16-same-bits; then
  a=$LOG/bf16-$first.log; why=""
  [ "$(verify "$a" gen_dtype)" = bf16 ] || why="gen_dtype '$(verify "$a" gen_dtype)', not bf16;"
  for p in $all; do
    [ $p = $first ] && continue
    b=$LOG/bf16-$p.log
    [ "$(verify "$b" cpu_kernels)" = "$p" ] || why="$why $p ran '$(verify "$b" cpu_kernels)';"
    same_keys "$a" "$b" status tokens_hash reward_last10 logp_gap_mean checksum.actor hash.actor
  done
  if [ -z "$why" ]; then result bf16-same-bits 0 0 "$all: tokens, log-prob gaps, checksums and hashes identical"
  else result bf16-same-bits 1 0 "$why"; fi
fi
