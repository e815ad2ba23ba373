#!/usr/bin/env bash
# tests/bench/run.sh — `make bench`: every benchmark, a table on stdout and
# one `metric: value` per line in build/bench.txt. Ratios are taken against
# baselines measured in the same run. Pass --quick for a short smoke run.
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; echo "usage: tests/bench/run.sh [--quick]   (make bench). Exit: 0, non-zero when a benchmark fails."; exit 0;;
  ""|--quick) ;;
  *) echo "tests/bench/run.sh: unknown option '$1' (--quick, --help)" >&2; exit 2;;
esac
cd "$(dirname "$0")/../.."
mkdir -p build
. tests/workdir.sh bench-run # runs write their traces there, not into the checkout
out=build/bench.txt
: > "$out"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$out"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1) x $(nproc)" >> "$out"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
build/bench/bench_step "$out" "${1:-}"
build/bench/bench_gen "$out" "${1:-}"
# the tokenizer: encode throughput at 1 thread, and HF tokenizers' on the same corpus: TOK_PYTHON where set,
# else Debian's python3 with the PyPI package tokenizers installed once under build/bench-py (pip --target)
echo
build/bench/bench_tok "$out" tests/text/data gpt2 llama3 qwen2 smollm2
tok_py=${TOK_PYTHON:-/usr/bin/python3}
if [ -z "${TOK_PYTHON:-}" ] && ! PYTHONPATH=build/bench-py $tok_py -c 'import tokenizers' 2>/dev/null; then
  $tok_py -m pip install -q --target build/bench-py tokenizers >/dev/null 2>&1 ||
    echo "bench: HF tokenizers could not be installed under build/bench-py (no PyPI?): their throughput is left out"
fi
PYTHONPATH=build/bench-py${PYTHONPATH:+:$PYTHONPATH} $tok_py tests/bench/bench_tok_hf.py "$out" tests/text/data gpt2 llama3 qwen2 smollm2
tests/bench/plans.sh "$out"
mkdir -p build/bench-io
jobs/local.sh -np 4 build/bench/bench_ckpt "$out" build/bench-io
jobs/local.sh -np 8 build/bench/bench_transition "$out" build/bench-io
# asynchronous rollouts on 2 ranks: max_staleness 1 against 0, alternating
tests/bench/async.sh "$out"
# the live planner on 8 ranks: drift under payback vs static, the cost model on held-out plans
tests/bench/live.sh "$out"
# this build's cost model refitted on stored sweeps (tests/bench/dumps/: the same measurements every run)
echo
echo "== the cost model on stored sweeps (build/bench/sweep_refit: this build's model, measurements of earlier runs)"
for d in tests/bench/dumps/*.txt; do
  n=$(basename "$d" .txt)
  r=$(build/bench/sweep_refit "$d")
  m=$(echo "$r" | sed -n 's/.*held out, [0-9]* round(s): MAPE \([0-9.]*\)%, worst \([0-9.]*\)%.*/\1 \2/p')
  own=$(echo "$r" | sed -n 's/.*the model.s own about \([0-9.]*\)% RMS.*/\1/p')
  o="- (no controls)"; if [ -n "$own" ]; then o="$own% RMS"; fi
  printf '  %-22s MAPE %6s%%  worst %6s%%  the model'"'"'s own error %s\n' "$n" ${m:-? ?} "$o"
  echo "refit.$n.mape_pct: ${m%% *}" >> "$out"
  echo "refit.$n.worst_pct: ${m##* }" >> "$out"
  if [ -n "$own" ]; then echo "refit.$n.model_rms_est_pct: $own" >> "$out"; fi
done
# the pure DAG builder at 32, 256 and 1,024 ranks (test_tx_dag times it: median of 7)
echo
echo "== transition DAG build time (8B-shaped actor and critic with AdamW state, and actor.gen; one process)"
build/tests/test_tx_dag | sed -n 's/^ok *\( *[0-9]* ranks.*\) in \([0-9.]*\) ms.*/\1: \2 ms/p' | sed 's/, DAG of/: DAG of/'
build/tests/test_tx_dag | sed -n 's/^tx_dag_build_ms_\([0-9]*\): /tx.dag_build_ms_\1: /p' >> "$out"
# the plan search at 32, 256 and 1,024 ranks (modelled H200s, an 8B actor and critic; test_planner times it)
echo
echo "== plan search time (modelled H200 cluster, llama-3.1-8b actor and critic; one process)"
build/tests/test_planner | sed -n 's/^ok *\( *[0-9]* ranks, 8B actor and critic: search [0-9.]* ms\).*/\1/p'
build/tests/test_planner | sed -n 's/^planner_search_ms_\([0-9]*\): /planner.search_ms_\1: /p' >> "$out"
# the simulator: the paper's growth scenario at 64 and 1,024 modelled GPUs, every policy
build/tests/test_sim | grep -v '^sim\.'
build/tests/test_sim | grep '^sim\.' >> "$out"
# the scenario decks (inputs/sim/): bin/nereus --simulate, sim.POLICY.METRIC lines prefixed by the deck's GPUs
for n in 16 64 256 1024; do
  echo; echo "== bin/nereus --simulate inputs/sim/growth-$n.deck"
  bin/nereus --simulate inputs/sim/growth-$n.deck | tee build/sim-growth-$n.txt | grep -v '^sim\.\|^verify\.'
  sed -n "s/^sim\./simdeck.$n./p" build/sim-growth-$n.txt >> "$out"
done
# the same growth under SYNTHETIC spot-like capacity (tools/spot-trace), where admission rules part if anywhere
for n in 64 1024; do
  echo; echo "== bin/nereus --simulate inputs/sim/spot-$n.deck"
  bin/nereus --simulate inputs/sim/spot-$n.deck | tee build/sim-spot-$n.txt | grep -v '^sim\.\|^verify\.'
  sed -n "s/^sim\./simspot.$n./p" build/sim-spot-$n.txt >> "$out"
done
# the simulator's transition price against the paper's measured 16 -> 32 GPU move, and a checkpoint-restart
build/bench/bench_moves "$out"
# the admission study (issue #34): every scenario deck of inputs/sim/study/ over its paired seeds
tests/bench/sim_study.sh "$out"
echo
echo "bench: wrote $out"
