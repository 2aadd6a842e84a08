"""On-disk containers: checksummed array files and the format constants (the manifest and the commit
protocol are in `sieve.engine.format.commits`).

Every array file is `header (64 bytes) + payload + block table + footer (8 bytes)`; the header names
the format, version, dtype and shape and ends with its own CRC32, the block table holds the CRC32 of
every 16 KiB block of the payload (each verified the first time a read touches it, see `ArrayFile`),
the footer the CRC32 of the whole payload. See docs/index-format.md.
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from sieve.common import files
from sieve.engine.format.distinct import distinct
from sieve.errors import IndexDamagedError

try:
    # The same CRC-32 as zlib's, computed with carry-less multiplication: about 15 times zlib's
    # speed, which makes verifying a block on its first read cost less than faulting its pages in.
    from zlib_ng.zlib_ng import crc32
except ImportError:  # no wheel for this platform: the same checksums, more slowly
    from zlib import crc32

FORMAT_NAME = "sieve-index"
# 3: a commit point (gen-N) lists segments (docs/index-format.md); 4: segments also
# hold dense rows and a compressed document store (a version 3 segment is read without them);
# 5: positions in blocks; 6: the rest postings of terms with dense rows; 7: postings' document
# ids in two bytes (sieve.engine.format.docids); 8: sharded commit points (segments of format 7); 9:
# positions' blocks packed with exceptions
# (sieve.engine.format.positions) and postings' masks and counts
# coded in one byte (sieve.engine.format.attributes), in commits sharded or not.
FORMAT_VERSION = 9
# A sharded index's commit point is written at least at this version: an older sieve must refuse
# it, not read it in the wrong order.
SHARDED_VERSION = 8
# 2: a gen-N directory is one segment, read as a commit of that segment alone
SUPPORTED_VERSIONS = (2, 3, 4, 5, 6, 7, 8, 9)
ARRAY_VERSION = 2  # the array file layout, unchanged since format 2

ARRAY_MAGIC = b"SIEVEARR"
FOOTER_MAGIC = b"SVEND\x00\x00\x00"
# magic, version, header size, dtype, ndim, shape0,
# shape1, payload bytes, block shift, block table CRC32
HEADER = struct.Struct("<8sHH8sBxxxQQQBxxxI")
HEADER_SIZE = 64
FOOTER = struct.Struct("<I4s")  # crc32, magic
FOOTER_SIZE = FOOTER.size
CURRENT = "CURRENT"
MANIFEST = "manifest.json"
# The most bytes read of CURRENT and of a manifest (what sieve writes is far smaller): a damaged
# index cannot make opening it read without end.
CURRENT_MAX_BYTES = 4096
MANIFEST_MAX_BYTES = 64 << 20
# Files at most this big are checksummed when an index is opened; `sieve check` verifies all.
VERIFY_ON_OPEN_BYTES = 1 << 20
# Payload blocks of 16 KiB: one costs ~4 us to verify (CRC32 runs at ~4 GB/s), a table entry is
# 1/4096 of the payload, and a short postings list touches one block per file (64 KiB blocks
# cost first reads ~10% more on bench_checksums.py, 4 KiB ones no less than 16 KiB).
BLOCK_SHIFT = 14
# A gather (`a[int_array]`) from a file up to this size verifies the whole file once (~8 ms at
# 32 MiB) instead of testing its blocks on every call: the explanation's gathers from the unit
# and document tables come a dozen per search, and their per-call tests cost more than that.
GATHER_WHOLE_BYTES = 32 << 20


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ArrayWriter:
    """Streams a 1-d (or 2-d with fixed columns) array file; `append` chunks, `close` seals it."""

    def __init__(self, path: Path, dtype: Any, columns: int = 0) -> None:
        self.path = path
        self.dtype = np.dtype(dtype)
        self.columns = columns
        self.rows = 0
        self.crc = 0
        self.nbytes = 0
        self._blocks = array("I")  # CRC32 of each full block written
        self._block_crc = 0
        self._block_fill = 0
        self._fh: BinaryIO = open(path, "wb")  # noqa: SIM115 -- the writer outlives this call: close() closes it
        self._fh.write(b"\0" * HEADER_SIZE)

    def append(self, data: Any) -> None:
        arr = np.ascontiguousarray(data, dtype=self.dtype)
        if arr.size:  # an empty array (an index of no documents) has no bytes, and no view to cast
            self._write(arr.data.cast("B"))
        self.rows += arr.shape[0] if arr.ndim else 1

    def append_bytes(self, raw: bytes) -> None:
        self._write(memoryview(raw))
        self.rows += len(raw)

    def _write(self, raw: memoryview) -> None:
        self._fh.write(raw)
        self.crc = crc32(raw, self.crc)
        self.nbytes += raw.nbytes
        size, at = 1 << BLOCK_SHIFT, 0
        while at < raw.nbytes:
            take = min(raw.nbytes - at, size - self._block_fill)
            self._block_crc = crc32(raw[at : at + take], self._block_crc)
            self._block_fill += take
            at += take
            if self._block_fill == size:
                self._blocks.append(self._block_crc)
                self._block_crc = self._block_fill = 0

    def close(self) -> dict[str, int]:
        fh = self._fh
        if self._block_fill:
            self._blocks.append(self._block_crc)
        table = (
            self._blocks.tobytes()
            if sys.byteorder == "little"
            else np.asarray(self._blocks, dtype="<u4").tobytes()
        )
        fh.write(table)
        fh.write(FOOTER.pack(self.crc, FOOTER_MAGIC[:4]))
        ndim = 2 if self.columns else 1
        shape0 = self.rows
        fh.seek(0)
        header = HEADER.pack(
            ARRAY_MAGIC,
            ARRAY_VERSION,
            HEADER_SIZE,
            self.dtype.str.encode().ljust(8, b"\0"),
            ndim,
            shape0,
            self.columns,
            self.nbytes,
            BLOCK_SHIFT,
            crc32(table),
        )
        fh.write(_seal_header(header))
        fh.flush()
        os.fsync(fh.fileno())
        fh.close()
        return {"size": HEADER_SIZE + self.nbytes + len(table) + FOOTER_SIZE, "crc32": self.crc}


def _seal_header(header: bytes) -> bytes:
    """Pad the header and append its own CRC32, so every header byte is covered."""
    body = header.ljust(HEADER_SIZE - 4, b"\0")
    return body + struct.pack("<I", crc32(body))


def write_array(path: Path, data: Any, dtype: Any = None) -> dict[str, int]:
    """Write one array file; returns its manifest entry (size, crc32)."""
    arr = np.asarray(data, dtype=dtype)
    w = ArrayWriter(path, arr.dtype, columns=arr.shape[1] if arr.ndim == 2 else 0)
    w.append(arr)
    return w.close()


def _blocks(nbytes: int, shift: int) -> int:
    return (nbytes + (1 << shift) - 1) >> shift


class ArrayFile:
    """A memory-mapped array file whose payload blocks are verified the first time a read touches
    them.

    Indexing (`a[i]`, `a[lo:hi]`, `a[int_array]`) checks only the blocks it reads; anything that
    needs the whole array (`np.asarray(a)`, `np.searchsorted(a, ...)`, arithmetic) verifies every
    block once. Verified blocks are remembered, so a warm reader pays one flag test per read. A
    block that fails raises `IndexDamagedError` before any of its bytes reach a caller: damage is
    found before it can change an answer. Safe to share between threads (a block verified twice
    is harmless).
    """

    __slots__ = (
        "_left",
        "_ok",
        "_okv",
        "_raw",
        "_row",
        "_shift",
        "_straddle",
        "_table",
        "a",
        "dtype",
        "name",
        "ndim",
        "on_verified",
        "shape",
    )

    def __init__(self, arr: np.ndarray, name: str, table: np.ndarray, shift: int) -> None:
        self.a, self.name, self.dtype, self.shape, self.ndim = (
            arr,
            name,
            arr.dtype,
            arr.shape,
            arr.ndim,
        )
        self._raw = arr.reshape(-1).data.cast("B") if arr.size else memoryview(b"")
        self._table = table.tolist()
        self._shift = shift
        self._row = arr.itemsize * (arr.shape[1] if arr.ndim == 2 else 1)
        self._ok = bytearray(len(self._table))  # 1 = verified
        self._okv = np.frombuffer(self._ok, dtype=np.uint8)  # the same flags, for vector tests
        self._left = len(self._table)
        self._straddle = (1 << shift) % self._row != 0  # can one row span two blocks?
        # Called with the plain array once every block is verified: a holder may then read it
        # directly, without this wrapper's per-read test.
        self.on_verified: Callable[[np.ndarray], None] | None = None

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def verified(self) -> bool:
        """Whether every block has been verified."""
        return not self._left

    def _verify(self, b0: int, b1: int) -> None:
        """Verify blocks b0..b1 (inclusive) that are not yet verified."""
        ok, shift, raw, table = self._ok, self._shift, self._raw, self._table
        b = ok.find(0, b0, b1 + 1)
        while b != -1:
            if crc32(raw[b << shift : (b + 1) << shift]) != table[b]:
                raise IndexDamagedError(
                    self.name,
                    f"checksum mismatch in bytes {b << shift}..{min(len(raw), (b + 1) << shift)} "
                    "of the payload (the contents are damaged)",
                )
            ok[b] = 1
            self._left -= 1
            b = ok.find(0, b + 1, b1 + 1)
        if not self._left and self.on_verified is not None:
            self.on_verified(self.a)

    def _rows(self, lo: int, hi: int) -> None:
        """Verify the blocks holding rows lo..hi (exclusive)."""
        if hi > lo:
            b0, b1 = (lo * self._row) >> self._shift, (hi * self._row - 1) >> self._shift
            if b0 != b1 or not self._ok[b0]:
                self._verify(b0, b1)

    def _all_verified(self, lo: int, hi: int) -> bool:
        """Whether rows lo..hi (inclusive, both in range) lie in verified blocks only."""
        if lo < 0 or hi >= self.shape[0]:
            return False
        return (
            self._ok.find(
                0, (lo * self._row) >> self._shift, (((hi + 1) * self._row - 1) >> self._shift) + 1
            )
            == -1
        )

    def whole(self) -> np.ndarray:
        """The array, every block verified."""
        if self._left:
            self._verify(0, len(self._ok) - 1)
        return self.a

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.whole()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __getitem__(self, key: Any) -> Any:
        if not self._left:  # every block verified: a plain read
            return self.a[key]
        if type(key) is slice:
            lo, hi, step = key.indices(self.shape[0])
            if step < 0:
                lo, hi = hi + 1, lo + 1
            self._rows(lo, hi)
        elif isinstance(key, (int, np.integer)):
            i = int(key)
            if i < 0:
                i += self.shape[0]
            if 0 <= i < self.shape[0]:
                self._rows(i, i + 1)
        else:
            idx = np.asarray(key)
            if (
                idx.dtype.kind not in "iu"
                or idx.ndim != 1
                or self._raw.nbytes <= GATHER_WHOLE_BYTES
            ):
                self.whole()
            elif len(idx) and self._all_verified(int(idx.min()), int(idx.max())):
                # a gather within verified blocks (most, once an
                # index has served a while): no per-row check
                pass
            elif len(idx):
                rows = idx.astype(np.int64) % max(self.shape[0], 1)
                blocks = (rows * self._row) >> self._shift
                if self._straddle:
                    blocks = np.concatenate([blocks, ((rows + 1) * self._row - 1) >> self._shift])
                if not self._okv[blocks].all():
                    for b in distinct(blocks[self._okv[blocks] == 0]).tolist():
                        self._verify(b, b)
        return self.a[key]

    def verify(self, payload_crc: int) -> None:
        """Every byte: each block against the table and the whole payload against `payload_crc`."""
        self._ok[:] = bytes(len(self._ok))
        self._left = len(self._ok)
        self.whole()
        if crc32(self._raw) != payload_crc:
            raise IndexDamagedError(self.name, "checksum mismatch (the contents are damaged)")


def file_problem(name: str, e: OSError) -> IndexDamagedError:
    """An index file that cannot be opened or read, as damage naming it."""
    if isinstance(e, (FileNotFoundError, NotADirectoryError)):
        return IndexDamagedError(name, "file is missing")
    return IndexDamagedError(name, files.reason(e))


def read_index_file(path: Path, name: str, limit: int = MANIFEST_MAX_BYTES) -> bytes:
    """The bytes of one of an index's small files (a manifest), or IndexDamagedError naming it:
    missing, not a regular file (never opened: a FIFO would block), unreadable, or too large."""
    try:
        return files.read_regular(path, limit)
    except OSError as e:
        raise file_problem(name, e) from None


def open_array(path: Path, name: str, entry: dict[str, int], verify: bool = False) -> ArrayFile:
    """Memory-map an array file after checking its header, block table and size, and (if asked
    or small) every byte of its payload. Only a regular file is opened, and what is mapped is
    the file whose size was checked."""
    try:
        fh = files.open_binary(path)
    except OSError as e:
        raise file_problem(name, e) from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size != entry["size"]:
            raise IndexDamagedError(
                name,
                f"size is {size} bytes, the manifest says "
                f"{entry['size']} (truncated or overwritten)",
            )
        head = fh.read(HEADER_SIZE)
        if len(head) < HEADER_SIZE or _seal_header(head[: HEADER.size]) != head:
            raise IndexDamagedError(name, "bad header (damaged, or not a sieve array file)")
        try:
            magic, version, hsize, dtype_raw, ndim, shape0, shape1, nbytes, shift, table_crc = (
                HEADER.unpack(head[: HEADER.size])
            )
        except struct.error:
            raise IndexDamagedError(name, "header is unreadable") from None
        if magic != ARRAY_MAGIC or hsize != HEADER_SIZE:
            raise IndexDamagedError(name, "bad header (not a sieve array file)")
        if version != ARRAY_VERSION:
            raise IndexDamagedError(
                name, f"array format version {version} does not match the manifest"
            )
        try:
            dtype = np.dtype(dtype_raw.rstrip(b"\0").decode("ascii"))
        except (TypeError, UnicodeDecodeError):
            raise IndexDamagedError(name, "bad dtype in header") from None
        if dtype.hasobject or ndim not in (1, 2) or not 9 <= shift <= 30:
            raise IndexDamagedError(name, "bad dtype, shape or block size in header")
        shape = (shape0, shape1) if ndim == 2 else (shape0,)
        n_blocks = _blocks(nbytes, shift)
        if (
            HEADER_SIZE + nbytes + 4 * n_blocks + FOOTER_SIZE != size
            or int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != nbytes
        ):
            raise IndexDamagedError(name, "header sizes disagree with the file size")
        fh.seek(HEADER_SIZE + nbytes)
        raw_table = fh.read(4 * n_blocks)
        if crc32(raw_table) != table_crc:
            raise IndexDamagedError(name, "block checksum table is damaged")
        crc, fmagic = FOOTER.unpack(fh.read(FOOTER_SIZE))
        if fmagic != FOOTER_MAGIC[:4] or crc != entry["crc32"]:
            raise IndexDamagedError(name, "bad footer or checksum does not match the manifest")
        table = np.frombuffer(raw_table, dtype="<u4")
        if nbytes == 0:
            arr = np.zeros(shape, dtype=dtype)
        else:
            try:
                mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            # ValueError: the file was emptied since its size was read
            except (OSError, ValueError) as e:
                raise IndexDamagedError(name, f"cannot be mapped ({e})") from None
            # A plain ndarray over the map (np.memmap's
            # subclass makes every slice several times slower).
            arr = np.frombuffer(
                mapped, dtype=dtype, count=int(np.prod(shape, dtype=np.int64)), offset=HEADER_SIZE
            ).reshape(shape)
    out = ArrayFile(arr, name, table, shift)
    if verify or nbytes <= VERIFY_ON_OPEN_BYTES:
        out.verify(crc)
    return out


def verify_array(path: Path, name: str, entry: dict[str, int]) -> None:
    """Check every byte of one array file against its checksums."""
    open_array(path, name, entry, verify=True)


# ---------------------------------------------------------------- manifest
