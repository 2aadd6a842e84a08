"""Process-level speedups that must not change what is computed: the CRC-32 implementation that
verifies array blocks, and the heap thresholds raised when an index is opened."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import zlib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine import storage


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=70_000), st.integers(min_value=0, max_value=2**32 - 1))
def test_block_checksums_are_zlibs_crc32(data: bytes, start: int) -> None:
    """Files written by one implementation verify under the other: it is the same function."""
    assert storage.crc32(data) == zlib.crc32(data)
    assert storage.crc32(data, start) == zlib.crc32(data, start)
    view = memoryview(data)[len(data) // 3 :]
    assert storage.crc32(view) == zlib.crc32(view)


def _heap_state(index: Path, **env: str) -> str:
    """Whether opening an index raised the thresholds, in a fresh process (it is once per process)."""
    code = "import sys, sieve; from sieve.engine import heap; sieve.open_index(sys.argv[1]); print(heap._state)"
    clean = {k: v for k, v in os.environ.items() if k not in ("SIEVE_MALLOC", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")}
    out = subprocess.run([sys.executable, "-c", code, str(index)], env={**clean, **env}, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_opening_an_index_keeps_freed_memory_unless_told_not_to(tmp_path: Path) -> None:
    import sieve

    index = tmp_path / "idx"
    sieve.build_index([{"id": "a", "title": "heat"}], index)
    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert _heap_state(index) == str(glibc)
    assert _heap_state(index, SIEVE_MALLOC="system") == "False"
    assert _heap_state(index, MALLOC_TRIM_THRESHOLD_="1048576") == "False"  # the user's own glibc tuning stands
    assert _heap_state(index, SIEVE_MALLOC="anything else") == str(glibc)
