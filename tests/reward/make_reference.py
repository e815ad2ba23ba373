#!/usr/bin/env python3
"""tests/reward/make_reference.py — the reference scores that bin/nereus-score
must reproduce (tests/suites/reward.sh), made by code nobody here wrote:

  rg_TASK.jsonl / rg_TASK.want   for basic_arithmetic, chain_sum, leg_counting and
      number_sorting: (entry, response) pairs, one JSON object a line
      ({"response", "answer", "metadata": {"direction"}, "kind"}), and on the same
      line of the .want file reasoning-gym's score:
      dataset.score_answer(reasoning_gym.utils.extract_answer(response), entry).
      The responses are made from each entry's answer to cover right and wrong
      answers and wrong formats ("kind" names the case), then 300 random ones
      ("random": pieces of the answer, tags, digits, quotes); number_sorting adds 400
      entries made here ("synthetic-nan") whose score is the sortedness check
      alone with NaNs in the list.
  mathverify.jsonl / mathverify.want   numeric answers: {"response": "<answer>PRED</answer>",
      "answer": GOLD, "kind"} and Hugging Face math-verify's
      verify(parse(GOLD), parse(PRED)) as 1 or 0.

How to remake them (reasoning-gym 0.1.25 and math-verify 0.9.0 from PyPI, CPython 3.11):

  python3 -m venv /work/venv-reward
  /work/venv-reward/bin/pip install reasoning-gym math-verify
  /work/venv-reward/bin/python tests/reward/make_reference.py tests/reward/data

The output is deterministic (fixed seeds). After remaking, run `tests/run.sh reward`:
where nereus-score and math-verify now differ on lines that
tests/reward/data/mathverify.disagree does not list, the test names them; each
listed line has its reason there, and docs/TEXT.md ("Rewards on text") explains
each kind of disagreement.
"""
import json
import os
import random
import sys

import reasoning_gym
from reasoning_gym.utils import extract_answer

TASKS = ["basic_arithmetic", "chain_sum", "leg_counting", "number_sorting"]
ENTRIES = 32  # entries per task; each gets every response kind below (38 kinds, 42 for number_sorting: at least 1,216 cases)


def with_commas(a):
    """'-12345' -> '-12,345' (integers only; others unchanged)"""
    try:
        return f"{int(a):,}"
    except ValueError:
        return a


def wrong_number(a, rng):
    try:
        return str(int(a) + rng.choice([-10, -1, 1, 2, 7, 100]))
    except ValueError:
        return a + "1"


def scalar_responses(a, rng):
    """(kind, response) for an answer that is one number"""
    w = wrong_number(a, rng)
    return [
        ("right", f"<answer>{a}</answer>"),
        ("right-reasoning", f"Let me add the terms step by step.\nSo the total is {a}.\n<answer>{a}</answer>"),
        ("spaces", f"<answer> {a} </answer>"),
        ("newlines", f"<answer>\n{a}\n</answer>"),
        ("two-spaces", f"<answer>  {a}  </answer>"),
        ("nbsp", f"<answer>\u00a0{a}\u3000</answer>"),
        ("no-tag", f"The answer is {a}."),
        ("bare", a),
        ("two-tags-right-last", f"<answer>{w}</answer> wait, no: <answer>{a}</answer>"),
        ("two-tags-wrong-last", f"<answer>{a}</answer> hmm, actually <answer>{w}</answer>"),
        ("nested", f"<answer><answer>{a}</answer></answer>"),
        ("open-twice", f"<answer>{w} <answer>{a}</answer>"),
        ("wrong", f"<answer>{w}</answer>"),
        ("commas", f"<answer>{with_commas(a)}</answer>"),
        ("comma-odd", f"<answer>{a[:1]},{a[1:]}</answer>"),
        ("decimal", f"<answer>{a}.0</answer>"),
        ("decimal2", f"<answer>{a}.00</answer>"),
        ("exponent", f"<answer>{a}e0</answer>"),
        ("plus", f"<answer>+{a}</answer>"),
        ("leading-zero", f"<answer>0{a}</answer>"),
        ("underscore", f"<answer>{a[:1]}_{a[1:]}</answer>"),
        ("period", f"<answer>{a}.</answer>"),
        ("words", f"<answer>The answer is {a}</answer>"),
        ("units", f"<answer>{a} legs</answer>"),
        ("equation", f"<answer>x = {a}</answer>"),
        ("empty", "<answer></answer>"),
        ("blank", "<answer> </answer>"),
        ("truncated-open", f"<answer>{a}"),
        ("truncated-close", f"<answer>{a}</ans"),
        ("truncated-value", f"<answer>{a[:max(1, len(a) // 2)]}</answer>"),
        ("case", f"<Answer>{a}</Answer>"),
        ("nan", "<answer>NaN</answer>"),
        ("snan", "<answer>sNaN</answer>"),
        ("inf", "<answer>Infinity</answer>"),
        ("repeat", f"<answer>{a}{a}</answer>"),
        ("fullwidth", f"<answer>{digits_as(a, 0xFF10)}</answer>"),
        ("arabic-indic", f"<answer>{digits_as(a, 0x660)}</answer>"),
        ("empty-response", ""),
    ]


def digits_as(text, zero):
    """text with its ASCII digits written in another script's decimal digits (zero: that script's 0)"""
    return "".join(chr(zero + ord(c) - 48) if "0" <= c <= "9" else c for c in text)


def with_nan(nums, rng, k):
    """nums with k items, at random places, replaced by 'nan': CPython's sort leaves a NaN where its
    comparisons (all false) put it, so whether the list still counts as sorted depends on the places"""
    out = nums[:]
    for i in rng.sample(range(len(out)), min(k, len(out))):
        out[i] = "nan"
    return out


def swap_one(nums, rng):
    out = nums[:]
    i = rng.randrange(len(out) - 1)
    out[i], out[i + 1] = out[i + 1], out[i]
    return out


def list_responses(entry, rng):
    """(kind, response) for number_sorting: the answer is str(list of str)"""
    nums = entry["metadata"]["sorted_numbers"]
    a = entry["answer"]
    rev = list(reversed(nums))
    shuffled = nums[:]
    rng.shuffle(shuffled)
    near = [str(float(x) + 0.5) for x in nums]
    far = nums[:-1] + [str(float(nums[-1]) + 2.5)]
    ints = "[" + ", ".join(str(float(x)) for x in nums) + "]"
    r = [
        ("right", f"<answer>{a}</answer>"),
        ("json", f"<answer>{json.dumps(nums)}</answer>"),
        ("numbers", f"<answer>{ints}</answer>"),
        ("spaces", f"<answer>  {a} \n</answer>"),
        ("reversed", f"<answer>{rev}</answer>"),
        ("shuffled", f"<answer>{shuffled}</answer>"),
        ("near", f"<answer>{near}</answer>"),
        ("far", f"<answer>{far}</answer>"),
        ("short", f"<answer>{nums[:-1]}</answer>"),
        ("long", f"<answer>{nums + [nums[-1]]}</answer>"),
        ("no-brackets", f"<answer>{', '.join(nums)}</answer>"),
        ("trailing-comma", f"<answer>[{', '.join(nums)},]</answer>"),
        ("no-tag", f"The sorted list is {a}"),
        ("two-tags", f"<answer>{rev}</answer> no: <answer>{a}</answer>"),
        ("nested", f"<answer><answer>{a}</answer></answer>"),
        ("empty", "<answer></answer>"),
        ("empty-list", "<answer>[]</answer>"),
        ("truncated", f"<answer>{a[: len(a) // 2]}"),
        ("truncated-list", f"<answer>{a[: len(a) // 2]}</answer>"),
        ("leading-zero", "<answer>[" + ", ".join("0" + x.lstrip("-") if not x.startswith("-") else x for x in nums) + "]</answer>"),
        ("point", "<answer>[" + ", ".join(str(int(float(x))) + "." for x in nums) + "]</answer>"),
        ("padded-strings", "<answer>[" + ", ".join(f"' {x} '" for x in nums) + "]</answer>"),
        ("underscore", "<answer>[" + ", ".join(f"'{x[:1]}_{x[1:]}'" if x[1:2].isdigit() else f"'{x}'" for x in nums) + "]</answer>"),
        ("bools", "<answer>[" + ", ".join(["true"] * len(nums)) + "]</answer>"),
        ("nulls", "<answer>[" + ", ".join(["null"] * len(nums)) + "]</answer>"),
        ("nested-list", f"<answer>[{nums}]</answer>"),
        ("object", '<answer>{"a": 1}</answer>'),
        ("unicode-escape", "<answer>[" + ", ".join('"' + "".join(f"\\u{ord(c):04x}" for c in x) + '"' for x in nums) + "]</answer>"),
        ("nan-first", "<answer>['nan'" + "".join(f", '{x}'" for x in nums[1:]) + "]</answer>"),
        ("nan-last", "<answer>[" + "".join(f"'{x}', " for x in nums[:-1]) + "NaN]</answer>"),
        ("nan-middle", "<answer>[" + ", ".join(("'NaN'" if i == len(nums) // 2 else f"'{x}'") for i, x in enumerate(nums)) + "]</answer>"),
        ("infinity", "<answer>[" + ", ".join(["Infinity"] + [f"'{x}'" for x in nums[1:]]) + "]</answer>"),
        ("exponent", "<answer>[" + ", ".join(f"'{float(x):e}'" for x in nums) + "]</answer>"),
        ("huge-int", "<answer>[" + ", ".join(["1" + "0" * 400] + [f"'{x}'" for x in nums[1:]]) + "]</answer>"),
        ("garbage", "<answer>[1, 2, three]</answer>"),
        ("fullwidth", f"<answer>{digits_as(a, 0xFF10)}</answer>"),
        ("devanagari-strings", "<answer>[" + ", ".join("'" + digits_as(x, 0x966) + "'" for x in nums) + "]</answer>"),
        ("nan-shuffled", f"<answer>{with_nan(shuffled, rng, 1)}</answer>"),
        ("nan-two", f"<answer>{with_nan(nums, rng, 2)}</answer>"),
        ("nan-reversed", f"<answer>{with_nan(rev, rng, 1)}</answer>"),
        ("nan-swapped", f"<answer>{with_nan(swap_one(nums, rng), rng, 1)}</answer>"),
        ("empty-response", ""),
    ]
    return r


def nan_sort_cases(rng, count):
    """number_sorting entries made here rather than by the dataset: every value in [0, 1], so each is
    within the scorer's tolerance of any other and the score is its sortedness check alone, which CPython's
    sort decides where a NaN is in the list (comparisons with it are all false); lists of 2 to 9 values
    (CPython's binary insertion) or, one in five, 64 to 100 (its merges), nearly sorted or not, with 1 to
    3 NaNs at random places"""
    rows = []
    for _ in range(count):
        n = rng.randint(2, 9) if rng.random() < 0.8 else rng.randint(64, 100)
        vals = sorted(round(rng.random(), 2) for _ in range(n))
        direction = rng.choice(["ascending", "descending"])
        if direction == "descending":
            vals.reverse()
        entry = {"answer": str([str(v) for v in vals]), "metadata": {"direction": direction}}
        user = [str(v) for v in vals]
        shape = rng.choice(["sorted", "swap", "shuffle", "reverse"])
        if shape == "swap" and n > 1:
            user = swap_one(user, rng)
        elif shape == "shuffle":
            rng.shuffle(user)
        elif shape == "reverse":
            user.reverse()
        user = with_nan(user, rng, rng.randint(1, min(3, n)))
        rows.append((entry, f"<answer>{user}</answer>"))
    return rows


PIECES = list("<>/answer[]{}\"\\,.-+0123456789eEnNaIfty_ \n\t'") + [
    "\u00a0", "\uff11", "\u0661", "<answer>", "</answer>", "NaN", "Infinity", "sNaN", "1_0", "true", "null", "\\u0031"]


def random_responses(entries, rng, count):
    """(entry, response): up to 12 pieces drawn from the entry's answer (three times as likely as any
    other piece), tag characters, digits, signs, quotes, escapes and number words; seven in ten in tags"""
    out = []
    for _ in range(count):
        e = rng.choice(entries)
        pieces = [e["answer"]] * 3 + PIECES
        r = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        out.append((e, f"<answer>{r}</answer>" if rng.random() < 0.7 else r))
    return out


def make_tasks(out):
    for task in TASKS:
        ds = reasoning_gym.create_dataset(task, seed=4242, size=ENTRIES)
        rng = random.Random(task)
        rows, want = [], []
        for entry in ds:
            if task == "number_sorting":
                cases = list_responses(entry, rng)
                meta = {"direction": entry["metadata"]["direction"]}
            else:
                cases = scalar_responses(entry["answer"], rng)
                meta = {}
            for kind, resp in cases:
                score = ds.score_answer(extract_answer(resp), entry)
                row = {"response": resp, "answer": entry["answer"], "kind": kind}
                if meta:
                    row["metadata"] = meta
                rows.append(row)
                want.append(repr(float(score)))
        for entry, resp in random_responses(list(ds), rng, 300):
            row = {"response": resp, "answer": entry["answer"], "kind": "random"}
            if task == "number_sorting":
                row["metadata"] = {"direction": entry["metadata"]["direction"]}
            rows.append(row)
            want.append(repr(float(ds.score_answer(extract_answer(resp), entry))))
        if task == "number_sorting":
            for entry, resp in nan_sort_cases(rng, 400):
                rows.append({"response": resp, "answer": entry["answer"], "kind": "synthetic-nan",
                             "metadata": entry["metadata"]})
                want.append(repr(float(ds.score_answer(extract_answer(resp), entry))))
        write(out, f"rg_{task}", rows, want)


def number_pairs(rng):
    """(kind, gold, pred) numeric cases, equal and not, in the spellings answers take"""
    out = []
    for i in range(60):
        n = rng.choice([rng.randint(0, 9), rng.randint(10, 999), rng.randint(1000, 10**7)]) * rng.choice([1, -1])
        s = str(n)
        out += [("int-same", s, s), ("int-commas", s, f"{n:,}"), ("int-decimal", s, f"{n}.0"),
                ("int-decimal2", s, f"{n}.00"), ("int-period", s, f"{n}."), ("int-spaces", s, f"  {n} "),
                ("int-wrong", s, str(n + rng.choice([1, -1, 10]))), ("int-plus", s, f"+{n}" if n >= 0 else s),
                ("gold-commas", f"{n:,}", s)]
    for i in range(40):
        p, q = rng.randint(1, 12), rng.randint(2, 12)
        v = p / q
        out += [("frac-decimal", f"{p}/{q}", repr(round(v, 6))), ("frac-same", f"{p}/{q}", f"{p}/{q}"),
                ("frac-scaled", f"{p}/{q}", f"{2 * p}/{2 * q}"), ("latex-frac", f"\\frac{{{p}}}{{{q}}}", f"{p}/{q}"),
                ("decimal-frac", repr(round(v, 4)), f"{p}/{q}"), ("frac-wrong", f"{p}/{q}", f"{p + 1}/{q}")]
    for i in range(40):
        d = round(rng.uniform(-1000, 1000), rng.randint(1, 3))
        s = repr(d)
        out += [("dec-same", s, s), ("dec-trailing-zero", s, s + "0"), ("dec-round", s, repr(round(d, 0))),
                ("dec-near", s, repr(round(d + 0.001, 3))), ("dec-neg", s, repr(-d))]
    out += [("zero", "0", "-0"), ("zero", "0", "0.0"), ("zero", "-0", "0"), ("zero", "0", "-0.0"),
            ("exponent", "1000", "1e3"), ("exponent", "100", "1e2"), ("exponent", "0.001", "1e-3"),
            ("leading-point", "0.5", ".5"), ("leading-zero", "7", "007"), ("trailing-text", "12", "12 apples"),
            ("unit", "5", "5 cm"), ("dollar", "5", "$5"), ("percent", "50", "50%"), ("text", "Paris", "Paris"),
            ("text", "Paris", "paris"), ("text", "yes", "yes"), ("text", "blue", "red"),
            ("spaced-sign", "-4", "- 4"), ("round", "1/3", "0.333"), ("round", "1/3", "0.3333333"),
            ("round", "3.14159", "3.1416"), ("odd-commas", "1000", "1,00,0"), ("big", "123456789012", "123,456,789,012")]
    return out


def make_mathverify(out):
    from math_verify import parse, verify
    rng = random.Random(7)
    rows, want = [], []
    for kind, gold, pred in number_pairs(rng):
        ok = verify(parse(gold), parse(pred))
        rows.append({"response": f"<answer>{pred}</answer>", "answer": gold, "kind": kind})
        want.append("1" if ok else "0")
    write(out, "mathverify", rows, want)


def write(out, name, rows, want):
    with open(os.path.join(out, name + ".jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(os.path.join(out, name + ".want"), "w") as f:
        f.write("\n".join(want) + "\n")
    print(f"{name}: {len(rows)} cases")


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "data")
    os.makedirs(out, exist_ok=True)
    make_tasks(out)
    make_mathverify(out)
