"""BQL inputs built from the grammar's pieces (valid and near-valid), and the property every input
must satisfy. Shared by test_parser_fuzz.py (hypothesis) and benchmarks/bench_fuzz.py (random/atheris).
"""

from __future__ import annotations

import random
from typing import Callable

from hypothesis import strategies as st

from sieve.engine.query.bql import parse
from sieve.engine.query.bql.parser import MAX_CLAUSES, MAX_DEPTH, MAX_NEGATIONS, MAX_QUERY_CHARS
from sieve.errors import BQLLimitError, BQLSyntaxError

from .synth import BAD_FIELDS, COMMON, FIELDS, TAIL

WORDS = COMMON + TAIL + [
    "near", "date", "NEAR", "Date", "x", "Ⅻ", "ﬁle", "ǅemal", "ı", "ſ", "İstanbul", "١٢٣", "a_b", "a.b.c", "c++", "C#", "foo's",
    "a-", "e--mail", "über-", "x1/2", "k8s", "🙂", "a🙂b", "ﾊﾝｶｸ", "ＡＮＤ", "ｎｏｔ", "\u0301", "a\u0301", "'", "...", "_", "*a", "a*b*",
]
OPERATORS = ["AND", "OR", "NOT", "and", "or", "not", "And", "oR", "nOt", "-", "&&", "||", "!"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", " \f", "\v", "\u00a0", "\u2003", ""]
STRAY = ["(", ")", "[", "]", '"', "*", "-", ",", "\\", "/", ":", "..", "<", ">=", "=", "\x00", "\x07", "\x1b", "\x7f", "\x85", "\ud800", "\udcff", "\ufeff", "\u200b", "\u202e"]
DATE_SPECS = [
    "2023", "2023-02", "2023-02-28", "2024-02-29", "2023-02-29", "2023-13", "2023-00", "0000", "9999", "0001", "2018..2023", "2018..",
    "..2018", "..", "...", "2023..2018", ">2023", ">=2020-06", "<2023", "<=2017", "<0001", ">9999", "=2020", "2020-1-1", "20201", "1e3",
    "٢٠٢٣", "2023 .. 2024", " 2023 ", "2023-02-30..2024", "x", "",
]


def _tag(draw_fields: list[str], spaces: str) -> str:
    return spaces + "[" + ",".join(draw_fields) + "]"


# ------------------------------------------------------------------ hypothesis strategies

sp = st.sampled_from(SPACES)
word = st.sampled_from(WORDS) | st.text(st.characters(codec="utf-8", exclude_characters='()[]" '), min_size=1, max_size=6)
field_name = st.sampled_from(FIELDS + [f.upper() for f in FIELDS] + BAD_FIELDS + ["date", " ti ", "title ,body"])
tag = st.builds(lambda fs, s: s + "[" + ",".join(fs) + "]", st.lists(field_name, min_size=0, max_size=3), st.sampled_from(["", "", " "]))
phrase = st.builds(lambda ws, q: q + " ".join(ws) + q, st.lists(word, max_size=4), st.sampled_from(['"', '"', '"', ""]))
prefix = st.builds(lambda w, s: w[: max(1, len(w) // 2)] + s, word, st.sampled_from(["*", "*", "**", "*x"]))
near_op = st.builds(lambda n, d: n + "/" + d, st.sampled_from(["NEAR", "near", "Near", "nEaR"]), st.sampled_from(["1", "3", "10", "0", "00", "999999999999999999999", "1" * 40, "", "x", "-1", "٣"]))
near = st.one_of(
    st.builds(lambda a, op, b, s: f"{a}{s}{op}{s}{b}", word, near_op, word, sp),
    st.builds(lambda op, a, b, s: f"{op}{s}({s}{a}{s},{s}{b}{s})", near_op, word, word, sp),
    st.builds(lambda op, a: f"{op}({a})", near_op, word),
    st.builds(lambda op, a, b, c: f"{op}({a}, {b}, {c})", near_op, word, word, word),
)
date = st.one_of(
    st.builds(lambda d, k, s: f"{k}{s}[{d}]", st.sampled_from(DATE_SPECS), st.sampled_from(["date", "DATE", "Date"]), st.sampled_from(["", " "])),
    st.builds(lambda d: f"{d}[date]", st.sampled_from(DATE_SPECS)),
)
atom = st.one_of(word, word, prefix, phrase, near, date, st.builds(lambda a, t: a + t, word | phrase | prefix | near, tag))
stray = st.sampled_from(STRAY)


def _join(parts: list[str], seps: list[str]) -> str:
    out = parts[0]
    for p, s in zip(parts[1:], seps):
        out += s + p
    return out


def _extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.builds(lambda a, op, b, s1, s2: f"{a}{s1 or ' '}{op}{s2 or ' '}{b}", children, st.sampled_from(OPERATORS), children, sp, sp)
    juxta = st.builds(lambda xs: " ".join(xs), st.lists(children, min_size=2, max_size=4))
    negated = st.builds(lambda op, a, s: f"{op}{s if op != '-' else ''}{a}", st.sampled_from(["NOT", "not", "-", "NOT NOT"]), children, st.sampled_from([" ", "  "]))
    group = st.builds(lambda a, o, c, t: f"{o}{a}{c}{t}", children, st.sampled_from(["(", "(", "(("]), st.sampled_from([")", ")", "))", ""]), st.sampled_from(["", "", ""]) | tag)
    return st.one_of(binary, juxta, negated, group)


expression = st.recursive(atom, _extend, max_leaves=8)
# Near-valid: a valid-looking expression with a stray piece spliced in somewhere.
spliced = st.builds(lambda q, s, at: q[: at % (len(q) + 1)] + s + q[at % (len(q) + 1) :], expression, stray, st.integers(0, 10_000))
grammar_query = st.one_of(expression, expression, spliced)
# Random text: all of Unicode, surrogates and control characters included.
any_text = st.text(st.characters(exclude_categories=()), max_size=60)
token_soup = st.lists(st.sampled_from(WORDS + OPERATORS + STRAY + SPACES + ["[title]", "[ti,ab]", "[titel]", "date[2023]", "near/3", '"a b"']), max_size=20).map("".join)
decoded_bytes = st.binary(max_size=80).map(lambda b: b.decode("utf-8", "surrogateescape"))


# ------------------------------------------------------------------ random (no hypothesis) generator


def random_query(rng: random.Random, depth: int = 0) -> str:
    """The same pieces as `grammar_query`, drawn with `random` (fast enough for 100,000s)."""
    r = rng.random()
    if depth > 3 or r < 0.45:
        k = rng.randrange(8)
        w = rng.choice(WORDS)
        if k == 0:
            return w[: max(1, len(w) // 2)] + rng.choice(["*", "*", "**"])
        if k == 1:
            return rng.choice(['"', '"', ""]) + " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4))) + '"'
        if k == 2:
            n = rng.choice(["NEAR", "near"]) + "/" + rng.choice(["1", "3", "0", "", "99999999999999999999", "7" * 40])
            return rng.choice([f"{w} {n} {rng.choice(WORDS)}", f"{n}({w}, {rng.choice(WORDS)})", f"{n}({w})"])
        if k == 3:
            spec = rng.choice(DATE_SPECS)
            return rng.choice([f"date[{spec}]", f"{spec}[date]", f"DATE [{spec}]"])
        if k == 4:
            return w + rng.choice(["", " "]) + "[" + ",".join(rng.choice(FIELDS + BAD_FIELDS) for _ in range(rng.randint(0, 3))) + "]"
        if k == 5:
            return "".join(rng.choice(STRAY + WORDS) for _ in range(rng.randint(1, 3)))
        return w
    if r < 0.65:
        return random_query(rng, depth + 1) + rng.choice(SPACES[:4]) + rng.choice(OPERATORS) + " " + random_query(rng, depth + 1)
    if r < 0.8:
        return " ".join(random_query(rng, depth + 1) for _ in range(rng.randint(2, 4)))
    if r < 0.9:
        return rng.choice(["NOT ", "not ", "-", "NOT NOT "]) + random_query(rng, depth + 1)
    return "(" + random_query(rng, depth + 1) + rng.choice([")", ")", ""]) + rng.choice(["", "", "[title]", "[ti, ab]", "[nope]"])


def random_text(rng: random.Random) -> str:
    """Random Unicode (surrogates and controls included) or random bytes decoded with surrogateescape."""
    n = rng.randint(0, 40)
    if rng.random() < 0.5:
        return "".join(chr(rng.choice([rng.randrange(0x80), rng.randrange(0x800), rng.randrange(0x110000)])) for _ in range(n))
    return bytes(rng.randrange(256) for _ in range(n)).decode("utf-8", "surrogateescape")


# ------------------------------------------------------------------ pathological inputs: (what, query, error, message)

PATHOLOGICAL = [
    ("10,000 nested parentheses", "(" * 10_000 + "a" + ")" * 10_000, BQLLimitError, "query length"),
    ("'(' * 10000", "(" * 10_000, BQLLimitError, "nesting depth"),
    ("4,999 nested parentheses", "(" * 4_999 + "a" + ")" * 4_999, BQLLimitError, "nesting depth"),
    ("33 nested parentheses", "(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1), BQLLimitError, "nesting depth"),
    ("10,000 NOTs", "NOT " * 10_000 + "a", BQLLimitError, "query length"),
    ("2,499 NOTs", "NOT " * 2_499 + "a", BQLLimitError, "negations"),
    ("101 NOTs", "NOT " * (MAX_NEGATIONS + 1) + "a", BQLLimitError, "negations"),
    ("9,999 minus signs", "-" * 9_999 + "a", BQLSyntaxError, "'-' must be followed directly by a term"),
    ("1,025 words", " ".join(["a"] * (MAX_CLAUSES + 1)), BQLLimitError, "clauses"),
    ("1,025 OR clauses", " OR ".join(["a"] * (MAX_CLAUSES + 1)), BQLLimitError, "clauses"),
    ("1 MB of words", "heatwave " * 116_509, BQLLimitError, "query length"),
    ("1 MB of '('", "(" * (1 << 20), BQLLimitError, "query length"),
    ("1 MB of Unicode", "日本" * (1 << 19), BQLLimitError, "query length"),
    ("10,001 characters", "a" * (MAX_QUERY_CHARS + 1), BQLLimitError, "query length"),
    ("unterminated 9,000-char phrase", '"' + "a " * 4_500, BQLSyntaxError, "unterminated quote"),
    ("unterminated 9,000-char tag", "a[" + "t" * 9_000, BQLSyntaxError, "unterminated '['"),
    ("9,000-char unknown field", "a[" + "t" * 9_000 + "]", BQLSyntaxError, "unknown field"),
    ("NEAR with a 5,000-digit distance", "a NEAR/" + "1" * 5_000 + " b", BQLSyntaxError, "NEAR distance of 5000 digits"),
    ("NEAR() with a 5,000-digit distance", "NEAR/" + "1" * 5_000 + "(a, b)", BQLSyntaxError, "NEAR distance of 5000 digits"),
    ("NUL", "a \x00 b", BQLSyntaxError, "control character U+0000"),
    ("escape", "a\x1b[31m", BQLSyntaxError, "control character U+001B"),
    ("DEL", "\x7f", BQLSyntaxError, "control character U+007F"),
    ("C1 control", "a\x85b", BQLSyntaxError, "control character U+0085"),
    ("lone high surrogate", "a \ud800 b", BQLSyntaxError, "control character U+D800"),
    ("lone low surrogate", "\udfff", BQLSyntaxError, "control character U+DFFF"),
    ("surrogateescape'd byte", b"caf\xe9".decode("utf-8", "surrogateescape"), BQLSyntaxError, "control character U+DCE9"),
    ("empty", "", BQLSyntaxError, "empty query"),
    ("only spaces", " \t\n" * 1000, BQLSyntaxError, "empty query"),
]


# ------------------------------------------------------------------ the property


def outcome(q: str) -> str:
    """"ok", "syntax" or "limit"; anything else (another exception, a tree that does not print back
    to itself, an error position outside the query) fails."""
    try:
        tree = parse(q)
    except BQLSyntaxError as e:
        assert isinstance(e.pos, int) and 0 <= e.pos <= len(q), (q, e.pos)
        assert isinstance(e.hint, str) and str(e).startswith(e.message + f" at {e.pos}")
        return "syntax"
    except BQLLimitError as e:
        assert e.pos is None or 0 <= e.pos <= len(q), (q, e.pos)
        assert e.value > e.maximum
        return "limit"
    canonical = str(tree)
    if len(canonical) > MAX_QUERY_CHARS:
        # Known gap (see test_canonical_form_can_outgrow_the_length_limit): explicit ANDs and
        # pushed-down tags can make the canonical form longer than the input limit.
        try:
            parse(canonical)
        except BQLLimitError as e:
            assert e.limit == "query length"
            return "ok, canonical too long"
    again = parse(canonical)
    assert again == tree, (q, canonical, again)
    assert str(again) == canonical, (q, canonical)
    return "ok"


GENERATORS: dict[str, Callable[[random.Random], str]] = {"grammar": random_query, "text": random_text}
