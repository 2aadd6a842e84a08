"""Hints for queries written in another engine's syntax that BQL reads differently without error.

`title:zlib` is Lucene's (and Elasticsearch's, Whoosh's) field syntax. In BQL the colon is part of
the word, so it is the two words "title zlib" side by side (a phrase), which rarely matches and
falls back to ranking. It is not an error: `std::move`, `re:search` or a text holding "title: zlib"
are things to search for. So the reader gets a hint with the BQL that scopes the word instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sieve.engine.analysis.fields import DATE_TAG, FIELD_ALIASES
from sieve.engine.query.bql import ast

_COLON = re.compile(r"([^\W\d]\w*):(.*)", re.DOTALL)


def colon_hints(
    node: object, declared: Iterable[str] = (), query: str | None = None
) -> tuple[str, ...]:
    """A hint for each word `name:value` whose name is a field (BQL's, `date`, or one of
    `declared`, an index's declared fields), in query order, each once. `query`: `str(node)`,
    when the caller has it already."""
    if type(node).__module__ != ast.__name__ or ":" not in (str(node) if query is None else query):
        return ()  # another language's tree (Indri), or no colon: the usual case, decided at once
    names = set(FIELD_ALIASES) | {DATE_TAG} | {n.lower() for n in declared}
    out: dict[str, None] = {}
    for n in sorted(ast.walk(node), key=lambda n: n.span[0]):  # type: ignore[arg-type]  # every node has a span
        if type(n) is not ast.Term:
            continue
        m = _COLON.fullmatch(n.word)
        if m is None or m.group(1).lower() not in names:
            continue
        name, value = m.group(1).lower(), m.group(2)
        out[_hint(n.word, name, value)] = None
    return tuple(out)


def _hint(word: str, name: str, value: str) -> str:
    read = (
        f"{word} is read as words to search for, not as a field query"
        " (BQL writes the field as a tag after the word)"
    )
    if not value:
        return f"{read}, as in word[{name}]"
    if name == DATE_TAG:
        return f"{read}; for documents dated {value}, write date[{value}]"
    return f"{read}; for {value} in {name}, write {value}[{name}]"
