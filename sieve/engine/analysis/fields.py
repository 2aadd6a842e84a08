"""Searchable text fields, their bits in the posting field mask, and the names BQL accepts."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from enum import IntEnum


class Field(IntEnum):
    """A text field; the value is its bit number in a posting's field mask."""

    TITLE = 0
    SECTION = 1  # section headings
    BODY = 2  # section texts
    AUTHOR = 3
    INFOBOX = 4  # infobox values (keys are shown on cards, not searched)

    @property
    def bit(self) -> int:
        return 1 << int(self)

    @property
    def label(self) -> str:
        return self.name.lower()


ALL_FIELDS: frozenset[Field] = frozenset(Field)
ALL_MASK = sum(f.bit for f in Field)

# Every name a tag may use, lower-cased, to the fields it stands for.
FIELD_ALIASES: dict[str, frozenset[Field]] = {
    "title": frozenset({Field.TITLE}),
    "ti": frozenset({Field.TITLE}),
    "section": frozenset({Field.SECTION}),
    "sec": frozenset({Field.SECTION}),
    "heading": frozenset({Field.SECTION}),
    "body": frozenset({Field.BODY}),
    "text": frozenset({Field.BODY}),
    "ab": frozenset({Field.BODY}),
    "author": frozenset({Field.AUTHOR}),
    "au": frozenset({Field.AUTHOR}),
    "infobox": frozenset({Field.INFOBOX}),
    "ib": frozenset({Field.INFOBOX}),
    "tiab": frozenset({Field.TITLE, Field.BODY}),
    "all": ALL_FIELDS,
}

# `date` is not a text field but a valid tag name (`2018..2023[date]`).
DATE_TAG = "date"


# a query plan asks for every leaf's mask; there are few distinct field sets
@functools.lru_cache(maxsize=256)
def mask_of(fields: frozenset[Field] | None) -> int:
    """The posting mask bits of a field set; None means every text field."""
    if fields is None:
        return ALL_MASK
    return sum(f.bit for f in fields)


def field_names(text: str, offset: int) -> Iterator[tuple[str, int]]:
    """Each comma-separated name of a field list (`title, Body`) as written, stripped, with the
    position of its first character in the query (`text` starts at `offset`); an empty one is ""."""
    for raw in text.split(","):
        yield raw.strip(), offset + len(raw) - len(raw.lstrip())
        offset += len(raw) + 1
