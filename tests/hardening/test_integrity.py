"""Every index file is verifiable: flipped bits and truncations are found, and damage that open
does not read is never worse than a sieve error (docs/index-format.md, "Integrity").

Detection is exhaustive at the storage level (every byte of every small file) and sampled through
`open_index`, `Index.check()` and `sieve check`. Seeded throughout.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest

import sieve
from sieve.cli.main import main
from sieve.engine.format import commits, storage
from sieve.engine.segment.files import WRITTEN
from sieve.errors import IndexDamagedError, SieveError

from .damage import damage, exercise, payload_end
from .synth import HashEncoder, queries, records

HEADER_FIELDS = {"magic": 0, "version": 8, "header size": 10, "dtype": 12, "ndim": 20, "shape0": 24, "shape1": 32, "payload bytes": 40, "block shift": 48, "table crc": 52, "padding": 56, "header crc": 60}


# Every open reads these whole (the two dictionaries' samples, BM25's length norms), so it verifies them.
READ_WHOLE_ON_OPEN = {"terms.blob.sva", "terms.off.sva", "ids.blob.sva", "ids.off.sva", "doc.len.sva", "post.bits.ptr.sva", "post.bits.field.sva", "post.rest.ptr.sva", "post.any.terms.sva"}


def _gen(index: Path) -> Path:
    """The commit point's directory (its manifest lists the segments)."""
    return commits.current_commit(index)


def _seg(index: Path) -> Path:
    """The directory of the index's one segment (where the array files are)."""
    return index / commits.read_manifest(_gen(index))["segments"][0]["name"]


def _entry(index: Path, name: str) -> dict[str, int]:
    return commits.read_manifest(_seg(index))["files"][name]


def _flip(path: Path, offset: int, bit: int) -> bytes:
    """Flip one bit in place; returns the original bytes."""
    data = path.read_bytes()
    damaged = bytearray(data)
    damaged[offset] ^= 1 << bit
    path.write_bytes(bytes(damaged))
    return data


def _sample_offsets(data: bytes, rng: random.Random, payload: int = 2) -> list[tuple[str, int]]:
    """(kind, offset): the main header fields, the payload's ends and a few bytes, the block table's
    ends, both footer fields."""
    size, end = len(data), payload_end(data)
    out = [(f"header {k}", HEADER_FIELDS[k]) for k in ("magic", "version", "dtype", "shape0", "payload bytes", "block shift", "table crc", "header crc")]
    if end > storage.HEADER_SIZE:
        body = range(storage.HEADER_SIZE, end)
        out += [("payload", o) for o in sorted({body[0], body[-1], *rng.sample(body, min(payload, len(body)))})]
        out += [("table", o) for o in sorted({end, size - storage.FOOTER_SIZE - 1})]
    out += [("footer", size - storage.FOOTER_SIZE + i) for i in (0, 3, 4, 7)]  # CRC and magic, both ends
    return out


# ------------------------------------------------------------------ array files: exhaustive


def test_every_bit_flip_of_every_array_file_frame_is_detected(damaged_copy: Path) -> None:
    """All 8 bits of every header and footer byte of every file, and one seeded bit in each of
    64 payload bytes (CRC32 finds every single-bit error; `benchmarks/bench_integrity.py` flips
    every bit of every byte)."""
    rng = random.Random(11)
    gen, flips = _seg(damaged_copy), 0
    for name in WRITTEN:
        path, entry = gen / name, _entry(damaged_copy, name)
        size = path.stat().st_size
        payload = range(storage.HEADER_SIZE, size - storage.FOOTER_SIZE)
        offsets = [*range(storage.HEADER_SIZE), *range(size - storage.FOOTER_SIZE, size)]
        targets = [(o, b) for o in offsets for b in range(8)] + [(o, rng.randrange(8)) for o in rng.sample(payload, min(64, len(payload)))]
        fd = os.open(path, os.O_RDWR)
        try:
            for offset, bit in targets:
                byte = os.pread(fd, 1, offset)
                os.pwrite(fd, bytes([byte[0] ^ (1 << bit)]), offset)
                with pytest.raises(IndexDamagedError) as info:
                    storage.verify_array(path, name, entry)
                assert info.value.file == name, (name, offset, bit)
                os.pwrite(fd, byte, offset)
                flips += 1
        finally:
            os.close(fd)
        storage.verify_array(path, name, entry)  # restored
    assert flips > 30 * 72 * 8


@pytest.mark.parametrize("name", WRITTEN)
def test_flips_are_found_by_open_check_and_the_cli(damaged_copy: Path, name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(name)
    path = _seg(damaged_copy) / name
    cli_done: set[str] = set()
    for kind, offset in _sample_offsets(path.read_bytes(), rng):
        original = _flip(path, offset, rng.randrange(8))
        # A small file is checksummed when the index is opened.
        with pytest.raises(IndexDamagedError) as info:
            sieve.open_index(damaged_copy)
        assert info.value.file == name, (kind, offset)
        # As if it were large: open reads the header and footer only, check reads every byte.
        with monkeypatch.context() as m:
            m.setattr(storage, "VERIFY_ON_OPEN_BYTES", 0)
            try:
                index = sieve.open_index(damaged_copy)
            except IndexDamagedError as e:
                assert e.file == name and (kind != "payload" or name in READ_WHOLE_ON_OPEN), (kind, offset)
            else:
                assert kind == "payload" and name not in READ_WHOLE_ON_OPEN, (kind, offset)
                with pytest.raises(IndexDamagedError) as info:
                    index.check()
                assert info.value.file == name
        if kind.split()[0] not in cli_done:  # the CLI once per region: header, payload, footer
            cli_done.add(kind.split()[0])
            assert main(["check", str(damaged_copy)]) == 1
            err = capsys.readouterr().err
            assert err.startswith(f"sieve: index damaged: {name}: ") and "Traceback" not in err, err
        path.write_bytes(original)
    assert sieve.open_index(damaged_copy).check() == list(WRITTEN)


@pytest.mark.parametrize("name", WRITTEN)
def test_truncation_is_found_at_every_interesting_length(damaged_copy: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "VERIFY_ON_OPEN_BYTES", 0)  # size checks alone must catch it
    path = _seg(damaged_copy) / name
    data = path.read_bytes()
    size = len(data)
    for length in sorted({0, 1, 8, 63, 64, 65, size // 2, size - 9, size - 8, size - 1} - {size}):
        path.write_bytes(data[: max(length, 0)])
        with pytest.raises(IndexDamagedError) as info:
            sieve.open_index(damaged_copy)
        assert info.value.file == name and "truncated" in info.value.reason
    path.write_bytes(data + b"\0")  # grown is as wrong as truncated
    with pytest.raises(IndexDamagedError):
        sieve.open_index(damaged_copy)
    path.unlink()
    with pytest.raises(IndexDamagedError) as info:
        sieve.open_index(damaged_copy)
    assert str(info.value) == f"index damaged: {name}: file is missing"


# ------------------------------------------------------------------ manifest.json and CURRENT


def test_every_bit_flip_and_truncation_of_the_manifest_is_detected(damaged_copy: Path) -> None:
    gen = _gen(damaged_copy)
    path = gen / storage.MANIFEST
    data = path.read_bytes()
    assert b"\\u00fc" in data  # the non-ASCII corpus path is escaped
    rng = random.Random(13)
    escapes = {i for m in re.finditer(rb"\\u[0-9a-f]{4}", data) for i in range(m.start(), m.end())}
    every_bit = escapes | {i for i, b in enumerate(data) if b in b' \n{}[]:,"' and i % 4 == 0}
    missed = []
    fd = os.open(path, os.O_RDWR)  # flip in place: thousands of rewrites of the file are slow under load
    try:
        for offset in range(len(data)):
            for bit in range(8) if offset in every_bit else [rng.randrange(8)]:
                os.pwrite(fd, bytes([data[offset] ^ (1 << bit)]), offset)
                try:
                    commits.read_manifest(gen)
                except IndexDamagedError as e:
                    assert e.file == storage.MANIFEST
                else:
                    missed.append((offset, bit, data[offset : offset + 1]))
            os.pwrite(fd, data[offset : offset + 1], offset)
    finally:
        os.close(fd)
    for length in range(len(data)):
        path.write_bytes(data[:length])
        with pytest.raises(IndexDamagedError) as info:
            commits.read_manifest(gen)
        assert info.value.file == storage.MANIFEST
    path.write_bytes(data)
    assert missed == []


def test_manifest_damage_through_open_and_the_cli(damaged_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _gen(damaged_copy) / storage.MANIFEST
    data = path.read_bytes()
    rng = random.Random(5)
    version_at = data.index(b'"version": ') + len(b'"version": ')
    for offset in sorted({0, version_at, len(data) - 1, *rng.sample(range(len(data)), 20)}):
        for bit in range(8) if offset == version_at else [rng.randrange(8)]:
            damaged = bytearray(data)
            damaged[offset] ^= 1 << bit
            path.write_bytes(bytes(damaged))
            with pytest.raises(IndexDamagedError) as info:  # never IndexFormatError for damage
                sieve.open_index(damaged_copy)
            assert info.value.file == storage.MANIFEST
            assert main(["check", str(damaged_copy)]) == 1
            assert capsys.readouterr().err.startswith("sieve: index damaged: manifest.json: ")
    path.write_bytes(data)


def test_every_bit_flip_and_truncation_of_current_is_detected(damaged_copy: Path) -> None:
    path = damaged_copy / storage.CURRENT
    data = path.read_bytes()
    assert data == b"gen-000001\n"
    for offset in range(len(data)):
        for bit in range(8):
            damaged = bytearray(data)
            damaged[offset] ^= 1 << bit
            path.write_bytes(bytes(damaged))
            with pytest.raises(IndexDamagedError) as info:
                sieve.open_index(damaged_copy)
            assert info.value.file == storage.CURRENT, (offset, bit, bytes(damaged))
    for length in range(len(data)):
        path.write_bytes(data[:length])
        with pytest.raises(IndexDamagedError) as info:
            sieve.open_index(damaged_copy)
        assert info.value.file == storage.CURRENT, length
    path.write_bytes(data)


def test_check_rereads_manifest_and_current(damaged_copy: Path) -> None:
    index = sieve.open_index(damaged_copy)
    path = _gen(damaged_copy) / storage.MANIFEST
    data = path.read_bytes()
    path.write_bytes(data[:-1])
    with pytest.raises(IndexDamagedError) as info:
        index.check()
    assert info.value.file == storage.MANIFEST
    path.write_bytes(data)
    (damaged_copy / storage.CURRENT).write_bytes(b"gen-00000!\n")
    with pytest.raises(IndexDamagedError) as info:
        index.check()
    assert info.value.file == storage.CURRENT


# ------------------------------------------------------------------ damage that open does not read

IDS = [r["id"] for r in records(60, seed=3)]
QUERIES = queries(300, seed=7)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy overflow warnings on damaged counts are expected
@pytest.mark.parametrize("name", WRITTEN)
def test_damaged_payloads_never_change_an_answer(pristine: Path, damaged_copy: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Five seeded damages of this file's payload, each followed by 40 random operations whose
    answers must equal the undamaged index's or be an IndexDamagedError naming the file (the
    payload's blocks are verified when first read); then `check()` names the file every time."""
    monkeypatch.setattr(storage, "VERIFY_ON_OPEN_BYTES", 0)
    truth = sieve.open_index(pristine)
    rng = random.Random(f"payload:{name}")
    path = _seg(damaged_copy) / name
    data = path.read_bytes()
    if payload_end(data) == storage.HEADER_SIZE:
        pytest.skip("empty payload")  # nothing but header and footer, covered above
    for _ in range(5):
        damaged = bytearray(data)
        damage(damaged, rng)
        if damaged == data:
            continue
        path.write_bytes(bytes(damaged))
        try:
            index = sieve.open_index(damaged_copy)
        except IndexDamagedError as e:  # a file every open reads whole (lengths, dictionaries)
            assert e.file == name
            continue
        seen = exercise(index, rng, 40, QUERIES, IDS, damaged=name, truth=truth)  # anything but a sieve error propagates
        assert seen["damage misnamed"] == 0 and seen["WRONG ANSWER"] == 0, seen
        with pytest.raises(IndexDamagedError) as info:
            index.check()
        assert info.value.file == name
    path.write_bytes(data)


# ------------------------------------------------------------------ embeddings (meta.json, vectors.sva, hnsw.bin)




@pytest.fixture()
def embedded(damaged_copy: Path) -> Path:
    pytest.importorskip("hnswlib", reason="embeddings need the dense extra")
    from sieve.dense import store

    return store.embed(sieve.open_index(damaged_copy), model="hash-64", encoder=HashEncoder())


def _dense_search(index_path: Path) -> None:
    index = sieve.open_index(index_path)
    index.use_dense(model="hash-64", encoder=HashEncoder())
    index.searcher.dense.exact_max = 0  # through the HNSW graph, so hnsw.bin is read
    index.search("heatwave paris", k=5, ranker="dense")


@pytest.mark.parametrize("name", ["vectors.sva", "hnsw.bin"])
def test_damaged_embeddings_are_refused_when_used(embedded: Path, damaged_copy: Path, name: str) -> None:
    rng = random.Random(name)
    path = embedded / name
    data = path.read_bytes()
    for offset in sorted({0, 9, len(data) // 2, len(data) - 1, *rng.sample(range(len(data)), 12)}):
        _flip(path, offset, rng.randrange(8))
        with pytest.raises(IndexDamagedError):
            _dense_search(damaged_copy)
        path.write_bytes(data)
    _dense_search(damaged_copy)


@pytest.mark.parametrize("name", ["meta.json", "vectors.sva", "hnsw.bin"])
def test_check_verifies_embeddings(embedded: Path, damaged_copy: Path, name: str) -> None:
    path = embedded / name
    _flip(path, len(path.read_bytes()) // 2, 0)
    with pytest.raises(IndexDamagedError):
        sieve.open_index(damaged_copy).check()


def test_damaged_embeddings_meta_raises_only_sieve_errors(embedded: Path, damaged_copy: Path) -> None:
    path = embedded / "meta.json"
    data = path.read_bytes()
    _flip(path, data.index(b'"files"') + 2, 2)  # "files" -> "filas": still JSON, meta.json has no checksum
    try:
        _dense_search(damaged_copy)
    except SieveError:
        pass
