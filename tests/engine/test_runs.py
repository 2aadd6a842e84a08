"""Builds in bounded memory: an index whose token stream was spilled in runs and merged has the
same files, byte for byte, as one sorted in memory; a build under a small budget uses less memory."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_match_oracle import gen_corpus

import sieve
from sieve.demo_corpus import stdlib_documents
from sieve import build as build_module
from sieve.engine import runs as runs_module


@pytest.fixture()
def spills(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The runs spilled (their token counts), whatever build runs in the test."""
    seen: list[int] = []
    real = runs_module.Runs.spill

    def counting(self: Any, tokens: Any, *rest: Any) -> None:
        seen.append(len(tokens))
        real(self, tokens, *rest)

    monkeypatch.setattr(runs_module.Runs, "spill", counting)
    return seen


def files(path: Path) -> dict[str, bytes]:
    """Every file of the index's segments (the commit point names them; its own manifest differs by nothing but them)."""
    return {name: p.read_bytes() for p, name, _ in sieve.open_index(path).snapshot.files()}


def manifest(path: Path) -> dict[str, Any]:
    gen = path / (path / "CURRENT").read_text().strip()
    m = json.loads((gen / "MANIFEST.json").read_text()) if (gen / "MANIFEST.json").exists() else {}
    return m


@pytest.mark.parametrize("seed", range(6))
def test_spilled_builds_equal_one_pass_builds(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch, spills: list[int]) -> None:
    recs = gen_corpus(random.Random(seed))
    one = sieve.build_index(recs, tmp_path / "one")
    # No budget: a run after every batch (of 3 documents); a small merge chunk: many merge steps.
    monkeypatch.setattr(build_module, "BATCH_DOCS", 3)
    monkeypatch.setattr(runs_module, "CHUNK_POSTINGS", 7)
    spilled = sieve.build_index(recs, tmp_path / "spilled", memory_mb=0, segment_bytes=1 << 40)  # runs, not segments
    assert len(spills) >= len(recs) // 3 and sum(spills) == one.stats["tokens"]
    assert files(tmp_path / "spilled") == files(tmp_path / "one")
    assert spilled.stats == one.stats
    assert not list((tmp_path / "spilled").rglob(".runs"))  # the runs are gone


def test_real_text_in_many_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spills: list[int]) -> None:
    docs = list(stdlib_documents(limit=120))
    sieve.build_index(docs, tmp_path / "one")
    monkeypatch.setattr(runs_module, "CHUNK_POSTINGS", 5000)
    monkeypatch.setattr(build_module, "BATCH_DOCS", 25)
    from sieve.engine import writer

    monkeypatch.setattr(writer, "BYTES_PER_TOKEN", 1 << 16)  # 1 MB holds 16 tokens: a run after every batch
    sieve.build_index(docs, tmp_path / "spilled", memory_mb=1, jobs=1, segment_bytes=1 << 40)  # runs, not segments
    assert len(spills) >= 120 // 25
    assert files(tmp_path / "spilled") == files(tmp_path / "one")


def test_the_cli_takes_a_memory_budget(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in stdlib_documents(limit=30)) + "\n")
    out = subprocess.run([sys.executable, "-m", "sieve", "index", str(corpus), str(tmp_path / "ix"), "--memory-mb", "0", "--quiet"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert sieve.open_index(tmp_path / "ix").match("def").count == sieve.build_index(list(stdlib_documents(limit=30))).match("def").count
