"""Keeping freed memory in the process heap, so a query's temporary arrays do not fault in fresh pages.

A query allocates and frees arrays of up to a few MB (bitset flags, BM25 accumulators, score
temporaries). glibc serves blocks above its mmap threshold (128 KiB to start) with fresh
mappings and gives freed memory at the top of the heap back to the kernel past its trim threshold
(128 KiB), so the next query's arrays start as unmapped pages and pay one page fault per 4 KiB on
first write: on a virtual machine about 1 us each, more than the arithmetic. Raising both
thresholds keeps that memory mapped between queries (measured on man-sections and at 10M documents:
benchmarks/README.md). The process keeps at most `TRIM_BYTES` of freed memory at the top of its
heap; arrays above `MMAP_BYTES` still get their own mappings, returned when freed.

Applied once, when the first index is opened or built, only where the C library is glibc and the
user has not set glibc's own `MALLOC_MMAP_THRESHOLD_` / `MALLOC_TRIM_THRESHOLD_`; `SIEVE_MALLOC=system`
leaves the allocator as it is.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading

MMAP_BYTES = 16 << 20
TRIM_BYTES = 64 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)

_lock = threading.Lock()
_state: bool | None = None  # None: not tried yet


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds (once per process); True if they are raised."""
    global _state
    with _lock:
        if _state is None:
            _state = _apply()
        return _state


def _apply() -> bool:
    if os.environ.get("SIEVE_MALLOC", "").strip().lower() == "system":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False  # the user tuned glibc already
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # The trim threshold first: a raised mmap threshold alone moves the arrays into the heap only
    # to have them trimmed away again on every free.
    return bool(mallopt(_M_TRIM_THRESHOLD, TRIM_BYTES)) and bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES))
