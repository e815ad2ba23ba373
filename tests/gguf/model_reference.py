"""tests/gguf/model_reference.py — the SmolLM2 part of make_reference.py
(its docstring says how to run it): transformers' cross-entropy and greedy
tokens (plain greedy `generate`: with eos_token_id=None and min_new_tokens=32
transformers 5.25 gave other tokens from the 11th on, which are not the
argmax of its own forward pass, so the reference is checked against that) for the SmolLM2-135M-Instruct GGUF. The prompt and the text are
tokenized by transformers' GGUF tokenizer, which is right for them: they
hold no digits (it splits SmolLM2's digits as GPT-2 does, not one by one)."""
import os
import struct

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

TEXT = ("The old lighthouse keeper climbed the narrow stairs every evening, carrying a lantern and a "
        "thermos of tea. From the top he could see the whole bay: fishing boats returning with their nets, "
        "gulls circling above the harbour, and the long shadow of the cliffs stretching over the water. "
        "He had kept the light burning through storms and calm nights alike, and he knew every rock and "
        "current by heart. When the young engineer arrived to install the automatic lamp, the keeper "
        "showed him the logbooks, the brass instruments and the small garden he tended behind the tower. "
        "The engineer listened politely, but by the end of the afternoon he had stopped checking his watch, "
        "and he asked whether he might come back the next week to hear the rest of the stories.")
PROMPT = "Write a short poem about the sea and the wind."
B, T, NEW = 4, 32, 32


def write_tokens(path, ids):
    """An llm.c token file (version 1: uint16 ids), as tokens_write writes one."""
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, len(ids), *([0] * 253)))
        f.write(struct.pack("<%dH" % len(ids), *ids))


def main(gguf_path, data):
    d, name = os.path.split(os.path.abspath(gguf_path))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.float32)
    model.eval()
    ids = tok(TEXT, add_special_tokens=False)["input_ids"][: B * T + 1]
    assert len(ids) == B * T + 1, len(ids)
    write_tokens(os.path.join(data, "smollm2_tokens.bin"), ids)
    x = torch.tensor(ids[:-1]).view(B, T)
    y = torch.tensor(ids[1:]).view(B, T)
    with torch.no_grad():
        logits = model(x).logits
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(), y.reshape(-1))
    msgs = [{"role": "user", "content": PROMPT}]
    prompt = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, return_dict=False)
    if isinstance(prompt, dict) or hasattr(prompt, "keys"):
        prompt = prompt["input_ids"]
    prompt = [int(i) for i in prompt]
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=NEW, do_sample=False)
        gen = out[0, len(prompt):].tolist()
        # all NEW tokens were generated (no end of sequence cut them short), and each is the argmax of a full
        # uncached forward over what precedes it
        assert len(gen) == NEW and model.generation_config.eos_token_id not in gen, gen
        full = model(torch.tensor([prompt + gen])).logits[0, len(prompt) - 1:-1].argmax(-1).tolist()
        assert full == gen, (full, gen)
    with open(os.path.join(data, "smollm2_prompt.txt"), "w") as f:
        f.write(" ".join(map(str, prompt)) + "\n")
    with open(os.path.join(data, "smollm2_reference.txt"), "w") as f:
        f.write("# made by tests/gguf/make_reference.py model (transformers %s, torch %s) from %s\n"
                % (__import__("transformers").__version__, torch.__version__, name))
        f.write("# prompt: %r, chat template applied, generation prompt added\n" % PROMPT)
        f.write("loss: %.6f\n" % ce.item())
        f.write("greedy: %s\n" % " ".join(map(str, gen)))
        f.write("# greedy text: %r\n" % tok.decode(gen))
    print("loss %.6f; prompt %d ids; greedy %r" % (ce.item(), len(prompt), tok.decode(gen)))
