"""torch_peer.py OUT THREADS [REPS] — the PyTorch peer of bench_step's training step (not in make test).

The same step bench_step times for GPT-2 124M and the llama-124M shape: B = 4 sequences of T = 64 random
tokens, forward, the log-probability loss of the next tokens, backward, AdamW; fp32 on the CPU with
transformers' GPT2LMHeadModel and LlamaForCausalLM (attention: sdpa), torch.optim.AdamW(foreach=True),
torch.set_num_threads(THREADS). Two warm-up steps, then REPS timed ones (default 5); the median.
Appends `torch.MODEL.tN.tokens_per_s` and `torch.MODEL.tN.step_s` lines to OUT.

Run by tests/bench/torch_peer.sh (make bench-torch) from a virtual environment with torch and
transformers; the shapes are bench_step.c's: GPT-2 124M (V 50257, L 12, C 768, 12 heads, learned
positions, tied head) and LLAMA_124M (V 50257, L 12, C 768, 12 heads, 4 key/value heads, SwiGLU 2048,
RMSNorm, RoPE, tied head).
"""
import statistics
import sys
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

B, T = 4, 64


def models():
    gpt2 = GPT2Config(vocab_size=50257, n_positions=64, n_embd=768, n_layer=12, n_head=12,
                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    llama = LlamaConfig(vocab_size=50257, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                        num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=64,
                        tie_word_embeddings=True, attention_dropout=0.0)
    yield "gpt2-124M", lambda: GPT2LMHeadModel(gpt2)
    yield "llama-124M", lambda: LlamaForCausalLM(llama)


def step(model, opt, tok):
    opt.zero_grad(set_to_none=True)
    logits = model(input_ids=tok).logits[:, :-1]
    logp = torch.log_softmax(logits, dim=-1).gather(-1, tok[:, 1:, None]).squeeze(-1)
    (-logp.mean()).backward()
    opt.step()


def main():
    out, threads = sys.argv[1], int(sys.argv[2])
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    lines = []
    for name, make in models():
        model = make().float().train()
        model.config._attn_implementation = "sdpa"
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0,
                                foreach=True)
        tok = torch.randint(0, 50257, (B, T))
        for _ in range(2):
            step(model, opt, tok)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            step(model, opt, tok)
            times.append(time.perf_counter() - t0)
        s = statistics.median(times)
        print("torch %-12s t%d: %.3f s a step, %.1f tokens/s (median of %d)" % (name, threads, s, B * T / s, reps))
        lines.append("torch.%s.t%d.tokens_per_s: %.6g" % (name, threads, B * T / s))
        lines.append("torch.%s.t%d.step_s: %.6g" % (name, threads, s))
    with open(out, "a") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
