"""Writing a segment's large temporaries on ordinary pages.

numpy asks the kernel for transparent huge pages for every array of 4 MiB or more (madvise). Where
the kernel then compacts memory to find a free 2 MiB page at each first touch (`defrag` set to
`madvise`, a common default), a process that allocates hundreds of fresh megabytes, as a segment's
final sort does, stalls there: on the build machine, with the page cache full, a 100k-document
build's last step took 2.2 s with huge pages (1.5 s of it system time) and 1.5 s without, the
whole build 5.4 s and 4.6 s (benchmarks/bench_build.py, results/build-pages.json). Queries
allocate far less than 4 MiB and are left alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

_lock = threading.Lock()
_depth = 0
_before = True


def _setter() -> Callable[[bool], bool] | None:
    """numpy's switch (private: numpy 2 keeps it in _core, numpy 1 in core), or None."""
    for module in ("_core", "core"):
        found = getattr(
            getattr(getattr(np, module, None), "multiarray", None), "_set_madvise_hugepage", None
        )
        if found is not None:
            return found
    return None


@contextmanager
def small_pages() -> Iterator[None]:
    """Within the block, numpy's large arrays are not madvised for huge pages (nested and
    concurrent blocks keep it off until the last one ends; then it is as it was)."""
    global _depth, _before
    switch = _setter()
    if switch is None:
        yield
        return
    with _lock:
        if _depth == 0:
            _before = bool(switch(False))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                switch(_before)
