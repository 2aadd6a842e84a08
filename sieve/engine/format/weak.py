"""Caches and callbacks that hold their owner weakly.

An open index's readers hold memory maps, and each map holds an open file descriptor until the map
is freed (about 40 per segment). An object that an lru_cache of its own bound method, or a callback
stored beside it, points back at sits in a reference cycle, and only the cyclic garbage collector
frees it, which can be long after the last reference is dropped: a process that opened an index
again and again, dropping each, ran out of file descriptors. These helpers reach their owner
through a weak reference, so dropping the last reference frees the owner and its files at once.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any


def cached_method(owner: Any, name: str, maxsize: int) -> Callable[..., Any]:
    """`functools.lru_cache(maxsize)(owner.<name>)` without a reference from the cache to `owner`
    (the caller stores it on `owner`, so it never outlives it)."""
    ref = weakref.ref(owner)
    method = getattr(type(owner), name)

    @functools.lru_cache(maxsize=maxsize)
    def cached(*args: Any) -> Any:
        return method(ref(), *args)

    return cached


def method_callback(owner: Any, name: str) -> Callable[..., None]:
    """A callback that calls `owner.<name>(...)` while `owner` lives, and does nothing after."""
    ref = weakref.ref(owner)
    method = getattr(type(owner), name)

    def call(*args: Any) -> None:
        obj = ref()
        if obj is not None:
            method(obj, *args)

    return call


def setter(owner: Any, attr: str) -> Callable[[Any], None]:
    """A callback that sets `owner.<attr>` to its argument while `owner` lives."""
    ref = weakref.ref(owner)

    def set_it(value: Any) -> None:
        obj = ref()
        if obj is not None:
            setattr(obj, attr, value)

    return set_it
