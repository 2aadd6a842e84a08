"""The document store's byte streams, compressed in blocks.

A stream (every section's text, or every document's record) is the concatenation of its records;
its offsets file keeps each record's place in that uncompressed stream. The stream is cut every
2^shift bytes (SHIFTS), whatever the records, and each piece is compressed alone with LZ4: record
bytes a..b live in blocks a >> shift .. (b - 1) >> shift, so reading one section
decompresses one block or two, never the rest. The compressed blocks are stored back to back in
the stream's file and `<stream>.blocks.sva` gives where each starts (one more entry: the end).
"""

from __future__ import annotations

from array import array
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import lz4.block
import numpy as np

from sieve.engine.format import storage, weak
from sieve.errors import IndexDamagedError

# Block sizes, 2^shift bytes of a stream, and the codec. LZ4 was measured on man-sections against
# zlib level 1 and zstd level 3 (benchmarks/results/store-codecs.json): decompression 5-7x faster (a
# 4 KiB record block in ~1 us, a 16 KiB text block in ~5 us), so reading a hit's record costs what
# reading it uncompressed did. Its default (fast) mode, as Lucene's and tantivy's stores use, not
# its high-compression mode: on man-sections the store is 36.5 MB instead of 32.4 (of 104 MB of
# corpus), and compressing it takes 0.15 s of CPU instead of 0.6, which a two-worker build spent
# beside its workers on two cores (total 4.3 -> 3.8 s). Both modes write the same block format.
SHIFTS = {"store.text": 14, "store.meta": 12}
CODEC = "lz4"
# decompressed blocks kept per stream and segment (a card's sections, a page of hits' records)
CACHED_BYTES = 1 << 20


def compress(raw: bytes | memoryview) -> bytes:
    return lz4.block.compress(raw, store_size=False)


class BlockWriter:
    """Streams records into `<name>.sva` (compressed blocks); `close` also writes
    `<name>.blocks.sva`.

    The whole blocks of each append are compressed and written by one helper thread, in order
    (LZ4, file writes and CRCs release the GIL), so a build's analysis goes on meanwhile. The
    caller waits only when more than `AHEAD_BYTES` of raw stream are still queued: one task per
    append, not per block, since a task per 16 KiB block cost the caller about 70 us each (it
    waited for every block, the queue always full: 0.9 s of a 7 s one-process build)."""

    AHEAD_BYTES = 32 << 20

    def __init__(self, directory: Path, name: str) -> None:
        self.dir, self.name = directory, name
        self.out = storage.ArrayWriter(directory / f"{name}.sva", np.uint8)
        self.starts = array("q", [0])  # appended by the helper thread only, until close
        self.pending = bytearray()
        self.size = 1 << SHIFTS[name]
        self.queue: deque[tuple[Future[None], int]] = deque()
        self.queued = 0  # raw bytes in `queue`
        self.pool: ThreadPoolExecutor | None = None

    def append(self, raw: bytes) -> None:
        self.pending += raw
        whole = len(self.pending) - len(self.pending) % self.size
        if whole:
            chunk = bytes(self.pending[:whole])
            del self.pending[:whole]
            self._submit(chunk)

    def _submit(self, chunk: bytes) -> None:
        if self.pool is None:
            self.pool = ThreadPoolExecutor(1, thread_name_prefix=f"sieve-{self.name}")
        self.queue.append((self.pool.submit(self._compress_write, chunk), len(chunk)))
        self.queued += len(chunk)
        self._collect(self.AHEAD_BYTES)

    def _collect(self, ahead: int) -> None:
        """Collect finished tasks, waiting while more than `ahead` raw bytes are queued."""
        while self.queue and (self.queued > ahead or self.queue[0][0].done()):
            done, size = self.queue.popleft()
            done.result()  # a failed write raises here, in the builder's thread
            self.queued -= size

    def _compress_write(self, chunk: bytes) -> None:
        size, view = self.size, memoryview(chunk)
        for at in range(0, len(chunk), size):
            packed = compress(view[at : at + size])
            self.out.append_bytes(packed)
            self.starts.append(self.starts[-1] + len(packed))

    def close(self) -> dict[str, dict[str, int]]:
        """Seal both files; returns their manifest entries by file name."""
        if self.pending:
            self._submit(bytes(self.pending))
            self.pending = bytearray()
        self._collect(-1)
        if self.pool is not None:
            self.pool.shutdown()
        starts = np.frombuffer(self.starts, dtype=np.int64)
        entries = {f"{self.name}.sva": self.out.close()}
        dtype = np.uint32 if starts[-1] < 2**32 else np.int64
        entries[f"{self.name}.blocks.sva"] = storage.write_array(
            self.dir / f"{self.name}.blocks.sva", starts, dtype
        )
        return entries


class BlockReader:
    """Reads byte ranges of a stream written by `BlockWriter`, decompressing only their blocks."""

    def __init__(
        self, blob: storage.ArrayFile, starts: np.ndarray, length: int, label: str, shift: int
    ) -> None:
        """`starts`: where each block starts in `blob` (and the end); `length`: the stream's
        uncompressed length (its offsets file's last entry); `label`: the file named in errors;
        `shift`: blocks are 2^shift bytes of the stream."""
        self.blob, self.starts, self.length, self.label, self.shift = (
            blob,
            starts,
            length,
            label,
            shift,
        )
        if len(starts) - 1 != -(-length >> shift) or (len(starts) and int(starts[-1]) != len(blob)):
            raise IndexDamagedError(label, "block table disagrees with the offsets")
        self.block = weak.cached_method(self, "_block", max(1, CACHED_BYTES >> shift))

    def _block(self, i: int) -> bytes:
        packed = self.blob[int(self.starts[i]) : int(self.starts[i + 1])].tobytes()
        want = min(self.length - (i << self.shift), 1 << self.shift)
        try:
            raw = lz4.block.decompress(packed, uncompressed_size=want)
        except lz4.block.LZ4BlockError:
            raw = b""
        if len(raw) != want:
            raise IndexDamagedError(
                self.label, f"block {i} does not decompress to its {want} bytes"
            )
        return raw

    def read(self, a: int, b: int) -> bytes:
        """Bytes a..b of the uncompressed stream."""
        if not 0 <= a <= b <= self.length:
            raise IndexDamagedError(
                self.label, f"record bytes {a}..{b} lie outside the stream's {self.length}"
            )
        if a == b:
            return b""
        first, last = a >> self.shift, (b - 1) >> self.shift
        base = first << self.shift
        if first == last:
            return self.block(first)[a - base : b - base]
        return b"".join(self.block(i) for i in range(first, last + 1))[a - base : b - base]


class RawStream:
    """A stream stored uncompressed (formats 2 and 3): the same `read` as `BlockReader`."""

    def __init__(self, blob: storage.ArrayFile) -> None:
        self.blob = blob

    def read(self, a: int, b: int) -> bytes:
        return self.blob[a:b].tobytes()
