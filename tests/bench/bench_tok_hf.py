#!/usr/bin/env python3
"""bench_tok_hf.py — HF tokenizers' encode throughput on the committed corpus,
timed as build/bench/bench_tok times the C tokenizer: one thread
(RAYON_NUM_THREADS=1), the strings parsed first, best of 5 passes, each pass
both ways HF offers: a Python loop of encode() and one encode_batch() call.
Needs the tokenizers package (the venv of tests/text/make_reference.py);
prints a line saying so and exits 0 where it is missing.
usage: bench_tok_hf.py OUT|- DATA NAME..."""
import json
import os
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
try:
    from tokenizers import Tokenizer
except ImportError:
    print("  HF tokenizers: not installed for this python (skipped)")
    sys.exit(0)


def best(f, n=5):
    t = 1e30
    for _ in range(n):
        t0 = time.perf_counter(); f(); t = min(t, time.perf_counter() - t0)
    return t


def main():
    out, data, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    corpus = [json.loads(l) for l in open(os.path.join(data, "corpus.jsonl"), encoding="utf-8")]
    mb = sum(len(s.encode()) for s in corpus) / 1e6
    lines = []
    for name in names:
        tok = Tokenizer.from_file(os.path.join(data, name, "tokenizer.json"))
        loop = best(lambda: [tok.encode(s, add_special_tokens=False) for s in corpus])
        batch = best(lambda: tok.encode_batch(corpus, add_special_tokens=False))
        print(f"  {name:<8} HF encode loop {len(corpus) / loop:9.0f} strings/s {mb / loop:6.2f} MB/s;"
              f" encode_batch {len(corpus) / batch:9.0f} strings/s {mb / batch:6.2f} MB/s")
        lines += [f"tok.hf.{name}.loop_strings_per_s: {len(corpus) / loop:.0f}",
                  f"tok.hf.{name}.batch_strings_per_s: {len(corpus) / batch:.0f}",
                  f"tok.hf.{name}.batch_mb_per_s: {mb / batch:.3f}"]
    if out != "-":
        with open(out, "a") as f: f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
