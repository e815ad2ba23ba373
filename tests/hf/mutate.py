#!/usr/bin/env python3
"""tests/hf/mutate.py KIND SRC_DIR OUT_DIR — a damaged copy of a one-file
Hugging Face model directory, for the refusal tests of tests/test_hf.sh.
Standard library only. KIND: drop (a tensor missing), extra (a tensor the
model does not have), shape (a tensor's shape wrong, its bytes consistent),
int (a tensor stored as I32), overlap (two tensors' data overlapping),
truncate (the file cut short), hugeheader (a header length past the file),
notjson (the header is not JSON), arch (config: MistralForCausalLM), act
(config: another activation), noconfig (config.json missing); for the Llama
family's directories also v4rope (config.json rewritten in the transformers
4 layout: rope_theta and rope_scaling instead of rope_parameters; the same
model), sliding (use_sliding_window true), moe (num_experts 4), yarn
(rope_type yarn). The damaged tensor is layer 1's MLP input weight of GPT-2
(c_fc) or layer 1's k_proj of the Llama family."""
import json
import os
import shutil
import struct
import sys

kind, src, out = sys.argv[1:4]
shutil.copytree(src, out)
st = os.path.join(out, "model.safetensors")
cfg = os.path.join(out, "config.json")
raw = open(st, "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
head = json.loads(raw[8:8 + n])
meta = head.pop("__metadata__", None)
data = raw[8 + n:]
blobs = {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in head.items()}


def pack(head, blobs):
    at, body, h = 0, b"", {"__metadata__": meta} if meta else {}
    for k, v in head.items():
        h[k] = dict(v, data_offsets=[at, at + len(blobs[k])])
        body += blobs[k]
        at += len(blobs[k])
    js = json.dumps(h).encode()
    js += b" " * (-len(js) % 8)
    return struct.pack("<Q", len(js)) + js + body


gpt2 = "transformer.h.1.mlp.c_fc.weight" in head
name = "transformer.h.1.mlp.c_fc.weight" if gpt2 else "model.layers.1.self_attn.k_proj.weight"
extra = "transformer.h.0.attn.rotary.inv_freq" if gpt2 else "model.layers.0.mlp.gate_proj.bias"
if kind == "drop":
    del head[name]
elif kind == "extra":
    head[extra] = {"dtype": "F32", "shape": [4]}
    blobs[extra] = b"\0" * 16
elif kind == "shape":
    r, c = head[name]["shape"]
    head[name]["shape"] = [c, r]
elif kind == "int":
    head[name]["dtype"] = "I32"
if kind in ("drop", "extra", "shape", "int"):
    raw = pack(head, blobs)
elif kind == "overlap":
    raw = pack(head, blobs)
    (n,) = struct.unpack("<Q", raw[:8])
    h = json.loads(raw[8:8 + n])
    h[name]["data_offsets"] = [v - 4 for v in h[name]["data_offsets"]]
    js = json.dumps(h).encode()
    js += b" " * (-len(js) % 8)
    raw = struct.pack("<Q", len(js)) + js + raw[8 + n:]
elif kind == "truncate":
    raw = raw[: len(raw) - 100]
elif kind == "hugeheader":
    raw = struct.pack("<Q", 1 << 40) + raw[8:]
elif kind == "notjson":
    raw = raw[:8] + b"[" + raw[9:]
open(st, "wb").write(raw)
c = json.load(open(cfg))
if kind == "arch":
    c["architectures"] = ["MistralForCausalLM"]
elif kind == "act":
    c["activation_function" if gpt2 else "hidden_act"] = "relu"
elif kind == "v4rope":
    rp = c.pop("rope_parameters")
    c["rope_theta"] = rp.pop("rope_theta")
    c["rope_scaling"] = None if rp["rope_type"] == "default" else rp
elif kind == "sliding":
    c["use_sliding_window"] = True
elif kind == "moe":
    c["num_experts"] = 4
elif kind == "yarn":
    c["rope_parameters"]["rope_type"] = "yarn"
if kind == "noconfig":
    os.remove(cfg)
else:
    json.dump(c, open(cfg, "w"))
