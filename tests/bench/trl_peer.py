#!/usr/bin/env python3
"""tests/bench/trl_peer.py — TRL's GRPOTrainer on a Hugging Face directory, the peer of a Nereus GRPO run
(tests/bench/trl_peer.sh runs both, alternating; not in make test).

  trl_peer.py HF_DIR TRAIN.jsonl OUT_DIR --steps N --prompts P --group G --max-new N --lr X --beta X
              --clip X [--system TEXT] [--rule RULE] [--format-reward X] [--seed S] [--threads T]
              [--save-every K]

The same workload as the deck's: P prompts a step from TRAIN.jsonl (its "question" as the user turn of a
chat, with the system turn --system), G completions each, at most --max-new new tokens, temperature 1,
the whole distribution; the reward is bin/nereus-score RULE (+ --format-reward), the scorer a Nereus run
uses; one update a step on the whole batch (num_iterations 1, no gradient accumulation), the loss
normalised by the batch's tokens (loss_type dapo, as Nereus' GRPO), group-std advantages, k3 KL with
coefficient --beta, clip --clip, AdamW with Nereus' defaults (betas 0.9 / 0.95, eps 1e-5, no weight
decay, gradient norm clipped to 1), a constant learning rate, fp32 on the CPU with --threads threads.

Writes OUT_DIR/final (the trained model, for tools/eval-hf), with --save-every K also OUT_DIR/step-N every K
steps (the learning curve, tests/bench/trl_learn.sh), and prints one line a step and a summary:

  trl step K: S s, T tokens (prompt + completion), R tokens/s, reward M
  trl.step_s: MEDIAN   trl.tokens_per_s: ...   trl.peak_rss_mib: ...   trl.steps: N

Needs torch, transformers and trl (1.16) in a virtual environment (build/venv-torch: trl_peer.sh says how).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def fail(msg):
    print("trl_peer: error: " + msg, file=sys.stderr)
    sys.exit(2)


def load_rows(path, system):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                o = json.loads(line)
                msgs = ([{"role": "system", "content": system}] if system else []) + \
                       [{"role": "user", "content": o["question"]}]
                rows.append({"prompt": msgs, "answer": str(o["answer"]), "metadata": json.dumps(o.get("metadata", {}))})
    if not rows:
        fail("%s: no prompts" % path)
    return rows


def make_reward(args, here):
    tool = os.path.join(here, "bin", "nereus-score")
    cmd = [tool, args.rule, "--format-reward", str(args.format_reward)] + (["--task", args.task] if args.task else [])

    def reward(completions, answer, metadata, **kw):
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        lines = "".join(json.dumps({"response": t, "answer": a, "metadata": json.loads(m)}) + "\n"
                        for t, a, m in zip(texts, answer, metadata))
        p = subprocess.run(cmd, input=lines, capture_output=True, text=True)
        if p.returncode != 0:
            fail("nereus-score: " + p.stderr.strip())
        return [float(x) for x in p.stdout.split()]
    reward.__name__ = "nereus_score_" + args.rule.replace("-", "_")
    return reward


def main():
    ap = argparse.ArgumentParser(prog="trl_peer.py")
    ap.add_argument("hf_dir")
    ap.add_argument("train")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--prompts", type=int, required=True)
    ap.add_argument("--group", type=int, required=True)
    ap.add_argument("--max-new", type=int, required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--beta", type=float, required=True)
    ap.add_argument("--clip", type=float, required=True)
    ap.add_argument("--system", default=None)
    ap.add_argument("--rule", default="last-number")
    ap.add_argument("--task", default=None)
    ap.add_argument("--format-reward", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save-every", type=int, default=0)
    args = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    import torch
    torch.set_num_threads(args.threads)
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    ds = Dataset.from_list(load_rows(args.train, args.system))
    tok = AutoTokenizer.from_pretrained(args.hf_dir)
    model = AutoModelForCausalLM.from_pretrained(args.hf_dir, dtype=torch.float32)
    n = args.prompts * args.group
    cfg = GRPOConfig(output_dir=args.out, use_cpu=True, bf16=False, seed=args.seed, max_steps=args.steps,
                     per_device_train_batch_size=n, num_generations=args.group,
                     gradient_accumulation_steps=1, steps_per_generation=1, num_iterations=1,
                     max_completion_length=args.max_new, temperature=1.0, top_p=1.0, top_k=0,
                     learning_rate=args.lr, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0,
                     adam_beta1=0.9, adam_beta2=0.95, adam_epsilon=1e-5, max_grad_norm=1.0, optim="adamw_torch",
                     beta=args.beta, epsilon=args.clip, loss_type="dapo", scale_rewards="group",
                     logging_steps=1, report_to=[], save_strategy="no", dataloader_num_workers=0)

    times, tokens, rewards = [], [], []

    class Clock(TrainerCallback):
        t0 = 0.0
        last_tokens = 0.0

        def on_step_begin(self, a, state, control, **kw):
            Clock.t0 = time.time()

        def on_step_end(self, a, state, control, **kw):
            times.append(time.time() - Clock.t0)
            if args.save_every > 0 and state.global_step % args.save_every == 0 and state.global_step < args.steps:
                d = os.path.join(args.out, "step-%d" % state.global_step)
                kw["model"].save_pretrained(d)
                tok.save_pretrained(d)

        def on_log(self, a, state, control, logs=None, **kw):
            if logs and "num_tokens" in logs:
                tokens.append(logs["num_tokens"] - Clock.last_tokens)
                Clock.last_tokens = logs["num_tokens"]
                rewards.append(logs.get("reward", float("nan")))
                k = len(tokens) - 1
                if k < len(times):
                    print("trl step %d: %.3f s, %d tokens (prompt + completion), %.1f tokens/s, reward %.4f"
                          % (k, times[k], tokens[k], tokens[k] / times[k], rewards[k]), flush=True)

    trainer = GRPOTrainer(model=model, processing_class=tok, reward_funcs=[make_reward(args, here)], args=cfg,
                          train_dataset=ds, callbacks=[Clock()])
    trainer.train()
    trainer.save_model(os.path.join(args.out, "final"))
    tok.save_pretrained(os.path.join(args.out, "final"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    m = len(min(times, tokens, key=len))
    print("trl.steps: %d" % m)
    print("trl.step_s: %.3f" % statistics.median(times[:m]))
    print("trl.tokens_per_s: %.2f" % (sum(tokens[:m]) / sum(times[:m])))
    print("trl.reward_mean: %.4f" % (sum(rewards[:m]) / m))
    print("trl.peak_rss_mib: %.0f" % peak)


if __name__ == "__main__":
    main()
