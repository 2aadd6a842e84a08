"""A brute-force reference evaluator for BQL, written from the specification only.

It walks a parsed BQL tree over raw `Document` objects, re-tokenising every text unit with the
shared analyzer, and knows nothing of the index (postings, masks, bitsets). `tests/engine/test_match_oracle.py`
compares `Index.match` against it.

Specification implemented here:

* Analysis: a text's terms are its folded words (`analyze`, the plain analyzer); under a stemming
  analyzer each word is replaced by its Snowball stem (PyStemmer called directly, word by word).
  Query words are analysed the same way, prefixes included (the stem's stem must start a term).
  With a stop list, a word in it (before stemming) becomes None: it keeps its place in its unit
  and matches no query term. In a query term or phrase, stop words at either end are dropped and
  one inside matches any one word of the unit; a leaf of nothing but stop words (or a NEAR with one
  on either side) is an error (`StopWordQuery`). A prefix is never a stop word.
* A document's text units: the title (TITLE); each author name, the author string split on ";"
  and stripped (AUTHOR); each infobox value, never the keys (INFOBOX); then for every section in
  order its heading (SECTION) unless it is exactly "(intro)", and its text (BODY). Each unit is
  analysed separately; a term's position is its index in its unit's term list.
* Term: one term -> occurs in an allowed unit; several terms (`O_RDONLY`) -> their phrase.
* Phrase: the terms consecutive and in order inside one allowed unit.
* Prefix: the stem's single term (analysed) is a prefix of some term of an allowed unit.
* Near: both single terms in one allowed unit at positions i != j with |i - j| <= distance.
* Declared text fields: each value (a string, or each string of a list) is a unit of its own,
  analysed the same way, matched only by leaves whose tag names the field.
* DateRange: inclusive YYYYMMDD bounds (None = open); a document's date is its first day;
  undated documents never match.
* Not / And / Or: complement / intersection / union over the whole corpus.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from typing import Iterable, Sequence

from sieve.corpus.documents import INTRO, Document
from sieve.engine.analysis.analyzers import analyze, fold
from sieve.engine.query.bql import ast
from sieve.engine.analysis.fields import Field


@dataclass(frozen=True)
class Unit:
    field: Field | str  # a str: a declared text field (searched only when a tag names it)
    terms: tuple[str, ...]


@dataclass(frozen=True)
class OracleDoc:
    id: str
    units: tuple[Unit, ...]
    day: int | None  # YYYYMMDD of the first day of the document's date
    analyzer: str = "plain"
    stopwords: frozenset[str] = frozenset()
    metadata: tuple[tuple[str, object], ...] = ()  # the record's other keys (declared fields read them)
    declared: tuple[tuple[str, str], ...] = ()  # (name, type) of the index's declared fields


class StopWordQuery(Exception):
    """A query leaf names only stop words: the engine must refuse the query."""


def terms_of(text: str, analyzer: str = "plain", stopwords: frozenset[str] = frozenset()) -> list[str | None]:
    words = analyze(text)
    if analyzer == "plain":
        terms = list(words)
    else:
        import Stemmer

        stemmer = Stemmer.Stemmer(analyzer)
        terms = [stemmer.stemWord(w) or w for w in words]
    return [None if w in stopwords else t for w, t in zip(words, terms)]


def first_day_of(date: str) -> int:
    """`2018` -> 20180101, `2018-05` -> 20180501, `2018-05-07` -> 20180507."""
    parts = [int(p) for p in date.split("-")]
    y = parts[0]
    m = parts[1] if len(parts) > 1 else 1
    d = parts[2] if len(parts) > 2 else 1
    return y * 10000 + m * 100 + d


def last_day_of(date: str) -> int:
    """`2018` -> 20181231, `2018-02` -> 20180228, `2018-05-07` -> 20180507."""
    parts = [int(p) for p in date.split("-")]
    y = parts[0]
    if len(parts) == 1:
        return y * 10000 + 1231
    m = parts[1]
    if len(parts) == 2:
        return y * 10000 + m * 100 + calendar.monthrange(y, m)[1]
    return y * 10000 + m * 100 + parts[2]


def units_of(doc: Document, analyzer: str = "plain", stopwords: frozenset[str] = frozenset(), text_fields: tuple[str, ...] = ()) -> tuple[Unit, ...]:
    def unit(f: Field, text: str) -> Unit:
        return Unit(f, tuple(terms_of(text, analyzer, stopwords)))  # type: ignore[arg-type]

    units: list[Unit] = [unit(Field.TITLE, doc.title)]
    if doc.author is not None:
        for name in doc.author.split(";"):
            units.append(unit(Field.AUTHOR, name.strip()))
    for value in doc.infobox.values():
        units.append(unit(Field.INFOBOX, value))
    for sec in doc.sections:
        if sec.heading != INTRO:
            units.append(unit(Field.SECTION, sec.heading))
        units.append(unit(Field.BODY, sec.text))
    for name in text_fields:
        value = doc.metadata.get(name)
        for text in value if isinstance(value, list) else [] if value is None else [value]:
            units.append(Unit(name, tuple(terms_of(text, analyzer, stopwords))))  # type: ignore[arg-type]
    return tuple(u for u in units if u.terms)


def prepare(docs: Iterable[Document], analyzer: str = "plain", stopwords: Iterable[str] = (), declared: dict[str, str] | None = None) -> list[OracleDoc]:
    stop = frozenset(stopwords)
    fields = tuple((declared or {}).items())
    texts = tuple(n for n, t in fields if t == "text")
    return [OracleDoc(d.id, units_of(d, analyzer, stop, texts), first_day_of(d.date) if d.date is not None else None, analyzer, stop,
                      tuple(d.metadata.items()), fields) for d in docs]


class UnknownFilter(Exception):
    """A filter names a field the index does not declare (or a spec its type cannot read)."""


def _folded_keyword(value: object) -> str:
    return " ".join(fold(str(value)).split())


def filter_matches(node: ast.Filter, doc: OracleDoc) -> bool:
    """A declared field's filter, read from the spec's text alone: numbers compared as floats
    (`>`/`<` strict), dates widened to their span (as `date[...]`), keywords whole and folded."""
    kind = dict(doc.declared).get(node.name)
    if kind is None:
        raise UnknownFilter(node.name)
    value = dict(doc.metadata).get(node.name)
    spec = node.spec
    if kind == "keyword":
        if not spec.startswith("="):
            raise UnknownFilter(spec)
        want = spec[1:].strip()
        if len(want) >= 2 and want[0] == want[-1] == '"':
            want = want[1:-1]
        values = value if isinstance(value, list) else [] if value is None else [value]
        return _folded_keyword(want) != "" and _folded_keyword(want) in {_folded_keyword(v) for v in values}
    if value is None or value == "":
        return False
    if kind == "number":
        x = float(value)  # type: ignore[arg-type]
        for op, test in ((">=", lambda a, b: a >= b), ("<=", lambda a, b: a <= b), (">", lambda a, b: a > b), ("<", lambda a, b: a < b), ("=", lambda a, b: a == b)):
            if spec.startswith(op):
                return bool(test(x, float(spec[len(op):])))
        if ".." in spec:
            a, b = spec.split("..")
            return (not a or x >= float(a)) and (not b or x <= float(b))
        return x == float(spec)
    day = first_day_of(str(value))
    if ".." in spec:
        a, b = spec.split("..")
        return (not a or day >= first_day_of(a)) and (not b or day <= last_day_of(b))
    return first_day_of(spec) <= day <= last_day_of(spec)


def _allowed(unit: Unit, fields: ast.Fields) -> bool:
    if fields is None:
        return isinstance(unit.field, Field)  # a word without a tag: the built-in fields only
    return unit.field in fields


def _has_sequence(terms: Sequence[str | None], seq: Sequence[str | None]) -> bool:
    """`seq` (None: any one word) at some place of `terms`."""
    n = len(seq)
    return any(all(s is None or terms[i + k] == s for k, s in enumerate(seq)) for i in range(len(terms) - n + 1))


def _single(word: str, doc: OracleDoc, stop: bool = True) -> str:
    terms = terms_of(word, doc.analyzer, doc.stopwords if stop else frozenset())
    assert len(terms) == 1, f"{word!r} is not a single term: {terms}"
    if terms[0] is None:
        raise StopWordQuery(word)
    return terms[0]


def leaf_matches(node: ast.Node, doc: OracleDoc) -> bool:
    if isinstance(node, (ast.Term, ast.Phrase)):
        seq = terms_of(node.word if isinstance(node, ast.Term) else node.text, doc.analyzer, doc.stopwords)
        assert seq, f"{node!r} has no terms"
        while seq and seq[0] is None:
            seq.pop(0)
        while seq and seq[-1] is None:
            seq.pop()
        if not seq:
            raise StopWordQuery(str(node))
        return any(_allowed(u, node.fields) and _has_sequence(u.terms, seq) for u in doc.units)
    if isinstance(node, ast.Prefix):
        stem = _single(node.stem, doc, stop=False)
        return any(_allowed(u, node.fields) and any(t is not None and t.startswith(stem) for t in u.terms) for u in doc.units)
    if isinstance(node, ast.Near):
        left, right = _single(node.left, doc), _single(node.right, doc)
        for u in doc.units:
            if not _allowed(u, node.fields):
                continue
            lpos = [i for i, t in enumerate(u.terms) if t == left]
            rpos = [j for j, t in enumerate(u.terms) if t == right]
            if any(i != j and abs(i - j) <= node.distance for i in lpos for j in rpos):
                return True
        return False
    if isinstance(node, ast.Filter):
        return filter_matches(node, doc)
    if isinstance(node, ast.DateRange):
        if doc.day is None:
            return False
        return (node.lo is None or node.lo <= doc.day) and (node.hi is None or doc.day <= node.hi)
    raise TypeError(f"not a leaf: {node!r}")


def matches(node: ast.Node, doc: OracleDoc) -> bool:
    if isinstance(node, ast.Not):
        return not matches(node.child, doc)
    if isinstance(node, ast.And):
        return all(matches(c, doc) for c in node.children)
    if isinstance(node, ast.Or):
        return any(matches(c, doc) for c in node.children)
    return leaf_matches(node, doc)


def _leaves(node: ast.Node) -> Iterable[ast.Node]:
    if isinstance(node, ast.Not):
        yield from _leaves(node.child)
    elif isinstance(node, (ast.And, ast.Or)):
        for c in node.children:
            yield from _leaves(c)
    else:
        yield node


def evaluate(node: ast.Node, docs: Sequence[OracleDoc]) -> list[str]:
    """Ids of the documents matching `node`, in corpus order. Raises StopWordQuery when a leaf is
    only stop words, whatever the documents (every leaf is tried on an empty document first)."""
    if docs and docs[0].stopwords:
        empty = OracleDoc("", (), None, docs[0].analyzer, docs[0].stopwords, (), docs[0].declared)
        for leaf in _leaves(node):
            leaf_matches(leaf, empty)
    return [d.id for d in docs if matches(node, d)]


def ranked_terms(doc: Document, analyzer: str = "plain", stopwords: frozenset[str] = frozenset()) -> list[str]:
    """What BM25 counts of a document: the terms of its title, headings and section texts (stop words left out)."""
    texts = [doc.title] + [t for s in doc.sections for t in ([s.heading] if s.heading != INTRO else []) + [s.text]]
    return [t for text in texts for t in terms_of(text, analyzer, stopwords) if t is not None]


def bm25_by_hand(docs: dict[str, list[str]], terms: list[str], k1: float = 0.9, b: float = 0.4) -> dict[str, float]:
    """Each document's BM25 score for `terms`, from the formula (Lucene's idf, length over the average)."""
    import math

    n = len(docs)
    avgdl = sum(map(len, docs.values())) / n
    out = {}
    for did, toks in docs.items():
        score = 0.0
        for term in terms:
            tf = toks.count(term)
            if tf:
                df = sum(term in x for x in docs.values())
                score += math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf / (tf + k1 * (1 - b + b * len(toks) / avgdl))
        out[did] = score
    return out
