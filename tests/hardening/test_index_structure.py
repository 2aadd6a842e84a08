"""Structural damage to a built index, every way a folder can be wrong: each file and folder deleted,
replaced by a folder, a file, a FIFO, a link (to another file, to /dev/zero, to nothing), emptied or
made unreadable (tests/hardening/structure.py). Opening and using each damaged index must end in
an IndexDamagedError naming the file, another sieve error, or a correct answer; never a raw
OSError, a hang on a FIFO, or memory taken by /dev/zero. Run in a subprocess under a memory and a
time bound, so a hang or a runaway read fails the test instead of the machine."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import sieve
from .synth import HashEncoder

ROOT = Path(__file__).resolve().parents[2]


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def _sweep(index: Path, aside: Path, dense: bool) -> list[dict[str, str]]:
    aside.mkdir()
    p = subprocess.run([sys.executable, "-m", "tests.hardening.structure", str(index), str(aside)] + (["dense"] if dense else []),
                       cwd=ROOT, capture_output=True, text=True, timeout=600, preexec_fn=_bounded)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


@pytest.mark.parametrize("dense", [False, True], ids=["index", "with embeddings"])
def test_every_structural_damage_is_a_sieve_error_or_a_right_answer(tmp_path: Path, gold_records: list[dict[str, Any]], dense: bool) -> None:
    index = sieve.build_index(gold_records, tmp_path / "idx")
    if dense:
        pytest.importorskip("hnswlib", reason="embeddings need the dense extra: pip install 'sieve-search[dense]'")
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
