"""On-disk containers: checksummed array files, the manifest, and the generation commit protocol.

Every array file is `header (64 bytes) + payload + footer (8 bytes)`; the header names the format,
version, dtype and shape and ends with its own CRC32, the footer holds the CRC32 of the payload. See docs/index-format.md.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import shutil
import struct
import tempfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from sieve.errors import IndexDamagedError, IndexFormatError, IndexNotFoundError, IndexExistsError

FORMAT_NAME = "sieve-index"
FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)

ARRAY_MAGIC = b"SIEVEARR"
FOOTER_MAGIC = b"SVEND\x00\x00\x00"
HEADER = struct.Struct("<8sHH8sBxxxQQQ")  # magic, version, header size, dtype, ndim, shape0, shape1, payload bytes
HEADER_SIZE = 64
FOOTER = struct.Struct("<I4s")  # crc32, magic
FOOTER_SIZE = FOOTER.size
CURRENT = "CURRENT"
_CURRENT_RE = re.compile(rb"(gen-[0-9]{6,})\n")
MANIFEST = "manifest.json"
# Files at most this big are checksummed when an index is opened; `sieve check` verifies all.
VERIFY_ON_OPEN_BYTES = 1 << 20


def _fsync_dir(path: Path) -> None:
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
        self._fh: BinaryIO = open(path, "wb")
        self._fh.write(b"\0" * HEADER_SIZE)

    def append(self, data: Any) -> None:
        arr = np.ascontiguousarray(data, dtype=self.dtype)
        raw = memoryview(arr).cast("B")
        self._fh.write(raw)
        self.crc = zlib.crc32(raw, self.crc)
        self.nbytes += raw.nbytes
        self.rows += arr.shape[0] if arr.ndim else 1

    def append_bytes(self, raw: bytes) -> None:
        self._fh.write(raw)
        self.crc = zlib.crc32(raw, self.crc)
        self.nbytes += len(raw)
        self.rows += len(raw)

    def close(self) -> dict[str, int]:
        fh = self._fh
        fh.write(FOOTER.pack(self.crc, FOOTER_MAGIC[:4]))
        ndim = 2 if self.columns else 1
        shape0 = self.rows
        fh.seek(0)
        header = HEADER.pack(ARRAY_MAGIC, FORMAT_VERSION, HEADER_SIZE, self.dtype.str.encode().ljust(8, b"\0"), ndim, shape0, self.columns, self.nbytes)
        fh.write(_seal_header(header))
        fh.flush()
        os.fsync(fh.fileno())
        fh.close()
        return {"size": HEADER_SIZE + self.nbytes + FOOTER_SIZE, "crc32": self.crc}


def _seal_header(header: bytes) -> bytes:
    """Pad the header and append its own CRC32, so every header byte is covered."""
    body = header.ljust(HEADER_SIZE - 4, b"\0")
    return body + struct.pack("<I", zlib.crc32(body))


def write_array(path: Path, data: Any, dtype: Any = None) -> dict[str, int]:
    """Write one array file; returns its manifest entry (size, crc32)."""
    arr = np.asarray(data, dtype=dtype)
    w = ArrayWriter(path, arr.dtype, columns=arr.shape[1] if arr.ndim == 2 else 0)
    w.append(arr)
    return w.close()


def open_array(path: Path, name: str, entry: dict[str, int], verify: bool = False) -> np.ndarray:
    """Memory-map an array file after checking its header, size and (if asked or small) checksum."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise IndexDamagedError(name, "file is missing") from None
    if size != entry["size"]:
        raise IndexDamagedError(name, f"size is {size} bytes, the manifest says {entry['size']} (truncated or overwritten)")
    with open(path, "rb") as fh:
        head = fh.read(HEADER_SIZE)
        if len(head) < HEADER_SIZE or _seal_header(head[: HEADER.size]) != head:
            raise IndexDamagedError(name, "bad header (damaged, or not a sieve array file)")
        try:
            magic, version, hsize, dtype_raw, ndim, shape0, shape1, nbytes = HEADER.unpack(head[: HEADER.size])
        except struct.error:
            raise IndexDamagedError(name, "header is unreadable") from None
        if magic != ARRAY_MAGIC or hsize != HEADER_SIZE:
            raise IndexDamagedError(name, "bad header (not a sieve array file)")
        if version != FORMAT_VERSION:
            raise IndexDamagedError(name, f"array format version {version} does not match the manifest")
        try:
            dtype = np.dtype(dtype_raw.rstrip(b"\0").decode("ascii"))
        except (TypeError, UnicodeDecodeError):
            raise IndexDamagedError(name, "bad dtype in header") from None
        if dtype.hasobject or ndim not in (1, 2):
            raise IndexDamagedError(name, "bad dtype or shape in header")
        shape = (shape0, shape1) if ndim == 2 else (shape0,)
        if HEADER_SIZE + nbytes + FOOTER_SIZE != size or int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != nbytes:
            raise IndexDamagedError(name, "header sizes disagree with the file size")
        fh.seek(size - FOOTER_SIZE)
        crc, fmagic = FOOTER.unpack(fh.read(FOOTER_SIZE))
        if fmagic != FOOTER_MAGIC[:4] or crc != entry["crc32"]:
            raise IndexDamagedError(name, "bad footer or checksum does not match the manifest")
    if nbytes == 0:
        return np.zeros(shape, dtype=dtype)
    with open(path, "rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    # A plain ndarray over the map (np.memmap's subclass makes every slice several times slower).
    arr = np.frombuffer(mapped, dtype=dtype, count=int(np.prod(shape, dtype=np.int64)), offset=HEADER_SIZE).reshape(shape)
    if verify or nbytes <= VERIFY_ON_OPEN_BYTES:
        if zlib.crc32(memoryview(arr).cast("B")) != crc:
            raise IndexDamagedError(name, "checksum mismatch (the contents are damaged)")
    return arr


def verify_array(path: Path, name: str, entry: dict[str, int]) -> None:
    """Check every byte of one array file against its checksum."""
    open_array(path, name, entry, verify=True)


# ---------------------------------------------------------------- manifest


def _manifest_crc(body: dict[str, Any]) -> int:
    return zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def _manifest_bytes(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, indent=1, sort_keys=True).encode()


def write_manifest(gen_dir: Path, body: dict[str, Any]) -> None:
    doc = dict(body, checksum=_manifest_crc(body))
    path = gen_dir / MANIFEST
    with open(path, "wb") as fh:
        fh.write(_manifest_bytes(doc))
        fh.flush()
        os.fsync(fh.fileno())


def read_manifest(gen_dir: Path) -> dict[str, Any]:
    path = gen_dir / MANIFEST
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise IndexDamagedError(MANIFEST, "file is missing") from None
    try:
        doc = json.loads(raw)
        if not isinstance(doc, dict):
            raise ValueError
    except (ValueError, UnicodeDecodeError):
        raise IndexDamagedError(MANIFEST, "not valid JSON (damaged or truncated)") from None
    checksum = doc.pop("checksum", None)
    if doc.get("format") != FORMAT_NAME:
        raise IndexDamagedError(MANIFEST, f"format is {doc.get('format')!r}, not {FORMAT_NAME!r}")
    # The checksum comes before the version: every format version computes it the same way, so a
    # damaged version number reads as damage, not as a version mismatch.
    if checksum != _manifest_crc(doc):
        raise IndexDamagedError(MANIFEST, "checksum mismatch (the contents are damaged)")
    version = doc.get("version")
    if not isinstance(version, int):
        raise IndexDamagedError(MANIFEST, f"version {version!r} is not a number")
    if version not in SUPPORTED_VERSIONS:
        raise IndexFormatError(str(gen_dir), version, SUPPORTED_VERSIONS)
    # Byte for byte what write_manifest writes: no change the checksum cannot see (a \u00fc
    # escape written \u00FC, say) goes unnoticed either.
    if _manifest_bytes(dict(doc, checksum=checksum)) != raw:
        raise IndexDamagedError(MANIFEST, "not in the form sieve writes (damaged)")
    return doc


# ---------------------------------------------------------------- generations


def current_generation(root: Path) -> Path:
    """The generation directory CURRENT points at."""
    if not root.exists():
        raise IndexNotFoundError(str(root), "no such index directory")
    if not root.is_dir():
        raise IndexNotFoundError(str(root), "not a directory")
    try:
        raw = (root / CURRENT).read_bytes()
    except FileNotFoundError:
        raise IndexNotFoundError(str(root), "not a sieve index (no CURRENT file)") from None
    # Exactly what _write_current writes, so no damaged byte is let through (not even a newline).
    m = _CURRENT_RE.fullmatch(raw)
    if m is None:
        raise IndexDamagedError(CURRENT, f"holds {raw[:40]!r}, not a generation name such as 'gen-000001'")
    name = m.group(1).decode("ascii")
    if not (root / name).is_dir():
        raise IndexDamagedError(CURRENT, f"points at {name!r}, which is not a generation directory")
    return root / name


def _generation_number(name: str) -> int:
    try:
        return int(name[4:]) if name.startswith("gen-") else -1
    except ValueError:
        return -1


class Commit:
    """Writes a new generation beside any existing one and switches CURRENT to it atomically.

    A fresh index is built in a hidden sibling directory renamed into place at the end, so the
    target either does not exist or is complete. Over an existing index, the new `gen-N` directory
    is written under a temporary name and CURRENT is replaced with `os.replace`: readers see the old
    complete generation or the new one, never neither (Lucene's segments_N idea).
    """

    def __init__(self, root: str | os.PathLike, force: bool = False) -> None:
        self.root = Path(root)
        self.fresh = not self.root.exists()
        if not self.fresh:
            if not self.root.is_dir():
                raise IndexNotFoundError(str(self.root), "exists and is not a directory")
            is_index = (self.root / CURRENT).exists()
            if not force:
                what = "an index" if is_index else "a directory"
                raise IndexExistsError(str(self.root), f"already exists ({what}); use --force (force=True) to replace it")
            if not is_index and any(self.root.iterdir()):
                raise IndexExistsError(str(self.root), "exists, is not empty and is not a sieve index; refusing to replace it")
        parent = self.root.parent
        parent.mkdir(parents=True, exist_ok=True)
        if self.fresh:
            self.stage = Path(tempfile.mkdtemp(prefix=f".{self.root.name}.building-", dir=parent))
            self.number = 1
            self.gen_dir = self.stage / f"gen-{self.number:06d}"
        else:
            existing = [_generation_number(p.name) for p in self.root.iterdir()]
            self.number = max([0] + existing) + 1
            self.stage = Path(tempfile.mkdtemp(prefix=f".gen-{self.number:06d}.building-", dir=self.root))
            self.gen_dir = self.stage
        try:
            self.gen_dir.mkdir(exist_ok=True)
        except BaseException:  # build_index only aborts a Commit it has: do not leak the stage
            self.abort()
            raise

    def abort(self) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)

    def commit(self) -> Path:
        _fsync_dir(self.gen_dir)
        name = f"gen-{self.number:06d}"
        if self.fresh:
            _write_current(self.stage, name)
            os.rename(self.stage, self.root)
            _fsync_dir(self.root.parent)
        else:
            final = self.root / name
            os.rename(self.gen_dir, final)
            _write_current(self.root, name)
            for p in self.root.iterdir():  # older generations and stale temporaries; nothing else
                stale = _generation_number(p.name) >= 0 or (p.name.startswith(".gen-") and ".building-" in p.name)
                if p.name != name and p.is_dir() and stale:
                    shutil.rmtree(p, ignore_errors=True)
        return self.root / name


def _write_current(root: Path, name: str) -> None:
    tmp = root / (CURRENT + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(name + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, root / CURRENT)
    _fsync_dir(root)
