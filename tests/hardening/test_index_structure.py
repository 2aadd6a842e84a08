"""Structural damage to a built index, every way a folder can be wrong: each file and folder deleted,
replaced by a folder, a file, a FIFO, a link (to another file, to /dev/zero, to nothing), emptied,
cut short, overwritten with garbage of its size, grown by a byte or made unreadable
(tests/hardening/structure.py). Opening and using each damaged index must end in an
IndexDamagedError naming the file, another sieve error, or a correct answer; never a raw OSError,
a hang on a FIFO, or memory taken by /dev/zero. Run in a subprocess under a memory and a time
bound, so a hang or a runaway read fails the test instead of the machine."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import sieve
from .structure import FOLDER_VARIANTS
from .synth import HashEncoder, records

ROOT = Path(__file__).resolve().parents[2]


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def _sweep(index: Path, aside: Path, dense: bool) -> list[dict[str, str]]:
    aside.mkdir()
    p = subprocess.run([sys.executable, "-m", "tests.hardening.structure", str(index), str(aside)] + (["dense"] if dense else []),
                       cwd=ROOT, capture_output=True, text=True, timeout=600, preexec_fn=_bounded)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def _named(record: dict[str, str], folders: set[str]) -> bool:
    """Whether the IndexDamagedError of a variant names what was damaged: a file itself, or for a
    folder, a file in it or the pointer (CURRENT, the commit point's manifest) that leads to it."""
    rel = record["entry"].split("/", 1)[1]
    if record["entry"] not in folders:
        return record["detail"].rsplit("/", 1)[-1] == rel.rsplit("/", 1)[-1]
    return record["detail"] in ("CURRENT", "manifest.json") or record["detail"].startswith(rel + "/")


def _check(sweep: list[dict[str, str]], index: Path) -> None:
    """What every sweep must show; `index`: the undamaged index (the sweep puts back what it damages)."""
    everything = [index, *index.rglob("*")]
    folders = {p.relative_to(index.parent).as_posix() for p in everything if p.is_dir()}
    assert [r for r in sweep if r["kind"] in ("RAW", "HANG")] == []  # nothing but sieve errors, and no hang
    assert {r["entry"] for r in sweep} == {p.relative_to(index.parent).as_posix() for p in everything}
    # Every damage is seen (the sweep ends with index.check()), except a file made unreadable
    # where the tests run as root, which reads it anyway.
    assert [r for r in sweep if r["kind"] == "ok" and not (r["variant"] == "unreadable" and os.geteuid() == 0)] == []
    assert [r for r in sweep if r["kind"] == "damage" and not _named(r, folders)] == []
    assert {r["variant"] for r in sweep if r["entry"] == "idx" and r["kind"] != "ok"} == set(FOLDER_VARIANTS) - {"unreadable"}
    assert all(r["detail"] == "IndexNotFoundError" for r in sweep if r["entry"] == "idx" and r["kind"] == "sieve")


@pytest.mark.parametrize("dense", [False, True], ids=["index", "with embeddings"])
def test_every_structural_damage_is_a_sieve_error_or_a_right_answer(tmp_path: Path, gold_records: list[dict[str, Any]], dense: bool) -> None:
    index = sieve.build_index(gold_records, tmp_path / "idx")
    if dense:
        pytest.importorskip("hnswlib", reason="embeddings need the dense extra: pip install -e '.[dense]'")
        from sieve.dense.store import embed

        embed(index, model="hash-64", encoder=HashEncoder())
    records = _sweep(tmp_path / "idx", tmp_path / "aside", dense)
    kinds = Counter(r["kind"] for r in records)
    bad = [r for r in records if r["kind"] in ("RAW", "HANG")]
    assert not bad, bad[:10]
    assert len(records) > 300 and kinds["damage"] > 0.7 * len(records), kinds
    # Every file the index needs, deleted or made a FIFO, is damage naming a file of the index.
    for r in records:
        if r["variant"] in ("deleted", "a FIFO") and r["kind"] == "damage":
            assert r["detail"], r
    _check(records, tmp_path / "idx")
    if dense:  # without its embeddings folder (or its meta.json), the dense ranker says there is none
        gone = {(r["entry"], r["variant"]) for r in records if r["detail"] == "DenseUnavailableError"}
        assert ("idx/embeddings", "deleted") in gone and ("idx/embeddings/hash-64/meta.json", "deleted") in gone


@pytest.mark.slow
def test_structural_damage_of_shards_and_of_segments_with_deletions(tmp_path: Path) -> None:
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records(40, seed=3)))
    sieve.build_index(src, tmp_path / "sharded" / "idx", jobs=1, shards=2).close()
    _check(_sweep(tmp_path / "sharded" / "idx", tmp_path / "aside1", False), tmp_path / "sharded" / "idx")
    ix = sieve.build_index(src, tmp_path / "segments" / "idx", jobs=1)
    gone = ix.match("date[..2100]").ids[:3]
    with ix.writer() as w:
        w.add_from([dict(r, id=f"new{i}") for i, r in enumerate(records(5, seed=9))])
        for doc_id in gone:
            w.delete(doc_id)
    ix.close()
    assert len(sieve.open_index(tmp_path / "segments" / "idx")) == 42 and list((tmp_path / "segments" / "idx").rglob("*.del.sva"))
    _check(_sweep(tmp_path / "segments" / "idx", tmp_path / "aside2", False), tmp_path / "segments" / "idx")
