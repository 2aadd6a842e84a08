"""Builds in bounded memory: an index whose token stream was spilled in runs and merged has the
same files, byte for byte, as one sorted in memory; a build under a small budget uses less memory."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_match_oracle import gen_corpus

import sieve
from sieve.corpus.demo import stdlib_documents
from sieve.engine.segment import runs as runs_module


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
    monkeypatch.setattr("sieve.index.batches.BATCH_DOCS", 3)
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
    monkeypatch.setattr("sieve.index.batches.BATCH_DOCS", 25)
    from sieve.engine.segment import writer

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


def _postings_by_brute_force(keys: list[int], units: list[int], pos: list[int], unit_doc: list[int], unit_field: list[int]) -> list[tuple]:
    """(key, doc, tf, mask, text tf, positions) per (key, document), from the tokens one by one."""
    text_bits = int(runs_module.TEXT_BITS)
    out: dict[tuple[int, int], list] = {}
    for i in sorted(range(len(keys)), key=lambda i: (keys[i], i)):
        u = units[i]
        entry = out.setdefault((keys[i], unit_doc[u]), [0, 0, 0, []])
        bit = 1 << unit_field[u]
        entry[0] += 1
        entry[1] |= bit
        entry[2] += bool(bit & text_bits)
        entry[3].append(pos[i])
    return [(k, d, tf, mask, ttf, p) for (k, d), (tf, mask, ttf, p) in out.items()]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_sort_tokens_equals_brute_force(data: Any) -> None:
    """Token streams of random keys, units and position gaps (wide gaps push the pairs past 63
    bits, where the sort falls back to a permutation); the postings are those counted one by one."""
    n_units = data.draw(st.integers(1, 12))
    unit_doc = sorted(data.draw(st.lists(st.integers(0, 5), min_size=n_units, max_size=n_units)))
    unit_field = data.draw(st.lists(st.integers(0, 6), min_size=n_units, max_size=n_units))
    n = data.draw(st.integers(0, 60))
    units = sorted(data.draw(st.lists(st.integers(0, n_units - 1), min_size=n, max_size=n)))
    gaps = data.draw(st.lists(st.sampled_from([1, 1, 1, 2, 5, 1 << 20, 1 << 40]), min_size=n, max_size=n))
    start = data.draw(st.integers(0, 1 << 30))
    pos = [start + sum(gaps[: i + 1]) for i in range(n)]
    keys = data.draw(st.lists(st.sampled_from([0, 1, 2, 3, 7, 40_000, 70_000, (1 << 31) - 1]), min_size=n, max_size=n))
    p = runs_module.sort_tokens(np.asarray(keys, np.int32), np.asarray(units, np.int32), np.asarray(pos, np.int64),
                                np.asarray(unit_doc, np.int32), np.asarray(unit_field, np.uint8))
    ends = np.cumsum(p.tf).tolist()
    got = [(int(k), int(d), int(tf), int(m), int(ttf), p.pos[e - tf : e].tolist())
           for k, d, tf, m, ttf, e in zip(p.term, p.doc, p.tf, p.mask, p.ttf, ends)]
    assert got == _postings_by_brute_force(keys, units, pos, unit_doc, unit_field)
    assert len(p.pos) == n


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_stream_start_gives_the_postings_of_its_positions(data: Any) -> None:
    """`sort_tokens` given where a stream with no token left out starts (token i at
    start + i + its unit) equals it given those positions, and the brute force."""
    n_units = data.draw(st.integers(1, 12))
    unit_doc = sorted(data.draw(st.lists(st.integers(0, 5), min_size=n_units, max_size=n_units)))
    unit_field = data.draw(st.lists(st.integers(0, 6), min_size=n_units, max_size=n_units))
    n = data.draw(st.integers(0, 60))
    units = sorted(data.draw(st.lists(st.integers(0, n_units - 1), min_size=n, max_size=n)))
    start = data.draw(st.sampled_from([0, 1, 12345, 1 << 40]))
    keys = data.draw(st.lists(st.sampled_from([0, 1, 2, 3, 7, 40_000, 70_000, (1 << 31) - 1]), min_size=n, max_size=n))
    pos = [start + i + u for i, u in enumerate(units)]
    args = (np.asarray(keys, np.int32), np.asarray(units, np.int32))
    tables = (np.asarray(unit_doc, np.int32), np.asarray(unit_field, np.uint8))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(runs_module, "NUMBERS_AT_A_TIME", data.draw(st.sampled_from([1, 7, 1 << 20])))  # token numbers in pieces
        got = runs_module.sort_tokens(*args, start, *tables)
    want = runs_module.sort_tokens(*args, np.asarray(pos, np.int64), *tables)
    for name in ("term", "doc", "tf", "mask", "ttf", "pos"):
        assert np.array_equal(getattr(got, name), getattr(want, name)) and getattr(got, name).dtype == getattr(want, name).dtype, name
    ends = np.cumsum(got.tf).tolist()
    assert [(int(k), int(d), int(tf), int(m), int(ttf), got.pos[e - tf : e].tolist())
            for k, d, tf, m, ttf, e in zip(got.term, got.doc, got.tf, got.mask, got.ttf, ends)] == \
        _postings_by_brute_force(keys, units, pos, unit_doc, unit_field)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_postings_of_two_halves_joined_equal_the_whole(data: Any) -> None:
    """The build's final step makes postings in two halves cut where a key starts: joined, they
    are the whole stream's, whatever the keys (one key throughout, many, none)."""
    n_units = data.draw(st.integers(1, 12))
    unit_doc = np.asarray(sorted(data.draw(st.lists(st.integers(0, 5), min_size=n_units, max_size=n_units))), np.int32)
    unit_field = np.asarray(data.draw(st.lists(st.integers(0, 6), min_size=n_units, max_size=n_units)), np.uint8)
    n = data.draw(st.integers(0, 60))
    units = np.asarray(sorted(data.draw(st.lists(st.integers(0, n_units - 1), min_size=n, max_size=n))), np.int32)
    keys = np.asarray(data.draw(st.lists(st.integers(0, data.draw(st.sampled_from([0, 2, 50]))), min_size=n, max_size=n)), np.int32)
    s_key, s_unit, s_pos = runs_module.by_key(keys, units, 0)
    whole = runs_module.postings(s_key, s_unit, s_pos, unit_doc, unit_field)
    cut = runs_module.key_start_near_middle(s_key)
    assert cut == n or cut == 0 or s_key[cut] != s_key[cut - 1]
    parts = [runs_module.postings(s_key[:cut], s_unit[:cut], s_pos[:cut], unit_doc, unit_field),
             runs_module.postings(s_key[cut:], s_unit[cut:], s_pos[cut:], unit_doc, unit_field)]
    joined = runs_module.Postings.joined(parts, s_pos)
    for name in ("term", "doc", "tf", "mask", "ttf", "pos"):
        assert np.array_equal(getattr(joined, name), getattr(whole, name)) and getattr(joined, name).dtype == getattr(whole, name).dtype, name


def test_stable_argsort_equals_numpy_stable_sort() -> None:
    rng = np.random.default_rng(3)
    for high in (10, 1 << 16, 1 << 20, (1 << 31) - 1):
        keys = rng.integers(0, high, 5000).astype(np.int32)
        assert np.array_equal(runs_module.stable_argsort(keys), np.argsort(keys, kind="stable"))
