"""What a search returns: `Hit` (one ranked document) and `Results` (the hits, the admitted set's
count, and what the query's plan says about them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from sieve.engine.analysis.analyzers import PLAIN, Analyzer
from sieve.engine.query.diagnose import Diagnosis


@dataclass(frozen=True)
class Hit:
    """One ranked document: `fields` and `sections` are where the query's positive atoms matched."""

    doc_id: str
    rank: int
    score: float
    fields: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    doc: int = field(default=-1, repr=False, compare=False)  # internal document number
    # The matched sections by number (0-based), in order: `sections` names them, but two sections
    # may share a heading, and a card must star only the one that matched.
    section_numbers: tuple[int, ...] = field(default=(), repr=False, compare=False)
    # Dense and hybrid over passage embeddings: the number of the section whose passage was closest
    # to the query (where a dense score came from; a card points at it). None otherwise.
    passage_section: int | None = field(default=None, repr=False, compare=False)

    def matched_sections(self, headings: list[str] | tuple[str, ...]) -> list[int]:
        """The numbers of the sections the query matched (by name, for a hit built without
        numbers)."""
        if self.section_numbers or not self.sections:
            return list(self.section_numbers)
        return [j for j, h in enumerate(headings) if h in self.sections]

    def __getstate__(self) -> dict[str, Any]:
        # where it matched and its closest passage, if still to find, are found: finders do not
        # pickle
        _ = self.fields, self.passage_section
        return self.__dict__


class Matched(Protocol):
    """Where a search's query matched each of its hits, found for all of them at the first read
    of any (`Searcher.hits`): (fields, sections, section numbers) by place in the hits."""

    def values(self) -> list[tuple[tuple[str, ...], tuple[str, ...], tuple[int, ...]]]: ...


class _MatchedField:
    """`Hit.fields`, `sections` and `section_numbers`: given (as `__init__` or `made` does), or
    left to a `Matched` under `_matched` as (finder, place), asked at the first read of any of the
    three. Most searches are read for ids and scores only; cards and explanations read these."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return ()
        d = obj.__dict__
        value = d.get(self.name, _UNSET)
        if value is _UNSET:
            pending = d.get("_matched")
            if pending is not None:  # None: another thread has just filled it in
                finder, at = pending
                fields, sections, numbers = finder.values()[at]
                d.update(fields=fields, sections=sections, section_numbers=numbers)
                d.pop("_matched", None)
            value = d[self.name]
        return value

    def __set__(self, obj: object, value: Any) -> None:  # only __init__ (the dataclass is frozen)
        obj.__dict__[self.name] = value


_UNSET = object()
# Installed after the dataclass is made, so that its `__init__`, defaults, `repr=` and `compare=`
# stay those declared above (a descriptor given to `field(default=...)` would be the default).
for _name in ("fields", "sections", "section_numbers"):
    setattr(Hit, _name, _MatchedField(_name))


class Closest(Protocol):
    """The closest passage's section of each hit of a dense or hybrid search, found for all of
    them at the first read of any (`Searcher.hits`), by place in the hits."""

    def values(self) -> list[int | None]: ...


class _ClosestField:
    """`Hit.passage_section`: given, or left to a `Closest` under `_closest` as (finder, place),
    asked at its first read; None when neither (BM25, the document unit)."""

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return None
        d = obj.__dict__
        value = d.get("passage_section", _UNSET)
        if value is _UNSET:
            pending = d.get("_closest")
            if pending is None:  # none to find, or another thread has just found it
                return d.get("passage_section")
            finder, at = pending
            value = d["passage_section"] = finder.values()[at]
            d.pop("_closest", None)
        return value

    def __set__(self, obj: object, value: Any) -> None:  # only __init__ (the dataclass is frozen)
        obj.__dict__["passage_section"] = value


Hit.passage_section = _ClosestField()  # type: ignore[assignment]


class _ReadOnce:
    """A dataclass field that may be given a zero-argument function instead of its value: called at
    the first read, and its value kept. A search that ranks without listing the admitted set counts
    it only if the count is read (an agent's card reads it; a caller after ids and scores does
    not)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            raise AttributeError(self.slot)  # the field has no default
        value = obj.__dict__[self.slot]
        if callable(value):
            value = obj.__dict__[self.slot] = value()
        return value

    # only __init__ gets here: the dataclass is frozen
    def __set__(self, obj: object, value: Any) -> None:
        obj.__dict__[self.slot] = value


@dataclass(frozen=True)
class Results:
    hits: list[Hit]
    count: int = _ReadOnce()  # type: ignore[assignment]  # exact size of the admitted set (0 when the fallback fired)
    query: str  # type: ignore[misc]  # canonical form; count's _ReadOnce is no default
    fallback: bool = False
    missing: list[str] = field(default_factory=list)  # top-level clauses no document matches
    ranker: str = "bm25"
    # From the query's plan, for whoever shows the hits (snippets, headers) without parsing it
    # again:
    terms: tuple[str, ...] = ()  # the positive analysed terms, each once, in query order
    stems: tuple[str, ...] = ()  # the positive prefix stems
    text: str = ""  # the positive words as written (what a dense ranker read)
    # For a query that admits nothing: each clause's count alone and the one-step relaxations that
    # would admit documents (sieve.engine.query.diagnose); None when it admits something or was not
    # asked.
    diagnosis: Diagnosis | None = None
    # the index's: how `terms` were made from the words
    analyzer: Analyzer = field(default=PLAIN, repr=False, compare=False)
    hints: tuple[str, ...] = ()  # what the query may have meant instead (`title:zlib`: bql.hints)

    @property
    def ranked(self) -> bool:
        """Whether the ranker had anything to score (BM25 ignores prefixes and dates; dense reads
        stems too)."""
        return bool(self.terms) if self.ranker == "bm25" else bool(self.text)

    def __getstate__(self) -> dict[str, Any]:
        _ = self.count  # a count still to compute is computed: a function does not pickle
        return self.__dict__
