#!/usr/bin/env python3
"""tests/hf/make_reference.py — the Hugging Face reference files of the
import-hf / export-hf tests (tests/test_hf.sh), made with transformers itself.

Needs torch and transformers (PyPI); `make test` does not: it uses the files
this writes, which are committed under tests/hf/data/.

    python3 tests/hf/make_reference.py [OUTDIR]     (default tests/hf/data)

Writes, for a tiny GPT2LMHeadModel with random weights (seed 1234):
  gpt2-f32/          save_pretrained, fp32, one model.safetensors
  gpt2-bf16-sharded/ the same model in bfloat16, sharded (index + shards)
  gpt2-f16/          the same model in float16
  tokens.bin         llm.c token file (version 1, uint16), random ids below the vocabulary
  reference.txt      transformers' mean next-token cross-entropy on the first
                     batch of tokens.bin (rows tokens[b*T : b*T+T], targets one
                     later, as `nereus-ckpt loss --batch B --seq T` computes it),
                     for each directory, with the weights as stored (bf16 and
                     f16 read back and computed in fp32)

and, after the GPT-2 files (their random draws unchanged), tiny fp32 models of
the Llama family, each from its own seed, with weights drawn wider than
transformers' init (N(0, 0.25); norm gains 1 + N(0, 0.1)) so that the loss
depends on every tensor:
  llama-gqa/    LlamaForCausalLM, 4 query and 2 key/value heads, Llama-3 RoPE
                scaling (original context 16, so that every branch of the
                scaling meets the 16 positions), untied output head
  llama-tied/   LlamaForCausalLM, multi-head, output head tied to the embedding
  qwen2/        Qwen2ForCausalLM (q, k, v biases), GQA
  qwen3/        Qwen3ForCausalLM (per-head QK RMSNorm), GQA, head_dim 16 with
                hidden_size / num_attention_heads = 8
"""
import os
import struct
import sys

import torch
import transformers
from transformers import (GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM)

B, T = 4, 16


def loss_of(model, tokens):
    x = torch.tensor(tokens[: B * T + 1], dtype=torch.long)
    inp = torch.stack([x[b * T: b * T + T] for b in range(B)])
    tgt = torch.stack([x[b * T + 1: b * T + T + 1] for b in range(B)])
    with torch.no_grad():
        logits = model(inp).logits.double()
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1)).item()


def write_tokens(path, ids):
    """A token file as tokens_write writes one: version 1 (uint16) when every id fits, else version 2 (uint32)."""
    version = 1 if max(ids) <= 0xFFFF else 2
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", 20240520, version, len(ids), *([0] * 253)))
        f.write(struct.pack("<%d%s" % (len(ids), "H" if version == 1 else "I"), *ids))


SMALL = dict(vocab_size=96, hidden_size=32, num_hidden_layers=2, max_position_embeddings=64, intermediate_size=48)
LLAMA_FAMILY = (
    ("llama-gqa", 4321, LlamaConfig, LlamaForCausalLM,
     dict(num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-5,
          rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
                           "high_freq_factor": 4.0, "original_max_position_embeddings": 16})),
    ("llama-tied", 4322, LlamaConfig, LlamaForCausalLM,
     dict(num_attention_heads=4, num_key_value_heads=4, tie_word_embeddings=True,
          rope_parameters={"rope_type": "default", "rope_theta": 500.0})),
    ("qwen2", 4323, Qwen2Config, Qwen2ForCausalLM,
     dict(num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)),
    ("qwen3", 4324, Qwen3Config, Qwen3ForCausalLM,
     dict(num_attention_heads=4, num_key_value_heads=2, head_dim=16, tie_word_embeddings=False)),
)


def llama_family(out, ids, lines):
    for name, seed, Cfg, Model, kw in LLAMA_FAMILY:
        torch.manual_seed(seed)
        model = Model(Cfg(**SMALL, **kw)).float().eval()
        with torch.no_grad():
            for pname, p in model.named_parameters():
                if pname.endswith("norm.weight"):
                    p.copy_(1.0 + 0.1 * torch.randn_like(p))
                else:
                    p.normal_(0.0, 0.25)
        model.save_pretrained(os.path.join(out, name))
        lines.append("loss.%s: %.9f" % (name, loss_of(model, ids)))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "data")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1234)
    cfg = GPT2Config(vocab_size=96, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                     bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg).float().eval()
    g = torch.Generator().manual_seed(99)
    ids = torch.randint(0, cfg.vocab_size, (B * T + 40,), generator=g).tolist()
    write_tokens(os.path.join(out, "tokens.bin"), ids)
    lines = ["# transformers %s, torch %s: mean cross-entropy, B=%d T=%d" % (transformers.__version__,
                                                                               torch.__version__, B, T)]
    model.save_pretrained(os.path.join(out, "gpt2-f32"))
    lines.append("loss.gpt2-f32: %.9f" % loss_of(model, ids))
    for name, dtype, shard in (("gpt2-bf16-sharded", torch.bfloat16, "40KB"), ("gpt2-f16", torch.float16, None)):
        d = os.path.join(out, name)
        low = GPT2LMHeadModel(cfg)
        low.load_state_dict(model.state_dict())
        low = low.to(dtype)
        kw = {"max_shard_size": shard} if shard else {}
        low.save_pretrained(d, **kw)
        back = GPT2LMHeadModel.from_pretrained(d, dtype=dtype).float().eval()
        lines.append("loss.%s: %.9f" % (name, loss_of(back, ids)))
    llama_family(out, ids, lines)
    with open(os.path.join(out, "reference.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
