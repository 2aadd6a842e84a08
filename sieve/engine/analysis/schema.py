"""Declared fields: metadata keys an index keeps as filter columns, queried as `name[...]` in BQL.

A record's other keys are metadata, stored and never searched. Declaring one (`sieve index --field
year:number`, `build_index(fields={"year": "number"})`) makes it a column every document has (or
lacks), filtered like the document date:

* `number`: a JSON number (or a string holding one); `year[2000..2010]`, `price[<10]`, `year[2005]`.
* `date`: an ISO date as `date` takes it; `published[2020-03..]` widens partial dates as
  `date[...]`.
* `keyword`: a string (or a list of them, or an integer), compared whole after folding (case,
  accents, runs of spaces); `venue[=ACL]`, `venue[="Findings of ACL"]`.
* `text`: a string (or a list of them), analysed as the index's other text and searched when named
  as a field tag: `neural[abstract]`, `"graph search"[abstract]`, `neur*[abstract]`.

Declared fields only filter: they never add to a score, like `date[...]`; a word without a tag
searches the built-in fields only. The declaration is recorded in the
index (every segment's manifest and the commit's); `sieve add` and merges keep it, and changing it
means rebuilding.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sieve.common.isodate import first_day
from sieve.corpus.documents import checked_date
from sieve.engine.analysis.analyzers import fold
from sieve.engine.analysis.dates import parse_date_spec
from sieve.engine.analysis.fields import DATE_TAG, FIELD_ALIASES
from sieve.errors import CorpusError, InvalidArgumentError

FIELD_TYPES = ("keyword", "number", "date", "text")
# A declared text field's units carry this field code (the built-in fields use 0-4), with the
# field's number in place of a section number; its postings carry the matching mask bit.
DECLARED_FIELD = 5
DECLARED_BIT = 1 << DECLARED_FIELD


def namespaced(field_number: int, term: str) -> str:
    """The term a declared text field's word is indexed under: apart from every built-in field's
    terms (and from other declared fields'), so `w` never finds it and `w[name]` finds only it.
    The prefix sorts before every real term, so no prefix query of the
    built-in fields reaches it."""
    return f"\x1f{field_number}\x1f{term}"


def shown_term(term: str) -> str:
    """A term as people read it (a declared field's namespace removed)."""
    return term.rsplit("\x1f", 1)[-1] if term.startswith("\x1f") else term


_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
# Keys that already mean something in a record: declaring them would shadow the document's own.
_RESERVED = {"id", "_id", "title", "text", "sections", "author", "date", "infobox", "metadata"}
_SPACES = re.compile(r"\s+")


def keyword_value(value: str) -> str:
    """A keyword as stored and compared: folded, spaces collapsed, trimmed."""
    return _SPACES.sub(" ", fold(value)).strip()


@dataclass(frozen=True)
class Schema:
    """The declared fields of an index, in declaration order (a field's number names its files)."""

    fields: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.fields)

    @functools.cached_property  # every query is parsed with it
    def text_fields(self) -> frozenset[str]:
        """The names of the declared text fields (what BQL accepts as tags besides its own)."""
        return frozenset(n for n, t in self.fields if t == "text")

    def type_of(self, name: str) -> str | None:
        for n, t in self.fields:
            if n == name:
                return t
        return None

    def number_of(self, name: str) -> int:
        return [n for n, _ in self.fields].index(name)

    def listing(self) -> str:
        """`year (number), venue (keyword)`, or `no fields`."""
        return ", ".join(f"{n} ({t})" for n, t in self.fields) or "no fields"

    def describe(self) -> str:
        """The hint for a filter on an unknown field: what this index
        has, or how to declare some."""
        if not self.fields:
            return (
                "this index declares no filter fields (sieve index --field NAME:TYPE declares "
                "one); date[...] filters the document date"
            )
        return "this index's filter fields: date, " + self.listing()

    def manifest_fields(self) -> dict[str, Any]:
        return {"fields": [list(f) for f in self.fields]} if self.fields else {}

    @classmethod
    def of_manifest(cls, manifest: Mapping[str, Any]) -> Schema:
        raw = manifest.get("fields")
        if raw is None:
            return NO_FIELDS
        return declare(
            dict(raw)
            if isinstance(raw, list) and all(isinstance(f, list) and len(f) == 2 for f in raw)
            else raw
        )

    def values(self, metadata: Mapping[str, Any]) -> list[Any]:
        """Each field's value from a document's metadata: a float (NaN: none) for a number, a
        YYYYMMDD int (-1: none) for a date, a list of keywords for a keyword. Raises CorpusError
        (without a place: the caller knows the line)."""
        out: list[Any] = []
        for name, kind in self.fields:
            value = metadata.get(name)
            if kind == "number":
                out.append(_number(name, value))
            elif kind == "text":
                out.append(_texts(name, value))
            elif kind == "date":
                try:
                    day = checked_date(value)
                except CorpusError as e:
                    raise CorpusError(f"field {name!r} is declared a date: {e.message}") from None
                out.append(first_day(day) if day else -1)
            else:
                out.append(_keywords(name, value))
        return out


NO_FIELDS = Schema()


def _number(name: str, value: Any) -> float:
    if value is None or value == "":
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise CorpusError(
            f"field {name!r} is declared a number, got {type(value).__name__} {value!r}"
        )
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (ValueError, OverflowError):
        raise CorpusError(f"field {name!r} is declared a number, got {value!r}") from None
    if not math.isfinite(number):
        raise CorpusError(f"field {name!r} is declared a number, got {value!r} (not finite)")
    return number


def _texts(name: str, value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(v, str) for v in items):
        raise CorpusError(
            f"field {name!r} is declared text: a string or "
            f"a list of strings, got {type(value).__name__}"
        )
    return [v for v in items if v.strip()]


def _keywords(name: str, value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise CorpusError(
                f"field {name!r} is declared a keyword: a string, an "
                f"integer or a list of them, got {type(v).__name__}"
            )
        k = keyword_value(str(v))
        if k:
            out.append(k)
    return list(dict.fromkeys(out))


def declare(fields: Mapping[str, str] | Iterable[str] | None) -> Schema:
    """A schema from `{"year": "number"}` or `["year:number", ...]`; None or empty: no fields.
    Raises InvalidArgumentError naming what is wrong."""
    if not fields:
        return NO_FIELDS
    if isinstance(fields, Mapping):
        pairs = list(fields.items())
    else:
        pairs = []
        for spec in fields:
            if not isinstance(spec, str) or spec.count(":") != 1:
                raise InvalidArgumentError(
                    "a field is declared NAME:TYPE (TYPE one "
                    f"of {', '.join(FIELD_TYPES)}), not {spec!r}"
                )
            name, kind = spec.split(":")
            pairs.append((name.strip(), kind.strip()))
    seen: dict[str, str] = {}
    for name, kind in pairs:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InvalidArgumentError(
                f"field name {name!r}: lower-case letters, digits and _, starting with a letter"
            )
        if name in _RESERVED or name in FIELD_ALIASES or name == DATE_TAG:
            raise InvalidArgumentError(
                f"field name {name!r} is taken (a record key or a BQL field of its own)"
            )
        if kind not in FIELD_TYPES:
            raise InvalidArgumentError(
                f"field {name!r}: unknown type {kind!r}; known: {', '.join(FIELD_TYPES)}"
            )
        if name in seen:
            raise InvalidArgumentError(f"field {name!r} is declared twice")
        seen[name] = kind
    return Schema(tuple(seen.items()))


def _float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text!r} is not a finite number")
    return number


def filter_bounds(kind: str, spec: str) -> tuple[Any, Any]:
    """The inclusive (lo, hi) a filter spec on a field of `kind` admits (None: open end); for a
    keyword, (folded value, None). Raises ValueError saying what is wrong."""
    if kind == "keyword":
        if not spec.startswith("="):
            raise ValueError(
                'a keyword field is filtered by value: name[=value] or name[="two words"], not '
                f"[{spec}]"
            )
        value = spec[1:].strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        folded = keyword_value(value)
        if not folded:
            raise ValueError("an empty keyword matches nothing; write the value after =")
        return folded, None
    if kind == "date":
        return parse_date_spec(spec[1:] if spec.startswith("=") else spec)
    try:
        for op in (">=", "<=", ">", "<", "="):
            if spec.startswith(op):
                v = _float(spec[len(op) :])
                return {
                    ">=": (v, None),
                    "<=": (None, v),
                    ">": (math.nextafter(v, math.inf), None),
                    "<": (None, math.nextafter(v, -math.inf)),
                    "=": (v, v),
                }[op]
        if ".." in spec:
            a, b = spec.split("..", 1)
            if not a and not b:
                raise ValueError("a range needs at least one end, as in 3.. or ..10")
            lo, hi = (_float(a) if a else None), (_float(b) if b else None)
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"the range {a}..{b} is reversed")
            return lo, hi
        v = _float(spec)
        return v, v
    except ValueError as e:
        if "range" in str(e) or "finite" in str(e):
            raise
        raise ValueError(
            f"{spec!r} is not a number, a range a..b or a comparison such as >=3"
        ) from None
