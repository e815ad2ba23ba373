# tests/suites/llama.sh — the Llama family under tensor and pipeline parallelism: the TP and PP model checks (GQA, Qwen2 biases, Qwen3 QK-norm), 5 PPO steps of inputs/llama-tiny.deck under TP, PP, DP and mixed plans on 2, 4 and 8 ranks against 1 rank, random transitions of Llama tables, a restart under another plan, the live planner moving a Llama deck through TP/PP/DP plans under an injected slowdown, tp not dividing the MLP width refused
section "the Llama family: tensor and pipeline parallelism"
# the sharded model against the unsharded one: logits, values, logp, gradients, an AdamW step, KV-cached decode
# (tp 1, 2); stages alone and with tp 2 (pp 2 and 4; untied and tied heads)
t llama-model-tp 120 $L -np 2 build/tests/test_model_tp llama
t llama-model-pp 120 $L -np 4 build/tests/test_model_pp llama

# 5 PPO steps of the tiny Llama deck (GQA: 4 query heads on 2 key/value heads) under each plan below, against
# the same 5 steps on 1 rank: tokens and rewards identical, checksums within 1e-5. NAME | RANKS | [plan] lines
LLAMA_PLANS='
tp2         | 2 | default = colocated; actor.gen = tp2 @0-1; actor.inf = tp2 @0-1; ref.inf = tp2 @0-1; critic.inf = tp2 @0-1; actor.train = tp2 @0-1; critic.train = tp2 @0-1; reward.inf = tp2 @0-1
pp2         | 2 | actor.gen = dp2 @0-1; actor.inf = pp2 @0-1; ref.inf = pp2 @1,0; critic.inf = pp2 @0-1; actor.train = pp2 @0-1; critic.train = pp2 @1,0; reward.inf = pp2 @0-1
tp2-dp2     | 4 | actor.gen = tp2 dp2 @0-3; actor.inf = tp2 dp2 @0-3; ref.inf = pp2 dp2 @0-3; critic.inf = tp2 @2-3; actor.train = tp2 dp2 @0-3; critic.train = tp2 pp2 @3,2,1,0; reward.inf = @0
tp2-pp2-dp2 | 8 | actor.gen = tp2 dp4 @0-7; actor.inf = tp2 pp2 dp2 @0-7; ref.inf = pp2 dp2 @0-3; critic.inf = tp2 pp2 @4-7; actor.train = tp2 pp2 dp2 @0-7; critic.train = tp2 pp2 dp2 @7,6,5,4,3,2,1,0; reward.inf = pp2 @0-1
'
# llama_deck OUT PLAN: the tiny Llama deck with this [plan] (';'-separated lines)
llama_deck() { { cat inputs/llama-tiny.deck; echo "[plan]"; echo "$2" | tr ';' '\n' | sed 's/^ *//'; } > "$1"; }
while IFS='|' read -r name np plan; do
  name=$(echo $name); [ -n "$name" ] && feeds llama-tp-1rank "llama-tp-$name"
done <<< "$LLAMA_PLANS"
t llama-tp-1rank 300 $L -np 1 bin/nereus inputs/llama-tiny.deck --set ppo.steps=5
while IFS='|' read -r -u 3 name np plan; do
  name=$(echo $name); np=$(echo $np)
  [ -n "$name" ] || continue
  feeds "llama-tp-$name-run" "llama-tp-$name"
  want "llama-tp-$name-run" "llama-tp-$name" || continue
  llama_deck "$LOG/llama-tp-$name.deck" "$plan"
  t "llama-tp-$name-run" 300 $L -np "$np" bin/nereus "$LOG/llama-tp-$name.deck" --set ppo.steps=5
  want "llama-tp-$name" || continue
  equiv_result "llama-tp-$name" "$LOG/llama-tp-1rank.log" "$LOG/llama-tp-$name-run.log" "$np ranks"
done 3<<< "$LLAMA_PLANS"

# tp must divide the MLP width (171 here, with tp2; the key/value heads: tests/decks/bad_plans/llama_kv_heads.deck)
runs llama-tp-ffn-refused && llama_deck "$LOG/llama-ffn.deck" "$(sed -n 's/^tp2  *| 2 | //p' <<< "$LLAMA_PLANS")"
bad llama-tp-ffn-refused 'llama-ffn\.deck:[0-9]+: error: \[plan\] actor\.gen: tp = 2 does not divide the MLP width \(\[model\] ffn_dim = 171\)' \
  $L -np 2 bin/nereus "$LOG/llama-ffn.deck" --set model.ffn_dim=171

# random plan changes of Llama-family models (llama, qwen2, qwen3; tied and untied): bit-identical, minimal bytes
t transition-property-llama-4 300 $L -np 4 build/tests/test_transition 40 llama
t transition-property-llama-8 300 $L -np 8 build/tests/test_transition 15 llama

# a checkpoint written under tp2 on 2 ranks (steps 3 and 6) restarts from step 3 under tp2 pp2 / pp2 dp2 / dp4
# on 4 ranks: steps 3-5 as the uninterrupted run, checksums within 1e-5
LK=$LOG/llama-ck; mkdir -p "$LK"
feeds llama-ckpt-write llama-ckpt-restart-same-run
feeds llama-ckpt-restart llama-ckpt-restart-same-run
if runs llama-ckpt-write; then
  llama_deck "$LK/write.deck" "$(sed -n 's/^tp2  *| 2 | //p' <<< "$LLAMA_PLANS")"
  printf '[ckpt]\nevery = 3\nkeep = 5\ndir = %s\n' "$LK/a" >> "$LK/write.deck"
fi
t llama-ckpt-write 300 $L -np 2 bin/nereus "$LK/write.deck" --set ppo.steps=6
if runs llama-ckpt-restart; then
  llama_deck "$LK/restart.deck" "actor.gen = tp2 dp2 @0-3; actor.inf = pp2 dp2 @0-3; ref.inf = tp2 @2-3; critic.inf = dp4 @0-3; actor.train = tp2 pp2 @1,0,3,2; critic.train = pp2 dp2 @0-3; reward.inf = @3"
  printf '[ckpt]\nevery = 3\nkeep = 5\ndir = %s\n[run]\nrestart = %s\n' "$LK/b" "$LK/a/write_step000003.h5" >> "$LK/restart.deck"
fi
t llama-ckpt-restart 300 $L -np 4 bin/nereus "$LK/restart.deck" --set ppo.steps=6
if want llama-ckpt-restart-same-run; then
  why=""
  for s in 3 4 5; do
    a=$(grep "^step *$s |" "$LOG/llama-ckpt-write.log" | cut -d'|' -f2,3); b=$(grep "^step *$s |" "$LOG/llama-ckpt-restart.log" | cut -d'|' -f2,3)
    [ -n "$a" ] && [ "$a" = "$b" ] || why="$why step $s: '$a' vs '$b';"
  done
  grep -q "^step *2 |" "$LOG/llama-ckpt-restart.log" && why="$why the restart ran step 2;"
  checksums_close "$LOG/llama-ckpt-write.log" "$LOG/llama-ckpt-restart.log"
  if [ -z "$why" ]; then result llama-ckpt-restart-same-run 0 0 "tp2 on 2 ranks -> tp2/pp2/dp mixed on 4: steps 3-5 reward and KL as uninterrupted, checksums within $worst"
  else result llama-ckpt-restart-same-run 1 0 "$why"; fi
fi

# the live planner (policy sweep: 3 sampled plans, the control, the search's choice and the best again) on a Llama
# deck with an INJECTED 3x slowdown of rank 1 from step 6: it moves the models through TP, PP and DP plans (its
# sampler and search propose only plans whose tp divides the key/value heads), every transition checked
feeds llama-planner-run llama-planner-moves
if runs llama-planner-run; then
  sed -e 's/^n_layer = 2$/arch = llama\nn_layer = 2\nn_kv_head = 2/' -e 's/^name = sweep$/name = llama-sweep/' \
      -e 's/^steps = 30$/steps = 22/' -e 's/^sweep_plans = 6$/sweep_plans = 3/' -e 's/^sweep_calibrate = 2$/sweep_calibrate = 1/' \
      tests/decks/sweep.deck > "$LOG/llama-sweep.deck"
  printf '[inject]\nslow_ranks = 1\nslow_factor = 3\nslow_step = 6\n[transition]\nverify = true\n' >> "$LOG/llama-sweep.deck"
fi
t llama-planner-run 300 $L -np 4 bin/nereus "$LOG/llama-sweep.deck"
if want llama-planner-moves; then
  f=$LOG/llama-planner-run.log
  layouts=$(sed -n '/^planner: before step [0-9]*: plan [0-9]* -> [0-9]*:$/,/^transition:/p' "$f" |
            grep -oE '^(actor|ref|critic)\.[a-z]+ +tp[0-9]+ pp[0-9]+ dp[0-9]+' | awk '{print $2, $3, $4}' | sort -u | tr '\n' ',')
  nt=$(verify "$f" transitions); nc=$(grep -c 'per-tensor checks passed' "$f")
  if [ "$(verify "$f" status)" = pass ] && grep -q '^INJECTED slowdown' "$f" && [ "${nt:-0}" -ge 4 ] && [ "$nc" = "$nt" ] && \
     echo "$layouts" | grep -qE 'tp[2-9]' && echo "$layouts" | grep -qE 'pp[2-9]'; then
    result llama-planner-moves 0 0 "$nt transitions, each checked; layouts run: ${layouts%,}"
  else result llama-planner-moves 1 0 "status '$(verify "$f" status)', $nt transitions ($nc checked), layouts '${layouts%,}' (want tp2 and pp2 among them)"; fi
fi
