"""Persistence: build, reopen, same answers; damaged or foreign indexes are refused cleanly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import sieve
from sieve.engine.format import commits, storage
from sieve.engine.segment.files import WRITTEN
from sieve.errors import IndexDamagedError, IndexFormatError, IndexNotFoundError, UnknownDocumentError

RECORDS = [
    {"id": "d1", "title": "Heatwave in Paris", "sections": [{"heading": "School closure", "text": "Schools closed during the heatwave."}], "date": "2020-07", "author": "Ann"},
    {"id": "d2", "title": "Cold snap", "text": "Winter brought snow to Zürich.", "date": "2019"},
    {"id": "d3", "title": "Workplace heatwave", "sections": [{"heading": "(intro)", "text": "Offices"}, {"heading": "Rules", "text": "school rules"}], "infobox": {"country": "France"}},
]
QUERIES = ["heatwave", "heatwave[title]", '"school closure"[section]', "zurich", "NOT heatwave", "date[2020]", "school NOT workplace[title]", "franc*[ib]"]


@pytest.fixture()
def built(tmp_path: Path) -> Path:
    sieve.build_index(RECORDS, tmp_path / "idx")
    return tmp_path / "idx"


def answers(index: sieve.Index) -> list[list[str]]:
    return [index.match(q).ids for q in QUERIES]


def test_reopen_gives_the_same_answers(built: Path) -> None:
    first = sieve.open_index(built)
    expected = answers(first)
    assert expected == [["d1", "d3"], ["d1", "d3"], ["d1"], ["d2"], ["d2"], ["d1"], ["d1"], ["d3"]]
    assert answers(sieve.open_index(built)) == expected
    assert answers(sieve.open_index(built, verify=True)) == expected


def test_documents_round_trip(built: Path) -> None:
    index = sieve.open_index(built)
    for rec in RECORDS:
        assert index.document(rec["id"]) == next(sieve.read_documents([rec]))
    assert index.section("d3", 1) == sieve.Section("Rules", "school rules")
    with pytest.raises(UnknownDocumentError) as info:
        index.document("nope")
    assert str(info.value) == "no document with id 'nope'"


def test_existing_target_is_refused_without_force(built: Path) -> None:
    with pytest.raises(FileExistsError) as info:
        sieve.build_index(RECORDS, built)
    assert "already exists (an index); use --force" in str(info.value)


def test_force_switches_commit_points_atomically(built: Path) -> None:
    old = sieve.open_index(built)
    new = sieve.build_index([{"id": "x", "title": "heatwave again"}], built, force=True)
    assert new.match("heatwave").ids == ["x"]
    assert sorted(p.name for p in built.iterdir()) == ["CURRENT", "gen-000002", "seg-000002"]
    # A reader opened before the switch keeps answering from its own commit point.
    assert old.match("heatwave").ids == ["d1", "d3"]


def test_force_refuses_a_directory_that_is_not_an_index(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "precious.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        sieve.build_index(RECORDS, tmp_path / "home", force=True)
    assert (tmp_path / "home" / "precious.txt").read_text() == "keep me"


def test_failed_build_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(sieve.CorpusError):
        sieve.build_index(RECORDS + [{"id": "d1"}], tmp_path / "idx")
    assert list(tmp_path.iterdir()) == []


def test_failed_rebuild_keeps_the_old_index(built: Path) -> None:
    with pytest.raises(sieve.CorpusError):
        sieve.build_index([{"id": "z"}, {"id": "z"}], built, force=True)
    assert answers(sieve.open_index(built))[0] == ["d1", "d3"]
    assert sorted(p.name for p in built.iterdir()) == ["CURRENT", "gen-000001", "seg-000001"]


def test_missing_index(tmp_path: Path) -> None:
    with pytest.raises(IndexNotFoundError) as info:
        sieve.open_index(tmp_path / "nothing")
    assert str(info.value) == f"{tmp_path / 'nothing'}: no such index directory"
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexNotFoundError) as info:
        sieve.open_index(tmp_path / "empty")
    assert "not a sieve index (no CURRENT file)" in str(info.value)


def _gen(built: Path) -> Path:
    return commits.current_commit(built)


def _seg(built: Path) -> Path:
    """The directory of the index's one segment (its array files)."""
    return built / commits.read_manifest(_gen(built))["segments"][0]["name"]


@pytest.mark.parametrize("name", WRITTEN)
def test_truncated_file_is_detected(built: Path, name: str) -> None:
    path = _seg(built) / name
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 1])
    with pytest.raises(IndexDamagedError) as info:
        sieve.open_index(built)
    assert info.value.file == name
    assert str(info.value).startswith(f"index damaged: {name}: ")


@pytest.mark.parametrize("name", WRITTEN)
def test_flipped_bit_is_detected(built: Path, name: str) -> None:
    path = _seg(built) / name
    data = bytearray(path.read_bytes())
    for offset in (3, storage.HEADER_SIZE, len(data) // 2, len(data) - 2):
        damaged = bytearray(data)
        damaged[offset] ^= 0x10
        path.write_bytes(bytes(damaged))
        with pytest.raises(IndexDamagedError) as info:
            sieve.open_index(built)
        assert info.value.file == name
    path.write_bytes(bytes(data))
    assert sieve.open_index(built).check() == list(WRITTEN)


def test_check_finds_damage_in_big_files_that_open_does_not_read(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "VERIFY_ON_OPEN_BYTES", 0)
    path = _seg(built) / "store.text.sva"
    data = bytearray(path.read_bytes())
    data[storage.HEADER_SIZE + 5] ^= 0x01
    path.write_bytes(bytes(data))
    index = sieve.open_index(built)  # cheap open: header, sizes, footer only
    with pytest.raises(IndexDamagedError) as info:
        index.check()
    payload = len(index.segments[0].reader.files["store.text.sva"])  # compressed: its length depends on zlib
    assert str(info.value) == f"index damaged: store.text.sva: checksum mismatch in bytes 0..{payload} of the payload (the contents are damaged)"


def test_damaged_manifest(built: Path) -> None:
    path = _gen(built) / storage.MANIFEST
    text = path.read_text()
    path.write_text(text.replace('"documents": 3', '"documents": 4'))
    with pytest.raises(IndexDamagedError) as info:
        sieve.open_index(built)
    assert str(info.value) == "index damaged: manifest.json: checksum mismatch (the contents are damaged)"
    path.write_text(text[:-10])
    with pytest.raises(IndexDamagedError) as info:
        sieve.open_index(built)
    assert str(info.value) == "index damaged: manifest.json: not valid JSON (damaged or truncated)"


@pytest.mark.parametrize("version, word", [(99, "newer"), (1, "older")])
def test_other_format_versions(built: Path, version: int, word: str) -> None:
    gen = _gen(built)
    body = json.loads((gen / storage.MANIFEST).read_text())
    body.pop("checksum")
    body["version"] = version
    commits.write_manifest(gen, body)
    with pytest.raises(IndexFormatError) as info:
        sieve.open_index(built)
    assert f"index format version {version} at {gen} is {word} than this sieve supports (2, 3, 4, 5, 6, 7, 8, 9)" in str(info.value)
    assert info.value.found == version


def test_current_pointing_nowhere(built: Path) -> None:
    (built / storage.CURRENT).write_text("gen-000009\n")
    with pytest.raises(IndexDamagedError) as info:
        sieve.open_index(built)
    assert info.value.file == "CURRENT"


def test_leftover_temporaries_are_not_mistaken_for_an_index(tmp_path: Path) -> None:
    stage = tmp_path / ".idx.building-abc"
    stage.mkdir()
    with pytest.raises(IndexNotFoundError):
        sieve.open_index(tmp_path / "idx")
    sieve.build_index(RECORDS, tmp_path / "idx")
    assert len(sieve.open_index(tmp_path / "idx")) == 3
    assert os.path.isdir(stage)


@pytest.mark.parametrize("lazy", [False, True])
def test_dropping_an_index_closes_its_files(built: Path, lazy: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index's memory maps each hold a file descriptor. Dropping the last reference frees them
    at once, without waiting for the cyclic garbage collector: nothing the index caches (plans,
    term ids, headings, store blocks, verification callbacks) points back at it. A process that
    reopened an index in a loop ran out of descriptors (test_concurrent_writes)."""
    import gc

    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc/self/fd (Linux) to count open files")
    if lazy:  # large files are verified block by block, through callbacks set when opened
        monkeypatch.setattr(storage, "VERIFY_ON_OPEN_BYTES", 0)
    gc.collect()
    before = len(list(fds.iterdir()))
    gc.disable()
    try:
        index = sieve.open_index(built)
        answers(index)
        hit = index.search("heatwave school", k=3).hits[0]
        index.section(hit.doc_id, 0)
        index.document(hit.doc_id)
        assert len(list(fds.iterdir())) > before + 20
        del index, hit
        assert len(list(fds.iterdir())) == before
    finally:
        gc.enable()

