"""Differential tests: `Index.match(q).ids` equals what the brute-force oracle (tests/oracle.py) computes.

Random small corpora over a tiny vocabulary (so random queries hit), random BQL trees printed to
text, random raw BQL strings in the syntax the printer never produces (juxtaposition, tag runs,
`-x`, aliases, infix NEAR, lower-case operators, group tags, date comparisons), and hand-written
examples with explicit expected ids.

The generators take a source of choices `r` with `randint(a, b)` and `choice(seq)`: a seeded
`random.Random` for the bulk fuzz (fast), or Hypothesis draws (`_Draws`) for the property tests
(slower, but they shrink). A fuzz failure is shrunk by hand (`_shrink`) before it is reported.
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sieve.corpus.documents import document_from_record
from sieve.engine.analysis.analyzers import analyze
from sieve.engine.query.bql import And, DateRange, Near, Not, Or, Phrase, Prefix, Term, parse
from sieve.engine.analysis.fields import ALL_FIELDS, FIELD_ALIASES, Field
from sieve.errors import BQLSyntaxError
from sieve.index.index import build_index, parse_query  # parse_query: `parse`, memoised as Index.match does


import oracle  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _any_field_rows() -> Iterator[None]:
    """Every segment here gets any-field rows (sieve.engine.segment.writer), however small: the oracle checks
    the leaves that read them too."""

    with pytest.MonkeyPatch.context() as m:
        m.setattr("sieve.engine.segment.rows.ANY_MIN_DOCS", 0)
        yield


HYPOTHESIS = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
QUERIES_PER_CORPUS = 30
FUZZ_CHUNKS = 4
FUZZ_CORPORA_PER_CHUNK = 40  # 160 seeded corpora per fuzz test, 30 queries each

# --------------------------------------------------------------------------------------------
# Vocabulary

DOC_WORDS = [
    "alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta",
    "Alpha", "BETA", "Zürich", "zurich", "O_RDONLY", "o", "rdonly", "Straße", "strasse", "intro",
]
SEPARATORS = [" ", ", ", ". ", "-", "\n", " / ", "_", "  "]  # each splits terms
QUERY_WORDS = [
    "alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "intro",
    "ALPHA", "Zürich", "zurich", "ZURICH", "zürich", "O_RDONLY", "o_rdonly", "O-RDONLY", "o", "rdonly",
    "Straße", "strasse", "STRASSE", "omega", "born",
]
SINGLE_WORDS = [w for w in QUERY_WORDS if len(analyze(w)) == 1]
STEMS = [
    "a", "al", "alp", "b", "be", "g", "ga", "d", "de", "e", "ep", "et", "z", "ze", "zu", "Zü", "ZU",
    "th", "t", "o", "r", "rd", "s", "st", "Stra", "ß", "i", "in", "om",
]
NEAR_DISTANCES = [1, 2, 3, 4] * 3 + [6, 20]  # the long ones would see a small position gap between units
INFOBOX_KEYS = ["born", "alpha", "place"]  # "alpha" as a key: keys are not searchable
TAG_NAMES = sorted(FIELD_ALIASES)  # title ti section sec heading body text ab author au infobox ib tiab all
FIELD_SETS = [None, frozenset({Field.TITLE}), frozenset({Field.SECTION}), frozenset({Field.BODY}),
              frozenset({Field.AUTHOR}), frozenset({Field.INFOBOX}), ALL_FIELDS]


class _Draws:
    """`random.Random`'s randint/choice, answered by Hypothesis draws (so examples shrink)."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        self.draw = draw

    def randint(self, a: int, b: int) -> int:
        return self.draw(st.integers(a, b))

    def choice(self, seq: Sequence[Any]) -> Any:
        return self.draw(st.sampled_from(seq))


# --------------------------------------------------------------------------------------------
# Corpora


def gen_text(r: Any, lo: int, hi: int) -> str:
    n = r.randint(lo, hi)
    if n == 0:
        return ""
    ws = [r.choice(DOC_WORDS) for _ in range(n)]
    style = r.choice(["space", "space", "mixed"])
    out = [ws[0]]
    for w in ws[1:]:
        out.append(" " if style == "space" else r.choice(SEPARATORS))
        out.append(w)
    return "".join(out)


def gen_date(r: Any, y0: int = 2015, y1: int = 2025) -> str:
    y = r.randint(y0, y1)
    gran = r.randint(1, 3)
    if gran == 1:
        return f"{y:04d}"
    m = r.choice([1, 2, 5, 6, 12]) if r.randint(0, 1) else r.randint(1, 12)
    if gran == 2:
        return f"{y:04d}-{m:02d}"
    last = calendar.monthrange(y, m)[1]
    d = r.choice([1, 15, last]) if r.randint(0, 1) else r.randint(1, last)
    return f"{y:04d}-{m:02d}-{d:02d}"


def gen_record(r: Any, i: int) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": f"d{i}", "title": gen_text(r, 0, 5)}
    layout = r.choice(["sections", "sections", "sections", "text", "none"])
    if layout == "sections":
        secs = []
        for _ in range(r.randint(0, 3)):
            k = r.randint(0, 5)
            heading = [None, "", "(intro)", "(Intro)"][k] if k < 4 else gen_text(r, 1, 3)
            secs.append({"heading": heading, "text": gen_text(r, 0, 15)})
        rec["sections"] = secs
    elif layout == "text":
        rec["text"] = gen_text(r, 0, 15)
    author = r.choice(["none", "none", "str", "list"])
    if author == "str":
        rec["author"] = "; ".join(gen_text(r, 1, 3) for _ in range(r.randint(1, 3)))
    elif author == "list":
        rec["author"] = [gen_text(r, 1, 3) for _ in range(r.randint(0, 3))]
    box = r.choice(["none", "none", "dict", "str"])
    if box != "none":
        items = {r.choice(INFOBOX_KEYS): gen_text(r, 1, 4) for _ in range(r.randint(0, 2))}
        if box == "dict":
            rec["infobox"] = items
        else:  # the "k: v; k: v" string form
            rec["infobox"] = "; ".join(f"{k}: {v}" for k, v in items.items() if ";" not in v)
    when = r.choice(["none", "date", "date", "int", "stamp"])
    if when == "date":
        rec["date"] = gen_date(r)
    elif when == "int":
        rec["date"] = r.randint(2015, 2025)
    elif when == "stamp":
        day = gen_date(r)
        while len(day) != 10:
            day = gen_date(r)
        rec["date"] = day + "T12:30:00"
    return rec


def gen_corpus(r: Any) -> list[dict[str, Any]]:
    return [gen_record(r, i) for i in range(r.randint(3, 25))]


# --------------------------------------------------------------------------------------------
# Query trees


def _yyyymmdd(d: dt.date) -> int:
    return d.year * 10000 + d.month * 100 + d.day


def _shift(day: int, days: int) -> int:
    return _yyyymmdd(dt.date(day // 10000, day // 100 % 100, day % 100) + dt.timedelta(days=days))


def gen_fields(r: Any) -> Any:
    k = r.randint(0, 9)
    if k < 3:
        return None
    if k < 8:
        return FIELD_SETS[k - 2]
    return frozenset(f for f in Field if r.randint(0, 1)) or ALL_FIELDS


def gen_day(r: Any) -> int:
    # Mostly days next to those documents are stored on (first days of years and months).
    y = r.randint(2014, 2026)
    kind = r.randint(0, 3)
    if kind == 0:
        return _yyyymmdd(dt.date(y, 1, 1))
    if kind == 1:
        return _yyyymmdd(dt.date(y, 12, 31))
    if kind == 2:
        return _yyyymmdd(dt.date(y, r.randint(1, 12), 1) + dt.timedelta(days=r.randint(-1, 1)))
    return _yyyymmdd(dt.date(y, 1, 1) + dt.timedelta(days=r.randint(0, 364)))


def gen_date_range(r: Any) -> DateRange:
    lo = gen_day(r) if r.randint(0, 2) else None
    hi = gen_day(r) if r.randint(0, 2) else None
    if lo is None and hi is None:
        lo = gen_day(r)
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    if lo is not None and r.randint(0, 5) == 0:
        hi = lo  # a single day
    return DateRange(lo, hi)


def gen_leaf(r: Any) -> Any:
    k = r.randint(0, 5)
    if k <= 1:
        return Term(r.choice(QUERY_WORDS), gen_fields(r))
    if k == 2:
        return Phrase(" ".join(r.choice(QUERY_WORDS) for _ in range(r.randint(2, 3))), gen_fields(r))
    if k == 3:
        return Prefix(r.choice(STEMS), gen_fields(r))
    if k == 4:
        return Near(r.choice(SINGLE_WORDS), r.choice(SINGLE_WORDS), r.choice(NEAR_DISTANCES), gen_fields(r))
    return gen_date_range(r)


def gen_tree(r: Any, depth: int = 3) -> Any:
    if depth == 0 or r.randint(0, 2) == 0:
        return gen_leaf(r)
    k = r.randint(0, 2)
    if k == 0:
        return Not(gen_tree(r, depth - 1))
    kids = tuple(gen_tree(r, depth - 1) for _ in range(r.randint(2, 3)))
    return And(kids) if k == 1 else Or(kids)


def flatten(node: Any) -> Any:
    """The tree the parser builds for `str(node)`: nested And in And and Or in Or are flattened."""
    if isinstance(node, Not):
        return Not(flatten(node.child))
    if isinstance(node, (And, Or)):
        kids: list[Any] = []
        for c in map(flatten, node.children):
            kids.extend(c.children if type(c) is type(node) else (c,))
        return type(node)(tuple(kids))
    return node


def printed_query(node: Any) -> str:
    """`str(node)`, after checking it parses back to the (flattened) tree and prints stably."""
    text = str(node)
    parsed = parse_query(text)
    assert parsed == flatten(node), f"{text!r} parsed as {parsed!r}, expected {flatten(node)!r}"
    assert str(parsed) == text
    return text


# --------------------------------------------------------------------------------------------
# Raw BQL strings, each generated with the tree it must parse to (from the syntax rules, not the parser)


def gen_tag(r: Any) -> tuple[str, frozenset[Field]]:
    names = [r.choice(TAG_NAMES) for _ in range(r.randint(1, 2))]
    shown = [r.choice([n, n.upper(), n.capitalize()]) for n in names]
    fields: frozenset[Field] = frozenset().union(*(FIELD_ALIASES[n] for n in names))
    return "[" + r.choice([",", ", "]).join(shown) + "]", fields


def gen_raw_date(r: Any) -> tuple[str, DateRange]:
    a, b = gen_date(r, 2014, 2026), gen_date(r, 2014, 2026)
    fa, la, fb, lb = oracle.first_day_of(a), oracle.last_day_of(a), oracle.first_day_of(b), oracle.last_day_of(b)
    if fa > lb:
        a, b, fa, la, fb, lb = b, a, fb, lb, fa, la
    kw = r.choice(["date", "DATE", "Date"])
    form = r.randint(0, 9)
    if form == 0:
        return f"{kw}[{a}]", DateRange(fa, la)
    if form == 1:
        return f"{a}[{kw}]", DateRange(fa, la)
    if form == 2:
        return f"{a}..{b}[{kw}]", DateRange(fa, lb)
    if form == 3:
        return f"{kw}[{a}..{b}]", DateRange(fa, lb)
    if form == 4:
        return f"{kw}[{a}..]", DateRange(fa, None)
    if form == 5:
        return f"{kw}[..{b}]", DateRange(None, lb)
    if form == 6:
        return f"{kw}[>={a}]", DateRange(fa, None)
    if form == 7:
        return f"{kw}[>{a}]", DateRange(_shift(la, 1), None)
    if form == 8:
        return f"{kw} [ <= {b} ]", DateRange(None, lb)
    return f"{kw}[<{b}]", DateRange(None, _shift(fb, -1))


@dataclass
class Elem:
    """One operand of an AND level: its text, its tree, and its role in tag runs."""

    text: str
    node: Any
    kind: str  # "bare" (an untagged word or prefix), "tagged" (word[tag] / stem*[tag]), "other"
    fields: Any = None  # the tag of a "tagged" element


def scope(node: Any, fields: frozenset[Field]) -> Any:
    """A group tag: given to every text leaf without a scope of its own (inner tags win)."""
    if isinstance(node, (Term, Prefix, Phrase, Near)):
        return node if node.fields is not None else replace(node, fields=fields)
    if isinstance(node, DateRange):
        return node
    if isinstance(node, Not):
        return Not(scope(node.child, fields))
    return type(node)(tuple(scope(c, fields) for c in node.children))


def gen_raw_elem(r: Any, depth: int) -> Elem:
    what = r.choice(["word", "word", "prefix", "tagged", "tagged", "phrase", "near", "date", "neg"] + ["group"] * 2 * (depth > 0))
    if what == "word":
        w = r.choice(QUERY_WORDS)
        return Elem(w, Term(w), "bare")
    if what == "prefix":
        s = r.choice(STEMS)
        return Elem(s + "*", Prefix(s), "bare")
    if what == "tagged":
        tag, f = gen_tag(r)
        if r.randint(0, 1):
            w = r.choice(QUERY_WORDS)
            return Elem(w + tag, Term(w, f), "tagged", f)
        s = r.choice(STEMS)
        return Elem(s + "*" + tag, Prefix(s, f), "tagged", f)
    if what == "phrase":
        ws = " ".join(r.choice(QUERY_WORDS) for _ in range(r.randint(1, 3)))
        if r.randint(0, 1):
            tag, f = gen_tag(r)
            return Elem(f'"{ws}"{tag}', Phrase(ws, f), "other")
        return Elem(f'"{ws}"', Phrase(ws), "other")
    if what == "near":
        a, b, n = r.choice(SINGLE_WORDS), r.choice(SINGLE_WORDS), r.choice(NEAR_DISTANCES)
        kw = r.choice(["NEAR", "near", "Near"])
        text = r.choice([f"{kw}/{n}({a}, {b})", f"{kw}/{n}({a},{b})", f"{kw}/{n}( {a} , {b} )", f"{a} {kw}/{n} {b}"])
        if r.randint(0, 1):
            tag, f = gen_tag(r)
            return Elem(text + tag, Near(a, b, n, f), "other")
        return Elem(text, Near(a, b, n), "other")
    if what == "date":
        text, node = gen_raw_date(r)
        return Elem(text, node, "other")
    if what == "neg":
        child = gen_raw_elem(r, max(depth - 1, 0))
        op = r.choice(["-", "NOT ", "not ", "Not "])
        if op == "-" and child.text.startswith("-"):
            op = "NOT "  # `--a` is not BQL
        return Elem(op + child.text, Not(child.node), "other")
    text, node = gen_raw_or(r, depth - 1)
    if r.randint(0, 1):
        tag, f = gen_tag(r)
        return Elem("(" + text + ")" + tag, scope(node, f), "other")
    return Elem("(" + text + ")", node, "other")


def gen_raw_and(r: Any, depth: int) -> tuple[str, Any]:
    elems = [gen_raw_elem(r, depth) for _ in range(r.randint(1, 4))]
    seps = [r.choice([" ", " ", " AND ", " and ", "  "]) for _ in elems[1:]]
    # Tag runs: `a b c[title]` scopes the untagged bare words juxtaposed right before the tagged
    # word; an explicit AND ends a run, and a word a tag has scoped is no longer open.
    nodes = [e.node for e in elems]
    open_ = [e.kind == "bare" for e in elems]
    for i, e in enumerate(elems):
        if i and seps[i - 1].strip().upper() == "AND":
            open_[:i] = [False] * i
            continue
        if e.kind == "tagged":
            j = i - 1
            while j >= 0 and open_[j]:
                nodes[j] = replace(nodes[j], fields=e.fields)
                open_[j] = False
                j -= 1
    text = elems[0].text + "".join(s + e.text for s, e in zip(seps, elems[1:]))
    return text, (nodes[0] if len(nodes) == 1 else And(tuple(nodes)))


def gen_raw_or(r: Any, depth: int = 2) -> tuple[str, Any]:
    parts = [gen_raw_and(r, depth) for _ in range(r.randint(1, 3))]
    seps = [r.choice([" OR ", " or ", " Or "]) for _ in parts[1:]]
    text = parts[0][0] + "".join(s + p[0] for s, p in zip(seps, parts[1:]))
    nodes = [p[1] for p in parts]
    return text, (nodes[0] if len(nodes) == 1 else Or(tuple(nodes)))


def raw_query(r: Any) -> str:
    """A raw BQL string, after checking it parses to the tree the syntax rules give."""
    text, expected = gen_raw_or(r)
    parsed = parse_query(text)
    assert flatten(parsed) == flatten(expected), f"{text!r} parsed as {parsed}, expected {flatten(expected)}"
    return text


# --------------------------------------------------------------------------------------------
# Running queries against both


@dataclass
class Corpus:
    records: list[dict[str, Any]]
    docs: list[oracle.OracleDoc]
    index: Any


def with_corpus(recs: list[dict[str, Any]], fn: Callable[[Corpus], Any]) -> Any:
    docs = oracle.prepare(document_from_record(rec) for rec in recs)
    with tempfile.TemporaryDirectory() as tmp:
        ix = build_index(recs, Path(tmp) / "ix")
        return fn(Corpus(recs, docs, ix))


def disagreement(c: Corpus, text: str) -> str | None:
    """None if engine and oracle agree on `text`, else a description."""
    tree = parse_query(text)
    want = oracle.evaluate(tree, c.docs)
    got = c.index.match(text)
    assert got.query == str(tree)
    if got.ids == want and got.count == len(want):
        return None
    return f"query {text!r}\n  tree   {tree!r}\n  oracle {want}\n  engine {got.ids} (count {got.count})"


def check_queries(c: Corpus, texts: list[str]) -> None:
    bad = [m for m in (disagreement(c, t) for t in texts) if m]
    assert not bad, f"engine and oracle disagree on {len(bad)} of {len(texts)} queries\n" + "\n".join(bad) + f"\ncorpus: {c.records!r}"


@given(st.composite(lambda draw: gen_corpus(_Draws(draw)))(),
       st.lists(st.composite(lambda draw: gen_tree(_Draws(draw)))(), min_size=QUERIES_PER_CORPUS, max_size=QUERIES_PER_CORPUS))
@pytest.mark.slow
@HYPOTHESIS
def test_random_trees_match_oracle(recs: list[dict[str, Any]], trees: list[Any]) -> None:
    texts = [printed_query(t) for t in trees]
    with_corpus(recs, lambda c: check_queries(c, texts))


@given(st.composite(lambda draw: gen_corpus(_Draws(draw)))(),
       st.lists(st.composite(lambda draw: raw_query(_Draws(draw)))(), min_size=QUERIES_PER_CORPUS, max_size=QUERIES_PER_CORPUS))
@pytest.mark.slow
@HYPOTHESIS
def test_raw_syntax_matches_oracle(recs: list[dict[str, Any]], texts: list[str]) -> None:
    with_corpus(recs, lambda c: check_queries(c, texts))


@given(st.composite(lambda draw: gen_corpus(_Draws(draw)))(), st.sampled_from([("author", "infobox"), ("author",), ("infobox",)]),
       st.lists(st.composite(lambda draw: gen_tree(_Draws(draw)))(), min_size=QUERIES_PER_CORPUS, max_size=QUERIES_PER_CORPUS))
@HYPOTHESIS
def test_corpora_without_some_fields_match_oracle(recs: list[dict[str, Any]], absent: tuple[str, ...], trees: list[Any]) -> None:
    # A scope that names every field the segment has filters nothing (`SegmentReader.fields_present`);
    # one that leaves out a field that is there still filters.
    recs = [{k: v for k, v in rec.items() if k not in absent} for rec in recs]
    texts = [printed_query(t) for t in trees] + [f"{w}[title,section,body]" for w in SINGLE_WORDS[:6]] + [f"{w[:2]}*[title,body]" for w in SINGLE_WORDS[:3]] + [f"\"{a} {b}\"[title,section,body]" for a, b in zip(SINGLE_WORDS[:4], SINGLE_WORDS[1:5])]
    with_corpus(recs, lambda c: check_queries(c, texts))


# --------------------------------------------------------------------------------------------
# Seeded bulk fuzz (same generators, plain `random`), with failures shrunk before they are reported


def _still_fails(recs: list[dict[str, Any]], text: str) -> bool:
    if not recs:
        return False
    return with_corpus(recs, lambda c: disagreement(c, text) is not None)


def _smaller_trees(node: Any) -> list[Any]:
    out: list[Any] = []
    if isinstance(node, Not):
        out.append(node.child)
        out += [Not(s) for s in _smaller_trees(node.child)]
    elif isinstance(node, (And, Or)):
        out += list(node.children)
        if len(node.children) > 2:
            out += [type(node)(node.children[:i] + node.children[i + 1 :]) for i in range(len(node.children))]
        for i, c in enumerate(node.children):
            out += [type(node)(node.children[:i] + (s,) + node.children[i + 1 :]) for s in _smaller_trees(c)]
    elif isinstance(node, (Term, Prefix, Phrase, Near)) and node.fields is not None:
        out.append(replace(node, fields=None))
    return out


def _smaller_records(rec: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key in ("author", "infobox", "date", "sections", "text"):
        if key in rec:
            out.append({k: v for k, v in rec.items() if k != key})
    if rec.get("title"):
        out.append({**rec, "title": ""})
    for i in range(len(rec.get("sections") or [])):
        out.append({**rec, "sections": rec["sections"][:i] + rec["sections"][i + 1 :]})
    return out


def _shrink(recs: list[dict[str, Any]], text: str) -> tuple[list[dict[str, Any]], str]:
    """A smaller corpus and query on which engine and oracle still disagree."""
    changed = True
    while changed:
        changed = False
        for i in range(len(recs) - 1, -1, -1):
            if i < len(recs) and _still_fails(recs[:i] + recs[i + 1 :], text):
                recs, changed = recs[:i] + recs[i + 1 :], True
        for smaller in _smaller_trees(parse(text)):
            try:
                t = str(smaller)
                parse(t)
            except BQLSyntaxError:
                continue
            if _still_fails(recs, t):
                text, changed = t, True
                break
        for i in range(len(recs)):
            for rec in _smaller_records(recs[i]):
                trial = recs[:i] + [rec] + recs[i + 1 :]
                if _still_fails(trial, text):
                    recs, changed = trial, True
                    break
    return recs, text


def _fuzz(chunk: int, make_query: Callable[[random.Random], str], salt: str) -> None:
    for k in range(FUZZ_CORPORA_PER_CHUNK):
        seed = f"{salt}-{chunk}-{k}"
        r = random.Random(seed)
        recs = gen_corpus(r)
        texts = [make_query(r) for _ in range(QUERIES_PER_CORPUS)]
        bad = with_corpus(recs, lambda c, texts=texts: [t for t in texts if disagreement(c, t)])
        if bad:
            small_recs, small_text = _shrink(recs, bad[0])
            detail = with_corpus(small_recs, lambda c, text=small_text: disagreement(c, text))
            pytest.fail(
                f"seed {seed!r}: engine and oracle disagree on {len(bad)} of {len(texts)} queries, first {bad[0]!r}\n"
                f"shrunk to:\n{detail}\ncorpus: {small_recs!r}"
            )


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(FUZZ_CHUNKS))
def test_fuzz_trees_match_oracle(chunk: int) -> None:
    _fuzz(chunk, lambda r: printed_query(gen_tree(r)), "tree")


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(FUZZ_CHUNKS))
def test_fuzz_raw_syntax_matches_oracle(chunk: int) -> None:
    _fuzz(chunk, raw_query, "raw")


# --------------------------------------------------------------------------------------------
# Hand-written examples with explicit expected ids

FIXED = [
    # phrases stop at unit boundaries: title | intro text | heading | text
    {"id": "p1", "title": "Alpha beta", "sections": [{"heading": "(intro)", "text": "gamma delta"}, {"heading": "Epsilon", "text": "zeta eta"}]},
    {"id": "p2", "title": "", "sections": [{"heading": "Delta zeta", "text": "epsilon zeta"}]},
    # NEAR distances: alpha at 0, beta at 3
    {"id": "n1", "title": "", "text": "alpha one two beta"},
    {"id": "n2", "title": "", "text": "beta alpha"},
    {"id": "n3", "title": "", "text": "alpha one two three four alpha"},
    # dates, stored as their first day
    {"id": "t1", "title": "dated", "date": "2023-06"},
    {"id": "t2", "title": "dated", "date": "2023"},
    {"id": "t3", "title": "dated", "date": "2017-12-31"},
    {"id": "t4", "title": "dated", "date": "2023-12-31"},
    {"id": "t5", "title": "undated"},
    {"id": "t6", "title": "dated", "date": "2024-01-01"},
    {"id": "t7", "title": "dated", "date": "2022-12-31"},
    # folding and splitting
    {"id": "f1", "title": "Zürich", "text": "O_RDONLY"},
    {"id": "f2", "title": "ZURICH", "text": "o rdonly"},
    {"id": "f3", "title": "Zurich Zurich", "text": "rdonly o"},
    {"id": "f4", "title": "die Straße", "text": "Hauptstraße"},
    {"id": "f5", "title": "strasse"},
    # authors, infobox
    {"id": "a1", "title": "", "author": ["Iota Kappa", "Lambda Mu"], "infobox": {"theta": "sigma tau", "born": "1900"}},
    {"id": "a2", "title": "", "author": "Kappa Lambda; Nu", "sections": [{"heading": "Intro", "text": "tau"}]},
]
ALL_IDS = [r["id"] for r in FIXED]

EXAMPLES = [
    # phrase across units
    ('"alpha beta"', ["p1"]),
    ('"beta gamma"', []),  # title | intro text
    ('"gamma delta"', ["p1"]),
    ('"delta epsilon"', []),  # intro text | next heading
    ('"delta zeta"', ["p2"]),  # p1: text, heading, text — only p2's heading has it
    ('"delta zeta"[body]', []),
    ('"delta zeta"[section]', ["p2"]),
    ('"epsilon zeta"', ["p2"]),  # p1: heading "Epsilon" | text "zeta eta": no; p2 text: yes
    ('"epsilon zeta"[body]', ["p2"]),
    ('"epsilon zeta"[heading]', []),
    ('"zeta epsilon"', []),
    # NEAR boundary
    ("NEAR/3(alpha, beta)", ["p1", "n1", "n2"]),
    ("NEAR/2(alpha, beta)", ["p1", "n2"]),
    ("NEAR/1(alpha, beta)", ["p1", "n2"]),
    ("NEAR/1(alpha, beta)[body]", ["n2"]),
    ("beta NEAR/3 alpha", ["p1", "n1", "n2"]),
    ("NEAR/3(alpha, beta)[text]", ["n1", "n2"]),
    ("NEAR/4(alpha, alpha)", []),
    ("NEAR/5(alpha, alpha)", ["n3"]),
    ("NEAR/2(alpha, two)", ["n1", "n3"]),
    ("NEAR/2(alpha, three)", ["n3"]),  # the second alpha, 2 after three
    ("NEAR/1(alpha, three)", []),
    ("NEAR/50(delta, zeta)", ["p2"]),  # p1: delta ends the intro text, zeta starts the next text
    ("NEAR/50(delta, epsilon)", []),
    ("NEAR/50(lambda, iota)[author]", []),  # a1: "Iota Kappa" | "Lambda Mu"
    ("NEAR/1(alpha, two)", []),
    # dates
    ("date[2023]", ["t1", "t2", "t4"]),
    ("2023[date]", ["t1", "t2", "t4"]),
    ("date[2023-06]", ["t1"]),
    ("date[2023-06-01]", ["t1"]),
    ("date[2023-06-02..]", ["t4", "t6"]),
    ("date[<2023]", ["t3", "t7"]),
    ("date[<=2017]", ["t3"]),
    ("date[<2017-12-31]", []),
    ("date[>2023]", ["t6"]),
    ("date[>=2023-12]", ["t4", "t6"]),
    ("2022-12-31..2023-01-01[date]", ["t2", "t7"]),
    ("NOT date[2023]", [i for i in ALL_IDS if i not in ("t1", "t2", "t4")]),
    ("dated NOT date[2023]", ["t3", "t6", "t7"]),
    ("NOT date[..9999]", [i for i in ALL_IDS if i not in ("t1", "t2", "t3", "t4", "t6", "t7")]),
    # folding and splitting
    ("zurich", ["f1", "f2", "f3"]),
    ("Zürich[title]", ["f1", "f2", "f3"]),
    ("ZÜRICH[body]", []),
    ("O_RDONLY", ["f1", "f2"]),
    ("o-rdonly", ["f1", "f2"]),
    ('"rdonly o"', ["f3"]),
    ("rdonly o", ["f1", "f2", "f3"]),
    ("strasse", ["f4", "f5"]),
    ("Straße", ["f4", "f5"]),
    ("STRASSE[body]", []),
    ("stra*", ["f4", "f5"]),
    ("hauptstra*", ["f4"]),
    ("ß*", []),
    # only negative
    ("NOT zurich", [i for i in ALL_IDS if i not in ("f1", "f2", "f3")]),
    ("-zurich -dated", [i for i in ALL_IDS if i not in ("f1", "f2", "f3", "t1", "t2", "t3", "t4", "t6", "t7")]),
    ("NOT (zurich OR date[2000..3000])", [i for i in ALL_IDS if i not in ("f1", "f2", "f3", "t1", "t2", "t3", "t4", "t6", "t7")]),
    # authors are separate units; infobox keys are not searched, values are
    ('"iota kappa"[author]', ["a1"]),
    ('"kappa lambda"[author]', ["a2"]),  # a1: "Iota Kappa" | "Lambda Mu"
    ('"lambda nu"[au]', []),
    ("NEAR/1(kappa, lambda)[au]", ["a2"]),
    ("NEAR/3(kappa, lambda)", ["a2"]),
    ("theta", []),
    ("born", []),
    ("tau[ib]", ["a1"]),
    ("tau", ["a1", "a2"]),
    ('"sigma tau"[infobox]', ["a1"]),
    ('"sigma tau"[body]', []),
    ("1900", ["a1"]),
    # "(intro)" headings are not indexed; other headings are
    ("intro", ["a2"]),
    ("intro[section]", ["a2"]),
    # tag runs and group tags
    ("alpha beta[title]", ["p1"]),
    ("alpha AND beta[title]", ["p1"]),  # explicit AND ends the run: alpha anywhere
    ("one beta[title]", []),
    ("one AND beta[title]", []),
    ("one AND beta", ["n1"]),
    ("(gamma OR eta)[title]", []),
    ("(gamma[body] OR eta)[tiab]", ["p1"]),
    ("(gamma OR nu[au])[body]", ["p1", "a2"]),
    ("(gamma OR nu)[body]", ["p1"]),
]


@pytest.fixture(scope="module")
def fixed_corpus():
    docs = oracle.prepare(document_from_record(r) for r in FIXED)
    with tempfile.TemporaryDirectory() as tmp:
        yield Corpus(FIXED, docs, build_index(FIXED, Path(tmp) / "ix"))


@pytest.mark.parametrize("query, expected", EXAMPLES, ids=[q for q, _ in EXAMPLES])
def test_fixed_examples(fixed_corpus: Corpus, query: str, expected: list[str]) -> None:
    tree = parse(query)
    assert oracle.evaluate(tree, fixed_corpus.docs) == expected, "the oracle disagrees with the hand-written expectation"
    got = fixed_corpus.index.match(query)
    assert got.ids == expected
    assert got.count == len(expected)


@pytest.mark.parametrize("seed", range(3))
def test_block_positions_match_oracle(seed: int) -> None:
    """Corpora large enough that every document word has many blocks of positions: phrases and
    NEAR decode only the blocks near what they look for (format 5), and must still be exact."""
    r = random.Random(f"blocks-{seed}")
    recs = [gen_record(r, i) for i in range(1000)]
    texts = [printed_query(gen_tree(r)) for _ in range(40)] + [raw_query(r) for _ in range(40)]

    def check(c: Corpus) -> None:
        assert len(c.index.segments[0].reader.pos.first) >= 40  # many blocks, not only tails
        check_queries(c, texts)

    with_corpus(recs, check)
