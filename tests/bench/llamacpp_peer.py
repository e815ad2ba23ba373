#!/usr/bin/env python3
"""llamacpp_peer.py — the llama.cpp side of tests/bench/llamacpp_peer.sh (not run in CI).

  llamacpp_peer.py convert HF_DIR OUT.gguf   a GPT2LMHeadModel directory (bin/nereus-ckpt export-hf:
                                             config.json, model.safetensors, F32) as a GGUF file, F32
  llamacpp_peer.py time OUT.gguf [STEPS]     llama.cpp (llama-cpp-python) decode tokens/s at batch 1,
                                             one thread: a 16-token prompt, then STEPS (64) single-token
                                             decode calls, median of 5 runs; prints `llamacpp.tok_s: X`

Needs the packages `gguf`, `numpy` and `llama-cpp-python` (built from source by pip). The tokenizer
written into the file is a stand-in: GPT-2's 256 byte tokens, placeholders for the other ids and one
merge (the benchmark feeds token ids; nothing is tokenized).
"""
import json
import statistics
import struct
import sys
import time

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
    data = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            sys.exit(f"{path}: tensor {name} is {t['dtype']}, not F32")
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[base + a:base + b], dtype=np.float32).reshape(t["shape"])
    return out


def byte_tokens():
    """GPT-2's byte-to-unicode table in id order: ids 0..255 of its vocabulary"""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def convert(hf_dir, out):
    import gguf

    cfg = json.load(open(f"{hf_dir}/config.json"))
    if cfg.get("model_type") != "gpt2":
        sys.exit(f"{hf_dir}/config.json: model_type {cfg.get('model_type')}, not gpt2")
    t = read_safetensors(f"{hf_dir}/model.safetensors")
    p = "transformer." if "transformer.wte.weight" in t else ""
    V, C, L = cfg["vocab_size"], cfg["n_embd"], cfg["n_layer"]
    w = gguf.GGUFWriter(out, "gpt2")
    w.add_context_length(cfg["n_positions"])
    w.add_embedding_length(C)
    w.add_feed_forward_length(4 * C)
    w.add_block_count(L)
    w.add_head_count(cfg["n_head"])
    w.add_layer_norm_eps(cfg["layer_norm_epsilon"])
    w.add_file_type(0)  # all F32
    toks = byte_tokens() + [f"<|id{i}|>" for i in range(256, V - 1)] + ["<|endoftext|>"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(toks)
    w.add_token_types([1] * (V - 1) + [3])
    w.add_token_merges(["Ġ Ġ"])  # llama.cpp refuses a GPT-2 vocabulary without merges; one, never used
    w.add_bos_token_id(V - 1)
    w.add_eos_token_id(V - 1)

    def add(name, a):
        w.add_tensor(name, np.ascontiguousarray(a, dtype=np.float32))

    add("token_embd.weight", t[p + "wte.weight"])
    add("position_embd.weight", t[p + "wpe.weight"])
    for l in range(L):
        h = f"{p}h.{l}."
        # Conv1D weights are (in, out) in the file; GGUF wants (out, in) as numpy shapes
        add(f"blk.{l}.attn_norm.weight", t[h + "ln_1.weight"])
        add(f"blk.{l}.attn_norm.bias", t[h + "ln_1.bias"])
        add(f"blk.{l}.attn_qkv.weight", t[h + "attn.c_attn.weight"].T)
        add(f"blk.{l}.attn_qkv.bias", t[h + "attn.c_attn.bias"])
        add(f"blk.{l}.attn_output.weight", t[h + "attn.c_proj.weight"].T)
        add(f"blk.{l}.attn_output.bias", t[h + "attn.c_proj.bias"])
        add(f"blk.{l}.ffn_norm.weight", t[h + "ln_2.weight"])
        add(f"blk.{l}.ffn_norm.bias", t[h + "ln_2.bias"])
        add(f"blk.{l}.ffn_up.weight", t[h + "mlp.c_fc.weight"].T)
        add(f"blk.{l}.ffn_up.bias", t[h + "mlp.c_fc.bias"])
        add(f"blk.{l}.ffn_down.weight", t[h + "mlp.c_proj.weight"].T)
        add(f"blk.{l}.ffn_down.bias", t[h + "mlp.c_proj.bias"])
    add("output_norm.weight", t[p + "ln_f.weight"])
    add("output_norm.bias", t[p + "ln_f.bias"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {out}: GPT-2 V {V} C {C} L {L}, F32")


def time_decode(path, steps):
    import llama_cpp

    llm = llama_cpp.Llama(model_path=path, n_ctx=256, n_batch=64, n_threads=1, n_threads_batch=1,
                          logits_all=False, verbose=False)
    prompt = [int(x) for x in np.random.default_rng(3).integers(0, 50000, 16)]
    rates = []
    for r in range(5):
        llm.reset()
        llm.eval(prompt)
        tok = prompt[-1]
        t0 = time.perf_counter()
        for j in range(steps):
            llm.eval([tok])
            tok = (tok * 31 + 7) % 50000  # a fixed token sequence: sampling is not timed here
        rates.append(steps / (time.perf_counter() - t0))
    print(f"llama.cpp {llama_cpp.__version__}: batch 1, one thread, {steps} decode calls after a 16-token prompt, "
          f"median of 5: {statistics.median(rates):.1f} tokens/s")
    print(f"llamacpp.tok_s: {statistics.median(rates):.3f}")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "convert":
        convert(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "time":
        time_decode(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 64)
    else:
        sys.exit(__doc__)
