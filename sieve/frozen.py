"""Frozen dataclass instances made from values already checked.

A frozen dataclass's `__init__` sets each field through `object.__setattr__`, about 0.1 us a
field: for the millions of sections a build reads, or the ten hits of every search, that is most
of what making one costs. `made` fills the instance's dictionary in one step; the instance is as
frozen to its users as one `__init__` made.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def made(cls: type[T], fields: dict[str, Any]) -> T:
    """`cls(**fields)` of a frozen dataclass (without `__slots__` or `__post_init__`), every field
    given, for values the caller has checked."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj
