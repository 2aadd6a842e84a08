"""Differential tests: `Index.match(q).ids` equals what the brute-force oracle (tests/oracle.py) computes.

Random small corpora over a tiny vocabulary (so random queries hit), random BQL trees printed to
text, random raw BQL strings in the syntax the printer never produces (juxtaposition, tag runs,
`-x`, aliases, infix NEAR, lower-case operators, group tags, date comparisons), and hand-written
examples with explicit expected ids.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sieve.documents import document_from_record
from sieve.engine.analysis import analyze
from sieve.engine.bql import And, DateRange, Near, Not, Or, Phrase, Prefix, Term, parse
from sieve.engine.fields import ALL_FIELDS, FIELD_ALIASES, Field
from sieve.index import build_index

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
QUERIES_PER_CORPUS = 30

# --------------------------------------------------------------------------------------------
# Vocabulary

DOC_WORDS = [
    "alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta",
    "Alpha", "BETA", "Zürich", "zurich", "O_RDONLY", "o", "rdonly", "Straße", "strasse", "intro",
]
# Separators between words in generated texts: all split terms, "-" and "_" included.
SEPARATORS = [" ", " ", " ", " ", ", ", ". ", "-", "\n", " / ", "_"]
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
INFOBOX_KEYS = ["born", "alpha", "place"]  # "alpha" as a key: keys are not searchable
HEADINGS_SPECIAL = [None, "", "(intro)", "(Intro)"]

words = lambda lo, hi: st.lists(st.sampled_from(DOC_WORDS), min_size=lo, max_size=hi)  # noqa: E731


@st.composite
def texts(draw: Any, lo: int, hi: int) -> str:
    ws = draw(words(lo, hi))
    if not ws:
        return ""
    out = [ws[0]]
    for w in ws[1:]:
        out.append(draw(st.sampled_from(SEPARATORS)))
        out.append(w)
    return "".join(out)


@st.composite
def dates(draw: Any, years: tuple[int, int] = (2015, 2025)) -> str:
    y = draw(st.integers(*years))
    gran = draw(st.integers(1, 3))
    if gran == 1:
        return f"{y:04d}"
    m = draw(st.sampled_from([1, 2, 5, 6, 12]) | st.integers(1, 12))
    if gran == 2:
        return f"{y:04d}-{m:02d}"
    last = (dt.date(y + (m == 12), m % 12 + 1, 1) - dt.timedelta(days=1)).day
    d = draw(st.sampled_from([1, 15, last]) | st.integers(1, last))
    return f"{y:04d}-{m:02d}-{d:02d}"


@st.composite
def records(draw: Any, i: int) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": f"d{i}", "title": draw(texts(0, 5))}
    layout = draw(st.sampled_from(["sections", "sections", "sections", "text", "none"]))
    if layout == "sections":
        secs = []
        for _ in range(draw(st.integers(0, 3))):
            heading = draw(st.sampled_from(HEADINGS_SPECIAL) | texts(1, 3))
            secs.append({"heading": heading, "text": draw(texts(0, 15))})
        rec["sections"] = secs
    elif layout == "text":
        rec["text"] = draw(texts(0, 15))
    author = draw(st.sampled_from(["none", "str", "list"]))
    if author == "str":
        rec["author"] = "; ".join(draw(st.lists(texts(1, 3), min_size=1, max_size=3)))
    elif author == "list":
        rec["author"] = draw(st.lists(texts(1, 3), min_size=0, max_size=3))
    box = draw(st.sampled_from(["none", "dict", "str"]))
    if box == "dict":
        rec["infobox"] = draw(st.dictionaries(st.sampled_from(INFOBOX_KEYS), texts(0, 4), max_size=2))
    elif box == "str":
        items = draw(st.dictionaries(st.sampled_from(INFOBOX_KEYS), texts(1, 3).filter(lambda t: ";" not in t), max_size=2))
        rec["infobox"] = "; ".join(f"{k}: {v}" for k, v in items.items())
    when = draw(st.sampled_from(["none", "date", "date", "int", "stamp"]))
    if when == "date":
        rec["date"] = draw(dates())
    elif when == "int":
        rec["date"] = draw(st.integers(2015, 2025))
    elif when == "stamp":
        day = draw(dates().filter(lambda s: len(s) == 10))
        rec["date"] = day + "T12:30:00"
    return rec


@st.composite
def corpora(draw: Any) -> list[dict[str, Any]]:
    n = draw(st.integers(3, 25))
    return [draw(records(i)) for i in range(n)]


# --------------------------------------------------------------------------------------------
# Random query trees

field_scopes = st.one_of(
    st.none(),
    st.none(),
    st.sampled_from([frozenset({f}) for f in Field]),
    st.frozensets(st.sampled_from(list(Field)), min_size=1),
    st.just(ALL_FIELDS),
)


def _yyyymmdd(d: dt.date) -> int:
    return d.year * 10000 + d.month * 100 + d.day


@st.composite
def query_days(draw: Any) -> int:
    # Mostly days near the boundaries documents are stored on (first days of years and months).
    y = draw(st.integers(2014, 2026))
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return _yyyymmdd(dt.date(y, 1, 1))
    if kind == 1:
        return _yyyymmdd(dt.date(y, 12, 31))
    if kind == 2:
        m = draw(st.integers(1, 12))
        return _yyyymmdd(dt.date(y, m, 1) + dt.timedelta(days=draw(st.sampled_from([-1, 0, 1]))))
    return _yyyymmdd(dt.date(y, 1, 1) + dt.timedelta(days=draw(st.integers(0, 364))))


@st.composite
def date_ranges(draw: Any) -> DateRange:
    lo = draw(st.none() | query_days())
    hi = draw(st.none() | query_days())
    if lo is None and hi is None:
        lo = draw(query_days())
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    if lo is not None and draw(st.integers(0, 5)) == 0:
        hi = lo  # a single day
    return DateRange(lo, hi)


leaf_nodes = st.one_of(
    st.builds(Term, st.sampled_from(QUERY_WORDS), field_scopes),
    st.builds(Term, st.sampled_from(QUERY_WORDS), field_scopes),
    st.builds(Phrase, st.lists(st.sampled_from(QUERY_WORDS), min_size=2, max_size=3).map(" ".join), field_scopes),
    st.builds(Prefix, st.sampled_from(STEMS), field_scopes),
    st.builds(Near, st.sampled_from(SINGLE_WORDS), st.sampled_from(SINGLE_WORDS), st.integers(1, 4), field_scopes),
    date_ranges(),
)


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    kids = st.lists(children, min_size=2, max_size=3).map(tuple)
    return st.one_of(st.builds(Not, children), st.builds(And, kids), st.builds(Or, kids))


query_trees = st.recursive(leaf_nodes, _extend, max_leaves=8)


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


# --------------------------------------------------------------------------------------------
# Running queries against both


@dataclass
class Corpus:
    records: list[dict[str, Any]]
    docs: list[oracle.OracleDoc]
    index: Any


def with_corpus(recs: list[dict[str, Any]], fn: Any) -> None:
    docs = oracle.prepare(document_from_record(r) for r in recs)
    with tempfile.TemporaryDirectory() as tmp:
        ix = build_index(recs, Path(tmp) / "ix")
        fn(Corpus(recs, docs, ix))


def check_queries(c: Corpus, texts_: list[str]) -> None:
    mismatches = []
    for text in texts_:
        tree = parse(text)
        want = oracle.evaluate(tree, c.docs)
        got = c.index.match(text)
        if got.ids != want or got.count != len(want):
            mismatches.append(f"  query {text!r} (tree {tree!r}):\n    oracle {want}\n    engine {got.ids} (count {got.count})")
        assert got.query == str(tree)
    assert not mismatches, "engine and oracle disagree\n" + "\n".join(mismatches) + f"\ncorpus: {c.records!r}"


@settings(max_examples=200, **SETTINGS)
@given(corpora(), st.lists(query_trees, min_size=QUERIES_PER_CORPUS, max_size=QUERIES_PER_CORPUS))
def test_random_trees_match_oracle(recs: list[dict[str, Any]], trees: list[Any]) -> None:
    texts_ = []
    for node in trees:
        text = str(node)
        parsed = parse(text)
        assert parsed == flatten(node), f"{text!r} parsed as {parsed!r}"
        assert str(parsed) == text
        texts_.append(text)
    with_corpus(recs, lambda c: check_queries(c, texts_))


# --------------------------------------------------------------------------------------------
# Raw BQL strings, each generated with the tree it must parse to (from the syntax rules, not the parser)

TAG_NAMES = sorted(FIELD_ALIASES)  # title ti section sec heading body text ab author au infobox ib tiab all


@st.composite
def tags(draw: Any) -> tuple[str, frozenset[Field]]:
    names = draw(st.lists(st.sampled_from(TAG_NAMES), min_size=1, max_size=2))
    shown = [draw(st.sampled_from([n, n.upper(), n.capitalize()])) for n in names]
    sep = draw(st.sampled_from([",", ", "]))
    fields: frozenset[Field] = frozenset().union(*(FIELD_ALIASES[n] for n in names))
    return "[" + sep.join(shown) + "]", fields


def _shift(day: int, days: int) -> int:
    return _yyyymmdd(dt.date(day // 10000, day // 100 % 100, day % 100) + dt.timedelta(days=days))


@st.composite
def raw_dates(draw: Any) -> tuple[str, DateRange]:
    a = draw(dates((2014, 2026)))
    b = draw(dates((2014, 2026)))
    fa, la, fb, lb = oracle.first_day_of(a), oracle.last_day_of(a), oracle.first_day_of(b), oracle.last_day_of(b)
    if fa > lb:
        a, b, fa, la, fb, lb = b, a, fb, lb, fa, la
    kw = draw(st.sampled_from(["date", "DATE", "Date"]))
    form = draw(st.integers(0, 9))
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
    kind: str  # "bare" (an untagged word or prefix), "tagged" (word[tag]), "other"
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


@st.composite
def raw_elems(draw: Any, depth: int) -> Elem:
    choices = ["word", "word", "prefix", "tagged", "tagged", "phrase", "near", "date", "neg"]
    if depth > 0:
        choices += ["group", "group"]
    what = draw(st.sampled_from(choices))
    if what == "word":
        w = draw(st.sampled_from(QUERY_WORDS))
        return Elem(w, Term(w), "bare")
    if what == "prefix":
        s = draw(st.sampled_from(STEMS))
        return Elem(s + "*", Prefix(s), "bare")
    if what == "tagged":
        tag, f = draw(tags())
        if draw(st.booleans()):
            w = draw(st.sampled_from(QUERY_WORDS))
            return Elem(w + tag, Term(w, f), "tagged", f)
        s = draw(st.sampled_from(STEMS))
        return Elem(s + "*" + tag, Prefix(s, f), "tagged", f)
    if what == "phrase":
        ws = draw(st.lists(st.sampled_from(QUERY_WORDS), min_size=1, max_size=3))
        text = '"' + " ".join(ws) + '"'
        if draw(st.booleans()):
            tag, f = draw(tags())
            return Elem(text + tag, Phrase(" ".join(ws), f), "other")
        return Elem(text, Phrase(" ".join(ws)), "other")
    if what == "near":
        a, b = draw(st.sampled_from(SINGLE_WORDS)), draw(st.sampled_from(SINGLE_WORDS))
        n = draw(st.integers(1, 4))
        kw = draw(st.sampled_from(["NEAR", "near", "Near"]))
        text = draw(st.sampled_from([f"{kw}/{n}({a}, {b})", f"{kw}/{n}({a},{b})", f"{kw}/{n}( {a} , {b} )", f"{a} {kw}/{n} {b}"]))
        if draw(st.booleans()):
            tag, f = draw(tags())
            return Elem(text + tag, Near(a, b, n, f), "other")
        return Elem(text, Near(a, b, n), "other")
    if what == "date":
        text, node = draw(raw_dates())
        return Elem(text, node, "other")
    if what == "neg":
        child = draw(raw_elems(max(depth - 1, 0)))
        op = draw(st.sampled_from(["-", "NOT ", "not ", "Not "]))
        if op == "-" and child.text.startswith("-"):
            op = "NOT "  # `--a` is not BQL
        return Elem(op + child.text, Not(child.node), "other")
    # group
    text, node = draw(raw_or(depth - 1))
    if draw(st.booleans()):
        tag, f = draw(tags())
        return Elem("(" + text + ")" + tag, scope(node, f), "other")
    return Elem("(" + text + ")", node, "other")


@st.composite
def raw_and(draw: Any, depth: int) -> tuple[str, Any]:
    elems = draw(st.lists(raw_elems(depth), min_size=1, max_size=4))
    seps = [draw(st.sampled_from([" ", " ", " AND ", " and ", "  "])) for _ in elems[1:]]
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


@st.composite
def raw_or(draw: Any, depth: int) -> tuple[str, Any]:
    parts = draw(st.lists(raw_and(depth), min_size=1, max_size=3))
    seps = [draw(st.sampled_from([" OR ", " or ", " Or "])) for _ in parts[1:]]
    text = parts[0][0] + "".join(s + p[0] for s, p in zip(seps, parts[1:]))
    nodes = [p[1] for p in parts]
    return text, (nodes[0] if len(nodes) == 1 else Or(tuple(nodes)))


@settings(max_examples=150, **SETTINGS)
@given(corpora(), st.lists(raw_or(2), min_size=QUERIES_PER_CORPUS, max_size=QUERIES_PER_CORPUS))
def test_raw_syntax_matches_oracle(recs: list[dict[str, Any]], queries: list[tuple[str, Any]]) -> None:
    for text, expected in queries:
        parsed = parse(text)
        assert flatten(parsed) == flatten(expected), f"{text!r} parsed as {parsed}, expected {flatten(expected)}"
    with_corpus(recs, lambda c: check_queries(c, [t for t, _ in queries]))


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
