"""Every file and folder of a built index damaged in every structural way (structure.py: deleted,
a folder, a FIFO, a link to another file, to /dev/zero or to nothing, emptied, cut short, garbage,
one byte more, unreadable), one at a time: opening, matching, searching, reading and checking it
raise only sieve errors, an IndexDamagedError names the damaged file, and nothing hangs or reads
without end. The sweep runs in a subprocess under a time limit and an address-space limit, so a
hang or a runaway read fails the test instead of stalling or exhausting the machine."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import sieve

from .structure import FILE_VARIANTS, FOLDER_VARIANTS
from .synth import HashEncoder, records

ROOT = Path(__file__).resolve().parents[2]
MEMORY = 4 << 30  # address space for the sweep: /dev/zero read to its end would pass it


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run_sweep(index: Path, aside: Path, dense: bool = False) -> list[dict[str, str]]:
    aside.mkdir()
    p = subprocess.run([sys.executable, "-m", "tests.hardening.structure", str(index), str(aside), *(["dense"] if dense else [])],
                       capture_output=True, text=True, timeout=600, cwd=ROOT, preexec_fn=_bounded,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def named(record: dict[str, str], folders: set[str]) -> bool:
    """Whether the IndexDamagedError of a variant names what was damaged: a file itself, or for a
    folder, a file in it or the pointer (CURRENT, the generation's manifest) that leads to it."""
    rel = record["entry"].split("/", 1)[1]
    if record["entry"] not in folders:
        return record["detail"].rsplit("/", 1)[-1] == rel.rsplit("/", 1)[-1]
    return record["detail"] in ("CURRENT", "manifest.json") or record["detail"].startswith(rel + "/")


def check(sweep: list[dict[str, str]], index: Path) -> None:
    """What every sweep must show; `index`: the undamaged index (the sweep puts back what it damages)."""
    everything = [index, *index.rglob("*")]
    folders = {p.relative_to(index.parent).as_posix() for p in everything if p.is_dir()}
    raw = [r for r in sweep if r["kind"] in ("RAW", "HANG")]
    assert raw == []  # nothing but sieve errors, and no hang
    assert {r["entry"] for r in sweep} == {p.relative_to(index.parent).as_posix() for p in everything}
    # Every damage is seen (the sweep ends with index.check()), except a file made unreadable
    # where the tests run as root, which reads it anyway.
    unseen = [r for r in sweep if r["kind"] == "ok" and not (r["variant"] == "unreadable" and os.geteuid() == 0)]
    assert unseen == []
    assert [r for r in sweep if r["kind"] == "damage" and not named(r, folders)] == []
    assert {r["variant"] for r in sweep if r["entry"] == "idx" and r["kind"] != "ok"} == set(FOLDER_VARIANTS) - {"unreadable"}
    assert all(r["detail"] == "IndexNotFoundError" for r in sweep if r["entry"] == "idx" and r["kind"] == "sieve")


@pytest.fixture()
def small_index(tmp_path: Path) -> Path:
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records(40, seed=3)))
    sieve.build_index(src, tmp_path / "idx", jobs=1).close()
    return tmp_path / "idx"


def test_structural_damage_raises_only_sieve_errors_naming_the_file(small_index: Path, tmp_path: Path) -> None:
    check(run_sweep(small_index, tmp_path / "aside"), small_index)


@pytest.mark.slow
def test_structural_damage_of_embeddings_too(small_index: Path, tmp_path: Path) -> None:
    from sieve.dense import store

    store.embed(sieve.open_index(small_index), model="hash-64", encoder=HashEncoder())
    sweep = run_sweep(small_index, tmp_path / "aside", dense=True)
    check(sweep, small_index)
    # Without its embeddings folder (or its meta.json), the dense ranker says there is none.
    gone = {(r["entry"], r["variant"]) for r in sweep if r["detail"] == "DenseUnavailableError"}
    assert ("idx/embeddings", "deleted") in gone and ("idx/embeddings/hash-64/meta.json", "deleted") in gone


@pytest.mark.slow
def test_structural_damage_of_shards_and_of_segments_with_deletions(tmp_path: Path) -> None:
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records(40, seed=3)))
    sieve.build_index(src, tmp_path / "sharded" / "idx", jobs=1, shards=2).close()
    check(run_sweep(tmp_path / "sharded" / "idx", tmp_path / "aside1"), tmp_path / "sharded" / "idx")
    ix = sieve.build_index(src, tmp_path / "segments" / "idx", jobs=1)
    gone = ix.match("date[..2100]").ids[:3]
    with ix.writer() as w:
        w.add_from([dict(r, id=f"new{i}") for i, r in enumerate(records(5, seed=9))])
        for doc_id in gone:
            w.delete(doc_id)
    ix.close()
    assert len(sieve.open_index(tmp_path / "segments" / "idx")) == 42 and list((tmp_path / "segments" / "idx").rglob("*.del.sva"))
    check(run_sweep(tmp_path / "segments" / "idx", tmp_path / "aside2"), tmp_path / "segments" / "idx")
