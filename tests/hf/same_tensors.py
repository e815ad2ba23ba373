#!/usr/bin/env python3
"""tests/hf/same_tensors.py A B: exit 0 when two safetensors files (or model
directories with one model.safetensors) hold the same tensors: names, dtypes,
shapes and data bytes, in any order. Standard library only."""
import json
import os
import struct
import sys


def tensors(path):
    if os.path.isdir(path):
        path = os.path.join(path, "model.safetensors")
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    head = json.loads(raw[8:8 + n])
    head.pop("__metadata__", None)
    data = raw[8 + n:]
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in head.items()}


a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
diff = sorted(set(a) ^ set(b)) + sorted(k for k in set(a) & set(b) if a[k] != b[k])
for k in diff[:10]:
    print("differs: %s (%s / %s)" % (k, a.get(k, ("absent",))[:2], b.get(k, ("absent",))[:2]))
print("%d tensors, %d differ" % (len(a), len(diff)))
sys.exit(1 if diff else 0)
